package testkit

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/dispatch"
	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

// DefaultAdminToken is the admin token of a served World when
// Options.AdminToken is empty.
const DefaultAdminToken = "testkit-admin-token-0123456789abcdef"

// Options describes a World. Zero values pick the defaults documented on
// each field.
type Options struct {
	// PolicyTOML is the policy text. With PolicyFor set it is ignored.
	PolicyTOML string
	// PolicyFor, if set, builds the policy text from the server's URL
	// (Serve only: the listener is opened before the policy is parsed).
	PolicyFor func(url string) string
	// Policy, if set, is used as is (PolicyTOML and PolicyFor are ignored).
	Policy *policy.Policy
	// PolicyName names the policy in parse errors; "" = "test.toml".
	PolicyName string
	// Clock is the kernel's clock; nil = the real clock.
	Clock clock.Clock
	// Dispatcher runs allowed calls; nil = internal/dispatch over DataDir
	// (closed at cleanup).
	Dispatcher kernel.Dispatcher
	// Notifier is passed to the kernel.
	Notifier kernel.Notifier
	// GuardStopwatch is passed to the kernel as its Stopwatch (nil: one
	// that stands still, so that no guard is judged over its 50 ms budget
	// because a loaded CI machine, or the race detector, left it waiting
	// for a CPU: a deny no test about anything else expects). The budget's
	// own tests (kernel/pipeline_test.go, routed_failure_test.go) drive a
	// Pipeline with a stopwatch of their own.
	GuardStopwatch func() time.Duration
	// KernelKey signs receipts and capabilities; nil = a fresh key.
	KernelKey *keys.PrivateKey
	// Agent holds the capability; nil = a fresh key.
	Agent *keys.PrivateKey
	// Grants are the grant ids of the agent's capability; none = no
	// capability is issued.
	Grants []string
	// CapabilityTTL is the capability's lifetime; 0 = one hour.
	CapabilityTTL time.Duration
	// DataDir holds the store (chio.db) and the dispatcher's data;
	// "" = t.TempDir().
	DataDir string
	// Log, if set, is wired into the store, started, and closed at cleanup.
	Log *receipt.Log
	// Server is the server id of calls built by Call; "" = "demo".
	Server string
	// RequestPrefix prefixes request ids of calls built by Call;
	// "" = "req-".
	RequestPrefix string
	// Serve wraps httpapi.New in an httptest server.
	Serve bool
	// AdminToken of the served API; "" = DefaultAdminToken.
	AdminToken string
	// ReadToken of the served API; optional.
	ReadToken string
	// BeforeServe, if set, runs after the API is built and before the
	// server starts (to mount extra routes).
	BeforeServe func(*World)
	// WrapStore, if set, wraps the bbolt store the kernel uses (fault
	// injection); World.Store stays the bbolt store underneath.
	WrapStore func(kernel.Store) kernel.Store
}

// World is a kernel on a bbolt store with its keys and capability.
type World struct {
	Kernel     *kernel.Kernel
	Store      *boltstore.Store
	StorePath  string
	DataDir    string
	Policy     *policy.Policy
	PolicyText string
	Clock      clock.Clock
	Dispatcher kernel.Dispatcher
	KernelKey  keys.PrivateKey
	Agent      keys.PrivateKey
	CapRaw     []byte
	Cap        *kernel.Capability
	Server     string // server id of calls built by Call

	// Served worlds only.
	API        *httpapi.Server
	Srv        *httptest.Server
	URL        string
	AdminToken string
	ReadToken  string

	prefix string
}

// reqN numbers request ids across every World of the process.
var reqN atomic.Int64

// NewWorld builds the fixture; everything it opens is closed by t.Cleanup.
func NewWorld(t testing.TB, opts Options) *World {
	t.Helper()
	w := &World{Server: opts.Server, prefix: opts.RequestPrefix, DataDir: opts.DataDir}
	if w.Server == "" {
		w.Server = "demo"
	}
	if w.prefix == "" {
		w.prefix = "req-"
	}
	if w.DataDir == "" {
		w.DataDir = t.TempDir()
	}
	var err error
	w.KernelKey, w.Agent = keyOr(t, opts.KernelKey), keyOr(t, opts.Agent)
	w.Clock = opts.Clock
	if w.Clock == nil {
		w.Clock = clock.Real{}
	}
	var cleanups []func()
	t.Cleanup(func() {
		if w.API != nil {
			w.API.CloseStreams()
		}
		if w.Srv != nil {
			w.Srv.Close()
		}
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	})
	if opts.Serve {
		w.Srv = httptest.NewUnstartedServer(nil)
		w.URL = "http://" + w.Srv.Listener.Addr().String()
	}
	w.PolicyText = opts.PolicyTOML
	if opts.PolicyFor != nil {
		w.PolicyText = opts.PolicyFor(w.URL)
	}
	name := opts.PolicyName
	if name == "" {
		name = "test.toml"
	}
	if w.Policy = opts.Policy; w.Policy == nil {
		if w.Policy, err = policy.Parse([]byte(w.PolicyText), name); err != nil {
			t.Fatal(err)
		}
	}
	w.StorePath = filepath.Join(w.DataDir, "chio.db")
	// The store reports its commits to the metrics /metrics serves, as in chiod.
	metrics := httpapi.NewMetrics(nil)
	observe := func(c boltstore.CommitStats) {
		metrics.Commit(c.Calls, c.Total)
		metrics.CommitPhases(c.Run, c.Sign, c.Receipts, c.Write)
	}
	if w.Store, err = boltstore.Open(w.StorePath, w.KernelKey, boltstore.Options{Log: opts.Log, Observe: observe}); err != nil {
		t.Fatal(err)
	}
	cleanups = append(cleanups, func() { w.Store.Close() })
	if opts.Log != nil {
		if err := opts.Log.Start(context.Background(), w.Store); err != nil {
			t.Fatal(err)
		}
		cleanups = append(cleanups, func() { opts.Log.Close(context.Background()) })
	}
	w.Dispatcher = opts.Dispatcher
	if w.Dispatcher == nil {
		disp, err := dispatch.New(w.Policy.Servers, w.DataDir)
		if err != nil {
			t.Fatal(err)
		}
		w.Dispatcher = disp
		cleanups = append(cleanups, func() { disp.Close() })
	}
	var ks kernel.Store = w.Store
	if opts.WrapStore != nil {
		ks = opts.WrapStore(ks)
	}
	stopwatch := opts.GuardStopwatch
	if stopwatch == nil {
		stopwatch = func() time.Duration { return 0 }
	}
	if w.Kernel, err = kernel.New(kernel.Config{Key: w.KernelKey, Policy: w.Policy, Store: ks, Dispatcher: w.Dispatcher,
		Clock: opts.Clock, Notifier: opts.Notifier, Stopwatch: stopwatch}); err != nil {
		t.Fatal(err)
	}
	cleanups = append(cleanups, w.Kernel.Close)
	if opts.Serve {
		w.AdminToken, w.ReadToken = opts.AdminToken, opts.ReadToken
		if w.AdminToken == "" {
			w.AdminToken = DefaultAdminToken
		}
		if w.API, err = httpapi.New(httpapi.Config{Kernel: w.Kernel, Store: w.Store, AdminToken: w.AdminToken, ReadToken: w.ReadToken, Metrics: metrics}); err != nil {
			t.Fatal(err)
		}
		if opts.BeforeServe != nil {
			opts.BeforeServe(w)
		}
		w.Srv.Config.Handler = w.API
		w.Srv.Start()
	}
	if len(opts.Grants) > 0 {
		ttl := opts.CapabilityTTL
		if ttl == 0 {
			ttl = time.Hour
		}
		if w.CapRaw, w.Cap, err = w.Kernel.IssueCapability(w.Agent.Public(), opts.Grants, ttl); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// NextRequestID returns a request id unique in the process.
func (w *World) NextRequestID() string { return fmt.Sprintf("%s%d", w.prefix, reqN.Add(1)) }

// Call builds a call of tool by the agent with its capability, signed now.
func (w *World) Call(t testing.TB, tool, args, intent string) *kernel.ToolCall {
	t.Helper()
	return w.CallAs(t, w.Agent, w.CapRaw, w.Server, tool, args, intent)
}

// CallAs builds a call of server/tool by agent with capability capRaw,
// signed now.
func (w *World) CallAs(t testing.TB, agent keys.PrivateKey, capRaw []byte, server, tool, args, intent string) *kernel.ToolCall {
	t.Helper()
	return newCall(t, w.NextRequestID(), agent, capRaw, server, tool, args, intent, w.Clock.Now())
}

// NewCall builds a call of server/tool by agent with capability capRaw,
// signed at at, with a request id "req-N" unique in the process.
func NewCall(t testing.TB, agent keys.PrivateKey, capRaw []byte, server, tool, args, intent string, at time.Time) *kernel.ToolCall {
	t.Helper()
	return newCall(t, fmt.Sprintf("req-%d", reqN.Add(1)), agent, capRaw, server, tool, args, intent, at)
}

func newCall(t testing.TB, id string, agent keys.PrivateKey, capRaw []byte, server, tool, args, intent string, at time.Time) *kernel.ToolCall {
	t.Helper()
	c := &kernel.ToolCall{RequestID: id, Capability: capRaw, Server: server, Tool: tool, Arguments: json.RawMessage(args)}
	if intent != "" {
		c.GovernedIntent = json.RawMessage(intent)
	}
	Sign(t, c, agent, at)
	return c
}

// Sign sets c's proof of possession, signed by k at at.
func Sign(t testing.TB, c *kernel.ToolCall, k keys.PrivateKey, at time.Time) {
	t.Helper()
	ph, err := kernel.ParameterHash(c.Server, c.Tool, c.Arguments, c.GovernedIntent)
	if err != nil {
		t.Fatal(err)
	}
	var head struct{ ID string }
	json.Unmarshal(c.Capability, &head)
	if c.Proof, err = kernel.SignProof(k, c.RequestID, head.ID, c.Server, c.Tool, ph, at); err != nil {
		t.Fatal(err)
	}
}

// Submit makes a call of tool as the agent straight through the kernel.
func (w *World) Submit(t testing.TB, tool, args, intent string) *kernel.Outcome {
	t.Helper()
	return w.SubmitCall(t, w.Call(t, tool, args, intent))
}

// SubmitCall submits c; an error fails the test.
func (w *World) SubmitCall(t testing.TB, c *kernel.ToolCall) *kernel.Outcome {
	t.Helper()
	out, err := w.Kernel.Submit(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Token signs by key a decision on approvalID, valid 10 minutes from the
// world's now; mutate, if set, edits it before signing.
func (w *World) Token(t testing.TB, approvalID string, key keys.PrivateKey, decision string, mutate func(*approval.Token)) []byte {
	t.Helper()
	return SignToken(t, w.Kernel, w.Clock.Now(), approvalID, key, decision, mutate)
}

// SignToken signs by key a decision on approvalID of k, valid 10 minutes
// from now; mutate, if set, edits it before signing.
func SignToken(t testing.TB, k *kernel.Kernel, now time.Time, approvalID string, key keys.PrivateKey, decision string, mutate func(*approval.Token)) []byte {
	t.Helper()
	req, err := k.Approval(approvalID)
	if err != nil {
		t.Fatal(err)
	}
	tok := approval.NewToken(req, key.Public(), decision, now, 10*time.Minute)
	if mutate != nil {
		mutate(tok)
	}
	raw, err := tok.Sign(key)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// Receipt reads receipt id from the store, verified with the kernel key.
func (w *World) Receipt(t testing.TB, id string) *receipt.Receipt {
	t.Helper()
	return ReadReceipt(t, w.Store, w.KernelKey.Public(), id)
}

// ReadReceipt reads receipt id from store, verified with pub.
func ReadReceipt(t testing.TB, store kernel.Store, pub keys.PublicKey, id string) *receipt.Receipt {
	t.Helper()
	var raw []byte
	store.View(func(tx kernel.ReadTx) error {
		var err error
		raw, err = tx.Receipt(id)
		if err != nil {
			t.Fatalf("receipt %s: %v", id, err)
		}
		raw = append([]byte(nil), raw...)
		return nil
	})
	r, err := receipt.Verify(raw, pub)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// keyOr returns *k, or a fresh key when k is nil.
func keyOr(t testing.TB, k *keys.PrivateKey) keys.PrivateKey {
	t.Helper()
	if k != nil {
		return *k
	}
	g, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// Key returns a pointer to k, for Options.KernelKey and Options.Agent.
func Key(k keys.PrivateKey) *keys.PrivateKey { return &k }
