package policy

import "testing"

// net/smtp sends AUTH PLAIN credentials only over TLS or to "localhost",
// "127.0.0.1" or "::1". SMTP credentials without starttls = true to any
// other relay loaded, and then every message failed ("unencrypted
// connection"): approvers were never mailed. Such a policy is refused at
// load (chio policy check and chiod's start alike), naming the fix; a
// loopback relay, or one reached with starttls = true, still loads.
func TestSMTPCredentialsWithoutSTARTTLSBeyondLoopbackAreRefused(t *testing.T) {
	const head = "[channels.email]\nfrom = \"chio@example.com\"\nusername_env = \"CHIO_SMTP_USER\"\npassword_env = \"CHIO_SMTP_PASSWORD\"\n"
	for _, addr := range []string{"smtp.example.com:587", "10.0.0.5:25", "127.0.0.2:25", "[2001:db8::1]:25"} {
		t.Run(addr, func(t *testing.T) { checkInvalid(t, addr, head+"smtp_addr = \""+addr+"\"  # <-\n", "starttls = true") })
	}
	for _, ok := range []string{
		head + "smtp_addr = \"localhost:25\"\n",
		head + "smtp_addr = \"127.0.0.1:2525\"\n",
		head + "smtp_addr = \"[::1]:25\"\n",
		head + "smtp_addr = \"smtp.example.com:587\"\nstarttls = true\n",
		// Without credentials nothing secret is sent: plain SMTP is the
		// relay's choice, as before.
		"[channels.email]\nfrom = \"chio@example.com\"\nsmtp_addr = \"smtp.example.com:25\"\n",
	} {
		if _, err := Parse([]byte(ok), "ok.toml"); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}
