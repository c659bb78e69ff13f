-- Deletion of a batch on request (`DELETE /api/v3/batches/{id}`): like a run's (0018), the
-- batch keeps its row and says when and by whom; its items' inputs are cleared and every run
-- of it is deleted in the same transaction (each run's own trigger announces it).
ALTER TABLE batches ADD COLUMN deleted_at INTEGER;
ALTER TABLE batches ADD COLUMN deleted_by TEXT;

-- Deletions made by another process (`atelier admin purge` beside a running server) are read
-- from here every second, so that the server drops what it keeps of those runs.
CREATE INDEX runs_deleted ON runs(deleted_at) WHERE deleted_at IS NOT NULL;
