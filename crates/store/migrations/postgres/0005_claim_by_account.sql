-- A claim looks at each account's oldest available tasks (fairness across
-- accounts) and finds the accounts that have any by skipping through this index,
-- so its cost grows with the number of accounts waiting, not with the queue.
CREATE INDEX IF NOT EXISTS tasks_available_by_account ON tasks(account_id, scheduled_at, id)
    WHERE state = 'available';
