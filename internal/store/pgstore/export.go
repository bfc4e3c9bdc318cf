package pgstore

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

var _ receipt.Exporter = (*Store)(nil)

// Export writes the audit export (receipt.ExportFormat) from one
// REPEATABLE READ snapshot, so receipts, checkpoints and evidence agree: no
// checkpoint covers a receipt the file lacks, whatever the other replicas
// commit meanwhile. The receipts carrying approval evidence are found
// through the metadata-key index, so only those are decoded.
func (s *Store) Export(ctx context.Context, w io.Writer) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("pgstore: export: %w", err)
	}
	defer tx.Rollback(context.Background())
	// The snapshot stays open while the file is written, at the reader's
	// pace: no idle bound here. It locks no rows (read only), and a
	// vanished replica's session still ends by TCP (session.go).
	if _, err := tx.Exec(ctx, "SET LOCAL idle_in_transaction_session_timeout = 0"); err != nil {
		return fmt.Errorf("pgstore: export: %w", err)
	}
	last, err := lastSeq(ctx, tx)
	if err != nil {
		return err
	}
	x := receipt.NewExportWriter(w, receipt.ExportHeader{KernelKey: s.key.Public().String(),
		ExportedAt: time.Now().UnixMilli(), Receipts: last})
	var werr error
	err = scanReceipts(runnerOf(ctx, tx), 1, last, func(_ uint64, raw []byte) bool {
		werr = x.Signed(raw)
		return werr == nil && ctx.Err() == nil
	})
	if err = firstErr(err, werr, ctx.Err()); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, "SELECT raw FROM chio_checkpoints WHERE tree_size <= $1 ORDER BY tree_size", int64(last))
	if err != nil {
		return err
	}
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			rows.Close()
			return err
		}
		if err := x.Signed(raw); err != nil {
			rows.Close()
			return err
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	rt := &readTx{s: s, ctx: ctx, snap: tx}
	if err := exportEvidence(ctx, tx, last, "approval_token_id", "approval_request_id", func(id string) (any, error) {
		req, err := rt.Approval(id)
		if err != nil {
			return nil, fmt.Errorf("pgstore: export: approval %s: %w", id, err)
		}
		return req.Evidence(), nil
	}, x); err != nil {
		return err
	}
	if err := exportEvidence(ctx, tx, last, "batch_approval_id", "batch_approval_id", func(id string) (any, error) {
		b, err := rt.Batch(id)
		if err != nil {
			return nil, fmt.Errorf("pgstore: export: batch %s: %w", id, err)
		}
		return receipt.BatchEvidence{Type: receipt.EvidenceBatch, BatchApprovalID: id, Token: b.Raw}, nil
	}, x); err != nil {
		return err
	}
	return x.Flush()
}

// exportEvidence writes one evidence record per distinct metadata[idKey]
// among the receipts (seq ≤ last) that carry metadata key marker.
func exportEvidence(ctx context.Context, tx pgx.Tx, last uint64, marker, idKey string, build func(string) (any, error), x *receipt.ExportWriter) error {
	seen := map[string]bool{}
	after := int64(0)
	for {
		rows, err := tx.Query(ctx, `SELECT seq, raw FROM chio_receipts WHERE meta_keys @> $1::bytea[] AND seq > $2 AND seq <= $3
			ORDER BY seq LIMIT $4`, [][]byte{[]byte(marker)}, after, int64(last), ScanChunk)
		if err != nil {
			return err
		}
		var ids []string
		n := 0
		for rows.Next() {
			var raw []byte
			if err := rows.Scan(&after, &raw); err != nil {
				rows.Close()
				return err
			}
			n++
			r, err := receipt.Decode(raw)
			if err != nil {
				continue // exported as stored; verification reports it
			}
			v, ok := r.Metadata[idKey]
			if id := receipt.MetaString(v); ok && id != "" && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, id := range ids {
			rec, err := build(id)
			if err != nil {
				return err
			}
			if err := x.Record(rec); err != nil {
				return err
			}
		}
		if n < ScanChunk {
			return nil
		}
	}
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

var _ kernel.ReadTx = (*readTx)(nil)
