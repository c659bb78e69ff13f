CREATE TABLE batches (
    id           TEXT PRIMARY KEY,
    account_id   BIGINT NOT NULL REFERENCES accounts(id),
    key_id       BIGINT,
    kind         TEXT NOT NULL CHECK (kind IN ('node', 'workflow')),
    target       TEXT NOT NULL,
    priority     TEXT NOT NULL,
    cache        BOOLEAN NOT NULL,
    trace_parent TEXT,
    status       TEXT NOT NULL CHECK (status IN ('running', 'finished', 'canceled')),
    total        BIGINT NOT NULL,       -- items
    price        BIGINT NOT NULL,       -- tokens reserved for it in all (acceptance and retries)
    held         BIGINT NOT NULL,       -- of which still held for items not started
    created_at   BIGINT NOT NULL,
    finished_at  BIGINT,
    fed_at       BIGINT NOT NULL DEFAULT 0  -- when the feeder last looked at it (round robin)
);
CREATE INDEX batches_account ON batches(account_id, created_at);
CREATE INDEX batches_open ON batches(fed_at) WHERE finished_at IS NULL;

CREATE TABLE batch_items (
    batch_id   TEXT NOT NULL REFERENCES batches(id),
    position   BIGINT NOT NULL,       -- 0-based, as sent
    ref        TEXT,                   -- the caller's reference (a SKU)
    input      TEXT NOT NULL,          -- the item's input, shared values merged (JSON)
    plan       TEXT NOT NULL,          -- its compiled, priced plan (JSON)
    price      BIGINT NOT NULL,
    inputs     TEXT NOT NULL,          -- the stored inputs (uploads) it names (JSON ids)
    state      TEXT NOT NULL CHECK (state IN ('pending', 'started', 'canceled')),
    run_id     TEXT,                   -- its current attempt
    history    TEXT,                   -- earlier attempts' run ids (JSON list)
    PRIMARY KEY (batch_id, position)
);
CREATE INDEX batch_items_pending ON batch_items(batch_id, position) WHERE state = 'pending';
CREATE INDEX batch_items_run ON batch_items(run_id);

-- The uploads a batch's items name: kept while the batch is not finished.
CREATE TABLE batch_inputs (
    batch_id   TEXT NOT NULL REFERENCES batches(id),
    input_id   BIGINT NOT NULL,
    PRIMARY KEY (batch_id, input_id)
);
CREATE INDEX batch_inputs_input ON batch_inputs(input_id);

-- The batch a run is an item of.
ALTER TABLE runs ADD COLUMN batch_id TEXT;
CREATE INDEX runs_batch ON runs(batch_id) WHERE batch_id IS NOT NULL;
