-- The result cache. A node whose tool is deterministic for its inputs is looked up before it
-- runs by a key over its tool, the implementation's identity, its parameters, its seed and
-- the content hashes of its images; a hit copies the outputs of the run recorded under the
-- key and charges nothing. An entry lives while its run's outputs do (the run is not swept
-- and not past its expiry); `scope` is the account (0 when the operator shares the cache
-- across accounts).
CREATE TABLE cache_entries (
    scope       INTEGER NOT NULL,
    key         TEXT NOT NULL,         -- SHA-256 of the node's identity, hex
    run_id      TEXT NOT NULL,         -- the run whose outputs these are
    node        TEXT NOT NULL,
    outputs     TEXT NOT NULL,         -- JSON list of the outputs' object keys
    bytes       INTEGER NOT NULL,      -- their size in all
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE INDEX cache_entries_run ON cache_entries(run_id);
CREATE INDEX cache_entries_age ON cache_entries(created_at);

-- A run that says "cache": false runs every node afresh; a node filled from the cache names
-- the run it came from.
ALTER TABLE nodes ADD COLUMN cache INTEGER NOT NULL DEFAULT 1;
ALTER TABLE nodes ADD COLUMN cached_from TEXT;

-- A cache hit is a ledger line of its own (amount 0), naming the run whose outputs it
-- copied. SQLite cannot change a CHECK constraint in place: the table is rebuilt, ids kept.
CREATE TABLE ledger_new (
    id          INTEGER PRIMARY KEY,
    account_id  INTEGER NOT NULL REFERENCES accounts(id),
    run_id      TEXT,
    kind        TEXT NOT NULL CHECK (kind IN ('grant', 'reserve', 'charge', 'release', 'cache_hit')),
    amount      INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    source_run  TEXT                   -- cache_hit: the run whose outputs were copied
);
INSERT INTO ledger_new (id, account_id, run_id, kind, amount, created_at)
    SELECT id, account_id, run_id, kind, amount, created_at FROM ledger;
DROP TABLE ledger;
ALTER TABLE ledger_new RENAME TO ledger;
CREATE INDEX ledger_run ON ledger(run_id);
CREATE INDEX ledger_account ON ledger(account_id, id);
