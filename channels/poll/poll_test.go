package poll_test

import (
	"context"
	"sync"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels"
	"github.com/chiokernel/chio/channels/poll"
)

func TestPollPushesNothingAndCountsOK(t *testing.T) {
	c := poll.New()
	if c.Name() != "poll" || poll.Path != "/approvals/pending" {
		t.Fatalf("name %q path %q", c.Name(), poll.Path)
	}
	if err := c.Deliver(context.Background(), "approval.requested", &approval.Request{ApprovalID: "apr_1"}); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	got := map[string]int{}
	done := make(chan struct{})
	hub := channels.NewHub(channels.HubOptions{
		Channels: []channels.Channel{c},
		Metric: func(ch, res string) {
			mu.Lock()
			defer mu.Unlock()
			got[ch+"/"+res]++
			if got["poll/ok"] == 2 {
				close(done)
			}
		},
		OnFailure: func(id, ch, msg string) { t.Errorf("failure %s %s %s", id, ch, msg) },
	})
	defer hub.Close()
	for _, ev := range []string{"approval.requested", "approval.resolved"} {
		hub.Notify(ev, &approval.Request{ApprovalID: "apr_1", Channels: []string{"poll", "dashboard"}})
	}
	<-done
	hub.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("metrics %v, want only poll/ok", got)
	}
}
