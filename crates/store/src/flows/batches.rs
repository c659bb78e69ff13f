//! Batches (see `crate::batch`): acceptance with the whole price reserved, the feeder that
//! starts items as runs, reads, cancel and retry.

use std::collections::BTreeSet;

use async_trait::async_trait;
use atelier_core::ids;
use atelier_core::plan::Plan;
use atelier_core::status::{LedgerKind, Priority, RunKind};
use atelier_core::time::{now_micros, Micros};
use serde_json::Value;

use crate::backend::Backend;
use crate::batch::Purgeable;
use crate::batch::{
    BatchDeletion, BatchRecord, BatchStatus, BatchSummary, Fed, ItemCounts, ItemQuery, ItemRecord,
    ItemStatus, NewBatch,
};
use crate::error::{Result, StoreError};
use crate::input::StoredInput;
use crate::run::{NewRun, RunDeletion};
use crate::sql::{args, json_col, parse_text, to_json, Arg, Conn, FromRow, RowRead};
use crate::statements::*;
use crate::traits::{Batches, Runs};

/// Items written per statement at acceptance (7 parameters each).
const ITEMS_PER_INSERT: usize = 500;

#[async_trait]
impl<B: Backend> Batches for B {
    async fn create_batch(&self, batch: &NewBatch<'_>) -> Result<()> {
        let price = batch.price();
        let now = now_micros();
        // Serialized before the transaction, which then only writes.
        let items: Vec<(String, String, i64, String)> = batch
            .items
            .iter()
            .map(|item| (to_json(&item.input), to_json(&item.plan), item.plan.price(), to_json(&item.inputs)))
            .collect();
        let inputs: BTreeSet<i64> = batch
            .items
            .iter()
            .flat_map(|i| i.inputs.iter().copied())
            .chain(batch.files.iter().copied())
            .collect();
        let mut tx = self.begin().await?;
        B::lock_account(&mut tx, batch.account_id).await?;
        if let Some(answer) = &batch.idempotency {
            let body = to_json(answer.body);
            let status = i64::from(answer.status);
            let recorded = tx
                .execute(RECORD_ANSWER, args![status, body.as_str(), batch.account_id, answer.key, &batch.id])
                .await?;
            if recorded == 0 {
                return Err(StoreError::IdempotencyConflict);
            }
        }
        let spend = &self.settings().spend;
        let payer = crate::spend::Payer { account_id: batch.account_id, key_id: batch.key_id };
        let reserved =
            crate::spend::reserve(&mut *tx, B::FOR_NO_KEY_UPDATE, spend, payer, price, true, now).await;
        if reserved.is_err() {
            drop(tx);
            return crate::flows::alerts::refused(self, payer, reserved).await;
        }
        let reserve = LedgerKind::Reserve.as_str();
        tx.execute(INSERT_LEDGER, args![batch.account_id, Some(batch.id.as_str()), reserve, price, now])
            .await?;
        let total = i64::try_from(batch.items.len()).unwrap_or(i64::MAX);
        tx.execute(
            INSERT_BATCH,
            args![
                &batch.id,
                batch.account_id,
                batch.key_id,
                batch.kind.as_str(),
                batch.target,
                batch.priority.as_str(),
                batch.cache,
                batch.trace_parent.as_deref(),
                total,
                price,
                now,
                batch.webhook_url,
                batch.retention_secs.map(crate::run::signed)
            ],
        )
        .await?;
        for (chunk_index, chunk) in batch.items.chunks(ITEMS_PER_INSERT).enumerate() {
            let first = chunk_index * ITEMS_PER_INSERT;
            let rows = &items[first..first + chunk.len()];
            let positions: Vec<i64> = (first..first + chunk.len()).map(|p| p as i64).collect();
            let mut sql = String::from(
                "INSERT INTO batch_items (batch_id, position, ref, input, plan, price, inputs, state) VALUES ",
            );
            let mut params: Vec<Arg<'_>> = Vec::with_capacity(chunk.len() * 7);
            for (n, ((item, (input, plan, price, inputs)), position)) in
                chunk.iter().zip(rows).zip(&positions).enumerate()
            {
                let base = n * 7;
                if n > 0 {
                    sql.push_str(", ");
                }
                sql.push_str(&format!(
                    "(${}, ${}, ${}, ${}, ${}, ${}, ${}, 'pending')",
                    base + 1,
                    base + 2,
                    base + 3,
                    base + 4,
                    base + 5,
                    base + 6,
                    base + 7
                ));
                params.extend([
                    Arg::from(batch.id.as_str()),
                    Arg::from(*position),
                    Arg::from(item.reference.as_deref()),
                    Arg::from(input.as_str()),
                    Arg::from(plan.as_str()),
                    Arg::from(*price),
                    Arg::from(inputs.as_str()),
                ]);
            }
            tx.execute(&sql, &params).await?;
        }
        for input in inputs {
            tx.execute(INSERT_BATCH_INPUT, args![&batch.id, input]).await?;
        }
        B::commit(tx).await?;
        // The reservation may have queued a spend alert.
        self.feed().publish_deliveries();
        Ok(())
    }

    async fn get_batch(&self, account_id: i64, batch_id: &str) -> Result<BatchRecord> {
        let mut conn = self.read().await?;
        let row: Option<BatchRow> = conn.fetch_optional(&BATCH, args![batch_id, account_id]).await?;
        let row = row.ok_or(StoreError::NotFound)?.live()?;
        let counts: Vec<CountRow> = conn.fetch_all(&ITEM_COUNTS, args![batch_id]).await?;
        let tokens: TokensRow = conn.fetch_one(&BATCH_RUN_TOKENS, args![batch_id]).await?;
        let mut record = row.into_record();
        for count in counts {
            record.counts.add(count.status, count.n);
        }
        record.reserved += tokens.held;
        record.charged = tokens.charged;
        Ok(record)
    }

    async fn list_batches(
        &self,
        account_id: i64,
        before: Option<Micros>,
        limit: i64,
    ) -> Result<Vec<BatchSummary>> {
        let before = before.unwrap_or(i64::MAX);
        let rows: Vec<BatchRow> =
            self.read().await?.fetch_all(&LIST_BATCHES, args![account_id, before, limit]).await?;
        Ok(rows.into_iter().map(BatchRow::into_summary).collect())
    }

    async fn batch_items(
        &self,
        account_id: i64,
        batch_id: &str,
        query: &ItemQuery,
    ) -> Result<Vec<ItemRecord>> {
        let mut conn = self.read().await?;
        let found: Option<BatchRow> = conn.fetch_optional(&BATCH, args![batch_id, account_id]).await?;
        found.ok_or(StoreError::NotFound)?.live()?;
        let status = query.status.map(ItemStatus::as_str);
        let after = query.after.unwrap_or(-1);
        let rows: Vec<ItemRow> =
            conn.fetch_all(&BATCH_ITEMS, args![batch_id, after, status, query.limit]).await?;
        Ok(rows.into_iter().map(|r| r.0).collect())
    }

    async fn cancel_batch(&self, account_id: i64, batch_id: &str) -> Result<BatchRecord> {
        let now = now_micros();
        let mut tx = self.begin().await?;
        B::lock_account(&mut tx, account_id).await?;
        let sql = BATCH_FOR_UPDATE.replace("{lock}", B::FOR_UPDATE);
        let row: Option<BatchRow> = tx.fetch_optional(&sql, args![batch_id, account_id]).await?;
        let row = row.ok_or(StoreError::NotFound)?.live()?;
        let mut delivery = false;
        if row.status == BatchStatus::Running {
            tx.execute(CANCEL_PENDING_ITEMS, args![batch_id]).await?;
            delivery = end_batch(&mut *tx, &row, BatchStatus::Canceled, now).await?;
        }
        let runs: Vec<String> = tx.fetch_all(&BATCH_UNFINISHED_RUNS, args![batch_id]).await?;
        B::commit(tx).await?;
        announce(self, batch_id, delivery);
        // Each run is canceled and settled as any run is; a cancel cut short by a crash leaves
        // some running to their end, and canceling again cancels them.
        if row.status != BatchStatus::Finished {
            for run in runs {
                match self.cancel_run(account_id, &run).await {
                    Ok(_) | Err(StoreError::NotFound) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        self.get_batch(account_id, batch_id).await
    }

    async fn retry_batch(&self, account_id: i64, batch_id: &str) -> Result<(BatchRecord, i64)> {
        let now = now_micros();
        let mut tx = self.begin().await?;
        B::lock_account(&mut tx, account_id).await?;
        let sql = BATCH_FOR_UPDATE.replace("{lock}", B::FOR_UPDATE);
        let row: Option<BatchRow> = tx.fetch_optional(&sql, args![batch_id, account_id]).await?;
        let key_id = row.ok_or(StoreError::NotFound)?.live()?.key_id;
        let failed: Vec<FailedItem> = tx.fetch_all(&FAILED_ITEMS, args![batch_id]).await?;
        let retried = i64::try_from(failed.len()).unwrap_or(i64::MAX);
        if !failed.is_empty() {
            let price: i64 = failed.iter().map(|f| f.price).sum();
            // Counted now, on the batch's key: what its runs give back later goes to the
            // period the batch was made in, so a retry on a later day or month counts in
            // full there (the safe side of exact).
            let spend = &self.settings().spend;
            let payer = crate::spend::Payer { account_id, key_id };
            let reserved =
                crate::spend::reserve(&mut *tx, B::FOR_NO_KEY_UPDATE, spend, payer, price, true, now).await;
            if let Err(refusal) = reserved {
                drop(tx);
                return crate::flows::alerts::refused(self, payer, Err(refusal)).await;
            }
            let reserve = LedgerKind::Reserve.as_str();
            tx.execute(INSERT_LEDGER, args![account_id, Some(batch_id), reserve, price, now]).await?;
            for item in &failed {
                let mut history = item.history.clone();
                history.push(item.run_id.clone());
                let history = to_json(&history);
                tx.execute(REQUEUE_ITEM, args![batch_id, item.position, history.as_str()]).await?;
            }
            tx.execute(REOPEN_BATCH, args![batch_id, price]).await?;
        }
        B::commit(tx).await?;
        // The reservation may have queued a spend alert.
        announce(self, batch_id, !failed.is_empty());
        Ok((self.get_batch(account_id, batch_id).await?, retried))
    }

    async fn delete_batch(&self, account_id: i64, batch_id: &str, by: &str) -> Result<BatchDeletion> {
        let now = now_micros();
        let mut tx = self.begin().await?;
        B::lock_account(&mut tx, account_id).await?;
        let sql = BATCH_FOR_UPDATE.replace("{lock}", B::FOR_UPDATE);
        let row: Option<BatchRow> = tx.fetch_optional(&sql, args![batch_id, account_id]).await?;
        let row = row.ok_or(StoreError::NotFound)?;
        let ids: Vec<String> = tx.fetch_all(BATCH_RUN_IDS, args![batch_id]).await?;
        let used: Vec<RunInput> = tx.fetch_all(&BATCH_RUN_INPUTS, args![batch_id]).await?;
        let (deleted_at, already) = match row.deleted_at {
            Some(at) => (at, true),
            None => {
                if row.status == BatchStatus::Running {
                    return Err(StoreError::Conflict(format!(
                        "batch '{batch_id}' is running: cancel it first, then delete it"
                    )));
                }
                let in_flight: i64 = tx.fetch_one(&BATCH_RUNS_IN_FLIGHT, args![batch_id]).await?;
                if in_flight > 0 {
                    return Err(StoreError::Conflict(format!(
                        "batch '{batch_id}' still has {in_flight} runs ending after its cancel: try again shortly"
                    )));
                }
                tx.execute(DELETE_BATCH, args![now, by, batch_id]).await?;
                tx.execute(CLEAR_BATCH_ITEMS, args![batch_id]).await?;
                tx.execute(&DELETE_BATCH_RUNS, args![now, by, batch_id]).await?;
                tx.execute(CLEAR_BATCH_NODE_PARAMS, args![batch_id]).await?;
                tx.execute(FORGET_BATCH_CACHE, args![batch_id]).await?;
                tx.execute(DROP_BATCH_DELIVERIES, args![now, batch_id]).await?;
                B::commit(tx).await?;
                self.changed(ids.iter().map(String::as_str));
                (now, false)
            }
        };
        let runs = ids
            .into_iter()
            .map(|run_id| {
                let inputs = used.iter().filter(|u| u.run_id == run_id).map(|u| u.input.clone()).collect();
                RunDeletion { run_id, deleted_at, already, inputs }
            })
            .collect();
        Ok(BatchDeletion { batch_id: batch_id.to_string(), deleted_at, already, runs })
    }

    async fn purge_candidates(&self, account_id: i64, before: Micros, limit: i64) -> Result<Purgeable> {
        let mut conn = self.read().await?;
        let runs = conn.fetch_all(&RUNS_TO_PURGE, args![account_id, before, limit]).await?;
        let batches = conn.fetch_all(BATCHES_TO_PURGE, args![account_id, before, limit]).await?;
        let unfinished = conn.fetch_one(&UNFINISHED_BEFORE, args![account_id, before]).await?;
        Ok(Purgeable { runs, batches, unfinished })
    }

    async fn feed_batches(&self, window: i64, limit: i64) -> Result<Fed> {
        let open: Vec<OpenBatch> = self.read().await?.fetch_all(&OPEN_BATCHES, args![limit]).await?;
        let mut fed = Fed { open: open.len(), ..Fed::default() };
        // Full, or waiting for its last runs: nothing to do (checked again in the transaction).
        for batch in open.into_iter().filter(|b| b.in_flight < window && (b.pending || b.in_flight == 0)) {
            feed_batch(self, &batch, window, &mut fed).await?;
        }
        Ok(fed)
    }
}

/// One step of the feeder on one batch, in one transaction: starts pending items while fewer
/// than `window` of its runs are unfinished, or finishes it when nothing is pending or
/// unfinished.
async fn feed_batch<B: Backend>(store: &B, batch: &OpenBatch, window: i64, fed: &mut Fed) -> Result<()> {
    let now = now_micros();
    let mut tx = store.begin().await?;
    B::lock_account(&mut tx, batch.account_id).await?;
    let sql = BATCH_FOR_UPDATE.replace("{lock}", B::FOR_UPDATE);
    let row: Option<BatchRow> = tx.fetch_optional(&sql, args![&batch.id, batch.account_id]).await?;
    let Some(row) = row.filter(|r| r.status == BatchStatus::Running) else { return Ok(()) };
    let in_flight: i64 = tx.fetch_one(&BATCH_RUNS_IN_FLIGHT, args![&batch.id]).await?;
    let room = window - in_flight;
    let pending: Vec<PendingItem> =
        if room > 0 { tx.fetch_all(PENDING_ITEMS, args![&batch.id, room]).await? } else { Vec::new() };
    if pending.is_empty() {
        if in_flight > 0 || room <= 0 {
            return Ok(());
        }
        // Nothing pending, nothing running: the batch is done.
        let delivery = end_batch(&mut *tx, &row, BatchStatus::Finished, now).await?;
        B::commit(tx).await?;
        announce(store, &batch.id, delivery);
        fed.finished.push(batch.id.clone());
        return Ok(());
    }
    // The items' price moves from the batch to the balance, and each run reserves its own.
    let price: i64 = pending.iter().map(|p| p.price).sum();
    tx.execute(DRAW_FROM_BATCH, args![&batch.id, price, now]).await?;
    tx.execute(ADD_TO_BALANCE, args![price, batch.account_id]).await?;
    let release = LedgerKind::Release.as_str();
    tx.execute(INSERT_LEDGER, args![batch.account_id, Some(batch.id.as_str()), release, price, now]).await?;
    for item in &pending {
        let plan: Plan = json_col(&item.plan, "batch item plan")?;
        let inputs: Vec<i64> = json_col(&item.inputs, "batch item inputs")?;
        let input: Value = json_col(&item.input, "batch item input")?;
        let (id, node_ids) = match row.kind {
            RunKind::Node => {
                let id = ids::generation_id();
                (id.clone(), vec![id])
            }
            RunKind::Workflow => {
                (ids::workflow_run_id(), plan.nodes.iter().map(|_| ids::generation_id()).collect())
            }
        };
        let run = NewRun {
            id,
            account_id: batch.account_id,
            kind: row.kind,
            family: None,
            target: &row.target,
            plan: &plan,
            node_ids,
            echo: Some(input),
            idempotency: None,
            inputs: &inputs,
            webhook: None,
            trace_parent: row.trace_parent.clone(),
            priority: row.priority,
            key_id: row.key_id,
            start_within: None,
            cache: row.cache,
            retention_secs: row.retention_secs,
            from_batch: true,
        };
        store.write_run(&mut tx, &run).await?;
        tx.execute(SET_RUN_BATCH, args![&batch.id, &run.id]).await?;
        tx.execute(START_ITEM, args![&batch.id, item.position, &run.id]).await?;
    }
    B::announce(&mut tx).await?;
    B::commit(tx).await?;
    store.wake();
    fed.started += pending.len();
    Ok(())
}

/// Ends a running batch (`status`: finished or canceled) in the transaction of `conn`: gives
/// back what it holds and queues its `batch` delivery when it has a webhook. Whether one was
/// queued, for [`announce`] once the transaction commits.
async fn end_batch(conn: &mut impl Conn, batch: &BatchRow, status: BatchStatus, now: Micros) -> Result<bool> {
    give_back(conn, batch, now).await?;
    conn.execute(END_BATCH, args![&batch.id, status.as_str(), now]).await?;
    Ok(conn.execute(QUEUE_BATCH_DELIVERY, args![&batch.id, now]).await? > 0)
}

/// After a commit that changed batch `batch_id`'s state: its followers read it again, and
/// the deliverer looks when a delivery was queued.
fn announce<B: Backend>(store: &B, batch_id: &str, delivery: bool) {
    store.feed().publish(batch_id);
    if delivery {
        store.feed().publish_deliveries();
    }
}

/// Gives back what batch `batch` holds: to the balance, and to the spend counters of the
/// period it was accepted in.
async fn give_back(conn: &mut impl Conn, batch: &BatchRow, now: Micros) -> Result<()> {
    let (account_id, held) = (batch.account_id, batch.held);
    if held > 0 {
        conn.execute(ADD_TO_BALANCE, args![held, account_id]).await?;
        let release = LedgerKind::Release.as_str();
        conn.execute(INSERT_LEDGER, args![account_id, Some(batch.id.as_str()), release, held, now]).await?;
        crate::spend::give_back(conn, account_id, batch.key_id, held, batch.created_at).await?;
    }
    Ok(())
}

/// A `batches` row.
struct BatchRow {
    id: String,
    account_id: i64,
    key_id: Option<i64>,
    kind: RunKind,
    target: String,
    priority: Priority,
    cache: bool,
    trace_parent: Option<String>,
    status: BatchStatus,
    total: i64,
    price: i64,
    held: i64,
    created_at: Micros,
    finished_at: Option<Micros>,
    retention_secs: Option<u64>,
    deleted_at: Option<Micros>,
}

/// A stored input and the run of a batch that used it ([`BATCH_RUN_INPUTS`]).
struct RunInput {
    run_id: String,
    input: StoredInput,
}

impl FromRow for RunInput {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(Self { run_id: row.text("run_id")?.to_owned(), input: StoredInput::from_row(row)? })
    }
}

impl FromRow for BatchRow {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(Self {
            id: row.text("id")?.to_owned(),
            account_id: row.int("account_id")?,
            key_id: row.opt_int("key_id")?,
            kind: parse_text(row.text("kind")?)?,
            target: row.text("target")?.to_owned(),
            priority: parse_text(row.text("priority")?)?,
            cache: row.boolean("cache")?,
            trace_parent: row.opt_text("trace_parent")?.map(str::to_owned),
            status: parse_text(row.text("status")?)?,
            total: row.int("total")?,
            price: row.int("price")?,
            held: row.int("held")?,
            created_at: row.int("created_at")?,
            finished_at: row.opt_int("finished_at")?,
            retention_secs: row.opt_int("retention_secs")?.and_then(|s| u64::try_from(s).ok()),
            deleted_at: row.opt_int("deleted_at")?,
        })
    }
}

impl BatchRow {
    /// The batch, unless it was deleted (`Deleted` with when).
    fn live(self) -> Result<Self> {
        match self.deleted_at {
            Some(at) => Err(StoreError::Deleted { id: self.id, at }),
            None => Ok(self),
        }
    }

    /// The record, with what the batch itself holds as `reserved` (its runs' part is added
    /// by the caller) and no counts.
    fn into_record(self) -> BatchRecord {
        BatchRecord {
            id: self.id,
            account_id: self.account_id,
            kind: self.kind,
            target: self.target,
            priority: self.priority,
            cache: self.cache,
            status: self.status,
            total: self.total,
            price: self.price,
            reserved: self.held,
            charged: 0,
            counts: ItemCounts::default(),
            created_at: self.created_at,
            finished_at: self.finished_at,
        }
    }

    fn into_summary(self) -> BatchSummary {
        BatchSummary {
            id: self.id,
            kind: self.kind,
            target: self.target,
            status: self.status,
            total: self.total,
            created_at: self.created_at,
            finished_at: self.finished_at,
        }
    }
}

struct OpenBatch {
    id: String,
    account_id: i64,
    in_flight: i64,
    pending: bool,
}

impl FromRow for OpenBatch {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(Self {
            id: row.text("id")?.to_owned(),
            account_id: row.int("account_id")?,
            in_flight: row.int("in_flight")?,
            pending: row.boolean("pending")?,
        })
    }
}

struct CountRow {
    status: ItemStatus,
    n: i64,
}

impl FromRow for CountRow {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(Self { status: parse_text(row.text("status")?)?, n: row.int("n")? })
    }
}

struct TokensRow {
    charged: i64,
    held: i64,
}

impl FromRow for TokensRow {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(Self { charged: row.int("charged")?, held: row.int("held")? })
    }
}

struct ItemRow(ItemRecord);

impl FromRow for ItemRow {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(Self(ItemRecord {
            index: row.int("position")?,
            reference: row.opt_text("ref")?.map(str::to_owned),
            status: parse_text(row.text("status")?)?,
            run_id: row.opt_text("run_id")?.map(str::to_owned),
            history: row
                .opt_text("history")?
                .map(|h| json_col(h, "batch item history"))
                .transpose()?
                .unwrap_or_default(),
        }))
    }
}

struct PendingItem {
    position: i64,
    input: String,
    plan: String,
    price: i64,
    inputs: String,
}

impl FromRow for PendingItem {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(Self {
            position: row.int("position")?,
            input: row.text("input")?.to_owned(),
            plan: row.text("plan")?.to_owned(),
            price: row.int("price")?,
            inputs: row.text("inputs")?.to_owned(),
        })
    }
}

struct FailedItem {
    position: i64,
    price: i64,
    run_id: String,
    history: Vec<String>,
}

impl FromRow for FailedItem {
    fn from_row(row: &dyn RowRead) -> Result<Self> {
        Ok(Self {
            position: row.int("position")?,
            price: row.int("price")?,
            run_id: row.text("run_id")?.to_owned(),
            history: row
                .opt_text("history")?
                .map(|h| json_col(h, "batch item history"))
                .transpose()?
                .unwrap_or_default(),
        })
    }
}
