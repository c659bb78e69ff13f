-- Inline images of accepted runs, kept in the object store instead of the runs'
-- rows: one row per distinct image of an account (content-addressed by its SHA-256),
-- and which runs use it. An image is deleted once every run that used it has been
-- swept and it has not been used for a while (`last_used`).
CREATE TABLE inputs (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: the id is part of the file key
    account_id  INTEGER NOT NULL REFERENCES accounts(id),
    digest      TEXT NOT NULL,     -- SHA-256 of the value as sent (base64 or data URI), hex
    ext         TEXT NOT NULL,     -- the image's format: png, jpg, webp, gif
    size        INTEGER NOT NULL,  -- bytes of the value as sent
    created_at  INTEGER NOT NULL,
    last_used   INTEGER NOT NULL,
    UNIQUE (account_id, digest)
);
CREATE INDEX inputs_last_used ON inputs(last_used);

CREATE TABLE run_inputs (
    run_id    TEXT NOT NULL REFERENCES runs(id),
    input_id  INTEGER NOT NULL,    -- no reference: the input is deleted before the run's row
    PRIMARY KEY (run_id, input_id)
);
CREATE INDEX run_inputs_input ON run_inputs(input_id);
