-- Deletion on request (`DELETE /api/v3/runs/{id}`): a deleted run keeps its row, so that
-- the ledger lines and usage that name it still add up, and says when it was deleted and by
-- whom; its content (the v2 request as sent, the nodes' parameters) is cleared in the same
-- transaction, and its stored outputs are deleted by the API, or else by the sweeper.
ALTER TABLE runs ADD COLUMN deleted_at BIGINT;
ALTER TABLE runs ADD COLUMN deleted_by TEXT;

-- A deletion is announced on the runs channel under the run's id, so that every process drops
-- what it keeps of it (the finished statuses of the API) and its followers read it again.
CREATE FUNCTION atelier_run_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('atelier_runs', NEW.id);
    RETURN NULL;
END $$;

CREATE TRIGGER run_deleted AFTER UPDATE OF deleted_at ON runs
FOR EACH ROW WHEN (OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL)
EXECUTE FUNCTION atelier_run_deleted();
