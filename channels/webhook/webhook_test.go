package webhook_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels"
	"github.com/chiokernel/chio/channels/webhook"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
	"github.com/chiokernel/chio/policy"
)

var (
	kernelKey = keys.FromSeed(bytes.Repeat([]byte{7}, 32))
	otherKey  = keys.FromSeed(bytes.Repeat([]byte{8}, 32))
	fixedNow  = time.UnixMilli(1_750_000_000_123)
)

// signer is what the daemon passes: kernel.SignAsKernel.
func signer(domain string, body []byte) []byte {
	return kernelKey.SignRaw(signed.Message(domain, body))
}

// delivery is one POST as the receiver saw it.
type delivery struct {
	header http.Header
	body   []byte
}

// receiver is a loopback webhook endpoint answering statuses in turn (the
// last one repeats).
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	got      []delivery
	statuses []int
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	t.Helper()
	r := &receiver{statuses: statuses}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, delivery{req.Header.Clone(), body})
		status := r.statuses[min(len(r.got), len(r.statuses))-1]
		r.mu.Unlock()
		w.WriteHeader(status)
		fmt.Fprintf(w, "status %d", status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

func newChannel(t *testing.T, cfg policy.Webhook, opts ...webhook.Option) *webhook.Channel {
	t.Helper()
	c, err := webhook.New(cfg, signer, kernelKey.Public().String(), append([]webhook.Option{webhook.WithClock(func() time.Time { return fixedNow })}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func sampleRequest() *approval.Request {
	return &approval.Request{
		ApprovalID: "apr_0190", Kind: approval.KindToolCall, ToolServer: "payment-server",
		ToolName: "issue_refund", Summary: "refund 40 EUR", Status: approval.StatusPending,
		GovernedIntent: json.RawMessage(`{"amount":40}`), Channels: []string{"webhook"},
	}
}

func TestDeliverSignedBodyAndHeaders(t *testing.T) {
	for _, event := range []string{"approval.requested", "approval.escalated", "approval.resolved"} {
		t.Run(event, func(t *testing.T) {
			rcv := newReceiver(t, 204)
			c := newChannel(t, policy.Webhook{URL: rcv.URL + "/hook"})
			ctx := channels.WithDeliveryID(context.Background(), "0190abcd-0000-7000-8000-000000000001")
			if err := c.Deliver(ctx, event, sampleRequest()); err != nil {
				t.Fatal(err)
			}
			got := rcv.deliveries()
			if len(got) != 1 {
				t.Fatalf("%d deliveries", len(got))
			}
			d := got[0]
			for h, want := range map[string]string{
				"Content-Type":                "application/json",
				webhook.HeaderEvent:           event,
				webhook.HeaderDelivery:        "0190abcd-0000-7000-8000-000000000001",
				webhook.HeaderKernelKey:       kernelKey.Public().String(),
				webhook.HeaderSecretSignature: "",
			} {
				if v := d.header.Get(h); v != want {
					t.Errorf("%s = %q, want %q", h, v, want)
				}
			}
			var p struct {
				Event    string           `json:"event"`
				Approval approval.Request `json:"approval"`
				SentAt   int64            `json:"sent_at"`
			}
			if err := json.Unmarshal(d.body, &p); err != nil {
				t.Fatal(err)
			}
			if p.Event != event || p.Approval.ApprovalID != "apr_0190" || p.Approval.Summary != "refund 40 EUR" || p.SentAt != fixedNow.UnixMilli() {
				t.Fatalf("payload %+v", p)
			}
			sig := d.header.Get(webhook.HeaderSignature)
			if len(sig) != 128 {
				t.Fatalf("signature %q, want 128 hex", sig)
			}
			if err := webhook.VerifySignature(d.body, sig, kernelKey.Public()); err != nil {
				t.Fatalf("genuine delivery: %v", err)
			}
		})
	}
}

func TestVerifySignatureRejects(t *testing.T) {
	body := []byte(`{"event":"approval.requested","approval":{"approval_id":"apr_1"},"sent_at":1}`)
	good := hex.EncodeToString(signer(webhook.Domain, body))
	tampered := bytes.Replace(body, []byte("apr_1"), []byte("apr_2"), 1)
	for _, tc := range []struct {
		name string
		body []byte
		sig  string
		key  keys.PublicKey
	}{
		{"tampered body", tampered, good, kernelKey.Public()},
		{"extra whitespace", append(append([]byte(nil), body...), ' '), good, kernelKey.Public()},
		{"truncated body", body[:len(body)-1], good, kernelKey.Public()},
		{"other kernel key", body, good, otherKey.Public()},
		{"zero key", body, good, keys.PublicKey{}},
		{"uppercase hex", body, strings.ToUpper(good), kernelKey.Public()},
		{"short signature", body, good[:126], kernelKey.Public()},
		{"not hex", body, strings.Repeat("zz", 64), kernelKey.Public()},
		{"empty", body, "", kernelKey.Public()},
		{"other domain", body, hex.EncodeToString(kernelKey.SignRaw(signed.Message("chio.receipt.v1", body))), kernelKey.Public()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := webhook.VerifySignature(tc.body, tc.sig, tc.key); !errors.Is(err, webhook.ErrBadSignature) {
				t.Fatalf("err = %v, want ErrBadSignature", err)
			}
		})
	}
	if err := webhook.VerifySignature(body, good, kernelKey.Public()); err != nil {
		t.Fatalf("genuine: %v", err)
	}
}

func TestSecretSignatureHeader(t *testing.T) {
	t.Setenv("CHIO_TEST_WEBHOOK_SECRET", "s3cret-s3cret-s3cret")
	rcv := newReceiver(t, 200)
	c := newChannel(t, policy.Webhook{URL: rcv.URL, SecretEnv: "CHIO_TEST_WEBHOOK_SECRET"})
	if err := c.Deliver(context.Background(), "approval.requested", sampleRequest()); err != nil {
		t.Fatal(err)
	}
	d := rcv.deliveries()[0]
	h := d.header.Get(webhook.HeaderSecretSignature)
	if !strings.HasPrefix(h, "sha256=") || len(h) != len("sha256=")+64 {
		t.Fatalf("%s = %q", webhook.HeaderSecretSignature, h)
	}
	if err := webhook.VerifySecretSignature(d.body, h, []byte("s3cret-s3cret-s3cret")); err != nil {
		t.Fatal(err)
	}
	for name, check := range map[string]error{
		"wrong secret": webhook.VerifySecretSignature(d.body, h, []byte("guess")),
		"no secret":    webhook.VerifySecretSignature(d.body, h, nil),
		"tampered":     webhook.VerifySecretSignature(append(d.body, ' '), h, []byte("s3cret-s3cret-s3cret")),
	} {
		if !errors.Is(check, webhook.ErrBadSignature) {
			t.Errorf("%s: %v, want ErrBadSignature", name, check)
		}
	}
	// The Ed25519 signature is there too.
	if err := webhook.VerifySignature(d.body, d.header.Get(webhook.HeaderSignature), kernelKey.Public()); err != nil {
		t.Fatal(err)
	}
	// A delivery without the context's id still gets one.
	if id := d.header.Get(webhook.HeaderDelivery); len(id) != 36 {
		t.Fatalf("delivery id %q", id)
	}
}

func TestNewFailsClosed(t *testing.T) {
	t.Setenv("CHIO_TEST_EMPTY_SECRET", "")
	pub := kernelKey.Public().String()
	for _, tc := range []struct {
		name string
		cfg  policy.Webhook
		sign func(string, []byte) []byte
		key  string
	}{
		{"unset secret env", policy.Webhook{URL: "http://127.0.0.1:1", SecretEnv: "CHIO_TEST_SURELY_UNSET_SECRET"}, signer, pub},
		{"empty secret env", policy.Webhook{URL: "http://127.0.0.1:1", SecretEnv: "CHIO_TEST_EMPTY_SECRET"}, signer, pub},
		{"no url", policy.Webhook{}, signer, pub},
		{"relative url", policy.Webhook{URL: "/hook"}, signer, pub},
		{"ftp url", policy.Webhook{URL: "ftp://example.com/hook"}, signer, pub},
		{"no signer", policy.Webhook{URL: "http://127.0.0.1:1"}, nil, pub},
		{"bad kernel key", policy.Webhook{URL: "http://127.0.0.1:1"}, signer, "ed25519:zz"},
		{"negative retries", policy.Webhook{URL: "http://127.0.0.1:1", Retries: -1}, signer, pub},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if c, err := webhook.New(tc.cfg, tc.sign, tc.key); err == nil {
				t.Fatalf("New = %v, want error", c)
			}
		})
	}
	c, err := webhook.New(policy.Webhook{URL: "https://hooks.example.com/x", Retries: 5}, signer, pub)
	if err != nil || c.Name() != "webhook" || c.MaxAttempts() != 6 {
		t.Fatalf("New = %v, %v", c, err)
	}
}

func TestDeliverStatusClassification(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   string // ok | permanent | retry
	}{
		{200, "ok"}, {202, "ok"}, {204, "ok"},
		{301, "permanent"}, {302, "permanent"}, {307, "permanent"},
		{400, "permanent"}, {401, "permanent"}, {403, "permanent"}, {404, "permanent"}, {410, "permanent"},
		{408, "retry"}, {429, "retry"},
		{500, "retry"}, {502, "retry"}, {503, "retry"},
	} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			var followed bool
			mux := http.NewServeMux()
			mux.HandleFunc("/elsewhere", func(http.ResponseWriter, *http.Request) { followed = true })
			mux.HandleFunc("/hook", func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Location", "/elsewhere")
				w.WriteHeader(tc.status)
			})
			srv := httptest.NewServer(mux)
			defer srv.Close()
			err := newChannel(t, policy.Webhook{URL: srv.URL + "/hook"}).Deliver(context.Background(), "approval.requested", sampleRequest())
			got := "retry"
			switch {
			case err == nil:
				got = "ok"
			case errors.Is(err, channels.ErrPermanent):
				got = "permanent"
			}
			if got != tc.want || followed {
				t.Fatalf("status %d: %s (err %v, redirect followed %v), want %s", tc.status, got, err, followed, tc.want)
			}
		})
	}
}

func TestDeliverTransportFailuresAreRetryable(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL + "/hook?token=sekrit"
	down.Close()

	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // the server notices a gone client only after the body
		<-r.Context().Done()
	}))
	defer hang.Close()

	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
		w.Write(bytes.Repeat([]byte("x"), 1<<20)) // more than the 64 KiB read
	}))
	defer huge.Close()

	for _, tc := range []struct {
		name string
		url  string
		opts []webhook.Option
	}{
		{"connection refused", downURL, nil},
		{"timeout", hang.URL, []webhook.Option{webhook.WithTimeout(50 * time.Millisecond)}},
		{"huge 500 answer", huge.URL, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := newChannel(t, policy.Webhook{URL: tc.url}, tc.opts...).Deliver(context.Background(), "approval.requested", sampleRequest())
			if err == nil || errors.Is(err, channels.ErrPermanent) {
				t.Fatalf("err = %v, want a retryable error", err)
			}
			// The error is recorded on the request: short, and no URL secrets.
			if msg := err.Error(); len(msg) > 300 || strings.Contains(msg, "sekrit") {
				t.Fatalf("error message %q", msg)
			}
		})
	}
}

// --- through the hub ---------------------------------------------------

type sink struct {
	mu       sync.Mutex
	metrics  map[string]int
	failures []string
}

func (s *sink) metric(ch, res string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.metrics[ch+"/"+res]++
}

func (s *sink) onFailure(id, ch, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, id+" "+ch+": "+msg)
}

func (s *sink) snapshot() (map[string]int, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.metrics), append([]string(nil), s.failures...)
}

func TestHubWebhookDeliveries(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()

	for _, tc := range []struct {
		name         string
		statuses     []int // nil: server down
		retries      int
		wantRequests int
		wantMetrics  map[string]int
		wantFailure  string
	}{
		{"500 then 200 is delivered on retry", []int{500, 200}, 5, 2, map[string]int{"webhook/retry": 1, "webhook/ok": 1}, ""},
		{"429 then 503 then 200", []int{429, 503, 200}, 5, 3, map[string]int{"webhook/retry": 2, "webhook/ok": 1}, ""},
		{"400 is not retried", []int{400}, 5, 1, map[string]int{"webhook/failed": 1}, "not delivered after 1 attempt(s): permanent delivery failure: receiver answered 400 Bad Request: status 400"},
		{"500 until retries run out", []int{500}, 2, 3, map[string]int{"webhook/retry": 2, "webhook/failed": 1}, "after 3 attempt(s): receiver answered 500"},
		{"server down until retries run out", nil, 3, 0, map[string]int{"webhook/retry": 3, "webhook/failed": 1}, "after 4 attempt(s): POST:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := downURL
			var rcv *receiver
			if tc.statuses != nil {
				rcv = newReceiver(t, tc.statuses...)
				url = rcv.URL
			}
			s := &sink{metrics: map[string]int{}}
			c := newChannel(t, policy.Webhook{URL: url, Retries: tc.retries})
			hub := channels.NewHub(channels.HubOptions{
				Channels: []channels.Channel{c},
				Backoff:  channels.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond},
				Metric:   s.metric, OnFailure: s.onFailure,
			})
			defer hub.Close()
			hub.Notify("approval.requested", sampleRequest())

			final := "webhook/ok"
			if tc.wantFailure != "" {
				final = "webhook/failed"
			}
			deadline := time.Now().Add(20 * time.Second)
			for m, _ := s.snapshot(); m[final] == 0; m, _ = s.snapshot() {
				if time.Now().After(deadline) {
					t.Fatalf("no %s; metrics %v", final, m)
				}
				time.Sleep(time.Millisecond)
			}
			hub.Close()
			m, failures := s.snapshot()
			if !maps.Equal(m, tc.wantMetrics) {
				t.Errorf("metrics %v, want %v", m, tc.wantMetrics)
			}
			switch {
			case tc.wantFailure == "" && len(failures) != 0:
				t.Errorf("failures %v", failures)
			case tc.wantFailure != "" && (len(failures) != 1 || !strings.Contains(failures[0], tc.wantFailure) || !strings.HasPrefix(failures[0], "apr_0190 webhook: ")):
				t.Errorf("failures %v, want one containing %q", failures, tc.wantFailure)
			}
			if rcv == nil {
				return
			}
			got := rcv.deliveries()
			if len(got) != tc.wantRequests {
				t.Fatalf("%d requests, want %d", len(got), tc.wantRequests)
			}
			// One notification, one delivery id across its retries; every
			// attempt individually signed.
			id := got[0].header.Get(webhook.HeaderDelivery)
			if len(id) != 36 || id[14] != '7' {
				t.Fatalf("delivery id %q, want a uuid v7", id)
			}
			for i, d := range got {
				if d.header.Get(webhook.HeaderDelivery) != id {
					t.Errorf("attempt %d: delivery id %q, want %q", i+1, d.header.Get(webhook.HeaderDelivery), id)
				}
				if err := webhook.VerifySignature(d.body, d.header.Get(webhook.HeaderSignature), kernelKey.Public()); err != nil {
					t.Errorf("attempt %d: %v", i+1, err)
				}
			}
		})
	}
}
