package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/mail"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels"
	"github.com/chiokernel/chio/channels/dashboard"
	"github.com/chiokernel/chio/channels/email"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// mailbox is a real SMTP server on loopback (go-smtp) that requires
// STARTTLS and AUTH PLAIN before it takes mail.
type mailbox struct {
	addr string
	pool *x509.CertPool
	mu   sync.Mutex
	msgs []received
	got  chan struct{}
}

type received struct {
	from string
	to   []string
	data []byte
}

const smtpUser, smtpPass = "chio", "s3cret-pass"

func startMailbox(t *testing.T) *mailbox {
	t.Helper()
	cert, pool := selfSigned(t)
	mb := &mailbox{pool: pool, got: make(chan struct{}, 64)}
	s := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) { return &smtpSession{mb: mb}, nil }))
	s.Domain = "127.0.0.1"
	s.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	s.AllowInsecureAuth = false // AUTH only after STARTTLS
	s.ReadTimeout, s.WriteTimeout = 10*time.Second, 10*time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mb.addr = ln.Addr().String()
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return mb
}

type smtpSession struct {
	mb     *mailbox
	authed bool
	from   string
	to     []string
}

func (s *smtpSession) AuthMechanisms() []string { return []string{sasl.Plain} }
func (s *smtpSession) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if username != smtpUser || password != smtpPass {
			return errors.New("bad credentials")
		}
		s.authed = true
		return nil
	}), nil
}
func (s *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	if !s.authed {
		return smtp.ErrAuthRequired
	}
	s.from = from
	return nil
}
func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error { s.to = append(s.to, to); return nil }
func (s *smtpSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.mb.mu.Lock()
	s.mb.msgs = append(s.mb.msgs, received{from: s.from, to: s.to, data: b})
	s.mb.mu.Unlock()
	s.mb.got <- struct{}{}
	return nil
}
func (s *smtpSession) Reset()        { s.from, s.to = "", nil }
func (s *smtpSession) Logout() error { return nil }

func (mb *mailbox) wait(t *testing.T, n int) []received {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		mb.mu.Lock()
		if len(mb.msgs) >= n {
			out := append([]received(nil), mb.msgs...)
			mb.mu.Unlock()
			return out
		}
		mb.mu.Unlock()
		select {
		case <-mb.got:
		case <-deadline:
			t.Fatalf("want %d messages, got %d", n, len(mb.msgs))
		}
	}
}

func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "smtp.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(c)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}, pool
}

// parts returns a message's headers and its text and HTML alternatives.
func parts(t *testing.T, raw []byte) (mail.Header, string, string) {
	t.Helper()
	m, err := mail.ReadMessage(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	mt, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/alternative" {
		t.Fatalf("Content-Type %q", m.Header.Get("Content-Type"))
	}
	mr := multipart.NewReader(m.Body, params["boundary"])
	var text, html string
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(p) // quoted-printable is decoded by the reader
		switch ct, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type")); ct {
		case "text/plain":
			text = string(b)
		case "text/html":
			html = string(b)
		}
	}
	return m.Header, text, html
}

var linkRE = regexp.MustCompile(`http://127\.0\.0\.1:\d+/email/a/[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`)

// signToken signs a decision on req with the key file's key.
func signToken(t *testing.T, keyFile string, req *approval.Request, decision, note string) json.RawMessage {
	t.Helper()
	k, err := keys.LoadPrivateKey(filepath.Join(repoRoot(), "examples/keys", keyFile))
	if err != nil {
		t.Fatal(err)
	}
	tok := approval.NewToken(req, k.Public(), decision, time.Now(), 10*time.Minute)
	tok.Note = note
	raw, err := tok.Sign(k)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func httpDo(t *testing.T, method, url, accept, body string) (int, map[string]any, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, m, string(b)
}

// emailKernel is a live kernel whose refunds grant mails its approvers
// through mb over STARTTLS and AUTH PLAIN; failures lists the
// notifications the hub gave up on.
type emailKernel struct {
	*liveKernel
	ch       *email.Channel
	failMu   sync.Mutex
	failures []string
}

func startEmailKernel(t *testing.T, mb *mailbox) *emailKernel {
	t.Helper()
	ek := &emailKernel{}
	emailTOML := `
[channels.email]
smtp_addr = "` + mb.addr + `"
from = "chio <chio@example.com>"
username_env = "CHIO_TEST_SMTP_USER"
password_env = "CHIO_TEST_SMTP_PASS"
starttls = true
`
	env := map[string]string{"CHIO_TEST_SMTP_USER": smtpUser, "CHIO_TEST_SMTP_PASS": smtpPass}
	ek.liveKernel = startLiveKernel(t, `"dashboard", "email"`, emailTOML, func(k *kernel.Kernel) kernel.Notifier {
		p := k.Policy()
		var err error
		ek.ch, err = email.New(p.Channels.Email, email.Options{PublicURL: p.Kernel.PublicURL, Policy: k.Policy,
			DataDir: t.TempDir(), TLSConfig: &tls.Config{RootCAs: mb.pool}, Getenv: func(k string) string { return env[k] }})
		if err != nil {
			t.Fatal(err)
		}
		hub := channels.NewHub(channels.HubOptions{Channels: []channels.Channel{ek.ch},
			Backoff: channels.Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond},
			OnFailure: func(id, c, msg string) {
				ek.failMu.Lock()
				ek.failures = append(ek.failures, id+" "+c+" "+msg)
				ek.failMu.Unlock()
			}})
		t.Cleanup(hub.Close)
		return hub
	}, func(lk *liveKernel) {
		lk.api.Handle(email.LinkPath, ek.ch.Handler(lk.k))
		dash, err := dashboard.New(dashboard.Options{})
		if err != nil {
			t.Fatal(err)
		}
		lk.api.Handle(dashboard.Prefix, dash)
	})
	return ek
}

// noFailures fails t if a notification failed.
func (ek *emailKernel) noFailures(t *testing.T) {
	t.Helper()
	ek.failMu.Lock()
	defer ek.failMu.Unlock()
	if len(ek.failures) > 0 {
		t.Fatalf("notifications failed: %v", ek.failures)
	}
}

func TestEmailChannel(t *testing.T) {
	mb := startMailbox(t)
	ek := startEmailKernel(t, mb)
	lk, ch := ek.liveKernel, ek.ch

	// 1. A pending refund mails both trusted approvers, text and HTML.
	pend := lk.pendingRefund(t, 450, "Refund for a damaged order")
	msgs := mb.wait(t, 2)
	var financeMsg []byte
	for _, m := range msgs {
		if m.from != "chio@example.com" || len(m.to) != 1 {
			t.Fatalf("envelope: %q → %v", m.from, m.to)
		}
		if m.to[0] == "finance@example.com" {
			financeMsg = m.data
		} else if m.to[0] != "cfo@example.com" {
			t.Fatalf("unexpected recipient %v", m.to)
		}
	}
	if financeMsg == nil {
		t.Fatal("no message to finance@example.com")
	}
	hdr, text, html := parts(t, financeMsg)
	subj, _ := new(mime.WordDecoder).DecodeHeader(hdr.Get("Subject"))
	if !strings.Contains(subj, "450 USD") || !strings.Contains(hdr.Get("To"), "finance@example.com") {
		t.Fatalf("headers: subject %q to %q", subj, hdr.Get("To"))
	}
	agent := lk.agent.Public().String()
	for name, body := range map[string]string{"text": text, "html": html} {
		for _, want := range []string{"Refund for a damaged order", "450 USD", "Deadline", pend.ApprovalRequestID} {
			if !strings.Contains(body, want) {
				t.Fatalf("%s part lacks %q:\n%s", name, want, body)
			}
		}
		if !strings.Contains(body, agent[:16]) {
			t.Fatalf("%s part does not name the agent %s", name, agent)
		}
	}
	link := linkRE.FindString(text)
	if link == "" || !strings.Contains(html, `href="`+link+`"`) {
		t.Fatalf("link: text %q, html has it: %v", link, strings.Contains(html, link))
	}

	// 2. GET shows the request and decides nothing (a scanner may fetch twice).
	for range 2 {
		code, _, page := httpDo(t, "GET", link, "text/html", "")
		if code != 200 || !strings.Contains(page, "Refund for a damaged order") || !strings.Contains(page, "/dashboard/#email=") {
			t.Fatalf("GET link: %d\n%s", code, page)
		}
	}
	code, view, _ := httpDo(t, "GET", link, "application/json", "")
	if code != 200 || view["approver"] != financeLeadKey {
		t.Fatalf("GET link JSON: %d %v", code, view)
	}
	req, err := lk.k.Approval(pend.ApprovalRequestID)
	if err != nil || req.Status != approval.StatusPending {
		t.Fatalf("after GET the request is %v (%v)", req.Status, err)
	}

	// 3. A token by someone else than the link's approver is refused, and
	// does not spend the link; neither does a token that fails to verify.
	cfoTok := signToken(t, "cfo.pem", req, approval.DecisionApproved, "")
	if code, m, _ := httpDo(t, "POST", link, "", `{"token":`+string(cfoTok)+`}`); code != 403 || m["error"] != "approval_rejected" {
		t.Fatalf("CFO's token on Finance's link: %d %v", code, m)
	}
	bad := signToken(t, "finance-lead.pem", req, approval.DecisionApproved, "")
	bad = []byte(strings.Replace(string(bad), `"decision":"approved"`, `"decision":"denied"`, 1))
	if code, m, _ := httpDo(t, "POST", link, "", `{"token":`+string(bad)+`}`); code != 403 || m["error"] != "approval_rejected" {
		t.Fatalf("tampered token: %d %v", code, m)
	}

	// 4. POST with the approver's signed token decides.
	waiter := lk.awaitCall(t, pend.RequestID)
	tok := signToken(t, "finance-lead.pem", req, approval.DecisionApproved, "ok by email")
	code, m, body := httpDo(t, "POST", link, "", `{"token":`+string(tok)+`}`)
	if code != 200 || m["outcome"] != "approved" {
		t.Fatalf("POST link: %d %s", code, body)
	}
	select {
	case st := <-waiter:
		if st.Status != kernel.StatusAllowed {
			t.Fatalf("call: %+v", st)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("call did not complete")
	}
	r := lk.finalReceipt(t, pend.ApprovalRequestID)
	if r.Decision.Verdict != receipt.Allow || r.Metadata["channel"] != "email" || r.Metadata["approver_display_name"] != "Finance Lead" ||
		r.Metadata["note"] != "ok by email" {
		t.Fatalf("receipt: %+v %v", r.Decision, r.Metadata)
	}

	// 5. The link is spent: GET and POST answer 410.
	if code, m, _ := httpDo(t, "POST", link, "", `{"token":`+string(tok)+`}`); code != 410 || m["error"] != "approval_rejected" {
		t.Fatalf("reused link POST: %d %v", code, m)
	}
	if code, _, _ := httpDo(t, "GET", link, "application/json", ""); code != 410 {
		t.Fatalf("reused link GET: %d", code)
	}

	// 6. An expired link (deadline passed) and a forged one are refused.
	pend2 := lk.pendingRefund(t, 900, "Second refund")
	req2, _ := lk.k.Approval(pend2.ApprovalRequestID)
	expired := ch.LinkURL(ch.Link(pend2.ApprovalRequestID, financeLeadKey, time.Now().Add(-time.Second)))
	tok2 := signToken(t, "finance-lead.pem", req2, approval.DecisionApproved, "")
	if code, m, _ := httpDo(t, "POST", expired, "", `{"token":`+string(tok2)+`}`); code != 410 || m["error"] != "approval_rejected" {
		t.Fatalf("expired link POST: %d %v", code, m)
	}
	if code, _, _ := httpDo(t, "GET", expired, "", ""); code != 410 {
		t.Fatalf("expired link GET: %d", code)
	}
	valid := ch.Link(pend2.ApprovalRequestID, financeLeadKey, time.Now().Add(time.Hour))
	tail := "AA" // two characters the real MAC does not end with
	if strings.HasSuffix(valid, tail) {
		tail = "BB"
	}
	forged := ch.LinkURL(valid[:len(valid)-2] + tail)
	if code, m, _ := httpDo(t, "POST", forged, "", `{"token":`+string(tok2)+`}`); code != 403 || m["error"] != "approval_rejected" {
		t.Fatalf("forged link: %d %v", code, m)
	}
	if req2, _ = lk.k.Approval(pend2.ApprovalRequestID); req2.Status != approval.StatusPending {
		t.Fatalf("refused links changed the request: %s", req2.Status)
	}
	msgs = mb.wait(t, 4) // the second request's mail

	// 7. In the browser: the mailed link's page opens the dashboard, which
	// signs with the imported key and posts to the link.
	if _, err := os.Stat("/usr/bin/chromium"); err != nil && os.Getenv("CI") == "" {
		t.Log("chromium not installed: skipping the browser part")
	} else {
		var link2 string
		for _, m := range msgs {
			if _, text, _ := parts(t, m.data); m.to[0] == "finance@example.com" && strings.Contains(text, pend2.ApprovalRequestID) {
				link2 = linkRE.FindString(text)
			}
		}
		waiter := lk.awaitCall(t, pend2.RequestID)
		ctx := newBrowser(t)
		c := card(pend2.ApprovalRequestID)
		browse(t, ctx, "email link in the dashboard",
			chromedp.Navigate(link2),
			press("#open-dashboard"),
			chromedp.WaitVisible(css("#setup")),
			chromedp.SetUploadFiles(css("#key-file"), []string{filepath.Join(repoRoot(), "examples/keys/finance-lead.pem")}),
			chromedp.WaitVisible(css(c)),
			chromedp.SendKeys(css(c+" textarea.note"), "signed from the email link"),
			press(c+` button[data-action="approve"]`),
			chromedp.WaitVisible(css(c+" .card-ok")),
		)
		select {
		case st := <-waiter:
			if st.Status != kernel.StatusAllowed {
				t.Fatalf("call: %+v", st)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("call did not complete")
		}
		r := lk.finalReceipt(t, pend2.ApprovalRequestID)
		if r.Metadata["channel"] != "email" || r.Metadata["note"] != "signed from the email link" {
			t.Fatalf("receipt: %v", r.Metadata)
		}
		if code, _, _ := httpDo(t, "GET", link2, "", ""); code != 410 {
			t.Fatalf("the link signed in the browser is not spent: %d", code)
		}
	}

	ek.noFailures(t)
}
