package cli_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/kernel"
)

// chio approval cancel holds --reason to the kernel's own limit
// (kernel.MaxCancelReasonLen, after trimming as the kernel does): one chiod
// would refuse is a usage error named locally, before any request; one it
// takes is sent.
func TestApprovalCancelReasonLimitIsTheKernels(t *testing.T) {
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"approval_id":"ar-1","outcome":"cancelled","resolved_at":1700000000,"receipt_id":"rc-9"}`))
	}))
	defer srv.Close()
	env := map[string]string{"CHIO_URL": srv.URL, "CHIO_ADMIN_TOKEN": "admin-token-0123456789abcdef0123"}

	over := strings.Repeat("x", kernel.MaxCancelReasonLen+1)
	_, se, code := chio(env, "approval", "cancel", "ar-1", "--reason", over)
	if code != cli.ExitUsage || !strings.Contains(se, strconv.Itoa(kernel.MaxCancelReasonLen)) {
		t.Fatalf("a reason of %d bytes: exit %d, stderr %q; want a usage error naming the limit %d",
			len(over), code, se, kernel.MaxCancelReasonLen)
	}
	if n := posts.Load(); n != 0 {
		t.Fatalf("a reason chiod refuses was sent (%d requests)", n)
	}

	// At the limit, with spaces around it that the kernel trims: sent.
	at := "  " + strings.Repeat("x", kernel.MaxCancelReasonLen) + "  "
	if _, se, code := chio(env, "approval", "cancel", "ar-1", "--reason", at); code != cli.ExitOK || posts.Load() != 1 {
		t.Fatalf("a reason at the limit: exit %d, stderr %q, %d requests", code, se, posts.Load())
	}
}
