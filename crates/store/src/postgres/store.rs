//! [`Store`] for [`PgStore`]: every method delegates to the inherent one.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use super::PgStore;
use crate::{
    Account, ClaimedTask, IdempotencyClaim, IdempotencyRecord, IdempotencyStart, KeyInfo, Micros, NewRun,
    Outcome, Result, RunRecord, RunSummary, Store, StoreConfig, WorkflowRow,
};

#[async_trait]
impl Store for PgStore {
    fn config(&self) -> &StoreConfig {
        PgStore::config(self)
    }

    async fn migrate(&self) -> Result<usize> {
        PgStore::migrate(self).await
    }

    async fn ping(&self) -> Result<()> {
        PgStore::ping(self).await
    }

    async fn task_ready(&self) {
        PgStore::task_ready(self).await
    }

    async fn lead_maintenance(&self) -> Result<bool> {
        PgStore::lead_maintenance(self).await
    }

    async fn create_account(&self, name: &str, tokens: i64) -> Result<(Account, String)> {
        PgStore::create_account(self, name, tokens).await
    }

    async fn account(&self, name: &str) -> Result<Account> {
        PgStore::account(self, name).await
    }

    async fn account_count(&self) -> Result<i64> {
        PgStore::account_count(self).await
    }

    async fn create_key(&self, account: &str) -> Result<String> {
        PgStore::create_key(self, account).await
    }

    async fn revoke_key(&self, key_or_prefix: &str) -> Result<KeyInfo> {
        PgStore::revoke_key(self, key_or_prefix).await
    }

    async fn authenticate(&self, key: &str) -> Result<Option<Account>> {
        PgStore::authenticate(self, key).await
    }

    async fn grant(&self, account: &str, tokens: i64) -> Result<i64> {
        PgStore::grant(self, account, tokens).await
    }

    async fn balance(&self, account_id: i64) -> Result<i64> {
        PgStore::balance(self, account_id).await
    }

    async fn ledger_for_run(&self, run_id: &str) -> Result<Vec<(String, i64)>> {
        PgStore::ledger_for_run(self, run_id).await
    }

    async fn create_run(&self, run: &NewRun<'_>) -> Result<()> {
        PgStore::create_run(self, run).await
    }

    async fn get_run(&self, account_id: i64, run_id: &str) -> Result<RunRecord> {
        PgStore::get_run(self, account_id, run_id).await
    }

    async fn run_of_generation(&self, account_id: i64, gen_id: &str) -> Result<RunRecord> {
        PgStore::run_of_generation(self, account_id, gen_id).await
    }

    async fn list_runs(
        &self,
        account_id: i64,
        limit: i64,
        before: Option<Micros>,
    ) -> Result<Vec<RunSummary>> {
        PgStore::list_runs(self, account_id, limit, before).await
    }

    async fn cancel_run(&self, account_id: i64, run_id: &str) -> Result<RunRecord> {
        PgStore::cancel_run(self, account_id, run_id).await
    }

    async fn run_expiry(&self, run_id: &str) -> Result<Option<Micros>> {
        PgStore::run_expiry(self, run_id).await
    }

    async fn expired_runs(&self, now: Micros, limit: i64) -> Result<Vec<String>> {
        PgStore::expired_runs(self, now, limit).await
    }

    async fn mark_swept(&self, run_id: &str) -> Result<()> {
        PgStore::mark_swept(self, run_id).await
    }

    async fn set_expiry(&self, run_id: &str, expires_at: Micros) -> Result<()> {
        PgStore::set_expiry(self, run_id, expires_at).await
    }

    async fn put_workflow(&self, account: Option<i64>, name: &str, definition: &Value) -> Result<i64> {
        PgStore::put_workflow(self, account, name, definition).await
    }

    async fn delete_workflow(&self, account: i64, name: &str) -> Result<()> {
        PgStore::delete_workflow(self, account, name).await
    }

    async fn find_workflow(&self, account: Option<i64>, name: &str) -> Result<Option<WorkflowRow>> {
        PgStore::find_workflow(self, account, name).await
    }

    async fn list_workflows(&self, account: i64) -> Result<Vec<WorkflowRow>> {
        PgStore::list_workflows(self, account).await
    }

    async fn claim(&self, worker: &str, lease: Duration, skip_tools: &[&str]) -> Result<Option<ClaimedTask>> {
        PgStore::claim(self, worker, lease, skip_tools).await
    }

    async fn heartbeat(&self, task: &ClaimedTask, lease: Duration) -> Result<bool> {
        PgStore::heartbeat(self, task, lease).await
    }

    async fn complete(&self, task: &ClaimedTask, outcome: Outcome) -> Result<bool> {
        PgStore::complete(self, task, outcome).await
    }

    async fn release(&self, task: &ClaimedTask) -> Result<bool> {
        PgStore::release(self, task).await
    }

    async fn rescue_expired(&self) -> Result<usize> {
        PgStore::rescue_expired(self).await
    }

    async fn task_errors(&self, run_id: &str, node: &str) -> Result<Vec<Value>> {
        PgStore::task_errors(self, run_id, node).await
    }

    async fn claim_idempotency_key(&self, claim: &IdempotencyClaim<'_>) -> Result<IdempotencyStart> {
        PgStore::claim_idempotency_key(self, claim).await
    }

    async fn release_idempotency_key(&self, account_id: i64, key: &str, run_id: &str) -> Result<bool> {
        PgStore::release_idempotency_key(self, account_id, key, run_id).await
    }

    async fn idempotency_record(&self, account_id: i64, key: &str) -> Result<Option<IdempotencyRecord>> {
        PgStore::idempotency_record(self, account_id, key).await
    }

    async fn delete_expired_idempotency_keys(&self, now: Micros, limit: i64) -> Result<u64> {
        PgStore::delete_expired_idempotency_keys(self, now, limit).await
    }

    async fn set_idempotency_expiry(&self, account_id: i64, key: &str, expires_at: Micros) -> Result<()> {
        PgStore::set_idempotency_expiry(self, account_id, key, expires_at).await
    }
}
