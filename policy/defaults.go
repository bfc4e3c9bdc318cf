package policy

import (
	"net"
	"slices"
)

// Defaults are set on each table before the file's values are copied over
// it, so a value written in the file always wins, and one written as the
// default hashes the same as one left out. A value the file sets to
// something invalid (quorum = 0) is then caught by validation rather than
// silently replaced.

const (
	DefaultListen               = "127.0.0.1:7420"
	DefaultDataDir              = "./chio-data"
	DefaultCheckpointEvery      = 1000
	DefaultCheckpointInterval   = 10
	DefaultServerTimeoutSeconds = 10
	DefaultAction               = "invoke"
	DefaultOperation            = "invoke"
	DefaultApprovalTimeout      = 3600
	DefaultWebhookRetries       = 5
	TimeoutDeny                 = "deny"
	TimeoutEscalate             = "escalate"
	TimeoutAutoApproveAdvisory  = "auto_approve_advisory"
	OnTriggerDeny               = "deny"
	OnTriggerRequireApproval    = "require_approval"
	TransportHTTP               = "http"
	TransportBuiltin            = "builtin"
	TransportMCP                = "mcp"
)

// defaulter is implemented by tables with defaults; the decoder calls it
// when it starts on a table.
type defaulter interface{ setDefaults() }

func (p *Policy) setDefaults() {
	p.Kernel.setDefaults()
	p.Receipts.setDefaults()
	p.Store.setDefaults()
	p.Channels.Dashboard = &Dashboard{}
	p.Channels.Dashboard.setDefaults()
}

func (k *Kernel) setDefaults() {
	k.Listen = DefaultListen
	k.DataDir = DefaultDataDir
}

func (r *Receipts) setDefaults() {
	r.CheckpointEvery = DefaultCheckpointEvery
	r.CheckpointIntervalSeconds = DefaultCheckpointInterval
}

func (s *Server) setDefaults()  { s.TimeoutSeconds = DefaultServerTimeoutSeconds }
func (t *Tool) setDefaults()    { t.Action = DefaultAction }
func (g *Grant) setDefaults()   { g.Operations = []string{DefaultOperation} }
func (w *Webhook) setDefaults() { w.Retries = DefaultWebhookRetries }
func (d *Dashboard) setDefaults() {
	d.Enabled = true
}

func (a *Approval) setDefaults() {
	a.TimeoutSeconds = DefaultApprovalTimeout
	a.TimeoutAction = TimeoutDeny
	a.Quorum = 1
	a.DenyQuorum = 1
	a.Channels = []string{"dashboard"}
}

func (e *Escalation) setDefaults() { e.TerminalAction = TimeoutDeny }

// deriveDefaults fills the defaults that depend on other values; it runs
// after decoding, before validation.
func (p *Policy) deriveDefaults() {
	if p.Kernel.PublicURL == "" {
		p.Kernel.PublicURL = defaultPublicURL(p.Kernel)
	}
	for i := range p.Grants {
		a := p.Grants[i].Approval
		if a == nil || a.Escalation == nil {
			continue
		}
		for j := range a.Escalation.Tiers {
			if t := &a.Escalation.Tiers[j]; t.Channels == nil {
				t.Channels = slices.Clone(a.Channels)
			}
		}
	}
}

// defaultPublicURL is where a browser or a channel link reaches chiod when
// the file does not say: the listen address, with a wildcard host replaced
// by loopback (a link to 0.0.0.0 works nowhere else).
func defaultPublicURL(k Kernel) string {
	scheme := "http://"
	if k.TLSCertFile != "" {
		scheme = "https://"
	}
	host, port, err := net.SplitHostPort(k.Listen)
	if err != nil {
		return scheme + k.Listen // validation reports the bad listen address
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return scheme + net.JoinHostPort(host, port)
}

// DefaultPublicURL is the public_url a [kernel] table gets when it sets
// none (chiod re-derives it when -listen overrides the address).
func DefaultPublicURL(k Kernel) string { return defaultPublicURL(k) }
