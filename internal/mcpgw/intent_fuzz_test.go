package mcpgw

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// sdkDecode decodes as the SDK's internal/json does (segmentio, member
// names matched exactly).
func sdkDecode(data []byte, v any) error {
	dec := segjson.NewDecoder(bytes.NewReader(data))
	dec.DontMatchCaseInsensitiveStructFields()
	return dec.Decode(v)
}

// FuzzRawIntentMatchesSDK: the governed intent the kernel is given
// (captured by withRawIntent from the POST body, read back by rawIntent)
// is the intent the SDK decoded from the same JSON-RPC message, or the
// call is refused. The two read the body with different decoders; an
// input on which they disagree (duplicate or escaped names, a second
// "params", invalid UTF-8, odd numbers) must never give the kernel one
// intent while the SDK's request carries another.
func FuzzRawIntentMatchesSDK(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pay","arguments":{"amount":5},"_meta":{"chio/governed_intent":{"purpose":"refund","max_amount":{"units":500,"currency":"USD"}}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pay","arguments":{},"_meta":{"chio/governed_intent":null}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pay","arguments":{},"_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pay","_meta":{"chio/governed_intent":{"purpose":"a"},"chio/governed_intent":{"purpose":"b"}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pay","_meta":{"chio/governed_intent":{"purpose":"a"}}},"params":{"name":"pay","_meta":{"chio/governed_intent":{"purpose":"b"}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pay","_meta":{"chio\/governed_intent":{"purpose":"a"}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","Params":{"name":"pay","_meta":{"chio/governed_intent":{"purpose":"a"}}},"params":{"name":"pay","_meta":{"chio/governed_intent":{"purpose":"b"}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pay","_meta":{"chio/governed_intent":{"purpose":"a"}},"_Meta":{"chio/governed_intent":{"purpose":"b"}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pay","_meta":{"chio/governed_intent":{"max_amount":{"units":9007199254740993,"currency":"USD"}}}}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"pay\",\"_meta\":{\"chio/governed_intent\":{\"purpose\":\"\xff\"}}}}",
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pay","_meta":{"chio/governed_intent":{"purpose":"a"}}}}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		msg, err := jsonrpc.DecodeMessage(body)
		if err != nil {
			return
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok || req.Method != "tools/call" || req.Params == nil {
			return
		}
		var params mcpsdk.CallToolParamsRaw
		if sdkDecode(req.Params, &params) != nil {
			return
		}
		r := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
		if err := withRawIntent(httptest.NewRecorder(), r, time.Second); err != nil {
			return // refused before the SDK sees it
		}
		raw, err := rawIntent(params.Meta, r.Header)
		if err != nil {
			return // refused: the capture could not say what the SDK read
		}
		sdkIntent := params.Meta[MetaIntent]
		if raw == nil {
			if sdkIntent != nil {
				t.Fatalf("the SDK decoded an intent %v, the kernel is given none", sdkIntent)
			}
			return
		}
		var kernelIntent any
		if err := sdkDecode(raw, &kernelIntent); err != nil {
			t.Fatalf("captured intent %q does not decode: %v", raw, err)
		}
		if !reflect.DeepEqual(kernelIntent, sdkIntent) {
			t.Fatalf("the kernel is given intent %s, the SDK decoded %#v", raw, sdkIntent)
		}
	})
}
