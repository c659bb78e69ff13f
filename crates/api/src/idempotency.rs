//! `Idempotency-Key` on the run endpoints (DESIGN 3.9): the same key and body within 24 hours
//! get the first answer again, with `Idempotent-Replayed: true`, and create nothing.
//!
//! Only an accepted run's answer is remembered, recorded by the store in the transaction that
//! creates the run. A refused request (400, 402, 404, 413, 422, 429, 500) created nothing, so
//! its key is given back and may be used again, for a corrected body too. The protocol and
//! what a retry sees after a crash are in `atelier_store`'s `idempotency` module.

use std::time::Duration;

use atelier_store::{Account, IdempotencyClaim, IdempotencyStart, SharedStore, StoredAnswer};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::body::{BodySlices, RunBody};
use crate::error::{ApiError, RunError};
use crate::ops::{self, Submission};
use crate::state::AppState;

/// The request header.
pub const HEADER: &str = "idempotency-key";
/// The response header on a replayed answer.
pub const REPLAYED_HEADER: &str = "idempotent-replayed";
/// Longest key accepted.
pub const MAX_KEY_LEN: usize = 255;
/// How long a key's answer is kept.
pub const KEY_TTL: Duration = Duration::from_secs(24 * 3600);
/// A key still in progress after this long belongs to a request that died (its process
/// crashed, or the store failed to give the key back): the next request with the key takes
/// it over. Accepting a run takes well under this; should a live request be overtaken, the
/// store refuses its run, so a key still creates at most one run.
pub const STALE_AFTER: Duration = Duration::from_secs(120);

/// The `Idempotency-Key` header: absent, or 1 to [`MAX_KEY_LEN`] visible ASCII characters
/// (`!` to `~`, no spaces), sent once. Anything else is 400 `InvalidRequest`.
pub fn key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let mut values = headers.get_all(HEADER).iter();
    let Some(value) = values.next() else { return Ok(None) };
    let invalid = |why: &str| {
        ApiError::Request(atelier_core::RequestError::InvalidRequest(format!(
            "Idempotency-Key {why}: it must be sent once, as 1 to {MAX_KEY_LEN} visible ASCII characters"
        )))
    };
    if values.next().is_some() {
        return Err(invalid("was sent more than once"));
    }
    let bytes = value.as_bytes();
    if bytes.is_empty() {
        return Err(invalid("is empty"));
    }
    if bytes.len() > MAX_KEY_LEN {
        return Err(invalid("is too long"));
    }
    match value.to_str() {
        Ok(key) if bytes.iter().all(|b| (b'!'..=b'~').contains(b)) => Ok(Some(key.to_string())),
        _ => Err(invalid("has characters other than visible ASCII")),
    }
}

/// What identifies a request under a key: SHA-256 (hex) of the endpoint and the body with
/// its object keys sorted, so reordered fields are the same request.
pub fn fingerprint(endpoint: &str, body: &Map<String, Value>) -> String {
    fingerprint_of(endpoint, body, &BodySlices::default())
}

/// [`fingerprint`] of a body whose placeholders stand for `slices`: the same as that of the
/// body with the strings they stand for.
fn fingerprint_of(endpoint: &str, body: &Map<String, Value>, slices: &BodySlices) -> String {
    let mut hasher = Sha256::new();
    hasher.update(endpoint.as_bytes());
    hasher.update(b"\n");
    canonical_object(body, &mut hasher, slices);
    hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn canonical_object(map: &Map<String, Value>, out: &mut Sha256, slices: &BodySlices) {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.update(b"{");
    for (i, (key, value)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.update(b",");
        }
        out.update(Value::from(key.as_str()).to_string().as_bytes());
        out.update(b":");
        canonical(value, out, slices);
    }
    out.update(b"}");
}

/// Feeds `value`'s canonical JSON to `out` (object keys sorted). Depth is bounded by the JSON
/// parser's recursion limit.
fn canonical(value: &Value, out: &mut Sha256, slices: &BodySlices) {
    match value {
        Value::Object(map) => canonical_object(map, out, slices),
        Value::Array(items) => {
            out.update(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.update(b",");
                }
                canonical(item, out, slices);
            }
            out.update(b"]");
        }
        // Scalars serialize one way (compact JSON), written straight into the hash: a string
        // may be an image of several MiB. A placeholder's slice is a JSON string's contents
        // that needed no escaping, so it serializes as itself between quotes.
        scalar => match scalar.as_str().and_then(|text| slices.get(text)) {
            Some(slice) => {
                out.update(b"\"");
                out.update(&slice);
                out.update(b"\"");
            }
            None => {
                let _ = serde_json::to_writer(HashWriter(out), scalar);
            }
        },
    }
}

/// Feeds what is written to it to a hash.
struct HashWriter<'a>(&'a mut Sha256);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// An idempotency key and the fingerprint of the request sent with it ([`fingerprint`]).
pub(crate) struct Keyed {
    pub key: String,
    pub fingerprint: String,
}

impl Keyed {
    /// The key of a request sent to `endpoint` with `body`, if it has one (taken before the
    /// body is handed on, so the body is not kept for it).
    pub fn of(key: Option<String>, endpoint: &str, body: &Map<String, Value>) -> Option<Self> {
        key.map(|key| Keyed { key, fingerprint: fingerprint(endpoint, body) })
    }

    /// [`Keyed::of`] a v3 run body.
    pub fn of_run(key: Option<String>, endpoint: &str, body: &RunBody) -> Option<Self> {
        key.map(|key| Keyed { key, fingerprint: fingerprint_of(endpoint, &body.fields, &body.slices) })
    }
}

/// Accepts `submission`, at most once per key: without a key it is submitted as is; with
/// one, a repeat gets the first answer again, a different request under the key 422
/// `IdempotencyKeyReused`, and a repeat while the first is still being accepted 409
/// `IdempotencyConflict`.
pub(crate) async fn submit_once(
    state: &AppState,
    account: &Account,
    keyed: Option<Keyed>,
    submission: Submission<'_>,
) -> Result<Answer, RunError> {
    let id = submission.id.clone();
    accept_once(state, account, keyed, id, |key| async move {
        Ok(ops::submit(state, account, submission, key.as_deref()).await?.handle())
    })
    .await
}

/// Runs `accept` (which creates `id` and answers its body, recording it under the key it is
/// given in the transaction that creates it) at most once per key, as [`submit_once`] says.
pub(crate) async fn accept_once<F, Fut>(
    state: &AppState,
    account: &Account,
    keyed: Option<Keyed>,
    id: String,
    accept: F,
) -> Result<Answer, RunError>
where
    F: FnOnce(Option<String>) -> Fut,
    Fut: std::future::Future<Output = Result<Value, ApiError>>,
{
    let Some(Keyed { key, fingerprint }) = keyed else {
        return Ok(Answer::new(accept(None).await?));
    };
    let claim = IdempotencyClaim {
        account_id: account.id,
        key: &key,
        fingerprint: &fingerprint,
        run_id: &id,
        ttl: KEY_TTL,
        stale_after: STALE_AFTER,
    };
    match state.store.claim_idempotency_key(&claim).await? {
        IdempotencyStart::Claimed => {}
        IdempotencyStart::Replay(answer) => return Ok(Answer::replay(answer)),
        IdempotencyStart::Mismatch => return Err(ApiError::IdempotencyKeyReused.into()),
        IdempotencyStart::InProgress => return Err(ApiError::IdempotencyConflict.into()),
    }
    // Should this future be dropped before it finishes (the client went away), the key is
    // given back in the background; otherwise it is given back here, before answering, so a
    // client that corrects its request at once finds the key free.
    let mut held =
        Held { store: state.store.clone(), account_id: account.id, key: Some(key.clone()), run_id: id };
    match accept(Some(key)).await {
        Ok(body) => {
            held.key = None;
            Ok(Answer::new(body))
        }
        Err(e) => {
            held.release().await;
            Err(e.into())
        }
    }
}

/// The answer to a run request: a new run's handle, or the answer a key replays.
#[derive(Debug)]
pub(crate) struct Answer {
    pub status: StatusCode,
    pub body: serde_json::Value,
    /// Replayed under an idempotency key (`Idempotent-Replayed: true`).
    pub replayed: bool,
}

impl Answer {
    fn new(body: serde_json::Value) -> Self {
        Self { status: StatusCode::OK, body, replayed: false }
    }

    fn replay(answer: StoredAnswer) -> Self {
        let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
        Self { status, body: answer.body, replayed: true }
    }
}

impl IntoResponse for Answer {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(self.body)).into_response();
        if self.replayed {
            response.headers_mut().insert(REPLAYED_HEADER, HeaderValue::from_static("true"));
        }
        response
    }
}

/// A claimed key whose request has not finished; released when dropped unless answered.
struct Held {
    store: SharedStore,
    account_id: i64,
    /// `None` once answered or released.
    key: Option<String>,
    run_id: String,
}

impl Held {
    async fn release(&mut self) {
        if let Some(key) = self.key.take() {
            release(&self.store, self.account_id, &key, &self.run_id).await;
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let Some(key) = self.key.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let (store, account_id, run_id) =
            (self.store.clone(), self.account_id, std::mem::take(&mut self.run_id));
        runtime.spawn(async move { release(&store, account_id, &key, &run_id).await });
    }
}

/// Gives a key back (the store ignores a key that recorded an answer or was taken over). A
/// failure only delays the key's reuse until it is stale.
async fn release(store: &SharedStore, account_id: i64, key: &str, run_id: &str) {
    if let Err(e) = store.release_idempotency_key(account_id, key, run_id).await {
        tracing::warn!(error = %e, run_id, "could not give back an idempotency key; it is free again once stale");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use atelier_core::ErrorName;
    use serde_json::json;

    #[test]
    fn a_body_with_slices_has_the_fingerprint_of_the_body_as_sent() {
        let image = format!("data:image/png;base64,{}", "iVBORw0KGgo".repeat(300));
        let sent = json!({"type": "node", "target": "upscale", "input": {"image": image, "scale": 2}});
        let text = sent.to_string();
        let body = RunBody::parse(axum::body::Bytes::from(text)).unwrap().unwrap();
        assert!(body.fields["input"]["image"].as_str().unwrap().starts_with("atelier-body:"));
        assert_eq!(
            fingerprint_of("/api/v3/run", &body.fields, &body.slices),
            fingerprint("/api/v3/run", sent.as_object().unwrap())
        );
        let other =
            json!({"type": "node", "target": "upscale", "input": {"image": format!("{image}A"), "scale": 2}});
        assert_ne!(
            fingerprint_of("/api/v3/run", &body.fields, &body.slices),
            fingerprint("/api/v3/run", other.as_object().unwrap())
        );
    }

    fn headers(values: &[&[u8]]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for v in values {
            map.append(HEADER, HeaderValue::from_bytes(v).unwrap());
        }
        map
    }

    #[test]
    fn keys_are_one_to_255_visible_ascii_characters_sent_once() {
        assert_eq!(key(&HeaderMap::new()).unwrap(), None);
        assert_eq!(key(&headers(&[b"order-42/retry_1"])).unwrap().as_deref(), Some("order-42/retry_1"));
        assert!(key(&headers(&["k".repeat(255).as_bytes()])).unwrap().is_some());
        for bad in [&b""[..], "k".repeat(256).as_bytes(), b"two words", b"caf\xc3\xa9", b"tab\there"] {
            let e = key(&headers(&[bad])).unwrap_err();
            assert_eq!(
                (e.status(), e.name()),
                (StatusCode::BAD_REQUEST, ErrorName::InvalidRequest),
                "{bad:?}"
            );
        }
        assert!(key(&headers(&[b"a", b"a"])).is_err());
    }

    #[test]
    fn the_fingerprint_ignores_field_order_but_not_values_or_endpoints() {
        let a = json!({"type": "node", "input": {"image": "x", "scale": 2, "list": [1, {"b": 1, "a": 2}]}});
        let b = json!({"input": {"list": [1, {"a": 2, "b": 1}], "scale": 2, "image": "x"}, "type": "node"});
        let c = json!({"type": "node", "input": {"image": "x", "scale": 4, "list": [1, {"b": 1, "a": 2}]}});
        let fp = |endpoint, v: &Value| fingerprint(endpoint, v.as_object().unwrap());
        assert_eq!(fp("/api/v3/run", &a), fp("/api/v3/run", &b));
        assert_ne!(fp("/api/v3/run", &a), fp("/api/v3/run", &c));
        assert_ne!(fp("/api/v3/run", &a), fp("/api/v2/tryon/run", &a));
        assert_eq!(fp("/api/v3/run", &a).len(), 64);
    }
}
