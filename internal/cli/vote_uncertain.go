package cli

import (
	"errors"
	"net/http"

	"github.com/chiokernel/chio/internal/httpapi"
)

// voteUncertain reports whether err is chiod's 503 vote_uncertain to a vote
// (httpapi.CodeVoteUncertain, kernel.ErrVoteUncertain): the vote's own
// commit failed in a way that may still have reached the disk, so it may
// or may not be recorded, and may have approved, and run, the call. It is
// an error (exit 1), but never "unavailable": the approver must hear that
// running the same command again settles it (a vote already recorded is
// refused as already cast, never counted twice) and that no other
// approver need be asked. The envelope is chiod's answer, for --output
// json.
func voteUncertain(id, verb string, err error) (line string, envelope *apiError, ok bool) {
	var ae *apiError
	if !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable || ae.Code != httpapi.CodeVoteUncertain {
		return "", nil, false
	}
	return "your vote on " + id + " may or may not be recorded (chiod's store failed while saving it): run `chio approval " +
		verb + " " + id + "` again once chiod is back; a vote already recorded is refused as already cast, never counted twice. " +
		"Until then, do not ask another approver on the belief that it did nothing", ae, true
}
