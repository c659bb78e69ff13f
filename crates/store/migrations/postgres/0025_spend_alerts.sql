-- Spend alerts (`spend.threshold` webhooks, crates/store/src/spend.rs): an account's own
-- webhook endpoint (`accounts.webhook_url`, `PUT /api/v3/webhooks/endpoint`), and one row
-- per key or account, period and threshold reached (80 or 100 percent of a limit), which
-- its uniqueness keeps to once per period. An alert is recorded, and its delivery queued,
-- in the transaction that reserves the tokens that reach it. A delivery now belongs to a
-- run, a batch or an alert.
ALTER TABLE accounts ADD COLUMN webhook_url TEXT;

CREATE TABLE spend_alerts (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id    BIGINT NOT NULL REFERENCES accounts(id),
    holder        TEXT NOT NULL CHECK (holder IN ('key', 'account')),
    -- The key's or the account's id.
    holder_id     BIGINT NOT NULL,
    period        TEXT NOT NULL CHECK (period IN ('day', 'month')),
    period_start  BIGINT NOT NULL,
    threshold     BIGINT NOT NULL CHECK (threshold IN (80, 100)),
    spend_limit   BIGINT NOT NULL,
    used          BIGINT NOT NULL,
    resets_at     BIGINT NOT NULL,
    created_at    BIGINT NOT NULL,
    UNIQUE (holder, holder_id, period, period_start, threshold)
);

ALTER TABLE webhook_deliveries ADD COLUMN alert_id BIGINT REFERENCES spend_alerts(id);
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_event_check;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_event_check
    CHECK (event IN ('completed', 'node', 'batch', 'spend'));
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_owner_check;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_owner_check
    CHECK (num_nonnulls(run_id, batch_id, alert_id) = 1);
CREATE INDEX webhook_deliveries_alert ON webhook_deliveries(account_id, id) WHERE alert_id IS NOT NULL;

-- A queued alert wakes every process's deliverer, as a queued run or batch delivery does.
CREATE FUNCTION atelier_alert_queued() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('atelier_webhooks', '');
    RETURN NULL;
END $$;
CREATE TRIGGER alert_queued AFTER INSERT ON webhook_deliveries
FOR EACH ROW WHEN (NEW.alert_id IS NOT NULL)
EXECUTE FUNCTION atelier_alert_queued();
