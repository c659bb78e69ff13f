-- A batch's webhook: `batches.webhook_url` receives one `batch.completed` delivery each time
-- the batch ends (finished or canceled), queued in the transaction that ends it. A delivery
-- now belongs to a run or to a batch, so `webhook_deliveries` is rebuilt (SQLite cannot
-- relax a NOT NULL or a CHECK in place): copied whole, ids and message ids kept, with
-- `webhook_attempts` rebuilt beside it so that its reference follows the rename.
ALTER TABLE batches ADD COLUMN webhook_url TEXT;

DROP TRIGGER webhook_run_finished;
DROP TRIGGER webhook_node_changed;

CREATE TABLE webhook_deliveries_next (
    id           INTEGER PRIMARY KEY,
    message_id   TEXT NOT NULL UNIQUE DEFAULT ('msg_' || lower(hex(randomblob(12)))),
    run_id       TEXT REFERENCES runs(id),
    account_id   INTEGER NOT NULL,
    url          TEXT NOT NULL,
    event        TEXT NOT NULL CHECK (event IN ('completed', 'node', 'batch')),
    node         TEXT,
    node_status  TEXT,
    state        TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts     INTEGER NOT NULL DEFAULT 0,
    -- When the next attempt is due; while an attempt is being made, when its claim lapses.
    next_at      INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL,
    finished_at  INTEGER,
    batch_id     TEXT REFERENCES batches(id),
    CHECK ((run_id IS NULL) <> (batch_id IS NULL))
);
INSERT INTO webhook_deliveries_next
    (id, message_id, run_id, account_id, url, event, node, node_status, state, attempts, next_at, created_at, finished_at)
SELECT id, message_id, run_id, account_id, url, event, node, node_status, state, attempts, next_at, created_at, finished_at
FROM webhook_deliveries;

CREATE TABLE webhook_attempts_next (
    delivery_id  INTEGER NOT NULL REFERENCES webhook_deliveries_next(id),
    attempt      INTEGER NOT NULL,
    at           INTEGER NOT NULL,
    status_code  INTEGER,
    error        TEXT,
    duration_ms  INTEGER NOT NULL,
    PRIMARY KEY (delivery_id, attempt)
);
INSERT INTO webhook_attempts_next (delivery_id, attempt, at, status_code, error, duration_ms)
SELECT delivery_id, attempt, at, status_code, error, duration_ms FROM webhook_attempts;

DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
-- Renaming rewrites the reference of `webhook_attempts_next` to the new name.
ALTER TABLE webhook_deliveries_next RENAME TO webhook_deliveries;
ALTER TABLE webhook_attempts_next RENAME TO webhook_attempts;

CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_at, id) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_run ON webhook_deliveries(run_id, id);
CREATE INDEX webhook_deliveries_batch ON webhook_deliveries(batch_id, id) WHERE batch_id IS NOT NULL;

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
