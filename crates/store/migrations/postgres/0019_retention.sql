-- Retention a customer controls. A key's retention_secs is the default of the runs made with
-- it (NULL: the operator's, [outputs] retention_hours); a run's is what it was accepted with
-- (NULL: the operator's default). 0 is zero retention: the outputs are handed back inline in
-- the node's row, never written to object storage, and dropped when the hold ends
-- ([outputs] inline_hold_secs after the run finished, its expires_at).
ALTER TABLE api_keys ADD COLUMN retention_secs BIGINT;
ALTER TABLE runs ADD COLUMN retention_secs BIGINT;
-- A batch's runs are made with the batch's retention (NULL: the operator's default; never 0).
ALTER TABLE batches ADD COLUMN retention_secs BIGINT;
