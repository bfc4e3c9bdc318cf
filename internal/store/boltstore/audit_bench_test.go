package boltstore_test

// The auditors' side at scale (DESIGN.md's 1M-receipt row). The store is
// generated once per test binary, and only when a benchmark asks for it, so
// `go test ./...` never pays for it:
//
//	go test ./internal/store/boltstore -run '^$' -bench Audit -benchtime 1x -timeout 30m
//
// CHIO_BENCH_RECEIPTS overrides the size (default 1,000,000).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/internal/store/boltstore/synth"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

type auditFixture struct {
	dir   string
	path  string
	key   keys.PrivateKey
	store *boltstore.Store
	log   *receipt.Log
	ids   []string // a sample of receipt ids
	first time.Time
	last  time.Time
	n     int
}

var (
	auditOnce sync.Once
	audit     *auditFixture
	auditErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if audit != nil {
		audit.store.Close()
		os.RemoveAll(audit.dir)
	}
	os.Exit(code)
}

func openAudit(path string, key keys.PrivateKey) (*boltstore.Store, *receipt.Log, error) {
	log := receipt.NewLog(key, receipt.LogOptions{Interval: time.Hour})
	s, err := boltstore.Open(path, key, boltstore.Options{Log: log})
	if err != nil {
		return nil, nil, err
	}
	if err := log.Start(context.Background(), s); err != nil {
		s.Close()
		return nil, nil, err
	}
	return s, log, nil
}

func auditStore(b *testing.B) *auditFixture {
	auditOnce.Do(func() {
		n := 1_000_000
		if v, err := strconv.Atoi(os.Getenv("CHIO_BENCH_RECEIPTS")); err == nil && v > 0 {
			n = v
		}
		f := &auditFixture{n: n, key: keys.FromSeed(bytes.Repeat([]byte{42}, 32))}
		if f.dir, auditErr = os.MkdirTemp("", "chio-audit-bench"); auditErr != nil {
			return
		}
		f.path = filepath.Join(f.dir, "chio.db")
		s, err := boltstore.Open(f.path, f.key, boltstore.Options{})
		if err != nil {
			auditErr = err
			return
		}
		start := time.Now()
		sum, err := synth.Generate(context.Background(), s, f.key, synth.Config{Receipts: n, Seed: 7})
		s.Close()
		if err != nil {
			auditErr = err
			return
		}
		fmt.Fprintf(os.Stderr, "generated %d receipts in %s (%d chains, %d batch, %d pending)\n", sum.Receipts,
			time.Since(start).Round(time.Second), sum.Chains, sum.Batched, sum.Pending)
		f.first, f.last = sum.First, sum.Last
		if f.store, f.log, auditErr = openAudit(f.path, f.key); auditErr != nil {
			return
		}
		rng := rand.New(rand.NewPCG(1, 1))
		f.store.View(func(tx kernel.ReadTx) error {
			for i := 0; i < 20000; i++ {
				tx.Receipts(1+uint64(rng.IntN(n)), uint64(n), func(_ uint64, raw []byte) bool {
					var head struct {
						ID string `json:"id"`
					}
					json.Unmarshal(raw, &head)
					f.ids = append(f.ids, head.ID)
					return false
				})
			}
			return nil
		})
		audit = f
	})
	if auditErr != nil {
		b.Fatal(auditErr)
	}
	return audit
}

func pct(lat []time.Duration, p float64) time.Duration {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat[min(len(lat)-1, int(float64(len(lat))*p))]
}

// Latency benchmarks take a fixed sample per iteration, so that
// -benchtime 1x (one generation of the store, every benchmark once) still
// yields percentiles.
const (
	byIDSamples = 20000
	listSamples = 2000
)

// BenchmarkAuditByID: GET /v1/receipts/{id}'s store work, random ids.
func BenchmarkAuditByID(b *testing.B) {
	f := auditStore(b)
	var lat []time.Duration
	b.ResetTimer()
	for b.Loop() {
		for i := 0; i < byIDSamples; i++ {
			t0 := time.Now()
			var raw []byte
			err := f.store.View(func(tx kernel.ReadTx) error {
				v, err := tx.Receipt(f.ids[i%len(f.ids)])
				raw = bytes.Clone(v)
				return err
			})
			if err != nil || len(raw) == 0 {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
	}
	b.ReportMetric(float64(pct(lat, 0.50).Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(pct(lat, 0.99).Nanoseconds())/1e3, "p99-µs")
}

// BenchmarkAuditList: `chio receipt list --decision D --since/--until` over
// a random one-hour window, a page of 100, encoded as the HTTP answer is.
func BenchmarkAuditList(b *testing.B) {
	f := auditStore(b)
	rng := rand.New(rand.NewPCG(2, 2))
	span := f.last.Sub(f.first) - time.Hour
	var lat []time.Duration
	got := 0
	b.ResetTimer()
	for b.Loop() {
		for i := 0; i < listSamples; i++ {
			since := f.first.Add(time.Duration(rng.Int64N(int64(span))))
			q := receipt.Query{Filter: receipt.Filter{Decision: []string{"allow", "allow", "deny", "incomplete"}[rng.IntN(4)],
				Since: since.UnixMilli(), Until: since.Add(time.Hour).UnixMilli()}, Desc: rng.IntN(2) == 0}
			t0 := time.Now()
			page := make([]json.RawMessage, 0, 100)
			err := f.store.QueryReceipts(q, func(_ uint64, raw []byte, _ *receipt.Receipt) bool {
				page = append(page, bytes.Clone(raw))
				return len(page) < 100
			})
			if err != nil {
				b.Fatal(err)
			}
			var buf bytes.Buffer
			json.NewEncoder(&buf).Encode(map[string]any{"receipts": page, "count": len(page)})
			lat = append(lat, time.Since(t0))
			got += len(page)
		}
	}
	b.ReportMetric(float64(pct(lat, 0.50).Microseconds())/1e3, "p50-ms")
	b.ReportMetric(float64(pct(lat, 0.99).Microseconds())/1e3, "p99-ms")
	b.ReportMetric(float64(got)/float64(len(lat)), "receipts/page")
}

// BenchmarkAuditListMeta: the seed's list queries, newest page of 100.
func BenchmarkAuditListMeta(b *testing.B) {
	f := auditStore(b)
	queries := []receipt.Filter{
		{Decision: "incomplete", Meta: []receipt.MetaFilter{{Key: "approval_request_id"}}, Since: f.last.Add(-24 * time.Hour).UnixMilli()},
		{Decision: "deny", Guard: "human-approval"},
		{Decision: "allow", Meta: []receipt.MetaFilter{{Key: "auto_approved", Value: "true", HasValue: true}}},
	}
	var lat []time.Duration
	b.ResetTimer()
	for b.Loop() {
		for i := 0; i < 3*100; i++ {
			t0 := time.Now()
			n := 0
			err := f.store.QueryReceipts(receipt.Query{Filter: queries[i%len(queries)], Desc: true}, func(uint64, []byte, *receipt.Receipt) bool {
				n++
				return n < 100
			})
			if err != nil || n == 0 {
				b.Fatal(err, n)
			}
			lat = append(lat, time.Since(t0))
		}
	}
	b.ReportMetric(float64(pct(lat, 0.99).Microseconds())/1e3, "p99-ms")
}

// BenchmarkAuditListUnindexed: `chio receipt list --request-id R` for a
// request no receipt has: no index answers it, so every receipt is decoded.
func BenchmarkAuditListUnindexed(b *testing.B) {
	f := auditStore(b)
	for b.Loop() {
		n := 0
		err := f.store.QueryReceipts(receipt.Query{Filter: receipt.Filter{RequestID: "no-such-request"}}, func(uint64, []byte, *receipt.Receipt) bool {
			n++
			return true
		})
		if err != nil || n != 0 {
			b.Fatal(err, n)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/list")
}

func runStats(b *testing.B, f *auditFixture, filter receipt.Filter, groupBy string) receipt.StatsResult {
	res, err := f.store.ReceiptStats(filter, groupBy) // what GET /v1/receipts/stats runs
	if err != nil {
		b.Fatal(err)
	}
	return res
}

// BenchmarkAuditStatsSeed: `chio receipt stats --decision allow --meta
// approver --group-by metadata.approver_display_name`.
func BenchmarkAuditStatsSeed(b *testing.B) {
	f := auditStore(b)
	var res receipt.StatsResult
	for b.Loop() {
		res = runStats(b, f, receipt.Filter{Decision: "allow", Meta: []receipt.MetaFilter{{Key: "approver"}}}, "metadata.approver_display_name")
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/stats")
	b.ReportMetric(float64(res.Total), "receipts")
}

// BenchmarkAuditStatsAll: the whole log, grouped by decision.
func BenchmarkAuditStatsAll(b *testing.B) {
	f := auditStore(b)
	var res receipt.StatsResult
	for b.Loop() {
		res = runStats(b, f, receipt.Filter{}, "decision")
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/stats")
	b.ReportMetric(float64(res.Total), "receipts")
}

// BenchmarkAuditExportVerify: `chio receipt export` then `chio receipt
// verify --file`: every signature, seq, chain, token and the Merkle root.
func BenchmarkAuditExportVerify(b *testing.B) {
	f := auditStore(b)
	path := filepath.Join(f.dir, "export.jsonl")
	for b.Loop() {
		t0 := time.Now()
		if _, _, err := f.log.Checkpoint(context.Background()); err != nil {
			b.Fatal(err)
		}
		out, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := f.store.Export(context.Background(), out); err != nil {
			b.Fatal(err)
		}
		out.Close()
		exportTook := time.Since(t0)
		in, _ := os.Open(path)
		t1 := time.Now()
		rep, err := receipt.VerifyExport(in, receipt.VerifyOptions{KernelKey: f.key.Public()})
		in.Close()
		if err != nil || !rep.OK() || rep.Receipts < uint64(f.n) {
			b.Fatalf("%v %d %+v", err, rep.Receipts, rep.Problems)
		}
		b.ReportMetric(exportTook.Seconds(), "s/export")
		b.ReportMetric(time.Since(t1).Seconds(), "s/verify")
		b.ReportMetric(float64(rep.Receipts), "receipts")
		b.ReportMetric(float64(runtime.GOMAXPROCS(0)), "cores")
	}
}

// BenchmarkAuditRestart: Open (indexes current) + load every leaf + build
// the Merkle tree + check it against the latest signed checkpoint.
func BenchmarkAuditRestart(b *testing.B) {
	f := auditStore(b)
	f.store.Close()
	for b.Loop() {
		t0 := time.Now()
		s, l, err := openAudit(f.path, f.key)
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(t0)
		if l.Size() < uint64(f.n) {
			b.Fatalf("log size %d", l.Size())
		}
		b.ReportMetric(took.Seconds(), "s/restart")
		if err := l.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
	var err error
	if f.store, f.log, err = openAudit(f.path, f.key); err != nil {
		b.Fatal(err)
	}
}
