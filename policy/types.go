package policy

import (
	"github.com/chiokernel/chio/internal/keys"
)

// Policy is a validated chio.toml. Construct it only with Load or Parse: a
// Policy value that exists has passed every check in validate.go, carries
// every default (see defaults.go), and has its lookup index built. It must
// not be modified afterwards: the index points into it. A Policy built any
// other way finds no servers, tools or grants.
//
// The json tags define the canonical form that Hash covers; lists whose
// absence and emptiness mean the same are omitted when empty so that both
// spellings hash alike.
type Policy struct {
	Kernel   Kernel   `toml:"kernel" json:"kernel"`
	Receipts Receipts `toml:"receipts" json:"receipts"`
	Servers  []Server `toml:"servers" json:"servers,omitempty"`
	Grants   []Grant  `toml:"grants" json:"grants,omitempty"`
	Channels Channels `toml:"channels" json:"channels"`
	// Store is deployment, not policy: the hash does not cover it (store.go).
	Store StoreConfig `toml:"store" json:"-"`

	// Hash is the hex SHA-256 of the canonical JSON of the validated policy;
	// every receipt carries it as policy_hash.
	Hash string `toml:"-" json:"-"`
	// Source is the file the policy was read from ("" for in-memory).
	Source string `toml:"-" json:"-"`

	index *Index
	// conditions holds each grant's compiled deny_when and
	// require_approval_when programs by grant id, built once by validation.
	conditions map[string]*GrantConditions
	// inputSchemas holds each tool's compiled input_schema, built once by
	// validation.
	inputSchemas map[serverTool]*InputSchema
}

// Kernel is the [kernel] table.
type Kernel struct {
	Listen      string `toml:"listen" json:"listen"`               // default "127.0.0.1:7420"
	DataDir     string `toml:"data_dir" json:"data_dir"`           // default "./chio-data"
	PublicURL   string `toml:"public_url" json:"public_url"`       // default "http://" + Listen
	TLSCertFile string `toml:"tls_cert_file" json:"tls_cert_file"` // both or neither
	TLSKeyFile  string `toml:"tls_key_file" json:"tls_key_file"`
	// AuthorityKey, when set, is an extra key whose capabilities the kernel
	// accepts besides its own (`ed25519:…`).
	AuthorityKey string `toml:"authority_key" json:"authority_key"`
	// MaxPendingApprovalsPerAgent caps the approval requests one agent
	// (capability subject) may have waiting at once; a call that would
	// park one more is denied. 0 means DefaultMaxPendingApprovalsPerAgent
	// (see PendingApprovalCap); omitted from the hash when unset.
	MaxPendingApprovalsPerAgent int `toml:"max_pending_approvals_per_agent" json:"max_pending_approvals_per_agent,omitempty"`
}

// PendingApprovalCap is the per-agent cap on waiting approval requests in
// force: the configured value, or DefaultMaxPendingApprovalsPerAgent.
func (k *Kernel) PendingApprovalCap() int {
	if k.MaxPendingApprovalsPerAgent > 0 {
		return k.MaxPendingApprovalsPerAgent
	}
	return DefaultMaxPendingApprovalsPerAgent
}

// Receipts is the [receipts] table: how often the Merkle log is checkpointed.
type Receipts struct {
	CheckpointEvery           int `toml:"checkpoint_every" json:"checkpoint_every"`                       // receipts; default 1000
	CheckpointIntervalSeconds int `toml:"checkpoint_interval_seconds" json:"checkpoint_interval_seconds"` // default 10
}

// Server is one [[servers]] entry.
type Server struct {
	ID        string `toml:"id" json:"id"`
	Transport string `toml:"transport" json:"transport"` // "http" | "builtin" | "mcp"
	URL       string `toml:"url" json:"url"`             // http; mcp over Streamable HTTP
	// Command starts a stdio MCP server (transport "mcp"); chiod supervises
	// and restarts it. Exactly one of URL and Command for "mcp".
	Command        []string `toml:"command" json:"command,omitempty"`
	TimeoutSeconds int      `toml:"timeout_seconds" json:"timeout_seconds"` // one attempt; default 10
	// Delivery is the default delivery semantics of this server's tools:
	// "at_least_once" (default) | "at_most_once". A tool may override it.
	Delivery string `toml:"delivery" json:"delivery"`
	// RetryDeadlineSeconds bounds how long transient delivery failures are
	// retried (with capped backoff) before the call ends as failed;
	// default 30. A tool may override it.
	RetryDeadlineSeconds int    `toml:"retry_deadline_seconds" json:"retry_deadline_seconds"`
	Tools                []Tool `toml:"tools" json:"tools,omitempty"`
}

// Tool is one [[servers.tools]] entry.
type Tool struct {
	Name     string `toml:"name" json:"name"`
	Action   string `toml:"action" json:"action"`     // short verb for summaries; default "invoke"
	Category string `toml:"category" json:"category"` // financial, communication, infrastructure, data_mutation, sensitive_data_access, or custom
	// Amount and Currency are RFC 6901 JSON Pointers into the call's
	// arguments ("/amount", "/payment/currency"): where the money lives.
	// The kernel derives the amount from the arguments, never from the
	// agent's governed intent alone.
	Amount   string `toml:"amount" json:"amount,omitempty"`
	Currency string `toml:"currency" json:"currency,omitempty"`
	// Delivery overrides the server's delivery semantics ("" = inherit).
	Delivery string `toml:"delivery" json:"delivery,omitempty"`
	// RetryDeadlineSeconds overrides the server's (0 = inherit).
	RetryDeadlineSeconds int `toml:"retry_deadline_seconds" json:"retry_deadline_seconds,omitempty"`
	// InputSchema is the JSON Schema (type "object") the arguments of an
	// http server's tool must match; "" = none. It is held in canonical
	// form once validated; Policy.InputSchema has it compiled (inputschema.go).
	InputSchema JSONText `toml:"input_schema" json:"input_schema,omitempty"`
}

// JSONText is a JSON document written as a TOML string; it may not be empty.
type JSONText string

// Grant is one [[grants]] entry. Tool is a path.Match glob ("*", "read_*").
type Grant struct {
	ID          string      `toml:"id" json:"id"`
	Server      string      `toml:"server" json:"server"`
	Tool        string      `toml:"tool" json:"tool"`
	Operations  []string    `toml:"operations" json:"operations"` // default ["invoke"]
	Constraints Constraints `toml:"constraints" json:"constraints"`
	Approval    *Approval   `toml:"approval" json:"approval"`
}

// Constraints is [grants.constraints]. Zero values mean "no constraint".
type Constraints struct {
	RequireApprovalAbove      *Threshold `toml:"require_approval_above" json:"require_approval_above"`
	RequireApprovalAlways     bool       `toml:"require_approval_always" json:"require_approval_always"`
	RequireApprovalFirstN     int        `toml:"require_approval_first_n" json:"require_approval_first_n"`
	RequireApprovalForActions []string   `toml:"require_approval_for_actions" json:"require_approval_for_actions,omitempty"`
	GovernedIntentRequired    bool       `toml:"governed_intent_required" json:"governed_intent_required"`
	// ForbiddenPaths are doublestar globs ("/etc/**") matched against every
	// path-like string argument, after normalization.
	ForbiddenPaths []string `toml:"forbidden_paths" json:"forbidden_paths,omitempty"`
	// ForbiddenPathsCaseInsensitive matches forbidden_paths ignoring case
	// (for case-insensitive file systems).
	ForbiddenPathsCaseInsensitive bool `toml:"forbidden_paths_case_insensitive" json:"forbidden_paths_case_insensitive"`
	// AllowedPaths, when set, is an allow-list: every path-like string
	// argument must match one of these globs after normalization.
	AllowedPaths []string `toml:"allowed_paths" json:"allowed_paths,omitempty"`
	// DenyWhen and RequireApprovalWhen are CEL expressions over args,
	// intent, tool, server and subject, compiled at load. Any true deny_when
	// denies; any true require_approval_when asks a human; an evaluation
	// error is a deny.
	// A single string is read as a list of one.
	DenyWhen            Expressions `toml:"deny_when" json:"deny_when,omitempty"`
	RequireApprovalWhen Expressions `toml:"require_approval_when" json:"require_approval_when,omitempty"`
	MaxCallsPerMinute   int         `toml:"max_calls_per_minute" json:"max_calls_per_minute"`
	// OnTrigger routes a non-approval guard to approval instead of denial:
	// guard name → "deny" (default) | "require_approval".
	OnTrigger map[string]string `toml:"on_trigger" json:"on_trigger,omitempty"`
}

// Expressions is a list of CEL expressions; the file may write a single
// string for a list of one.
type Expressions []string

// Threshold is require_approval_above = { threshold_units = N[, currency = "USD"] }.
// It compares the amount derived from the arguments (the tool's `amount`
// pointer); with Currency set, an amount in any other currency asks a human.
type Threshold struct {
	ThresholdUnits int64  `toml:"threshold_units" json:"threshold_units"`
	Currency       string `toml:"currency" json:"currency,omitempty"`
}

// Approval is [grants.approval].
type Approval struct {
	TimeoutSeconds  int        `toml:"timeout_seconds" json:"timeout_seconds"` // default 3600
	TimeoutAction   string     `toml:"timeout_action" json:"timeout_action"`   // deny (default) | escalate | auto_approve_advisory
	Quorum          int        `toml:"quorum" json:"quorum"`                   // default 1
	DenyQuorum      int        `toml:"deny_quorum" json:"deny_quorum"`         // default 1: one deny ends it
	ExposeArguments bool       `toml:"expose_arguments" json:"expose_arguments"`
	SlackCustodial  bool       `toml:"slack_custodial" json:"slack_custodial"`
	Channels        []string   `toml:"channels" json:"channels"` // default ["dashboard"]
	Approvers       []Approver `toml:"approvers" json:"approvers"`
	// Requesters are keys that may never approve calls under this grant
	// (separation of duties), beyond the calling agent's own key.
	Requesters []string    `toml:"requesters" json:"requesters,omitempty"`
	Escalation *Escalation `toml:"escalation" json:"escalation"`
}

// Approver is one [[grants.approval.approvers]] entry.
type Approver struct {
	PublicKey   keys.PublicKey `toml:"public_key" json:"public_key"`
	DisplayName string         `toml:"display_name" json:"display_name"`
	Contact     Contact        `toml:"contact" json:"contact"`
}

// Contact says where a channel reaches an approver.
type Contact struct {
	Slack string `toml:"slack" json:"slack"`
	Email string `toml:"email" json:"email"`
}

// Escalation is [grants.approval.escalation].
type Escalation struct {
	TerminalAction string `toml:"terminal_action" json:"terminal_action"` // deny (default) | auto_approve_advisory
	Tiers          []Tier `toml:"tiers" json:"tiers"`
}

// Tier is one escalation tier; Approvers names approvers by display_name.
// Channels defaults to the grant's approval channels.
type Tier struct {
	Approvers      []string `toml:"approvers" json:"approvers"`
	Channels       []string `toml:"channels" json:"channels"`
	TimeoutSeconds int      `toml:"timeout_seconds" json:"timeout_seconds"`
}

// Channels is the [channels] table. Secrets are named by environment
// variable, never stored in the file. Webhook, Slack and Email are nil when
// not configured; an approval may name those channels only when they are.
type Channels struct {
	Webhook   *Webhook   `toml:"webhook" json:"webhook"`
	Slack     *Slack     `toml:"slack" json:"slack"`
	Email     *Email     `toml:"email" json:"email"`
	Dashboard *Dashboard `toml:"dashboard" json:"dashboard"`
}

// Webhook is [channels.webhook].
type Webhook struct {
	URL       string `toml:"url" json:"url"`
	SecretEnv string `toml:"secret_env" json:"secret_env"`
	Retries   int    `toml:"retries" json:"retries"` // default 5
}

// Slack is [channels.slack].
type Slack struct {
	BotTokenEnv      string `toml:"bot_token_env" json:"bot_token_env"`
	SigningSecretEnv string `toml:"signing_secret_env" json:"signing_secret_env"`
	Channel          string `toml:"channel" json:"channel"`
	// TeamID pins the Slack workspace ("T…") whose users' clicks may
	// decide. Unset, any
	// workspace the app reaches (Slack Connect shares channels across
	// organisations) is trusted on its user ids.
	TeamID string `toml:"team_id" json:"team_id,omitempty"`
	APIURL string `toml:"api_url" json:"api_url"` // tests point this at slacktest
}

// Email is [channels.email].
type Email struct {
	SMTPAddr    string `toml:"smtp_addr" json:"smtp_addr"`
	From        string `toml:"from" json:"from"`
	UsernameEnv string `toml:"username_env" json:"username_env"`
	PasswordEnv string `toml:"password_env" json:"password_env"`
	StartTLS    bool   `toml:"starttls" json:"starttls"`
}

// Dashboard is [channels.dashboard]. After Parse, Channels.Dashboard is never
// nil: the dashboard is enabled unless the file says enabled = false.
type Dashboard struct {
	Enabled bool `toml:"enabled" json:"enabled"`
}

// Well-known action categories (SPEC §4). Custom labels are also allowed.
var Categories = []string{"financial", "communication", "infrastructure", "data_mutation", "sensitive_data_access"}
