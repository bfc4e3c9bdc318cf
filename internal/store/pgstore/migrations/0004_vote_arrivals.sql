-- Votes being presented to a replica right now (kernel/arrivals.go): a
-- deadline fired by another replica waits for those that arrived before
-- it. A row is written before the vote's clock is read (at NULL), given
-- that reading (at, unix seconds) next, and deleted once the vote is
-- recorded or refused; created_ms is the database's clock.
CREATE TABLE chio_vote_arrivals (
    id          bigserial PRIMARY KEY,
    approval_id text   NOT NULL,
    replica     text   NOT NULL,
    created_ms  bigint NOT NULL,
    at          bigint
);

CREATE INDEX chio_vote_arrivals_approval ON chio_vote_arrivals (approval_id);
