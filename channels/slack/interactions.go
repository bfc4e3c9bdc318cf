package slack

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// InteractionsPath is the route chiod serves the handler on.
const InteractionsPath = "/slack/interactions"

// Header names of Slack's request signing.
const (
	HeaderTimestamp = "X-Slack-Request-Timestamp"
	HeaderSignature = "X-Slack-Signature"
)

// Kernel is what the interactions endpoint needs from the kernel
// (*kernel.Kernel implements it).
type Kernel interface {
	Approval(id string) (*approval.Request, error)
	Policy() *policy.Policy
	RespondWith(ctx context.Context, approvalID string, tokenRaw []byte, o kernel.RespondOptions) (*kernel.RespondResult, error)
}

// Verification failures (all answered 401; nothing is parsed or changed).
var (
	ErrBadSignature = errors.New("slack: request signature does not verify")
	ErrStale        = errors.New("slack: request timestamp outside the allowed window")
	ErrReplay       = errors.New("slack: request already seen")
	errReplayFull   = errors.New("slack: replay cache full")
)

// Sign computes the X-Slack-Signature Slack sends for body at timestamp ts
// (tests and tools that simulate Slack use it).
func Sign(secret []byte, ts string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("v0:" + ts + ":"))
	m.Write(body)
	return "v0=" + hex.EncodeToString(m.Sum(nil))
}

// Verify checks Slack's v0 signature over the raw body, the timestamp
// window against now, and records the signature so a replay is refused.
func (c *Channel) Verify(h http.Header, body []byte, now time.Time) error {
	tsHdr, sig := h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if tsHdr == "" || len(tsHdr) > 12 || sig == "" {
		return ErrBadSignature
	}
	ts, err := strconv.ParseInt(tsHdr, 10, 64)
	if err != nil || ts <= 0 {
		return ErrBadSignature
	}
	if !hmac.Equal([]byte(Sign(c.secret, tsHdr, body)), []byte(sig)) {
		return ErrBadSignature
	}
	at := time.Unix(ts, 0)
	if d := now.Sub(at); d > SignatureWindow || d < -SignatureWindow {
		return ErrStale
	}
	return c.seen.add(sig, at.Add(SignatureWindow), now)
}

// replayCache remembers signatures until their timestamp leaves the window.
type replayCache struct {
	mu   sync.Mutex
	max  int
	seen map[string]time.Time // signature → when it stops mattering
}

func newReplayCache(max int) *replayCache {
	return &replayCache{max: max, seen: map[string]time.Time{}}
}

func (r *replayCache) add(sig string, until, now time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if exp, ok := r.seen[sig]; ok && !now.After(exp) {
		return ErrReplay
	}
	if len(r.seen) >= r.max {
		for s, exp := range r.seen {
			if now.After(exp) {
				delete(r.seen, s)
			}
		}
		if len(r.seen) >= r.max {
			return errReplayFull
		}
	}
	r.seen[sig] = until
	return nil
}

// payload is the part of a block_actions interaction chiod reads.
type payload struct {
	Type string    `json:"type"`
	User SlackUser `json:"user"`
	Team struct {
		ID string `json:"id"`
	} `json:"team"`
	Channel struct {
		ID string `json:"id"`
	} `json:"channel"`
	Container struct {
		ChannelID string `json:"channel_id"`
		MessageTS string `json:"message_ts"`
	} `json:"container"`
	Actions []struct {
		ActionID string `json:"action_id"`
		BlockID  string `json:"block_id"`
		Value    string `json:"value"`
	} `json:"actions"`
}

// InteractionsHandler serves POST /slack/interactions for k.
func (c *Channel) InteractionsHandler(k Kernel) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		// The body is read before it is authenticated: bound it in time
		// as well as in size. A socket deadline is wall-clock time, not the
		// injected clock's. http.ErrNotSupported means the writer has no
		// connection to bound (httptest's recorder; chiod mounts this
		// handler on net/http's own writer, which has one); any other
		// error fails closed.
		if err := http.NewResponseController(w).SetReadDeadline(time.Now().Add(c.bodyRead)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			c.log.Warn("slack interaction refused: cannot bound the body read", "err", err, "remote", r.RemoteAddr)
			http.Error(w, "cannot bound the body read", http.StatusServiceUnavailable)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxInteractionBody))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "cannot read body", http.StatusBadRequest)
			return
		}
		if err := c.Verify(r.Header, body, c.clock.Now()); err != nil {
			c.log.Warn("slack interaction refused", "err", err, "remote", r.RemoteAddr)
			if errors.Is(err, errReplayFull) {
				http.Error(w, "busy", http.StatusServiceUnavailable)
				return
			}
			http.Error(w, "invalid request signature", http.StatusUnauthorized)
			return
		}
		form, err := url.ParseQuery(string(body))
		if err != nil || form.Get("payload") == "" {
			http.Error(w, "no payload", http.StatusBadRequest)
			return
		}
		var p payload
		if err := json.Unmarshal([]byte(form.Get("payload")), &p); err != nil {
			http.Error(w, "bad payload", http.StatusBadRequest)
			return
		}
		decision, id := "", ""
		if p.Type == "block_actions" {
			for _, a := range p.Actions {
				switch a.ActionID {
				case ActionApprove:
					decision, id = approval.DecisionApproved, a.Value
				case ActionDeny:
					decision, id = approval.DecisionDenied, a.Value
				default:
					continue
				}
				break
			}
		}
		if decision == "" { // the link button, or something chiod did not send
			w.WriteHeader(http.StatusOK)
			return
		}
		// Answer Slack within its 3 s; a vote that dispatches a slow tool
		// goes on, and its outcome is posted when it is known.
		done := make(chan struct{})
		c.bg.Go(func() {
			defer close(done)
			reply := c.click(k, &p, id, decision)
			c.ephemeral(&p, reply)
		})
		select {
		case <-done:
		case <-time.After(c.ackTimeout):
		}
		w.WriteHeader(http.StatusOK)
	})
}

// click decides what an authenticated Approve / Deny click does and
// returns the ephemeral answer for the clicker.
func (c *Channel) click(k Kernel, p *payload, id, decision string) string {
	if !validApprovalID(id) {
		return "This button does not name an approval request."
	}
	if !c.fromPinnedTeam(p) {
		c.log.Warn("slack click refused: not from the pinned workspace", "approval_id", id,
			"user", p.User.ID, "user_team", p.User.TeamID, "team", p.Team.ID, "team_id", c.teamID)
		return "Clicks from this Slack workspace do not decide chio requests; ask an approver of your organisation."
	}
	req, err := k.Approval(id)
	if err != nil {
		return "Approval request " + id + " was not found."
	}
	link := fmt.Sprintf("<%s|Review & sign in the dashboard>", c.DashboardURL(id))
	if req.Status != approval.StatusPending {
		// The message may still offer its buttons: the decision's
		// approval.resolved is lost when chiod stops after its commit (the
		// hub's queue is in memory; a start re-announces pending requests
		// only). Show the decision now.
		c.refresh(req)
		return fmt.Sprintf("This request is already %s.", req.Status)
	}
	g, ok := k.Policy().Grant(req.PolicyID)
	if !ok || g.Approval == nil {
		return "This request's grant is no longer in the policy."
	}
	ap, ok := matchApprover(g.Approval, req, p.User)
	if !ok {
		return "You are not an approver for this request."
	}
	// The kernel never counts a vote by the calling agent's key on its own
	// call, nor a requester's (MayDecide, the rule Verify applies): say so,
	// rather than link to the dashboard to sign (or sign custodially) a
	// vote it refuses.
	if !req.MayDecide(ap.PublicKey.String()) {
		return "This call was made with your own key (or the grant lists you as a requester): " +
			"the kernel never counts your vote on it; another approver decides it."
	}
	if !g.Approval.SlackCustodial {
		return "This request must be signed with your own key: " + link + "."
	}
	if req.Kind == approval.KindQuestion && decision == approval.DecisionApproved {
		return "This request asks questions; answer them in the dashboard: " + link + "."
	}
	// An approval signs for the whole request. When the message could not
	// show all of it, no click approves: decided from the request as it is
	// now, never from the click, so an old or forged Approve button fails.
	if decision == approval.DecisionApproved {
		if _, _, complete := c.render(req); !complete {
			return "This request is too long for Slack to show in full, so a click cannot approve it; " +
				"read all of it and sign in the dashboard: " + link + "."
		}
	}
	key, ok := c.custodial[ap.PublicKey.String()]
	if !ok {
		return "chiod holds no custodial key for you, so a click cannot sign: " + link + "."
	}
	now := c.clock.Now()
	tok := approval.NewToken(req, key.Public(), decision, now, CustodialTokenTTL)
	verb := map[string]string{approval.DecisionApproved: "approved", approval.DecisionDenied: "denied"}[decision]
	tok.Note = fmt.Sprintf("%s in Slack by %s (custodial key)", verb, slackWho(p.User))
	raw, err := tok.Sign(key)
	if err != nil {
		return "Signing failed: " + escape(err.Error())
	}
	res, err := k.RespondWith(context.Background(), id, raw,
		kernel.RespondOptions{Outcome: decision, Channel: Name, Custodial: true})
	if rec := (*kernel.VoteRecordedError)(nil); errors.As(err, &rec) {
		// The vote committed (it approved the request); only a step after
		// it failed. Never "not recorded": the approver would click again
		// or ask someone else to vote on a decision already taken.
		c.log.Warn("slack custodial vote recorded; the approved call is not finished", "approval_id", id, "approver", ap.DisplayName, "err", err)
		return fmt.Sprintf("Your approval of %s is recorded (signed with your custodial key) and approved it, but the approved call "+
			"is not finished yet: %s. chio finishes it once its store recovers; do not vote again.", id, escape(rec.Err.Error()))
	}
	if errors.Is(err, kernel.ErrVoteUncertain) {
		// The vote's commit failed but may have reached the disk: neither
		// "recorded" nor "not recorded" is known to be true. A second click
		// tells: a vote already recorded is refused as already cast.
		c.log.Warn("slack custodial vote may or may not be recorded", "approval_id", id, "approver", ap.DisplayName, "err", err)
		return "chio could not confirm whether your vote on " + id + " was recorded (its store failed while saving it). " +
			"Click again once it is back: if your vote was recorded you will be told you have already voted; it is never counted twice."
	}
	if err != nil {
		c.log.Warn("slack custodial vote refused", "approval_id", id, "approver", ap.DisplayName, "err", err)
		switch {
		case errors.Is(err, approval.ErrDuplicateVote):
			// The message may not show that vote: chiod may have stopped
			// between its commit and the update below.
			if cur, err := k.Approval(id); err == nil {
				c.refresh(cur)
			}
			return "You have already voted on this request."
		case errors.Is(err, kernel.ErrConflict), errors.Is(err, approval.ErrNotPending):
			return "This request was resolved before your vote arrived."
		}
		return "Your vote was not recorded: " + escape(err.Error())
	}
	// Quorum progress does not re-notify channels: show it here. A
	// resolution arrives through the hub as well; updates are idempotent.
	if cur, err := k.Approval(id); err == nil {
		c.refresh(cur)
	}
	switch res.Outcome {
	case approval.StatusApproved:
		return fmt.Sprintf("You approved %s (signed with your custodial key); receipt %s.", id, res.ReceiptID)
	case approval.StatusDenied:
		return fmt.Sprintf("You denied %s (signed with your custodial key); receipt %s.", id, res.ReceiptID)
	}
	return fmt.Sprintf("Your approval of %s is recorded: %d of %d approvals.", id, res.Approvals, res.Quorum)
}

// fromPinnedTeam reports whether the click may be taken at its user id's
// word: always when no team_id is pinned; else only when both the
// workspace the click came from (team.id) and the clicker's own
// workspace (user.team_id, another organisation's for a Slack Connect
// guest) are the pinned one. A payload that names neither is refused.
func (c *Channel) fromPinnedTeam(p *payload) bool {
	if c.teamID == "" {
		return true
	}
	return p.Team.ID == c.teamID && p.User.TeamID == c.teamID
}

// refresh brings req's message up to req's state (idempotent: a message
// already showing it is left alone), logging a failure.
func (c *Channel) refresh(req *approval.Request) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.sync(ctx, req); err != nil {
		c.log.Warn("slack message update failed", "approval_id", req.ApprovalID, "err", err)
	}
}

// matchApprover finds the grant approver the Slack user is, among those
// the request currently trusts (escalation tiers widen that set). If one
// Slack user maps to several approvers, the first that has not voted wins.
func matchApprover(a *policy.Approval, req *approval.Request, u SlackUser) (policy.Approver, bool) {
	var found []policy.Approver
	for _, ap := range a.Approvers {
		// A custodial click signs with the approver's key, so only the
		// immutable Slack user id identifies them there; handles can be
		// renamed or shared and are accepted only for non-signing replies.
		if a.SlackCustodial && !slackUserID.MatchString(strings.TrimSpace(ap.Contact.Slack)) {
			continue
		}
		if MatchSlackUser(ap.Contact.Slack, u) && req.Trusts(ap.PublicKey.String()) {
			found = append(found, ap)
		}
	}
	// One Slack user mapped to several approvers would let one person fill a
	// quorum: refuse rather than pick.
	if len(found) != 1 {
		return policy.Approver{}, false
	}
	return found[0], true
}

func slackWho(u SlackUser) string {
	s := u.ID
	if n := u.Username; n != "" {
		s += " (@" + n + ")"
	}
	return s
}

// ephemeral shows text (mrkdwn, already escaped) to the clicker only (chat.postEphemeral through the
// configured API, never to a URL taken from the payload).
func (c *Channel) ephemeral(p *payload, text string) {
	ch := p.Channel.ID
	if ch == "" {
		ch = p.Container.ChannelID
	}
	if ch == "" || p.User.ID == "" || text == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.api.PostEphemeralContext(ctx, ch, p.User.ID, slackapi.MsgOptionText(text, false)); err != nil {
		c.log.Warn("slack ephemeral reply failed", "err", err)
	}
}
