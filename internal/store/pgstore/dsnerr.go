package pgstore

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// withheldDSN stands for the DSN in a parse error.
const withheldDSN = "<the DSN, withheld: it may hold a password>"

// dsnParseError is err, from parsing a DSN, without the DSN's text. pgx
// repeats the connection string in its error and masks the password only
// where it recognises one (not `password = secret`, with spaces libpq
// allows), and chiod prints a refused start's error to its journal. What
// was wrong (an invalid port, sslmode, …) is kept; an error of another
// kind, whose text is unknown, is replaced whole.
func dsnParseError(err error) error {
	var pe *pgconn.ParseConfigError
	if !errors.As(err, &pe) {
		return errors.New("the DSN cannot be parsed (pgx's error is withheld: it may repeat the DSN)")
	}
	safe := *pe
	safe.ConnString = withheldDSN
	return &safe
}
