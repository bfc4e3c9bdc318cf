package policy

import "testing"

// chiod sends the Slack bot token (Authorization: Bearer xoxb-…) with every
// call to api_url. An http:// api_url to a host other than loopback (a
// test setting left in, a typo for https) loaded, and the token crossed
// the network in clear with the first request. It is refused at load;
// loopback (where tests run a fake Slack) and https:// still load.
func TestSlackAPIURLInClearBeyondLoopbackIsRefused(t *testing.T) {
	const head = "[channels.slack]\nbot_token_env = \"T\"\nsigning_secret_env = \"S\"\nchannel = \"#a\"\n"
	for _, u := range []string{"http://slack.example.com/api/", "http://10.1.2.3:8080/api/"} {
		t.Run(u, func(t *testing.T) { checkInvalid(t, u, head+"api_url = \""+u+"\"  # <-\n", "https://") })
	}
	for _, u := range []string{"http://127.0.0.1:4390/api/", "http://localhost:4390/api/", "http://[::1]:4390/api/", "https://slack.example.com/api/"} {
		if _, err := Parse([]byte(head+"api_url = \""+u+"\"\n"), "ok.toml"); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
}
