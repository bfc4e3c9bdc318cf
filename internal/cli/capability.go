package cli

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"time"
)

func init() {
	register("capability issue", "admin: issue a capability to an agent key (--subject KEY --grant ID… [--label NAME] [--ttl 24h] [--out FILE])", runCapabilityIssue)
	register("capability revoke ID", "admin: record a capability id as revoked (any well-formed id is recorded, issued or not)", runCapabilityRevoke)
}

type multi []string

func (m *multi) String() string     { return fmt.Sprint(*m) }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func runCapabilityIssue(e *Env, args []string) int {
	fs := newFlags(e, "capability issue")
	r := addRemote(fs, e)
	subject := fs.String("subject", "", "agent public key (ed25519:…)")
	var grants multi
	fs.Var(&grants, "grant", "grant id (repeatable)")
	ttl := fs.String("ttl", "24h", "lifetime")
	label := fs.String("label", "", "the agent's name, signed into the capability and shown to approvers (≤ 64 bytes)")
	out := fs.String("out", "", "write the capability JSON here (default: stdout)")
	pos, err := parse(fs, args)
	if err != nil {
		return ExitUsage
	}
	// Extra positionals after --grant are more grant ids (`--grant a b`).
	grants = append(grants, pos...)
	switch {
	case *subject == "":
		return fail(e, usageErr("capability issue", "--subject KEY is required (the agent's ed25519:… public key)"))
	case len(grants) == 0:
		return fail(e, usageErr("capability issue", "at least one --grant ID is required"))
	}
	if _, err := time.ParseDuration(*ttl); err != nil {
		return fail(e, usageErr("capability issue", "--ttl: %v", err))
	}
	ctx, cancel := ctxTimeout(30 * time.Second)
	defer cancel()
	var resp struct {
		ID         string          `json:"id"`
		Capability json.RawMessage `json:"capability"`
	}
	body := map[string]any{"subject": *subject, "grants": []string(grants), "ttl": *ttl}
	if *label != "" {
		body["label"] = *label
	}
	if _, err := r.do(ctx, "POST", "/v1/capabilities", body, &resp, 201); err != nil {
		return fail(e, err)
	}
	if *out == "" {
		fmt.Fprintln(e.Stdout, string(resp.Capability))
		return ExitOK
	}
	if err := os.WriteFile(*out, append(resp.Capability, '\n'), 0o600); err != nil {
		return fail(e, err)
	}
	fmt.Fprintf(e.Stdout, "%s written to %s\n", resp.ID, *out)
	return ExitOK
}

func runCapabilityRevoke(e *Env, args []string) int {
	fs := newFlags(e, "capability revoke")
	r := addRemote(fs, e)
	pos, err := parse(fs, args)
	if err != nil {
		return ExitUsage
	}
	if err := wantArgs("capability revoke", pos, 1); err != nil {
		return fail(e, err)
	}
	ctx, cancel := ctxTimeout(30 * time.Second)
	defer cancel()
	if _, err := r.do(ctx, "POST", "/v1/capabilities/"+url.PathEscape(pos[0])+"/revoke", struct{}{}, nil); err != nil {
		return fail(e, err)
	}
	// chiod keeps no list of the capabilities it issued (and never sees one
	// an authority key signed until it is used), so it records any
	// well-formed id: say so, or a mistyped id reads as a revoked capability.
	fmt.Fprintf(e.Stdout, "%s recorded as revoked: a capability with this id is refused from now on "+
		"(chiod records the id whether or not a capability has it: check it is the one you meant)\n", pos[0])
	return ExitOK
}
