-- Webhooks: where a run's events are sent (`run_webhooks`; `events` is a set of bits, 1 =
-- the run finished, 2 = a node's state changed), each account's signing secrets (the newest is
-- current; one rotated out stays valid until `expires_at`), the deliveries, queued by the
-- triggers below in the transaction that makes the change, and every attempt to make one.
-- The same triggers announce every change of a run's state or a node's progress on
-- `atelier_runs` (the run's id), and each queued delivery on `atelier_webhooks`, to every
-- process, when the transaction commits.
CREATE TABLE run_webhooks (
    run_id      TEXT PRIMARY KEY REFERENCES runs(id),
    url         TEXT NOT NULL,
    events      BIGINT NOT NULL
);

CREATE TABLE webhook_secrets (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id  BIGINT NOT NULL REFERENCES accounts(id),
    secret      TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT
);
CREATE INDEX webhook_secrets_account ON webhook_secrets(account_id, id);

CREATE TABLE webhook_deliveries (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    message_id   TEXT NOT NULL UNIQUE DEFAULT ('msg_' || replace(gen_random_uuid()::text, '-', '')),
    run_id       TEXT NOT NULL REFERENCES runs(id),
    account_id   BIGINT NOT NULL,
    url          TEXT NOT NULL,
    event        TEXT NOT NULL CHECK (event IN ('completed', 'node')),
    node         TEXT,
    node_status  TEXT,
    state        TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts     BIGINT NOT NULL DEFAULT 0,
    -- When the next attempt is due; while an attempt is being made, when its claim lapses.
    next_at      BIGINT NOT NULL DEFAULT 0,
    created_at   BIGINT NOT NULL,
    finished_at  BIGINT
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_at, id) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_run ON webhook_deliveries(run_id, id);

CREATE TABLE webhook_attempts (
    delivery_id  BIGINT NOT NULL REFERENCES webhook_deliveries(id),
    attempt      BIGINT NOT NULL,
    at           BIGINT NOT NULL,
    status_code  BIGINT,
    error        TEXT,
    duration_ms  BIGINT NOT NULL,
    PRIMARY KEY (delivery_id, attempt)
);

CREATE FUNCTION atelier_run_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('atelier_runs', NEW.id);
    IF NEW.status IN ('succeeded', 'failed', 'canceled') AND OLD.status NOT IN ('succeeded', 'failed', 'canceled') THEN
        INSERT INTO webhook_deliveries (run_id, account_id, url, event, created_at)
        SELECT NEW.id, NEW.account_id, w.url, 'completed', COALESCE(NEW.finished_at, 0)
        FROM run_webhooks w WHERE w.run_id = NEW.id AND (w.events & 1) <> 0;
        IF FOUND THEN
            PERFORM pg_notify('atelier_webhooks', '');
        END IF;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER run_changed AFTER UPDATE OF status ON runs
FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
EXECUTE FUNCTION atelier_run_changed();

CREATE FUNCTION atelier_node_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('atelier_runs', NEW.run_id);
    IF NEW.status IS DISTINCT FROM OLD.status THEN
        INSERT INTO webhook_deliveries (run_id, account_id, url, event, node, node_status, created_at)
        SELECT NEW.run_id, r.account_id, w.url, 'node', NEW.name, NEW.status,
               (extract(epoch FROM clock_timestamp()) * 1000000)::bigint
        FROM run_webhooks w JOIN runs r ON r.id = w.run_id
        WHERE w.run_id = NEW.run_id AND (w.events & 2) <> 0;
        IF FOUND THEN
            PERFORM pg_notify('atelier_webhooks', '');
        END IF;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER node_changed AFTER UPDATE OF status, progress_milli ON nodes
FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.progress_milli IS DISTINCT FROM NEW.progress_milli)
EXECUTE FUNCTION atelier_node_changed();
