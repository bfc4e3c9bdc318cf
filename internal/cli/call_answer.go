package cli

import (
	"encoding/json"
	"fmt"

	"github.com/chiokernel/chio/internal/envelope"
	"github.com/chiokernel/chio/internal/httpapi"
)

// callAnswer is an answer to POST /v1/calls as read: the call's outcome,
// and the "error" member of an error envelope, which none of chiod's
// outcomes carries.
type callAnswer struct {
	httpapi.CallStatus
	Error   json.RawMessage `json:"error"`
	Message string          `json:"message"`
}

// UnmarshalJSON reads the answer as the SDKs do (internal/envelope): its
// member names matched exactly, and one that can be read two ways (two of
// its own members named alike: "status" and "Status") refused as an
// answer that cannot be read. The tool's output is not looked into.
func (a *callAnswer) UnmarshalJSON(data []byte) error {
	type members callAnswer // without this method
	return envelope.Unmarshal(data, (*members)(a))
}

// envelopeError is the error the answer's "error" member claims: nil when
// there is none (absent or null); chiod's error (an *apiError with the
// answer's HTTP status) when it names one, whatever outcome the answer
// also carries; and when it is there but names none ("", 7, []), an
// answer that cannot be read (errBadResponse): neither an error nor an
// outcome, the call may have run. So the SDKs read it
// (testdata/sdk/call_outcomes.json): a "denied" beside an error must never
// read as "did not run, safe to send again", nor an "allowed" as success.
func (a *callAnswer) envelopeError(status int) error {
	if len(a.Error) == 0 || string(a.Error) == "null" {
		return nil
	}
	var code string
	if json.Unmarshal(a.Error, &code) != nil || code == "" {
		return fmt.Errorf("%w: a %d answer whose error member names no error", errBadResponse, status)
	}
	return &apiError{Status: status, Code: code, Message: a.Message}
}
