-- Replaying a delivery (`POST /api/v3/runs/{id}/webhooks/{delivery}/replay`): an ended
-- delivery becomes pending again, due at once; its attempts keep counting, so the replay's
-- attempt is a new line of its log with the same message id (`webhook-id`). `replays` counts
-- how often it was asked for.
ALTER TABLE webhook_deliveries ADD COLUMN replays INTEGER NOT NULL DEFAULT 0;
