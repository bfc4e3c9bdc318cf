package policy

import "testing"

// chiod speaks plain SMTP first and upgrades with STARTTLS; a relay on
// port 465 (SMTPS) wants a TLS handshake from the first byte, so every
// message to it failed after the dial timeout, with or without
// starttls = true, and no approver was mailed. docs/platform.md says the
// port is not supported; such a policy is now refused at load, naming the
// submission port to use instead.
func TestSMTPOnImplicitTLSPortIsRefused(t *testing.T) {
	const head = "[channels.email]\nfrom = \"chio@example.com\"\n"
	for name, body := range map[string]string{
		"starttls":          "smtp_addr = \"smtp.example.com:465\"  # <-\nstarttls = true\n",
		"plain":             "smtp_addr = \"smtp.example.com:465\"  # <-\n",
		"leading zero":      "smtp_addr = \"smtp.example.com:0465\"  # <-\nstarttls = true\n",
		"loopback relay":    "smtp_addr = \"127.0.0.1:465\"  # <-\n",
		"credentials + tls": "smtp_addr = \"smtp.example.com:465\"  # <-\nstarttls = true\nusername_env = \"CHIO_SMTP_USER\"\npassword_env = \"CHIO_SMTP_PASSWORD\"\n",
	} {
		t.Run(name, func(t *testing.T) { checkInvalid(t, name, head+body, "port 465") })
	}
	for _, ok := range []string{
		head + "smtp_addr = \"smtp.example.com:587\"\nstarttls = true\n",
		head + "smtp_addr = \"smtp.example.com:25\"\n",
		head + "smtp_addr = \"127.0.0.1:4650\"\n",
	} {
		if _, err := Parse([]byte(ok), "ok.toml"); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}
