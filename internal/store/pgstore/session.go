package pgstore

import (
	"strconv"
	"time"
)

// Session settings: how long a replica that vanished can hold locks.
//
// A replica can be cut off from the database between two round trips of
// its transaction (machine lost, network partitioned) while the
// transaction holds row locks — above all the log head's, which every
// commit that appends receipts takes in its first round trip and releases
// with COMMIT in its second (flush.go). PostgreSQL learns nothing of a
// partition (no FIN, no RST): by default the session stays "idle in
// transaction", its locks held, until TCP gives up, about two hours on
// Linux; every other replica's decisions wait on the lock and fail at
// CommitTimeout, and the service the replicas were meant to keep up is
// down. So every connection asks the server (in its startup packet) to end
// such a session itself, fast:
//
//   - idle_in_transaction_session_timeout ends a session idle inside a
//     transaction (its transaction rolls back, its locks are released);
//   - tcp_keepalives_* end an idle connection whose peer stopped answering,
//     and tcp_user_timeout one whose data the peer stopped acknowledging
//     (a backend blocked sending results to a vanished replica is not
//     "idle", so the first rule alone would not free it).
//
// A value the DSN sets itself wins (e.g. `?tcp_user_timeout=30000`).
//
// No lock_timeout is set: a lock is waited for only while its holder is
// alive (a vanished holder loses it within the bounds above), every
// receipt commit legitimately queues on the log head's lock, and a shorter
// bound would only turn those waits into failed, retried commits; a waiter
// is bounded by CommitTimeout anyway.
const (
	// DefaultIdleTxTimeout bounds how long a transaction may sit idle
	// between its round trips. A live replica's transaction is idle while
	// its functions compute between read pipelines and while it signs a
	// batch's receipts before the last round trip: ~25 µs per receipt, so
	// ~50 ms for the largest batch on an idle core — but a review measured
	// 10–19 s on two cores saturated by request handlers, and a live
	// transaction ended by this rule costs every call in it (503, retried
	// by clients). So the bound is CommitTimeout, which waiters on the lock
	// hit anyway. A PARTITIONED replica is cut sooner, by the keepalives
	// below (~11 s); this rule is for a replica that is reachable but
	// stalled (a paused process): it holds the log head at most this long.
	DefaultIdleTxTimeout = 30 * time.Second
	// TCPUserTimeout: data unacknowledged this long ends the connection.
	TCPUserTimeout = 10 * time.Second
	// Keepalives on an idle connection: the first probe after
	// KeepalivesIdle, then every KeepalivesInterval; KeepalivesCount
	// unanswered probes end it (a vanished peer is noticed in ~11 s).
	KeepalivesIdle     = 5 * time.Second
	KeepalivesInterval = 2 * time.Second
	KeepalivesCount    = 3
)

// sessionParams adds the settings above to a connection's runtime
// parameters, leaving any the DSN set.
func sessionParams(params map[string]string, idleTx time.Duration) {
	set := func(k string, v int64) {
		if _, ok := params[k]; !ok {
			params[k] = strconv.FormatInt(v, 10)
		}
	}
	set("idle_in_transaction_session_timeout", idleTx.Milliseconds())
	set("tcp_user_timeout", TCPUserTimeout.Milliseconds())
	set("tcp_keepalives_idle", int64(KeepalivesIdle/time.Second))
	set("tcp_keepalives_interval", int64(KeepalivesInterval/time.Second))
	set("tcp_keepalives_count", KeepalivesCount)
}
