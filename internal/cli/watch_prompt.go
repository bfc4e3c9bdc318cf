package cli

// The terminal channel's prompt: showing one request and acting on the
// approver's answer (see watch.go for the stream it follows).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/kernel"
)

// choices are the answers a request offers at the prompt: confirm
// requests are confirmed or declined, questions answered or declined, and
// only a tool call that shows its arguments and needs one approval can be
// amended (the kernel refuses other amendments).
func choices(req *approval.Request) (prompt string, keys map[string]string) {
	switch req.Kind {
	case approval.KindConfirm:
		return "[c]onfirm, [d]ecline, [s]kip? ", map[string]string{"c": "approve", "confirm": "approve", "d": "deny", "decline": "deny", "s": "skip", "skip": "skip"}
	case approval.KindQuestion:
		return "[a]nswer, [d]ecline, [s]kip? ", map[string]string{"a": "approve", "answer": "approve", "d": "deny", "decline": "deny", "s": "skip", "skip": "skip"}
	}
	keys = map[string]string{"a": "approve", "approve": "approve", "d": "deny", "deny": "deny", "s": "skip", "skip": "skip"}
	if len(req.Arguments) == 0 || req.Quorum > 1 {
		return "[a]pprove, [d]eny, [s]kip? ", keys
	}
	keys["m"], keys["amend"] = "amend", "amend"
	return "[a]pprove, [d]eny, a[m]end, [s]kip? ", keys
}

// prompt shows one request and acts on the answer; false at end of input.
func (w *watcher) prompt(req *approval.Request) bool {
	w.shownAt = time.Now() // on a terminal, lines typed before are ignored
	printRequest(w.e.Stdout, req, w.shownAt)
	var decision string
	var amended, answers json.RawMessage
	ask, keys := choices(req)
	for decision == "" {
		a, ok := w.ask(ask)
		if !ok {
			return false
		}
		switch keys[strings.ToLower(a)] {
		case "approve":
			decision = approval.DecisionApproved
		case "deny":
			decision = approval.DecisionDenied
		case "skip":
			fmt.Fprintf(w.e.Stdout, "skipped %s\n\n", shown(req.ApprovalID))
			return true
		case "amend":
			for amended == nil {
				j, ok := w.ask("amended arguments (JSON object): ")
				if !ok {
					return false
				}
				if err := canon.Check([]byte(j)); err != nil || !strings.HasPrefix(j, "{") {
					fmt.Fprintln(w.e.Stdout, "not a JSON object; try again")
					continue
				}
				amended = json.RawMessage(j)
			}
			decision = approval.DecisionApproved
		default:
			fmt.Fprintln(w.e.Stdout, "answer "+strings.TrimSuffix(strings.TrimSpace(ask), "?"))
		}
	}
	if decision == approval.DecisionApproved && req.Kind == approval.KindQuestion {
		var ok bool
		if answers, ok = w.answer(req); !ok {
			return false
		}
	}
	// A denial needs a reason, as `chio approval deny --reason` does: it is
	// signed and shown to the agent and on the receipt.
	label := "note (optional): "
	if decision == approval.DecisionDenied {
		label = "reason (required): "
	}
	var note string
	for {
		n, ok := w.ask(label)
		if !ok {
			return false
		}
		switch {
		case len(n) > approval.MaxNoteLen:
			fmt.Fprintf(w.e.Stdout, "at most %d bytes\n", approval.MaxNoteLen)
			continue
		case decision == approval.DecisionDenied && n == "":
			fmt.Fprintln(w.e.Stdout, "a denial needs a reason")
			continue
		}
		note = n
		break
	}
	w.decide(req, decision, note, amended, answers)
	fmt.Fprintln(w.e.Stdout)
	return w.sig == nil
}

// answer asks each question of a question request.
func (w *watcher) answer(req *approval.Request) (json.RawMessage, bool) {
	var qs []approval.Question
	_ = json.Unmarshal(req.Questions, &qs)
	out := map[string]any{}
	for _, q := range qs {
		for {
			hint := ""
			switch q.Type {
			case approval.QuestionSingle:
				hint = fmt.Sprintf(" [one of options 1-%d above: its number or its text]", len(q.Options))
			case approval.QuestionMulti:
				hint = fmt.Sprintf(" [of options 1-%d above: numbers or texts, comma-separated]", len(q.Options))
			}
			a, ok := w.ask(shown(q.Text) + hint + ": ")
			if !ok {
				return nil, false
			}
			picked, err := pickOptions(q, a)
			if err == nil {
				err = fitAnswers(picked)
			}
			if errors.Is(err, errAmbiguous) {
				fmt.Fprintf(w.e.Stdout, "%s; try again, or stop with Ctrl-D and sign exact answers with `chio approval approve %s --answers`\n",
					shown(err.Error()), shown(req.ApprovalID))
				continue
			}
			if err != nil {
				fmt.Fprintf(w.e.Stdout, "%s; try again\n", shown(err.Error()))
				continue
			}
			if q.Type == approval.QuestionMulti {
				out[q.ID] = picked
			} else {
				out[q.ID] = picked[0]
			}
			break
		}
	}
	b, _ := json.Marshal(out)
	return b, true
}

// pickOptions reads a typed answer to q. A line that is exactly one option
// is that option, even if it holds a comma (options are prose: "Yes,
// refund"). Otherwise a single-choice answer is an option's number, or free
// text where the question allows other answers; a multi-choice answer is a
// comma-separated list of numbers or options, each at most once (an option
// holding a comma is picked by its number there). A text question takes the line as typed.
// The agent writes the options: an answer that is one option's number and
// another option's text ("1" under "1) 2  2) 1") reads two ways and picks
// neither (errAmbiguous), so a token never signs the reading the approver
// did not mean.
func pickOptions(q approval.Question, a string) ([]string, error) {
	if a == "" {
		return nil, errNotAnAnswer
	}
	if q.Type == approval.QuestionText {
		return []string{a}, nil
	}
	one := func(p string) (string, error) {
		n, err := strconv.Atoi(p)
		numbered := err == nil && n >= 1 && n <= len(q.Options)
		switch {
		case numbered && contains(q.Options, p) && q.Options[n-1] != p:
			return "", fmt.Errorf("%w: %q is the number of option %d and the text of another", errAmbiguous, p, n)
		case numbered:
			return q.Options[n-1], nil
		case contains(q.Options, p) || q.AllowOther:
			return p, nil
		}
		return "", errNotAnAnswer
	}
	if contains(q.Options, a) {
		p, err := one(a)
		return []string{p}, err
	}
	if q.Type != approval.QuestionMulti {
		p, err := one(strings.TrimSpace(a))
		return []string{p}, err
	}
	var picks []string
	for _, p := range strings.Split(a, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		o, err := one(p)
		if err != nil {
			return nil, err
		}
		if contains(picks, o) {
			// "1, 1": the agent would get the option twice, and a tool
			// acting once per pick would act twice on one choice.
			return nil, fmt.Errorf("%w: %q is picked more than once", errNotAnAnswer, o)
		}
		picks = append(picks, o)
	}
	if len(picks) == 0 {
		return nil, errNotAnAnswer
	}
	return picks, nil
}

// fitAnswers refuses, at the prompt, picks the kernel would refuse in the
// signed token (approval.ValidateAnswers): a refused token would drop the
// request from the watch, which never asks twice. Invalid UTF-8 would be
// signed as U+FFFD, not as typed.
func fitAnswers(picks []string) error {
	for _, p := range picks {
		switch {
		case len(p) > approval.MaxAnswerText:
			return fmt.Errorf("%w: at most %d bytes", errNotAnAnswer, approval.MaxAnswerText)
		case !utf8.ValidString(p):
			return fmt.Errorf("%w: not UTF-8 text", errNotAnAnswer)
		}
	}
	return nil
}

// Why a typed answer to a question is refused (pickOptions).
var (
	errNotAnAnswer = errors.New("not a valid answer")
	errAmbiguous   = errors.New("ambiguous answer")
)

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// decide signs and posts the token and prints the server's answer.
func (w *watcher) decide(req *approval.Request, decision, note string, amended, answers json.RawMessage) {
	cur := w.stillOpen(req.ApprovalID, "nothing signed")
	if cur == nil {
		return
	}
	if viewChanged(req, cur) {
		// Another vote, an escalation or a reload changed what the
		// approver was shown (a vote that completes the quorum now, say):
		// the answer was to the old view. Shown again as it now is.
		fmt.Fprintf(w.e.Stdout, "%s changed while you answered; nothing signed. As it now is:\n", shown(req.ApprovalID))
		w.again(cur)
		return
	}
	tok := approval.NewToken(req, w.key.Public(), decision, time.Now(), w.ttl)
	tok.Note, tok.AmendedArguments, tok.Answers = note, amended, answers
	raw, err := tok.Sign(w.key)
	if err != nil {
		fmt.Fprintln(w.e.Stdout, "error: cannot sign:", err)
		return
	}
	var body bytes.Buffer
	body.WriteString(`{"token":`)
	body.Write(raw)
	fmt.Fprintf(&body, `,"outcome":%q,"channel":"terminal"}`, decision)
	// A signal while the token is posted stops the watch (w.sig), and says
	// what may have become of the vote: chiod records a vote whatever
	// becomes of the connection. Outside a post, a signal kills the watch:
	// nothing is being signed then.
	sigCtx, stop := onInterrupt()
	defer stop()
	ctx, cancel := context.WithTimeout(sigCtx, 2*time.Minute)
	defer cancel()
	var res kernel.RespondResult
	id := req.ApprovalID
	verb := map[string]string{approval.DecisionApproved: "approve", approval.DecisionDenied: "deny"}[decision]
	_, err = w.r.send(ctx, "POST", "/approvals/"+url.PathEscape(id)+"/respond", body.Bytes(), nil, &res)
	if in, ok := interruption(sigCtx); ok {
		w.sig = &in
	}
	if in, ok := interruptedAttempt(ctx, err); ok {
		fmt.Fprintf(w.e.Stdout, "your vote on %s may or may not be recorded (%s before chiod answered): `chio approval show %s` tells; "+
			"`chio approval %s %s%s` again is refused as already cast if it is, never counted twice\n",
			shown(id), in, shown(id), verb, shown(id), map[string]string{"deny": " --reason …"}[verb])
		return
	}
	if err != nil {
		if line, ae, ok := voteRecorded(id, err); ok {
			fmt.Fprintf(w.e.Stdout, "%s\n  %s\n", shown(line), shown(ae.Message))
			return
		}
		if line, ae, ok := voteUncertain(id, verb, err); ok {
			fmt.Fprintf(w.e.Stdout, "%s\n  %s\n", shown(line), shown(ae.Message))
			return
		}
		fmt.Fprintf(w.e.Stdout, "error: %s: %s\n", shown(id), shown(err.Error())) // may quote the server
		// A refusal (4xx): a request still pending that this key may
		// decide, with no vote of its recorded, is offered again (chiod's
		// reason is above), not dropped from the watch, which prompts each
		// request once.
		var ae *apiError
		if errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500 {
			if cur := w.stillOpen(id, "not offered again"); cur != nil {
				fmt.Fprintf(w.e.Stdout, "%s is still pending; your vote was not counted. Offered again:\n", shown(id))
				w.again(cur)
			}
		}
		return
	}
	line, _ := respondResult(id, &res)
	fmt.Fprintln(w.e.Stdout, shown(line)) // may quote the tool's error
}

// stillOpen reads the request again once the approver has answered, and
// returns it as it now is, or nil and says why not when this key can no
// longer decide it (then, what became of the answer, ends the line): the
// prompt may have waited long, and another approver, a deadline or an
// escalation may have settled it meanwhile. Then nothing is signed, as
// `chio approval approve` signs nothing for a request that is not pending
// (chiod would refuse the token; the approver hears what happened instead
// of a 409).
func (w *watcher) stillOpen(id, then string) *approval.Request {
	ctx, cancel := ctxTimeout(30 * time.Second)
	defer cancel()
	var v approvalView
	_, err := w.r.do(ctx, "GET", "/approvals/"+url.PathEscape(id), nil, &v)
	switch {
	case err != nil:
		fmt.Fprintf(w.e.Stdout, "error: %s: reading it again: %s; %s\n", shown(id), shown(err.Error()), then)
	case v.Request.ApprovalID != id:
		fmt.Fprintf(w.e.Stdout, "error: %s: %v: the answer is about %q; %s\n", shown(id), errBadResponse, shown(v.Request.ApprovalID), then)
	case v.Status != approval.StatusPending:
		fmt.Fprintf(w.e.Stdout, "%s was decided while you answered: it is %s; %s\n", shown(id), shown(v.Status), then)
	case v.Request.HasVoted(w.pub):
		fmt.Fprintf(w.e.Stdout, "your vote on %s is already recorded; %s\n", shown(id), then)
	case !v.Request.Trusts(w.pub):
		fmt.Fprintf(w.e.Stdout, "%s no longer lists your key as an approver (escalated or the policy changed while you answered); %s\n", shown(id), then)
	case !v.Request.MayDecide(w.pub):
		fmt.Fprintf(w.e.Stdout, "%s is a call your key may not decide (its agent's key, or a requester's); %s\n", shown(id), then)
	default:
		return &v.Request
	}
	return nil
}

// viewChanged reports whether now would be shown otherwise than was (the
// lines printRequest prints, at one time): what the approver answered is
// not what is current.
func viewChanged(was, now *approval.Request) bool {
	at := time.Now()
	var a, b bytes.Buffer
	printRequest(&a, was, at)
	printRequest(&b, now, at)
	return a.String() != b.String()
}

// again puts req, read again and still this key's to decide, at the head
// of the queue: it is prompted next, as it now is. Only on a terminal,
// where the approver reads the view before typing: piped answers were
// written in advance, one set per request shown, in order, and asking
// again would hand the next request's lines to this one (a denial meant
// for the next request would decide this one). Piped, the request is
// shown as it now is and left for `chio approval approve|deny`.
func (w *watcher) again(req *approval.Request) {
	if !w.tty {
		printRequest(w.e.Stdout, req, time.Now())
		fmt.Fprintf(w.e.Stdout, "not asked again: piped answers are read in order, one set per request shown; decide it with `chio approval approve|deny %s`\n\n", shown(req.ApprovalID))
		return
	}
	delete(w.handled, req.ApprovalID)
	w.queue = slices.Insert(w.queue, 0, req)
}

// printRequest shows what an approver needs to decide. Every string from
// the request is escaped (approval_text.go): most come from the agent.
func printRequest(out io.Writer, a *approval.Request, now time.Time) {
	approved, denied := a.Progress()
	fmt.Fprintf(out, "── %s ── %s\n", shown(a.ApprovalID), shown(a.Kind))
	fmt.Fprintf(out, "  %s\n", shownNoted(a.Summary))
	fmt.Fprintf(out, "  tool:     %s/%s (%s)\n", shown(a.ToolServer), shown(a.ToolName), shown(a.Action))
	fmt.Fprintf(out, "  agent:    %s\n", shown(a.SubjectID))
	if amount := amountText(a); amount != "" {
		fmt.Fprintf(out, "  amount:   %s\n", amount)
	}
	var in struct {
		Purpose  string `json:"purpose"`
		Category string `json:"action_category"`
	}
	if len(a.GovernedIntent) > 0 && string(a.GovernedIntent) != "null" {
		_ = json.Unmarshal(a.GovernedIntent, &in)
	}
	if in.Purpose != "" {
		fmt.Fprintf(out, "  intent:   %s\n", shownNoted(in.Purpose))
	}
	if in.Category != "" {
		fmt.Fprintf(out, "  category: %s\n", shown(in.Category))
	}
	fmt.Fprintf(out, "  deadline: %s (%s)\n", time.Unix(a.ExpiresAt, 0).UTC().Format(time.RFC3339), until(now, a.ExpiresAt))
	q := fmt.Sprintf("%d/%d approvals", approved, a.Quorum)
	if denied > 0 {
		q += fmt.Sprintf(", %d denied", denied)
	}
	fmt.Fprintf(out, "  quorum:   %s (tier %d)\n", q, a.Tier+1)
	if len(a.TriggeredBy) > 0 {
		fmt.Fprintf(out, "  why:      %s\n", shown(triggerText(a)))
	}
	if len(a.Arguments) > 0 {
		fmt.Fprintf(out, "  arguments: %s\n", shownJSONNoted(a.Arguments))
	}
	if a.Kind == approval.KindQuestion {
		var qs []approval.Question
		_ = json.Unmarshal(a.Questions, &qs)
		for i, qq := range qs {
			fmt.Fprintf(out, "  question %d: %s\n", i+1, shownNoted(qq.Text))
			printOptions(out, qq.Options)
		}
	}
}

// printOptions lists a question's options, one a line, each led by its
// number and shown: `watch` takes the numbers. Options are prose written by
// the agent: on one line ("1) A  2) B") a label inside an option ("A  2)
// C") would stand where a number does and read as an option of its own; an
// option cannot hold a line break (it is shown escaped), so a line's
// leading number is always the option's own.
func printOptions(out io.Writer, opts []string) {
	for i, o := range opts {
		fmt.Fprintf(out, "    %d) %s\n", i+1, shownNoted(o))
	}
}
