package pgstore_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chiokernel/chio/internal/store/pgstore"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/internal/store/storetest"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// partitionProxy forwards TCP between a replica and PostgreSQL until it sees
// the client send trigger; from then on it forwards nothing in either
// direction and closes no socket (a network partition: neither side learns
// anything) until heal.
type partitionProxy struct {
	ln      net.Listener
	target  string
	trigger []byte
	armed   atomic.Bool
	frozen  atomic.Bool
	hit     chan struct{}
	once    sync.Once
	mu      sync.Mutex
	conns   []net.Conn // both sides of every connection
}

func newPartitionProxy(t *testing.T, target string, trigger string) *partitionProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &partitionProxy{ln: ln, target: target, trigger: []byte(trigger), hit: make(chan struct{})}
	go p.accept()
	return p
}

func (p *partitionProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		if p.frozen.Load() {
			go io.Copy(io.Discard, c) // a black hole
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, s)
		p.mu.Unlock()
		go p.pipe(c, s, true)
		go p.pipe(s, c, false)
	}
}

func (p *partitionProxy) pipe(from, to net.Conn, fromClient bool) {
	buf := make([]byte, 64<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if fromClient && p.armed.Load() && bytes.Contains(chunk, p.trigger) {
				p.frozen.Store(true)
				p.once.Do(func() { close(p.hit) })
			}
			if !p.frozen.Load() {
				if _, werr := to.Write(chunk); werr != nil {
					return
				}
			}
		}
		if err != nil {
			if !p.frozen.Load() { // while partitioned, nobody is told
				to.Close()
			}
			return
		}
	}
}

// heal ends the partition the way a real one ends after the server gave up
// on the replica: every connection through the proxy is closed, on both
// sides.
func (p *partitionProxy) heal() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

// A replica cut off from the database between the two round trips of a
// receipt commit holds the log head's row lock (taken in the first, released
// by COMMIT in the second). PostgreSQL learns nothing of a partition, so
// without a bound its session stayed "idle in transaction", the lock held,
// for the ~2 h of TCP's defaults, and every other replica's decisions
// waited and failed: the whole service down. The server now ends such a
// session after idle_in_transaction_session_timeout (lowered here to 1 s
// for replica A): A's transaction rolls back, and replica B commits.
func TestPartitionedReplicaHoldingLogHeadReleasesItWithinIdleTimeout(t *testing.T) {
	dsn := pgtest.Database(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	// Replica A reaches the database through the proxy; replica B directly.
	proxy := newPartitionProxy(t, fmt.Sprintf("%s:%d", cfg.Host, cfg.Port), "INSERT INTO chio_receipts")
	t.Cleanup(proxy.heal)
	dsnA := strings.Replace(dsn, fmt.Sprintf(":%d/", cfg.Port), fmt.Sprintf(":%d/", proxy.ln.Addr().(*net.TCPAddr).Port), 1)
	a, err := pgstore.Open(context.Background(), pgstore.Options{DSN: dsnA, Key: storetest.Key(), Lease: 2 * time.Second,
		IdleTxTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b := openPG(t, dsn)
	t.Cleanup(func() { proxy.heal(); a.Close() })

	appendOne := func(s *pgstore.Store, id string) error {
		return s.Update(context.Background(), func(tx kernel.Tx) error {
			tx.AppendReceipt(&receipt.Receipt{ID: id, Timestamp: 1, RequestID: "req-" + id, Decision: receipt.Decision{Verdict: receipt.Allow}})
			return nil
		})
	}
	// A's first receipt commit: the head's lock is taken in the first round
	// trip; the partition starts as the receipts are sent (second round trip).
	proxy.armed.Store(true)
	go appendOne(a, "rc-a")
	select {
	case <-proxy.hit:
	case <-time.After(20 * time.Second):
		t.Fatal("replica A never reached its receipts round trip")
	}
	time.Sleep(200 * time.Millisecond)

	// Replica B, healthy and directly connected, decides a call.
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- appendOne(b, "rc-b") }()
	const bound = 6 * time.Second // A's idle bound (1 s), with a wide margin
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("replica B's commit failed after %s while A was partitioned: %v", time.Since(start).Round(time.Millisecond), err)
		}
	case <-time.After(bound):
		var idle, waiting int
		if c, err := pgx.Connect(context.Background(), dsn); err == nil {
			c.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE state = 'idle in transaction'),
				count(*) FILTER (WHERE wait_event_type = 'Lock') FROM pg_stat_activity WHERE datname = current_database()`).Scan(&idle, &waiting)
			c.Close(context.Background())
		}
		t.Fatalf("replica B could not commit for %s: partitioned replica A still holds chio_log_head's lock "+
			"(%d session(s) idle in transaction, %d waiting on a lock)", bound, idle, waiting)
	}
	// A's transaction rolled back whole: the log has B's receipt alone, at
	// seq 1, with no gap where A's was numbered.
	err = b.View(func(tx kernel.ReadTx) error {
		if n := tx.LastSeq(); n != 1 {
			return fmt.Errorf("last seq %d, want 1", n)
		}
		if _, err := tx.Receipt("rc-a"); err == nil {
			return fmt.Errorf("the partitioned replica's receipt was stored")
		}
		_, err := tx.Receipt("rc-b")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
