-- chio's PostgreSQL schema, version 1. Applied once, in one transaction,
-- under an advisory lock (migrate.go). Every name starts with chio_ so the
-- database may be shared with other applications.
--
-- Values that come from callers and may hold any bytes (NUL included: a
-- JSON string may say \u0000, which PostgreSQL's text refuses) are bytea.
-- Identifiers chio generates or validates (request ids, approval ids,
-- token ids, capability ids, replica ids) are text.

CREATE TABLE chio_meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);

-- The one row every commit that appends receipts locks and advances: seq is
-- assigned under this lock, inside the committing transaction, so the log
-- is gapless (a rolled-back transaction leaves no hole) and commits that
-- append receipts are totally ordered across replicas.
CREATE TABLE chio_log_head (
    id       smallint PRIMARY KEY CHECK (id = 1),
    last_seq bigint NOT NULL CHECK (last_seq >= 0)
);
INSERT INTO chio_log_head (id, last_seq) VALUES (1, 0);

-- raw is the signed receipt exactly as hashed and served; leaf is its RFC
-- 6962 leaf hash. The other columns are what audit queries filter on.
CREATE TABLE chio_receipts (
    seq        bigint PRIMARY KEY CHECK (seq > 0),
    id         text   NOT NULL UNIQUE,
    ts         bigint NOT NULL,
    verdict    bytea  NOT NULL,
    guard      bytea  NOT NULL,
    server     bytea  NOT NULL,
    tool       bytea  NOT NULL,
    subject    bytea  NOT NULL,
    request_id bytea  NOT NULL,
    meta_keys  bytea[] NOT NULL,
    latency_ms double precision,
    raw        bytea  NOT NULL,
    leaf       bytea  NOT NULL CHECK (length(leaf) = 32)
);
CREATE INDEX chio_receipts_verdict ON chio_receipts (verdict, seq);
CREATE INDEX chio_receipts_guard   ON chio_receipts (guard, seq) WHERE guard <> '\x'::bytea;
CREATE INDEX chio_receipts_server  ON chio_receipts (server, seq);
CREATE INDEX chio_receipts_tool    ON chio_receipts (tool, seq);
CREATE INDEX chio_receipts_subject ON chio_receipts (subject, seq);
CREATE INDEX chio_receipts_request ON chio_receipts (request_id);
-- ts only nearly increases with seq (and insertion order): a BRIN index
-- finds a time window at a fraction of a btree's upkeep.
CREATE INDEX chio_receipts_ts      ON chio_receipts USING brin (ts);
CREATE INDEX chio_receipts_meta    ON chio_receipts USING gin (meta_keys);

CREATE TABLE chio_checkpoints (
    tree_size bigint PRIMARY KEY CHECK (tree_size >= 0),
    raw       bytea NOT NULL
);

-- owner is the replica (process incarnation) that moved the call to
-- dispatching: it is delivering it. Calls of a replica that is gone are
-- claimed by another one (replica.go).
CREATE TABLE chio_calls (
    request_id text PRIMARY KEY,
    status     text NOT NULL,
    owner      text,
    rec        bytea NOT NULL
);
CREATE INDEX chio_calls_dispatching ON chio_calls (owner, request_id) WHERE status = 'dispatching';

-- A deadline is claimed by one replica (claimed_by, until claim_until in
-- the database's unix ms), so that only that one fires it; any write of
-- the request releases the claim.
CREATE TABLE chio_approvals (
    approval_id text PRIMARY KEY,
    status      text NOT NULL,
    expires_at  bigint NOT NULL,
    claimed_by  text,
    claim_until bigint NOT NULL DEFAULT 0,
    req         bytea NOT NULL
);
CREATE INDEX chio_approvals_pending ON chio_approvals (approval_id) WHERE status = 'pending';
CREATE INDEX chio_approvals_due     ON chio_approvals (expires_at) WHERE status = 'pending';

-- The replay authority: a token id is consumed once, by the unique key.
CREATE TABLE chio_consumed (
    token_id    text PRIMARY KEY,
    approval_id text NOT NULL
);

CREATE TABLE chio_batches (
    id    text PRIMARY KEY,
    batch bytea NOT NULL
);

CREATE TABLE chio_revoked (
    capability_id text PRIMARY KEY,
    at_ms         bigint NOT NULL
);

CREATE TABLE chio_counters (
    key   bytea PRIMARY KEY,
    value bigint NOT NULL CHECK (value >= 0)
);

-- One row per running chiod process; heartbeat_ms says it is alive.
CREATE TABLE chio_replicas (
    id           text PRIMARY KEY,
    host         text NOT NULL,
    started_ms   bigint NOT NULL,
    heartbeat_ms bigint NOT NULL
);

-- max_calls_per_minute across replicas: hits per key and second.
CREATE TABLE chio_rate (
    key bytea  NOT NULL,
    sec bigint NOT NULL,
    n   integer NOT NULL,
    PRIMARY KEY (key, sec)
);
