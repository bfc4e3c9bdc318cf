package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/testkit"
)

// `chio receipt verify --file` prints text taken from the (untrusted)
// export file — here the header's unsigned kernel_key, which ends up in a
// problem message — escaped. Raw, whoever hands over a tampered export
// could clear the screen, print a fake "OK: every check passed" report and
// switch on SGR 8 (concealed text) so the real "FAIL …" / "FAILED: n
// problems" lines that follow are invisible: the exit code would still be
// 1, but a person reading the terminal would see a clean report.
func TestVerifyFileEscapesTextFromTheExport(t *testing.T) {
	w := newAuditWorld(t)
	file := filepath.Join(w.dir, "audit.jsonl")
	if out, errOut, code := w.chio(t, "receipt", "export", "--out", file); code != 0 {
		t.Fatalf("export: %d\n%s%s", code, out, errOut)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitN(data, []byte("\n"), 2)
	fake := `\u001b[2J\u001b[HOK: every check passed\u001b[8m`
	lines[0] = bytes.Replace(lines[0], []byte(`"kernel_key":"`+w.kernelKey.String()+`"`), []byte(`"kernel_key":"`+fake+`"`), 1)
	if !bytes.Contains(lines[0], []byte(fake)) {
		t.Fatalf("header not tampered: %s", lines[0])
	}
	bad := filepath.Join(w.dir, "tampered.jsonl")
	if err := os.WriteFile(bad, bytes.Join(lines, []byte("\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, code := w.chio(t, "receipt", "verify", "--file", bad, "--kernel-key", w.kernelKey.String())
	if code == 0 {
		t.Fatalf("tampered header verified: %s", out)
	}
	if strings.ContainsAny(out, "\x1b") {
		t.Fatalf("verify printed raw escape sequences from the export file into the terminal:\n%q", out)
	}
}

const failingToolPolicy = `
[[servers]]
id = "demo"
transport = "http"
url = "%s"
[[servers.tools]]
name = "lookup"
[[grants]]
id = "lookup"
server = "demo"
tool = "lookup"
`

// `chio receipt list` (table output, the default) prints every column
// escaped. For a failed call decision.reason and metadata tool_error are
// the tool's own error text (internal/dispatch/http.go: the HTTP body of a
// non-2xx answer; MCP: the tool's result text), often built from the
// agent's arguments. Raw, a tool error holding "\x1b[3A\x1b[J" would move
// the cursor up and erase the rows above it: receipts the auditor asked
// for would vanish from the listing.
func TestReceiptListEscapesToolErrorText(t *testing.T) {
	tool := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(rw, "no such account\x1b[3A\x1b[J")
	}))
	defer tool.Close()
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(failingToolPolicy, tool.URL), Grants: []string{"lookup"},
		Serve: true, AdminToken: approvalAdminToken})
	for i := 0; i < 3; i++ {
		w.Submit(t, "lookup", `{"account":"x"}`, "")
	}
	env := map[string]string{"CHIO_URL": w.URL, "CHIO_ADMIN_TOKEN": approvalAdminToken}
	so, se, code := chio(env, "receipt", "list")
	if code != 0 || !strings.Contains(so, "incomplete") {
		t.Fatalf("receipt list: %d\n%s%s", code, so, se)
	}
	if strings.ContainsAny(so, "\x1b") {
		t.Fatalf("receipt list printed the tool's escape sequences raw:\n%q", so)
	}
}

// `chio receipt list --output json` and `chio receipt show --output json`
// print a receipt's text — here a tool error holding a C1 CSI (U+009B,
// which some terminals obey like ESC [), a bidi override reordering the
// rest of the line and a zero-width space — as JSON \u escapes: the same
// JSON value a program parses, but nothing a terminal acts on. (The jsonl
// listing stays byte for byte what was signed: it feeds verification.)
func TestReceiptJSONOutputEscapesTerminalActiveText(t *testing.T) {
	tool := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(rw, "no such account\u009b2J\u202eDE89\u200b\x7f")
	}))
	defer tool.Close()
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(failingToolPolicy, tool.URL), Grants: []string{"lookup"},
		Serve: true, AdminToken: approvalAdminToken})
	w.Submit(t, "lookup", `{"account":"x"}`, "")
	env := map[string]string{"CHIO_URL": w.URL, "CHIO_ADMIN_TOKEN": approvalAdminToken}
	jsonl, se, code := chio(env, "receipt", "list", "--output", "jsonl")
	if code != 0 || !strings.Contains(jsonl, "\u202e") {
		t.Fatalf("receipt list --output jsonl: %d (the signed bytes hold the tool's text as is)\n%s%s", code, jsonl, se)
	}
	var all []any // every receipt, as signed: the allow, then the failed call's
	for _, l := range strings.Split(strings.TrimSpace(jsonl), "\n") {
		var v any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatal(err)
		}
		all = append(all, v)
	}
	failed := all[len(all)-1].(map[string]any)
	if !strings.Contains(fmt.Sprint(failed["decision"]), "\u202e") {
		t.Fatalf("the last receipt is not the failed call's: %v", failed)
	}
	for _, c := range []struct {
		args   []string
		signed any
	}{
		{[]string{"receipt", "list", "--output", "json"}, all},
		{[]string{"receipt", "show", failed["id"].(string), "--output", "json"}, failed},
	} {
		args, signed := c.args, c.signed
		so, se, code := chio(env, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, so, se)
		}
		if terminalActive(so) || strings.ContainsAny(so, "\x7f\u009b") {
			t.Errorf("`chio %s` writes characters a terminal acts on: %q", strings.Join(args, " "), so)
		}
		var got any
		if err := json.Unmarshal([]byte(so), &got); err != nil {
			t.Fatalf("%v: not JSON: %v\n%s", args, err, so)
		}
		if !reflect.DeepEqual(got, signed) {
			t.Errorf("`chio %s` is not the receipt's value:\n%v\nwant\n%v", strings.Join(args, " "), got, signed)
		}
	}
}

// `chio receipt stats` prints its group keys escaped. Grouped by a
// metadata value (--group-by metadata.tool_error) a key is the tool's own
// error text, and any key is chiod's unverified word: raw, "\x1b[8m"
// (concealed text) in a key hid the table's last line,
// "UNVERIFIED: chiod's own count", and a cursor move could rewrite the
// counts above it.
func TestReceiptStatsEscapesGroupKeys(t *testing.T) {
	tool := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(rw, "no such account\x1b[8m\u202e")
	}))
	defer tool.Close()
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(failingToolPolicy, tool.URL), Grants: []string{"lookup"},
		Serve: true, AdminToken: approvalAdminToken})
	w.Submit(t, "lookup", `{"account":"x"}`, "")
	env := map[string]string{"CHIO_URL": w.URL, "CHIO_ADMIN_TOKEN": approvalAdminToken}
	so, se, code := chio(env, "receipt", "stats", "--group-by", "metadata.tool_error")
	if code != 0 || !strings.Contains(so, "no such account") || !strings.Contains(so, "UNVERIFIED") {
		t.Fatalf("receipt stats: %d\n%s%s", code, so, se)
	}
	if terminalActive(so) {
		t.Fatalf("receipt stats printed the tool's text raw in a group key:\n%q", so)
	}
}
