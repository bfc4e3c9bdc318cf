package kernel

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/chiokernel/chio/receipt"
)

// rateKey is the max_calls_per_minute window a grant's calls by subject
// count in.
func rateKey(grantID, subject string) string { return grantID + "\x00" + subject }

// rebuildRateWindow, at start-up, counts again in the in-memory window the
// calls of the last minute that the store holds, so that a restart (a
// crash loop, a deploy, an OOM kill) hands no agent a fresh allowance
// within the minute. A store that counts the calls itself (RateCounter)
// needs none; one whose receipts cannot be queried by time is not rebuilt
// (its window starts empty).
//
// The window counts every call judged under a grant with a limit, once,
// whatever became of it (allowed, parked, denied by any guard, the rate
// included), at the moment it was judged. Each such call is a record made
// durable by that decision, with its grant, subject and that moment
// (CreatedAt), and its first receipt is stamped at the same moment. So the
// calls to count are the records behind the receipts stamped in the last
// minute, each once, if created in that minute: later receipts of older
// calls (a resume, a settlement) count nothing. The receipts are found by
// the store's time index (bbolt: one time span per block of 1024
// receipts, then only the receipts of the blocks that meet the minute),
// never by reading the whole log. The calls are replayed in time order
// into the window (at the end of the millisecond the record keeps), all
// of them: a replay under the limit in force would keep only limit+1 of
// each key,
// and a restart that lowers the limit, then a reload that restores it
// within the minute, would hand out a fresh allowance (rateWindow.hit
// never drops more than the one call it adds, for the same reason).
//
// Not rebuilt: calls whose decision never became durable (a failed commit,
// a call refused with an error), which had no effect, and the second count
// of a call a reload re-judged under another grant or limit
// (decisionRate). Whether a call's grant had a limit when it was judged
// the store does not say, so every call judged under a grant counts, as
// if it had: a restart that drops a limit, then a reload that restores it
// within the minute, must not hand out a fresh allowance either. So a
// grant given its limit by the policy chiod restarts with (or by a reload
// within that minute) counts its calls of the minute before, toward a
// deny, for that minute only.
func (k *Kernel) rebuildRateWindow() error {
	if _, ok := k.store.(RateCounter); ok {
		return nil
	}
	ix, ok := k.store.(receipt.Index)
	if !ok {
		return nil
	}
	since := k.clock.Now().Add(-time.Minute).UnixMilli()
	seen := map[string]bool{}
	var ids []string
	err := ix.QueryReceipts(receipt.Query{Filter: receipt.Filter{Since: since}, Decode: true},
		func(_ uint64, _ []byte, r *receipt.Receipt) bool {
			if r.RequestID != "" && !seen[r.RequestID] {
				seen[r.RequestID] = true
				ids = append(ids, r.RequestID)
			}
			return true
		})
	if err != nil {
		return fmt.Errorf("read the last minute's receipts: %w", err)
	}
	type hit struct {
		key string
		at  int64
	}
	var hits []hit
	const chunk = 256 // records read per read transaction
	for len(ids) > 0 {
		n := min(len(ids), chunk)
		err := k.store.View(func(tx ReadTx) error {
			for _, id := range ids[:n] {
				rec, err := tx.Call(id)
				if errors.Is(err, ErrNotFound) {
					continue
				}
				if err != nil {
					return err
				}
				if rec.GrantID == "" || rec.CreatedAt < since {
					continue // judged by no grant, or before the minute
				}
				hits = append(hits, hit{rateKey(rec.GrantID, rec.Subject), rec.CreatedAt})
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("read the last minute's calls: %w", err)
		}
		ids = ids[n:]
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].at < hits[j].at })
	for _, h := range hits {
		// The record keeps the millisecond, the window kept the moment
		// within it: replayed at the millisecond's last nanosecond, a call
		// never leaves the window before it would have without the
		// restart (at worst it counts up to 1 ms longer: toward a deny).
		at := time.UnixMilli(h.at).Add(time.Millisecond - time.Nanosecond)
		k.rate.hit(h.key, at, len(hits)) // keeps every hit
	}
	return nil
}
