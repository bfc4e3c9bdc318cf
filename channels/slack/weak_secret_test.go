package slack_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/channels/slack"
	"github.com/chiokernel/chio/policy"
)

// The signing secret is the only thing that tells a click from Slack from
// a forged one (and with slack_custodial a click signs a vote). chiod
// started with any non-empty secret: one of a few bytes, which an attacker
// can guess against /slack/interactions, or one carrying a pasted newline
// or space, against which no genuine click verifies. The bot token likewise
// with white space in it, which no Slack token holds. Each is
// refused at start, naming the variable and never echoing its value.
func TestMalformedSlackSecretsRefuseToStart(t *testing.T) {
	cfg := policy.Slack{BotTokenEnv: botEnv, SigningSecretEnv: secretEnv, Channel: "#approvals"}
	for name, c := range map[string]struct{ bot, secret, names string }{
		"one-byte signing secret":       {botToken, "x", secretEnv},
		"short signing secret":          {botToken, "hunter2hunter2", secretEnv},
		"signing secret with a newline": {botToken, secret + "\n", secretEnv},
		"signing secret with a space":   {botToken, " " + secret, secretEnv},
		"bot token with a newline":      {botToken + "\n", secret, botEnv},
		"bot token with an inner space": {"xoxb-1234 5678", secret, botEnv},
	} {
		env := map[string]string{botEnv: c.bot, secretEnv: c.secret}
		_, err := slack.New(cfg, slack.Options{Getenv: func(k string) string { return env[k] }})
		if err == nil {
			t.Errorf("%s: started", name)
			continue
		}
		if !strings.Contains(err.Error(), c.names) {
			t.Errorf("%s: %v, want the refusal to name %s", name, err, c.names)
		}
		for _, v := range []string{strings.TrimSpace(c.bot), strings.TrimSpace(c.secret)} {
			if len(v) >= 8 && strings.Contains(err.Error(), v) { // "x" is in any sentence
				t.Errorf("%s: the refusal %q echoes a secret", name, err)
			}
		}
	}
	env := map[string]string{botEnv: botToken, secretEnv: secret}
	if _, err := slack.New(cfg, slack.Options{Getenv: func(k string) string { return env[k] }}); err != nil {
		t.Fatalf("well-formed secrets: %v", err)
	}
}
