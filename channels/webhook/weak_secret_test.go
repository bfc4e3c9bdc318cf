package webhook_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/channels/webhook"
	"github.com/chiokernel/chio/policy"
)

// A receiver that checks X-Chio-Webhook-Secret-Signature trusts whoever
// knows secret_env's value. chiod started with any non-empty one: a few
// bytes, which anyone can guess from one delivery and then sign forged
// notifications with, or one with a pasted newline, whose HMAC no receiver
// holding the secret itself computes. Both are refused at start, naming
// the variable and never echoing its value.
func TestWeakWebhookSecretRefusesToStart(t *testing.T) {
	const env = "CHIO_TEST_WEBHOOK_WEAK_SECRET"
	pub := kernelKey.Public().String()
	cfg := policy.Webhook{URL: "https://hooks.example.com/chio", SecretEnv: env}
	for _, v := range []string{"s", "s3cret", "0123456789abcde", "0123456789abcdef0123\n", "0123456789 abcdef0123"} {
		t.Setenv(env, v)
		_, err := webhook.New(cfg, signer, pub)
		if err == nil {
			t.Errorf("secret %q: started", v)
			continue
		}
		if !strings.Contains(err.Error(), env) {
			t.Errorf("secret %q: %v, want the refusal to name %s", v, err, env)
		}
		if len(v) >= 6 && strings.Contains(err.Error(), strings.TrimSpace(v)) {
			t.Errorf("the refusal %q echoes the secret", err)
		}
	}
	t.Setenv(env, "0123456789abcdef")
	if _, err := webhook.New(cfg, signer, pub); err != nil {
		t.Fatalf("a 16-byte secret: %v", err)
	}
}
