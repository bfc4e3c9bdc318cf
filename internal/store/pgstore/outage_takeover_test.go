package pgstore_test

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/kernel"
)

// gate forwards TCP to a PostgreSQL server while open; while shut it
// refuses new connections (closes them at once): a replica whose route to
// the database comes back later than another's.
type gate struct {
	ln   net.Listener
	shut atomic.Bool
}

func newGate(t *testing.T, dsn string) (*gate, string) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	target := u.Host
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	g := &gate{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if g.shut.Load() {
				c.Close()
				continue
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			go func() { io.Copy(s, c); s.Close() }()
			go func() { io.Copy(c, s); c.Close() }()
		}
	}()
	u.Host = ln.Addr().String()
	return g, u.String()
}

// A database outage longer than the lease (the server crashed and
// restarted) leaves every replica's heartbeat stale, the live ones' too:
// none could beat while it was down. The first replica back must not take
// that as the others being gone and take over the calls they are still
// delivering (a second delivery of a call whose tool may be running).
func TestNoTakeoverOfLiveReplicasRightAfterAnOutage(t *testing.T) {
	srv, err := pgtest.Start()
	if err != nil {
		pgtest.Unavailable(t, err)
	}
	t.Cleanup(srv.Stop)
	dsn, err := srv.CreateDatabase(t.Name())
	if err != nil {
		t.Fatal(err)
	}
	route, dsnB := newGate(t, dsn)
	a, b := openPG(t, dsn), openPG(t, dsnB) // lease 2 s
	ctx := context.Background()
	// b's call in flight: its allow decision durable, its tool not yet answered.
	if err := b.Update(ctx, func(tx kernel.Tx) error {
		return tx.PutCall(&kernel.CallRecord{RequestID: "req-b", Status: kernel.StatusDispatching, DecisionReceiptID: "rc-b"})
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := a.ClaimOrphans(ctx, 10); err != nil || len(got) != 0 {
		t.Fatalf("b is alive: a claimed %d calls (%v)", len(got), err)
	}

	srv.Crash() // pg_ctl stop -m immediate
	route.shut.Store(true)
	time.Sleep(3 * time.Second) // longer than the lease
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// a is back first; b's route a moment later. a's pool's connections
	// were cut: its first attempts may fail.
	var got []*kernel.CallRecord
	for i := 0; ; i++ {
		if got, err = a.ClaimOrphans(ctx, 10); err == nil || i == 50 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	route.shut.Store(false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > 0 {
		t.Fatalf("right after the database came back, replica a took over call %s, which live replica b is still delivering", got[0].RequestID)
	}

	// b goes for good: its call is a's to finish.
	b.Close()
	eventually(t, "a takes over the call of b, now gone", func() bool {
		got, err := a.ClaimOrphans(ctx, 10)
		return err == nil && len(got) == 1 && got[0].RequestID == "req-b"
	})
}

// The same outage, seen by a replica that starts right after it: every
// heartbeat is stale, the live replicas' too (nobody could beat), and a
// replica that has only just started has not watched anyone miss a beat.
// It must not take over the calls of a live replica whose route to the
// database comes back a moment later.
func TestNoTakeoverOfLiveReplicasByAReplicaStartedRightAfterAnOutage(t *testing.T) {
	srv, err := pgtest.Start()
	if err != nil {
		pgtest.Unavailable(t, err)
	}
	t.Cleanup(srv.Stop)
	dsn, err := srv.CreateDatabase(t.Name())
	if err != nil {
		t.Fatal(err)
	}
	route, dsnB := newGate(t, dsn)
	b := openPG(t, dsnB) // lease 2 s
	ctx := context.Background()
	if err := b.Update(ctx, func(tx kernel.Tx) error {
		return tx.PutCall(&kernel.CallRecord{RequestID: "req-b", Status: kernel.StatusDispatching, DecisionReceiptID: "rc-b"})
	}); err != nil {
		t.Fatal(err)
	}

	srv.Crash()
	route.shut.Store(true)
	time.Sleep(3 * time.Second) // longer than the lease
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// A new replica starts now; b's route comes back a moment later.
	c := openPG(t, dsn)
	got, err := c.ClaimOrphans(ctx, 10)
	route.shut.Store(false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > 0 {
		t.Fatalf("a replica started right after the database came back took over call %s, which live replica b is still delivering", got[0].RequestID)
	}

	// b goes for good: its call is c's to finish.
	b.Close()
	eventually(t, "c takes over the call of b, now gone", func() bool {
		got, err := c.ClaimOrphans(ctx, 10)
		return err == nil && len(got) == 1 && got[0].RequestID == "req-b"
	})
}
