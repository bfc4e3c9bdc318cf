package pgtest

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) {
	code := m.Run()
	StopShared()
	os.Exit(code)
}

// Two databases on one server are separate, and both accept writes.
func TestDatabasesAreSeparate(t *testing.T) {
	a, b := Database(t), Database(t)
	ctx := context.Background()
	for i, dsn := range []string{a, b} {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, "CREATE TABLE t (x int)"); err != nil {
			t.Fatalf("database %d: %v", i, err)
		}
		c.Close(ctx)
	}
	if a == b {
		t.Fatal("same database twice")
	}
}
