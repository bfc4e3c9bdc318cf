package toolserver_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/sdk/toolserver"
)

// A MaxAge of zero or less is no freshness bound: it read as the 5-minute
// default, silently, where the Python and TypeScript verifiers refuse a
// max_age / maxAgeMs that is not positive. NewVerifier sets DefaultMaxAge;
// one set to zero or less refuses every call, saying why.
func TestVerifierRefusesMaxAgeNotPositive(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "vectors", "tool_call.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vectors struct {
		Cases []struct {
			PublicKey string `json:"public_key"`
			Server    string `json:"server"`
			SentAtMs  int64  `json:"sent_at_ms"`
			Body      string `json:"body"`
			Signature string `json:"signature"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &vectors); err != nil || len(vectors.Cases) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	c := vectors.Cases[0]
	var call struct {
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal([]byte(c.Body), &call); err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set("X-Chio-Server", c.Server)
	h.Set("X-Chio-Sent-At", strconv.FormatInt(c.SentAtMs, 10))
	h.Set("X-Chio-Signature", c.Signature)
	h.Set(toolserver.IdempotencyKeyHeader, call.RequestID)
	verifier := func() *toolserver.Verifier {
		v, err := toolserver.NewVerifier(c.PublicKey, c.Server)
		if err != nil {
			t.Fatal(err)
		}
		v.Now = func() time.Time { return time.UnixMilli(c.SentAtMs) }
		return v
	}
	v := verifier()
	if v.MaxAge != toolserver.DefaultMaxAge {
		t.Errorf("NewVerifier's MaxAge %s, want DefaultMaxAge", v.MaxAge)
	}
	if err := v.Verify(h, []byte(c.Body)); err != nil {
		t.Fatalf("the vector's call, sent now: %v", err)
	}
	for _, maxAge := range []time.Duration{0, -time.Nanosecond, -time.Hour} {
		v := verifier()
		v.MaxAge = maxAge
		if err := v.Verify(h, []byte(c.Body)); err == nil || !strings.Contains(err.Error(), "MaxAge") {
			t.Errorf("MaxAge %s: %v, want refused as a MaxAge that is not positive", maxAge, err)
		}
	}
}
