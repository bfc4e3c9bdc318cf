package email

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/policy"
)

// quitDropper is an SMTP server that accepts every message (250 after
// DATA) and then drops the connection at QUIT without answering, as
// relays under load or behind a closing proxy do.
func quitDropper(t *testing.T) (addr string, accepted func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var mu sync.Mutex
	n := 0
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
				r := bufio.NewReader(conn)
				fmt.Fprint(conn, "220 relay ready\r\n")
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					switch cmd := strings.ToUpper(strings.TrimSpace(line)); {
					case strings.HasPrefix(cmd, "EHLO"), strings.HasPrefix(cmd, "HELO"):
						fmt.Fprint(conn, "250 relay\r\n")
					case strings.HasPrefix(cmd, "DATA"):
						fmt.Fprint(conn, "354 go on\r\n")
						for {
							l, err := r.ReadString('\n')
							if err != nil {
								return
							}
							if l == ".\r\n" {
								break
							}
						}
						mu.Lock()
						n++
						mu.Unlock()
						fmt.Fprint(conn, "250 queued\r\n")
					case strings.HasPrefix(cmd, "QUIT"):
						return // dropped, no 221
					default:
						fmt.Fprint(conn, "250 ok\r\n")
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// Once the server answered 250 to the message's data, it has taken the
// message: a QUIT that gets no answer does not unsend it. Deliver used to
// report the delivery failed, so the hub's retries mailed the approver
// again (each time with another link) and, after the last one, recorded
// "not delivered" on a request whose approver had every message.
func TestAMessageTheServerAcceptedIsDelivered(t *testing.T) {
	addr, accepted := quitDropper(t)
	lead, _ := keys.Generate(nil)
	p, err := policy.Parse([]byte(fmt.Sprintf(twoApproversPolicy, approverTOML(lead.Public(), "Lead"))), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	c, err := New(&policy.Email{SMTPAddr: addr, From: "chio@example.com"}, Options{PublicURL: "http://127.0.0.1:7420",
		Policy: func() *policy.Policy { return p }, Secret: make([]byte, 32), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	req := &approval.Request{ApprovalID: "ar-1", Kind: approval.KindToolCall, PolicyID: "deploys", Status: approval.StatusPending,
		Summary: "Delete a file", ExpiresAt: now.Add(time.Hour).Unix(), Quorum: 1, TrustedApprovers: []string{lead.Public().String()}}
	ctx := channels.WithDeliveryID(context.Background(), "d-1")
	err = c.Deliver(ctx, "approval.requested", req)
	// Another attempt of the same delivery (the hub's retry after a
	// failure) sends nothing to a recipient already served.
	_ = c.Deliver(ctx, "approval.requested", req)
	if err != nil || accepted() != 1 {
		t.Fatalf("Deliver = %v with %d message(s) accepted by the server, want delivered once", err, accepted())
	}
}
