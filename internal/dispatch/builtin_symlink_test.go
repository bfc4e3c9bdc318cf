//go:build unix

package dispatch

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/chiokernel/chio/kernel"
)

// A symlink planted at one of the builtin tools' own paths in the data dir
// must refuse the start (naming it), and nothing outside the data dir may
// be written, truncated, created or deleted through it. chiod followed
// them all: ledger.jsonl was opened with O_CREATE|O_APPEND and cut back to
// its last newline by the ledger recovery (a link to a file not ending in
// one truncated it; a dangling link's target was created, then appended
// refunds); builtin/ and builtin/requests/ were made with MkdirAll, so the
// tools' state went into the link's target; and delete_file's sandbox was
// opened through the link, so it deleted files of the tree it named.
func TestBuiltinStateSymlinkIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string // the link, under the data dir
		target string // under elsewhere; "" for elsewhere itself
	}{
		{"builtin/ledger.jsonl", "precious"},
		{"builtin/ledger.jsonl", "dangling"},
		{"builtin/sandbox", ""},
		{"builtin/requests", ""},
		{"builtin", ""},
	} {
		t.Run(tc.name+"->"+tc.target, func(t *testing.T) {
			dir, elsewhere := t.TempDir(), t.TempDir()
			// elsewhere holds a file that is not the ledger's (no final
			// newline) and one delete_file would find in a sandbox.
			if err := os.WriteFile(filepath.Join(elsewhere, "precious"), []byte("precious, no newline"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(elsewhere, "etc"), 0o700); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(elsewhere, "etc", "passwd"))
			before := tree(t, elsewhere)

			link := filepath.Join(dir, filepath.FromSlash(tc.name))
			if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
				t.Fatal(err)
			}
			symlink(t, filepath.Join(elsewhere, tc.target), link)

			r, err := New(builtinServers, dir)
			if err == nil {
				// Started: what the tools then do goes through the link.
				for _, req := range []kernel.DispatchRequest{
					{RequestID: "r-1", Server: "payments", Tool: "issue_refund", Arguments: json.RawMessage(refundArgsOK)},
					{RequestID: "d-1", Server: "demo", Tool: "delete_file", Arguments: json.RawMessage(`{"path":"/etc/passwd"}`)},
				} {
					r.Dispatch(context.Background(), req)
				}
				r.Close()
			}
			if after := tree(t, elsewhere); after != before {
				t.Errorf("chio changed what the link leads to:\nbefore %s\nafter  %s", before, after)
			}
			if err == nil || !strings.Contains(err.Error(), link) {
				t.Errorf("New with %s a symlink: err %v, want a refusal naming it", tc.name, err)
			}
		})
	}
}

// tree lists every entry under dir with its content, in order.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			out = append(out, rel+"/")
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out = append(out, rel+"="+string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return strings.Join(out, " | ")
}
