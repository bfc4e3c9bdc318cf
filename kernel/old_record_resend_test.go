package kernel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/kernel"
)

// An upgrade with a call in flight: a chiod built before 8320525 wrote
// call records with encoding/json (boltstore/tx.go PutCall:
// `v, err := json.Marshal(c)`; pgstore's likewise), which rewrites < > &
// inside the raw arguments as \u003c \u003e \u0026. Its live path sent the
// tool the canonical bytes it held in memory; it died before the settle
// commit. The next start, on a newer build, re-sends the at_least_once
// call from that record. The re-send must carry the bytes the first
// delivery did (the canonical bytes parameter_hash covers): a tool's
// dedupe (sdk/toolserver) matches a repeated Idempotency-Key against the
// body it recorded, and answers another body 422 "reused for a different
// request" instead of replaying the answer it gave.
func TestResendOfAnOldEscapedRecordCarriesTheFirstDeliverysBytes(t *testing.T) {
	tool := &scriptedTool{}
	w := newWAWorld(t, tool)
	w.store.failNth = func(n int64) bool { return n == 2 } // the settle commit: what a kill -9 there leaves
	c := w.Call(t, "echo", `{"note":"a<b & c>d"}`, "")
	if out, err := w.Kernel.Submit(context.Background(), c); err != nil || out.Execution != kernel.ExecutionSucceeded {
		t.Fatalf("first run: %+v %v", out, err)
	}
	w.Kernel.WaitSettles()
	w.store.failNth = nil
	w.Kernel.Close()
	first := tool.deliveries(c.RequestID)
	if len(first) != 1 {
		t.Fatalf("first run: %d deliveries", len(first))
	}
	rewriteCallAsOldBuild(t, w, c.RequestID, kernel.StatusDispatching)
	tool2 := &scriptedTool{}
	reopenAndRecover(t, w, tool2)
	again := tool2.deliveries(c.RequestID)
	if len(again) != 1 {
		t.Fatalf("recovery made %d deliveries", len(again))
	}
	if !bytes.Equal(again[0].Arguments, first[0].Arguments) {
		t.Fatalf("the re-send carries arguments %s, the first delivery carried %s: a tool's dedupe refuses the key as reused for another request",
			again[0].Arguments, first[0].Arguments)
	}
}

// An approved call an older build was sending when it stopped: it sent it
// from its record, escaped (3739990's finding). The re-send after the
// upgrade carries those bytes again, or the tool's dedupe refuses it.
// (This held before old records were sent canonical bytes; it keeps that
// from covering the calls whose first delivery was not.)
func TestResendOfAnOldApprovedCallCarriesTheFirstDeliverysBytes(t *testing.T) {
	tool := &scriptedTool{}
	w := newWAWorld(t, tool)
	tool.check = func(kernel.DispatchRequest) { w.store.failAll.Store(true) } // chiod dies once the tool has the call
	out := w.Submit(t, "delete_file", `{"path":"/tmp/a<b>&c"}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v", out)
	}
	_, _ = w.Kernel.Respond(context.Background(), out.ApprovalRequestID,
		w.Token(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved, nil), "", "")
	w.Kernel.Close()
	w.store.failAll.Store(false)
	escaped := rewriteCallAsOldBuild(t, w, out.RequestID, kernel.StatusDispatching)
	tool2 := &scriptedTool{}
	reopenAndRecover(t, w, tool2)
	again := tool2.deliveries(out.RequestID)
	if len(again) != 1 || !bytes.Equal(again[0].Arguments, escaped) {
		t.Fatalf("the re-send carries %s, the older build's first delivery carried %s", sent(again), escaped)
	}
}

// A call an older build parked, approved after the upgrade: its tool gets
// the canonical bytes, and so does a re-send after this build stops.
func TestAnOldParkedCallIsSentItsCanonicalBytes(t *testing.T) {
	const args = `{"path":"/tmp/a<b>&c"}`
	w := newWAWorld(t, &scriptedTool{})
	out := w.Submit(t, "delete_file", args, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v", out)
	}
	w.Kernel.Close()
	rewriteCallAsOldBuild(t, w, out.RequestID, kernel.StatusPendingApproval)
	tool2 := &scriptedTool{}
	k, s := reopenAndRecover(t, w, tool2)
	_, _ = k.Respond(context.Background(), out.ApprovalRequestID,
		w.Token(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved, nil), "", "")
	first := tool2.deliveries(out.RequestID)
	if len(first) != 1 || string(first[0].Arguments) != args {
		t.Fatalf("the approved call was sent %s, not its canonical bytes %s", sent(first), args)
	}
	// Stopped before the settle: settle it again from the store.
	k.Close()
	if err := s.Update(context.Background(), func(tx kernel.Tx) error {
		rec, err := tx.Call(out.RequestID)
		if err != nil {
			return err
		}
		rec.Status, rec.Execution, rec.Output = kernel.StatusDispatching, "", nil
		return tx.PutCall(rec)
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	tool3 := &scriptedTool{}
	reopenAndRecover(t, w, tool3)
	again := tool3.deliveries(out.RequestID)
	if len(again) != 1 || string(again[0].Arguments) != args {
		t.Fatalf("the re-send carries %s, the first delivery carried %s", sent(again), args)
	}
}

// rewriteCallAsOldBuild closes w's store and rewrites call id's record as
// a build before 8320525 wrote it (encoding/json), checking it is in
// status; it returns the arguments as that record holds them.
func rewriteCallAsOldBuild(t *testing.T, w *waWorld, id, status string) json.RawMessage {
	t.Helper()
	if err := w.Store.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(w.StorePath, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var args json.RawMessage
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("calls"))
		var rec kernel.CallRecord
		if err := json.Unmarshal(b.Get([]byte(id)), &rec); err != nil {
			return err
		}
		if rec.Status != status {
			t.Fatalf("the call is %s, want %s", rec.Status, status)
		}
		old, err := json.Marshal(&rec)
		if err != nil {
			return err
		}
		var back kernel.CallRecord
		if err := json.Unmarshal(old, &back); err != nil {
			return err
		}
		if args = back.Arguments; !bytes.Contains(args, []byte(`\u003c`)) {
			t.Fatalf("encoding/json kept the bytes: %s", old)
		}
		return b.Put([]byte(id), old)
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return args
}

// reopenAndRecover starts a kernel on w's store file, as chiod's next
// start does, and waits for its recovery.
func reopenAndRecover(t *testing.T, w *waWorld, tool kernel.Dispatcher) (*kernel.Kernel, *boltstore.Store) {
	t.Helper()
	s, err := boltstore.Open(w.StorePath, w.KernelKey, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	w.Store = s
	k, err := kernel.New(kernel.Config{Key: w.KernelKey, Policy: w.Policy, Store: s, Dispatcher: tool})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	w.Kernel = k
	if err := k.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := k.WaitRecovery(ctx); err != nil {
		t.Fatal(err)
	}
	return k, s
}

// sent lists the arguments of deliveries, as sent.
func sent(ds []kernel.DispatchRequest) []string {
	var out []string
	for _, d := range ds {
		out = append(out, string(d.Arguments))
	}
	return out
}
