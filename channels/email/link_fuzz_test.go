package email

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/chiokernel/chio/policy"
)

// FuzzParseLink: an emailed link is the only credential of POST
// /email/a/{link}. parseLink accepts a link only with this channel's MAC,
// and then the link is exactly the one Link minted: its payload is the
// encoding of the claims it returns, so one vote has one link (its id,
// the MAC) and no second spelling. A minted link parses back to what it
// was minted for, expired exactly when its expiry is not after now. The
// fuzzer edits minted links, and mints links for its own ids and times.
func FuzzParseLink(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	c, err := New(&policy.Email{SMTPAddr: "127.0.0.1:1", From: "chio@example.com"}, Options{
		PublicURL: "http://127.0.0.1:7420/", Policy: func() *policy.Policy { return nil },
		Secret: bytes.Repeat([]byte{7}, 32), Now: func() time.Time { return now }})
	if err != nil {
		f.Fatal(err)
	}
	minted := c.Link("ar-1", "ed25519:"+strings.Repeat("ab", 32), now.Add(time.Hour))
	payload, mac, _ := strings.Cut(minted, ".")
	f.Add(minted, "ar-1", "ed25519:ab", int64(3600))
	f.Add(payload+"="+"."+mac, "ar-2", "k", int64(0))
	f.Add(payload+"."+mac+"=", "ar-3", "k", int64(-1))
	f.Add(strings.ToUpper(minted), "", "k", int64(1))
	f.Add(payload, "ar-4", "", int64(1))
	f.Fuzz(func(t *testing.T, link, approvalID, approver string, expiresIn int64) {
		cl, id, err := c.parseLink(link)
		if err == nil || errors.Is(err, errExpiredLink) {
			p, m, _ := strings.Cut(link, ".")
			b, _ := json.Marshal(cl)
			if base64.RawURLEncoding.EncodeToString(b) != p || m != id {
				t.Fatalf("accepted link %q is not the encoding of its claims %+v", link, cl)
			}
		}
		if approvalID == "" || approver == "" || len(approvalID) > 128 || len(approver) > 128 ||
			!utf8.ValidString(approvalID) || !utf8.ValidString(approver) {
			return
		}
		exp := now.Add(time.Duration(expiresIn%(1<<30)) * time.Second)
		l := c.Link(approvalID, approver, exp)
		cl, _, err = c.parseLink(l)
		switch {
		case !now.Before(exp):
			if !errors.Is(err, errExpiredLink) {
				t.Fatalf("link expiring at %s, now %s: %v", exp, now, err)
			}
		case err != nil:
			t.Fatalf("minted link for %q/%q refused: %v", approvalID, approver, err)
		case cl.ApprovalID != approvalID || cl.Approver != approver || cl.Expires != exp.Unix():
			t.Fatalf("minted for %q %q %d, parsed %+v", approvalID, approver, exp.Unix(), cl)
		}
	})
}
