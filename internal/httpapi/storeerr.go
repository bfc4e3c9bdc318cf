package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/chiokernel/chio/kernel"
)

// A store's own error is never served. It says why a read or a commit
// failed in the store's words: for PostgreSQL pgx names the host, user
// and database, for bbolt the data file's path. Several routes answer
// callers who hold no credential yet (a made-up Chio-Proof on GET
// /v1/calls/{id} or GET /approvals/{id}, a stranger's token on POST
// /approvals/{id}/respond) and read the store before they can check it.
// So an error that is the store's being unavailable (kernel.ErrUnavailable)
// is answered 503 unavailable, "store unavailable", and its cause goes to
// the log, as GET /readyz's does. (A vote recorded or uncertain and an
// outcome unknown keep their own codes and messages: classify's earlier
// cases; only an authenticated agent or approver reaches them.)

// errStoreUnavailable is the message every such answer carries.
const errStoreUnavailable = "store unavailable; try again later (chiod's log has the cause)"

// storeUnavailable is err's answer; its cause is logged when it is written
// (logCause), not here: classify may run more than once for one answer.
func storeUnavailable(err error) *APIError {
	ae := apiErr(http.StatusServiceUnavailable, CodeUnavailable, errStoreUnavailable)
	ae.cause = err
	return ae
}

// logCause logs the store error an answer keeps from its client.
func logCause(ae *APIError) {
	if ae.cause != nil {
		slog.Warn("answered "+CodeUnavailable+": "+kernel.ErrUnavailable.Error(), "err", ae.cause.Error())
	}
}
