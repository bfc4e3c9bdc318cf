package email

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/policy"
)

// username_env and password_env name secrets; chiod refuses to start when
// a named secret variable is unset (docs/platform.md), as the webhook's
// secret_env and Slack's tokens do. The email channel started anyway and
// then failed every message (an unset username) or sent an empty password
// the server refused, each request's notification retried and lost.
func TestUnsetCredentialVariablesRefuseToStart(t *testing.T) {
	cfg := &policy.Email{SMTPAddr: "smtp.example.com:587", From: "chio@example.com", StartTLS: true,
		UsernameEnv: "CHIO_SMTP_USER", PasswordEnv: "CHIO_SMTP_PASSWORD"}
	for _, env := range []map[string]string{
		{},
		{"CHIO_SMTP_USER": "chio"},
		{"CHIO_SMTP_PASSWORD": "hunter2"},
	} {
		_, err := New(cfg, Options{PublicURL: "http://x", Policy: func() *policy.Policy { return nil }, Secret: make([]byte, 32),
			Getenv: func(k string) string { return env[k] }})
		if err == nil || !strings.Contains(err.Error(), "is not set") {
			t.Fatalf("with %v set: New = %v, want a refusal naming the unset variable", keysOf(env), err)
		}
	}
	both := map[string]string{"CHIO_SMTP_USER": "chio", "CHIO_SMTP_PASSWORD": "pw"}
	if _, err := New(cfg, Options{PublicURL: "http://x", Policy: func() *policy.Policy { return nil }, Secret: make([]byte, 32),
		Getenv: func(k string) string { return both[k] }}); err != nil {
		t.Fatalf("both set: %v", err)
	}
}

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
