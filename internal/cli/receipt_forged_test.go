package cli_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/receipt"
)

// A proxy in front of the real chiod of an auditWorld (a man in the middle,
// or chiod itself compromised) that rewrites the answers of the routes
// rewrite matches. The auditor's chio talks to the proxy.
func forgingProxy(t *testing.T, target string, rewrite func(path string, body []byte) []byte) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := httputil.NewSingleHostReverseProxy(u)
	p.ModifyResponse = func(res *http.Response) error {
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return err
		}
		body = rewrite(res.Request.URL.Path, body)
		res.Body = io.NopCloser(bytes.NewReader(body))
		res.ContentLength = int64(len(body))
		res.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv.URL
}

// chioVia runs the CLI against url with the reader token.
func chioVia(url string, args ...string) (string, string, int) {
	var out, errOut bytes.Buffer
	env := map[string]string{"CHIO_URL": url, "CHIO_READ_TOKEN": "reader"}
	code := cli.Main(args, &cli.Env{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return env[k] }})
	return out.String(), errOut.String(), code
}

// deniedRefund is the id of the world's refund a human denied.
func deniedRefund(t *testing.T, w *auditWorld) string {
	t.Helper()
	out, _, code := w.chio(t, "receipt", "list", "--decision", "deny", "--guard", "human-approval", "--output", "jsonl")
	rc, err := receipt.Parse([]byte(strings.TrimSpace(out)))
	if code != 0 || err != nil {
		t.Fatalf("the denied refund: %d %v\n%s", code, err, out)
	}
	return rc.ID
}

// turnDenyIntoAllow rewrites, in any answer, the human denial of the
// refund into an allow; the signature is left as it was.
func turnDenyIntoAllow(_ string, body []byte) []byte {
	return bytes.ReplaceAll(body, []byte(`"verdict":"deny"`), []byte(`"verdict":"allow"`)) // the world's only deny
}

// chio receipt show printed whatever chiod answered: a receipt rewritten
// on its way (a denied refund made an allow) was shown as the kernel's,
// exit 0. It must check the signature with the trusted kernel key, say
// VERIFIED, and refuse a receipt that does not verify.
func TestReceiptShowRefusesAForgedReceipt(t *testing.T) {
	w := newAuditWorld(t)
	id := deniedRefund(t, w)
	honest, _, code := w.chio(t, "receipt", "show", id, "--output", "jsonl")
	if code != 0 || !bytes.Contains([]byte(honest), []byte(`"verdict":"deny"`)) {
		t.Fatalf("the fixture's denial is not where the forgery expects it: %d\n%s", code, honest)
	}
	proxy := forgingProxy(t, w.url, turnDenyIntoAllow)

	out, errOut, code := chioVia(proxy, "receipt", "show", id)
	if code != cli.ExitError || strings.Contains(out, `"allow"`) || !strings.Contains(errOut, "does not verify") {
		t.Fatalf("show of a forged receipt: exit %d, want %d and nothing shown\nstdout:\n%s\nstderr:\n%s", code, cli.ExitError, out, errOut)
	}
	out, errOut, code = chioVia(proxy, "receipt", "show", id, "--kernel-key", w.kernelKey.String(), "--output", "json")
	if code != cli.ExitError || out != "" || !strings.Contains(errOut, "does not verify") {
		t.Fatalf("show --kernel-key of a forged receipt: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	// The honest receipt through chiod itself: shown, and said VERIFIED
	// with the key it was checked against, and what was not checked.
	out, errOut, code = w.chio(t, "receipt", "show", id, "--kernel-key", w.kernelKey.String())
	if code != 0 || !strings.Contains(out, `"deny"`) || !strings.Contains(errOut, "VERIFIED") || !strings.Contains(errOut, w.kernelKey.String()) ||
		!strings.Contains(errOut, "not checked: its inclusion in the log") {
		t.Fatalf("show of the honest receipt: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// A man in the middle who re-signs the forgery with a key of his own and
// reports that key as the kernel's on /healthz fools an auditor who trusts
// the server's key (who is told so), never one who pinned the kernel key.
func TestReceiptShowPinnedKeyRefusesAResignedForgery(t *testing.T) {
	w := newAuditWorld(t)
	id := deniedRefund(t, w)
	mitm := keys.FromSeed(bytes.Repeat([]byte{66}, 32))
	proxy := forgingProxy(t, w.url, func(path string, body []byte) []byte {
		switch {
		case path == "/healthz":
			return bytes.ReplaceAll(body, []byte(w.kernelKey.String()), []byte(mitm.Public().String()))
		case path == "/v1/receipts/"+id:
			rc, err := receipt.Parse(turnDenyIntoAllow(path, body))
			if err != nil {
				return body
			}
			raw, err := receipt.Sign(mitm, rc)
			if err != nil {
				return body
			}
			return raw
		}
		return body
	})
	_, errOut, code := chioVia(proxy, "receipt", "show", id)
	if code != 0 || !strings.Contains(errOut, "trusting kernel key from the server: "+mitm.Public().String()) {
		t.Fatalf("show trusting the server's key: exit %d\n%s", code, errOut)
	}
	out, errOut, code := chioVia(proxy, "receipt", "show", id, "--kernel-key", w.kernelKey.String())
	if code != cli.ExitError || out != "" || !strings.Contains(errOut, "does not verify with kernel key "+w.kernelKey.String()) {
		t.Fatalf("show --kernel-key of a re-signed forgery: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// chio receipt list printed every receipt chiod's page held: one rewritten
// on its way was listed among the real ones, exit 0. It must check every
// receipt's signature and refuse the list, naming the one that fails.
func TestReceiptListRefusesAForgedReceipt(t *testing.T) {
	w := newAuditWorld(t)
	id := deniedRefund(t, w)
	proxy := forgingProxy(t, w.url, turnDenyIntoAllow)
	for _, output := range []string{"table", "jsonl"} {
		out, errOut, code := chioVia(proxy, "receipt", "list", "--output", output)
		if code != cli.ExitError || out != "" || !strings.Contains(errOut, "receipt "+id) || !strings.Contains(errOut, "does not verify") {
			t.Fatalf("list --output %s with a forged receipt: exit %d, want %d and nothing listed\nstdout:\n%s\nstderr:\n%s", output, code, cli.ExitError, out, errOut)
		}
	}
	// Honest: listed, and said what was checked and what was not.
	out, errOut, code := w.chio(t, "receipt", "list", "--kernel-key", w.kernelKey.String())
	if code != 0 || !strings.Contains(out, id) ||
		!strings.Contains(errOut, "7 receipts, each signature VERIFIED with kernel key "+w.kernelKey.String()) ||
		!strings.Contains(errOut, "not checked:") {
		t.Fatalf("honest list: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// chio receipt stats printed chiod's counts as fact: a server that inflates
// them (here: 1000 receipts of a log of 7) was believed without a word.
// No signature covers a count: the output must say the figures are chiod's
// own, not verified.
func TestReceiptStatsSaysItsFiguresAreUnverified(t *testing.T) {
	w := newAuditWorld(t)
	proxy := forgingProxy(t, w.url, func(path string, body []byte) []byte {
		if path != "/v1/receipts/stats" {
			return body
		}
		var st map[string]any
		if json.Unmarshal(body, &st) != nil {
			return body
		}
		st["total"] = 1000
		forged, _ := json.Marshal(st)
		return forged
	})
	out, _, code := chioVia(proxy, "receipt", "stats", "--group-by", "decision")
	if code != 0 || !strings.Contains(out, "total 1000 receipts") {
		t.Fatalf("stats through the proxy: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "UNVERIFIED") {
		t.Fatalf("stats printed chiod's counts as fact, not as its unverified word:\n%s", out)
	}
	out, _, code = chioVia(proxy, "receipt", "stats", "--output", "json")
	var got struct {
		Total    uint64 `json:"total"`
		Verified *bool  `json:"verified"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Total != 1000 || got.Verified == nil || *got.Verified {
		t.Fatalf("stats --output json must carry \"verified\": false: exit %d\n%s", code, out)
	}
}

// A server that ignores the filters answers with receipts the kernel did
// sign, only not the ones asked for: `list --decision deny` through a proxy
// that drops the decision filter listed every allow as if it were a
// denial, exit 0. Each receipt must match the filters the auditor gave.
func TestReceiptListRefusesReceiptsTheFiltersExclude(t *testing.T) {
	w := newAuditWorld(t)
	u, err := url.Parse(w.url)
	if err != nil {
		t.Fatal(err)
	}
	p := httputil.NewSingleHostReverseProxy(u)
	direct := p.Director
	p.Director = func(r *http.Request) {
		direct(r)
		q := r.URL.Query()
		q.Del("decision")
		r.URL.RawQuery = q.Encode()
	}
	proxy := httptest.NewServer(p)
	defer proxy.Close()
	out, errOut, code := chioVia(proxy.URL, "receipt", "list", "--decision", "deny", "--kernel-key", w.kernelKey.String())
	if code != cli.ExitError || out != "" || !strings.Contains(errOut, "does not match the filters") {
		t.Fatalf("list --decision deny answered with allows: exit %d, want %d and nothing listed\nstdout:\n%s\nstderr:\n%s", code, cli.ExitError, out, errOut)
	}
	// Honest, with every filter the command takes that chiod's answer can
	// be held to: listed.
	out, errOut, code = w.chio(t, "receipt", "list", "--decision", "deny", "--guard", "human-approval", "--server", "demo", "--tool", "issue_refund",
		"--meta", "approver_display_name=Finance Lead", "--since", "1h", "--until", "2999-01-01T00:00:00Z", "--kernel-key", w.kernelKey.String())
	if code != 0 || strings.Count(out, "\n") != 2 {
		t.Fatalf("honest filtered list: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// A server can also answer a receipt twice (a page repeated, or one
// receipt in two pages): each verifies and matches, and the list counted
// 14 receipts of a log of 7, exit 0. Pages come in seq order (--order),
// so each receipt must come after the one before it.
func TestReceiptListRefusesARepeatedReceipt(t *testing.T) {
	w := newAuditWorld(t)
	proxy := forgingProxy(t, w.url, func(path string, body []byte) []byte {
		if path != "/v1/receipts" {
			return body
		}
		var page map[string]json.RawMessage
		var rs []json.RawMessage
		if json.Unmarshal(body, &page) != nil || json.Unmarshal(page["receipts"], &rs) != nil {
			return body
		}
		page["receipts"], _ = json.Marshal(append(rs, rs...))
		forged, _ := json.Marshal(page)
		return forged
	})
	for _, order := range []string{"asc", "desc"} {
		out, errOut, code := chioVia(proxy, "receipt", "list", "--order", order, "--kernel-key", w.kernelKey.String())
		if code != cli.ExitError || out != "" || !strings.Contains(errOut, "out of seq order") {
			t.Fatalf("list --order %s with every receipt twice: exit %d, want %d and nothing listed\nstdout:\n%s\nstderr:\n%s", order, code, cli.ExitError, out, errOut)
		}
	}
	out, errOut, code := w.chio(t, "receipt", "list", "--order", "desc", "--limit", "3", "--kernel-key", w.kernelKey.String())
	if code != 0 || strings.Count(out, "\n") != 4 {
		t.Fatalf("honest list --order desc: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}
