-- Spend limits (`atelier_core::spend`, crates/store/src/spend.rs). Per key and per account:
-- the limit settings (NULL follows the configured default, -1 is no limit) and the counters
-- of the current UTC day and month (the period's start and the tokens reserved in it).
ALTER TABLE accounts ADD COLUMN daily_limit BIGINT;
ALTER TABLE accounts ADD COLUMN monthly_limit BIGINT;
ALTER TABLE accounts ADD COLUMN day_start BIGINT NOT NULL DEFAULT 0;
ALTER TABLE accounts ADD COLUMN day_used BIGINT NOT NULL DEFAULT 0;
ALTER TABLE accounts ADD COLUMN month_start BIGINT NOT NULL DEFAULT 0;
ALTER TABLE accounts ADD COLUMN month_used BIGINT NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN daily_limit BIGINT;
ALTER TABLE api_keys ADD COLUMN monthly_limit BIGINT;
ALTER TABLE api_keys ADD COLUMN concurrency_limit BIGINT;
ALTER TABLE api_keys ADD COLUMN day_start BIGINT NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN day_used BIGINT NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN month_start BIGINT NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN month_used BIGINT NOT NULL DEFAULT 0;
-- The key of a task's run, for the cap on a key's running nodes; tasks of runs made
-- without a key (by account name) have none.
ALTER TABLE tasks ADD COLUMN key_id BIGINT;
UPDATE tasks SET key_id = (SELECT key_id FROM runs WHERE runs.id = tasks.run_id);
CREATE INDEX tasks_running_by_key ON tasks(key_id) WHERE state = 'running' AND key_id IS NOT NULL;
