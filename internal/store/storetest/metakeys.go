package storetest

import (
	"slices"
	"strings"
	"testing"

	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// A metadata-key filter answers what receipt.Filter.Match answers for
// every key a receipt can carry, the empty one and one longer than any
// index keeps included: only the receipts that have the key. (bbolt took
// a filter on the empty key for no filter at all, and listed every
// receipt.)
func testMetaKeyFilters(t *testing.T, b Backend) {
	s, _ := open(t, b)
	long := strings.Repeat("k", 600)
	metas := []map[string]any{{}, {"": "empty key"}, {"approver": "k1"}, {long: true}, {"": 1, "approver": "k2"}}
	update(t, s, func(tx kernel.Tx) error {
		for i := 0; i < 20; i++ {
			r := newReceipt(i + 1)
			r.Metadata = map[string]any{}
			for k, v := range metas[i%len(metas)] {
				r.Metadata[k] = v
			}
			tx.AppendReceipt(r)
		}
		return nil
	})
	all := AllStored(t, s)
	for _, key := range []string{"", "approver", long, "missing"} {
		for _, q := range []receipt.Query{{}, {Desc: true}, {Decode: true}} {
			q.Filter.Meta = []receipt.MetaFilter{{Key: key}}
			var want, got []uint64
			for _, st := range all {
				if q.Filter.Match(st.RC) {
					want = append(want, st.Seq)
				}
			}
			if q.Desc {
				slices.Reverse(want)
			}
			err := s.QueryReceipts(q, func(seq uint64, _ []byte, _ *receipt.Receipt) bool { got = append(got, seq); return true })
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("metadata key %q…, desc %v: got %v, want %v", key[:min(len(key), 8)], q.Desc, got, want)
			}
		}
		st, err := s.ReceiptStats(receipt.Filter{Meta: []receipt.MetaFilter{{Key: key}}}, "")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, x := range all {
			if (&receipt.Filter{Meta: []receipt.MetaFilter{{Key: key}}}).Match(x.RC) {
				n++
			}
		}
		if st.Total != uint64(n) {
			t.Errorf("stats of metadata key %q…: total %d, want %d", key[:min(len(key), 8)], st.Total, n)
		}
	}
}
