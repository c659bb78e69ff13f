//! Extractors: the caller's account, and JSON bodies with our error shape.

use atelier_core::RequestError;
use atelier_store::Account;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::AppState;

/// The account of the `X-API-KEY` header. Extracted first in every
/// handler, so a request without a valid key gets 401 before anything else.
pub struct Caller(pub Account);

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let key = parts.headers.get("x-api-key").and_then(|v| v.to_str().ok()).map(str::trim).unwrap_or("");
        if key.is_empty() || key.len() > 128 {
            return Err(ApiError::Unauthorized);
        }
        match state.store.authenticate(key).await? {
            Some(account) => Ok(Caller(account)),
            None => Err(ApiError::Unauthorized),
        }
    }
}

/// A JSON object body. Not JSON, or not an object → 400 `InvalidRequest`;
/// over the size limit → 413.
pub struct JsonObject(pub Map<String, Value>);

impl FromRequest<AppState> for JsonObject {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::PayloadTooLarge { limit: state.config.max_body_bytes }
            } else {
                RequestError::InvalidRequest(format!("could not read the body: {rejection}")).into()
            }
        })?;
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(map)) => Ok(Self(map)),
            Ok(_) => Err(RequestError::InvalidRequest("the body must be a JSON object".into()).into()),
            Err(e) => Err(RequestError::InvalidRequest(format!("the body is not valid JSON: {e}")).into()),
        }
    }
}

/// A `{run_id}` path segment. Anything that is not shaped like a run id
/// cannot exist, so it is answered 404 `RunNotFound` without a lookup.
/// Handlers take it after [`Caller`], so 401 still comes first.
pub struct RunId(pub String);

impl FromRequestParts<AppState> for RunId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let axum::extract::Path(id) = axum::extract::Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|_| ApiError::RunNotFound(String::new()))?;
        if atelier_core::ids::is_run_id(&id) {
            Ok(Self(id))
        } else {
            Err(ApiError::RunNotFound(id))
        }
    }
}
