package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/internal/store/storetest"
)

// A live replica whose connection pool is starved — every connection held
// by slow reads, stats queries or commits waiting on a lock — must still
// count as alive. Its heartbeat shared that pool: it waited for a
// connection, its heartbeat aged past the lease, and another replica was
// free to take over its calls in flight (an at_least_once call sent again
// while this replica was still delivering it).
func TestStarvedPoolDoesNotStopTheHeartbeat(t *testing.T) {
	dsn := pgtest.Database(t)
	const lease = time.Second
	s, err := Open(context.Background(), Options{DSN: dsn + "&pool_max_conns=4", Key: storetest.Key(), Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	// Starve the pool: hold every connection it may open.
	held := make([]*pgxpool.Conn, 0, 4)
	for range s.pool.Config().MaxConns {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := s.pool.Acquire(ctx)
		cancel()
		if err != nil {
			t.Fatalf("acquiring the pool's connections: %v", err)
		}
		held = append(held, c)
	}
	defer func() {
		for _, c := range held {
			c.Release()
		}
	}()

	// What another replica sees, on a connection of its own: is this
	// replica's heartbeat within the lease (ClaimOrphans' rule)?
	other, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.Background())
	alive := func() bool {
		var ok bool
		if err := other.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM chio_replicas
			WHERE id = $1 AND heartbeat_ms >= `+dbNowMS+` - $2)`, s.id, lease.Milliseconds()).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	// Three leases with the pool starved; the replica must look alive
	// throughout (checked at every tenth of a lease).
	for end := time.Now().Add(3 * lease); time.Now().Before(end); time.Sleep(lease / 10) {
		if !alive() {
			t.Fatal("with its connection pool starved, a live replica's heartbeat aged past the lease: " +
				"other replicas would take over its calls in flight")
		}
	}
}
