package toolserver_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/sdk/toolserver"
)

// X-Chio-Sent-At is the decimal chiod signs, and nothing else: ParseInt
// also read "+1800000000123" and "01800000000123" as the signed value, so
// Go ran calls that Python refused (testdata/sdk/tool_call_sent_at.json,
// shared with the Python and TypeScript SDKs' tests).
func TestVerifierRefusesSentAtSpelledOtherwise(t *testing.T) {
	root := filepath.Join("..", "..", "testdata")
	var vectors struct {
		Cases []struct {
			Name      string `json:"name"`
			PublicKey string `json:"public_key"`
			Server    string `json:"server"`
			SentAtMs  int64  `json:"sent_at_ms"`
			Body      string `json:"body"`
			Signature string `json:"signature"`
		} `json:"cases"`
	}
	var spellings struct {
		Cases []struct {
			Vector string `json:"vector"`
			SentAt string `json:"sent_at"`
		} `json:"cases"`
	}
	for path, v := range map[string]any{
		filepath.Join(root, "vectors", "tool_call.json"):     &vectors,
		filepath.Join(root, "sdk", "tool_call_sent_at.json"): &spellings,
	} {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatal(err)
		}
	}
	if len(spellings.Cases) == 0 {
		t.Fatal("no cases")
	}
	for _, sp := range spellings.Cases {
		found := false
		for _, c := range vectors.Cases {
			if c.Name != sp.Vector {
				continue
			}
			found = true
			v, err := toolserver.NewVerifier(c.PublicKey, c.Server)
			if err != nil {
				t.Fatal(err)
			}
			v.Now = func() time.Time { return time.UnixMilli(c.SentAtMs) }
			var call struct {
				RequestID string `json:"request_id"`
			}
			if err := json.Unmarshal([]byte(c.Body), &call); err != nil {
				t.Fatal(err)
			}
			h := http.Header{}
			h.Set("X-Chio-Server", c.Server)
			h.Set("X-Chio-Signature", c.Signature)
			h.Set(toolserver.IdempotencyKeyHeader, call.RequestID)
			h["X-Chio-Sent-At"] = []string{sp.SentAt} // as received, untrimmed
			err = v.Verify(h, []byte(c.Body))
			if !errors.Is(err, toolserver.ErrNotFromChio) || !strings.Contains(err.Error(), "X-Chio-Sent-At must be unix milliseconds") {
				t.Errorf("%s with X-Chio-Sent-At %q: %v, want refused as not unix milliseconds", c.Name, sp.SentAt, err)
			}
		}
		if !found {
			t.Fatalf("no vector %q in tool_call.json", sp.Vector)
		}
	}
}
