-- The audit log (`atelier_core::audit`, crates/store/src/audit.rs): an append-only,
-- hash-chained record of security-relevant changes. Ids are given by the writer (the one
-- after the head), so that each entry's hash covers its id.
CREATE TABLE audit_log (
    id          INTEGER PRIMARY KEY,
    at          INTEGER NOT NULL,
    account_id  INTEGER,
    actor       TEXT NOT NULL,
    address     TEXT,
    action      TEXT NOT NULL,
    target      TEXT,
    summary     TEXT NOT NULL,
    prev_hash   TEXT NOT NULL,
    hash        TEXT NOT NULL
);
CREATE INDEX audit_log_account ON audit_log(account_id, id);
CREATE INDEX audit_log_at ON audit_log(at);
-- The chain's head: its last entry. Appends lock this one row, so that they take turns
-- and each holds the hash of the one before it.
CREATE TABLE audit_head (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    last_id   INTEGER NOT NULL,
    last_hash TEXT NOT NULL
);
INSERT INTO audit_head (id, last_id, last_hash)
VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');
