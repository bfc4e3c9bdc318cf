package policy

import (
	"errors"
	"strings"
	"testing"
)

func TestStoreTable(t *testing.T) {
	t.Run("default is bbolt", func(t *testing.T) {
		p, err := Parse(doc(builtin), "s.toml")
		if err != nil || p.Store.Driver != StoreBbolt || p.Store.DSNEnv != "" {
			t.Fatalf("%+v %v", p.Store, err)
		}
	})
	t.Run("postgres with a DSN variable", func(t *testing.T) {
		p, err := Parse(doc(builtin+"[store]\ndriver = \"postgres\"\ndsn_env = \"CHIO_PG_DSN\"\ncommitters = 8\nlease_seconds = 5\n"), "s.toml")
		if err != nil {
			t.Fatal(err)
		}
		if p.Store != (StoreConfig{Driver: StorePostgres, DSNEnv: "CHIO_PG_DSN", Committers: 8, LeaseSeconds: 5}) {
			t.Fatalf("%+v", p.Store)
		}
	})
	t.Run("not covered by the policy hash", func(t *testing.T) {
		a, err1 := Parse(doc(builtin), "a.toml")
		b, err2 := Parse(doc(builtin+"[store]\ndriver = \"postgres\"\ndsn_env = \"X\"\n"), "b.toml")
		if err1 != nil || err2 != nil || a.Hash != b.Hash {
			t.Fatalf("hashes %s %s (%v %v)", a.Hash, b.Hash, err1, err2)
		}
	})
	for _, c := range []struct{ name, toml, msg string }{
		{"unknown driver", "[store]\ndriver = \"sqlite\"  # <-\n", `must be "bbolt"`},
		{"postgres without dsn_env", "[store]  # <-\ndriver = \"postgres\"\n", "needs dsn_env"},
		{"a DSN instead of a variable", "[store]\ndriver = \"postgres\"\ndsn_env = \"postgres://u:secret@db/chio\"  # <-\n", "name of an environment variable"},
		{"dsn_env with bbolt", "[store]  # <-\ndsn_env = \"CHIO_PG_DSN\"\n", `settings of driver = "postgres"`},
		{"too many committers", "[store]\ndriver = \"postgres\"\ndsn_env = \"D\"\ncommitters = 65  # <-\n", "limit of 64"},
		{"lease too short", "[store]\ndriver = \"postgres\"\ndsn_env = \"D\"\nlease_seconds = 1  # <-\n", "2 or more"},
		{"unknown key", "[store]\ndriver = \"postgres\"\ndsn_env = \"D\"\ndsn = \"x\"  # <-\n", "dsn"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := builtin + c.toml
			_, err := Parse(doc(src), "case.toml")
			var perr *Errors
			if !errors.As(err, &perr) {
				t.Fatalf("err = %v, want *Errors", err)
			}
			want := marked(src)
			for _, e := range *perr {
				if e.Line == want && strings.Contains(e.Msg, c.msg) {
					return
				}
			}
			t.Fatalf("want line %d: …%s…, got:\n%v", want, c.msg, err)
		})
	}
}
