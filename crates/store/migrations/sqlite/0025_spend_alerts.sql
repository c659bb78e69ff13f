-- Spend alerts (`spend.threshold` webhooks, crates/store/src/spend.rs): an account's own
-- webhook endpoint (`accounts.webhook_url`, `PUT /api/v3/webhooks/endpoint`), and one row
-- per key or account, period and threshold reached (80 or 100 percent of a limit), which
-- its uniqueness keeps to once per period. An alert is recorded, and its delivery queued,
-- in the transaction that reserves the tokens that reach it. A delivery now belongs to a
-- run, a batch or an alert, so `webhook_deliveries` is rebuilt as in 0017 (SQLite cannot
-- change a CHECK in place): copied whole, ids, message ids and replays kept, with
-- `webhook_attempts` rebuilt beside it so that its reference follows the rename.
ALTER TABLE accounts ADD COLUMN webhook_url TEXT;

CREATE TABLE spend_alerts (
    id            INTEGER PRIMARY KEY,
    account_id    INTEGER NOT NULL REFERENCES accounts(id),
    holder        TEXT NOT NULL CHECK (holder IN ('key', 'account')),
    -- The key's or the account's id.
    holder_id     INTEGER NOT NULL,
    period        TEXT NOT NULL CHECK (period IN ('day', 'month')),
    period_start  INTEGER NOT NULL,
    threshold     INTEGER NOT NULL CHECK (threshold IN (80, 100)),
    spend_limit   INTEGER NOT NULL,
    used          INTEGER NOT NULL,
    resets_at     INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    UNIQUE (holder, holder_id, period, period_start, threshold)
);

DROP TRIGGER webhook_run_finished;
DROP TRIGGER webhook_node_changed;

CREATE TABLE webhook_deliveries_next (
    id           INTEGER PRIMARY KEY,
    message_id   TEXT NOT NULL UNIQUE DEFAULT ('msg_' || lower(hex(randomblob(12)))),
    run_id       TEXT REFERENCES runs(id),
    account_id   INTEGER NOT NULL,
    url          TEXT NOT NULL,
    event        TEXT NOT NULL CHECK (event IN ('completed', 'node', 'batch', 'spend')),
    node         TEXT,
    node_status  TEXT,
    state        TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts     INTEGER NOT NULL DEFAULT 0,
    -- When the next attempt is due; while an attempt is being made, when its claim lapses.
    next_at      INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL,
    finished_at  INTEGER,
    batch_id     TEXT REFERENCES batches(id),
    replays      INTEGER NOT NULL DEFAULT 0,
    alert_id     INTEGER REFERENCES spend_alerts(id),
    CHECK ((run_id IS NOT NULL) + (batch_id IS NOT NULL) + (alert_id IS NOT NULL) = 1)
);
INSERT INTO webhook_deliveries_next
    (id, message_id, run_id, account_id, url, event, node, node_status, state, attempts, next_at, created_at,
     finished_at, batch_id, replays)
SELECT id, message_id, run_id, account_id, url, event, node, node_status, state, attempts, next_at, created_at,
       finished_at, batch_id, replays
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
CREATE INDEX webhook_deliveries_alert ON webhook_deliveries(account_id, id) WHERE alert_id IS NOT NULL;

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
