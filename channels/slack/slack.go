// Package slack is the Slack channel ([channels.slack]): one Block Kit
// message per approval request in the configured channel, updated as the
// request escalates and when it is resolved (from any channel), and an
// interactions endpoint (POST /slack/interactions) for its buttons.
//
// # Messages
//
// On approval.requested the channel posts to [channels.slack] channel: the
// summary, the amount (the one the kernel derived from the arguments, else
// the intent's max_amount marked "declared by the agent", as the dashboard
// shows it), the purpose, action_category and context of the governed
// intent (which the approval binds, as the dashboard shows), the requesting agent
// (its capability's label, and its short key), the tool, the deadline, quorum progress and the kind, with
// Approve / Deny buttons (value = the approval id) and a "Review & sign"
// link button to PUBLIC_URL/dashboard/#request=<id>. A question request has
// no Approve button: its answers are given in the dashboard. Nor has a
// request that Slack's length limits cut (summary, amount, the intent's
// purpose, category or context, tool or arguments): the message says so and points to the dashboard, and a click
// on Approve for it is refused (see click), so nobody signs what they were
// not shown. Deny stays.
// approval.escalated and approval.resolved update that message in place
// (chat.update; a message deleted meanwhile is posted again while the
// request is pending): the new tier, or who decided what and the receipt (and,
// when an approver amended the call, the arguments approved instead). A click
// on a request already decided, or by an approver who already voted,
// updates the message too: what it did not show is lost when chiod stops
// right after the decision or the vote's commit.
//
// Where a message is remembered: each request's (channel, ts) is kept in
// memory and written to <data_dir>/slack/messages/<approval_id>.json
// (0600, atomically and durably), so a restart still updates the right
// message; one a crash left unreadable counts as a post whose answer was
// lost (below). A
// resolution that arrives before the request's message was posted (the hub
// may deliver one request's events out of order) leaves a tombstone so the
// late approval.requested posts nothing stale. References of resolved
// requests are pruned MessageRetention after resolution, at start.
//
// Slack has no idempotent chat.postMessage: when its answer is lost (the
// connection drops, the attempt times out, chiod stops) after Slack took
// the message, chiod cannot know the message exists, and the retry posts
// another. So the intent to post is written before posting; a post that
// finds it posts again (approvers must be told) with a notice that an
// earlier message for the request may be in the channel and is never
// updated, on this message and its updates. A post Slack refused (it
// answered with an error) posted nothing and leaves no such notice.
//
// # Interactions
//
// InteractionsHandler serves POST /slack/interactions. In order: the raw
// body is read with a MaxInteractionBody limit and a read deadline
// (Options.BodyReadTimeout, default DefaultBodyReadTimeout); Slack's v0
// signature is checked (HMAC-SHA256 with the signing secret over
// "v0:<X-Slack-Request-Timestamp>:<raw body>", constant-time compare with
// X-Slack-Signature); the timestamp must be within ±SignatureWindow of the
// injected clock; a signature already seen inside the window is a replay.
// Any failure there answers 401 and changes nothing. Only then is the
// `payload` form field parsed.
//
// A click on Approve / Deny is mapped to an approver of the request's grant
// through contact.slack (see MatchSlackUser): an unmapped user gets an
// ephemeral "you are not an approver for this request" and nothing changes.
// A click signs only when the grant says slack_custodial = true and chiod
// holds that approver's custodial key (see custodial.go): chiod then signs a
// token for the approver, presents it through the kernel's respond path
// with channel "slack" and Custodial set, so the receipt says
// `custodial: true`. Otherwise the click answers (ephemeral) with the
// dashboard link, where the approver signs with their own key.
//
// Replays and restarts: the replay cache is in memory. A restart inside the
// window could accept a replayed click once more, but every click is bound
// to one approver and one request, and the kernel counts one vote per
// approver: a replayed click can only repeat a vote already cast (refused
// as a duplicate) or land on a resolved request (refused as a conflict).
package slack

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/policy"
)

// Name is the channel name used in policies, receipts and metrics.
const Name = "slack"

// Options are what New needs besides [channels.slack].
type Options struct {
	// PublicURL is [kernel] public_url: dashboard links are built on it.
	PublicURL string
	// DataDir is [kernel] data_dir. Message references live in
	// DataDir/slack/messages and custodial keys in DataDir/custodial.
	// Empty keeps references in memory only and loads no custodial key.
	DataDir string
	// Policy is the policy at start: custodial keys are loaded for the
	// approvers of its slack_custodial grants.
	Policy *policy.Policy
	// Clock checks interaction timestamps and dates tokens (default real).
	Clock clock.Clock
	// Getenv reads the bot token and signing secret (default os.Getenv).
	Getenv func(string) string
	// HTTPClient talks to the Slack API (default: 10 s timeout).
	HTTPClient *http.Client
	// Log receives warnings (default: discarded).
	Log *slog.Logger
	// AckTimeout: see DefaultAckTimeout.
	AckTimeout time.Duration
	// BodyReadTimeout: see DefaultBodyReadTimeout.
	BodyReadTimeout time.Duration
}

// Channel posts and updates Slack messages and serves the interactions
// endpoint. Safe for concurrent use.
type Channel struct {
	api        *slackapi.Client
	channel    string
	teamID     string // [channels.slack] team_id: "" trusts any workspace
	secret     []byte
	publicURL  string
	clock      clock.Clock
	log        *slog.Logger
	ackTimeout time.Duration
	bodyRead   time.Duration              // see DefaultBodyReadTimeout
	custodial  map[string]keys.PrivateKey // approver public key → key chiod holds
	refs       *refStore
	locks      [64]sync.Mutex // per-approval serialisation of post/update
	seen       *replayCache
	bg         sync.WaitGroup // votes still running after their ack
}

var _ channels.Channel = (*Channel)(nil)

// New builds the channel. It fails closed: an unset bot token or signing
// secret, an unreadable data dir, or a custodial key file that does not
// belong to its approver is an error at start.
func New(cfg policy.Slack, o Options) (*Channel, error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.AckTimeout <= 0 {
		o.AckTimeout = DefaultAckTimeout
	}
	if o.BodyReadTimeout <= 0 {
		o.BodyReadTimeout = DefaultBodyReadTimeout
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if strings.TrimSpace(cfg.Channel) == "" {
		return nil, errors.New("slack: [channels.slack] needs a channel")
	}
	if cfg.BotTokenEnv == "" || o.Getenv(cfg.BotTokenEnv) == "" {
		return nil, fmt.Errorf("slack: bot_token_env %q is not set: refusing to start without the bot token", cfg.BotTokenEnv)
	}
	if cfg.SigningSecretEnv == "" || o.Getenv(cfg.SigningSecretEnv) == "" {
		return nil, fmt.Errorf("slack: signing_secret_env %q is not set: refusing to start without the signing secret (interactions could not be verified)", cfg.SigningSecretEnv)
	}
	// A short signing secret could be guessed, and then anyone could click
	// as any user; white space in either value (a pasted newline) would
	// fail every click or every post. Refused now, not at each request.
	if err := channels.CheckSecret(cfg.BotTokenEnv, o.Getenv(cfg.BotTokenEnv), 1); err != nil {
		return nil, fmt.Errorf("slack: bot_token_env %w", err)
	}
	if err := channels.CheckSecret(cfg.SigningSecretEnv, o.Getenv(cfg.SigningSecretEnv), channels.MinSecretBytes); err != nil {
		return nil, fmt.Errorf("slack: signing_secret_env %w", err)
	}
	apiOpts := []slackapi.Option{slackapi.OptionHTTPClient(o.HTTPClient)}
	if cfg.APIURL != "" {
		apiOpts = append(apiOpts, slackapi.OptionAPIURL(strings.TrimRight(cfg.APIURL, "/")+"/"))
	}
	c := &Channel{
		api:        slackapi.New(o.Getenv(cfg.BotTokenEnv), apiOpts...),
		channel:    cfg.Channel,
		teamID:     cfg.TeamID,
		secret:     []byte(o.Getenv(cfg.SigningSecretEnv)),
		publicURL:  strings.TrimRight(o.PublicURL, "/"),
		clock:      o.Clock,
		log:        o.Log,
		ackTimeout: o.AckTimeout,
		bodyRead:   o.BodyReadTimeout,
		custodial:  map[string]keys.PrivateKey{},
		seen:       newReplayCache(MaxSeenSignatures),
	}
	var err error
	if c.refs, err = openRefStore(o.DataDir, o.Clock.Now()); err != nil {
		return nil, err
	}
	if o.DataDir != "" && o.Policy != nil {
		if c.custodial, err = LoadCustodialKeys(o.DataDir, o.Policy); err != nil {
			return nil, err
		}
		if c.teamID == "" && len(c.custodial) > 0 {
			c.log.Warn("[channels.slack] team_id is not set: a custodial click is trusted on its Slack user id from any workspace the app reaches " +
				"(Slack Connect shares channels across organisations); set team_id to your workspace's id")
		}
		for _, missing := range custodialMissing(o.Policy, c.custodial) {
			c.log.Warn("slack_custodial approver has no custodial key: Slack clicks will send them to the dashboard",
				"approver", missing.DisplayName, "public_key", missing.PublicKey.String(),
				"path", CustodialKeyPath(o.DataDir, missing.PublicKey))
		}
	}
	return c, nil
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return Name }

// CustodialKeys returns the approver public keys chiod holds custodial
// keys for.
func (c *Channel) CustodialKeys() []string {
	out := make([]string, 0, len(c.custodial))
	for k := range c.custodial {
		out = append(out, k)
	}
	return out
}

// Close waits for votes still running after their click was acknowledged
// (call it before closing the kernel's store).
func (c *Channel) Close() error {
	c.bg.Wait()
	return nil
}

// DashboardURL is where an approver reviews and signs the request.
func (c *Channel) DashboardURL(approvalID string) string {
	return c.publicURL + "/dashboard/#request=" + approvalID
}

func (c *Channel) lock(id string) func() {
	h := fnv.New32a()
	h.Write([]byte(id))
	m := &c.locks[h.Sum32()%uint32(len(c.locks))]
	m.Lock()
	return m.Unlock
}

// Deliver implements channels.Channel: it posts the request's message the
// first time, and afterwards updates it when req is a later state than the
// one shown (escalated, more votes, resolved). The event name only labels;
// the request's own state decides, since the hub may deliver one request's
// events out of order.
func (c *Channel) Deliver(ctx context.Context, event string, req *approval.Request) error {
	if req == nil || !validApprovalID(req.ApprovalID) {
		return fmt.Errorf("%w: no valid approval id", channels.ErrPermanent)
	}
	return c.sync(ctx, req)
}

// sync brings the Slack message of req up to req's state.
func (c *Channel) sync(ctx context.Context, req *approval.Request) error {
	defer c.lock(req.ApprovalID)()
	ref, ok, err := c.refs.get(req.ApprovalID)
	if err != nil {
		return err
	}
	st := stateOf(req)
	switch {
	case ok && !ref.Posting && !st.after(ref.state):
		return nil // shown already, or older than what is shown
	case !ok && st.Final:
		// Resolved before its message was posted: remember that, so the
		// late approval.requested posts nothing stale.
		return c.refs.put(req.ApprovalID, msgRef{state: st, UpdatedAt: c.clock.Now().Unix()})
	}
	blocks, text, _ := c.render(req)
	if ref.Reposted || ref.Posting {
		blocks = append(blocks, slackapi.NewContextBlock("chio_reposted", mrkdwn(repostedNotice)))
	}
	opts := []slackapi.MsgOption{slackapi.MsgOptionBlocks(blocks...), slackapi.MsgOptionText(text, false)}
	updated := false
	if ok && ref.TS != "" {
		_, _, _, err := c.api.UpdateMessageContext(ctx, ref.Channel, ref.TS, opts...)
		var se slackapi.SlackErrorResponse
		switch {
		case err == nil:
			ref.state, updated = st, true
		case !errors.As(err, &se) || se.Err != "message_not_found":
			return classify("chat.update", err)
		case st.Final: // deleted, and nothing is left to ask
			return c.refs.put(req.ApprovalID, msgRef{state: st, UpdatedAt: c.clock.Now().Unix()})
		default:
			// Deleted (an admin, a retention policy) while approvers are
			// still to be told: posted again.
			ref = msgRef{Reposted: ref.Reposted}
		}
	}
	if !updated {
		// Slack has no idempotent post: record the intent first, so a post
		// whose answer is lost (or a stop before its ts is written) is
		// known on the next attempt, whose message then says so.
		intent := msgRef{Posting: true, Reposted: ref.Reposted || ref.Posting, state: st, UpdatedAt: c.clock.Now().Unix()}
		if err := c.refs.put(req.ApprovalID, intent); err != nil {
			return err
		}
		chID, ts, err := c.api.PostMessageContext(ctx, c.channel, opts...)
		if err != nil {
			if postRefused(err) { // Slack answered: nothing was posted
				err = errors.Join(err, c.refs.restore(req.ApprovalID, ref, ok))
			}
			return classify("chat.postMessage", err)
		}
		ref = msgRef{Channel: chID, TS: ts, state: st, Reposted: intent.Reposted}
	}
	ref.UpdatedAt = c.clock.Now().Unix()
	return c.refs.put(req.ApprovalID, ref)
}

// repostedNotice is shown on a message posted after an earlier post of
// the same request may have reached Slack unanswered: chiod cannot update
// that one, so it may still offer its buttons after the request is decided
// (a click on it is decided from the request as it is now, so it misleads
// but decides nothing the request does not allow).
const repostedNotice = ":warning: chio lost Slack's answer to an earlier post, so an earlier message for this request may be in this channel: " +
	"that one is never updated. This message shows the request's current state."

// postRefused reports whether Slack answered a chat.postMessage with a
// refusal (an error response, a rate limit, a 4xx status): the message
// was not posted. Any other error (a dropped connection, a timeout, a 5xx)
// leaves it unknown whether Slack posted it, and so do internal_error and
// fatal_error, which Slack documents as "it's possible some aspect of the
// operation succeeded".
func postRefused(err error) bool {
	var rl *slackapi.RateLimitedError
	var se slackapi.SlackErrorResponse
	var sre slackapi.StatusCodeError
	switch {
	case errors.As(err, &rl):
		return true
	case errors.As(err, &se):
		return se.Err != "internal_error" && se.Err != "fatal_error"
	}
	return errors.As(err, &sre) && sre.Code >= 400 && sre.Code < 500
}

// classify marks Slack API errors retrying cannot fix as permanent.
func classify(method string, err error) error {
	var rl *slackapi.RateLimitedError
	if errors.As(err, &rl) {
		return fmt.Errorf("slack %s: %w", method, err)
	}
	var se slackapi.SlackErrorResponse
	if errors.As(err, &se) {
		switch se.Err {
		case "internal_error", "fatal_error", "service_unavailable", "request_timeout", "ratelimited":
			return fmt.Errorf("slack %s: %w", method, err)
		}
		return fmt.Errorf("%w: slack %s: %s", channels.ErrPermanent, method, se.Err)
	}
	var sre slackapi.StatusCodeError
	if errors.As(err, &sre) && sre.Code >= 400 && sre.Code < 500 && sre.Code != http.StatusTooManyRequests && sre.Code != http.StatusRequestTimeout {
		return fmt.Errorf("%w: slack %s: %v", channels.ErrPermanent, method, err)
	}
	return fmt.Errorf("slack %s: %w", method, err)
}

var approvalIDRE = regexp.MustCompile(`^ar-[0-9a-f-]{8,64}$`)

func validApprovalID(id string) bool { return approvalIDRE.MatchString(id) }
