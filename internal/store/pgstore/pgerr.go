package pgstore

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// pgCode is the SQLSTATE of a PostgreSQL error, or "".
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// errRevokedSinceRead: a capability this batch's decisions read as not
// revoked was revoked (by any replica) before the batch took the log
// head's lock; the batch runs again and its functions see the revocation.
var errRevokedSinceRead = errors.New("capability revoked since it was read")

// retryable reports a transaction that lost a race and may simply run
// again: a unique key taken by a concurrent commit, a deadlock, a
// serialization failure, a lock that could not be had.
func retryable(err error) bool {
	if errors.Is(err, errRevokedSinceRead) {
		return true
	}
	switch pgCode(err) {
	case "23505", "40P01", "40001", "55P03":
		return true
	}
	return false
}
