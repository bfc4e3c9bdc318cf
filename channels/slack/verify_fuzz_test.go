package slack_test

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/chiokernel/chio/channels/slack"
	"github.com/chiokernel/chio/policy"
)

// FuzzVerify: Verify, the only check between an HTTP POST and a click
// that may sign a vote, accepts a request exactly when its signature is
// Slack's v0 HMAC of its own timestamp and body under the signing secret
// and the timestamp (1..12 digits, positive) is within SignatureWindow of
// now; and an accepted request is refused as a replay when sent again.
// The fuzzer chooses the timestamp header, the body and whether the
// signature is the right one, an edit of it, or its own.
func FuzzVerify(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	f.Add("1800000000", []byte("payload=%7B%7D"), uint8(0), "")
	f.Add("1799999700", []byte("payload=x"), uint8(0), "")
	f.Add("1799999699", []byte("payload=x"), uint8(0), "")
	f.Add("+1800000000", []byte(""), uint8(0), "")
	f.Add("01800000000", []byte("a"), uint8(1), "")
	f.Add("1800000000", []byte("a"), uint8(2), "v0=00")
	f.Add("-1", []byte("a"), uint8(0), "")
	f.Add("9999999999999", []byte("a"), uint8(0), "")
	f.Fuzz(func(t *testing.T, ts string, body []byte, how uint8, own string) {
		env := map[string]string{"BOT": "xoxb-test-token", "SECRET": "8f742231b10e8888abcd99yyyzzz85a5"}
		c, err := slack.New(policy.Slack{BotTokenEnv: "BOT", SigningSecretEnv: "SECRET", Channel: "#approvals"},
			slack.Options{Getenv: func(k string) string { return env[k] }})
		if err != nil {
			t.Fatal(err)
		}
		right := slack.Sign([]byte(env["SECRET"]), ts, body)
		sig := right
		switch how % 3 {
		case 1:
			sig = right[:len(right)-1] + "0"
			if sig == right {
				sig = right[:len(right)-1] + "1"
			}
		case 2:
			sig = own
		}
		h := http.Header{}
		h.Set(slack.HeaderTimestamp, ts)
		h.Set(slack.HeaderSignature, sig)
		// http.Header.Set keeps values as given; Get returns them as set.
		n, perr := strconv.ParseInt(ts, 10, 64)
		fresh := perr == nil && n > 0 && len(ts) <= 12 && ts != "" &&
			now.Sub(time.Unix(n, 0)) <= slack.SignatureWindow && time.Unix(n, 0).Sub(now) <= slack.SignatureWindow
		want := fresh && sig == right
		err = c.Verify(h, body, now)
		if (err == nil) != want {
			t.Fatalf("Verify(ts %q, sig %q): %v, want accepted=%v", ts, sig, err, want)
		}
		if err != nil {
			return
		}
		if err := c.Verify(h, body, now); !errors.Is(err, slack.ErrReplay) {
			t.Fatalf("an accepted request sent again: %v, want %v", err, slack.ErrReplay)
		}
	})
}
