package policy

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Public keys for test documents (the demo keys of examples/keys).
const (
	keyA = "ed25519:392eda50f5c5dd24f3fef6c0f1f44a598b4b6e293b407a39b1d9aa3193b875ed"
	keyB = "ed25519:264f3c00fa147d83e3a89432b2385a42a28b76f2f685838a111c86d28d5d7588"
	keyC = "ed25519:5ddb3dc7b82521457d1bf1a48ba92d77171c3dffa49690b6e676f987a2a456c9"
)

var keyNames = strings.NewReplacer("KEY_A", keyA, "KEY_B", keyB, "KEY_C", keyC)

// doc substitutes test keys into a TOML document.
func doc(s string) []byte { return []byte(keyNames.Replace(s)) }

// marked returns the line of the document carrying the marker "# <-": the
// line where the test expects its one error.
func marked(s string) int {
	for i, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "# <-") {
			return i + 1
		}
	}
	return 0
}

// Prefixes the cases share: a builtin server, and one with declared tools.
const (
	builtin = `
[[servers]]
id = "s"
transport = "builtin"
`
	grantHead = builtin + `
[[grants]]
id = "g"
server = "s"
tool = "issue_refund"
`
	// an approval-triggering grant up to its [grants.approval] header
	approvalHead = grantHead + `
[grants.constraints]
require_approval_always = true
[grants.approval]
`
	approverA = `
[[grants.approval.approvers]]
public_key = "KEY_A"
display_name = "A"
`
	// an approval that escalates: escalation tiers apply only then
	escalating = approvalHead + "timeout_action = \"escalate\"\n"
	oneTier    = "[[grants.approval.escalation.tiers]]\napprovers = [\"A\"]\ntimeout_seconds = 60\n"
	// a grant with approval configured, ready for a [grants.constraints] table
	approved = grantHead + "[grants.approval]\n" + approverA

	approverB = `
[[grants.approval.approvers]]
public_key = "KEY_B"
display_name = "B"
`
)

// Each case is a document with exactly one problem, on the line marked
// "# <-"; the error must be on that line and contain msg.
var invalidCases = []struct {
	name, toml, msg string
}{
	// Reading.
	{"syntax", builtin + "[[grants]]\nid = \"g\" x  # <-\n", "TOML syntax"},
	{"unknown key suggests", approvalHead + approverA + `
[grants.constraints.require_approval_above]
treshold_units = 200  # <-
currency = "USD"
`, `unknown key "treshold_units" in grants.constraints.require_approval_above (did you mean "threshold_units"?)`},
	{"unknown key in inline table", approved + `
[grants.constraints]
require_approval_above = { treshold_units = 200, currency = "USD" }  # <-
`, `unknown key "treshold_units"`},
	{"unknown top-level table", builtin + "[kernal]  # <-\nlisten = \"127.0.0.1:1\"\n", `unknown key "kernal" (did you mean "kernel"?)`},
	{"keys are case-sensitive", approvalHead + "Quorum = 1  # <-\n" + approverA, `keys are case-sensitive: did you mean "quorum"?`},
	{"string for number", approvalHead + "quorum = \"2\"  # <-\n" + approverA, "quorum must be a whole number, not a string"},
	{"number for table", grantHead + "[grants.constraints]\nrequire_approval_above = 200  # <-\n", "must be a table like { threshold_units = 200, currency = \"USD\" }"},
	{"string for list", grantHead + "operations = \"invoke\"  # <-\n", "operations must be a list, not a string"},
	{"fraction for integer", builtin + "timeout_seconds = 1.5  # <-\n", "must be a whole number, not a fractional number"},

	// [kernel] and [receipts].
	{"listen not host:port", "[kernel]\nlisten = \"7420\"  # <-\n", `listen = "7420": must be host:port`},
	{"listen port", "[kernel]\nlisten = \"127.0.0.1:99999\"  # <-\n", "port must be a number from 0 to 65535"},
	{"data_dir empty", "[kernel]\ndata_dir = \"\"  # <-\n", "data_dir must not be empty"},
	{"public_url relative", "[kernel]\npublic_url = \"/chio\"  # <-\n", "must be an absolute http:// or https:// URL"},
	{"tls cert without key", "[kernel]\ntls_cert_file = \"c.pem\"  # <-\n", "tls_cert_file is set but tls_key_file is not"},
	{"tls key without cert", "[kernel]\ntls_key_file = \"k.pem\"  # <-\n", "tls_key_file is set but tls_cert_file is not"},
	{"authority key", "[kernel]\nauthority_key = \"ed25519:00\"  # <-\n", "authority_key is not an acceptable Ed25519 public key"},
	{"checkpoint_every 0", "[receipts]\ncheckpoint_every = 0  # <-\n", "checkpoint_every must be more than 0"},
	{"pending cap negative", "[kernel]\nmax_pending_approvals_per_agent = -1  # <-\n", "max_pending_approvals_per_agent must be 1 to 100000, or 0 for the default of 100, not -1"},
	{"pending cap too large", "[kernel]\nmax_pending_approvals_per_agent = 100001  # <-\n", "max_pending_approvals_per_agent = 100001 is more than the limit of 100000"},

	// [[servers]].
	{"server id missing", "[[servers]]  # <-\ntransport = \"builtin\"\n", "server needs an id"},
	{"server id duplicate", builtin + "[[servers]]\nid = \"s\"  # <-\ntransport = \"builtin\"\n", `server id "s" is already used`},
	{"server id with space", "[[servers]]\nid = \"my server\"  # <-\ntransport = \"builtin\"\n", "must not contain spaces"},
	{"transport missing", "[[servers]]  # <-\nid = \"s\"\n", `server "s" needs a transport`},
	{"transport unknown", "[[servers]]\nid = \"s\"\ntransport = \"grpc\"  # <-\n", `transport = "grpc" is not supported`},
	{"http without url", "[[servers]]\nid = \"s\"\ntransport = \"http\"  # <-\n", "needs a url"},
	{"http bad url", "[[servers]]\nid = \"s\"\ntransport = \"http\"\nurl = \"ftp://x\"  # <-\n", "must be an absolute http:// or https:// URL"},
	{"http url with password", "[[servers]]\nid = \"s\"\ntransport = \"http\"\nurl = \"http://u:p@x\"  # <-\n", "must not contain a user name or password"},
	{"builtin with url", builtin + "url = \"http://x\"  # <-\n", "takes no url"},
	{"server timeout 0", builtin + "timeout_seconds = 0  # <-\n", "timeout_seconds must be more than 0"},
	{"tool name missing", builtin + "[[servers.tools]]  # <-\naction = \"x\"\n", "tool needs a name"},
	{"tool declared twice", builtin + "[[servers.tools]]\nname = \"echo\"\n[[servers.tools]]\nname = \"echo\"  # <-\n", `tool "echo" is declared twice`},
	{"tool name glob", "[[servers]]\nid = \"h\"\ntransport = \"http\"\nurl = \"http://x\"\n[[servers.tools]]\nname = \"read*\"  # <-\n", "must not contain *, ?, [ or \\"},
	{"builtin unknown tool", builtin + "[[servers.tools]]\nname = \"format_disk\"  # <-\n", `builtin server "s" has no tool "format_disk"`},
	{"tool action empty", builtin + "[[servers.tools]]\nname = \"echo\"\naction = \"\"  # <-\n", "action must not be empty"},

	// [[grants]].
	{"grant id missing", builtin + "[[grants]]  # <-\nserver = \"s\"\ntool = \"echo\"\n", "grant needs an id"},
	{"grant id duplicate", grantHead + "[[grants]]\nid = \"g\"  # <-\nserver = \"s\"\ntool = \"echo\"\n", `grant id "g" is already used`},
	{"grant server missing", builtin + "[[grants]]  # <-\nid = \"g\"\ntool = \"echo\"\n", `grant "g" needs a server`},
	{"grant unknown server", builtin + "[[grants]]\nid = \"g\"\nserver = \"payments\"  # <-\ntool = \"echo\"\n", `names server "payments", which is not declared`},
	{"grant tool missing", builtin + "[[grants]]  # <-\nid = \"g\"\nserver = \"s\"\n", `grant "g" needs a tool`},
	{"grant bad glob", builtin + "[[grants]]\nid = \"g\"\nserver = \"s\"\ntool = \"read_[\"  # <-\n", `tool = "read_[" is not a valid pattern`},
	{"grant undeclared tool http", "[[servers]]\nid = \"h\"\ntransport = \"http\"\nurl = \"http://x\"\n[[grants]]\nid = \"g\"\nserver = \"h\"\ntool = \"deploy\"  # <-\n", `server "h" has no tool "deploy": declare it`},
	{"grant unknown builtin tool", builtin + "[[grants]]\nid = \"g\"\nserver = \"s\"\ntool = \"format_disk\"  # <-\n", "builtin tools are echo, issue_refund, confirm, ask, delete_file"},
	{"operations empty", grantHead + "operations = []  # <-\n", "operations must list at least one operation"},
	{"operation blank", grantHead + "operations = [\"invoke\", \"\"]  # <-\n", `operation "": must not be blank`},

	// [grants.constraints].
	{"threshold negative", approved + "[grants.constraints]\nrequire_approval_above = { threshold_units = -1, currency = \"USD\" }  # <-\n", "threshold_units must be 0 or more, not -1"},
	{"threshold above 2^53", approved + "[grants.constraints]\nrequire_approval_above = { threshold_units = 9007199254740993, currency = \"USD\" }  # <-\n", "more than the limit of 2^53"},
	{"first_n negative", grantHead + "[grants.constraints]\nrequire_approval_first_n = -3  # <-\n", "require_approval_first_n must be 0 or more, not -3"},
	{"max_calls negative", grantHead + "[grants.constraints]\nmax_calls_per_minute = -1  # <-\n", "max_calls_per_minute must be 0 or more"},
	{"forbidden path bad", grantHead + "[grants.constraints]\nforbidden_paths = [\n  \"/etc/**\",\n  \"/var/[\",  # <-\n]\n", `forbidden_paths entry "/var/[" is not a valid pattern`},
	// Arguments are matched in cleaned form; these entries loaded and then
	// never matched (the fourth review: all reached the tool).
	{"forbidden path trailing slash", grantHead + "[grants.constraints]\nforbidden_paths = [\"/srv/secrets/\"]  # <-\n", `forbidden_paths entry "/srv/secrets/" is not in cleaned form, so no argument would match it; write "/srv/secrets"`},
	{"forbidden path dot", grantHead + "[grants.constraints]\nforbidden_paths = [\"./private/**\"]  # <-\n", `write "private/**"`},
	{"forbidden path double slash", grantHead + "[grants.constraints]\nforbidden_paths = [\"/srv//keys/**\"]  # <-\n", `write "/srv/keys/**"`},
	{"forbidden path dotdot", grantHead + "[grants.constraints]\nforbidden_paths = [\"/srv/app/../keys/**\"]  # <-\n", `write "/srv/keys/**"`},
	{"allowed path trailing slash", grantHead + "[grants.constraints]\nallowed_paths = [\"/srv/data/**/\"]  # <-\n", `write "/srv/data/**"`},
	{"forbidden path empty", grantHead + "[grants.constraints]\nforbidden_paths = [\"\"]  # <-\n", "must not be empty"},
	// An empty allow-list used to load and then apply no check at all.
	{"allowed paths empty list", grantHead + "[grants.constraints]\nallowed_paths = []  # <-\n", "allowed_paths = [] would allow no path at all"},
	{"on_trigger unknown guard", grantHead + "[grants.constraints.on_trigger]\nrate_limit = \"deny\"  # <-\n", `on_trigger names unknown guard "rate_limit"`},
	{"on_trigger approval guard", grantHead + "[grants.constraints.on_trigger]\nrequire_approval_always = \"deny\"  # <-\n", "already asks for approval"},
	{"on_trigger bad action", grantHead + "[grants.constraints.on_trigger]\nforbidden_paths = \"allow\"  # <-\n", `on_trigger.forbidden_paths = "allow": use "deny" or "require_approval"`},

	// Approval triggers need approvers.
	{"above without approval", grantHead + "[grants.constraints]\nrequire_approval_above = { threshold_units = 200, currency = \"USD\" }  # <-\n", `grant "g" asks for approval (require_approval_above) but has no [grants.approval] table`},
	{"always without approval", grantHead + "[grants.constraints]\nrequire_approval_always = true  # <-\n", "(require_approval_always)"},
	{"first_n without approval", grantHead + "[grants.constraints]\nrequire_approval_first_n = 5  # <-\n", "(require_approval_first_n)"},
	{"actions without approval", grantHead + "[grants.constraints]\nrequire_approval_for_actions = [\"financial\"]  # <-\n", "(require_approval_for_actions)"},
	{"on_trigger without approval", grantHead + "[grants.constraints]\nmax_calls_per_minute = 30\non_trigger = { max_calls_per_minute = \"require_approval\" }  # <-\n", "(on_trigger.max_calls_per_minute)"},
	{"approval without approvers", approvalHead[:len(approvalHead)-len("[grants.approval]\n")] + "[grants.approval]  # <-\ntimeout_seconds = 60\n", "has an approval table but no approvers"},

	// Approvers.
	{"approver key malformed", approvalHead + "[[grants.approval.approvers]]\npublic_key = \"ed25519:abc...\"  # <-\ndisplay_name = \"A\"\n", "public_key is not an acceptable Ed25519 public key: malformed public key"},
	{"approver key small order", approvalHead + "[[grants.approval.approvers]]\npublic_key = \"ed25519:0100000000000000000000000000000000000000000000000000000000000000\"  # <-\ndisplay_name = \"A\"\n", "weak public key (small order)"},
	{"approver key not a string", approvalHead + "[[grants.approval.approvers]]\npublic_key = 7  # <-\ndisplay_name = \"A\"\n", `public_key must be a string like "ed25519:<64 hex digits>"`},
	{"approver key missing", approvalHead + "[[grants.approval.approvers]]  # <-\ndisplay_name = \"A\"\n", "approver needs a public_key"},
	{"approver key duplicate", approvalHead + approverA + "[[grants.approval.approvers]]\npublic_key = \"KEY_A\"  # <-\ndisplay_name = \"A2\"\n", `approvers "A" and "A2" have the same public key`},
	{"display name missing", approvalHead + "[[grants.approval.approvers]]  # <-\npublic_key = \"KEY_A\"\n", "approver needs a display_name"},
	{"display name duplicate", approvalHead + approverA + "[[grants.approval.approvers]]\npublic_key = \"KEY_B\"\ndisplay_name = \"A\"  # <-\n", `display_name "A" is used by two approvers`},
	{"contact email", approvalHead + "[[grants.approval.approvers]]\npublic_key = \"KEY_A\"\ndisplay_name = \"A\"\ncontact = { email = \"nobody\" }  # <-\n", `contact email "nobody" is not an email address`},
	{"too many approvers", approvalHead + manyApprovers(MaxApproversPerGrant+1), "has 65 approvers; the limit is 64"},

	// [grants.approval].
	{"quorum 0", approvalHead + "quorum = 0  # <-\n" + approverA, "quorum must be at least 1, not 0"},
	{"quorum above approvers", approvalHead + "quorum = 3  # <-\n" + approverA + approverB, `quorum = 3 but grant "g" has only 2 approvers`},
	{"deny_quorum 0", approvalHead + "deny_quorum = 0  # <-\n" + approverA, "deny_quorum must be at least 1"},
	{"deny_quorum above approvers", approvalHead + "deny_quorum = 2  # <-\n" + approverA, "a denial could never complete"},
	{"timeout 0", approvalHead + "timeout_seconds = 0  # <-\n" + approverA, "timeout_seconds must be more than 0"},
	{"timeout over 30 days", approvalHead + "timeout_seconds = 2592001  # <-\n" + approverA, "more than the limit of 2592000"},
	{"timeout_action unknown", approvalHead + "timeout_action = \"allow\"  # <-\n" + approverA, `timeout_action = "allow": use "deny", "escalate" or "auto_approve_advisory"`},
	{"escalate without tiers", approvalHead + "timeout_action = \"escalate\"  # <-\n" + approverA, `timeout_action = "escalate" needs [grants.approval.escalation]`},
	{"channel unknown", approvalHead + "channels = [\"dashboard\", \"pager\"]  # <-\n" + approverA, `unknown channel "pager"`},
	{"channels empty", approvalHead + "channels = []  # <-\n" + approverA, "channels must list at least one channel"},
	{"slack not configured", approvalHead + "channels = [\"slack\"]  # <-\n" + approverA, `channel "slack" is used but [channels.slack] is not configured`},
	{"dashboard disabled", approvalHead + "channels = [\"poll\", \"dashboard\"]  # <-\n" + approverA + "[channels.dashboard]\nenabled = false\n", `but [channels.dashboard] has enabled = false`},
	{"requester bad key", approvalHead + "requesters = [\"ed25519:zz\"]  # <-\n" + approverA, "requester is not an acceptable Ed25519 public key"},
	{"requester is approver", approvalHead + "requesters = [\"KEY_C\", \"KEY_A\"]  # <-\n" + approverA, `is also the key of approver "A"`},
	{"slack_custodial without contact", approvalHead + "slack_custodial = true\nchannels = [\"slack\"]\n[[grants.approval.approvers]]  # <-\npublic_key = \"KEY_A\"\ndisplay_name = \"A\"\n[channels.slack]\nbot_token_env = \"T\"\nsigning_secret_env = \"S\"\nchannel = \"#a\"\n", `needs contact.slack set to approver "A"`},

	// [grants.approval.escalation].
	{"terminal_action escalate", escalating + approverA + "[grants.approval.escalation]\nterminal_action = \"escalate\"  # <-\n" + oneTier, `terminal_action = "escalate": use "deny" or "auto_approve_advisory"`},
	{"tier unknown approver", escalating + approverA + "[[grants.approval.escalation.tiers]]\napprovers = [\"Z\"]  # <-\ntimeout_seconds = 60\n", `escalation tier 1 names "Z", who is not among this grant's approvers`},
	{"tier without approvers", escalating + approverA + "[[grants.approval.escalation.tiers]]  # <-\ntimeout_seconds = 60\n", "escalation tier 1 names no approvers"},
	{"tier timeout missing", escalating + approverA + "[[grants.approval.escalation.tiers]]  # <-\napprovers = [\"A\"]\n", "escalation tier 1 needs timeout_seconds more than 0"},
	{"tier cannot reach quorum", escalating + "quorum = 2\n" + approverA + approverB + "[[grants.approval.escalation.tiers]]\napprovers = [\"A\"]  # <-\ntimeout_seconds = 60\n", "escalation tier 1 has 1 approvers but quorum = 2"},
	{"tier channel unknown", escalating + approverA + "[[grants.approval.escalation.tiers]]\napprovers = [\"A\"]\ntimeout_seconds = 60\nchannels = [\"sms\"]  # <-\n", `unknown channel "sms"`},
	{"too many tiers", escalating + approverA + "[grants.approval.escalation]\n" + manyTiers(MaxTiers+1), "17 escalation tiers; the limit is 16"},
	{"escalation without escalate", approvalHead + approverA + "[grants.approval.escalation]  # <-\n" + oneTier, `escalation tiers apply only with timeout_action = "escalate" (it is "deny")`},
	{"escalation with auto_approve_advisory", approvalHead + "timeout_action = \"auto_approve_advisory\"\n" + approverA + "[grants.approval.escalation]  # <-\n" + oneTier, `escalation tiers apply only with timeout_action = "escalate" (it is "auto_approve_advisory")`},

	// [channels].
	{"webhook url", "[channels.webhook]\nurl = \"hooks.example.com\"  # <-\n", "must be an absolute http:// or https:// URL"},
	{"webhook without url", "[channels.webhook]  # <-\nretries = 1\n", "[channels.webhook] needs a url"},
	{"webhook retries", "[channels.webhook]\nurl = \"https://x\"\nretries = -1  # <-\n", "retries must be 0 or more"},
	{"slack secret in file", "[channels.slack]\nbot_token_env = \"xoxb-1234-secret\"  # <-\nsigning_secret_env = \"S\"\nchannel = \"#a\"\n", "must be the name of an environment variable"},
	{"slack token env missing", "[channels.slack]  # <-\nsigning_secret_env = \"S\"\nchannel = \"#a\"\n", "bot_token_env is required"},
	{"slack channel empty", "[channels.slack]\nbot_token_env = \"T\"\nsigning_secret_env = \"S\"\nchannel = \"\"  # <-\n", "[channels.slack] needs a channel"},
	{"email smtp_addr", "[channels.email]\nsmtp_addr = \"smtp.example.com\"  # <-\nfrom = \"a@example.com\"\n", `smtp_addr = "smtp.example.com": must be host:port`},
	{"email from", "[channels.email]\nsmtp_addr = \"smtp.example.com:25\"\nfrom = \"\"  # <-\n", "needs from, the sender address"},
	{"email credentials half", "[channels.email]\nsmtp_addr = \"smtp.example.com:25\"\nfrom = \"a@example.com\"\nusername_env = \"U\"  # <-\n", "username_env and password_env go together"},
}

func manyApprovers(n int) string {
	var b strings.Builder
	for i := range n {
		// Distinct valid keys are not needed to reach the count check, but
		// duplicates would add errors; vary a display name and skip keys.
		fmt.Fprintf(&b, "[[grants.approval.approvers]]%s\ndisplay_name = \"A%d\"\n", map[bool]string{true: "  # <-", false: ""}[i == 0], i)
	}
	return b.String()
}

func manyTiers(n int) string {
	tier := "[[grants.approval.escalation.tiers]]\napprovers = [\"A\"]\ntimeout_seconds = 60\n"
	return strings.Replace(tier, "]]", "]]  # <-", 1) + strings.Repeat(tier, n-1)
}

func TestInvalidPolicies(t *testing.T) {
	for _, c := range invalidCases {
		t.Run(c.name, func(t *testing.T) { checkInvalid(t, c.name, c.toml, c.msg) })
	}
}

// checkInvalid parses a document with exactly one problem, on the line
// marked "# <-", and wants that error on that line, containing msg.
func checkInvalid(t *testing.T, name, toml, msg string) {
	t.Helper()
	want := marked(toml)
	if want == 0 {
		t.Fatal("case has no # <- marker")
	}
	_, err := Parse(doc(toml), "case.toml")
	var perr *Errors
	if !errors.As(err, &perr) {
		t.Fatalf("err = %v, want *Errors", err)
	}
	for _, e := range *perr {
		if e.Line == want && strings.Contains(e.Msg, msg) {
			if e.File != "case.toml" {
				t.Errorf("file %q", e.File)
			}
			if len(*perr) > 1 && name != "too many approvers" {
				t.Errorf("want one error, got:\n%v", err)
			}
			return
		}
	}
	t.Fatalf("want line %d: …%s…, got:\n%v", want, msg, err)
}

// BurntSushi/toml alone would report the first bad key only, at the line of
// the last key named grants.approval.approvers.public_key. Every bad key
// must be reported at its own line, with the other problems of the file.
func TestAllErrorsEachAtItsLine(t *testing.T) {
	src := builtin + `
[[grants]]
id = "one"
server = "s"
tool = "issue_refund"
[grants.constraints]
require_approval_always = true
[grants.approval]
[[grants.approval.approvers]]
public_key = "ed25519:abc"                  # e1
display_name = "A"
[[grants.approval.approvers]]
public_key = "KEY_B"
display_name = "B"

[[grants]]
id = "two"
server = "nowhere"                          # e2
tool = "issue_refund"
[grants.constraints]
require_approval_above = { threshold_units = -5, currency = "USD" }   # e3
[grants.approval]
quorum = 5                                  # e4
[[grants.approval.approvers]]
public_key = "ed25519:0100000000000000000000000000000000000000000000000000000000000000"  # e5
display_name = "C"
[[grants.approval.approvers]]
public_key = "KEY_C"
display_name = "D"
`
	_, err := Parse(doc(src), "multi.toml")
	var perr *Errors
	if !errors.As(err, &perr) {
		t.Fatalf("err = %v", err)
	}
	lineOf := func(marker string) int { return marked(strings.ReplaceAll(src, marker, "# <-")) }
	want := []string{
		fmt.Sprintf("multi.toml:%d: public_key is not an acceptable Ed25519 public key: malformed public key", lineOf("# e1")),
		fmt.Sprintf(`multi.toml:%d: grant "two" names server "nowhere"`, lineOf("# e2")),
		fmt.Sprintf("multi.toml:%d: threshold_units must be 0 or more, not -5", lineOf("# e3")),
		fmt.Sprintf(`multi.toml:%d: quorum = 5 but grant "two" has only 2 approvers`, lineOf("# e4")),
		fmt.Sprintf("multi.toml:%d: public_key is not an acceptable Ed25519 public key: weak public key (small order)", lineOf("# e5")),
	}
	if len(*perr) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(*perr), len(want), err)
	}
	for i, e := range *perr {
		if !strings.HasPrefix(e.Error(), want[i]) {
			t.Errorf("error %d = %q, want prefix %q", i, e.Error(), want[i])
		}
	}
}

func TestErrorsAreCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString(builtin)
	for i := range MaxErrors + 10 {
		fmt.Fprintf(&b, "[[grants]]\nid = \"g%d\"\nserver = \"missing\"\ntool = \"echo\"\n", i)
	}
	_, err := Parse([]byte(b.String()), "many.toml")
	var perr *Errors
	if !errors.As(err, &perr) || len(*perr) != MaxErrors+1 || !strings.Contains((*perr)[MaxErrors].Msg, "and 10 more problems") {
		t.Fatalf("got %d errors", len(*perr))
	}
}
