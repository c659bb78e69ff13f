-- The PostgreSQL twin of migrations/sqlite/0001_init.sql: the same tables,
-- columns, checks and indexes. Integers are BIGINT (Rust i64 on both sides),
-- times are microseconds since the epoch, JSON is kept as TEXT so that rows
-- decode exactly as they do from SQLite, and 0/1 flags are BOOLEAN.

-- Accounts hold the available balance: reservations are already subtracted.
-- The ledger is the append-only history that explains every change.
CREATE TABLE accounts (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    balance     BIGINT NOT NULL DEFAULT 0 CHECK (balance >= 0),
    created_at  BIGINT NOT NULL
);

CREATE TABLE api_keys (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id  BIGINT NOT NULL REFERENCES accounts(id),
    digest      BYTEA NOT NULL UNIQUE,
    prefix      TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    revoked_at  BIGINT
);

CREATE TABLE ledger (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id  BIGINT NOT NULL REFERENCES accounts(id),
    run_id      TEXT,
    kind        TEXT NOT NULL CHECK (kind IN ('grant', 'reserve', 'charge', 'release')),
    amount      BIGINT NOT NULL,
    created_at  BIGINT NOT NULL
);
CREATE INDEX ledger_run ON ledger(run_id);

-- account_id NULL = system template. An account's workflow shadows a
-- template of the same name.
CREATE TABLE workflows (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id  BIGINT REFERENCES accounts(id),
    name        TEXT NOT NULL,
    definition  TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE UNIQUE INDEX workflows_owner_name ON workflows((COALESCE(account_id, 0)), name);

CREATE TABLE runs (
    id           TEXT PRIMARY KEY,
    account_id   BIGINT NOT NULL REFERENCES accounts(id),
    kind         TEXT NOT NULL CHECK (kind IN ('node', 'workflow')),
    family       TEXT,              -- v2 tool family, NULL for v3 runs
    target       TEXT NOT NULL,     -- tool or workflow name
    outputs      TEXT NOT NULL,     -- friendly output name -> node name (JSON)
    echo         TEXT,              -- v2 request as sent, base64 redacted (JSON)
    warnings     TEXT,              -- JSON array
    status       TEXT NOT NULL,
    error        TEXT,              -- JSON error object
    reserved     BIGINT NOT NULL,
    charged      BIGINT NOT NULL DEFAULT 0,
    created_at   BIGINT NOT NULL,
    finished_at  BIGINT,
    expires_at   BIGINT,
    swept        BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX runs_account ON runs(account_id, created_at);
CREATE INDEX runs_expiry ON runs(expires_at) WHERE NOT swept;

CREATE TABLE nodes (
    run_id       TEXT NOT NULL REFERENCES runs(id),
    name         TEXT NOT NULL,
    position     BIGINT NOT NULL,   -- topological order
    gen_id       TEXT NOT NULL UNIQUE,
    tool         TEXT NOT NULL,
    params       TEXT NOT NULL,     -- resolved literal parameters (JSON)
    links        TEXT NOT NULL,     -- param -> upstream node (JSON)
    bypassed     BOOLEAN NOT NULL,
    fanout       BIGINT NOT NULL,
    price        BIGINT NOT NULL,
    status       TEXT NOT NULL,
    outputs      TEXT,              -- JSON array of blob keys, set once on success
    error        TEXT,
    started_at   BIGINT,
    finished_at  BIGINT,
    PRIMARY KEY (run_id, name)
);

-- The durable queue: one task per node that is ready to run.
-- Completion is fenced by lease_epoch: claiming bumps it, so a stale
-- worker's write matches no row.
CREATE TABLE tasks (
    id                BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id            TEXT NOT NULL REFERENCES runs(id),
    node              TEXT NOT NULL,
    account_id        BIGINT NOT NULL,
    state             TEXT NOT NULL CHECK (state IN ('available', 'running', 'completed', 'failed', 'canceled')),
    attempt           BIGINT NOT NULL DEFAULT 0,
    max_attempts      BIGINT NOT NULL,
    scheduled_at      BIGINT NOT NULL,
    lease_owner       TEXT,
    lease_expires_at  BIGINT,
    lease_epoch       BIGINT NOT NULL DEFAULT 0,
    errors            TEXT NOT NULL DEFAULT '[]',
    created_at        BIGINT NOT NULL,
    finalized_at      BIGINT,
    UNIQUE (run_id, node)
);
CREATE INDEX tasks_available ON tasks(scheduled_at, id) WHERE state = 'available';
CREATE INDEX tasks_leases ON tasks(lease_expires_at) WHERE state = 'running';
