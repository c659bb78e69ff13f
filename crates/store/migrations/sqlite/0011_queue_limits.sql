-- Queue limits. The key a run was submitted with (NULL for runs made before this, and for
-- runs made by the console's own key) and how soon its nodes must start, in milliseconds
-- (NULL: no limit); each task's deadline to be claimed (NULL: none, or claimed already).
ALTER TABLE runs ADD COLUMN key_id BIGINT;
ALTER TABLE runs ADD COLUMN start_within_ms BIGINT;
ALTER TABLE tasks ADD COLUMN start_by BIGINT;
-- The runs of a key waiting to start (the per-key queue cap counts them).
CREATE INDEX IF NOT EXISTS runs_queued_by_key ON runs(key_id) WHERE status = 'queued';
-- The available tasks with a deadline, soonest first (the maintenance loop fails the late).
CREATE INDEX IF NOT EXISTS tasks_start_by ON tasks(start_by) WHERE state = 'available' AND start_by IS NOT NULL;
