package testkit

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
)

// CallOutcomeCase is one case of testdata/sdk/call_outcomes.json, which
// the Go, Python and TypeScript SDKs and `chio call` are held to: what a
// call reports when every attempt meets the same answer or transport
// failure.
type CallOutcomeCase struct {
	Name              string        `json:"name"`
	Refused           bool          `json:"refused"`
	CloseAfterRequest bool          `json:"close_after_request"`
	Answer            *CannedAnswer `json:"answer"`
	Outcome           string        `json:"outcome"`
	// Output is the tool output a "succeeded" case's call carries, exactly.
	Output   string `json:"output"`
	Attempts int32  `json:"attempts"`
}

// CannedAnswer is an HTTP answer given verbatim.
type CannedAnswer struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
	// BodyHex, when set, is the body instead, as hex: bytes a JSON string
	// cannot hold (not UTF-8).
	BodyHex string `json:"body_hex"`
}

// LoadCallOutcomes reads the cases of the call_outcomes.json at path.
func LoadCallOutcomes(t testing.TB, path string) []CallOutcomeCase {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Cases []CallOutcomeCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Cases) == 0 {
		t.Fatal("no cases in " + path)
	}
	return f.Cases
}

// Raw is a as bytes on the wire (nil for nil: close without an answer).
func (a *CannedAnswer) Raw() []byte {
	if a == nil {
		return nil
	}
	body := a.Body
	if a.BodyHex != "" {
		raw, err := hex.DecodeString(a.BodyHex)
		if err != nil {
			panic("call_outcomes.json: body_hex: " + err.Error())
		}
		body = string(raw)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\nConnection: close\r\nContent-Length: %d\r\n", a.Status, http.StatusText(a.Status), len(body))
	keys := make([]string, 0, len(a.Headers))
	for k := range a.Headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\r\n", k, a.Headers[k])
	}
	b.WriteString("\r\n" + body)
	return []byte(b.String())
}

// ServeCanned answers every request on a loopback listener, after reading
// all of it, with answer (nil: closes the connection without answering),
// until the test ends. It returns the listener's address and the count of
// requests read.
func ServeCanned(t testing.TB, answer []byte) (addr string, requests *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	requests = new(atomic.Int32)
	go func() {
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
	}()
	return ln.Addr().String(), requests
}
