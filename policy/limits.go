package policy

// Every cap on what a policy file may contain. A file is written by an
// operator, not an attacker, but `chio policy check` and chiod still read it
// as untrusted input: a typo must not exhaust memory or stall start-up.
const (
	// MaxInputBytes bounds the file before the TOML parser sees it.
	MaxInputBytes = 4 << 20
	// MaxDepth bounds nesting: dotted key parts, tables inside tables and
	// arrays inside arrays, counted together. The deepest legitimate path,
	// grants[i].approval.escalation.tiers[j].approvers[k], is 8. The TOML
	// parser's cost grows much faster than linearly with depth, so this is
	// checked before it runs.
	MaxDepth = 32
	// MaxErrors stops reporting after this many problems; the rest are
	// usually consequences of the first ones.
	MaxErrors = 100

	MaxServers           = 10_000
	MaxToolsPerServer    = 10_000
	MaxGrants            = 100_000
	MaxOperations        = 64
	MaxApproversPerGrant = 64
	MaxRequesters        = 64
	MaxTiers             = 16
	MaxForbiddenPaths    = 256
	MaxActions           = 64
	MaxNameLen           = 256 // ids, tool names, display names, labels
	MaxPatternLen        = 1024
	MaxCommandArgs       = 256 // an MCP server's command line
	MaxAllowedPaths      = 256

	// MaxConditionsPerGrant bounds deny_when and require_approval_when
	// (each); MaxConditionLen bounds one expression's source.
	MaxConditionsPerGrant = 32
	MaxConditionLen       = 2048
	// MaxConditionCost is the CEL cost limit of one evaluation. Ordinary
	// conditions cost under 100; a comprehension costs a few units per
	// element, so this allows a pass over about 2,000 list elements; a call
	// that walks a string costs a unit per 100 bytes of it besides
	// (conditions_cost.go), and matches() the size of its regex times the
	// string's (conditions_regex.go). At the
	// limit an evaluation takes about 3 ms on this project's machines, well
	// inside the guard budget; one whose regexes hold counted repeats
	// (`{1,64}`), whose unit is dearer, up to about 30 ms. Exceeding it is an evaluation error: a deny.
	MaxConditionCost = 10_000
	// MaxConditionQuote is how much of an expression receipts and messages quote.
	MaxConditionQuote = 80

	// MaxCurrencyLen bounds a currency code ("USD", "USDC", "BTC").
	MaxCurrencyLen = 16
	// MaxInputSchemaBytes bounds a tool's input_schema, as an upstream MCP
	// tool's inputSchema is bounded (internal/dispatch/mcp.MaxSchemaBytes).
	MaxInputSchemaBytes = 64 << 10
	// MaxRetryDeadlineSeconds bounds retry_deadline_seconds.
	MaxRetryDeadlineSeconds = 3600

	// MaxThresholdUnits is 2^53: amounts are hashed as canonical JSON, whose
	// numbers must be exact IEEE doubles.
	MaxThresholdUnits = 1 << 53
	MaxFirstN         = 1_000_000_000
	MaxCallsPerMinute = 1_000_000_000

	MaxApprovalTimeoutSeconds = 30 * 24 * 3600 // 30 days
	MaxServerTimeoutSeconds   = 3600
	MaxCheckpointEvery        = 1_000_000
	MaxCheckpointInterval     = 24 * 3600
	MaxWebhookRetries         = 20

	// DefaultMaxPendingApprovalsPerAgent: one agent cannot bury its
	// approvers under more waiting requests than this unless the policy
	// says so; MaxPendingApprovalsPerAgent bounds what it may say.
	DefaultMaxPendingApprovalsPerAgent = 100
	MaxPendingApprovalsPerAgent        = 100_000
)
