package daemon

import (
	"context"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/policy"
)

func parse(t *testing.T, src string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse([]byte("[[servers]]\nid = \"demo\"\ntransport = \"builtin\"\n"+src), "store.toml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// [store] selects the store: bbolt in the data dir by default, PostgreSQL
// with the DSN from the named variable, which must be set.
func TestOpenStoreSelectsDriver(t *testing.T) {
	key := keys.FromSeed(make([]byte, 32))
	dir := t.TempDir()
	st, err := openStore(context.Background(), parse(t, ""), dir, key, nil, storeHooks{})
	if err != nil || st.relay != nil {
		t.Fatalf("bbolt: %v (relay %v)", err, st.relay)
	}
	st.store.Close()

	pg := parse(t, "[store]\ndriver = \"postgres\"\ndsn_env = \"CHIO_TEST_DSN\"\n")
	t.Setenv("CHIO_TEST_DSN", "")
	if _, err := openStore(context.Background(), pg, dir, key, nil, storeHooks{}); err == nil || !strings.Contains(err.Error(), "CHIO_TEST_DSN") {
		t.Fatalf("unset DSN variable: %v", err)
	}
	t.Setenv("CHIO_TEST_DSN", pgtest.Database(t))
	st, err = openStore(context.Background(), pg, dir, key, nil, storeHooks{})
	if err != nil || st.relay == nil {
		t.Fatalf("postgres: %v", err)
	}
	if err := st.store.Ready(); err != nil {
		t.Fatal(err)
	}
	st.store.Close()
}
