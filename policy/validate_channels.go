package policy

// Validation of [channels.*]: addresses, transport security, secrets' env names.

import (
	"net"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
)

func (v *validator) channelConfigs() {
	c := v.p.Channels
	if w := c.Webhook; w != nil {
		base := k("channels", "webhook")
		if w.URL == "" {
			v.at(base, nil, "[channels.webhook] needs a url")
		} else if err := checkURL(w.URL); err != nil {
			v.at(base, k("url"), "url = %q: %v", shownURL(w.URL), err)
		}
		v.envName(base, "secret_env", w.SecretEnv, false)
		v.intRange(base, "retries", w.Retries, 0, MaxWebhookRetries)
	}
	if s := c.Slack; s != nil {
		base := k("channels", "slack")
		v.envName(base, "bot_token_env", s.BotTokenEnv, true)
		v.envName(base, "signing_secret_env", s.SigningSecretEnv, true)
		if strings.TrimSpace(s.Channel) == "" {
			v.at(base, k("channel"), "[channels.slack] needs a channel to post approval requests to (like \"#approvals\")")
		}
		if s.TeamID != "" && !slackTeamID.MatchString(s.TeamID) {
			v.at(base, k("team_id"), "team_id = %q is not a Slack workspace id (like \"T0123ABCD\"; an Enterprise Grid organisation's \"E…\" id is not accepted: pin the workspace)", s.TeamID)
		}
		if s.APIURL != "" {
			if err := checkURL(s.APIURL); err != nil {
				v.at(base, k("api_url"), "api_url = %q: %v", shownURL(s.APIURL), err)
			} else if u, _ := url.Parse(s.APIURL); u.Scheme == "http" && !LoopbackHost(u.Hostname()) {
				// Every call carries the bot token: never in clear
				// beyond this machine (tests' fake Slack is on loopback).
				v.at(base, k("api_url"), "api_url = %q must be https://: every call to it carries the bot token (http:// only to localhost or a loopback address)", s.APIURL)
			}
		}
	}
	if e := c.Email; e != nil {
		base := k("channels", "email")
		if e.SMTPAddr == "" {
			v.at(base, k("smtp_addr"), "[channels.email] needs smtp_addr, the mail server as host:port")
		} else if err := checkHostPort(e.SMTPAddr, false); err != nil {
			v.at(base, k("smtp_addr"), "smtp_addr = %q: %v", e.SMTPAddr, err)
		} else if smtpsPort(e.SMTPAddr) {
			// chiod greets in plain SMTP and upgrades with STARTTLS; a
			// relay on 465 waits for a TLS handshake first, so every
			// message would time out and no approver would be mailed.
			v.at(base, k("smtp_addr"), "smtp_addr = %q: port 465 is SMTPS (TLS from the first byte), which chio does not speak: use the relay's submission port, 587, with starttls = true", e.SMTPAddr)
		} else if e.UsernameEnv != "" && e.PasswordEnv != "" && !e.StartTLS && !smtpLoopback(e.SMTPAddr) {
			// net/smtp sends AUTH PLAIN credentials only over TLS or to
			// these loopback names: without STARTTLS every message to any
			// other relay would fail, and no approver would be mailed.
			v.at(base, k("smtp_addr"), "smtp_addr = %q with username_env and password_env needs starttls = true: "+
				"the credentials are sent only over TLS or to localhost, 127.0.0.1 or ::1, so every message would fail", e.SMTPAddr)
		}
		if e.From == "" {
			v.at(base, k("from"), "[channels.email] needs from, the sender address")
		} else if _, err := mail.ParseAddress(e.From); err != nil {
			v.at(base, k("from"), "from = %q is not an email address", e.From)
		}
		v.envName(base, "username_env", e.UsernameEnv, false)
		v.envName(base, "password_env", e.PasswordEnv, false)
		if (e.UsernameEnv == "") != (e.PasswordEnv == "") {
			v.at(base, k("username_env"), "username_env and password_env go together: set both for SMTP authentication, or neither")
		}
	}
}

// LoopbackHost reports whether host (no port) is "localhost" or a loopback
// IP address: where a secret or a call in clear never leaves the machine.
func LoopbackHost(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// smtpsPort reports whether addr's port is 465, SMTP over implicit TLS.
func smtpsPort(addr string) bool {
	_, port, _ := net.SplitHostPort(addr)
	n, err := strconv.Atoi(port)
	return err == nil && n == 465
}

// smtpLoopback reports whether addr's host is one net/smtp sends
// credentials to without TLS: exactly "localhost", "127.0.0.1" or "::1".
func smtpLoopback(addr string) bool {
	host, _, _ := net.SplitHostPort(addr)
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

// envName checks a key that names an environment variable holding a secret.
// The value is never echoed: if it is not a variable name, it may well be
// the secret itself.
func (v *validator) envName(base []string, name, val string, required bool) {
	switch {
	case val == "" && required:
		v.at(base, k(name), "%s is required: the name of the environment variable that holds the secret", name)
	case val != "" && !isEnvName(val):
		v.at(base, k(name), "%s must be the name of an environment variable (letters, digits and _, like SLACK_BOT_TOKEN); "+
			"put the secret itself in the environment, never in this file", name)
	}
}

func isEnvName(s string) bool {
	if s == "" || len(s) > MaxNameLen || '0' <= s[0] && s[0] <= '9' {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
