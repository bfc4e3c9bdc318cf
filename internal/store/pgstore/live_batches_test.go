package pgstore_test

import (
	"testing"

	"github.com/chiokernel/chio/internal/store/storetest"
)

// A database at schema 1 (no live-batch columns) gets them filled from the
// stored batches by migration 2.
func TestLiveBatchColumnsFilledOnUpgrade(t *testing.T) {
	storetest.LiveBatchesAfterUpgrade(t, backend(), func(t *testing.T, dsn string) {
		exec(t, dsn, "ALTER TABLE chio_batches DROP COLUMN not_after, DROP COLUMN retired")
		exec(t, dsn, "DROP TABLE chio_vote_arrivals") // schema 4
		exec(t, dsn, "DELETE FROM chio_schema WHERE version >= 2")
	})
}
