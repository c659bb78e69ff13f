-- Webhooks: where a run's events are sent (`run_webhooks`; `events` is a set of bits, 1 =
-- the run finished, 2 = a node's state changed), each account's signing secrets (the newest is
-- current; one rotated out stays valid until `expires_at`), the deliveries, queued by the
-- triggers below in the transaction that makes the change, and every attempt to make one.
CREATE TABLE run_webhooks (
    run_id      TEXT PRIMARY KEY REFERENCES runs(id),
    url         TEXT NOT NULL,
    events      INTEGER NOT NULL
);

CREATE TABLE webhook_secrets (
    id          INTEGER PRIMARY KEY,
    account_id  INTEGER NOT NULL REFERENCES accounts(id),
    secret      TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER
);
CREATE INDEX webhook_secrets_account ON webhook_secrets(account_id, id);

CREATE TABLE webhook_deliveries (
    id           INTEGER PRIMARY KEY,
    message_id   TEXT NOT NULL UNIQUE DEFAULT ('msg_' || lower(hex(randomblob(12)))),
    run_id       TEXT NOT NULL REFERENCES runs(id),
    account_id   INTEGER NOT NULL,
    url          TEXT NOT NULL,
    event        TEXT NOT NULL CHECK (event IN ('completed', 'node')),
    node         TEXT,
    node_status  TEXT,
    state        TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts     INTEGER NOT NULL DEFAULT 0,
    -- When the next attempt is due; while an attempt is being made, when its claim lapses.
    next_at      INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL,
    finished_at  INTEGER
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_at, id) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_run ON webhook_deliveries(run_id, id);

CREATE TABLE webhook_attempts (
    delivery_id  INTEGER NOT NULL REFERENCES webhook_deliveries(id),
    attempt      INTEGER NOT NULL,
    at           INTEGER NOT NULL,
    status_code  INTEGER,
    error        TEXT,
    duration_ms  INTEGER NOT NULL,
    PRIMARY KEY (delivery_id, attempt)
);

CREATE TRIGGER webhook_run_finished AFTER UPDATE OF status ON runs
WHEN NEW.status IN ('succeeded', 'failed', 'canceled') AND OLD.status NOT IN ('succeeded', 'failed', 'canceled')
BEGIN
    INSERT INTO webhook_deliveries (run_id, account_id, url, event, created_at)
    SELECT NEW.id, NEW.account_id, w.url, 'completed', COALESCE(NEW.finished_at, 0)
    FROM run_webhooks w WHERE w.run_id = NEW.id AND (w.events & 1) <> 0;
END;

CREATE TRIGGER webhook_node_changed AFTER UPDATE OF status ON nodes
WHEN NEW.status <> OLD.status
BEGIN
    INSERT INTO webhook_deliveries (run_id, account_id, url, event, node, node_status, created_at)
    SELECT NEW.run_id, r.account_id, w.url, 'node', NEW.name, NEW.status,
           CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)
    FROM run_webhooks w JOIN runs r ON r.id = w.run_id
    WHERE w.run_id = NEW.run_id AND (w.events & 2) <> 0;
END;
