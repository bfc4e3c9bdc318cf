package pgstore

import "time"

// A replica cut off from the database judges nobody gone until it has been
// back for a whole lease.
//
// Whether a replica is gone is read from its heartbeat: older than the
// lease, it is gone, and its calls in flight are taken over (ClaimOrphans).
// But while the database was down (a crash, a restart, a failover), or
// unreachable from every replica, nobody could beat: when it returns,
// every heartbeat is stale, the live replicas' too, and the first replica
// back would take over the calls the others are still delivering — a
// second delivery of an at_least_once call whose tool may be running, an
// at_most_once call settled "unknown" while its tool answers. This
// replica's own heartbeat failing is the sign: from its failure until a
// lease after it beats again, it claims no orphaned call. The live
// replicas beat within that lease (every fifth of it); one that does not
// is gone by the usual rule. A replica that has just started is in the
// same place (it may be starting right after an outage, every heartbeat
// stale): for its first lease it claims no orphaned call either. A call
// left by a replica that really is gone waits at most that lease more.
//
// noteReach records the outcome of one heartbeat.
func (s *Store) noteReach(ok bool) {
	if !ok {
		s.cutOff.Store(true)
		return
	}
	if s.cutOff.Swap(false) {
		now := time.Now()
		s.backAt.Store(&now)
	}
}

// justBack reports whether this replica's heartbeat is failing, or beat
// again less than a lease ago after failing, or it started less than a
// lease ago.
func (s *Store) justBack() bool {
	if s.cutOff.Load() {
		return true
	}
	at := s.backAt.Load()
	return at != nil && time.Since(*at) < s.opts.Lease
}
