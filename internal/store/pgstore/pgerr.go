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

// retryable reports a transaction that lost a race and may simply run
// again: a unique key taken by a concurrent commit, a deadlock, a
// serialization failure, a lock that could not be had.
func retryable(err error) bool {
	switch pgCode(err) {
	case "23505", "40P01", "40001", "55P03":
		return true
	}
	return false
}
