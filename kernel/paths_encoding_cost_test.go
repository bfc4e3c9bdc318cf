package kernel_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// echoWorld is a builtin echo tool granted under the given
// [grants.constraints] body.
func echoWorld(t *testing.T, constraints string) *testkit.World {
	t.Helper()
	return testkit.NewWorld(t, testkit.Options{PolicyTOML: `
[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "files"
server = "demo"
tool = "echo"
[grants.constraints]
` + constraints + "\n", Grants: []string{"files"}})
}

func noteArgs(t *testing.T, note string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"note": note})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Percent-decoding past maxPercentDecodes (to see whether a path hides
// deeper) was unbounded: "%2525…25" loses two bytes a round, so one 64 KiB
// argument kept the path guard busy 4.5–6 s (256 KiB: about two minutes),
// and the guard budget is only checked after a guard returns. Any agent
// with a forbidden_paths grant could pin chiod's cores. A string still
// encoded after the bounded extra rounds is now refused at once.
func TestDeepPercentEncodingIsRefusedInBoundedTime(t *testing.T) {
	w := echoWorld(t, `forbidden_paths = ["/etc/**"]`)
	blob := "%" + strings.Repeat("25", 32<<10) // 64 KiB
	c := w.Call(t, "echo", noteArgs(t, blob), "")
	done := make(chan *kernel.Outcome, 1)
	start := time.Now()
	go func() {
		out, err := w.Kernel.Submit(context.Background(), c)
		if err != nil {
			t.Error(err)
		}
		done <- out
	}()
	select {
	case out := <-done:
		// Refused as too deep, or (under -race on a loaded machine) as
		// over the guard's 50 ms budget: denied either way, and promptly.
		if out == nil || out.Status != kernel.StatusDenied || out.Guard != "forbidden_paths" {
			t.Fatalf("a string encoded past every bound: %+v", out)
		}
	case <-time.After(2 * time.Second):
		<-done // let the kernel finish before cleanup
		t.Fatalf("one 64 KiB argument kept the path guard busy %s", time.Since(start).Round(time.Millisecond))
	}

	// Within the bound, decoding on still finds a path five levels deep,
	// and text that is merely encoded a few times over is not refused.
	deep := "/etc/passwd"
	for i := 0; i < 5; i++ {
		deep = strings.ReplaceAll(deep, "%", "%25")
		deep = strings.ReplaceAll(deep, "/", "%2F")
	}
	if out := w.Submit(t, "echo", noteArgs(t, deep), ""); out.Status != kernel.StatusDenied {
		t.Fatalf("/etc/passwd encoded 5 times: %s (%s)", out.Status, out.Reason)
	}
	if out := w.Submit(t, "echo", noteArgs(t, "discount 10%2525252525 applied"), ""); out.Status != kernel.StatusAllowed {
		t.Fatalf("text encoded 6 times, no path: %s (%s)", out.Status, out.Reason)
	}
}
