package httpapi

// Sign-in challenges (session.go): stateless until a sign-in succeeds.
// A challenge is its expiry and a nonce under an HMAC with a per-process
// key, so issuing one stores nothing. sessionLogin checks the challenge,
// the key, the signature and that the key is an approver, and only then
// spends the challenge (take): a failed attempt leaves no trace, and a
// signed challenge lets exactly one sign-in in.
//
// Spent challenges are remembered until ChallengeTTL past their expiry
// (spentMargin), in a map (is it spent?) and a min-heap on that time
// (which go next?), so forgetting them costs O(log n) each, never a sweep
// of the whole table under the lock every session check takes.
//
// The margin is for a clock stepped back (an NTP correction, a VM
// restored): were a spent challenge forgotten as soon as it expired, a
// step back of a few seconds would make it unexpired and unspent again,
// and a captured signed sign-in body could be replayed. With the margin,
// a challenge is forgotten only once the clock reads ChallengeTTL past its
// expiry, so replaying it needs a step back of more than ChallengeTTL
// from the latest time a sign-in saw. That residual is accepted: a step
// that large also reopens every other time window chiod keeps, and a
// restart (a new challenge key) ends every challenge.

import (
	"container/heap"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"time"
)

// challengeMAC binds a challenge's expiry and nonce to this process.
func (ss *sessions) challengeMAC(body []byte) []byte {
	m := hmac.New(sha256.New, ss.key[:])
	m.Write(body)
	return m.Sum(nil)[:16]
}

// issue returns a fresh challenge: expiry (8 bytes) || nonce (16) || MAC (16).
func (ss *sessions) issue(now time.Time) (string, time.Time, error) {
	exp := now.Add(ChallengeTTL)
	body := make([]byte, 24, 40)
	binary.BigEndian.PutUint64(body[:8], uint64(exp.Unix()))
	if _, err := rand.Read(body[8:24]); err != nil {
		return "", time.Time{}, err
	}
	return base64.RawURLEncoding.EncodeToString(append(body, ss.challengeMAC(body)...)), exp, nil
}

// expiry returns c's expiry if c is a challenge this process issued and it
// has not expired at now. It reads no state: whether c was spent is take's.
func (ss *sessions) expiry(c string, now time.Time) (time.Time, bool) {
	raw, err := base64.RawURLEncoding.Strict().DecodeString(c)
	if err != nil || len(raw) != 40 || !hmac.Equal(raw[24:], ss.challengeMAC(raw[:24])) {
		return time.Time{}, false
	}
	exp := time.Unix(int64(binary.BigEndian.Uint64(raw[:8])), 0)
	if !now.Before(exp) {
		return time.Time{}, false
	}
	return exp, true
}

// valid reports whether c is ours and unexpired, without spending it.
func (ss *sessions) valid(c string, now time.Time) bool {
	_, ok := ss.expiry(c, now)
	return ok
}

// take spends a valid challenge: it must be ours, unexpired and never
// spent before. Call it only once the sign-in it admits has been verified.
// Past the table's cap it refuses (fails closed) until spent challenges
// are forgotten.
func (ss *sessions) take(c string, now time.Time) bool {
	exp, ok := ss.expiry(c, now)
	if !ok {
		return false
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.spent.spend(c, exp, now)
}

// spentMargin is how long past its expiry a spent challenge is still
// remembered: the largest clock step back that cannot replay it.
const spentMargin = ChallengeTTL

// spentChallenges remembers spent challenges until spentMargin past their
// expiry. The caller holds sessions.mu.
type spentChallenges struct {
	set   map[string]struct{}
	queue expiryHeap // the same challenges, soonest forgotten first
	max   int
}

func newSpentChallenges(max int) spentChallenges {
	return spentChallenges{set: map[string]struct{}{}, max: max}
}

// spend records c (expiring at exp) as spent; false if it already was or
// the table is full of challenges not yet to be forgotten. Challenges
// whose time to be forgotten (expiry + spentMargin) is at or before now go
// first, soonest first, stopping at the first that is not due.
func (sc *spentChallenges) spend(c string, exp, now time.Time) bool {
	for sc.queue.Len() > 0 && !now.Before(sc.queue[0].forget) {
		delete(sc.set, heap.Pop(&sc.queue).(spentChallenge).c)
	}
	if _, used := sc.set[c]; used {
		return false
	}
	if len(sc.set) >= sc.max {
		return false
	}
	sc.set[c] = struct{}{}
	heap.Push(&sc.queue, spentChallenge{c: c, forget: exp.Add(spentMargin)})
	return true
}

func (sc *spentChallenges) len() int { return len(sc.set) }

type spentChallenge struct {
	c      string
	forget time.Time // expiry + spentMargin
}

// expiryHeap is a container/heap min-heap of spent challenges on the time
// they are forgotten.
type expiryHeap []spentChallenge

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].forget.Before(h[j].forget) }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(spentChallenge)) }
func (h *expiryHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = spentChallenge{} // no lingering string in the backing array
	*h = old[:len(old)-1]
	return x
}
