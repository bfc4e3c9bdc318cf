package webhook_test

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"unicode"

	"github.com/chiokernel/chio/policy"
)

// A receiver's answer is recorded on the request (notify_errors) as a
// short printable excerpt: control and format characters become spaces.
// Its status line's reason phrase is the receiver's text too, and was
// recorded as sent: a terminal escape (ESC[…) or a bidi override in it
// reached the stored request, where `curl | jq -r` draws it.
func TestReceiversStatusTextIsRecordedPrintable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			if _, err := http.ReadRequest(bufio.NewReader(conn)); err == nil {
				_, _ = conn.Write([]byte("HTTP/1.1 503 \x1b[2J\x1b[32mdelivered\u202e ok\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
			}
			conn.Close()
		}
	}()
	c := newChannel(t, policy.Webhook{URL: "http://" + ln.Addr().String() + "/hook"})
	err = c.Deliver(context.Background(), "approval.requested", sampleRequest())
	if err == nil {
		t.Fatal("a 503 was taken as delivered")
	}
	if i := strings.IndexFunc(err.Error(), func(r rune) bool { return !unicode.IsPrint(r) }); i >= 0 {
		t.Fatalf("the recorded failure %q holds the receiver's unprintable %q", err.Error(), []rune(err.Error()[i:])[0])
	}
	if !strings.Contains(err.Error(), "503") {
		t.Fatalf("the recorded failure %q does not say 503", err)
	}
}
