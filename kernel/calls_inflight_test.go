package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

const inflightPolicy = `
[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "echo"
server = "demo"
tool = "echo"
`

// parkingTool is a tool that holds every call until release is closed,
// telling arrived of each call as it starts.
type parkingTool struct {
	arrived chan string
	release chan struct{}
}

func (h *parkingTool) Dispatch(ctx context.Context, r kernel.DispatchRequest) (kernel.DispatchResult, error) {
	h.arrived <- r.RequestID
	select {
	case <-h.release:
	case <-ctx.Done():
		return kernel.DispatchResult{}, ctx.Err()
	}
	return kernel.DispatchResult{Output: json.RawMessage(`{"ok":true}`)}, nil
}

// One agent cannot hold an unbounded number of calls in chiod at once: a
// Submit keeps running (its arguments in memory, a goroutine, the tool's
// connection) after the client has gone, so an agent that sends calls to a
// slow tool and hangs up would otherwise grow chiod without bound and take
// the tool, and the commit queue, from every other agent. Past its share,
// an agent's call is refused at once, with nothing decided; another agent
// is not affected, and a call that ends makes room.
func TestOneAgentsCallsInFlightAreBounded(t *testing.T) {
	const probe = 1024 // far more than any share one agent should get
	tool := &parkingTool{arrived: make(chan string, probe+8), release: make(chan struct{})}
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: inflightPolicy, Grants: []string{"echo"}, Dispatcher: tool})
	released := false
	t.Cleanup(func() {
		if !released {
			close(tool.release)
		}
	})
	type result struct {
		out *kernel.Outcome
		err error
	}
	submit := func(c *kernel.ToolCall) chan result {
		done := make(chan result, 1)
		go func() {
			out, err := w.Kernel.Submit(context.Background(), c)
			done <- result{out, err}
		}()
		return done
	}
	// Each call either reaches the tool (and stays there) or is refused.
	held := 0
	var refusal error
	var running []chan result
	for held < probe && refusal == nil {
		done := submit(w.Call(t, "echo", `{"n":1}`, ""))
		select {
		case <-tool.arrived:
			held++
			running = append(running, done)
		case r := <-done:
			if r.err == nil {
				t.Fatalf("call %d ended while the tool holds it: %+v", held+1, r.out)
			}
			refusal = r.err
		}
	}
	if refusal == nil {
		t.Fatalf("%d calls of one agent are running in chiod at once and none was refused: "+
			"one agent can hold an unbounded number of calls", held)
	}
	if !errors.Is(refusal, kernel.ErrTooManyCalls) || !strings.Contains(refusal.Error(), "in flight") {
		t.Fatalf("refusal after %d calls does not say why: %v", held, refusal)
	}
	// Over HTTP the refusal is a 429 with Retry-After: nothing was decided.
	rr := httptest.NewRecorder()
	httpapi.WriteError(rr, refusal)
	if rr.Code != http.StatusTooManyRequests || rr.Header().Get("Retry-After") == "" {
		t.Fatalf("the refusal answers %d (Retry-After %q): %s", rr.Code, rr.Header().Get("Retry-After"), rr.Body)
	}

	// Another agent still gets its call to the tool.
	other := keys.FromSeed([]byte("other-other-other-other-other-32"))
	otherCap, _, err := w.Kernel.IssueCapability(other.Public(), []string{"echo"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	done := submit(w.CallAs(t, other, otherCap, "demo", "echo", `{"n":2}`, ""))
	select {
	case <-tool.arrived:
	case r := <-done:
		t.Fatalf("another agent's call was refused while the first agent is at its share: %v", r.err)
	}

	// Once the calls end, the first agent may call again.
	close(tool.release)
	released = true
	if r := <-done; r.err != nil || r.out.Status != kernel.StatusAllowed {
		t.Fatalf("the other agent's call: %+v %v", r.out, r.err)
	}
	for i, done := range running {
		if r := <-done; r.err != nil || r.out.Status != kernel.StatusAllowed {
			t.Fatalf("held call %d: %+v %v", i+1, r.out, r.err)
		}
	}
	out, err := w.Kernel.Submit(context.Background(), w.Call(t, "echo", `{"n":3}`, ""))
	if err != nil {
		t.Fatalf("after its calls ended, the agent is still refused: %v", err)
	}
	<-tool.arrived // it ran (release is closed)
	if out.Status != kernel.StatusAllowed {
		t.Fatalf("after the calls ended: %+v", out)
	}
}
