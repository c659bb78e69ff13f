-- The web console: when each API key was last used, browser sessions (signed in with a key,
-- kept only as the SHA-256 of their token, ended when the key is revoked), and an index
-- for reading an account's ledger newest first.
ALTER TABLE api_keys ADD COLUMN last_used BIGINT;

CREATE TABLE sessions (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    digest      BYTEA NOT NULL UNIQUE,
    account_id  BIGINT NOT NULL REFERENCES accounts(id),
    key_id      BIGINT NOT NULL REFERENCES api_keys(id),
    csrf_token  TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    last_seen   BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL
);
CREATE INDEX sessions_key ON sessions(key_id);
CREATE INDEX sessions_account ON sessions(account_id, expires_at);

CREATE INDEX ledger_account ON ledger(account_id, id);
