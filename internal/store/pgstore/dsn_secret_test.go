package pgstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/store/pgstore"
	"github.com/chiokernel/chio/internal/store/storetest"
)

// A DSN that cannot be parsed refuses the start, and chiod prints why (on
// stderr, in the service's journal). The DSN holds the database password,
// so the error must not repeat it, however the DSN is spelt: libpq lets
// `password = value` carry spaces around the '=', which pgx's best-effort
// redaction of the connection string does not recognise.
func TestOpenUnparsableDSNDoesNotRepeatPassword(t *testing.T) {
	const secret = "s3cret-db-password"
	for dsn, why := range map[string]string{
		"host=db.internal user=chio password = " + secret + " sslmode=bogus": "sslmode is invalid",
		"host=db.internal user=chio password= " + secret + " port=notaport":  "invalid port",
		"postgres://chio:" + secret + "@db.internal/chio?sslmode=bogus":      "sslmode is invalid",
	} {
		_, err := pgstore.Open(context.Background(), pgstore.Options{DSN: dsn, Key: storetest.Key()})
		if err == nil {
			t.Fatalf("%q: Open succeeded, want it refused", dsn)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("Open's error repeats the DSN's password: %v", err)
		}
		if !strings.Contains(err.Error(), why) {
			t.Errorf("Open's error does not say why the DSN was refused (%s): %v", why, err)
		}
	}
}
