package cli_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/internal/testkit"
)

// chiod keeps no list of the capabilities it issued (nor sees those an
// authority key signs before they are used), so it records any
// well-formed id as revoked. chio capability revoke answered "ID revoked"
// for an id no capability has (a typo), and the operator went away
// believing the capability they meant was dead. The answer must say what
// was done: the id is recorded as revoked whether or not a capability has
// it.
func TestCapabilityRevokeSaysTheIDIsRecordedWhetherOrNotIssued(t *testing.T) {
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: echoOnlyPolicy, Serve: true})
	env := map[string]string{"CHIO_URL": w.URL, "CHIO_ADMIN_TOKEN": w.AdminToken}
	var so, se bytes.Buffer
	code := cli.Main([]string{"capability", "revoke", "cap-never-issued"}, &cli.Env{Stdin: strings.NewReader(""),
		Stdout: &so, Stderr: &se, Getenv: func(k string) string { return env[k] }})
	out := so.String()
	if code != cli.ExitOK {
		t.Fatalf("revoke: exit %d, stderr %s", code, se.String())
	}
	if !strings.Contains(out, "cap-never-issued") || !strings.Contains(out, "recorded as revoked") || !strings.Contains(out, "whether or not") {
		t.Fatalf("revoke of an id no capability has answered %q; want it to say the id is recorded as revoked whether or not a capability has it", out)
	}
}
