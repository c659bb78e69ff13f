-- The claim reads each account's oldest available task of each lane (a skip scan over the
-- accounts, then one range per account and lane), as on PostgreSQL since 0010: its cost
-- grows with the accounts waiting, not with the depth of the queue.
CREATE INDEX IF NOT EXISTS tasks_available_by_lane ON tasks(account_id, lane, scheduled_at, id)
    WHERE state = 'available';
