package policy

import (
	"github.com/chiokernel/chio/internal/keys"
)

// Policy is a validated chio.toml. Construct it only with Load or Parse: a
// Policy value that exists has passed every check in validate.go.
type Policy struct {
	Kernel   Kernel   `toml:"kernel"`
	Receipts Receipts `toml:"receipts"`
	Servers  []Server `toml:"servers"`
	Grants   []Grant  `toml:"grants"`
	Channels Channels `toml:"channels"`

	// Hash is the hex SHA-256 of the canonical JSON of the validated policy;
	// every receipt carries it as policy_hash.
	Hash string `toml:"-"`
	// Source is the file the policy was read from ("" for in-memory).
	Source string `toml:"-"`

	index *Index
}

// Kernel is the [kernel] table.
type Kernel struct {
	Listen      string `toml:"listen"`        // default "127.0.0.1:7420"
	DataDir     string `toml:"data_dir"`      // default "./chio-data"
	PublicURL   string `toml:"public_url"`    // default "http://" + Listen
	TLSCertFile string `toml:"tls_cert_file"` // both or neither
	TLSKeyFile  string `toml:"tls_key_file"`
	// AuthorityKey, when set, is an extra key whose capabilities the kernel
	// accepts besides its own (`ed25519:…`).
	AuthorityKey string `toml:"authority_key"`
}

// Receipts is the [receipts] table: how often the Merkle log is checkpointed.
type Receipts struct {
	CheckpointEvery           int `toml:"checkpoint_every"`            // receipts; default 1000
	CheckpointIntervalSeconds int `toml:"checkpoint_interval_seconds"` // default 10
}

// Server is one [[servers]] entry.
type Server struct {
	ID             string `toml:"id"`
	Transport      string `toml:"transport"`       // "http" | "builtin"
	URL            string `toml:"url"`             // http only
	TimeoutSeconds int    `toml:"timeout_seconds"` // default 10
	Tools          []Tool `toml:"tools"`
}

// Tool is one [[servers.tools]] entry.
type Tool struct {
	Name     string `toml:"name"`
	Action   string `toml:"action"`   // short verb for summaries; default "invoke"
	Category string `toml:"category"` // financial, communication, infrastructure, data_mutation, sensitive_data_access, or custom
}

// Grant is one [[grants]] entry. Tool is a path.Match glob ("*", "read_*").
type Grant struct {
	ID          string      `toml:"id"`
	Server      string      `toml:"server"`
	Tool        string      `toml:"tool"`
	Operations  []string    `toml:"operations"` // default ["invoke"]
	Constraints Constraints `toml:"constraints"`
	Approval    *Approval   `toml:"approval"`
}

// Constraints is [grants.constraints]. Zero values mean "no constraint".
type Constraints struct {
	RequireApprovalAbove      *Threshold `toml:"require_approval_above"`
	RequireApprovalAlways     bool       `toml:"require_approval_always"`
	RequireApprovalFirstN     int        `toml:"require_approval_first_n"`
	RequireApprovalForActions []string   `toml:"require_approval_for_actions"`
	GovernedIntentRequired    bool       `toml:"governed_intent_required"`
	// ForbiddenPaths are doublestar globs ("/etc/**") matched against every
	// path-like string argument.
	ForbiddenPaths    []string `toml:"forbidden_paths"`
	MaxCallsPerMinute int      `toml:"max_calls_per_minute"`
	// OnTrigger routes a non-approval guard to approval instead of denial:
	// guard name → "deny" (default) | "require_approval".
	OnTrigger map[string]string `toml:"on_trigger"`
}

// Threshold is require_approval_above = { threshold_units = N }.
type Threshold struct {
	ThresholdUnits int64 `toml:"threshold_units"`
}

// Approval is [grants.approval].
type Approval struct {
	TimeoutSeconds  int        `toml:"timeout_seconds"` // default 3600
	TimeoutAction   string     `toml:"timeout_action"`  // deny (default) | escalate | auto_approve_advisory
	Quorum          int        `toml:"quorum"`          // default 1
	DenyQuorum      int        `toml:"deny_quorum"`     // default 1: one deny ends it
	ExposeArguments bool       `toml:"expose_arguments"`
	SlackCustodial  bool       `toml:"slack_custodial"`
	Channels        []string   `toml:"channels"` // default ["dashboard"]
	Approvers       []Approver `toml:"approvers"`
	// Requesters are keys that may never approve calls under this grant
	// (separation of duties), beyond the calling agent's own key.
	Requesters []string    `toml:"requesters"`
	Escalation *Escalation `toml:"escalation"`
}

// Approver is one [[grants.approval.approvers]] entry.
type Approver struct {
	PublicKey   keys.PublicKey `toml:"public_key"`
	DisplayName string         `toml:"display_name"`
	Contact     Contact        `toml:"contact"`
}

// Contact says where a channel reaches an approver.
type Contact struct {
	Slack string `toml:"slack"`
	Email string `toml:"email"`
}

// Escalation is [grants.approval.escalation].
type Escalation struct {
	TerminalAction string `toml:"terminal_action"` // deny (default) | auto_approve_advisory
	Tiers          []Tier `toml:"tiers"`
}

// Tier is one escalation tier; Approvers names approvers by display_name.
type Tier struct {
	Approvers      []string `toml:"approvers"`
	Channels       []string `toml:"channels"`
	TimeoutSeconds int      `toml:"timeout_seconds"`
}

// Channels is the [channels] table. Secrets are named by environment
// variable, never stored in the file.
type Channels struct {
	Webhook   *Webhook   `toml:"webhook"`
	Slack     *Slack     `toml:"slack"`
	Email     *Email     `toml:"email"`
	Dashboard *Dashboard `toml:"dashboard"`
}

// Webhook is [channels.webhook].
type Webhook struct {
	URL       string `toml:"url"`
	SecretEnv string `toml:"secret_env"`
	Retries   int    `toml:"retries"` // default 5
}

// Slack is [channels.slack].
type Slack struct {
	BotTokenEnv      string `toml:"bot_token_env"`
	SigningSecretEnv string `toml:"signing_secret_env"`
	Channel          string `toml:"channel"`
	APIURL           string `toml:"api_url"` // tests point this at slacktest
}

// Email is [channels.email].
type Email struct {
	SMTPAddr    string `toml:"smtp_addr"`
	From        string `toml:"from"`
	UsernameEnv string `toml:"username_env"`
	PasswordEnv string `toml:"password_env"`
	StartTLS    bool   `toml:"starttls"`
}

// Dashboard is [channels.dashboard].
type Dashboard struct {
	Enabled bool `toml:"enabled"`
}

// Well-known action categories (SPEC §4). Custom labels are also allowed.
var Categories = []string{"financial", "communication", "infrastructure", "data_mutation", "sensitive_data_access"}
