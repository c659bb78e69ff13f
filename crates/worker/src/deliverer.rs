//! Webhook deliveries: a run's `webhook_url` receives a signed POST when the run finishes
//! (and, with `webhook_events: ["node"]`, when a node's state changes), delivered at least
//! once.
//!
//! - What is sent: for `completed`, the run's final status, the JSON of its status endpoint
//!   (v3, or the v2 family's for a v2 run; the API renders it, [`CompletedBody`]); for `node`,
//!   a [`WebhookNodeEvent`] with the state the node reached; for a batch's `batch`, a
//!   `batch.completed` body with the batch's status; for a spend alert's `spend`, a
//!   `spend.threshold` body ([`WebhookSpendEvent`]). Signed as the Standard Webhooks
//!   specification says ([`atelier_core::webhook`]) with every secret of the account in use.
//! - Where it is queued: triggers in the database queue a delivery in the transaction that
//!   makes its change, so a change that committed has its delivery, whichever process made
//!   it, and a delivery survives restarts.
//! - Who sends it: a [`Deliverer`] in every `serve` and `worker` process, beside the other
//!   background loops ([`crate::maintenance`]), claims due deliveries (each claimed by one
//!   process, under a lease), POSTs them through [`atelier_inputs::Sender`] (the address
//!   policy of image URLs, checked again at connect time; redirects are not followed;
//!   [`DELIVERY_TIMEOUT`]), and records each attempt. A 2xx answer delivers; anything else is
//!   retried with exponential backoff ([`retry_delay`]) until [`RETRY_WINDOW`] after the
//!   change, then the delivery fails.

use std::sync::Arc;
use std::time::{Duration, Instant};

use atelier_core::status::NodeStatus;
use atelier_core::time::{self, now_micros};
use atelier_core::webhook;
use atelier_inputs::{InputError, InputPolicy, Sender};
use atelier_store::{
    AttemptEnd, BatchRecord, Delivery, DeliveryAttempt, DeliveryEvent, DeliverySubject, RunRecord,
    SharedStore, SpendAlert, StoreError,
};
use atelier_wire::{NodeEventType, SpendEventType, WebhookNodeEvent, WebhookSpendEvent};
use tokio::sync::Semaphore;
use tracing::Instrument as _;
use url::Url;

/// How long one attempt may take, connection included.
pub const DELIVERY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long after its change a delivery is retried.
pub const RETRY_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// The longest wait between two attempts.
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(3600);

/// The wait before attempt `attempt + 1`, after attempt `attempt` failed: `first`, doubling
/// with each attempt, at most [`MAX_RETRY_DELAY`], with up to a fifth added at random so that
/// a receiver that comes back is not hit by every delivery at once.
pub fn retry_delay(first: Duration, attempt: u32) -> Duration {
    let base = first.saturating_mul(1 << attempt.saturating_sub(1).min(20)).min(MAX_RETRY_DELAY);
    let fifth = u64::try_from(base.as_millis() / 5).unwrap_or(0);
    base + Duration::from_millis(rand::random::<u64>() % (fifth + 1))
}

/// Settings of a [`Deliverer`].
#[derive(Debug, Clone)]
pub struct DeliveryConfig {
    /// Deliveries in flight at once, per process.
    pub concurrency: usize,
    /// The wait before the second attempt ([`retry_delay`]).
    pub first_retry: Duration,
    /// Which addresses deliveries may go to (`[inputs]`).
    pub policy: InputPolicy,
}

impl Default for DeliveryConfig {
    fn default() -> Self {
        Self { concurrency: 32, first_retry: Duration::from_secs(5), policy: InputPolicy::default() }
    }
}

/// The body of a `completed` delivery, the run's final status as the API answers it, and of
/// a `batch` delivery (the API provides them; this crate does not render statuses).
pub trait CompletedBody: Send + Sync {
    /// The JSON body for a finished run.
    fn completed(&self, run: &RunRecord) -> Result<Vec<u8>, String>;
    /// The JSON body for a batch that ended.
    fn batch(&self, batch: &BatchRecord) -> Result<Vec<u8>, String>;
}

/// Claims due deliveries and makes them (see the module documentation).
pub struct Deliverer {
    store: SharedStore,
    bodies: Arc<dyn CompletedBody>,
    sender: Sender,
    slots: Arc<Semaphore>,
    concurrency: usize,
    first_retry: Duration,
}

/// How long a claim holds a delivery: longer than an attempt can take.
const CLAIM_LEASE: Duration = Duration::from_secs(60);
/// How often the deliverer looks without being woken, at most.
const IDLE_POLL: Duration = Duration::from_secs(5);

impl Deliverer {
    pub fn new(
        store: SharedStore,
        bodies: Arc<dyn CompletedBody>,
        config: &DeliveryConfig,
    ) -> Result<Self, InputError> {
        let agent = concat!("Atelier-Webhooks/", env!("CARGO_PKG_VERSION"));
        let sender = Sender::new(&config.policy, DELIVERY_TIMEOUT, agent)?;
        let concurrency = config.concurrency.max(1);
        let slots = Arc::new(Semaphore::new(concurrency));
        Ok(Self { store, bodies, sender, slots, concurrency, first_retry: config.first_retry })
    }

    /// Delivers until `stop` resolves; attempts in flight then finish (at most
    /// [`DELIVERY_TIMEOUT`]).
    pub async fn run(self, stop: impl std::future::Future<Output = ()>) {
        let this = Arc::new(self);
        let mut woken = this.store.changes().deliveries();
        tokio::pin!(stop);
        loop {
            woken.borrow_and_update();
            // A read first: wake-ups come with every change of a run on SQLite, and a claim is
            // a write (the one writer there), made only when something is due.
            let due = this.next_due().await;
            let now = now_micros();
            let free = this.slots.available_permits();
            if free == 0 {
                // Every slot is busy: look again once one is free.
                tokio::select! {
                    _ = &mut stop => break,
                    permit = Arc::clone(&this.slots).acquire_owned() => drop(permit),
                }
                continue;
            }
            if due.is_some_and(|at| at <= now) {
                let claimed = match this.store.claim_deliveries(CLAIM_LEASE, free).await {
                    Ok(claimed) => claimed,
                    Err(e) => {
                        tracing::warn!(error = %e, "claiming webhook deliveries failed");
                        Vec::new()
                    }
                };
                for delivery in claimed {
                    let Ok(permit) = Arc::clone(&this.slots).acquire_owned().await else { return };
                    let this = Arc::clone(&this);
                    tokio::spawn(async move {
                        this.deliver(delivery).await;
                        drop(permit);
                    });
                }
                // With every slot taken, the next round waits for one (above).
                continue;
            }
            let wait = due.map_or(IDLE_POLL, |at| {
                Duration::from_micros(u64::try_from(at.saturating_sub(now)).unwrap_or(0)).min(IDLE_POLL)
            });
            tokio::select! {
                _ = &mut stop => break,
                _ = woken.changed() => {}
                () = tokio::time::sleep(wait) => {}
            }
        }
        // Let attempts in flight end and record themselves.
        let _ = this.slots.acquire_many(u32::try_from(this.concurrency).unwrap_or(u32::MAX)).await;
    }

    /// When the soonest pending delivery is due (`None` when none is pending, or the read
    /// failed: the deliverer then looks again after [`IDLE_POLL`]).
    async fn next_due(&self) -> Option<atelier_core::time::Micros> {
        match self.store.next_delivery_due().await {
            Ok(due) => due,
            Err(e) => {
                tracing::warn!(error = %e, "reading when webhooks are due failed");
                None
            }
        }
    }

    /// One attempt of one delivery, recorded: a span of the run's trace when traces are on.
    async fn deliver(&self, delivery: Delivery) {
        let span = atelier_telemetry::traces::run_span(delivery.trace_parent.as_deref(), || {
            tracing::info_span!(target: "atelier::trace", "webhook",
                otel.name = %format_args!("webhook {}", delivery.event.as_str()), otel.kind = "client",
                atelier.run_id = %delivery.subject, atelier.attempt = delivery.attempt,
                http.response.status_code = tracing::field::Empty, otel.status_code = tracing::field::Empty)
        });
        self.deliver_in(delivery).instrument(span).await;
    }

    async fn deliver_in(&self, delivery: Delivery) {
        let started = Instant::now();
        let at = now_micros();
        let outcome = self.attempt(&delivery).await;
        let duration_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
        let (status_code, error) = match &outcome {
            Ok(status) if (200..300).contains(status) => (Some(*status), None),
            Ok(status) => (Some(*status), Some(format!("the receiver answered HTTP {status}"))),
            Err(reason) => (None, Some(reason.clone())),
        };
        let delivered = error.is_none();
        let span = tracing::Span::current();
        if let Some(status) = status_code {
            span.record("http.response.status_code", status);
        }
        if !delivered {
            span.record("otel.status_code", "error");
        }
        let end = if delivered {
            AttemptEnd::Delivered
        } else {
            let next = time::after(now_micros(), retry_delay(self.first_retry, delivery.attempt));
            if next > time::after(delivery.created_at, RETRY_WINDOW) {
                AttemptEnd::GaveUp
            } else {
                AttemptEnd::RetryAt(next)
            }
        };
        if let Some(reason) = &error {
            tracing::info!(delivery = %delivery.message_id, of = %delivery.subject, attempt = delivery.attempt,
                reason = %reason, "webhook delivery attempt failed");
        }
        let outcome = match end {
            AttemptEnd::Delivered => "delivered",
            AttemptEnd::RetryAt(_) => "retry",
            AttemptEnd::GaveUp => "failed",
        };
        metrics::counter!("atelier_webhook_attempts_total", "outcome" => outcome).increment(1);
        metrics::histogram!("atelier_webhook_attempt_duration_seconds")
            .record(started.elapsed().as_secs_f64());
        let attempt = DeliveryAttempt { attempt: delivery.attempt, at, status_code, error, duration_ms };
        match self.store.end_delivery_attempt(&delivery, &attempt, end).await {
            Ok(true) => {}
            Ok(false) => {
                tracing::warn!(delivery = %delivery.message_id, "a webhook claim lapsed before its attempt ended")
            }
            Err(e) => {
                tracing::warn!(delivery = %delivery.message_id, error = %e, "recording a webhook attempt failed")
            }
        }
    }

    /// Sends the delivery: the receiver's HTTP status, or why there is none.
    async fn attempt(&self, delivery: &Delivery) -> Result<u16, String> {
        let body = self.body(delivery).await?;
        let secrets = self.store.webhook_secrets(delivery.account_id).await.map_err(|e| e.to_string())?;
        let secrets: Vec<&str> = secrets.iter().map(|s| s.secret.as_str()).collect();
        let url = Url::parse(&delivery.url).map_err(|e| format!("invalid URL: {e}"))?;
        let timestamp = now_micros() / 1_000_000;
        let signature = webhook::sign(&secrets, &delivery.message_id, timestamp, &body);
        let mut headers = vec![
            ("webhook-id", delivery.message_id.clone()),
            ("webhook-timestamp", timestamp.to_string()),
            ("webhook-signature", signature),
        ];
        // The receiver may continue the run's trace.
        if let Some(traceparent) = atelier_telemetry::traces::traceparent(&tracing::Span::current()) {
            headers.push(("traceparent", traceparent));
        }
        match self.sender.post_json(&url, &headers, body.into()).await {
            Ok(answer) => Ok(answer.status),
            Err(InputError::Timeout) => Err(format!("no answer within {} s", DELIVERY_TIMEOUT.as_secs())),
            Err(e) => Err(e.to_string()),
        }
    }

    /// The body of a delivery, rendered when it is sent: a finished run never changes, a
    /// node event carries the state recorded with it, and a batch is as it is now.
    async fn body(&self, delivery: &Delivery) -> Result<Vec<u8>, String> {
        let run_id = match &delivery.subject {
            DeliverySubject::Run(id) => id,
            DeliverySubject::Batch(id) => {
                return match self.store.get_batch(delivery.account_id, id).await {
                    Ok(batch) => self.bodies.batch(&batch),
                    Err(StoreError::NotFound) => Err("the batch no longer exists".into()),
                    Err(e) => Err(e.to_string()),
                };
            }
            DeliverySubject::Alert(id) => {
                let alert =
                    self.store.spend_alert(delivery.account_id, *id).await.map_err(|e| e.to_string())?;
                return serde_json::to_vec(&spend_event(&alert)).map_err(|e| e.to_string());
            }
        };
        let run = match self.store.get_run(delivery.account_id, run_id).await {
            Ok(run) => run,
            Err(StoreError::NotFound) => return Err("the run no longer exists".into()),
            Err(e) => return Err(e.to_string()),
        };
        match delivery.event {
            DeliveryEvent::Completed => self.bodies.completed(&run),
            DeliveryEvent::Node => {
                let node = delivery.node.as_deref().unwrap_or_default();
                let gen_id = run.nodes.iter().find(|n| n.name == node).map(|n| n.gen_id.clone());
                let status = delivery
                    .node_status
                    .as_deref()
                    .and_then(|s| s.parse::<NodeStatus>().ok())
                    .ok_or("the delivery names no node state")?;
                let event = WebhookNodeEvent {
                    kind: NodeEventType::Node,
                    run_id: run_id.clone(),
                    node: node.to_string(),
                    id: gen_id,
                    status: status.into(),
                };
                serde_json::to_vec(&event).map_err(|e| e.to_string())
            }
            DeliveryEvent::Batch | DeliveryEvent::Spend => {
                Err(format!("a {} event names a run", delivery.event.as_str()))
            }
        }
    }
}

/// The body of a spend alert's delivery.
fn spend_event(alert: &SpendAlert) -> WebhookSpendEvent {
    WebhookSpendEvent {
        kind: SpendEventType::SpendThreshold,
        applies_to: alert.holder.as_str().to_owned(),
        key: alert.key_prefix.clone(),
        period: alert.period.as_str().to_owned(),
        threshold: u8::try_from(alert.threshold).unwrap_or(100),
        limit: alert.limit,
        used: alert.used,
        resets_at: time::format_time(alert.resets_at),
        created_at: time::format_time(alert.created_at),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_double_from_the_first_wait_up_to_an_hour_with_a_fifth_of_jitter() {
        let first = Duration::from_secs(5);
        for (attempt, base) in [(1, 5), (2, 10), (3, 20), (4, 40), (10, 2560), (11, 3600), (40, 3600)] {
            for _ in 0..50 {
                let delay = retry_delay(first, attempt);
                let base = Duration::from_secs(base);
                assert!(delay >= base && delay <= base + base / 5, "{attempt}: {delay:?}");
            }
        }
    }
}
