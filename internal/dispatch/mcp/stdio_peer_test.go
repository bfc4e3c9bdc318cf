package mcp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

// stdioPeerEnv selects the behaviour of the stdio peer below. LC_ is one
// of the prefixes childEnv passes to a stdio server.
const stdioPeerEnv = "LC_CHIO_TEST_PEER"

// TestStdioPeerProcess is not a test: run by the test binary itself as a
// stdio MCP server (see stdioPeer), it speaks line-delimited JSON-RPC by
// hand so that it can misbehave exactly as a stuck or hostile upstream may.
func TestStdioPeerProcess(t *testing.T) {
	mode := os.Getenv(stdioPeerEnv)
	if mode == "" {
		t.Skip("helper process only")
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	var outMu sync.Mutex
	send := func(s string) { outMu.Lock(); out.WriteString(s + "\n"); out.Flush(); outMu.Unlock() }
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			os.Exit(0)
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
				Name            string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &m) != nil || m.ID == nil {
			continue
		}
		switch m.Method {
		case "initialize":
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{"tools":{},"logging":{}},"serverInfo":{"name":"peer","version":"1"}}}`, m.ID, m.Params.ProtocolVersion))
		case "tools/list":
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"stall","inputSchema":{"type":"object"}},{"name":"pay","inputSchema":{"type":"object"}},{"name":"big","inputSchema":{"type":"object"}}]}}`, m.ID))
		case "ping":
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, m.ID))
		case "tools/call":
			if mode == "stall" && m.Params.Name == "stall" {
				// A stuck server (a deadlock, a synchronous handler that
				// never returns): it stops reading its stdin for good.
				select {}
			}
			if mode == "big" && m.Params.Name == "big" {
				send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}]}}`, m.ID, strings.Repeat("y", MaxMessageBytes+10)))
				continue
			}
			big := strings.Repeat("l", MaxMessageBytes+10)
			switch mode {
			case "junk": // a stray line on stdout (a library's console.log), then the answer
				send("Paying 5 EUR...")
			case "notify-big": // a log line over the limit, then the answer
				send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"pay","data":%q}}`, big))
			case "other-id-big": // an oversized answer to a request chio never made
				send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"not-%s","result":{"data":%q}}`, m.ID, big))
			case "result-first-big": // its own oversized answer, id after the result
				send(fmt.Sprintf(`{"result":{"content":[{"type":"text","text":%q}]},"jsonrpc":"2.0","id":%s}`, big, m.ID))
				continue
			}
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"paid"}]}}`, m.ID))
		default:
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}`, m.ID))
		}
	}
}

// stdioPeer is the command of a stdio server that runs TestStdioPeerProcess
// in mode. "stall": the tool stall stops reading stdin; "big": the tool
// big answers with a line over MaxMessageBytes. Every other tool answers
// "paid", after, by mode: "notify-big", a notifications/message over
// MaxMessageBytes (a log line a server may send at any time);
// "other-id-big", an oversized response to a request chio never made;
// or, instead, "result-first-big": its own answer over MaxMessageBytes
// with "result" before "id" (the id is not in the head chio keeps);
// "junk", a line that is not JSON before it.
func stdioPeer(t *testing.T, mode string) []string {
	t.Helper()
	t.Setenv(stdioPeerEnv, mode)
	return []string{os.Args[0], "-test.run=^TestStdioPeerProcess$"}
}
