//! Runs and their nodes (PostgreSQL): acceptance with reservation, reads,
//! cancellation, and the single place where a run becomes terminal and is
//! settled.

use atelier_core::status::RunStatus;
use serde_json::Value;
use sqlx::postgres::PgConnection;
use sqlx::{Postgres, Transaction};

use super::accept::{write_run, Accepted};
use super::PgStore;
use crate::runs::{
    canceled_error, expiry, node_row, parse_status, run_row, settlement, summary_row,
    STATUS_PARAMS_AS_STORED_BYTES, STATUS_PARAM_MAX_BYTES,
};
use crate::{to_json, Micros, NewRun, NodeRecord, Result, RunRecord, RunSummary, StoreError};

pub(crate) async fn load_nodes(conn: &mut PgConnection, run_id: &str) -> Result<Vec<NodeRecord>> {
    let rows = sqlx::query("SELECT * FROM nodes WHERE run_id = $1 ORDER BY position")
        .bind(run_id)
        .fetch_all(conn)
        .await?;
    rows.iter().map(node_row).collect()
}

/// Locks a run's row for the rest of the transaction: the first lock every
/// write that advances or ends a run takes (see the module documentation).
pub(crate) async fn lock_run(conn: &mut PgConnection, run_id: &str) -> Result<()> {
    sqlx::query("SELECT 1 FROM runs WHERE id = $1 FOR NO KEY UPDATE").bind(run_id).execute(conn).await?;
    Ok(())
}

impl PgStore {
    /// Accepts a run: reserves its price and writes the run, its nodes and the tasks of its
    /// ready nodes, or nothing at all (`InsufficientTokens`, `ConcurrencyLimited`,
    /// `IdempotencyConflict`). See `accept` for how submissions of one account share the
    /// account's row.
    pub async fn create_run(&self, run: &NewRun<'_>) -> Result<()> {
        let accepted = Accepted::new(run);
        let cap = self.config.max_unfinished_runs;
        if cap == 0 && run.idempotency.is_none() {
            return self.accept_in_turn(accepted).await;
        }
        let mut tx = self.begin().await?;
        if cap > 0 {
            // The account's row first (the lock the reservation takes anyway): submits of
            // one account then take turns, and each count is read after the previous submit
            // committed, so concurrent submits cannot pass the cap together.
            sqlx::query("SELECT 1 FROM accounts WHERE id = $1 FOR NO KEY UPDATE")
                .bind(run.account_id)
                .execute(&mut *tx)
                .await?;
            let unfinished: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM runs WHERE account_id = $1 AND status IN ('queued', 'running')",
            )
            .bind(run.account_id)
            .fetch_one(&mut *tx)
            .await?;
            if unfinished >= i64::from(cap) {
                return Err(StoreError::ConcurrencyLimited { limit: i64::from(cap) });
            }
        }
        // A key taken over since it was claimed rolls everything back (`idempotency`).
        if let Some(answer) = &run.idempotency {
            super::idempotency::record_answer(&mut tx, run.account_id, &run.id, answer).await?;
        }
        write_run(&mut tx, &accepted, self.config.max_attempts).await?;
        tx.commit().await?;
        Ok(())
    }

    pub(crate) async fn insert_task(
        &self,
        tx: &mut Transaction<'static, Postgres>,
        run_id: &str,
        node: &str,
        account_id: i64,
        now: Micros,
    ) -> Result<()> {
        sqlx::query(
            "INSERT INTO tasks (run_id, node, account_id, state, max_attempts, scheduled_at, created_at)
             VALUES ($1, $2, $3, 'available', $4, $5, $6)",
        )
        .bind(run_id)
        .bind(node)
        .bind(account_id)
        .bind(i64::from(self.config.max_attempts))
        .bind(now)
        .bind(now)
        .execute(&mut **tx)
        .await?;
        Ok(())
    }

    pub async fn get_run(&self, account_id: i64, run_id: &str) -> Result<RunRecord> {
        let mut conn = self.pool.acquire().await?;
        let row = sqlx::query("SELECT * FROM runs WHERE id = $1 AND account_id = $2")
            .bind(run_id)
            .bind(account_id)
            .fetch_optional(&mut *conn)
            .await?
            .ok_or(StoreError::NotFound)?;
        // The parameters as `Store::get_run` documents (the SQLite twin is in `runs.rs`).
        let nodes = sqlx::query(
            "SELECT name, gen_id, tool,
                    CASE WHEN octet_length(params) <= $3 THEN params
                    ELSE (SELECT COALESCE(json_object_agg(e.key, e.value ORDER BY e.position), '{}')::text
                          FROM json_each(params::json) WITH ORDINALITY AS e(key, value, position)
                          WHERE json_typeof(e.value) <> 'string' OR octet_length(e.value #>> '{}') <= $2) END
                        AS params,
                    links, bypassed, fanout, price, status, outputs, error
             FROM nodes WHERE run_id = $1 ORDER BY position",
        )
        .bind(run_id)
        .bind(STATUS_PARAM_MAX_BYTES)
        .bind(STATUS_PARAMS_AS_STORED_BYTES)
        .fetch_all(&mut *conn)
        .await?;
        let nodes = nodes.iter().map(node_row).collect::<Result<_>>()?;
        run_row(&row, nodes)
    }

    pub async fn run_of_generation(&self, account_id: i64, gen_id: &str) -> Result<RunRecord> {
        let run_id: Option<String> = sqlx::query_scalar(
            "SELECT n.run_id FROM nodes n JOIN runs r ON r.id = n.run_id WHERE n.gen_id = $1 AND r.account_id = $2",
        )
        .bind(gen_id)
        .bind(account_id)
        .fetch_optional(&self.pool)
        .await?;
        self.get_run(account_id, &run_id.ok_or(StoreError::NotFound)?).await
    }

    pub async fn list_runs(
        &self,
        account_id: i64,
        limit: i64,
        before: Option<Micros>,
    ) -> Result<Vec<RunSummary>> {
        let rows = sqlx::query(
            "SELECT id, kind, target, status, created_at FROM runs WHERE account_id = $1 AND created_at < $2
             ORDER BY created_at DESC LIMIT $3",
        )
        .bind(account_id)
        .bind(before.unwrap_or(i64::MAX))
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(summary_row).collect()
    }

    pub async fn cancel_run(&self, account_id: i64, run_id: &str) -> Result<RunRecord> {
        let now = crate::now_micros();
        let mut tx = self.begin().await?;
        // The run's row first: completions of its nodes wait until the
        // cancellation committed, so no task is queued behind its back.
        let status: Option<String> =
            sqlx::query_scalar("SELECT status FROM runs WHERE id = $1 AND account_id = $2 FOR NO KEY UPDATE")
                .bind(run_id)
                .bind(account_id)
                .fetch_optional(&mut *tx)
                .await?;
        let status: RunStatus = parse_status(&status.ok_or(StoreError::NotFound)?)?;
        if !status.is_terminal() {
            sqlx::query(
                "UPDATE tasks SET state = 'canceled', lease_epoch = lease_epoch + 1, finalized_at = $1
                 WHERE run_id = $2 AND state IN ('available', 'running')",
            )
            .bind(now)
            .bind(run_id)
            .execute(&mut *tx)
            .await?;
            let error = canceled_error();
            sqlx::query(
                "UPDATE nodes SET status = 'canceled', error = $1, finished_at = $2
                 WHERE run_id = $3 AND status IN ('pending', 'queued', 'running')",
            )
            .bind(to_json(&error))
            .bind(now)
            .bind(run_id)
            .execute(&mut *tx)
            .await?;
            self.finish_run(&mut tx, run_id, RunStatus::Canceled, Some(&error), now).await?;
        }
        tx.commit().await?;
        self.get_run(account_id, run_id).await
    }

    /// Makes a run terminal and settles its tokens, exactly once: the status
    /// update is guarded (and re-checked against the latest committed row),
    /// and settlement only follows a guarded update that matched.
    pub(crate) async fn finish_run(
        &self,
        tx: &mut Transaction<'static, Postgres>,
        run_id: &str,
        status: RunStatus,
        error: Option<&Value>,
        now: Micros,
    ) -> Result<bool> {
        let expires = expiry(now, self.config.retention);
        let changed = sqlx::query(
            "UPDATE runs SET status = $1, error = $2, finished_at = $3, expires_at = $4
             WHERE id = $5 AND status IN ('queued', 'running')",
        )
        .bind(status.as_str())
        .bind(error.map(to_json))
        .bind(now)
        .bind(expires)
        .bind(run_id)
        .execute(&mut **tx)
        .await?;
        if changed.rows_affected() == 0 {
            return Ok(false);
        }
        let (account_id, reserved): (i64, i64) =
            sqlx::query_as("SELECT account_id, reserved FROM runs WHERE id = $1")
                .bind(run_id)
                .fetch_one(&mut **tx)
                .await?;
        // SUM over BIGINT is NUMERIC in PostgreSQL.
        let charged: i64 = sqlx::query_scalar(
            "SELECT COALESCE(SUM(price), 0)::BIGINT FROM nodes WHERE run_id = $1 AND status = 'succeeded'",
        )
        .bind(run_id)
        .fetch_one(&mut **tx)
        .await?;
        let (charged, release) = settlement(reserved, charged);
        sqlx::query("UPDATE runs SET charged = $1 WHERE id = $2")
            .bind(charged)
            .bind(run_id)
            .execute(&mut **tx)
            .await?;
        sqlx::query("UPDATE accounts SET balance = balance + $1 WHERE id = $2")
            .bind(release)
            .bind(account_id)
            .execute(&mut **tx)
            .await?;
        for (kind, amount) in [("charge", charged), ("release", release)] {
            sqlx::query(
                "INSERT INTO ledger (account_id, run_id, kind, amount, created_at) VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(account_id)
            .bind(run_id)
            .bind(kind)
            .bind(amount)
            .bind(now)
            .execute(&mut **tx)
            .await?;
        }
        Ok(true)
    }

    pub async fn run_expiry(&self, run_id: &str) -> Result<Option<Micros>> {
        let row: Option<(Option<i64>,)> = sqlx::query_as("SELECT expires_at FROM runs WHERE id = $1")
            .bind(run_id)
            .fetch_optional(&self.pool)
            .await?;
        row.map(|(e,)| e).ok_or(StoreError::NotFound)
    }

    pub async fn expired_runs(&self, now: Micros, limit: i64) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar(
            "SELECT id FROM runs WHERE NOT swept AND expires_at < $1 ORDER BY expires_at LIMIT $2",
        )
        .bind(now)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn mark_swept(&self, run_id: &str) -> Result<()> {
        sqlx::query("UPDATE runs SET swept = TRUE WHERE id = $1").bind(run_id).execute(&self.pool).await?;
        Ok(())
    }

    pub async fn set_expiry(&self, run_id: &str, expires_at: Micros) -> Result<()> {
        sqlx::query("UPDATE runs SET expires_at = $1 WHERE id = $2")
            .bind(expires_at)
            .bind(run_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
