package chio

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
)

// callOutcomes is testdata/sdk/call_outcomes.json, shared with the Python
// and TypeScript SDKs' tests: what a call reports when every attempt meets
// the same answer or transport failure.
type callOutcomes struct {
	Cases []struct {
		Name              string `json:"name"`
		Refused           bool   `json:"refused"`
		CloseAfterRequest bool   `json:"close_after_request"`
		Answer            *struct {
			Status  int               `json:"status"`
			Headers map[string]string `json:"headers"`
			Body    string            `json:"body"`
		} `json:"answer"`
		Outcome  string `json:"outcome"`
		Attempts int32  `json:"attempts"`
	} `json:"cases"`
}

// outcomeOf names err as the fixture does.
func outcomeOf(err error) string {
	switch {
	case errors.Is(err, ErrNotSent): // before ErrUnavailable, which it also matches
		return "not_sent"
	case errors.Is(err, ErrOutcomeUnknown):
		return "outcome_unknown"
	case errors.Is(err, ErrUnavailable):
		return "unavailable"
	case errors.Is(err, ErrBadRequest):
		return "bad_request"
	case errors.Is(err, ErrUnauthorized):
		return "unauthorized"
	case errors.Is(err, ErrConflict):
		return "conflict"
	}
	return "other"
}

// serveCallAnswers answers every request on ln, after reading all of it,
// with answer (nil: closes the connection without answering), counting
// the requests.
func serveCallAnswers(ln net.Listener, answer []byte, requests *atomic.Int32) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer conn.Close()
			req, err := http.ReadRequest(bufio.NewReader(conn))
			if err != nil {
				return
			}
			if _, err := io.Copy(io.Discard, req.Body); err != nil {
				return
			}
			requests.Add(1)
			if answer != nil {
				_, _ = conn.Write(answer)
			}
		}()
	}
}

func TestCallOutcomesSharedWithTheOtherSDKs(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "sdk", "call_outcomes.json")) // TestMain runs from the repository root
	if err != nil {
		t.Fatal(err)
	}
	var f callOutcomes
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	for _, tc := range f.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			var requests atomic.Int32
			addr := closedPort(t)
			if !tc.Refused {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { ln.Close() })
				var answer []byte
				if a := tc.Answer; a != nil {
					var b strings.Builder
					fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\nConnection: close\r\nContent-Length: %d\r\n", a.Status, http.StatusText(a.Status), len(a.Body))
					keys := make([]string, 0, len(a.Headers))
					for k := range a.Headers {
						keys = append(keys, k)
					}
					sort.Strings(keys)
					for _, k := range keys {
						fmt.Fprintf(&b, "%s: %s\r\n", k, a.Headers[k])
					}
					b.WriteString("\r\n" + a.Body)
					answer = []byte(b.String())
				}
				go serveCallAnswers(ln, answer, &requests)
				addr = ln.Addr().String()
			}
			c := clientAt(t, "http://"+addr)
			_, err := c.CallTool(context.Background(), Call{Server: "pay", Tool: "issue_refund", RequestID: "req-outcome"})
			if got := outcomeOf(err); got != tc.Outcome {
				t.Fatalf("outcome %s, want %s: %v", got, tc.Outcome, err)
			}
			if n := requests.Load(); n != tc.Attempts {
				t.Fatalf("%d requests reached the listener, want %d", n, tc.Attempts)
			}
		})
	}
}
