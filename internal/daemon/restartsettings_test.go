package daemon

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chiokernel/chio/policy"
)

func parseQuickstart(t *testing.T, edit func(string) string) *policy.Policy {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "examples", "policies", "quickstart.toml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse([]byte(edit(string(raw))), "quickstart.toml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func same(s string) string { return s }

// A reloaded policy gets the running [kernel] and [channels] (flags
// applied), keeps its own grants and hash, and reports whether the file's
// tables moved since start.
func TestKeepRestartSettings(t *testing.T) {
	running := parseQuickstart(t, same)
	started := restartSettingsOf(running)
	running.Kernel.Listen, running.Kernel.PublicURL = "127.0.0.1:40000", "http://127.0.0.1:40000" // -listen

	next := parseQuickstart(t, same)
	hash := next.Hash
	changed, err := keepRestartSettings(next, running, started)
	if err != nil || changed {
		t.Fatalf("same file: changed=%v err=%v", changed, err)
	}
	if next.Kernel != running.Kernel || !reflect.DeepEqual(next.Channels, running.Channels) || next.Hash != hash {
		t.Fatalf("same file: kernel %+v, hash %s", next.Kernel, next.Hash)
	}

	next = parseQuickstart(t, func(s string) string {
		s = strings.Replace(s, `data_dir = "./chio-data"`, `data_dir = "/elsewhere"`+"\npublic_url = \"https://chio.example.com\"", 1)
		return strings.Replace(s, "enabled = true", "enabled = true\n[channels.webhook]\nurl = \"https://hooks.example.com/x\"", 1)
	})
	changed, err = keepRestartSettings(next, running, started)
	if err != nil || !changed {
		t.Fatalf("edited [kernel] and [channels]: changed=%v err=%v", changed, err)
	}
	if next.Kernel != running.Kernel || next.Channels.Webhook != nil {
		t.Fatalf("edited tables were applied: kernel %+v, webhook %+v", next.Kernel, next.Channels.Webhook)
	}
}

// A grant (or escalation tier) naming a channel the running chiod lacks
// refuses the reload and leaves the loaded policy as it was.
func TestKeepRestartSettingsRefusesChannelNotRunning(t *testing.T) {
	running := parseQuickstart(t, same)
	started := restartSettingsOf(running)
	next := parseQuickstart(t, func(s string) string {
		s = strings.Replace(s, `channels = ["dashboard", "poll"]   # the web dashboard`, `channels = ["dashboard", "webhook"]   # the web dashboard`, 1)
		return s + "\n[channels.webhook]\nurl = \"https://hooks.example.com/x\"\n"
	})
	before := next.Channels
	_, err := keepRestartSettings(next, running, started)
	if err == nil || !strings.Contains(err.Error(), `grant "refunds" uses channel "webhook"`) {
		t.Fatalf("err = %v", err)
	}
	if next.Channels != before {
		t.Fatal("a refused reload changed the loaded policy")
	}

	running.Channels.Dashboard = &policy.Dashboard{Enabled: false}
	next = parseQuickstart(t, same)
	if _, err := keepRestartSettings(next, running, started); err == nil || !strings.Contains(err.Error(), `"dashboard"`) {
		t.Fatalf("dashboard off at start: err = %v", err)
	}
}

// [receipts] and [store] are set up at start (the receipt log's
// checkpointing, the store driver and its connection): a reload keeps the
// running ones and reports the file's as awaiting a restart, as for [kernel].
func TestKeepRestartSettingsKeepsReceiptsAndStore(t *testing.T) {
	running := parseQuickstart(t, same)
	started := restartSettingsOf(running)
	for name, edit := range map[string]func(string) string{
		"[receipts]": func(s string) string {
			return s + "\n[receipts]\ncheckpoint_every = 7\ncheckpoint_interval_seconds = 3\n"
		},
		"[store]": func(s string) string { return s + "\n[store]\ndriver = \"postgres\"\ndsn_env = \"CHIO_PG_DSN\"\n" },
	} {
		next := parseQuickstart(t, edit)
		hash := next.Hash
		changed, err := keepRestartSettings(next, running, started)
		if err != nil || !changed {
			t.Fatalf("%s edited: changed=%v err=%v", name, changed, err)
		}
		if next.Receipts != running.Receipts || next.Store != running.Store || next.Hash != hash {
			t.Fatalf("%s edited: applied on reload: receipts %+v, store %+v", name, next.Receipts, next.Store)
		}
	}
}

// The dispatcher is built at start from each server's id, transport, url,
// command and timeout_seconds: a reload changing any of them, or adding or
// removing a server, is refused (nothing changes). What the kernel reads
// from the policy on each call (declared tools, categories, amounts,
// delivery, retry deadline) reloads.
func TestKeepRestartSettingsRefusesServerReachChanges(t *testing.T) {
	const http = "\n[[servers]]\nid = \"pay\"\ntransport = \"http\"\nurl = \"http://127.0.0.1:9001\"\n"
	const stdio = "\n[[servers]]\nid = \"files\"\ntransport = \"mcp\"\ncommand = [\"files-mcp\", \"--root\", \"/srv\"]\n"
	base := func(s string) string { return s + http + stdio }
	running := parseQuickstart(t, base)
	started := restartSettingsOf(running)
	for _, c := range []struct{ name, old, new, want string }{
		{"url", `url = "http://127.0.0.1:9001"`, `url = "http://127.0.0.1:9002"`, `[[servers]] "pay" changed its url`},
		{"transport", `transport = "http"`, `transport = "mcp"`, `[[servers]] "pay" changed its transport`},
		{"command", `"--root", "/srv"`, `"--root", "/"`, `[[servers]] "files" changed its command`},
		{"timeout", `url = "http://127.0.0.1:9001"`, `url = "http://127.0.0.1:9001"` + "\ntimeout_seconds = 30", `[[servers]] "pay" changed its timeout_seconds`},
		{"added", stdio, stdio + "\n[[servers]]\nid = \"new\"\ntransport = \"http\"\nurl = \"http://127.0.0.1:9004\"\n", `[[servers]] "new" is new`},
		{"removed", stdio, "", `[[servers]] "files" was removed`},
	} {
		next := parseQuickstart(t, func(s string) string {
			out := strings.Replace(base(s), c.old, c.new, 1)
			if out == base(s) {
				t.Fatalf("%s: %q not in the policy", c.name, c.old)
			}
			return out
		})
		before := next.Kernel
		_, err := keepRestartSettings(next, running, started)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "restart chiod") {
			t.Fatalf("%s: err = %v", c.name, err)
		}
		if next.Kernel != before {
			t.Fatalf("%s: a refused reload changed the loaded policy", c.name)
		}
	}

	// Declarations read on each call reload; so does a reordering.
	next := parseQuickstart(t, func(s string) string {
		s = strings.Replace(base(s), `url = "http://127.0.0.1:9001"`, `url = "http://127.0.0.1:9001"`+
			"\ndelivery = \"at_most_once\"\nretry_deadline_seconds = 5\n[[servers.tools]]\nname = \"charge\"\ncategory = \"financial\"\namount = \"/amount\"\ncurrency = \"/currency\"", 1)
		return strings.Replace(s, `category = "financial"`, `category = "payments"`, 1)
	})
	if _, err := keepRestartSettings(next, running, started); err != nil {
		t.Fatalf("tool declarations edited: %v", err)
	}
	reordered := parseQuickstart(t, func(s string) string { return s + stdio + http })
	if _, err := keepRestartSettings(reordered, running, started); err != nil {
		t.Fatalf("servers reordered: %v", err)
	}
}

// authority_key says whose capabilities the kernel honours besides its
// own, and the kernel's trust is built at start. A reload that changed
// it was put in force with the key kept: a leaked authority key removed
// from the file went on authorising calls, and their receipts named, as
// policy_hash, a policy that does not trust it (and an added key was
// named while refused). Like a change of how servers are reached, it is
// refused whole, naming the restart it needs.
func TestKeepRestartSettingsRefusesAuthorityKeyChange(t *testing.T) {
	// examples/keys/dba.pem and sre-lead.pem: no approver of the quickstart
	// (an authority key may not be one).
	const key1 = `authority_key = "ed25519:0ddc81cff06ad776b7c82709851c17dff819f39e3c5d41393f40c1b8fd3e4524"`
	const key2 = `authority_key = "ed25519:5ddb3dc7b82521457d1bf1a48ba92d77171c3dffa49690b6e676f987a2a456c9"`
	withKey := func(line string) func(string) string {
		return func(s string) string {
			out := strings.Replace(s, `data_dir = "./chio-data"`, `data_dir = "./chio-data"`+"\n"+line, 1)
			if out == s {
				t.Fatal("the quickstart's data_dir line moved; update this test")
			}
			return out
		}
	}
	for _, c := range []struct{ name, running, next string }{
		{"removed", key1, ""},
		{"added", "", key1},
		{"replaced", key1, key2},
	} {
		running := parseQuickstart(t, withKey(c.running))
		started := restartSettingsOf(running)
		next := parseQuickstart(t, withKey(c.next))
		_, err := keepRestartSettings(next, running, started)
		if err == nil || !strings.Contains(err.Error(), "authority_key") || !strings.Contains(err.Error(), "restart chiod") {
			t.Fatalf("authority_key %s: err = %v, want the reload refused", c.name, err)
		}
	}
	// The same key, and none on either side, reload as before.
	for _, line := range []string{key1, ""} {
		running := parseQuickstart(t, withKey(line))
		if _, err := keepRestartSettings(parseQuickstart(t, withKey(line)), running, restartSettingsOf(running)); err != nil {
			t.Fatalf("unchanged authority_key %q: %v", line, err)
		}
	}
}
