package policy

import (
	"strings"
	"testing"
)

// A URL with a user name and password in it is refused ("secrets come
// from the environment"), but the refusal quoted the URL whole: the
// password went into chio policy check's output, chiod's start-up error
// and the CI or journal logs that keep them, the places the rule exists to
// keep it out of. envName never echoes a value for the same reason.
func TestURLCredentialsAreNotQuotedInErrors(t *testing.T) {
	const pw = "hunter2-pw-8c1f"
	for _, c := range []struct{ name, toml string }{
		{"webhook url", "[channels.webhook]\nurl = \"https://chio:" + pw + "@hooks.example.com/chio\"  # <-\n"},
		{"webhook url, token as user", "[channels.webhook]\nurl = \"https://" + pw + "@hooks.example.com/chio\"  # <-\n"},
		{"webhook url, bad escape", "[channels.webhook]\nurl = \"https://chio:" + pw + "%zz@hooks.example.com/chio\"  # <-\n"},
		// A typo for "https://" parses as a URL without a host (or
		// user): its "user:password@" is still a secret.
		{"webhook url, no slashes", "[channels.webhook]\nurl = \"https:chio:" + pw + "@hooks.example.com/chio\"  # <-\n"},
		{"webhook url, one slash", "[channels.webhook]\nurl = \"https:/chio:" + pw + "@hooks.example.com/chio\"  # <-\n"},
		{"webhook url, three slashes", "[channels.webhook]\nurl = \"https:///chio:" + pw + "@hooks.example.com/chio\"  # <-\n"},
		{"slack api_url", "[channels.slack]\nbot_token_env = \"T\"\nsigning_secret_env = \"S\"\nchannel = \"#a\"\n" +
			"api_url = \"https://chio:" + pw + "@slack.example.com/api/\"  # <-\n"},
		{"kernel public_url", "[kernel]\npublic_url = \"https://chio:" + pw + "@chio.example.com\"  # <-\n"},
		{"http server url", "[[servers]]\nid = \"s\"\ntransport = \"http\"\nurl = \"https://chio:" + pw + "@tools.example.com\"  # <-\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(doc(c.toml), "case.toml")
			if err == nil {
				t.Fatal("loaded")
			}
			if strings.Contains(err.Error(), pw) {
				t.Fatalf("the error quotes the password: %v", err)
			}
			checkInvalid(t, c.name, c.toml, "url")
		})
	}
}
