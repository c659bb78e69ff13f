-- Deletion on request (`DELETE /api/v3/runs/{id}`, `DELETE /api/v3/batches/{id}`,
-- `atelier admin purge`): a deleted run or batch keeps its row, so that the ledger lines and
-- usage that name it still add up, and says when it was deleted and by whom; its content
-- (the inputs as sent, the nodes' parameters, a batch's items) is cleared in the same
-- transaction, and its stored outputs are deleted by whoever deleted it, or by the sweeper.
ALTER TABLE runs ADD COLUMN deleted_at INTEGER;
ALTER TABLE runs ADD COLUMN deleted_by TEXT;
ALTER TABLE batches ADD COLUMN deleted_at INTEGER;
ALTER TABLE batches ADD COLUMN deleted_by TEXT;
