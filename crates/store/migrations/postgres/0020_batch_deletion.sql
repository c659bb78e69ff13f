-- Deletion of a batch on request (`DELETE /api/v3/batches/{id}`): like a run's (0018), the
-- batch keeps its row and says when and by whom; its items' inputs are cleared and every run
-- of it is deleted in the same transaction (each run's own trigger announces it).
ALTER TABLE batches ADD COLUMN deleted_at BIGINT;
ALTER TABLE batches ADD COLUMN deleted_by TEXT;
