package daemon

import (
	"fmt"
	"log/slog"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels"
	"github.com/chiokernel/chio/channels/email"
	"github.com/chiokernel/chio/channels/poll"
	slackch "github.com/chiokernel/chio/channels/slack"
	"github.com/chiokernel/chio/channels/webhook"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
	"github.com/chiokernel/chio/policy"
)

// pushChannels are the configured channels that push notifications. The
// dashboard, poll and terminal channels are pull-based (SSE / GET) and need
// no push; poll is registered so its deliveries show in the metrics.
type pushChannels struct {
	list  []channels.Channel
	slack *slackch.Channel
	email *email.Channel
}

// buildChannels constructs every channel the policy configures. A channel
// whose secrets are missing stops start-up: a misconfigured channel would
// otherwise fail silently later.
func buildChannels(p *policy.Policy, key keys.PrivateKey, dataDir string, clk clock.Clock, log *slog.Logger,
	current func() *policy.Policy, stored func(approvalID string) (*approval.Request, error)) (*pushChannels, error) {
	pc := &pushChannels{list: []channels.Channel{poll.New()}}
	if cfg := p.Channels.Webhook; cfg != nil {
		signer := func(domain string, body []byte) []byte { return key.SignRaw(signed.Message(domain, body)) }
		// sent_at, the freshness a receiver checks, comes from the kernel's clock.
		wh, err := webhook.New(*cfg, signer, key.Public().String(), webhook.WithClock(clk.Now))
		if err != nil {
			return nil, fmt.Errorf("channels.webhook: %w", err)
		}
		warnPlainWebhook(log, cfg.URL)
		pc.list = append(pc.list, wh)
	}
	if cfg := p.Channels.Slack; cfg != nil {
		sc, err := slackch.New(*cfg, slackch.Options{PublicURL: p.Kernel.PublicURL, DataDir: dataDir, Policy: p, Clock: clk, Log: log})
		if err != nil {
			return nil, fmt.Errorf("channels.slack: %w", err)
		}
		pc.slack = sc
		pc.list = append(pc.list, sc)
	}
	if cfg := p.Channels.Email; cfg != nil {
		// Links expire at the request's deadline, on the kernel's clock;
		// a message goes out only while the stored request still asks it.
		ec, err := email.New(cfg, email.Options{PublicURL: p.Kernel.PublicURL, DataDir: dataDir, Policy: current, Now: clk.Now,
			Current: stored})
		if err != nil {
			return nil, fmt.Errorf("channels.email: %w", err)
		}
		pc.email = ec
		pc.list = append(pc.list, ec)
	}
	return pc, nil
}

func (pc *pushChannels) close() {
	if pc.slack != nil {
		pc.slack.Close()
	}
}
