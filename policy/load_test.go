package policy

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func mustLoad(t testing.TB, path string) *Policy {
	t.Helper()
	p, err := Load(path)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	return p
}

func TestLoadFullPolicy(t *testing.T) {
	p := mustLoad(t, "testdata/full.toml")
	refunds, ok := p.Grant("refunds")
	if !ok {
		t.Fatal("no grant refunds")
	}
	orders, _ := p.Grant("orders")
	a := refunds.Approval
	checks := []struct {
		name      string
		got, want any
	}{
		{"listen", p.Kernel.Listen, "0.0.0.0:8443"},
		{"public_url from listen, loopback, https", p.Kernel.PublicURL, "https://127.0.0.1:8443"},
		{"data_dir", p.Kernel.DataDir, "/var/lib/chio"},
		{"checkpoint_every", p.Receipts.CheckpointEvery, 500},
		{"checkpoint_interval default", p.Receipts.CheckpointIntervalSeconds, 10},
		{"server timeout default", p.Servers[0].TimeoutSeconds, 10},
		{"tool action", p.Servers[0].Tools[0].Action, "charge"},
		{"tool category", p.Servers[0].Tools[0].Category, "financial"},
		{"tool action default", p.Servers[0].Tools[1].Action, "invoke"},
		{"threshold", refunds.Constraints.RequireApprovalAbove.ThresholdUnits, int64(200)},
		{"governed intent", refunds.Constraints.GovernedIntentRequired, true},
		{"approval timeout", a.TimeoutSeconds, 3600},
		{"timeout action", a.TimeoutAction, "escalate"},
		{"quorum default", a.Quorum, 1},
		{"deny quorum default", a.DenyQuorum, 1},
		{"approval channels default", a.Channels, []string{"dashboard"}},
		{"approver 0", a.Approvers[0].DisplayName, "Finance Lead"},
		{"approver 0 key", a.Approvers[0].PublicKey.String(), "ed25519:392eda50f5c5dd24f3fef6c0f1f44a598b4b6e293b407a39b1d9aa3193b875ed"},
		{"approver 1 contact", a.Approvers[1].Contact, Contact{Slack: "@cfo", Email: "cfo@example.com"}},
		{"terminal action", a.Escalation.TerminalAction, "deny"},
		{"tier 1", a.Escalation.Tiers[0], Tier{Approvers: []string{"Finance Lead"}, Channels: []string{"slack", "dashboard"}, TimeoutSeconds: 900}},
		{"tier 2", a.Escalation.Tiers[1], Tier{Approvers: []string{"CFO"}, Channels: []string{"slack", "email"}, TimeoutSeconds: 3600}},
		{"operations default", orders.Operations, []string{"invoke"}},
		{"on_trigger", orders.Constraints.OnTrigger, map[string]string{"forbidden_paths": "require_approval"}},
		{"orders quorum", orders.Approval.Quorum, 2},
		{"webhook retries default", p.Channels.Webhook.Retries, 5},
		{"slack channel", p.Channels.Slack.Channel, "#approvals"},
		{"email starttls", p.Channels.Email.StartTLS, true},
		{"dashboard enabled by default", p.Channels.Dashboard.Enabled, true},
		{"source", p.Source, "testdata/full.toml"},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if !reflect.DeepEqual(c.got, c.want) {
				t.Errorf("got %#v, want %#v", c.got, c.want)
			}
		})
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(p.Hash) {
		t.Errorf("hash %q", p.Hash)
	}
}

func TestDefaultsOfAMinimalFile(t *testing.T) {
	p, err := Parse(nil, "empty.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := Kernel{Listen: "127.0.0.1:7420", DataDir: "./chio-data", PublicURL: "http://127.0.0.1:7420"}
	if p.Kernel != want {
		t.Errorf("kernel %+v, want %+v", p.Kernel, want)
	}
	if p.Receipts != (Receipts{CheckpointEvery: 1000, CheckpointIntervalSeconds: 10}) {
		t.Errorf("receipts %+v", p.Receipts)
	}
	if _, ok := p.Match(func(string) bool { return true }, "s", "t", "invoke"); ok {
		t.Error("an empty policy matched a call")
	}
}

func TestTierChannelsDefaultToApprovalChannels(t *testing.T) {
	p, err := Parse(doc(`
[[servers]]
id = "s"
transport = "builtin"
[[grants]]
id = "g"
server = "s"
tool = "echo"
[grants.constraints]
require_approval_always = true
[grants.approval]
channels = ["poll", "terminal"]
timeout_action = "escalate"
[[grants.approval.approvers]]
public_key = "KEY_A"
display_name = "A"
[[grants.approval.escalation.tiers]]
approvers = ["A"]
timeout_seconds = 60
`), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Grants[0].Approval.Escalation.Tiers[0].Channels; !reflect.DeepEqual(got, []string{"poll", "terminal"}) {
		t.Errorf("tier channels %v", got)
	}
}

func TestLoadErrors(t *testing.T) {
	t.Run("missing file is an fs error", func(t *testing.T) {
		_, err := Load(filepath.Join(t.TempDir(), "nope.toml"))
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("too large", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "big.toml")
		data := []byte("# " + strings.Repeat("x", MaxInputBytes) + "\n")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		var perr *Errors
		if !errors.As(err, &perr) || len(*perr) != 1 || (*perr)[0].Line != 0 ||
			!strings.Contains(err.Error(), path+": the file is larger than the 4 MiB limit") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("nested too deep", func(t *testing.T) {
		deep := "a = " + strings.Repeat("{ b = ", MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1)
		_, err := Parse([]byte("\n"+deep+"\n"), "deep.toml")
		if err == nil || err.Error() != "deep.toml:2: keys, tables or lists are nested more than 32 levels deep" {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("syntax error has its line", func(t *testing.T) {
		_, err := Parse([]byte("[kernel]\nlisten = \"127.0.0.1:1\"\ndata_dir = \n"), "bad.toml")
		var perr *Errors
		if !errors.As(err, &perr) || (*perr)[0].Line != 3 || !strings.HasPrefix(err.Error(), "bad.toml:3: TOML syntax: ") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestErrorFormat(t *testing.T) {
	errs := Errors{{File: "a.toml", Line: 3, Msg: "one"}, {File: "a.toml", Msg: "two"}, {Line: 4, Msg: "three"}}
	var err error = &errs
	if got, want := err.Error(), "a.toml:3: one\na.toml: two\nline 4: three"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	var e Error
	if !errors.As(err, &e) || e.Msg != "one" {
		t.Errorf("errors.As(Error) = %+v", e)
	}
}

func TestHash(t *testing.T) {
	full := mustLoad(t, "testdata/full.toml")
	t.Run("stable across formatting, order, comments and spelled-out defaults", func(t *testing.T) {
		re := mustLoad(t, "testdata/full-reformatted.toml")
		if re.Hash != full.Hash {
			t.Errorf("reformatted hash %s != %s", re.Hash, full.Hash)
		}
	})
	t.Run("independent of the source name", func(t *testing.T) {
		data, _ := os.ReadFile("testdata/full.toml")
		p, err := Parse(data, "elsewhere.toml")
		if err != nil || p.Hash != full.Hash {
			t.Errorf("hash %v %v", p, err)
		}
	})
	data, err := os.ReadFile("testdata/full.toml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, old, new string }{
		{"threshold", "threshold_units = 200", "threshold_units = 201"},
		{"terminal action", `terminal_action = "deny"`, `terminal_action = "auto_approve_advisory"`},
		{"approver contact", `slack = "@cfo"`, `slack = "@chief-financial-officer"`},
		{"tier order", `approvers = ["Finance Lead"]`, `approvers = ["Finance Lead", "CFO"]`},
		{"tool pattern", `tool = "lookup_*"`, `tool = "lookup_?*"`},
		{"forbidden path", `"**/.ssh/**"`, `"**/.gnupg/**"`},
	} {
		t.Run("changes with "+c.name, func(t *testing.T) {
			changed := strings.Replace(string(data), c.old, c.new, 1)
			if changed == string(data) {
				t.Fatalf("%q not in full.toml", c.old)
			}
			p, err := Parse([]byte(changed), "changed.toml")
			if err != nil {
				t.Fatal(err)
			}
			if p.Hash == full.Hash {
				t.Error("hash did not change")
			}
		})
	}
}
