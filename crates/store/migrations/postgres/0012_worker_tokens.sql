-- Pull workers: a token lets a worker beside its model server lease the tasks of its tools
-- over the API, and nothing else. Stored as its digest; `tools` is a JSON array of names.
CREATE TABLE worker_tokens (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    digest      BYTEA NOT NULL UNIQUE,
    prefix      TEXT NOT NULL,
    tools       TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    last_used   BIGINT,
    revoked_at  BIGINT
);
