package channels

import (
	"fmt"
	"unicode"
)

// MinSecretBytes is the shortest shared secret a channel takes from the
// environment (Slack's signing secret, the webhook's secret_env): a
// shorter one could be guessed, and anything that knows it can sign as
// the other side. Slack's own signing secrets are 32 characters.
const MinSecretBytes = 16

// CheckSecret refuses a secret read from the environment variable env that
// is shorter than minBytes or holds white space or control characters (a
// pasted newline, a quote's stray space): no value the secret's issuer
// hands out looks like that, and one that does would never verify. The
// error names env and never quotes the value, which may be most of the
// real secret.
func CheckSecret(env, value string, minBytes int) error {
	if len(value) < minBytes {
		return fmt.Errorf("%s is shorter than %d bytes: set it to the whole secret", env, minBytes)
	}
	for _, r := range value {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("%s holds white space or control characters: set it to the secret alone, without a trailing newline", env)
		}
	}
	return nil
}
