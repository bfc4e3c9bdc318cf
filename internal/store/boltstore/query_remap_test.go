package boltstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/internal/store/boltstore/synth"
	"github.com/chiokernel/chio/internal/store/storetest"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// openRemapStore opens a store whose memory mapping starts at 1 MiB, with
// a synthetic log of n receipts: a commit that grows the file well past
// twice its size must remap.
func openRemapStore(t *testing.T, seed byte, n int) (*boltstore.Store, string) {
	t.Helper()
	key := keys.FromSeed(bytes.Repeat([]byte{seed}, 32))
	path := filepath.Join(t.TempDir(), "chio.db")
	log := receipt.NewLog(key, receipt.LogOptions{})
	s, err := boltstore.Open(path, key, boltstore.Options{NoSync: true, MmapSize: 1 << 20, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := log.Start(ctx, s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close(ctx); s.Close() })
	if _, err := synth.Generate(ctx, s, key, synth.Config{Receipts: n, Days: 1, Seed: uint64(seed)}); err != nil {
		t.Fatal(err)
	}
	return s, path
}

// remappingCheckpoint is one commit that must remap: a checkpoint (at a
// tree size far beyond the log) larger than twice the file, so larger than
// any mapping the store holds now.
func remappingCheckpoint(s *boltstore.Store, path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return s.PutCheckpoint(context.Background(), 1<<40, bytes.Repeat([]byte{'c'}, int(2*fi.Size())+(2<<20)))
}

// A listing whose caller is slow must not hold up commits: a read
// transaction holds bbolt's mmap lock, and the commit that grows the file
// past the mapping waits for every open one. Here the caller's callback
// blocks on the first match of an un-indexed filter (a request id, which
// decodes every receipt) while receipts are appended and a commit must
// remap. The query answers as of its start: the receipt appended while it
// ran, with the same request id, is not in its answer.
func TestQueryDoesNotHoldUpCommitsThatRemap(t *testing.T) {
	s, path := openRemapStore(t, 31, 3000)
	all := storetest.AllStored(t, s)
	// An early receipt: the query blocks in its first chunk, with most of
	// the log still to read once it resumes.
	target := all[40].RC.RequestID
	var want []uint64
	for _, st := range all {
		if st.RC.RequestID == target {
			want = append(want, st.Seq)
		}
	}
	q := receipt.Query{Filter: receipt.Filter{RequestID: target}}

	var got []uint64
	blocked, release := make(chan struct{}), make(chan struct{})
	queried := make(chan error, 1)
	go func() {
		queried <- s.QueryReceipts(q, func(seq uint64, _ []byte, _ *receipt.Receipt) bool {
			if got = append(got, seq); len(got) == 1 {
				close(blocked)
				<-release // the caller is slow
			}
			return true
		})
	}()
	select {
	case <-blocked:
	case err := <-queried:
		t.Fatalf("query ended without calling back (%v)", err)
	}

	start := time.Now()
	committed := make(chan error, 1)
	go func() {
		appended := &receipt.Receipt{ID: "rc-during", RequestID: target, Subject: "ed25519:aa", ToolServer: "demo",
			ToolName: "t", Action: "invoke", Timestamp: all[len(all)-1].RC.Timestamp, Decision: receipt.Decision{Verdict: receipt.Allow}}
		if err := s.Update(context.Background(), func(tx kernel.Tx) error { tx.AppendReceipt(appended); return nil }); err != nil {
			committed <- err
			return
		}
		// Another query indexes it (its own commit) and sees it.
		n := 0
		if err := s.QueryReceipts(q, func(uint64, []byte, *receipt.Receipt) bool { n++; return true }); err != nil || n != len(want)+1 {
			committed <- fmt.Errorf("a query after the append: %d matches, want %d (%v)", n, len(want)+1, err)
			return
		}
		committed <- remappingCheckpoint(s, path)
	}()
	select {
	case err := <-committed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		stuck := goroutineStacksWith("(*DB).mmap")
		close(release)
		err := <-committed
		t.Fatalf("commits still waiting after 5s behind a query whose caller is slow; released at 5s, they finished at %v (err %v); waiting in:\n%s",
			time.Since(start).Round(time.Millisecond), err, stuck)
	}
	close(release)
	if err := <-queried; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("query with commits under it: got %v, want %v (its answer as of its start)", got, want)
	}
}

// Stats that decode every receipt (a filter the indexes cannot answer,
// here a request id) take as long as the log is big. Healing reopens the
// file under the store's lock alone (as a remap needs every read
// transaction to end), and a waiting writer of that lock holds up every
// reader and the committer behind it: so stats may not hold it for as long
// as they run. A reopen issued once the stats are reading must finish
// before they do, and they count the same with it in their midst.
func TestStatsDoNotHoldUpAReopen(t *testing.T) {
	s, _ := openRemapStore(t, 32, 20000)
	all := storetest.AllStored(t, s)
	f := receipt.Filter{RequestID: all[len(all)/3].RC.RequestID}
	start := time.Now()
	want, err := s.ReceiptStats(f, "tool_name")
	if err != nil {
		t.Fatal(err)
	}
	if want.Total == 0 {
		t.Fatalf("the filter matches nothing: %s", js(want))
	}
	alone := time.Since(start)

	// The stats are seen reading by sampling every goroutine's stack, a
	// stop-the-world whose timing is the scheduler's: a sample can miss
	// them or catch them in their last chunk. So a round counts only if
	// they were seen reading; the property fails only if no round of five
	// shows it (a stats call holding the lock throughout fails them all).
	type result struct {
		res receipt.StatsResult
		err error
		at  time.Time
	}
	var fails []string
	for round := 0; round < 5; round++ {
		counted := make(chan result, 1)
		go func() {
			res, err := s.ReceiptStats(f, "tool_name")
			counted <- result{res, err, time.Now()}
		}()
		// Wait until the stats are reading (past catching the index up).
		var r result
		seen := false
		for !seen {
			select {
			case r = <-counted:
			default:
				seen = strings.Contains(goroutineStacksWith("(*Store).ReceiptStats"), "(*DB).View")
				runtime.Gosched()
				continue
			}
			break
		}
		if !seen {
			fails = append(fails, "the stats were never seen reading")
			continue
		}
		issued := time.Now()
		if err := boltstore.ReopenForTest(s); err != nil {
			t.Fatal(err)
		}
		reopened := time.Now()
		r = <-counted
		if r.err != nil || js(r.res) != js(want) {
			t.Fatalf("stats with a reopen under them: %v %s, want %s", r.err, js(r.res), js(want))
		}
		t.Logf("stats alone %v; with the reopen %v; the reopen took %v",
			alone.Round(time.Millisecond), r.at.Sub(issued).Round(time.Millisecond), reopened.Sub(issued).Round(time.Millisecond))
		if reopened.Before(r.at) {
			return
		}
		fails = append(fails, fmt.Sprintf("the reopen issued while stats were reading ended %v after them", reopened.Sub(r.at)))
	}
	t.Fatalf("in no round of five did a reopen end before the stats under it: it waits for their read transaction? %q", fails)
}

func js(v any) string { b, _ := json.Marshal(v); return string(b) }
