//! Receiving Atelier's webhooks: checking a delivery's signature (the Standard Webhooks
//! scheme, as [`atelier_core::webhook`] signs it) and reading its body.
//!
//! A delivery is a `POST` with a JSON body and three headers: `webhook-id` (the message id,
//! the same on every retry), `webhook-timestamp` (Unix seconds) and `webhook-signature`
//! (`v1,<base64>` values separated by spaces: one per secret in use, so a receiver keeps
//! working while a rotated-out secret still signs). Verify against the body's bytes as
//! received, before parsing them.

use reqwest::header::HeaderMap;

pub use atelier_core::webhook::{sign, VerifyError, DEFAULT_TOLERANCE_SECS};

use crate::error::Error;
use crate::models::{RunStatus, V2Status, WebhookNodeEvent};

/// Why a delivery was refused: answer it with 400 and do not act on it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    /// A header is absent (or not text).
    #[error("missing header {0}")]
    MissingHeader(&'static str),
    /// The secret, timestamp or signature did not check out.
    #[error(transparent)]
    Verify(#[from] VerifyError),
}

/// What a verified delivery says.
#[derive(Debug, Clone, PartialEq)]
pub enum WebhookPayload {
    /// A node of a run reached a state (`webhook_events: ["node"]`).
    Node(WebhookNodeEvent),
    /// A v3 run ended: its final status.
    Completed(Box<RunStatus>),
    /// A v2 run ended: its family's final status.
    CompletedV2(Box<V2Status>),
    /// A batch ended (`batch.completed`, the batch's `webhook_url`): the batch.
    BatchCompleted(Box<crate::Batch>),
    /// A key or the account reached 80% or 100% of a spend limit (`spend.threshold`, the
    /// account's endpoint: [`crate::Client::set_webhook_endpoint`]).
    SpendThreshold(atelier_wire::WebhookSpendEvent),
}

fn header<'a>(headers: &'a HeaderMap, name: &'static str) -> Result<&'a str, WebhookError> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .ok_or(WebhookError::MissingHeader(name))
}

/// Checks a delivery against the account's secret (`whsec_…`, see
/// [`crate::Client::webhook_secret`]): its headers, and its body as received. The timestamp
/// may be [`DEFAULT_TOLERANCE_SECS`] from this machine's clock.
pub fn verify_webhook(secret: &str, headers: &HeaderMap, body: &[u8]) -> Result<(), WebhookError> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    verify_webhook_at(secret, headers, body, now, DEFAULT_TOLERANCE_SECS)
}

/// [`verify_webhook`] at `now` (Unix seconds) with a tolerance of `tolerance_secs`.
pub fn verify_webhook_at(
    secret: &str,
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
    tolerance_secs: i64,
) -> Result<(), WebhookError> {
    let id = header(headers, "webhook-id")?;
    let timestamp = header(headers, "webhook-timestamp")?;
    let signatures = header(headers, "webhook-signature")?;
    atelier_core::webhook::verify(secret, id, timestamp, signatures, body, now, tolerance_secs)?;
    Ok(())
}

/// Reads a verified delivery's body: a node event, or the final status of a v3 or v2 run.
pub fn parse_webhook(body: &[u8]) -> Result<WebhookPayload, Error> {
    let value: serde_json::Value = serde_json::from_slice(body)
        .map_err(|source| Error::Decode { what: "a webhook body".into(), source })?;
    match value.get("type").and_then(|t| t.as_str()) {
        Some("node") => return crate::client::decode(value, "a node webhook").map(WebhookPayload::Node),
        Some("batch.completed") => {
            let event: crate::WebhookBatchEvent = crate::client::decode(value, "a batch webhook")?;
            return Ok(WebhookPayload::BatchCompleted(Box::new(event.batch)));
        }
        Some("spend.threshold") => {
            return crate::client::decode(value, "a spend webhook").map(WebhookPayload::SpendThreshold);
        }
        _ => {}
    }
    if value.get("overall_status").is_some() {
        return crate::client::decode_status(value, "a completed webhook")
            .map(|s| WebhookPayload::Completed(Box::new(s)));
    }
    let mut status: V2Status = crate::client::decode(value.clone(), "a completed v2 webhook")?;
    status.raw = value;
    Ok(WebhookPayload::CompletedV2(Box::new(status)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

    fn headers(id: &str, timestamp: i64, signature: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("webhook-id", id.to_string()),
            ("webhook-timestamp", timestamp.to_string()),
            ("webhook-signature", signature.to_string()),
        ] {
            headers.insert(name, HeaderValue::from_str(&value).unwrap());
        }
        headers
    }

    #[test]
    fn a_signed_delivery_verifies_and_any_change_is_refused() {
        let body = br#"{"type":"node","run_id":"wr_1","node":"A","id":"gen_1","status":"running"}"#;
        let now = 1_700_000_000;
        let other = atelier_core::webhook::new_secret();
        // Two secrets sign while a rotation's grace lasts; either one verifies.
        let signature = sign(&[&other, SECRET], "msg_1", now, body);
        let good = headers("msg_1", now, &signature);
        assert_eq!(verify_webhook_at(SECRET, &good, body, now + 10, 300), Ok(()));
        assert_eq!(verify_webhook_at(&other, &good, body, now, 300), Ok(()));
        assert_eq!(
            verify_webhook_at(SECRET, &good, b"{}", now, 300),
            Err(WebhookError::Verify(VerifyError::NoMatch))
        );
        assert_eq!(
            verify_webhook_at(SECRET, &good, body, now + 301, 300),
            Err(WebhookError::Verify(VerifyError::TimestampOutOfRange(300)))
        );
        let mut missing = good.clone();
        missing.remove("webhook-signature");
        assert_eq!(
            verify_webhook_at(SECRET, &missing, body, now, 300),
            Err(WebhookError::MissingHeader("webhook-signature"))
        );
        assert!(verify_webhook(SECRET, &good, body).is_err(), "2023's timestamp is stale today");
        match parse_webhook(body).unwrap() {
            WebhookPayload::Node(event) => {
                assert_eq!((event.node.as_str(), event.id.as_deref()), ("A", Some("gen_1")))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn completed_bodies_are_read_as_v3_or_v2_statuses() {
        let v3 = br#"{"id":"gen_1","overall_status":"succeeded","status":"succeeded","output":["u"],"error":null}"#;
        assert!(matches!(parse_webhook(v3).unwrap(), WebhookPayload::Completed(s) if s.succeeded()));
        let v2 = br#"{"id":"gen_1","status":"completed","output":["u"],"error":null}"#;
        assert!(matches!(parse_webhook(v2).unwrap(), WebhookPayload::CompletedV2(s) if s.urls() == ["u"]));
        assert!(parse_webhook(b"[]").is_err());
        let batch = br#"{"type":"batch.completed","batch":{"id":"bat_1","status":"finished","type":"node",
            "target":"upscale","priority":"bulk","items":{"total":2,"succeeded":2},"progress":1.0}}"#;
        match parse_webhook(batch).unwrap() {
            WebhookPayload::BatchCompleted(b) => {
                assert_eq!(
                    (b.id.as_str(), b.status, b.items.succeeded),
                    ("bat_1", crate::BatchState::Finished, 2)
                )
            }
            other => panic!("{other:?}"),
        }
    }
}
