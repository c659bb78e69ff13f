-- Priority lanes. A run's lane (interactive, normal, bulk), its rank on each of its tasks
-- (0 is claimed first), and a key's default lane (NULL: normal).
ALTER TABLE runs ADD COLUMN priority TEXT NOT NULL DEFAULT 'normal'
    CHECK (priority IN ('interactive', 'normal', 'bulk'));
ALTER TABLE tasks ADD COLUMN lane SMALLINT NOT NULL DEFAULT 1;
ALTER TABLE api_keys ADD COLUMN priority TEXT CHECK (priority IN ('interactive', 'normal', 'bulk'));
-- A claim reads each account's oldest available tasks per lane; this index replaces the one
-- by account alone (it serves the skip scan over accounts too).
CREATE INDEX IF NOT EXISTS tasks_available_by_lane ON tasks(account_id, lane, scheduled_at, id)
    WHERE state = 'available';
DROP INDEX IF EXISTS tasks_available_by_account;
