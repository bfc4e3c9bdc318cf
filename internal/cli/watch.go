package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

func init() {
	register("approval watch", "terminal channel: prompt for each new request --key FILE may decide", runApprovalWatch)
}

// Watch reconnect backoff (on transport errors and server errors).
const (
	watchBackoffInitial = 250 * time.Millisecond
	watchBackoffMax     = 15 * time.Second
	maxSSELine          = 8 << 20 // one SSE data line (a request snapshot)
)

// runApprovalWatch is the terminal channel. It follows GET
// /approvals/stream and, for each pending request whose trusted approvers
// include --key's public key and that this key has not decided, prints it
// and prompts on stdin:
//
//	[a]pprove, [d]eny, a[m]end, [s]kip?
//
// (confirm requests offer [c]onfirm / [d]ecline, questions [a]nswer /
// [d]ecline; amend only where the kernel would accept it), then a note
// (optional) or, for a denial, a reason (required, like `chio approval
// deny --reason`); amend first asks for the amended arguments (a JSON
// object); answering a question request asks each question. What became
// of the call is printed as `chio approval approve` prints it. The token
// is signed like `chio approval approve` does and posted with channel
// "terminal". Stdin may be a pipe: lines are
// read in order, and end of input ends the watch with exit 0 once the
// lines already read are used up. Lines typed on a terminal while no
// request is shown are ignored. Each request is prompted at most once
// (skipping counts); the stream is reconnected with backoff on errors.
func runApprovalWatch(e *Env, args []string) int {
	fs := newFlags(e, "approval watch")
	r := addRemote(fs, e)
	keyFile := fs.String("key", "", "approver private key (PKCS#8 PEM)")
	ttl := fs.Duration("ttl", 10*time.Minute, "token lifetime (max 1h)")
	pos, err := parse(fs, args)
	if err != nil {
		return ExitUsage
	}
	if err := wantArgs("approval watch", pos, 0); err != nil {
		return fail(e, err)
	}
	if *keyFile == "" {
		return fail(e, usageErr("approval watch", "--key FILE is required (your approver key)"))
	}
	if *ttl <= 0 || *ttl > approval.MaxApprovalTTL {
		return fail(e, usageError("--ttl must be in (0, 1h]"))
	}
	key, err := keys.LoadPrivateKey(*keyFile)
	if err != nil {
		return fail(e, err)
	}
	if bearerFromEnv(e) == "" {
		return fail(e, usageError("the event stream needs CHIO_READ_TOKEN or CHIO_ADMIN_TOKEN"))
	}
	// The stream goroutine reports reconnects on stderr too: serialise.
	errOut := &lockedWriter{w: e.Stderr}
	we := *e
	we.Stderr = errOut
	w := &watcher{e: &we, r: r, key: key, pub: key.Public().String(), ttl: *ttl,
		handled: map[string]bool{}, resolved: map[string]bool{}, tty: isTerminal(e.Stdin)}
	ctx, cancel := context.WithCancel(context.Background())
	var following sync.WaitGroup
	defer following.Wait() // nothing writes after the command returns
	defer cancel()
	events := make(chan kernel.Event, 256)
	fatal := make(chan error, 1)
	following.Go(func() { w.follow(ctx, events, fatal) })
	w.lines = readLines(e.Stdin)
	fmt.Fprintf(w.e.Stderr, "watching %s for requests %s may decide (end of input or Ctrl-D stops)\n", r.base(), w.pub)
	return w.loop(events, fatal)
}

// lockedWriter serialises writes from the prompt and the stream goroutine.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

type watcher struct {
	e        *Env
	r        *remote
	key      keys.PrivateKey
	pub      string
	ttl      time.Duration
	lines    <-chan string // closed at end of input
	stash    []string      // lines read while no request was shown (pipes)
	eof      bool
	tty      bool
	queue    []*approval.Request
	handled  map[string]bool // prompted (decided or skipped): never again
	resolved map[string]bool
	events   <-chan kernel.Event
}

func (w *watcher) loop(events <-chan kernel.Event, fatal <-chan error) int {
	w.events = events
	for {
		if len(w.queue) > 0 {
			req := w.queue[0]
			w.queue = w.queue[1:]
			if w.resolved[req.ApprovalID] || w.handled[req.ApprovalID] {
				continue
			}
			w.handled[req.ApprovalID] = true
			if !w.prompt(req) {
				fmt.Fprintln(w.e.Stderr, "end of input: watch stopped")
				return ExitOK
			}
			continue
		}
		if w.eof && len(w.stash) == 0 {
			fmt.Fprintln(w.e.Stderr, "end of input: watch stopped")
			return ExitOK
		}
		select {
		case ev := <-events:
			w.observe(ev)
		case l, ok := <-w.lines:
			switch {
			case !ok:
				w.eof, w.lines = true, nil
			case !w.tty:
				w.stash = append(w.stash, l)
			}
		case err := <-fatal:
			return fail(w.e, err)
		}
	}
}

// observe queues a request this key may decide and notes resolutions.
func (w *watcher) observe(ev kernel.Event) {
	req := ev.Approval
	if req == nil {
		return
	}
	id := req.ApprovalID
	if req.Status != approval.StatusPending {
		w.resolved[id] = true
		return
	}
	switch ev.Type {
	case kernel.EventApprovalRequested, kernel.EventApprovalEscalated:
	default:
		return
	}
	if w.handled[id] || w.resolved[id] || !req.Trusts(w.pub) || req.HasVoted(w.pub) {
		return
	}
	for _, q := range w.queue {
		if q.ApprovalID == id {
			return
		}
	}
	w.queue = append(w.queue, req)
}

// line returns the next input line; false at end of input. Events that
// arrive meanwhile are observed (so the stream never blocks).
func (w *watcher) line() (string, bool) {
	if len(w.stash) > 0 {
		l := w.stash[0]
		w.stash = w.stash[1:]
		return l, true
	}
	for !w.eof {
		select {
		case l, ok := <-w.lines:
			if !ok {
				w.eof, w.lines = true, nil
				return "", false
			}
			return l, true
		case ev := <-w.events:
			w.observe(ev)
		}
	}
	return "", false
}

func (w *watcher) ask(prompt string) (string, bool) {
	fmt.Fprint(w.e.Stdout, prompt)
	l, ok := w.line()
	if !ok {
		fmt.Fprintln(w.e.Stdout)
		return "", false
	}
	if !w.tty { // echo piped answers so the transcript reads well
		fmt.Fprintln(w.e.Stdout, l)
	}
	return strings.TrimSpace(l), true
}

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
	printRequest(w.e.Stdout, req, time.Now())
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
			fmt.Fprintf(w.e.Stdout, "skipped %s\n\n", req.ApprovalID)
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
	return true
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
				hint = " [one of: " + shownList(q.Options) + "]"
			case approval.QuestionMulti:
				hint = " [comma-separated, of: " + shownList(q.Options) + "]"
			}
			a, ok := w.ask(shown(q.Text) + hint + ": ")
			if !ok {
				return nil, false
			}
			var picks []string
			for _, p := range strings.Split(a, ",") {
				if p = strings.TrimSpace(p); p != "" {
					picks = append(picks, p)
				}
			}
			valid := a != ""
			for _, p := range picks {
				if q.Type != approval.QuestionText && !q.AllowOther && !contains(q.Options, p) {
					valid = false
				}
			}
			if !valid {
				fmt.Fprintln(w.e.Stdout, "not a valid answer; try again")
				continue
			}
			if q.Type == approval.QuestionMulti {
				out[q.ID] = picks
			} else {
				out[q.ID] = a
			}
			break
		}
	}
	b, _ := json.Marshal(out)
	return b, true
}

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
	ctx, cancel := ctxTimeout(2 * time.Minute)
	defer cancel()
	var res kernel.RespondResult
	id := req.ApprovalID
	if _, err := w.r.send(ctx, "POST", "/approvals/"+url.PathEscape(id)+"/respond", body.Bytes(), nil, &res); err != nil {
		fmt.Fprintf(w.e.Stdout, "error: %s: %v\n", id, err)
		return
	}
	line, _ := respondResult(id, &res)
	fmt.Fprintln(w.e.Stdout, shown(line)) // may quote the tool's error
}

// printRequest shows what an approver needs to decide. Every string from
// the request is escaped (approval_text.go): most come from the agent.
func printRequest(out io.Writer, a *approval.Request, now time.Time) {
	approved, denied := a.Counts()
	fmt.Fprintf(out, "── %s ── %s\n", shown(a.ApprovalID), shown(a.Kind))
	fmt.Fprintf(out, "  %s\n", shown(a.Summary))
	fmt.Fprintf(out, "  tool:     %s/%s (%s)\n", shown(a.ToolServer), shown(a.ToolName), shown(a.Action))
	fmt.Fprintf(out, "  agent:    %s\n", shown(a.SubjectID))
	if len(a.GovernedIntent) > 0 && string(a.GovernedIntent) != "null" {
		var in struct {
			Purpose   string           `json:"purpose"`
			MaxAmount *approval.Amount `json:"max_amount"`
			Category  string           `json:"action_category"`
		}
		_ = json.Unmarshal(a.GovernedIntent, &in)
		if in.MaxAmount != nil {
			fmt.Fprintf(out, "  amount:   %d %s\n", in.MaxAmount.Units, shown(in.MaxAmount.Currency))
		}
		if in.Purpose != "" {
			fmt.Fprintf(out, "  intent:   %s\n", shown(in.Purpose))
		}
		if in.Category != "" {
			fmt.Fprintf(out, "  category: %s\n", shown(in.Category))
		}
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
		fmt.Fprintf(out, "  arguments: %s\n", shownJSON(a.Arguments))
	}
	if a.Kind == approval.KindQuestion {
		var qs []approval.Question
		_ = json.Unmarshal(a.Questions, &qs)
		for i, qq := range qs {
			fmt.Fprintf(out, "  question %d: %s", i+1, shown(qq.Text))
			if len(qq.Options) > 0 {
				fmt.Fprintf(out, " [%s]", shownList(qq.Options))
			}
			fmt.Fprintln(out)
		}
	}
}

// readLines feeds stdin's lines to a channel, closed at end of input.
func readLines(in io.Reader) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		if in == nil {
			return
		}
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

func isTerminal(in io.Reader) bool {
	f, ok := in.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// errStreamAuth is a refusal reconnecting cannot fix.
var errStreamAuth = errors.New("the event stream refused the bearer token")

// follow reads the SSE stream into events, reconnecting with backoff until
// ctx ends. An authorization refusal is fatal.
func (w *watcher) follow(ctx context.Context, events chan<- kernel.Event, fatal chan<- error) {
	delay := watchBackoffInitial
	for ctx.Err() == nil {
		got, err := w.stream(ctx, events)
		if ctx.Err() != nil {
			return
		}
		var ae *apiError
		if errors.As(err, &ae) && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden) {
			fatal <- fmt.Errorf("%w: %v", errStreamAuth, err)
			return
		}
		if got {
			delay = watchBackoffInitial
		}
		d := time.Duration(float64(delay) * (0.8 + 0.4*rand.Float64()))
		fmt.Fprintf(w.e.Stderr, "event stream: %v; reconnecting in %s\n", err, d.Truncate(time.Millisecond))
		select {
		case <-ctx.Done():
			return
		case <-time.After(d):
		}
		delay = min(delay*2, watchBackoffMax)
	}
}

// stream follows one connection; got reports whether any event arrived.
func (w *watcher) stream(ctx context.Context, events chan<- kernel.Event) (got bool, err error) {
	req, err := http.NewRequestWithContext(ctx, "GET", w.r.base()+"/approvals/stream", nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+bearerFromEnv(w.e))
	resp, err := w.r.http.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		ae := &apiError{Status: resp.StatusCode}
		if json.Unmarshal(data, ae) != nil || ae.Code == "" {
			ae.Code, ae.Message = http.StatusText(resp.StatusCode), strings.TrimSpace(string(data))
		}
		return false, ae
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), maxSSELine)
	var typ string
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data.Len() > 0 {
				var ev kernel.Event
				if json.Unmarshal([]byte(data.String()), &ev) == nil {
					if ev.Type == "" {
						ev.Type = typ
					}
					got = true
					select {
					case events <- ev:
					case <-ctx.Done():
						return got, ctx.Err()
					}
				}
			}
			typ = ""
			data.Reset()
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event:"):
			typ = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if err := sc.Err(); err != nil {
		return got, err
	}
	return got, io.ErrUnexpectedEOF
}
