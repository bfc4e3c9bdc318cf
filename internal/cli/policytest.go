package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/policy"
)

func init() {
	register("policy test CASES", "run table cases (TOML) of calls and expected outcomes against a policy; exit 1 on any failure", runPolicyTest)
}

// maxCasesFile bounds a cases file read into memory.
const maxCasesFile = 8 << 20

// casesFile is a `chio policy test` file:
//
//	policy = "chio.toml"          # relative to this file; --policy overrides
//
//	[[cases]]
//	name = "refunds above 200 wait for a human"
//	server = "payment-server"
//	tool = "issue_refund"
//	args = { customer_id = "cust-1", amount = 450, currency = "USD" }
//	intent = { purpose = "refund", max_amount = { units = 450, currency = "USD" } }
//	grants = ["refunds"]          # the capability's grants; default every grant
//	expect = "pending"            # allow | deny | pending | rejected
//	triggers = ["require_approval_above"]   # pending: exactly these
//	# guard = "forbidden_paths"   # deny: the denying guard
//	# reason = "threshold"        # optional: the reason contains this
type casesFile struct {
	Policy string     `toml:"policy"`
	Cases  []testCase `toml:"cases"`
}

type testCase struct {
	Name        string   `toml:"name"`
	Server      string   `toml:"server"`
	Tool        string   `toml:"tool"`
	Operation   string   `toml:"operation"`
	Args        any      `toml:"args"`   // a table, or JSON text
	Intent      any      `toml:"intent"` // a table, or JSON text
	Grants      []string `toml:"grants"`
	Subject     string   `toml:"subject"`
	PriorCalls  uint64   `toml:"prior_calls"`
	RecentCalls int      `toml:"recent_calls"`
	Expect      string   `toml:"expect"`
	Guard       string   `toml:"guard"`
	Triggers    []string `toml:"triggers"`
	Reason      string   `toml:"reason"`
}

// Expectations of a case.
const (
	expectAllow    = "allow"
	expectDeny     = "deny"
	expectPending  = "pending"
	expectRejected = "rejected" // refused before deciding: malformed, no receipt
)

func runPolicyTest(e *Env, args []string) int {
	fs := newFlags(e, "policy test")
	policyFile := fs.String("policy", "", "the policy to test (default: the cases file's policy, relative to it)")
	verbose := fs.Bool("v", false, "print every case, not only failures")
	pos, err := parse(fs, args)
	if err != nil {
		return ExitUsage
	}
	if err := wantArgs("policy test", pos, 1); err != nil {
		return fail(e, err)
	}
	cf, err := loadCases(pos[0])
	if err != nil {
		return fail(e, usageErr("policy test", "%v", err))
	}
	path := *policyFile
	if path == "" {
		if cf.Policy == "" {
			return fail(e, usageErr("policy test", "%s names no policy: set policy = \"chio.toml\" in it or pass --policy FILE", pos[0]))
		}
		path = cf.Policy
		if !filepath.IsAbs(path) {
			path = filepath.Join(filepath.Dir(pos[0]), path)
		}
	}
	p, err := policy.Load(path)
	if err != nil {
		fmt.Fprintln(e.Stderr, err)
		return ExitError
	}
	failed := runCases(e.Stdout, p, cf.Cases, *verbose, time.Now())
	fmt.Fprintf(e.Stdout, "%s against %s: %d cases, %d failed\n", pos[0], path, len(cf.Cases), failed)
	if failed > 0 {
		return ExitError
	}
	return ExitOK
}

// loadCases reads and checks a cases file: unknown keys, missing fields
// and expectations that cannot be met are errors naming the case.
func loadCases(path string) (*casesFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCasesFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxCasesFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxCasesFile)
	}
	// The policy's depth gate, before the TOML parser recurses into it.
	if line := policy.TooDeep(data); line > 0 {
		return nil, fmt.Errorf("%s:%d: keys, tables or lists are nested more than %d levels deep", path, line, policy.MaxDepth)
	}
	var cf casesFile
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&cf)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	for _, k := range md.Undecoded() {
		// args and intent are free-form: their keys are the call's.
		if len(k) > 2 && k[0] == "cases" && (k[1] == "args" || k[1] == "intent") {
			continue
		}
		return nil, fmt.Errorf("%s: unknown key %s", path, k)
	}
	if len(cf.Cases) == 0 {
		return nil, fmt.Errorf("%s: no [[cases]]", path)
	}
	for i := range cf.Cases {
		c := &cf.Cases[i]
		if c.Name == "" {
			c.Name = fmt.Sprintf("case %d", i+1)
		}
		if err := c.check(); err != nil {
			return nil, fmt.Errorf("%s: %s: %v", path, c.Name, err)
		}
	}
	return &cf, nil
}

func (c *testCase) check() error {
	switch {
	case c.Server == "" || c.Tool == "":
		return fmt.Errorf("server and tool are required")
	case !slices.Contains([]string{expectAllow, expectDeny, expectPending, expectRejected}, c.Expect):
		return fmt.Errorf("expect must be allow, deny, pending or rejected, not %q", c.Expect)
	case c.Guard != "" && c.Expect != expectDeny:
		return fmt.Errorf("guard is for expect = \"deny\"")
	case len(c.Triggers) > 0 && c.Expect != expectPending:
		return fmt.Errorf("triggers are for expect = \"pending\"")
	case c.RecentCalls < 0:
		return fmt.Errorf("recent_calls must be ≥ 0")
	}
	if c.Subject != "" {
		if _, err := keys.ParsePublicKey(c.Subject); err != nil {
			return fmt.Errorf("subject: %v", err)
		}
	}
	for name, v := range map[string]any{"args": c.Args, "intent": c.Intent} {
		if _, err := jsonOf(v); err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
	}
	return nil
}

// jsonOf is a case's args or intent as JSON: a TOML table, or JSON text.
func jsonOf(v any) (json.RawMessage, error) {
	switch t := v.(type) {
	case nil:
		return nil, nil
	case string:
		if !json.Valid([]byte(t)) {
			return nil, fmt.Errorf("not valid JSON")
		}
		return json.RawMessage(t), nil
	case map[string]any:
		return json.Marshal(t)
	}
	return nil, fmt.Errorf("want a table or a JSON string, got %T", v)
}

// runCases decides each case and prints a diff for each that fails; it
// returns how many failed.
func runCases(w io.Writer, p *policy.Policy, cases []testCase, verbose bool, now time.Time) int {
	failed := 0
	for _, c := range cases {
		args, _ := jsonOf(c.Args)
		intent, _ := jsonOf(c.Intent)
		x, err := explainCall(p, callInput{Server: c.Server, Tool: c.Tool, Operation: c.Operation, Args: args, Intent: intent,
			Grants: c.Grants, Subject: c.Subject, PriorCalls: c.PriorCalls, RecentCalls: c.RecentCalls}, now)
		got, diffs := c.compare(x, err)
		if len(diffs) == 0 {
			if verbose {
				fmt.Fprintf(w, "ok    %s\n", c.Name)
			}
			continue
		}
		failed++
		fmt.Fprintf(w, "FAIL  %s  (%s/%s)\n", c.Name, c.Server, c.Tool)
		fmt.Fprintf(w, "      want: %s\n      got:  %s\n", c.want(), got)
		for _, d := range diffs {
			fmt.Fprintf(w, "      - %s\n", d)
		}
	}
	return failed
}

func (c *testCase) want() string {
	s := c.Expect
	switch {
	case c.Guard != "":
		s += " by " + c.Guard
	case len(c.Triggers) > 0:
		s += " (" + strings.Join(c.Triggers, ", ") + ")"
	}
	if c.Reason != "" {
		s += fmt.Sprintf(", reason containing %q", c.Reason)
	}
	return s
}

// compare returns what the policy decided, in the case's terms, and each
// way it differs from the expectation.
func (c *testCase) compare(x *explanation, err error) (string, []string) {
	if err != nil && !errors.Is(err, errBadCall) {
		// Not the kernel's refusal but the case's own fault (a grant the
		// policy lacks): chiod would decide such a call, so no
		// expectation is met by it.
		return "error: " + err.Error(), []string{"the case cannot be decided: " + err.Error()}
	}
	if err != nil {
		got := "rejected: " + err.Error()
		if c.Expect == expectRejected {
			if c.Reason != "" && !strings.Contains(err.Error(), c.Reason) {
				return got, []string{fmt.Sprintf("reason does not contain %q", c.Reason)}
			}
			return got, nil
		}
		return got, []string{"the call is refused before any guard runs"}
	}
	o := x.Outcome
	var got string
	var verdict, reason string
	switch o.Verdict {
	case "allow":
		verdict, got = expectAllow, "allow (grant "+x.Grant+")"
	case "deny":
		verdict, reason, got = expectDeny, o.Reason, "deny by "+o.Guard+": "+o.Reason
	default:
		verdict, reason, got = expectPending, o.Reason, "pending ("+strings.Join(o.TriggeredBy, ", ")+"): "+o.Reason
	}
	var diffs []string
	if verdict != c.Expect {
		diffs = append(diffs, fmt.Sprintf("outcome is %s, not %s", verdict, c.Expect))
		return got, diffs
	}
	if c.Guard != "" && o.Guard != c.Guard {
		diffs = append(diffs, fmt.Sprintf("denied by %s, not %s", o.Guard, c.Guard))
	}
	if len(c.Triggers) > 0 {
		want, have := slices.Sorted(slices.Values(c.Triggers)), slices.Sorted(slices.Values(o.TriggeredBy))
		if !slices.Equal(want, have) {
			diffs = append(diffs, fmt.Sprintf("triggered by [%s], not [%s]", strings.Join(have, ", "), strings.Join(want, ", ")))
		}
	}
	if c.Reason != "" && !strings.Contains(reason, c.Reason) {
		diffs = append(diffs, fmt.Sprintf("reason %q does not contain %q", reason, c.Reason))
	}
	return got, diffs
}
