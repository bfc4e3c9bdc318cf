package kernel

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
)

func brokerKernel() *Kernel { return &Kernel{events: newBroker()} }

// TestSubscriberPoolsAreSeparate: a full stream pool refuses streams and
// leaves every long-poll slot free, and the other way round.
func TestSubscriberPoolsAreSeparate(t *testing.T) {
	k := brokerKernel()
	fill := func(p Pool, n int) (cancels []func()) {
		for i := 0; i < n; i++ {
			_, cancel, ok := k.Subscribe(p)
			if !ok {
				t.Fatalf("pool %d refused subscriber %d of %d", p, i, n)
			}
			cancels = append(cancels, cancel)
		}
		return cancels
	}
	streams := fill(PoolStream, MaxStreamSubscribers)
	if _, _, ok := k.Subscribe(PoolStream); ok {
		t.Fatal("stream pool exceeded its cap")
	}
	waits := fill(PoolWait, MaxWaitSubscribers)
	if _, _, ok := k.Subscribe(PoolWait); ok {
		t.Fatal("wait pool exceeded its cap")
	}
	streams[0]()
	streams[0]() // cancel is idempotent
	if _, _, ok := k.Subscribe(PoolStream); !ok {
		t.Fatal("a cancelled stream's slot was not freed")
	}
	if k.Subscribers(PoolStream) != MaxStreamSubscribers || k.Subscribers(PoolWait) != MaxWaitSubscribers {
		t.Fatalf("counts %d %d", k.Subscribers(PoolStream), k.Subscribers(PoolWait))
	}
	for _, c := range waits {
		c()
	}
	if _, _, ok := k.Subscribe(Pool(7)); ok {
		t.Fatal("unknown pool accepted")
	}
}

// TestSlowSubscriberIsDroppedAndReleased: a subscriber that stops reading
// is dropped once its buffer is full; its buffered events are released at
// once and its channel is closed; a reading subscriber is unaffected.
func TestSlowSubscriberIsDroppedAndReleased(t *testing.T) {
	k := brokerKernel()
	slow, _, _ := k.Subscribe(PoolStream)
	fast, cancelFast, _ := k.Subscribe(PoolStream)
	defer cancelFast()
	for i := 0; i < StreamBuffer+1; i++ {
		k.events.publish(Event{Type: EventApprovalRequested, Approval: &approval.Request{ApprovalID: "ar-x"}})
		if e := <-fast; e.Type != EventApprovalRequested {
			t.Fatalf("fast subscriber got %+v", e)
		}
	}
	if e, open := <-slow; open {
		t.Fatalf("dropped subscriber still holds events: %+v", e)
	}
	if n := k.Subscribers(PoolStream); n != 1 {
		t.Fatalf("%d stream subscribers, want the fast one only", n)
	}
}

// TestEventJSONIsSharedAndWithoutOutput: one publish is encoded once for
// every subscriber, and a completed call's output never reaches the wire.
func TestEventJSONIsSharedAndWithoutOutput(t *testing.T) {
	k := brokerKernel()
	a, ca, _ := k.Subscribe(PoolStream)
	b, cb, _ := k.Subscribe(PoolStream)
	defer ca()
	defer cb()
	k.events.publish(Event{Type: EventCallCompleted, Call: &Outcome{Status: StatusAllowed, RequestID: "req-1",
		ReceiptID: "rc-1", Output: json.RawMessage(`{"secret":"tool output"}`), ToolError: "tool said secret", ApprovalRequestID: "ar-1"}})
	ea, eb := <-a, <-b
	da, err := ea.JSON()
	if err != nil {
		t.Fatal(err)
	}
	db, _ := eb.JSON()
	if &da[0] != &db[0] {
		t.Fatal("each subscriber got its own encoding")
	}
	if bytes.Contains(da, []byte("secret")) || bytes.ContainsAny(da, "\n\r") {
		t.Fatalf("wire form %s", da)
	}
	var got struct {
		Type string         `json:"type"`
		Call map[string]any `json:"call"`
	}
	if err := json.Unmarshal(da, &got); err != nil || got.Type != EventCallCompleted || got.Call["request_id"] != "req-1" ||
		got.Call["status"] != StatusAllowed || got.Call["approval_request_id"] != "ar-1" || got.Call["receipt_id"] != "rc-1" {
		t.Fatalf("%v %s", err, da)
	}
	// An event built outside publish (a replay) encodes the same way.
	req := &approval.Request{ApprovalID: "ar-2", Summary: "line one\nline two", GovernedIntent: json.RawMessage("{\n \"purpose\": \"x\"\n}")}
	d, err := Event{Type: EventApprovalRequested, Approval: req}.JSON()
	if err != nil || bytes.ContainsAny(d, "\n\r") || !strings.Contains(string(d), `"approval_id":"ar-2"`) {
		t.Fatalf("%v %s", err, d)
	}
}

func TestEventMayEndACall(t *testing.T) {
	done := Event{Type: EventCallCompleted, Call: &Outcome{RequestID: "r1"}}
	resolved := Event{Type: EventApprovalResolved, Approval: &approval.Request{ApprovalID: "ar-1"}}
	for _, c := range []struct {
		e        Event
		id, appr string
		want     bool
	}{
		{done, "r1", "", true}, {done, "r2", "", false},
		{resolved, "r1", "ar-1", true}, {resolved, "r1", "ar-2", false}, {resolved, "r1", "", false},
		{Event{Type: EventApprovalRequested, Approval: &approval.Request{ApprovalID: "ar-1"}}, "r1", "ar-1", false},
	} {
		if got := c.e.MayEnd(c.id, c.appr); got != c.want {
			t.Errorf("%s MayEnd(%q, %q) = %v", c.e.Type, c.id, c.appr, got)
		}
	}
	if !InFlight(StatusDispatching) || !InFlight(StatusPendingApproval) || InFlight(StatusAllowed) {
		t.Fatal("InFlight")
	}
}
