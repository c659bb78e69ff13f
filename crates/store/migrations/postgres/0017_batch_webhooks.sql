-- A batch's webhook: `batches.webhook_url` receives one `batch.completed` delivery each time
-- the batch ends (finished or canceled), queued in the transaction that ends it. A delivery
-- now belongs to a run or to a batch.
ALTER TABLE batches ADD COLUMN webhook_url TEXT;

ALTER TABLE webhook_deliveries ALTER COLUMN run_id DROP NOT NULL;
ALTER TABLE webhook_deliveries ADD COLUMN batch_id TEXT REFERENCES batches(id);
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_event_check;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_event_check
    CHECK (event IN ('completed', 'node', 'batch'));
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_owner_check
    CHECK ((run_id IS NULL) <> (batch_id IS NULL));
CREATE INDEX webhook_deliveries_batch ON webhook_deliveries(batch_id, id) WHERE batch_id IS NOT NULL;

-- A batch that starts, ends or starts again is announced on the runs channel under its id,
-- so that every process's followers of it (`GET /api/v3/batches/{id}/events`) read it, and a
-- queued delivery wakes every process's deliverer.
CREATE FUNCTION atelier_batch_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('atelier_runs', NEW.id);
    IF NEW.webhook_url IS NOT NULL AND NEW.status IN ('finished', 'canceled') THEN
        PERFORM pg_notify('atelier_webhooks', '');
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER batch_changed AFTER UPDATE OF status ON batches
FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
EXECUTE FUNCTION atelier_batch_changed();
