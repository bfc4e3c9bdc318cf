package email

// Links: what a link says, its MAC, and spending it once.

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// linkClaims is what a link says; the MAC covers its encoding.
type linkClaims struct {
	ApprovalID string `json:"a"`
	Approver   string `json:"k"`
	Expires    int64  `json:"e"`
	Nonce      string `json:"n"`
	// To is addressTag of the contact.email the link was mailed to: the
	// link shows its request only while the policy in force still mails
	// its approver there (handler.go, mayStillDecide). "" in links minted
	// by Link, and by a chiod from before links named their address; such
	// a link is judged by its approver's key alone.
	To string `json:"m,omitempty"`
}

// addressTag names a contact.email in a link without writing the address
// into a URL: the first 16 bytes of SHA-256 over it, as the policy has it.
func addressTag(addr string) string {
	sum := sha256.Sum256([]byte(addr))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

func (c *Channel) mac(payload string) []byte {
	m := hmac.New(sha256.New, c.secret)
	m.Write([]byte(linkDomain))
	m.Write([]byte{0})
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// Link mints the link token for (approval id, approver key, expiry).
func (c *Channel) Link(approvalID, approverKey string, expires time.Time) string {
	return c.linkTo(approvalID, approverKey, "", expires)
}

// linkTo is Link for a link mailed to addr (the approver's contact.email
// as the policy has it; "" names none).
func (c *Channel) linkTo(approvalID, approverKey, addr string, expires time.Time) string {
	var n [9]byte
	_, _ = rand.Read(n[:])
	cl := linkClaims{ApprovalID: approvalID, Approver: approverKey, Expires: expires.Unix(),
		Nonce: base64.RawURLEncoding.EncodeToString(n[:])}
	if addr != "" {
		cl.To = addressTag(addr)
	}
	b, _ := json.Marshal(cl)
	payload := base64.RawURLEncoding.EncodeToString(b)
	return payload + "." + base64.RawURLEncoding.EncodeToString(c.mac(payload))
}

// LinkURL is the full URL of a link.
func (c *Channel) LinkURL(link string) string { return c.o.PublicURL + LinkPath + link }

var (
	errBadLink     = errors.New("this link is not valid")
	errExpiredLink = errors.New("this link has expired")
	errUsedLink    = errors.New("this link was already used")
	errBusyLink    = errors.New("this link is being used right now")
	errVotedLink   = errors.New("this link's approver has already voted on this request")
)

// parseLink checks the MAC and expiry; id is the MAC, the link's identity.
func (c *Channel) parseLink(link string) (linkClaims, string, error) {
	var cl linkClaims
	if len(link) > 1024 {
		return cl, "", errBadLink
	}
	payload, sig, ok := strings.Cut(link, ".")
	if !ok {
		return cl, "", errBadLink
	}
	got, err := base64.RawURLEncoding.Strict().DecodeString(sig)
	if err != nil || !hmac.Equal(got, c.mac(payload)) {
		return cl, "", errBadLink
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(payload)
	if err != nil || json.Unmarshal(raw, &cl) != nil || cl.ApprovalID == "" || cl.Approver == "" {
		return cl, "", errBadLink
	}
	if !c.o.Now().Before(time.Unix(cl.Expires, 0)) {
		return cl, sig, errExpiredLink
	}
	c.mu.Lock()
	st, seen := c.links[sig]
	c.mu.Unlock()
	switch {
	case seen && st.used:
		return cl, sig, errUsedLink
	case seen:
		return cl, sig, errBusyLink
	}
	return cl, sig, nil
}

// reserve marks a link in use for one POST; release undoes it on failure,
// spend makes it permanent.
func (c *Channel) reserve(id string, expires time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.links[id]; ok {
		if st.used {
			return errUsedLink
		}
		return errBusyLink
	}
	now := c.o.Now()
	for k, st := range c.links { // forget links that expired anyway
		if now.After(st.expires) {
			delete(c.links, k)
		}
	}
	c.links[id] = linkState{expires: expires}
	return nil
}

func (c *Channel) release(id string) { c.mu.Lock(); delete(c.links, id); c.mu.Unlock() }

func (c *Channel) spend(id string) {
	c.mu.Lock()
	st := c.links[id]
	st.used = true
	c.links[id] = st
	c.mu.Unlock()
}
