package daemon

import (
	"log/slog"
	"net"
	"net/url"

	"github.com/chiokernel/chio/policy"
)

// warnPlainHTTP logs a warning when chiod serves plain HTTP (no [kernel]
// tls_cert_file) on an address other machines may reach: the bearer
// tokens, approval tokens and session cookies its clients present then
// cross the network in clear. It does not refuse the start: chiod behind a
// TLS-terminating proxy is a sound deployment. Loopback is not warned of.
func warnPlainHTTP(log *slog.Logger, addr net.Addr, tls bool) {
	tcp, ok := addr.(*net.TCPAddr)
	if tls || (ok && tcp.IP.IsLoopback()) {
		return
	}
	log.Warn("serving plain HTTP beyond loopback: bearer tokens, approval tokens and session cookies cross the network in clear; "+
		"set [kernel] tls_cert_file and tls_key_file, or listen on loopback behind a TLS-terminating proxy", "addr", addr.String())
}

// warnPlainWebhook logs a warning when [channels.webhook] url is http://
// to a host other than loopback: every approval request (tool, arguments,
// agent) then crosses the network in clear. The signature still protects
// it from change, and a sidecar or mesh that adds TLS is a sound
// deployment, so it does not refuse the start. Only the host is logged:
// the URL's path or query may hold a token.
func warnPlainWebhook(log *slog.Logger, rawURL string) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "http" {
		return
	}
	if policy.LoopbackHost(u.Hostname()) {
		return
	}
	log.Warn("[channels.webhook] url is plain http:// beyond loopback: approval requests cross the network in clear; "+
		"use an https:// url", "host", u.Host)
}

// warnPlainPublicURL logs a warning when [kernel] public_url is http:// to
// a host other than loopback: approvers then reach chiod in clear whatever
// it listens on (a proxy in front that does not terminate TLS). The mailed
// links and Slack's buttons point there, the session cookie is not Secure,
// every request's arguments and each signed vote cross the network
// readable, and the dashboard cannot sign (WebCrypto needs HTTPS off
// loopback). It does not refuse the start, as for warnPlainHTTP.
func warnPlainPublicURL(log *slog.Logger, publicURL string) {
	u, err := url.Parse(publicURL)
	if err != nil || u.Scheme != "http" || policy.LoopbackHost(u.Hostname()) {
		return
	}
	log.Warn("[kernel] public_url is plain http:// beyond loopback: approvers' links, session cookies and votes cross the network in clear, "+
		"and the dashboard cannot sign there; publish chiod over https:// (a TLS-terminating proxy, or tls_cert_file)", "public_url", publicURL)
}
