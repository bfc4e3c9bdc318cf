// Package toolserver is for authors of tool servers behind chio.
//
// chio sends every call with an Idempotency-Key header (the call's request
// id). A tool declared at_least_once (the default) may receive the same
// key more than once: after chiod crashed while the call was in flight, or
// after a transient failure (a refused connection, a 502/503/429). The
// tool must perform the effect once per key. Dedupe does that for an HTTP
// handler: the first delivery of a key runs the handler and records its
// answer durably (an fsync'd bbolt file) before replying; later deliveries
// get the recorded answer and do not run the handler again. The handler's
// answer (status, headers, body) is held back until it is recorded, so the
// handler cannot flush or hijack the connection; an answer larger than
// MaxRecordedBody is recorded "too large to replay" (410 for a repeat) and
// then streamed. If the record cannot be written, the client gets 502
// instead of the handler's answer (chio settles the call "unknown").
// Records are kept forever unless Options.RetainFor sets a horizon past
// which completed keys are forgotten (and would run again).
//
// One window remains and no middleware can close it: a crash of the TOOL
// SERVER after the effect and before the answer is recorded (or a record
// that cannot be written). Dedupe then knows the key was in progress but
// not whether the effect happened, and answers such a key 409 (outcome
// unknown) instead of running it again, unless Options.RerunInterrupted
// says the handler is safe to repeat. For
// exactly-once effects, commit the effect and the key in ONE transaction
// of your own database (a unique constraint on Key(r)); Dedupe then only
// saves you the repeated work.
package toolserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Header names.
const (
	// IdempotencyKeyHeader carries chio's request id.
	IdempotencyKeyHeader = "Idempotency-Key"
	// ReplayedHeader is set on an answer replayed from the record.
	ReplayedHeader = "Idempotent-Replayed"
	// NotRunHeader: "true" on Dedupe's own 503s, which refuse a delivery
	// before the handler runs. chio sends a call again, even one that must
	// not run twice (at_most_once), only after a 503 carrying it: a 503
	// without it may be a proxy's, sent after the tool acted. A handler
	// that answers 503 itself sets it only if it ran nothing.
	NotRunHeader = "Chio-Not-Run"
	// OutcomeHeader: "unknown" on Dedupe's 409 for a key whose earlier
	// delivery was interrupted. chio then records the call's execution as
	// unknown (it may have run), not as a tool failure.
	OutcomeHeader = "Chio-Outcome"
)

// Limits on what Dedupe accepts and keeps.
const (
	MaxKeyLen       = 256
	MaxRequestBytes = 1 << 20 // chio's arguments are at most 256 KiB
	MaxRecordedBody = 1 << 20 // chio reads at most 1 MiB of an answer
)

// Options configures Dedupe. The zero value is valid.
type Options struct {
	// RerunInterrupted runs the handler again for a key whose earlier
	// delivery was cut off by a crash of this server, or whose answer
	// could not be recorded (effect unknown).
	// Leave it false unless repeating the handler is harmless.
	RerunInterrupted bool
	// AllowMissingKey passes requests without an Idempotency-Key to the
	// handler undeduplicated; by default they are refused with 400.
	AllowMissingKey bool
	// RetainFor, if positive, forgets the record of a completed key once
	// it completed longer ago than this, so the file stops growing with
	// every key ever seen. The trade-off: a delivery of a forgotten key
	// runs the handler again, as if new. chiod re-sends a key after its
	// retry deadline only when recovering a call that was in flight when
	// it stopped, however long ago that was; so choose a horizon longer
	// than any chiod outage you would recover from (days, not minutes).
	// A key in progress (a delivery cut off, outcome unknown) is never
	// forgotten. Zero keeps every record.
	RetainFor time.Duration
	// Now is the clock records are dated by (default time.Now).
	Now func() time.Time
}

var bucketKeys = []byte("idempotency_keys")

// record is what is kept per key.
type record struct {
	State       string `json:"state"`       // "in_progress" | "done"
	Fingerprint string `json:"fingerprint"` // SHA-256 of method, path and body
	Status      int    `json:"status,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	Body        []byte `json:"body,omitempty"`
	At          int64  `json:"at"`
}

// Dedupe is the middleware. Construct it with Open; Close releases the file.
type Dedupe struct {
	db   *bolt.DB
	opts Options
	mu   sync.Mutex
	busy map[string]bool // keys running in this process

	lastPrune time.Time // under mu
}

// Open opens (creating) the record file at path.
func Open(path string, opts Options) (*Dedupe, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("toolserver: open %s: %w", path, err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(bucketKeys); err != nil {
			return err
		}
		if tx.Bucket(bucketDone) != nil {
			return nil
		}
		if _, err := tx.CreateBucket(bucketDone); err != nil {
			return err
		}
		return indexDone(tx)
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("toolserver: init: %w", err)
	}
	d := &Dedupe{db: db, opts: opts, busy: map[string]bool{}}
	d.maybePrune()
	return d, nil
}

func (d *Dedupe) now() time.Time {
	if d.opts.Now != nil {
		return d.opts.Now()
	}
	return time.Now()
}

// Close closes the record file.
func (d *Dedupe) Close() error { return d.db.Close() }

type keyCtx struct{}

// Key returns the idempotency key of a request passed through Dedupe, for
// handlers that record it with their effect in their own transaction.
func Key(r *http.Request) string {
	k, _ := r.Context().Value(keyCtx{}).(string)
	return k
}

// Wrap returns h deduplicated by Idempotency-Key.
func (d *Dedupe) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get(IdempotencyKeyHeader)
		if key == "" && d.opts.AllowMissingKey {
			h.ServeHTTP(w, r)
			return
		}
		if key == "" || len(key) > MaxKeyLen {
			httpError(w, http.StatusBadRequest, "an Idempotency-Key header of 1.."+fmt.Sprint(MaxKeyLen)+" bytes is required")
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
		if err != nil {
			httpError(w, http.StatusRequestEntityTooLarge, "request body too large or unreadable")
			return
		}
		fp := fingerprint(r, body)
		if !d.claim(key) {
			// The same key is running right now: it was not run again.
			w.Header().Set("Retry-After", "1")
			w.Header().Set(NotRunHeader, "true")
			httpError(w, http.StatusServiceUnavailable, "a delivery of this Idempotency-Key is in progress")
			return
		}
		defer d.release(key)
		defer d.maybePrune()
		rec, err := d.begin(key, fp)
		switch {
		case err != nil:
			w.Header().Set(NotRunHeader, "true") // the handler did not run
			httpError(w, http.StatusServiceUnavailable, "idempotency record unavailable: "+err.Error())
			return
		case rec != nil && rec.Fingerprint != fp:
			httpError(w, http.StatusUnprocessableEntity, "Idempotency-Key reused for a different request")
			return
		case rec != nil && rec.State == "done":
			replay(w, rec)
			return
		case rec != nil: // in_progress, not running (claim): a crash, or an unrecorded answer
			if !d.opts.RerunInterrupted {
				w.Header().Set(OutcomeHeader, "unknown")
				httpError(w, http.StatusConflict, "an earlier delivery of this Idempotency-Key was interrupted (a crash of the tool server, or its answer could not be recorded); its outcome is unknown and it is not run again")
				return
			}
		}
		// The answer is held back (answerBuffer) until what a repeat of the
		// key will get is durable: the client must never hold an answer the
		// record does not, or a crash here would leave a key in progress
		// whose caller already saw it succeed.
		ab := newAnswerBuffer(w, func(a *answerBuffer) error { return d.settle(key, fp, a, true) })
		r = r.WithContext(context.WithValue(r.Context(), keyCtx{}, key))
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(ab, r)
		switch {
		case ab.streaming:
			return // too large to keep: recorded before its first byte went out
		case ab.err == nil:
			if ab.err = d.settle(key, fp, ab, false); ab.err == nil {
				ab.send()
				return
			}
		}
		// The handler ran but its answer could not be recorded. The key stays
		// in progress (a repeat is answered 409, never run again) and the
		// handler's answer is not sent as if all were well. 502, not 500 or
		// 503: chio reads 500 as "ran and failed" (false here) and a 503 as
		// a refusal to send again; 502 is "may have run", settled unknown.
		w.Header().Set(OutcomeHeader, "unknown")
		httpError(w, http.StatusBadGateway, "the tool's answer could not be recorded for its Idempotency-Key, so it is not sent; the outcome is unknown: "+ab.err.Error())
	})
}

// settle makes durable what a repeat of key will get, before the client
// gets anything. tooLarge: the answer outgrew MaxRecordedBody.
func (d *Dedupe) settle(key, fp string, a *answerBuffer, tooLarge bool) error {
	status := a.finalStatus()
	switch {
	case status == http.StatusTooManyRequests ||
		status == http.StatusServiceUnavailable && a.finalHeader().Get(NotRunHeader) == "true":
		// "Not now": the handler did not run the effect; a later delivery
		// must run it, not replay the refusal. The refusal is true either
		// way, so it is sent even if the forget fails: the key then stays
		// in progress and a repeat is answered 409, never run twice.
		// A 503 without Chio-Not-Run: true may have run (chio reads it so
		// and sends the key again): it is recorded and replayed like any
		// other answer, so the repeat does not run the effect a second time.
		_ = d.forget(key)
		return nil
	case tooLarge:
		// The handler completed, but its answer is too large to keep: a
		// repeat must neither run it again nor be told a crash cut it off.
		// It is answered 410 Gone, saying so.
		return d.finish(key, &record{State: "done", Fingerprint: fp, Status: http.StatusGone, ContentType: "application/json",
			Body: errorBody("this Idempotency-Key's delivery completed, but its answer was larger than the " +
				fmt.Sprint(MaxRecordedBody) + " bytes kept for replay; it is not run again"),
			At: d.now().Unix()})
	}
	return d.finish(key, &record{State: "done", Fingerprint: fp, Status: status,
		ContentType: a.finalHeader().Get("Content-Type"), Body: a.body.Bytes(), At: d.now().Unix()})
}

func (d *Dedupe) claim(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.busy[key] {
		return false
	}
	d.busy[key] = true
	return true
}

func (d *Dedupe) release(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.busy, key)
}

// begin returns the existing record of key, or durably marks key in
// progress and returns nil. Only one goroutine per key gets here (claim).
func (d *Dedupe) begin(key, fp string) (*record, error) {
	var existing *record
	err := d.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketKeys)
		if v := b.Get([]byte(key)); v != nil {
			var rec record
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("corrupt record for key: %w", err)
			}
			if rec.State == "done" || rec.Fingerprint != fp {
				existing = &rec
				return nil
			}
			existing = &rec // in_progress, left by a crash (this process holds the claim)
			return nil
		}
		v, _ := json.Marshal(record{State: "in_progress", Fingerprint: fp, At: d.now().Unix()})
		return b.Put([]byte(key), v)
	})
	return existing, err
}

func (d *Dedupe) finish(key string, rec *record) error {
	v, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return d.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketKeys).Put([]byte(key), v); err != nil {
			return err
		}
		return tx.Bucket(bucketDone).Put(doneIndexKey(rec.At, key), nil) // finish only records "done"
	})
}

func (d *Dedupe) forget(key string) error {
	return d.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketKeys).Delete([]byte(key)) })
}

func fingerprint(r *http.Request, body []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", r.Method, r.URL.Path)
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

func replay(w http.ResponseWriter, rec *record) {
	if rec.ContentType != "" {
		w.Header().Set("Content-Type", rec.ContentType)
	}
	w.Header().Set(ReplayedHeader, "true")
	w.WriteHeader(rec.Status)
	_, _ = w.Write(rec.Body)
}

func httpError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(errorBody(msg))
}

// errorBody is {"error": msg} as httpError writes it.
func errorBody(msg string) []byte {
	b, _ := json.Marshal(map[string]string{"error": msg})
	return append(b, '\n')
}
