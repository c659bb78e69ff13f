-- Idempotency keys (`Idempotency-Key` on the run endpoints), one row per
-- (account, key). While the request that claimed the key is being processed,
-- `status` and `response` are NULL and `run_id` is the id of the run it will
-- create; the answer is recorded in the transaction that creates that run,
-- fenced by `run_id`, so a run never exists without its key's answer.
-- Rows are kept until `expires_at` (24 h after the claim); the janitor
-- deletes them after that.
CREATE TABLE idempotency_keys (
    account_id       INTEGER NOT NULL REFERENCES accounts(id),
    idempotency_key  TEXT NOT NULL,
    fingerprint      TEXT NOT NULL,     -- SHA-256 (hex) of the endpoint and the canonical body
    run_id           TEXT NOT NULL,     -- the run the holder creates (fences the answer)
    status           INTEGER,           -- HTTP status of the recorded answer; NULL while in progress
    response         TEXT,              -- the recorded answer's body (JSON); NULL while in progress
    started_at       INTEGER NOT NULL,  -- when the current holder claimed the key
    expires_at       INTEGER NOT NULL,
    PRIMARY KEY (account_id, idempotency_key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys(expires_at);
