-- The hard cap on unfinished runs per account (limits.unfinished_runs_per_account)
-- counts an account's queued and running runs inside the transaction that accepts
-- a run; this index keeps that count to the unfinished runs, not the account's
-- whole history.
CREATE INDEX IF NOT EXISTS runs_unfinished ON runs(account_id) WHERE status IN ('queued', 'running');
