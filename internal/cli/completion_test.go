package cli_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// The bash script, sourced into a real bash, completes commands, nested
// commands and each command's flags, skipping global flags' values.
func TestCompletionBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set and bash is missing")
		}
		t.Skip("no bash; set CI=true to make this a failure")
	}
	script, _, code := chio(nil, "completion", "bash")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	file := filepath.Join(t.TempDir(), "chio.bash")
	if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	complete := func(line string) []string {
		t.Helper()
		words := strings.Fields(line)
		if strings.HasSuffix(line, " ") {
			words = append(words, "")
		}
		var quoted []string
		for _, w := range words {
			quoted = append(quoted, "'"+w+"'")
		}
		prog := fmt.Sprintf("source %s\nCOMP_WORDS=(%s)\nCOMP_CWORD=%d\n_chio\nprintf '%%s\\n' \"${COMPREPLY[@]}\"\n",
			file, strings.Join(quoted, " "), len(words)-1)
		out, err := exec.Command(bash, "--norc", "--noprofile", "-c", prog).CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v\n%s", line, err, out)
		}
		return strings.Fields(string(out))
	}
	for line, want := range map[string]string{
		"chio appr":                      "approval",
		"chio approval ":                 "approve batch cancel deny list show watch",
		"chio approval batch c":          "create",
		"chio receipt list --li":         "--limit",
		"chio --url http://x receipt l":  "list",
		"chio --output json approval ca": "cancel",
		"chio policy ":                   "check explain test",
		"chio policy explain --gr":       "--grant",
		"chio completion ":               "bash fish zsh",
		"chio frobnicate ":               "",
		"chio approval frob ":            "",
		"chio call demo echo --ar":       "--args",
	} {
		if got := strings.Join(complete(line), " "); got != want {
			t.Errorf("%q completes to %q, want %q", line, got, want)
		}
	}
}

// zsh and fish get a script naming every command; fish is checked for its
// conditions, zsh reuses the bash function through bashcompinit.
func TestCompletionZshFish(t *testing.T) {
	zsh, _, code := chio(nil, "completion", "zsh")
	if code != 0 || !strings.HasPrefix(zsh, "#compdef chio\n") || !strings.Contains(zsh, "bashcompinit") || !strings.Contains(zsh, "complete -o default -F _chio chio") {
		t.Fatalf("zsh: %d\n%s", code, zsh)
	}
	fish, _, code := chio(nil, "completion", "fish")
	if code != 0 {
		t.Fatalf("fish: exit %d", code)
	}
	for _, want := range []string{
		`complete -c chio -n '__chio_at ""' -a approval`,
		`complete -c chio -n '__chio_at "approval"' -a cancel -d "admin: cancel a pending request`,
		`complete -c chio -n '__chio_at "approval batch"' -a revoke`,
		`complete -c chio -n '__chio_at "policy explain"' -l grant`,
		`set -g __chio_prefixes 'approval' 'approval approve'`,
	} {
		if !strings.Contains(fish, want) {
			t.Errorf("fish script lacks %q", want)
		}
	}
	for _, shell := range []string{"zsh", "fish"} {
		path, err := exec.LookPath(shell)
		if err != nil {
			continue // a syntax check where the shell is installed
		}
		script := zsh
		if shell == "fish" {
			script = fish
		}
		f := filepath.Join(t.TempDir(), "chio."+shell)
		os.WriteFile(f, []byte(script), 0o600)
		if out, err := exec.Command(path, "-n", f).CombinedOutput(); err != nil {
			t.Errorf("%s -n: %v\n%s", shell, err, out)
		}
	}
	_ = cli.ExitOK
}
