package cli

import (
	"errors"
	"net/http"

	"github.com/chiokernel/chio/internal/httpapi"
)

// voteRecorded reports whether err is chiod's 500 vote_recorded to a vote
// (httpapi.CodeVoteRecorded, kernel/vote_recorded.go): the vote IS durable
// (counted, its token spent, the request approved) and only a step after it
// failed. It is then not a refusal: the approver must hear that the vote
// counts and must not vote again. The line says so; the envelope is
// chiod's answer, for --output json.
func voteRecorded(id string, err error) (line string, envelope *apiError, ok bool) {
	var ae *apiError
	if !errors.As(err, &ae) || ae.Status != http.StatusInternalServerError || ae.Code != httpapi.CodeVoteRecorded {
		return "", nil, false
	}
	return "your vote on " + id + " is recorded, but the approved call is not finished yet " +
		"(chio finishes it when its store recovers; `chio approval show " + id + "` tells how it ended): " +
		"do not vote again", ae, true
}
