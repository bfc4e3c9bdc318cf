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
