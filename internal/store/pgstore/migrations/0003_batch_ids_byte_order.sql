-- Standing approval ids are chosen by their signers ([A-Za-z0-9._:-]) and
-- are visited in byte order (kernel.ReadTx.Batches, as boltstore does):
-- Batches(after) pages by "id > after" and LiveBatches locks in id order.
-- Under the database's default collation (en_US and the like sort case-
-- insensitively and weigh "-" "." "_" ":" apart from their bytes) a
-- listing came in another order than on boltstore, and Batches(after)
-- inside a transaction missed ids after "after" in bytes but not in the
-- collation. The C collation is byte order; the key's index is rebuilt.
ALTER TABLE chio_batches ALTER COLUMN id TYPE text COLLATE "C";
