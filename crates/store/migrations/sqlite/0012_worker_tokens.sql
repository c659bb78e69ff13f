-- Pull workers: a token lets a worker beside its model server lease the tasks of its tools
-- over the API, and nothing else. Stored as its digest; `tools` is a JSON array of names.
CREATE TABLE worker_tokens (
    id          INTEGER PRIMARY KEY,
    digest      BLOB NOT NULL UNIQUE,
    prefix      TEXT NOT NULL,
    tools       TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    last_used   INTEGER,
    revoked_at  INTEGER
);
