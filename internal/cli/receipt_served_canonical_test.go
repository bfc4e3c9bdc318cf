package cli_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// reEncode re-spells every receipt in an answer: a space after its
// opening brace. JSON whitespace, so the signature (over the canonical
// form) still verifies; but these are not the bytes the kernel signed and
// logged, and their leaf hash is no leaf of its Merkle log.
func reEncode(_ string, body []byte) []byte {
	return bytes.ReplaceAll(body, []byte(`{"action":`), []byte(`{ "action":`))
}

// chio receipt list and show accepted any spelling of a receipt whose
// signature verifies and printed it as served: through a server (or a man
// in the middle) that re-encodes receipts, `--output jsonl` printed bytes
// the kernel never stored, said VERIFIED, exit 0 — though its lines are
// documented as "the receipts byte for byte as signed, for offline
// verification". chio receipt verify --file refuses such a line ("not in
// canonical form"); list and show must as well.
func TestReceiptListAndShowRefuseAReEncodedReceipt(t *testing.T) {
	w := newAuditWorld(t)
	id := deniedRefund(t, w)
	proxy := forgingProxy(t, w.url, reEncode)
	key := "--kernel-key=" + w.kernelKey.String()
	for _, args := range [][]string{
		{"receipt", "list", "--output", "jsonl", key},
		{"receipt", "list", key},
		{"receipt", "show", id, "--output", "jsonl", key},
	} {
		out, errOut, code := chioVia(proxy, args...)
		if code != cli.ExitError || out != "" || !strings.Contains(errOut, "not in canonical form") {
			t.Errorf("`chio %s` through a server that re-encodes receipts: exit %d, want %d and nothing shown\nstdout:\n%s\nstderr:\n%s",
				strings.Join(args, " "), code, cli.ExitError, out, errOut)
		}
	}
}
