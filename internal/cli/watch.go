package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/httpapi"
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
// (skipping counts), but on a terminal for one that changed while it was
// answered (it is shown again, as it now is, before anything is signed)
// or whose vote chiod refused (offered again, after chiod's reason);
// piped answers, written in advance, answer each request once. The stream is
// reconnected with backoff on errors.
func runApprovalWatch(e *Env, args []string) int {
	fs := newFlags(e, "approval watch")
	r := addRemote(fs, e)
	keyFile := fs.String("key", "", "approver private key (PKCS#8 PEM)")
	ttl := fs.Duration("ttl", 10*time.Minute, "token lifetime (1s to 1h)")
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
	if *ttl < approval.MinApprovalTTL || *ttl > approval.MaxApprovalTTL {
		// A token's times are whole seconds: a shorter one can expire as issued.
		return fail(e, usageError("--ttl must be in [1s, 1h]"))
	}
	key, err := e.loadKey(*keyFile)
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
	w.lines = readLines(e.Stdin, &w.inErr)
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
	lines    <-chan inputLine // closed at end of input
	inErr    error            // why input ended early (set before lines closes)
	sig      *interrupted     // a signal stopped a vote's post (decide)
	stash    []string         // lines read while no request was shown (pipes)
	eof      bool
	tty      bool
	shownAt  time.Time // when the request being prompted was shown
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
				return w.inputEnded()
			}
			continue
		}
		if w.eof && (len(w.stash) == 0 || w.inErr != nil) {
			return w.inputEnded()
		}
		select {
		case ev := <-events:
			w.observe(ev)
		case l, ok := <-w.lines:
			switch {
			case !ok:
				w.eof, w.lines = true, nil
			case !w.tty:
				w.stash = append(w.stash, l.text)
			}
		case err := <-fatal:
			return fail(w.e, err)
		}
	}
}

// inputEnded stops the watch at the end of its input: exit 0, or an error
// when the input could not be read to its end (the answers after it are
// not used: they would answer the wrong questions). A signal during a
// vote's post (w.sig) stops it too, with the shell's code for the signal.
func (w *watcher) inputEnded() int {
	if w.sig != nil {
		fmt.Fprintf(w.e.Stderr, "chio: %s while posting a vote: watch stopped\n", w.sig)
		return w.sig.exitCode()
	}
	if w.inErr != nil {
		return fail(w.e, w.inErr)
	}
	fmt.Fprintln(w.e.Stderr, "end of input: watch stopped")
	return ExitOK
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
	if w.handled[id] || w.resolved[id] {
		return
	}
	// A request already queued keeps its place and takes the newer view
	// (an escalation's tier, approvers and deadline): it is prompted as it
	// now is. A view of an earlier tier (a reconnect's replay crossing the
	// escalation) is older than the queued one; a tier that no longer
	// lists this key takes the request out of the queue.
	if i := slices.IndexFunc(w.queue, func(q *approval.Request) bool { return q.ApprovalID == id }); i >= 0 {
		switch {
		case req.Tier < w.queue[i].Tier:
		case !req.MayDecide(w.pub) || req.HasVoted(w.pub):
			w.queue = slices.Delete(w.queue, i, i+1)
		default:
			w.queue[i] = req
		}
		return
	}
	// Only a request this key's vote could count on: not one the key's
	// own agent made (approver.md: never your own call), nor one of a
	// grant that lists the key as a requester.
	if !req.MayDecide(w.pub) || req.HasVoted(w.pub) {
		return
	}
	w.queue = append(w.queue, req)
}

// line returns the next input line; false at end of input. Events that
// arrive meanwhile are observed (so the stream never blocks).
func (w *watcher) line() (string, bool) {
	// inErr is read only once the closed channel was seen (w.eof).
	if len(w.stash) > 0 && !(w.eof && w.inErr != nil) {
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
			if w.tty && l.at.Before(w.shownAt) {
				// Typed on the terminal before this request was shown
				// (while a vote was posted, say): not an answer to it.
				continue
			}
			return l.text, true
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

// maxInputLine bounds one line of the watch's input.
const maxInputLine = 1 << 20

// inputLine is a line of input and when it was read. Lines are read as
// they come (the channel holds inputAhead of them), so on a terminal a
// line's time is about when it was typed.
type inputLine struct {
	text string
	at   time.Time
}

const inputAhead = 64

// readLines feeds stdin's lines to a channel, closed at end of input. An
// input that cannot be read to its end (a line over maxInputLine, a read
// error) sets *errp before the channel closes: it is not an end of input.
func readLines(in io.Reader, errp *error) <-chan inputLine {
	ch := make(chan inputLine, inputAhead)
	go func() {
		defer close(ch)
		if in == nil {
			return
		}
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), maxInputLine)
		for sc.Scan() {
			ch <- inputLine{sc.Text(), time.Now()}
		}
		switch err := sc.Err(); {
		case errors.Is(err, bufio.ErrTooLong):
			*errp = fmt.Errorf("input: a line longer than %d bytes: watch stopped; nothing was signed for it", maxInputLine)
		case err != nil:
			*errp = fmt.Errorf("reading input: %w: watch stopped", err)
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
		fmt.Fprintf(w.e.Stderr, "event stream: %s; reconnecting in %s\n", shown(err.Error()), d.Truncate(time.Millisecond)) // may quote the server
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
					if ev.Type == httpapi.EventStreamTruncated {
						if err := w.unreplayed(ctx, events); err != nil {
							return got, err
						}
					} else {
						select {
						case events <- ev:
						case <-ctx.Done():
							return got, ctx.Err()
						}
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

// unreplayed follows a replay cut short (stream.truncated): chiod replayed
// only its oldest pending requests, and the rest would never be shown. It
// lists the pending requests this key may decide, oldest first, as
// requested events (observe drops those already queued, prompted or
// resolved). An error ends the stream: the reconnect replays and lists
// again.
func (w *watcher) unreplayed(ctx context.Context, events chan<- kernel.Event) error {
	q := url.Values{"approver": {w.pub}, "limit": {strconv.Itoa(httpapi.MaxListLimit)}}
	var list httpapi.PendingList
	if _, err := w.r.do(ctx, "GET", "/approvals/pending?"+q.Encode(), nil, &list); err != nil {
		return fmt.Errorf("listing the requests its replay left out: %w", err)
	}
	for _, req := range list.Approvals {
		if req == nil {
			continue
		}
		select {
		case events <- kernel.Event{Type: kernel.EventApprovalRequested, Approval: req}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if len(list.Approvals) == httpapi.MaxListLimit {
		fmt.Fprintf(w.e.Stderr, "%d or more requests you may decide are pending: the watch shows the oldest %d and new ones; GET /approvals/pending?approver=%s lists them\n",
			httpapi.MaxListLimit, httpapi.MaxListLimit, w.pub)
	}
	return nil
}
