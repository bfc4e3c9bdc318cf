-- Standing approvals are kept forever (receipts name them and exports
-- carry their tokens), so the allow path reads only the live ones
-- (fnTx.LiveBatches): not retired (revoked, or every call used) and with
-- not_after after the kernel's clock. Both columns are derived from the
-- stored batch and written with it on every change (flush.go).
ALTER TABLE chio_batches
    ADD COLUMN not_after bigint  NOT NULL DEFAULT 0,
    ADD COLUMN retired   boolean NOT NULL DEFAULT false;

UPDATE chio_batches SET
    not_after = coalesce((d.j->'token'->>'not_after')::bigint, 0),
    retired   = coalesce((d.j->>'revoked')::boolean, false)
             OR (d.j->'token'->>'max_calls' IS NOT NULL
                 AND coalesce((d.j->'usage'->>'calls')::bigint, 0) >= (d.j->'token'->>'max_calls')::bigint)
FROM (SELECT id, convert_from(batch, 'UTF8')::jsonb AS j FROM chio_batches) AS d
WHERE chio_batches.id = d.id;

-- Every write names both columns; a write that forgot them fails.
ALTER TABLE chio_batches ALTER COLUMN not_after DROP DEFAULT, ALTER COLUMN retired DROP DEFAULT;

CREATE INDEX chio_batches_live ON chio_batches (not_after) WHERE NOT retired;
