//! Webhooks: signing secrets, and the delivery queue the deliverer works through. Deliveries
//! are claimed under a lease like tasks: a claim counts the attempt and pushes `next_at` to
//! when the claim lapses, so a deliverer that dies mid-attempt leaves the delivery due again
//! then, for any process; the attempt's end is fenced by its number.

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use atelier_core::time::{self, now_micros, Micros};
use atelier_core::webhook;

use crate::backend::Backend;
use crate::error::{Result, StoreError};
use crate::rows::AttemptRow;
use crate::sql::{args, Conn};
use crate::statements::*;
use crate::traits::Webhooks;
use crate::webhook::{AttemptEnd, Delivery, DeliveryAttempt, DeliveryRecord, DeliveryState, WebhookSecret};

#[async_trait]
impl<B: Backend> Webhooks for B {
    async fn webhook_secrets(&self, account_id: i64) -> Result<Vec<WebhookSecret>> {
        let now = now_micros();
        let secrets: Vec<WebhookSecret> =
            self.read().await?.fetch_all(WEBHOOK_SECRETS, args![account_id, now]).await?;
        if secrets.iter().any(|s| s.expires_at.is_none()) {
            return Ok(secrets);
        }
        // The first read makes the account's secret: under the account's lock, so that two
        // first reads at once make one.
        let mut tx = self.begin().await?;
        B::lock_account(&mut tx, account_id).await?;
        let secrets: Vec<WebhookSecret> = tx.fetch_all(WEBHOOK_SECRETS, args![account_id, now]).await?;
        if secrets.iter().any(|s| s.expires_at.is_none()) {
            return Ok(secrets);
        }
        let secret = webhook::new_secret();
        tx.execute(INSERT_WEBHOOK_SECRET, args![account_id, secret.as_str(), now]).await?;
        let secrets = tx.fetch_all(WEBHOOK_SECRETS, args![account_id, now]).await?;
        B::commit(tx).await?;
        Ok(secrets)
    }

    async fn rotate_webhook_secret(&self, account_id: i64, grace: Duration) -> Result<Vec<WebhookSecret>> {
        let now = now_micros();
        let mut tx = self.begin().await?;
        B::lock_account(&mut tx, account_id).await?;
        tx.execute(RETIRE_WEBHOOK_SECRET, args![time::after(now, grace), account_id]).await?;
        let secret = webhook::new_secret();
        tx.execute(INSERT_WEBHOOK_SECRET, args![account_id, secret.as_str(), now]).await?;
        let secrets = tx.fetch_all(WEBHOOK_SECRETS, args![account_id, now]).await?;
        B::commit(tx).await?;
        Ok(secrets)
    }

    async fn claim_deliveries(&self, lease: Duration, limit: usize) -> Result<Vec<Delivery>> {
        let now = now_micros();
        let sql = CLAIM_DELIVERIES.replace("{lock}", B::SKIP_LOCKED);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut tx = self.begin().await?;
        let mut claimed: Vec<Delivery> =
            tx.fetch_all(&sql, args![now, time::after(now, lease), limit]).await?;
        B::commit(tx).await?;
        // `RETURNING` keeps no order: oldest first, as they were queued.
        claimed.sort_unstable_by_key(|d| d.id);
        Ok(claimed)
    }

    async fn end_delivery_attempt(
        &self,
        delivery: &Delivery,
        attempt: &DeliveryAttempt,
        end: AttemptEnd,
    ) -> Result<bool> {
        let now = now_micros();
        let (state, next, finished) = match end {
            AttemptEnd::Delivered => (DeliveryState::Delivered, 0, Some(now)),
            AttemptEnd::RetryAt(at) => (DeliveryState::Pending, at, None),
            AttemptEnd::GaveUp => (DeliveryState::Failed, 0, Some(now)),
        };
        let attempt_no = i64::from(delivery.attempt);
        let mut tx = self.begin().await?;
        let ended = tx
            .execute(&END_DELIVERY_ATTEMPT, args![state.as_str(), next, finished, delivery.id, attempt_no])
            .await?;
        if ended == 0 {
            return Ok(false);
        }
        let code = attempt.status_code.map(i64::from);
        tx.execute(
            INSERT_DELIVERY_ATTEMPT,
            args![delivery.id, attempt_no, attempt.at, code, attempt.error.as_deref(), attempt.duration_ms],
        )
        .await?;
        B::commit(tx).await?;
        if state == DeliveryState::Pending {
            // A retry is due later; the deliverer sleeps until the soonest due time.
            self.feed().publish_deliveries();
        }
        Ok(true)
    }

    async fn run_deliveries(&self, account_id: i64, run_id: &str) -> Result<Vec<DeliveryRecord>> {
        deliveries_of(self, account_id, run_id, [RUN_OF_ACCOUNT, &RUN_DELIVERIES, &RUN_DELIVERY_ATTEMPTS])
            .await
    }

    async fn batch_deliveries(&self, account_id: i64, batch_id: &str) -> Result<Vec<DeliveryRecord>> {
        let statements = [BATCH_OF_ACCOUNT, &BATCH_DELIVERIES, &BATCH_DELIVERY_ATTEMPTS];
        deliveries_of(self, account_id, batch_id, statements).await
    }

    async fn next_delivery_due(&self) -> Result<Option<Micros>> {
        self.read().await?.fetch_optional(&NEXT_DELIVERY_DUE, args![]).await.map(Option::flatten)
    }

    async fn replay_delivery(&self, account_id: i64, run_id: &str, message_id: &str) -> Result<()> {
        let mut tx = self.begin().await?;
        let owned: Option<String> = tx.fetch_optional(RUN_OF_ACCOUNT, args![run_id, account_id]).await?;
        if owned.is_none() {
            return Err(StoreError::NotFound);
        }
        if tx.execute(&REPLAY_DELIVERY, args![now_micros(), message_id, run_id]).await? == 0 {
            let state: Option<String> = tx.fetch_optional(DELIVERY_STATE, args![message_id, run_id]).await?;
            return Err(match state {
                None => StoreError::NotFound,
                Some(_) => StoreError::Conflict(
                    "the delivery is pending: an attempt is due or being made, so it is not replayed".into(),
                ),
            });
        }
        B::commit(tx).await?;
        // Due now: the deliverer wakes for it.
        self.feed().publish_deliveries();
        Ok(())
    }

    async fn webhook_endpoint(&self, account_id: i64) -> Result<Option<String>> {
        crate::spend::endpoint(&mut *self.read().await?, account_id).await
    }

    async fn set_webhook_endpoint(&self, account_id: i64, url: Option<&str>) -> Result<()> {
        // Under the account's lock, as every reservation that reads it.
        let mut tx = self.begin().await?;
        B::lock_account(&mut tx, account_id).await?;
        if tx.execute(SET_WEBHOOK_ENDPOINT, args![account_id, url]).await? == 0 {
            return Err(StoreError::NotFound);
        }
        B::commit(tx).await
    }

    async fn alert_deliveries(&self, account_id: i64, limit: usize) -> Result<Vec<DeliveryRecord>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut read = self.read().await?;
        let deliveries: Vec<(i64, DeliveryRecord)> =
            read.fetch_all(&ALERT_DELIVERIES, args![account_id, limit]).await?;
        let attempts: Vec<AttemptRow> =
            read.fetch_all(&ALERT_DELIVERY_ATTEMPTS, args![account_id, limit]).await?;
        Ok(with_attempts(deliveries, attempts))
    }

    async fn spend_alert(&self, account_id: i64, alert_id: i64) -> Result<crate::spend::SpendAlert> {
        let alert: Option<(i64, crate::spend::SpendAlert)> =
            self.read().await?.fetch_optional(crate::spend::SPEND_ALERT, args![alert_id]).await?;
        alert.filter(|(owner, _)| *owner == account_id).map(|(_, alert)| alert).ok_or(StoreError::NotFound)
    }
}

/// The deliveries of a run or a batch with their attempts, read by `[owned by the account,
/// deliveries, attempts]`, each taking the id.
async fn deliveries_of<B: Backend>(
    store: &B,
    account_id: i64,
    id: &str,
    [owned, deliveries, attempts]: [&str; 3],
) -> Result<Vec<DeliveryRecord>> {
    let mut read = store.read().await?;
    let owned: Option<String> = read.fetch_optional(owned, args![id, account_id]).await?;
    if owned.is_none() {
        return Err(StoreError::NotFound);
    }
    let deliveries: Vec<(i64, DeliveryRecord)> = read.fetch_all(deliveries, args![id]).await?;
    let attempts: Vec<AttemptRow> = read.fetch_all(attempts, args![id]).await?;
    Ok(with_attempts(deliveries, attempts))
}

/// Each delivery (with its row id) with its attempts.
fn with_attempts(
    mut deliveries: Vec<(i64, DeliveryRecord)>,
    attempts: Vec<AttemptRow>,
) -> Vec<DeliveryRecord> {
    let mut by_delivery: HashMap<i64, Vec<DeliveryAttempt>> = HashMap::new();
    for AttemptRow { delivery_id, attempt } in attempts {
        by_delivery.entry(delivery_id).or_default().push(attempt);
    }
    for (id, record) in &mut deliveries {
        record.attempts = by_delivery.remove(id).unwrap_or_default();
    }
    deliveries.into_iter().map(|(_, record)| record).collect()
}
