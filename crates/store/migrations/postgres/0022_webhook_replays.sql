-- Replaying a delivery (`POST /api/v3/runs/{id}/webhooks/{delivery}/replay`): an ended
-- delivery becomes pending again, due at once; its attempts keep counting, so the replay's
-- attempt is a new line of its log with the same message id (`webhook-id`). `replays` counts
-- how often it was asked for.
ALTER TABLE webhook_deliveries ADD COLUMN replays BIGINT NOT NULL DEFAULT 0;

-- A replayed delivery is due at once: every process's deliverer hears of it, as of a queued one.
CREATE FUNCTION atelier_webhook_replayed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('atelier_webhooks', '');
    RETURN NULL;
END $$;
CREATE TRIGGER webhook_replayed AFTER UPDATE OF state ON webhook_deliveries
FOR EACH ROW WHEN (NEW.state = 'pending' AND OLD.state <> 'pending')
EXECUTE FUNCTION atelier_webhook_replayed();
