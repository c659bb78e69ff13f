-- The result cache: see migrations/sqlite/0015_result_cache.sql.
CREATE TABLE cache_entries (
    scope       BIGINT NOT NULL,
    key         TEXT NOT NULL,
    run_id      TEXT NOT NULL,
    node        TEXT NOT NULL,
    outputs     TEXT NOT NULL,
    bytes       BIGINT NOT NULL,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE INDEX cache_entries_run ON cache_entries(run_id);
CREATE INDEX cache_entries_age ON cache_entries(created_at);

ALTER TABLE nodes ADD COLUMN cache BOOLEAN NOT NULL DEFAULT TRUE;
ALTER TABLE nodes ADD COLUMN cached_from TEXT;

ALTER TABLE ledger DROP CONSTRAINT ledger_kind_check;
ALTER TABLE ledger ADD CONSTRAINT ledger_kind_check
    CHECK (kind IN ('grant', 'reserve', 'charge', 'release', 'cache_hit'));
ALTER TABLE ledger ADD COLUMN source_run TEXT;
