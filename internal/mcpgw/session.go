package mcpgw

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
	"github.com/chiokernel/chio/kernel"
)

// SessionSchema is the session token's schema and signature domain.
const SessionSchema = "chio.mcp-session.v1"

// SessionToken is the bearer an agent presents on /mcp: its capability,
// the kernel it is meant for, and a short lifetime, signed by the key the
// capability names. The bearer is base64url (no padding) of the signed JSON.
type SessionToken struct {
	Schema     string          `json:"schema"`
	Capability json.RawMessage `json:"capability"`
	Audience   string          `json:"audience"` // the kernel's public key
	IssuedAt   int64           `json:"issued_at"`
	ExpiresAt  int64           `json:"expires_at"`
	Signature  string          `json:"signature,omitempty"`
}

// SignSession makes the bearer for agent (which must be the capability's
// subject) to use with the kernel whose key is audience, valid for ttl.
func SignSession(agent keys.PrivateKey, capability []byte, audience string, now time.Time, ttl time.Duration) (string, error) {
	if ttl <= 0 || ttl > MaxSessionTTL {
		return "", fmt.Errorf("mcp session ttl must be in (0, %s]", MaxSessionTTL)
	}
	if err := canon.Check(capability); err != nil {
		return "", fmt.Errorf("capability: %w", err)
	}
	raw, err := signed.Sign(agent, SessionSchema, SessionToken{Schema: SessionSchema, Capability: capability,
		Audience: audience, IssuedAt: now.Unix(), ExpiresAt: now.Add(ttl).Unix()})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(raw), nil
}

// ErrSession is every reason a session bearer is refused.
var ErrSession = errors.New("invalid chio mcp session token")

// agent is who a verified session token speaks for.
type agent struct {
	capRaw  json.RawMessage
	cap     *kernel.Capability
	subject keys.PublicKey
	expires time.Time // the token's, not the capability's
}

// id keys the agent's MCP server and binds SDK sessions to it.
func (a *agent) id() string { return a.subject.String() + "|" + a.cap.ID }

// verifySession checks a bearer at reference time now: size, strict JSON,
// schema, audience, lifetime, the capability's signature by a trusted key,
// and the token's signature by the capability's subject, over the bytes
// received. Revocation is checked by the caller (it needs the store).
func verifySession(bearer string, audience keys.PublicKey, trusted []keys.PublicKey, now time.Time) (*agent, error) {
	if len(bearer) > MaxSessionTokenBytes {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrSession, MaxSessionTokenBytes)
	}
	raw, err := base64.RawURLEncoding.DecodeString(bearer)
	if err != nil {
		return nil, fmt.Errorf("%w: not base64url", ErrSession)
	}
	var t SessionToken
	if err := canon.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSession, err)
	}
	switch {
	case t.Schema != SessionSchema:
		return nil, fmt.Errorf("%w: schema must be %s", ErrSession, SessionSchema)
	case t.Audience != audience.String():
		return nil, fmt.Errorf("%w: it is for another kernel (audience %q)", ErrSession, t.Audience)
	case time.Unix(t.IssuedAt, 0).After(now.Add(MaxSkew)):
		return nil, fmt.Errorf("%w: issued in the future", ErrSession)
	case t.ExpiresAt <= t.IssuedAt:
		// No lifetime at all: malformed, whatever the clock says.
		return nil, fmt.Errorf("%w: expires_at is not after issued_at", ErrSession)
	case !now.Before(time.Unix(t.ExpiresAt, 0)):
		return nil, fmt.Errorf("%w: expired", ErrSession)
	case t.ExpiresAt-t.IssuedAt > int64(MaxSessionTTL/time.Second):
		return nil, fmt.Errorf("%w: lifetime over %s", ErrSession, MaxSessionTTL)
	}
	c, subject, err := kernel.ParseCapability(t.Capability, trusted...)
	if err != nil {
		return nil, fmt.Errorf("%w: capability: %v", ErrSession, err)
	}
	if err := c.CheckTime(now); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSession, err)
	}
	if err := signed.Verify(raw, SessionSchema, subject); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSession, err)
	}
	return &agent{capRaw: t.Capability, cap: c, subject: subject, expires: time.Unix(t.ExpiresAt, 0)}, nil
}
