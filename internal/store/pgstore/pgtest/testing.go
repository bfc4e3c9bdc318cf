package pgtest

import (
	"os"
	"testing"
)

// Database returns the DSN of a fresh, empty database on this test
// binary's shared server. Without PostgreSQL the test is skipped, with the
// reason; under CI=true it fails instead.
func Database(t testing.TB) string {
	t.Helper()
	srv, err := Shared()
	if err != nil {
		Unavailable(t, err)
	}
	dsn, err := srv.CreateDatabase(t.Name())
	if err != nil {
		t.Fatalf("PostgreSQL: %v", err)
	}
	return dsn
}

// Unavailable skips t because PostgreSQL cannot run here, or fails it when
// CI=true (CI must run these tests, never skip them silently).
func Unavailable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("PostgreSQL is required under CI=true and cannot start: %v", err)
	}
	t.Skipf("skipping: PostgreSQL cannot start here (%v); install postgresql or set CHIO_PG_BIN", err)
}
