-- Deletion on request (`DELETE /api/v3/runs/{id}`): a deleted run keeps its row, so that
-- the ledger lines and usage that name it still add up, and says when it was deleted and by
-- whom; its content (the v2 request as sent, the nodes' parameters) is cleared in the same
-- transaction, and its stored outputs are deleted by the API, or else by the sweeper.
ALTER TABLE runs ADD COLUMN deleted_at INTEGER;
ALTER TABLE runs ADD COLUMN deleted_by TEXT;
