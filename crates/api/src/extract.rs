//! Extractors: the caller's account, and JSON bodies with our error shape.

use atelier_core::RequestError;
use atelier_store::Account;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Map, Value};

use crate::body::RunBody;
use crate::error::ApiError;
use crate::state::AppState;

/// The account of the `X-API-KEY` header (or of the console's session, under
/// `/console/api/v3`), whose key holds the scope the route needs ([`crate::scopes`]).
/// Extracted first in every handler, so a request without a valid key gets 401, and one whose
/// key lacks the scope 403, before anything else.
pub struct Caller(pub Account);

/// The account the rate-limit middleware authenticated, handed to [`Caller`] in the
/// request's extensions so the key is looked up once.
#[derive(Clone)]
pub(crate) struct Authenticated(pub Account);

/// The `X-API-KEY` header, trimmed; `None` when absent, empty or too long to be a key.
pub(crate) fn api_key(headers: &HeaderMap) -> Option<&str> {
    let key = headers.get("x-api-key").and_then(|v| v.to_str().ok()).map(str::trim)?;
    (!key.is_empty() && key.len() <= 128).then_some(key)
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        // Before any key is looked at: a key in the URL is refused, never used.
        if let Some(name) = parts.uri.query().and_then(key_in_query) {
            return Err(RequestError::InvalidRequest(format!(
                "API keys are not accepted in the URL (query parameter '{name}'): send the key in the \
                 X-API-KEY header, and replace this one, since URLs end up in logs"
            ))
            .into());
        }
        let account = match parts.extensions.remove::<Authenticated>() {
            Some(Authenticated(account)) => account,
            None => {
                let key = api_key(&parts.headers).ok_or(ApiError::Unauthorized)?;
                state.keys.authenticate(&state.store, key).await?.ok_or(ApiError::Unauthorized)?
            }
        };
        crate::scopes::check(&parts.method, route(parts), account.scopes)?;
        Ok(Caller(account))
    }
}

/// The route the request matched, as routed (`/api/v3/status/{run_id}`).
pub(crate) fn route(parts: &Parts) -> &str {
    parts.extensions.get::<axum::extract::MatchedPath>().map_or("", axum::extract::MatchedPath::as_str)
}

/// The name of the first query parameter that carries an API key: one named
/// like a key (`api_key`, `apikey`, `api-key`, `key`, `x-api-key`,
/// `access_token`, `token`, `auth`, `authorization`, in any case, with `-`,
/// `_` or `.` anywhere, percent-encoded or not), or any parameter whose
/// value looks like an Atelier key (`atl_` + 40 characters). Truncated to 32
/// characters.
fn key_in_query(query: &str) -> Option<String> {
    const KEY_NAMES: [&str; 9] = [
        "apikey",
        "key",
        "xapikey",
        "accesstoken",
        "token",
        "apitoken",
        "authtoken",
        "auth",
        "authorization",
    ];
    query.split('&').find_map(|pair| {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let name = percent_decode(name);
        let normalized: String = name
            .chars()
            .filter(|c| !matches!(c, '-' | '_' | '.' | ' '))
            .flat_map(char::to_lowercase)
            .collect();
        let value = percent_decode(value);
        let value = value.trim();
        let looks_like_key =
            value.len() == 44 && value.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("atl_"));
        (KEY_NAMES.contains(&normalized.as_str()) || looks_like_key).then(|| name.chars().take(32).collect())
    })
}

/// `%XX` escapes and `+` (as a space) decoded; invalid escapes kept as they are.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b'+', _, _) => {
                out.push(b' ');
                i += 1;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A JSON object body. Not JSON, or not an object → 400 `InvalidRequest`;
/// over the size limit → 413.
pub struct JsonObject(pub Map<String, Value>);

impl FromRequest<AppState> for JsonObject {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let bytes = body_bytes(req, state).await?;
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(map)) => Ok(Self(map)),
            Ok(_) => Err(not_an_object()),
            Err(e) => Err(not_json(e)),
        }
    }
}

/// A v3 run body ([`RunBody`]): as [`JsonObject`], with the same errors, its long `input`
/// strings kept in the body's bytes instead of copied.
impl FromRequest<AppState> for RunBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let bytes = body_bytes(req, state).await?;
        RunBody::parse(bytes).map_err(not_json)?.ok_or_else(not_an_object)
    }
}

pub(crate) async fn body_bytes(req: Request, state: &AppState) -> Result<Bytes, ApiError> {
    Bytes::from_request(req, state).await.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::PayloadTooLarge { limit: state.config.max_body_bytes }
        } else {
            RequestError::InvalidRequest(format!("could not read the body: {rejection}")).into()
        }
    })
}

fn not_an_object() -> ApiError {
    RequestError::InvalidRequest("the body must be a JSON object".into()).into()
}

fn not_json(e: serde_json::Error) -> ApiError {
    RequestError::InvalidRequest(format!("the body is not valid JSON: {e}")).into()
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

/// A `{batch_id}` path segment: anything not shaped like a batch id is 404 `BatchNotFound`
/// without a lookup.
pub struct BatchId(pub String);

impl FromRequestParts<AppState> for BatchId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let axum::extract::Path(id) = axum::extract::Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|_| ApiError::BatchNotFound(String::new()))?;
        if atelier_core::ids::is_batch_id(&id) {
            Ok(Self(id))
        } else {
            Err(ApiError::BatchNotFound(id))
        }
    }
}

/// A `{name}` path segment naming a workflow, percent-decoded (so `%2F` is a
/// `/` inside the name, never a path step, and `+` is a plus), checked and
/// normalised by [`atelier_core::workflow::validate_workflow_name`]. A name
/// that could never be saved answers 422 `InvalidInput` (field `name`) without
/// a lookup. Handlers take it after [`Caller`], so 401 still comes first.
pub struct WorkflowName(pub String);

impl FromRequestParts<AppState> for WorkflowName {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let axum::extract::Path(raw) = axum::extract::Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|_| RequestError::invalid("name", "the name is not UTF-8 once percent-decoded"))?;
        Ok(Self(atelier_core::workflow::requested_workflow_name("name", &raw)?))
    }
}

#[cfg(test)]
mod tests {
    use super::key_in_query;

    #[test]
    fn keys_in_the_query_are_found_by_name_or_by_shape() {
        let key = format!("atl_{}", "a".repeat(40));
        for (query, name) in [
            ("api_key=x", "api_key"),
            ("limit=5&key=x", "key"),
            ("X-API-KEY=x", "X-API-KEY"),
            ("x_api_key", "x_api_key"),
            ("apiKey=", "apiKey"),
            ("api%5Fkey=x", "api_key"),
            ("Access_Token=x", "Access_Token"),
            ("token=x", "token"),
            ("authorization=Bearer+x", "authorization"),
            (&format!("k={key}"), "k"),
            (&format!("before=1&x={}", key.to_uppercase()), "x"),
        ] {
            assert_eq!(key_in_query(query).as_deref(), Some(name), "{query}");
        }
        for query in ["", "limit=5&before=1700000000000000", "keys=1", "monkey=1", "k=atl_short", "=", "&&"] {
            assert_eq!(key_in_query(query), None, "{query}");
        }
    }
}
