package cli_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// `chio approval cancel` printed the receipt id of chiod's answer raw in
// its "cancelled … (receipt …)" line, where every other word of an answer
// is escaped: an answer whose id holds an escape sequence (a proxy in
// between, a chiod that is not chio's) repainted the operator's terminal.
func TestApprovalCancelEscapesTheReceiptIDItPrints(t *testing.T) {
	w := newApprovalWorld(t)
	url, _ := fakeFront(t, func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		io.WriteString(rw, `{"status":"cancelled","receipt_id":"rc-1\u001b[2K\r\u001b[1Anot cancelled"}`)
	})
	env := map[string]string{"CHIO_URL": url, "CHIO_ADMIN_TOKEN": "admin-token-admin-token-admin-token"}
	so, se, code := w.run(env, "approval", "cancel", "ar-1", "--reason", "wrong payee")
	if !strings.Contains(so, "rc-1") {
		t.Fatalf("exit %d: the receipt id is not printed:\nstdout %q\nstderr %q", code, so, se)
	}
	if terminalActive(so + se) {
		t.Fatalf("approval cancel printed the receipt id from the answer raw:\nstdout %q\nstderr %q", so, se)
	}
}
