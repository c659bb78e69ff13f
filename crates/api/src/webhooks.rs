//! Webhooks, the HTTP side: a run body's `webhook_url` and `webhook_events` ([`WebhookRequest`]),
//! the endpoints `GET /api/v3/webhooks/secret`, `POST /api/v3/webhooks/secret/rotate`,
//! `GET`/`PUT`/`DELETE /api/v3/webhooks/endpoint` (the account's own endpoint, where its
//! `spend.threshold` alerts go), `GET /api/v3/runs/{id}/webhooks` and `POST /api/v3/runs/{id}/webhooks/{delivery}/replay`, and the body of a `completed` delivery, which is the run's
//! status as its status endpoint answers it ([`completed_body`]). The deliveries themselves are
//! made by `atelier_worker::Deliverer`, in every `serve` and `worker` process.

use std::time::Duration;

use atelier_blob::BlobStore;
use atelier_core::time::format_time;
use atelier_core::v2::Family;
use atelier_core::RequestError;
use atelier_inputs::InputPolicy;
use atelier_store::{
    DeliveryEvent, DeliveryRecord, DeliveryState as DeliveryRecordState, RunRecord, StoreError,
    WebhookEvents, WebhookSecret,
};
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Map, Value};
use url::Url;

use crate::error::ApiError;
use crate::extract::{Caller, RunId};
use crate::render;
use crate::state::AppState;

/// How long a rotated-out secret still signs.
pub const ROTATION_GRACE: Duration = Duration::from_secs(24 * 3600);
/// The longest `webhook_url` accepted.
pub use atelier_wire::runs::MAX_WEBHOOK_URL_BYTES as MAX_URL_BYTES;

pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v3/webhooks/secret", get(secret))
        .route("/api/v3/webhooks/secret/rotate", post(rotate))
        .route("/api/v3/webhooks/endpoint", get(endpoint).put(set_endpoint).delete(remove_endpoint))
        .route("/api/v3/runs/{run_id}/webhooks", get(deliveries))
        .route("/api/v3/runs/{run_id}/webhooks/{delivery}/replay", post(replay))
}

/// Where a run's events go, as a request gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookRequest {
    pub url: Url,
    pub events: WebhookEvents,
}

impl WebhookRequest {
    /// Reads `webhook_url` and `webhook_events` from a run body (removing them); `None` when
    /// neither is given. The URL's form is checked here, its address at submission
    /// ([`WebhookRequest::check`]).
    pub fn take(body: &mut Map<String, Value>) -> Result<Option<Self>, RequestError> {
        let url = body.remove("webhook_url").filter(|v| !v.is_null());
        let events = body.remove("webhook_events").filter(|v| !v.is_null());
        let Some(url) = url else {
            return match events {
                Some(_) => Err(RequestError::invalid("webhook_events", "needs webhook_url")),
                None => Ok(None),
            };
        };
        let url = endpoint_url("webhook_url", &url)?;
        let events = match events {
            None => WebhookEvents { completed: true, node: false },
            Some(value) => parse_events(&value)?,
        };
        Ok(Some(Self { url, events }))
    }

    /// The URL against the address policy of image URLs (scheme, port, no private address
    /// unless allowed); a refusal is a 422 `InvalidInput` on `webhook_url`.
    pub async fn check(&self, policy: &InputPolicy) -> Result<(), ApiError> {
        atelier_inputs::check_url(&self.url, policy)
            .await
            .map_err(|e| ApiError::Request(RequestError::invalid("webhook_url", e.to_string())))
    }
}

/// A webhook address as a body gives it in `field`: a string, an absolute http or https
/// URL of at most [`MAX_URL_BYTES`], without credentials.
fn endpoint_url(field: &str, value: &Value) -> Result<Url, RequestError> {
    let text = value.as_str().ok_or_else(|| RequestError::invalid(field, "must be a string"))?;
    if text.len() > MAX_URL_BYTES {
        return Err(RequestError::invalid(field, format!("longer than {MAX_URL_BYTES} bytes")));
    }
    let url =
        Url::parse(text).map_err(|e| RequestError::invalid(field, format!("not an absolute URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(RequestError::invalid(field, "must be an http or https URL"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(RequestError::invalid(field, "must not carry credentials"));
    }
    Ok(url)
}

fn parse_events(value: &Value) -> Result<WebhookEvents, RequestError> {
    let invalid =
        || RequestError::invalid("webhook_events", "a non-empty list of \"completed\" and \"node\"");
    let list = value.as_array().filter(|l| !l.is_empty()).ok_or_else(invalid)?;
    let mut events = WebhookEvents::default();
    for item in list {
        match item.as_str() {
            Some("completed") => events.completed = true,
            Some("node") => events.node = true,
            _ => return Err(invalid()),
        }
    }
    Ok(events)
}

async fn secret(
    State(state): State<AppState>,
    Caller(account): Caller,
) -> Result<Json<atelier_wire::WebhookSecret>, ApiError> {
    let secrets = state.store.webhook_secrets(account.id).await?;
    Ok(Json(secret_answer(&secrets)))
}

async fn rotate(
    State(state): State<AppState>,
    Caller(account): Caller,
    origin: crate::audit::Origin,
) -> Result<Json<atelier_wire::WebhookSecret>, ApiError> {
    let secrets = state.store.rotate_webhook_secret(account.id, ROTATION_GRACE).await?;
    let summary = serde_json::json!({"previous_signs_for_secs": ROTATION_GRACE.as_secs()});
    crate::audit::record(&state, &account, &origin, "webhook_secret.rotated", None, summary).await;
    Ok(Json(secret_answer(&secrets)))
}

/// `{"key": current, "previous_key_expires_at": …}` (the latter when a rotated-out secret
/// still signs).
fn secret_answer(secrets: &[WebhookSecret]) -> atelier_wire::WebhookSecret {
    let current = secrets.iter().find(|s| s.expires_at.is_none());
    let previous = secrets.iter().filter_map(|s| s.expires_at).max();
    atelier_wire::WebhookSecret {
        // The store makes the current secret on first read: there is always one.
        key: current.map(|s| s.secret.clone()).unwrap_or_default(),
        previous_key_expires_at: previous.map(format_time),
    }
}

/// How many of the endpoint's latest deliveries its `GET` lists.
pub const ENDPOINT_LOG: usize = 50;

/// The events the account's endpoint receives.
const ENDPOINT_EVENTS: [&str; 1] = ["spend.threshold"];

async fn endpoint(
    State(state): State<AppState>,
    Caller(account): Caller,
) -> Result<Json<atelier_wire::WebhookEndpoint>, ApiError> {
    endpoint_answer(&state, account.id).await
}

/// Sets the account's endpoint (body `{"url": …}`): its form, then its address against the
/// policy of image URLs; 422 `InvalidInput` on `url` when either refuses it.
async fn set_endpoint(
    State(state): State<AppState>,
    Caller(account): Caller,
    origin: crate::audit::Origin,
    crate::extract::JsonObject(mut body): crate::extract::JsonObject,
) -> Result<Json<atelier_wire::WebhookEndpoint>, ApiError> {
    let url = body.remove("url").ok_or_else(|| RequestError::invalid("url", "is required"))?;
    if let Some(field) = body.keys().next() {
        return Err(RequestError::invalid(field.as_str(), "unknown field (the body takes url)").into());
    }
    let url = endpoint_url("url", &url)?;
    atelier_inputs::check_url(&url, &state.config.inputs)
        .await
        .map_err(|e| ApiError::Request(RequestError::invalid("url", e.to_string())))?;
    state.store.set_webhook_endpoint(account.id, Some(url.as_str())).await?;
    let summary = serde_json::json!({"url": url.as_str()});
    crate::audit::record(&state, &account, &origin, "webhook_endpoint.set", None, summary).await;
    endpoint_answer(&state, account.id).await
}

/// Removes the account's endpoint: spend alerts are no longer sent (deliveries already
/// queued still go out).
async fn remove_endpoint(
    State(state): State<AppState>,
    Caller(account): Caller,
    origin: crate::audit::Origin,
) -> Result<Json<atelier_wire::WebhookEndpoint>, ApiError> {
    state.store.set_webhook_endpoint(account.id, None).await?;
    let summary = serde_json::json!({});
    crate::audit::record(&state, &account, &origin, "webhook_endpoint.removed", None, summary).await;
    endpoint_answer(&state, account.id).await
}

async fn endpoint_answer(
    state: &AppState,
    account_id: i64,
) -> Result<Json<atelier_wire::WebhookEndpoint>, ApiError> {
    let url = state.store.webhook_endpoint(account_id).await?;
    let deliveries = state.store.alert_deliveries(account_id, ENDPOINT_LOG).await?;
    Ok(Json(atelier_wire::WebhookEndpoint {
        url,
        events: ENDPOINT_EVENTS.iter().map(|e| (*e).to_owned()).collect(),
        deliveries: deliveries.iter().map(delivery_shape).collect(),
    }))
}

async fn deliveries(
    State(state): State<AppState>,
    Caller(account): Caller,
    RunId(id): RunId,
) -> Result<Json<atelier_wire::WebhookDeliveryList>, ApiError> {
    let list = state.store.run_deliveries(account.id, &id).await.map_err(ApiError::run_lookup(&id))?;
    Ok(Json(atelier_wire::WebhookDeliveryList { deliveries: list.iter().map(delivery_shape).collect() }))
}

/// Sends one of a run's deliveries again, now: a new attempt with the same `webhook-id`, in
/// the delivery log. 409 while the delivery is pending; 404 `DeliveryNotFound` for a message
/// id the run does not have; a deleted run's 410.
async fn replay(
    State(state): State<AppState>,
    Caller(account): Caller,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Json<atelier_wire::WebhookDelivery>, ApiError> {
    let Ok(Path((id, delivery))) = path else { return Err(ApiError::RunNotFound(String::new())) };
    if !atelier_core::ids::is_run_id(&id) {
        return Err(ApiError::RunNotFound(id));
    }
    // A deleted run answers 410, another account's 404.
    state.store.get_run(account.id, &id).await.map_err(ApiError::run_lookup(&id))?;
    match state.store.replay_delivery(account.id, &id, &delivery).await {
        Ok(()) => {}
        Err(StoreError::NotFound) => return Err(ApiError::DeliveryNotFound(delivery)),
        Err(StoreError::Conflict(reason)) => return Err(ApiError::Conflict(reason)),
        Err(e) => return Err(e.into()),
    }
    let list = state.store.run_deliveries(account.id, &id).await.map_err(ApiError::run_lookup(&id))?;
    let replayed = list.iter().find(|d| d.message_id == delivery);
    replayed.map(|d| Json(delivery_shape(d))).ok_or(ApiError::DeliveryNotFound(delivery))
}

/// A delivery and its attempts, as the deliveries listings answer it.
pub(crate) fn delivery_shape(d: &DeliveryRecord) -> atelier_wire::WebhookDelivery {
    use atelier_wire::DeliveryState;
    atelier_wire::WebhookDelivery {
        id: d.message_id.clone(),
        event: match d.event {
            DeliveryEvent::Completed => atelier_wire::DeliveryEvent::Completed,
            DeliveryEvent::Node => atelier_wire::DeliveryEvent::Node,
            DeliveryEvent::Batch => atelier_wire::DeliveryEvent::Batch,
            DeliveryEvent::Spend => atelier_wire::DeliveryEvent::Spend,
        },
        node: d.node.clone(),
        url: d.url.clone(),
        state: match d.state {
            DeliveryRecordState::Pending => DeliveryState::Pending,
            DeliveryRecordState::Delivered => DeliveryState::Delivered,
            DeliveryRecordState::Failed => DeliveryState::Failed,
        },
        created_at: format_time(d.created_at),
        next_attempt_at: d.next_at.map(format_time),
        attempts: d
            .attempts
            .iter()
            .map(|a| atelier_wire::WebhookAttempt {
                attempt: a.attempt,
                at: format_time(a.at),
                status_code: a.status_code,
                error: a.error.clone(),
                duration_ms: a.duration_ms,
            })
            .collect(),
        replays: d.replays,
    }
}

/// The body of a `completed` delivery: the run's final status, the JSON of its status
/// endpoint (v3, or the v2 family's for a v2 run).
pub fn completed_body(blob: &BlobStore, run: &RunRecord) -> Result<Vec<u8>, String> {
    match run.family.as_deref().and_then(Family::parse) {
        Some(family) => serde_json::to_vec(&render::v2_status(blob, run, family)),
        None => serde_json::to_vec(&render::v3_status(blob, run, None)),
    }
    .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn take(body: serde_json::Value) -> Result<Option<WebhookRequest>, RequestError> {
        let serde_json::Value::Object(mut map) = body else { unreachable!() };
        let taken = WebhookRequest::take(&mut map);
        assert!(!map.contains_key("webhook_url") && !map.contains_key("webhook_events"));
        taken
    }

    #[test]
    fn webhook_fields_are_read_and_checked() {
        assert_eq!(take(json!({"type": "node"})), Ok(None));
        assert_eq!(take(json!({"webhook_url": null})), Ok(None));
        let hook = take(json!({"webhook_url": "https://example.com/h?x=1"})).unwrap().unwrap();
        assert_eq!(hook.url.as_str(), "https://example.com/h?x=1");
        assert_eq!(hook.events, WebhookEvents { completed: true, node: false });
        let hook =
            take(json!({"webhook_url": "http://example.com", "webhook_events": ["node", "completed"]}));
        assert_eq!(hook.unwrap().unwrap().events, WebhookEvents { completed: true, node: true });
        let hook = take(json!({"webhook_url": "http://example.com", "webhook_events": ["node"]}));
        assert_eq!(hook.unwrap().unwrap().events, WebhookEvents { completed: false, node: true });
        let field = |r: Result<Option<WebhookRequest>, RequestError>| match r {
            Err(RequestError::InvalidInput { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        for (body, expected) in [
            (json!({"webhook_events": ["completed"]}), "webhook_events"),
            (json!({"webhook_url": 5}), "webhook_url"),
            (json!({"webhook_url": "/relative"}), "webhook_url"),
            (json!({"webhook_url": "ftp://example.com/x"}), "webhook_url"),
            (json!({"webhook_url": "https://user:pw@example.com/"}), "webhook_url"),
            (
                json!({"webhook_url": format!("https://example.com/{}", "a".repeat(MAX_URL_BYTES))}),
                "webhook_url",
            ),
            (json!({"webhook_url": "https://example.com", "webhook_events": []}), "webhook_events"),
            (json!({"webhook_url": "https://example.com", "webhook_events": "completed"}), "webhook_events"),
            (json!({"webhook_url": "https://example.com", "webhook_events": ["started"]}), "webhook_events"),
            (json!({"webhook_url": "https://example.com", "webhook_events": [1]}), "webhook_events"),
        ] {
            assert_eq!(field(take(body.clone())), expected, "{body}");
        }
    }
}
