package webhook

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// receiverSource is a webhook receiver as docs/approver.md describes it:
// another module, with the kernel key it pinned as text. It may import
// only what a module outside chio can: internal/keys is not among them.
const receiverSource = `package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/chiokernel/chio/channels/webhook"
)

func main() {
	kernelKey, err := webhook.ParseKernelKey(os.Args[1])
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	_, err = webhook.VerifyDelivery([]byte("{}"), "00", kernelKey, time.Now(), time.Minute)
	if !errors.Is(err, webhook.ErrBadSignature) {
		fmt.Println("want ErrBadSignature, got", err)
		os.Exit(1)
	}
}
`

// A receiver in another module must be able to pin the kernel key and call
// VerifyDelivery. The key's type lives in internal/keys, which only chio
// itself may import, and nothing exported parsed one: the documented Go
// receiver could not be written outside this module.
func TestVerifyDeliveryFromAnotherModule(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := "module example.com/receiver\n\ngo 1.26\n\nrequire github.com/chiokernel/chio v0.0.0\n\nreplace github.com/chiokernel/chio => " + root + "\n"
	for name, data := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sum, "main.go": []byte(receiverSource)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run := exec.Command("go", "run", ".", "ed25519:2c6bbd9748d0948cff3efe3ff1b93fcedd3b0a7ec3b9484c278095e7413c004d")
	run.Dir = dir
	// Offline: chio's own dependencies are in the module cache already.
	run.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("a receiver in another module: %v\n%s", err, out)
	}
}
