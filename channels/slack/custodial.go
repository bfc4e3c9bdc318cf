package slack

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/secretfile"
	"github.com/chiokernel/chio/policy"
)

// Custodial keys
//
// A grant with slack_custodial = true lets a Slack click decide: chiod signs
// the approval token with a key it holds for that approver. Such a key is
// an ordinary PKCS#8 PEM Ed25519 key file (what `chio keygen` writes), kept
// at
//
//	<data_dir>/custodial/<first 16 bytes of SHA-256(raw 32-byte public key), hex>.pem
//
// mode 0600 (a file readable by group or others is refused). At start chiod
// loads the file of every approver of every slack_custodial grant whose
// file exists; a file whose key is not that approver's public key in the
// policy is refused (chiod does not start). Keys of approvers of other
// grants are never loaded, and at click time the grant in force must still
// say slack_custodial = true. The approver's public_key in the policy IS
// the custodial key's public half: receipts show that key, plus
// `custodial: true`.
//
// To create one: GenerateCustodialKey (prints nothing; returns the public
// key to put in the policy), or by hand:
//
//	chio keygen --out alice.pem                      # prints ed25519:<hex>
//	f=$(printf %s <hex> | xxd -r -p | sha256sum | cut -c1-32)
//	install -m 0600 alice.pem <data_dir>/custodial/$f.pem
//
// or with OpenSSL:
//
//	openssl genpkey -algorithm ed25519 -out alice.pem
//	f=$(openssl pkey -in alice.pem -pubout -outform DER | tail -c 32 | sha256sum | cut -c1-32)
//	install -m 0600 alice.pem <data_dir>/custodial/$f.pem
//
// CustodialKeyPath computes the name.

// CustodialDir is where custodial keys live under a data dir.
func CustodialDir(dataDir string) string { return filepath.Join(dataDir, "custodial") }

// CustodialKeyPath is the file chiod reads the custodial key of pub from.
func CustodialKeyPath(dataDir string, pub keys.PublicKey) string {
	sum := sha256.Sum256(pub.Ed25519())
	return filepath.Join(CustodialDir(dataDir), hex.EncodeToString(sum[:16])+".pem")
}

// InstallCustodialKey writes key (0600, never overwriting) where chiod
// looks for it and returns the path. Put key.Public() in the policy as the
// approver's public_key, with their contact.slack.
func InstallCustodialKey(dataDir string, key keys.PrivateKey) (string, error) {
	if err := os.MkdirAll(CustodialDir(dataDir), 0o700); err != nil {
		return "", fmt.Errorf("slack: custodial dir: %w", err)
	}
	path := CustodialKeyPath(dataDir, key.Public())
	if err := keys.WritePrivateKey(path, key); err != nil {
		return "", err
	}
	return path, nil
}

// GenerateCustodialKey creates and installs a new custodial key and
// returns its public key (for the policy) and path.
func GenerateCustodialKey(dataDir string) (keys.PublicKey, string, error) {
	k, err := keys.Generate(rand.Reader)
	if err != nil {
		return keys.PublicKey{}, "", err
	}
	path, err := InstallCustodialKey(dataDir, k)
	return k.Public(), path, err
}

// ErrCustodialKey marks a custodial key file chiod refuses to use.
var ErrCustodialKey = errors.New("slack: custodial key refused")

// LoadCustodialKeys loads the custodial keys of every approver of every
// slack_custodial grant of p that has a key file, keyed by public key text.
// A missing file is not an error (that approver signs in the dashboard); a
// file that is unreadable, not private to its owner, or whose key is not
// the approver's is.
func LoadCustodialKeys(dataDir string, p *policy.Policy) (map[string]keys.PrivateKey, error) {
	out := map[string]keys.PrivateKey{}
	for _, ap := range custodialApprovers(p) {
		pub := ap.PublicKey.String()
		if _, done := out[pub]; done {
			continue
		}
		path := CustodialKeyPath(dataDir, ap.PublicKey)
		data, err := secretfile.Read(path) // owner-only, else refused
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCustodialKey, err)
		}
		k, err := keys.ParsePKCS8PEM(data)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCustodialKey, err)
		}
		if !k.Public().Equal(ap.PublicKey) {
			return nil, fmt.Errorf("%w: %s holds %s, not the key of approver %q (%s)", ErrCustodialKey, path,
				k.Public(), ap.DisplayName, pub)
		}
		out[pub] = k
	}
	return out, nil
}

// custodialApprovers lists the approvers of slack_custodial grants.
func custodialApprovers(p *policy.Policy) []policy.Approver {
	var out []policy.Approver
	if p == nil {
		return nil
	}
	for _, g := range p.Grants {
		if g.Approval != nil && g.Approval.SlackCustodial {
			out = append(out, g.Approval.Approvers...)
		}
	}
	return out
}

func custodialMissing(p *policy.Policy, have map[string]keys.PrivateKey) []policy.Approver {
	var out []policy.Approver
	seen := map[string]bool{}
	for _, ap := range custodialApprovers(p) {
		k := ap.PublicKey.String()
		if _, ok := have[k]; !ok && !seen[k] {
			seen[k] = true
			out = append(out, ap)
		}
	}
	return out
}

// SlackUser is who clicked, as the interaction payload says.
type SlackUser struct {
	ID       string `json:"id"`
	Username string `json:"username"`
	Name     string `json:"name"`
	TeamID   string `json:"team_id"`
}

var slackUserID = regexp.MustCompile(`^[UW][A-Z0-9]{2,}$`)

// MatchSlackUser reports whether contact (an approver's contact.slack)
// names u. Matching:
//
//   - a Slack user id ("U024BE7LH", or "W…" on Enterprise Grid) matches
//     the payload's user.id exactly. This is the recommended form: ids
//     never change and are not chosen by the user.
//   - anything else is a handle, with or without a leading "@" ("@alice"),
//     compared case-insensitively with the payload's user.username and
//     user.name. Handles are unique in a workspace but users can rename
//     themselves, so prefer ids for slack_custodial grants.
//
// An empty contact matches nobody.
func MatchSlackUser(contact string, u SlackUser) bool {
	contact = strings.TrimSpace(contact)
	if contact == "" || u.ID == "" {
		return false
	}
	if slackUserID.MatchString(contact) {
		return contact == u.ID
	}
	h := strings.TrimPrefix(contact, "@")
	return h != "" && (strings.EqualFold(h, u.Username) || strings.EqualFold(h, u.Name))
}
