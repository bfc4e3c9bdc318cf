package receipt

import (
	"os"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/keys"
)

func TestZZProf(t *testing.T) {
	f, err := os.Open(os.Getenv("EXPORT"))
	if err != nil {
		t.Skip()
	}
	k, _ := keys.ParsePublicKey(os.Getenv("KEY"))
	t0 := time.Now()
	rep, err := VerifyExport(f, VerifyOptions{KernelKey: k})
	if err != nil || !rep.OK() {
		t.Fatal(err, rep.Problems)
	}
	t.Logf("verified %d in %s", rep.Receipts, time.Since(t0))
}
