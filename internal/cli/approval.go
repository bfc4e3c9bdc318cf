package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/connect"
	"github.com/chiokernel/chio/internal/envelope"
	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/kernel"
)

func init() {
	register("approval list", "pending approvals, oldest first", runApprovalList)
	register("approval show ID", "one approval request: summary, intent, deadline, approvers, votes, outcome", runApprovalShow)
	register("approval approve ID", "sign and post an approval with --key (exit 0 executed, 3 more votes needed, 4 not executed, 6 no result (tool failed, not delivered or outcome unknown), 7 vote recorded but the call not finished)", runApprovalApprove)
	register("approval deny ID", "sign and post a denial with --key and --reason", runApprovalDeny)
	register("approval batch create", "sign a standing approval: --key FILE --server PATTERN --tool PATTERN --for 1h", runBatchCreate)
	register("approval batch list", "standing approvals and their usage", runBatchList)
	register("approval batch revoke ID", "admin: revoke a standing approval", runBatchRevoke)
}

// approvalView is GET /approvals/{id}'s answer (httpapi.ApprovalView, with
// the request held by value: an answer without one reads as empty, never
// as a nil pointer).
type approvalView struct {
	Request    approval.Request       `json:"request"`
	Status     string                 `json:"status"`
	Resolution *approval.Resolution   `json:"resolution,omitempty"`
	Approvers  []httpapi.ApproverName `json:"approvers,omitempty"`
}

// approverNames lists the request's trusted approvers by name, as the
// server's view names them; a key the policy in force no longer lists is
// shown as such, and so is one whose vote the kernel never counts on this
// request (MayDecide: the calling agent's key, or a requester's).
func (v *approvalView) approverNames() []string {
	names := map[string]string{}
	for _, a := range v.Approvers {
		names[a.PublicKey] = a.DisplayName
	}
	out := make([]string, 0, len(v.Request.TrustedApprovers))
	for _, k := range v.Request.TrustedApprovers {
		n, ok := names[k]
		switch {
		case !ok:
			out = append(out, k+" (not an approver in the policy in force)")
		case n == "":
			out = append(out, k+v.uncountedWhy(k))
		default:
			out = append(out, n+" ("+k+")"+v.uncountedWhy(k))
		}
	}
	return out
}

// uncountedWhy says why the kernel never counts key's vote on the
// request ("" when it may decide it): the words beside it in APPROVERS.
func (v *approvalView) uncountedWhy(key string) string {
	switch r := &v.Request; {
	case r.MayDecide(key):
		return ""
	case key == r.SubjectID || key == r.SubjectPublicKey:
		return " (the calling agent's key: the kernel never counts its vote on its own call)"
	}
	return " (a requester of this grant: the kernel never counts its vote)"
}

func runApprovalList(e *Env, args []string) int {
	fs := newFlags(e, "approval list")
	r := addRemote(fs, e)
	subject := fs.String("subject", "", "only this agent key")
	server := fs.String("server", "", "only this tool server")
	tool := fs.String("tool", "", "only this tool")
	limit := fs.Int("limit", 100, "at most this many (1..1000)")
	pos, err := parse(fs, args)
	if err != nil {
		return ExitUsage
	}
	if err := wantArgs("approval list", pos, 0); err != nil {
		return fail(e, err)
	}
	if err := refuseEmptyFlags(fs, "approval list", "subject", "server", "tool"); err != nil {
		return fail(e, err)
	}
	if *limit < 1 || *limit > 1000 { // chiod's bounds: its 400 would exit 1, not 2
		return fail(e, usageErr("approval list", "--limit must be 1..1000"))
	}
	if err := r.checkOutput(); err != nil {
		return fail(e, err)
	}
	q := url.Values{"limit": {strconv.Itoa(*limit)}}
	for k, v := range map[string]string{"subject_id": *subject, "tool_server": *server, "tool_name": *tool} {
		if v != "" {
			q.Set(k, v)
		}
	}
	ctx, cancel := ctxTimeout(30 * time.Second)
	defer cancel()
	var list struct {
		Approvals []json.RawMessage `json:"approvals"`
	}
	if _, err := r.do(ctx, "GET", "/approvals/pending?"+q.Encode(), nil, &list); err != nil {
		return fail(e, err)
	}
	switch r.output {
	case "json":
		printJSON(e.Stdout, list.Approvals, false)
		return ExitOK
	case "jsonl":
		for _, raw := range list.Approvals {
			fmt.Fprintln(e.Stdout, shownJSON(raw))
		}
		return ExitOK
	}
	now := time.Now()
	tw := tabwriter.NewWriter(e.Stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAGE\tDEADLINE\tSERVER/TOOL\tSUMMARY\tQUORUM\tTIER")
	for _, raw := range list.Approvals {
		var a approval.Request
		if err := json.Unmarshal(raw, &a); err != nil {
			return fail(e, fmt.Errorf("bad response from chiod: %w", err))
		}
		approved, _ := a.Progress()
		// Agent-written text is escaped (approval_text.go), then clipped.
		// The note, if any, ends the row: the summary's column is clipped.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s/%s\t%s\t%d/%d\t%d%s\n", shown(a.ApprovalID), ago(now, a.CreatedAt), until(now, a.ExpiresAt),
			shown(a.ToolServer), shown(a.ToolName), clip(shown(a.Summary), 60), approved, a.Quorum, a.Tier+1, storedOrderNote(a.Summary))
	}
	tw.Flush()
	fmt.Fprintf(e.Stderr, "%d pending\n", len(list.Approvals))
	return ExitOK
}

func ago(now time.Time, unix int64) string {
	return now.Sub(time.Unix(unix, 0)).Truncate(time.Second).String()
}

func until(now time.Time, unix int64) string {
	d := time.Unix(unix, 0).Sub(now).Truncate(time.Second)
	if d <= 0 {
		return "passed"
	}
	return "in " + d.String()
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func runApprovalShow(e *Env, args []string) int {
	fs := newFlags(e, "approval show")
	r := addRemote(fs, e)
	pos, err := parse(fs, args)
	if err != nil {
		return ExitUsage
	}
	if err := wantArgs("approval show", pos, 1); err != nil {
		return fail(e, err)
	}
	if err := r.checkOutput(); err != nil {
		return fail(e, err)
	}
	ctx, cancel := ctxTimeout(30 * time.Second)
	defer cancel()
	var raw json.RawMessage
	if _, err := r.do(ctx, "GET", "/approvals/"+url.PathEscape(pos[0]), nil, &raw); err != nil {
		return fail(e, err)
	}
	if r.output != "table" {
		// The answer as sent (not decoded into an any, which would
		// re-sort its members and pass its numbers through float64).
		printJSON(e.Stdout, raw, r.output == "jsonl")
		return ExitOK
	}
	var v approvalView
	if err := json.Unmarshal(raw, &v); err != nil {
		return fail(e, fmt.Errorf("bad response from chiod: %w", err))
	}
	a := &v.Request
	approved, denied := a.Progress()
	tw := tabwriter.NewWriter(e.Stdout, 0, 2, 2, ' ', 0)
	// Every value is escaped (approval_text.go): most of it comes from the
	// agent, the tool or the request's store.
	row := func(k, val string) { fmt.Fprintf(tw, "%s\t%s\n", k, shownNoted(val)) }
	row("ID", a.ApprovalID)
	row("STATUS", v.Status)
	row("SUMMARY", a.Summary)
	row("SERVER/TOOL", a.ToolServer+"/"+a.ToolName+" ("+a.Action+")")
	if amount := amountText(a); amount != "" {
		row("AMOUNT", amount)
	}
	if a.SubjectLabel != "" {
		row("AGENT", a.SubjectLabel+" ("+a.SubjectID+")")
	} else {
		row("AGENT", a.SubjectID)
	}
	row("REQUEST", a.RequestID)
	row("CREATED", time.Unix(a.CreatedAt, 0).UTC().Format(time.RFC3339))
	row("DEADLINE", time.Unix(a.ExpiresAt, 0).UTC().Format(time.RFC3339)+" ("+until(time.Now(), a.ExpiresAt)+")")
	row("QUORUM", fmt.Sprintf("%d/%d approved, %d denied (tier %d)", approved, a.Quorum, denied, a.Tier+1))
	if note := a.SkippedNote(); note != "" {
		row("ESCALATION", note) // tiers passed over, and why
	}
	row("WHY", triggerText(a)+" ("+strings.Join(a.TriggeredBy, ", ")+")")
	names := v.approverNames()
	for i, n := range names {
		names[i] = shown(n)
	}
	fmt.Fprintf(tw, "APPROVERS\t%s\n", strings.Join(names, "\n\t"))
	if len(a.GovernedIntent) > 0 && string(a.GovernedIntent) != "null" {
		fmt.Fprintf(tw, "INTENT\t%s\n", shownJSONNoted(a.GovernedIntent))
	}
	if len(a.Arguments) > 0 {
		fmt.Fprintf(tw, "ARGUMENTS\t%s\n", shownJSONNoted(a.Arguments))
	}
	row("PARAMETER HASH", a.ParameterHash)
	for _, vote := range a.Votes {
		amended := vote.AmendedArguments()
		decision := vote.Decision
		if amended != nil {
			decision += " with amended arguments"
		}
		by := nameOr(vote.DisplayName, vote.Approver)
		if note := a.UncountedNote(&vote); note != "" {
			by += " (" + note + ")" // counted as QUORUM counts (Progress), as Slack and the dashboard say
		}
		row("VOTE", fmt.Sprintf("%s by %s via %s: %s", decision, by, vote.Channel, vote.Note))
		if amended != nil {
			// What the tool receives instead of ARGUMENTS above.
			fmt.Fprintf(tw, "AMENDED ARGUMENTS\t%s\n", shownJSONNoted(amended))
		}
	}
	if res := v.Resolution; res != nil {
		row("RESOLUTION", resolutionText(res)+" ("+time.Unix(res.At, 0).UTC().Format(time.RFC3339)+")")
	}
	// A channel that failed to tell the approvers: they may not know the
	// request waits (the channel's own error text, escaped like the rest).
	for _, failed := range a.NotifyErrors {
		row("NOT DELIVERED", failed)
	}
	tw.Flush()
	return ExitOK
}

func nameOr(name, key string) string {
	if name != "" {
		return name + " (" + key + ")"
	}
	return key
}

func runApprovalApprove(e *Env, args []string) int {
	return runDecision(e, args, approval.DecisionApproved)
}

func runApprovalDeny(e *Env, args []string) int {
	return runDecision(e, args, approval.DecisionDenied)
}

// runDecision signs a token for the request as fetched from chiod and
// posts it. The binding fields (request_id, governed_intent_hash, subject)
// come from the server's copy; a wrong copy only yields a token the kernel
// refuses, since it checks them against its own record.
func runDecision(e *Env, args []string, decision string) int {
	verb := map[string]string{approval.DecisionApproved: "approve", approval.DecisionDenied: "deny"}[decision]
	fs := newFlags(e, "approval "+verb)
	r := addRemote(fs, e)
	keyFile := fs.String("key", "", "approver private key (PKCS#8 PEM)")
	ttl := fs.Duration("ttl", 10*time.Minute, "token lifetime (1s to 1h)")
	var note, amend, answers *string
	if decision == approval.DecisionApproved {
		note = fs.String("note", "", "note for the agent and the receipt")
		amend = fs.String("amend", "", "approve an edited call: the amended arguments (JSON object)")
		answers = fs.String("answers", "", `answer a question request: {"question_id":"answer" or ["choice",…]}`)
	} else {
		note = fs.String("reason", "", "why (required; signed, shown to the agent and in the receipt)")
	}
	pos, err := parse(fs, args)
	if err != nil {
		return ExitUsage
	}
	name := "approval " + verb
	if err := wantArgs(name, pos, 1); err != nil {
		return fail(e, err)
	}
	switch {
	case *keyFile == "":
		return fail(e, usageErr(name, "--key FILE is required (your approver key)"))
	case decision == approval.DecisionDenied && strings.TrimSpace(*note) == "":
		return fail(e, usageErr(name, "--reason is required (signed, shown to the agent and in the receipt)"))
	case len(*note) > approval.MaxNoteLen:
		return fail(e, usageErr(name, "note/reason longer than %d bytes", approval.MaxNoteLen))
	case *ttl < approval.MinApprovalTTL || *ttl > approval.MaxApprovalTTL:
		// A token's times are whole seconds: a shorter one can expire as issued.
		return fail(e, usageErr(name, "--ttl must be in [1s, 1h]"))
	}
	// An empty --amend would approve the call as the agent sent it, not
	// the edit the approver meant: refused (flag_empty.go).
	if err := refuseEmptyFlags(fs, name, "amend"); err != nil {
		return fail(e, err)
	}
	if err := r.checkOutput(); err != nil {
		return fail(e, err)
	}
	var amended json.RawMessage
	if amend != nil && *amend != "" {
		if err := canon.Check([]byte(*amend)); err != nil || strings.TrimSpace(*amend)[0] != '{' {
			return fail(e, usageError("--amend must be a JSON object"))
		}
		amended = json.RawMessage(*amend)
	}
	key, err := e.loadKey(*keyFile)
	if err != nil {
		return fail(e, err)
	}
	ctx, cancel := ctxTimeout(2 * time.Minute)
	defer cancel()
	id := pos[0]
	var v approvalView
	if _, err := r.do(ctx, "GET", "/approvals/"+url.PathEscape(id), nil, &v); err != nil {
		return fail(e, err)
	}
	if v.Request.ApprovalID != id {
		// Not an answer about the request named (a proxy's cache, a wrong
		// route): a token signed over it would approve another request, and
		// it would travel through whatever sent this answer. Sign nothing.
		return fail(e, fmt.Errorf("%w: asked for %s, the answer is about %q", errBadResponse, id, v.Request.ApprovalID))
	}
	if v.Status != approval.StatusPending {
		if v.Request.HasVoted(key.Public().String()) {
			// Most likely voting again after "your vote may or may not be
			// recorded": the answer is that it is (it may have decided).
			return fail(e, fmt.Errorf("%s is %s, not pending: your vote on it is recorded; do not vote again", id, v.Status))
		}
		return fail(e, fmt.Errorf("%s is %s, not pending", id, v.Status))
	}
	tok := approval.NewToken(&v.Request, key.Public(), decision, time.Now(), *ttl)
	tok.Note, tok.AmendedArguments = *note, amended
	if answers != nil && *answers != "" {
		var qs []approval.Question
		if err := json.Unmarshal(v.Request.Questions, &qs); err != nil || len(qs) == 0 {
			return fail(e, usageError("--answers is only for question requests"))
		}
		// Checked here too so a typo is a usage error, not a refused token.
		if err := approval.ValidateAnswers(qs, json.RawMessage(*answers)); err != nil {
			return fail(e, usageError("--answers: "+err.Error()))
		}
		tok.Answers = json.RawMessage(*answers)
	}
	raw, err := tok.Sign(key)
	if err != nil {
		return fail(e, err)
	}
	fmt.Fprintf(e.Stderr, "signing %s of %s as %s: %s\n", decision, id, key.Public(), shownNoted(v.Request.Summary))
	// The body is assembled around the signed bytes so that they reach the
	// kernel exactly as signed (encoding them again could escape characters).
	var body bytes.Buffer
	body.WriteString(`{"token":`)
	body.Write(raw)
	fmt.Fprintf(&body, `,"outcome":%q,"channel":"cli"`, decision)
	if decision == approval.DecisionDenied {
		reason, _ := json.Marshal(*note)
		body.WriteString(`,"reason":` + string(reason))
	}
	body.WriteString("}")
	var res kernel.RespondResult
	if _, err := r.send(ctx, "POST", "/approvals/"+url.PathEscape(id)+"/respond", body.Bytes(), nil, &res); err != nil {
		if line, ae, ok := voteUncertain(id, verb, err); ok {
			// An error, but not "unavailable": the vote may count
			// (vote_uncertain.go).
			printVoteAnswer(e, r, line, ae)
			return ExitError
		}
		line, ae, ok := voteRecorded(id, err)
		if !ok {
			return fail(e, err)
		}
		// Not a refusal: the vote counts (vote_recorded.go).
		printVoteAnswer(e, r, line, ae)
		return ExitVoteRecorded
	}
	line, code := respondResult(id, &res)
	if r.output != "table" {
		printJSON(e.Stdout, res, r.output == "jsonl")
	} else {
		fmt.Fprintln(e.Stdout, shown(line)) // may quote the tool's error
	}
	return code
}

// send is remote.do for a body that must travel byte-exact (signed tokens)
// and for extra headers (Chio-Proof). Bearer tokens from the environment
// are sent as do sends them.
func (r *remote) send(ctx context.Context, method, path string, body []byte, hdr http.Header, out any, ok ...int) (int, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	// No byte of the request is written before its connection is ready;
	// making it is bounded apart from the answer (the SDKs' connect timeout).
	timeout := r.connectTimeout
	if timeout <= 0 {
		timeout = connect.DefaultTimeout
	}
	ctx, stopConnectTimer := connect.WithTimeout(ctx, timeout)
	defer stopConnectTimer() // after the body is read
	req, err := http.NewRequestWithContext(ctx, method, r.base()+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if t := bearerFromEnv(r.e); t != "" && !r.agent {
		req.Header.Set("Authorization", "Bearer "+t)
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	resp, err := r.http.Do(req)
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, connect.ErrTimedOut) {
			// net/http reports the context's error; the cause says that
			// no connection was made (connect.NeverMade).
			err = cause
		}
		return 0, fmt.Errorf("%w at %s: %w", errUnreachable, r.base(), err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		// The answer was cut short: as lost as no answer at all.
		return resp.StatusCode, fmt.Errorf("%w at %s: reading the answer: %w", errUnreachable, r.base(), err)
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		// Not followed (addRemote): the request may or may not have
		// reached chiod, so a call's outcome is unknown (answerLost).
		return resp.StatusCode, fmt.Errorf("%w: a redirect (%d) to %q", errBadResponse, resp.StatusCode, resp.Header.Get("Location"))
	}
	if len(ok) == 0 {
		ok = []int{http.StatusOK}
	}
	for _, s := range ok {
		if resp.StatusCode == s {
			if out != nil {
				if err := json.Unmarshal(data, out); err != nil {
					return resp.StatusCode, fmt.Errorf("%w: %v", errBadResponse, err)
				}
			}
			return resp.StatusCode, nil
		}
	}
	ae := &apiError{Status: resp.StatusCode, RetryAfter: retryDelay(resp.Header.Get("Retry-After"), time.Now())}
	// An error envelope that can be read two ways (internal/envelope) is
	// not chiod's: the answer is classified by its status alone.
	if envelope.Unmarshal(data, ae) != nil || ae.Code == "" {
		ae.Code, ae.Message = http.StatusText(resp.StatusCode), strings.TrimSpace(string(data))
	}
	if ae.Status == http.StatusUnauthorized && !r.agent {
		explainUnauthorized(ae, req, resp, hdr)
	}
	return resp.StatusCode, ae
}

// errUnreachable is a request that got no complete HTTP answer: it may or
// may not have reached chiod.
var errUnreachable = errors.New("cannot reach chiod")

// errBadResponse is an answer that is not what chiod sends: asking again
// will not help.
var errBadResponse = errors.New("bad response from chiod")

// bearerFromEnv is the token remote.do sends: admin first, then reader.
func bearerFromEnv(e *Env) string {
	if t := e.Getenv("CHIO_ADMIN_TOKEN"); t != "" {
		return t
	}
	return e.Getenv("CHIO_READ_TOKEN")
}

// printVoteAnswer prints chiod's answer to a vote that is not a plain
// refusal (vote_recorded, vote_uncertain): line on stdout (the envelope
// with --output json or jsonl), chiod's message on stderr.
func printVoteAnswer(e *Env, r *remote, line string, ae *apiError) {
	if r.output != "table" {
		printJSON(e.Stdout, map[string]string{"error": ae.Code, "message": ae.Message}, r.output == "jsonl")
	} else {
		fmt.Fprintln(e.Stdout, shown(line))
	}
	fmt.Fprintln(e.Stderr, "chio:", shown(ae.Message))
}
