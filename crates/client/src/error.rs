//! Errors: one variant per error name the server sends, then the client's own.
//!
//! An error answer's body is `{"error": {"name", "message", …}}` (on run endpoints `{"id":
//! null, "error": {…}}`); [`Error::from_response`] reads it into the variant named by
//! `name`, with the fields that name carries. A name this version does not know is
//! [`Error::Other`]; an answer without an error object (a proxy's page, an empty 502) is
//! [`Error::UnexpectedStatus`].
//!
//! A run that fails is not an `Error`: it is a status with `overall_status` `failed` and an
//! `error` value ([`crate::models::RunError`]).

use std::path::PathBuf;

use reqwest::header::{HeaderMap, RETRY_AFTER};
use serde_json::Value;

pub use atelier_core::ErrorName;

use crate::models::{ErrorBody, ErrorResponse, RunStatus};

/// Every error name with a variant of its own: the OpenAPI `Error.name` enum
/// ([`ErrorName::NAMES`], the server's own list).
pub const ERROR_NAMES: &[&str] = ErrorName::NAMES;

/// What a call can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// 400: the body is not what the endpoint takes.
    #[error("InvalidRequest: {message}")]
    InvalidRequest {
        /// The server's message.
        message: String,
    },
    /// 400: mandatory inputs are absent. Nothing was created.
    #[error("MissingInputs: {message}")]
    MissingInputs {
        /// The server's message.
        message: String,
        /// The absent keys, as the caller would write them.
        missing: Vec<String>,
    },
    /// 401: no `X-API-KEY`, or an unknown or revoked key.
    #[error("Unauthorized: {message}")]
    Unauthorized {
        /// The server's message.
        message: String,
    },
    /// 402: the balance is lower than the run's price; nothing ran.
    #[error("InsufficientTokens: {message}")]
    InsufficientTokens {
        /// The server's message.
        message: String,
        /// The run's price.
        required: i64,
        /// The available balance.
        balance: i64,
    },
    /// 402: the price would cross a spend limit of the key or of its account; nothing ran.
    #[error("SpendLimitReached: {message}")]
    SpendLimitReached {
        /// The server's message.
        message: String,
        /// Whose limit: `key` or `account`.
        applies_to: String,
        /// `day` or `month` (UTC calendar periods).
        period: String,
        /// The limit, in tokens.
        limit: i64,
        /// Tokens reserved in the period so far.
        used: i64,
        /// The run's (or batch's) price.
        required: i64,
        /// When the period ends and its usage starts from zero (UTC, without an offset).
        resets_at: String,
    },
    /// 404: no tool of that name.
    #[error("UnknownTool: {message}")]
    UnknownTool {
        /// The server's message.
        message: String,
    },
    /// 404: no workflow of that name for this account, nor a system template.
    #[error("WorkflowNotFound: {message}")]
    WorkflowNotFound {
        /// The server's message.
        message: String,
    },
    /// 404: no run of that id for this account.
    #[error("RunNotFound: {message}")]
    RunNotFound {
        /// The server's message.
        message: String,
    },
    /// 404: no batch of that id for this account.
    #[error("BatchNotFound: {message}")]
    BatchNotFound {
        /// The server's message.
        message: String,
    },
    /// 404: the run has no webhook delivery of that id.
    #[error("DeliveryNotFound: {message}")]
    DeliveryNotFound {
        /// The server's message.
        message: String,
    },
    /// 404: no upload of that id for this account (never uploaded by it, or its time is
    /// over); in a run, `field` is the image input that names it.
    #[error("UploadNotFound: {message}")]
    UploadNotFound {
        /// The server's message.
        message: String,
        /// In a run: the input that names the upload.
        field: Option<String>,
    },
    /// 413: the request body is over the server's limit.
    #[error("PayloadTooLarge: {message}")]
    PayloadTooLarge {
        /// The server's message.
        message: String,
    },
    /// 422: a value fails its schema, or a parameter name is unknown.
    #[error("InvalidInput: {message}")]
    InvalidInput {
        /// The server's message.
        message: String,
        /// The value at fault (`scale`, `Shoot.product_image`, `webhook_url`, …).
        field: String,
        /// Why.
        reason: String,
        /// The allowed values (selects, unknown names).
        allowed: Option<Vec<Value>>,
    },
    /// 422: an image value is not an accepted image.
    #[error("InvalidImage: {message}")]
    InvalidImage {
        /// The server's message.
        message: String,
        /// The image parameter.
        field: String,
        /// Why.
        reason: String,
    },
    /// 409: system templates cannot be changed or deleted.
    #[error("ReadOnlyTemplate: {message}")]
    ReadOnlyTemplate {
        /// The server's message.
        message: String,
    },
    /// 409: a request with the same `Idempotency-Key` is still being processed.
    #[error("IdempotencyConflict: {message}")]
    IdempotencyConflict {
        /// The server's message.
        message: String,
    },
    /// 422: the `Idempotency-Key` was used for a different request.
    #[error("IdempotencyKeyReused: {message}")]
    IdempotencyKeyReused {
        /// The server's message.
        message: String,
    },
    /// 429: too many requests with this key.
    #[error("RateLimited: {message}")]
    RateLimited {
        /// The server's message.
        message: String,
        /// Seconds to wait (the body's `retry_after`, else the `Retry-After` header).
        retry_after: Option<u64>,
    },
    /// 429: the account, or the API key, has as many runs waiting to start as it may.
    #[error("QueueFull: {message}")]
    QueueFull {
        /// The server's message (it says whether the account's or the key's cap was hit).
        message: String,
        /// The account's or the key's cap on runs waiting to start.
        limit: Option<i64>,
        /// Seconds to wait.
        retry_after: Option<u64>,
    },
    /// 429: the account has as many unfinished runs as it may.
    #[error("ConcurrencyLimited: {message}")]
    ConcurrencyLimited {
        /// The server's message.
        message: String,
        /// The account's cap on unfinished runs.
        limit: Option<i64>,
        /// Seconds to wait.
        retry_after: Option<u64>,
    },
    /// 401 (console routes): no live console session.
    #[error("SessionRequired: {message}")]
    SessionRequired {
        /// The server's message.
        message: String,
    },
    /// 403: the API key does not hold the scope the operation needs (the message names it;
    /// nothing changed); on console routes also a change without the session's CSRF token.
    #[error("Forbidden: {message}")]
    Forbidden {
        /// The server's message.
        message: String,
    },
    /// 404 (console routes): no API key of that id.
    #[error("KeyNotFound: {message}")]
    KeyNotFound {
        /// The server's message.
        message: String,
    },
    /// 409: the change conflicts with the current state.
    #[error("Conflict: {message}")]
    Conflict {
        /// The server's message.
        message: String,
    },
    /// 404 (`/files/…`): no such output file.
    #[error("FileNotFound: {message}")]
    FileNotFound {
        /// The server's message.
        message: String,
    },
    /// 410 (`/files/…`): the output's retention period is over.
    #[error("OutputExpired: {message}")]
    OutputExpired {
        /// The server's message.
        message: String,
    },
    /// 403 (`/files/…`, signed output URLs): the URL is unsigned, expired or not signed by
    /// the service; `reason` is `unsigned`, `expired` or `signature`.
    #[error("FileUrlInvalid: {message}")]
    FileUrlInvalid {
        /// The server's message.
        message: String,
        /// `unsigned`, `expired` or `signature`.
        reason: String,
    },
    /// 410: the run (or an output of it) was deleted on request.
    #[error("Deleted: {message}")]
    Deleted {
        /// The server's message.
        message: String,
    },
    /// 500: the server failed (the message carries no internal detail).
    #[error("InternalError: {message}")]
    InternalError {
        /// The server's message.
        message: String,
    },
    /// An error answer with a name this client version does not know.
    #[error("{name} (HTTP {status}): {message}")]
    Other {
        /// The error's name.
        name: String,
        /// The HTTP status.
        status: u16,
        /// The server's message.
        message: String,
    },
    /// A non-2xx answer without an error object (a proxy's page, an empty 502, …).
    #[error("the server answered HTTP {status}{}", if body.is_empty() { String::new() } else { format!(": {body}") })]
    UnexpectedStatus {
        /// The HTTP status.
        status: u16,
        /// The start of the body, as text.
        body: String,
    },
    /// The request could not be sent, or the answer not read (connection, TLS, timeout).
    #[error("HTTP transport: {0}")]
    Transport(#[from] reqwest::Error),
    /// A call took longer than the client's timeout.
    #[error("no answer within {0:?}")]
    Timeout(std::time::Duration),
    /// A 2xx answer that is not the JSON the interface documents.
    #[error("decoding {what}: {source}")]
    Decode {
        /// Which answer.
        what: String,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },
    /// A file could not be written (downloads).
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The events stream could not be read to its end: the server does not offer it, or it
    /// kept dropping. [`crate::Client::wait`] falls back to polling on it.
    #[error("events stream: {0}")]
    EventStream(String),
    /// [`crate::Client::wait`] gave up before the run ended.
    #[error("run {run_id} did not finish in time")]
    WaitTimeout {
        /// The run waited for.
        run_id: String,
        /// The last status seen, if any.
        last: Option<Box<RunStatus>>,
    },
    /// The client is not configured: a missing variable, a base URL that does not parse.
    #[error("configuration: {0}")]
    Config(String),
    /// An argument the interface does not take (an input that is not an object, a wait out
    /// of range, …); nothing was sent.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

impl Error {
    /// The error for a non-2xx answer: `status`, its headers and its body.
    pub fn from_response(status: u16, headers: &HeaderMap, body: &[u8]) -> Self {
        let parsed = serde_json::from_slice::<ErrorResponse>(body).ok().map(|r| r.error);
        match parsed {
            Some(error) if !error.name.is_empty() => {
                let header_retry = headers
                    .get(RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok());
                Self::from_body(status, error, header_retry)
            }
            _ => {
                let text = String::from_utf8_lossy(body);
                let text = text.trim();
                let end = text.char_indices().nth(500).map_or(text.len(), |(i, _)| i);
                Self::UnexpectedStatus { status, body: text[..end].to_string() }
            }
        }
    }

    /// The typed error for an error object (`status` is kept for unknown names only).
    pub fn from_body(status: u16, body: ErrorBody, retry_after_header: Option<u64>) -> Self {
        let ErrorBody {
            name,
            message,
            missing,
            field,
            reason,
            allowed,
            required,
            balance,
            retry_after,
            limit,
            applies_to,
            period,
            used,
            resets_at,
        } = body;
        let retry_after = retry_after.or(retry_after_header);
        let Ok(known) = name.parse::<ErrorName>() else { return Self::Other { name, status, message } };
        match known {
            ErrorName::InvalidRequest => Self::InvalidRequest { message },
            ErrorName::MissingInputs => Self::MissingInputs { message, missing: missing.unwrap_or_default() },
            ErrorName::Unauthorized => Self::Unauthorized { message },
            ErrorName::InsufficientTokens => Self::InsufficientTokens {
                message,
                required: required.unwrap_or_default(),
                balance: balance.unwrap_or_default(),
            },
            ErrorName::SpendLimitReached => Self::SpendLimitReached {
                message,
                applies_to: applies_to.unwrap_or_default(),
                period: period.unwrap_or_default(),
                limit: limit.unwrap_or_default(),
                used: used.unwrap_or_default(),
                required: required.unwrap_or_default(),
                resets_at: resets_at.unwrap_or_default(),
            },
            ErrorName::UnknownTool => Self::UnknownTool { message },
            ErrorName::WorkflowNotFound => Self::WorkflowNotFound { message },
            ErrorName::RunNotFound => Self::RunNotFound { message },
            ErrorName::UploadNotFound => Self::UploadNotFound { message, field },
            ErrorName::BatchNotFound => Self::BatchNotFound { message },
            ErrorName::DeliveryNotFound => Self::DeliveryNotFound { message },
            ErrorName::PayloadTooLarge => Self::PayloadTooLarge { message },
            ErrorName::InvalidInput => Self::InvalidInput {
                message,
                field: field.unwrap_or_default(),
                reason: reason.unwrap_or_default(),
                allowed,
            },
            ErrorName::InvalidImage => Self::InvalidImage {
                message,
                field: field.unwrap_or_default(),
                reason: reason.unwrap_or_default(),
            },
            ErrorName::ReadOnlyTemplate => Self::ReadOnlyTemplate { message },
            ErrorName::IdempotencyConflict => Self::IdempotencyConflict { message },
            ErrorName::IdempotencyKeyReused => Self::IdempotencyKeyReused { message },
            ErrorName::RateLimited => Self::RateLimited { message, retry_after },
            ErrorName::ConcurrencyLimited => Self::ConcurrencyLimited { message, limit, retry_after },
            ErrorName::QueueFull => Self::QueueFull { message, limit, retry_after },
            ErrorName::SessionRequired => Self::SessionRequired { message },
            ErrorName::Forbidden => Self::Forbidden { message },
            ErrorName::KeyNotFound => Self::KeyNotFound { message },
            ErrorName::Conflict => Self::Conflict { message },
            ErrorName::FileNotFound => Self::FileNotFound { message },
            ErrorName::OutputExpired => Self::OutputExpired { message },
            ErrorName::FileUrlInvalid => Self::FileUrlInvalid { message, reason: reason.unwrap_or_default() },
            ErrorName::Deleted => Self::Deleted { message },
            ErrorName::InternalError => Self::InternalError { message },
        }
    }

    /// The server's error name, for errors the server answered with.
    pub fn name(&self) -> Option<&str> {
        match self {
            Self::Other { name, .. } => Some(name),
            _ => self.error_name().map(ErrorName::as_str),
        }
    }

    /// The error name, for errors with a variant of their own.
    pub fn error_name(&self) -> Option<ErrorName> {
        Some(match self {
            Self::InvalidRequest { .. } => ErrorName::InvalidRequest,
            Self::MissingInputs { .. } => ErrorName::MissingInputs,
            Self::Unauthorized { .. } => ErrorName::Unauthorized,
            Self::InsufficientTokens { .. } => ErrorName::InsufficientTokens,
            Self::SpendLimitReached { .. } => ErrorName::SpendLimitReached,
            Self::UnknownTool { .. } => ErrorName::UnknownTool,
            Self::WorkflowNotFound { .. } => ErrorName::WorkflowNotFound,
            Self::RunNotFound { .. } => ErrorName::RunNotFound,
            Self::UploadNotFound { .. } => ErrorName::UploadNotFound,
            Self::BatchNotFound { .. } => ErrorName::BatchNotFound,
            Self::DeliveryNotFound { .. } => ErrorName::DeliveryNotFound,
            Self::PayloadTooLarge { .. } => ErrorName::PayloadTooLarge,
            Self::InvalidInput { .. } => ErrorName::InvalidInput,
            Self::InvalidImage { .. } => ErrorName::InvalidImage,
            Self::ReadOnlyTemplate { .. } => ErrorName::ReadOnlyTemplate,
            Self::IdempotencyConflict { .. } => ErrorName::IdempotencyConflict,
            Self::IdempotencyKeyReused { .. } => ErrorName::IdempotencyKeyReused,
            Self::RateLimited { .. } => ErrorName::RateLimited,
            Self::ConcurrencyLimited { .. } => ErrorName::ConcurrencyLimited,
            Self::QueueFull { .. } => ErrorName::QueueFull,
            Self::SessionRequired { .. } => ErrorName::SessionRequired,
            Self::Forbidden { .. } => ErrorName::Forbidden,
            Self::KeyNotFound { .. } => ErrorName::KeyNotFound,
            Self::Conflict { .. } => ErrorName::Conflict,
            Self::FileNotFound { .. } => ErrorName::FileNotFound,
            Self::OutputExpired { .. } => ErrorName::OutputExpired,
            Self::FileUrlInvalid { .. } => ErrorName::FileUrlInvalid,
            Self::Deleted { .. } => ErrorName::Deleted,
            Self::InternalError { .. } => ErrorName::InternalError,
            Self::Other { .. }
            | Self::UnexpectedStatus { .. }
            | Self::Transport(_)
            | Self::Timeout(_)
            | Self::Decode { .. }
            | Self::Io { .. }
            | Self::EventStream(_)
            | Self::WaitTimeout { .. }
            | Self::Config(_)
            | Self::InvalidArgument(_) => return None,
        })
    }

    /// The server's message, for errors the server answered with.
    pub fn server_message(&self) -> Option<&str> {
        match self {
            Self::InvalidRequest { message }
            | Self::MissingInputs { message, .. }
            | Self::Unauthorized { message }
            | Self::InsufficientTokens { message, .. }
            | Self::SpendLimitReached { message, .. }
            | Self::UnknownTool { message }
            | Self::WorkflowNotFound { message }
            | Self::RunNotFound { message }
            | Self::UploadNotFound { message, .. }
            | Self::BatchNotFound { message }
            | Self::DeliveryNotFound { message }
            | Self::PayloadTooLarge { message }
            | Self::InvalidInput { message, .. }
            | Self::InvalidImage { message, .. }
            | Self::ReadOnlyTemplate { message }
            | Self::IdempotencyConflict { message }
            | Self::IdempotencyKeyReused { message }
            | Self::RateLimited { message, .. }
            | Self::ConcurrencyLimited { message, .. }
            | Self::QueueFull { message, .. }
            | Self::SessionRequired { message }
            | Self::Forbidden { message }
            | Self::KeyNotFound { message }
            | Self::Conflict { message }
            | Self::FileNotFound { message }
            | Self::OutputExpired { message }
            | Self::FileUrlInvalid { message, .. }
            | Self::Deleted { message }
            | Self::InternalError { message }
            | Self::Other { message, .. } => Some(message),
            Self::UnexpectedStatus { .. }
            | Self::Transport(_)
            | Self::Timeout(_)
            | Self::Decode { .. }
            | Self::Io { .. }
            | Self::EventStream(_)
            | Self::WaitTimeout { .. }
            | Self::Config(_)
            | Self::InvalidArgument(_) => None,
        }
    }

    /// The HTTP status of an error answer: the one the server documents for the name, or the
    /// one received for unknown names and unexpected answers.
    pub fn status(&self) -> Option<u16> {
        Some(match self {
            Self::InvalidRequest { .. } | Self::MissingInputs { .. } => 400,
            Self::Unauthorized { .. } | Self::SessionRequired { .. } => 401,
            Self::InsufficientTokens { .. } | Self::SpendLimitReached { .. } => 402,
            Self::Forbidden { .. } | Self::FileUrlInvalid { .. } => 403,
            Self::UnknownTool { .. }
            | Self::WorkflowNotFound { .. }
            | Self::RunNotFound { .. }
            | Self::UploadNotFound { .. }
            | Self::BatchNotFound { .. }
            | Self::DeliveryNotFound { .. }
            | Self::KeyNotFound { .. }
            | Self::FileNotFound { .. } => 404,
            Self::ReadOnlyTemplate { .. } | Self::IdempotencyConflict { .. } | Self::Conflict { .. } => 409,
            Self::OutputExpired { .. } | Self::Deleted { .. } => 410,
            Self::PayloadTooLarge { .. } => 413,
            Self::InvalidInput { .. } | Self::InvalidImage { .. } | Self::IdempotencyKeyReused { .. } => 422,
            Self::RateLimited { .. } | Self::ConcurrencyLimited { .. } | Self::QueueFull { .. } => 429,
            Self::InternalError { .. } => 500,
            Self::Other { status, .. } | Self::UnexpectedStatus { status, .. } => *status,
            Self::Transport(e) => return e.status().map(|s| s.as_u16()),
            Self::Timeout(_)
            | Self::Decode { .. }
            | Self::Io { .. }
            | Self::EventStream(_)
            | Self::WaitTimeout { .. }
            | Self::Config(_)
            | Self::InvalidArgument(_) => return None,
        })
    }

    /// Seconds to wait before trying again (429 answers).
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            Self::RateLimited { retry_after, .. }
            | Self::ConcurrencyLimited { retry_after, .. }
            | Self::QueueFull { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// Whether the server refused the request (an error answer, as opposed to a failure to
    /// reach it or to read its answer).
    pub fn is_refusal(&self) -> bool {
        self.name().is_some() || matches!(self, Self::UnexpectedStatus { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;
    use serde_json::json;

    fn map(status: u16, body: Value) -> Error {
        Error::from_response(status, &HeaderMap::new(), body.to_string().as_bytes())
    }

    #[test]
    fn error_objects_map_to_their_named_variants_with_their_fields() {
        let e = map(
            402,
            json!({"id": null, "error": {"name": "InsufficientTokens", "message": "insufficient tokens: the run costs 5, the balance is 3", "required": 5, "balance": 3}}),
        );
        assert!(matches!(e, Error::InsufficientTokens { required: 5, balance: 3, .. }), "{e:?}");
        let spend = map(
            402,
            json!({"id": null, "error": {"name": "SpendLimitReached", "message": "m", "applies_to": "key",
                   "period": "day", "limit": 100, "used": 98, "required": 5, "resets_at": "2026-11-30T00:00:00.000000"}}),
        );
        match &spend {
            Error::SpendLimitReached {
                applies_to,
                period,
                limit: 100,
                used: 98,
                required: 5,
                resets_at,
                ..
            } => {
                assert_eq!((applies_to.as_str(), period.as_str()), ("key", "day"));
                assert_eq!(resets_at, "2026-11-30T00:00:00.000000");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!((spend.name(), spend.status()), (Some("SpendLimitReached"), Some(402)));
        assert_eq!((e.name(), e.status()), (Some("InsufficientTokens"), Some(402)));
        assert_eq!(
            e.to_string(),
            "InsufficientTokens: insufficient tokens: the run costs 5, the balance is 3"
        );

        let e = map(
            422,
            json!({"error": {"name": "InvalidInput", "message": "scale: must be one of 2, 4", "field": "scale", "reason": "must be one of 2, 4", "allowed": [2, 4]}}),
        );
        match &e {
            Error::InvalidInput { field, reason, allowed, .. } => {
                assert_eq!((field.as_str(), reason.as_str()), ("scale", "must be one of 2, 4"));
                assert_eq!(allowed.as_deref(), Some(&[json!(2), json!(4)][..]));
            }
            other => panic!("{other:?}"),
        }
        let e = map(
            400,
            json!({"id": null, "error": {"name": "MissingInputs", "message": "missing", "missing": ["image"]}}),
        );
        assert!(matches!(&e, Error::MissingInputs { missing, .. } if missing == &["image"]), "{e:?}");
        assert_eq!(e.server_message(), Some("missing"));
        let e = map(
            422,
            json!({"error": {"name": "InvalidImage", "message": "image: no", "field": "image", "reason": "no"}}),
        );
        assert!(matches!(&e, Error::InvalidImage { field, .. } if field == "image"), "{e:?}");
    }

    #[test]
    fn every_name_has_its_variant_and_the_variant_says_its_name() {
        for &name in ERROR_NAMES {
            let e = map(418, json!({"error": {"name": name, "message": "m"}}));
            assert_eq!(e.name(), Some(name));
            assert!(!matches!(e, Error::Other { .. }), "{name} has a variant of its own");
            assert_ne!(e.status(), Some(418), "{name}: the documented status");
        }
    }

    #[test]
    fn retry_after_comes_from_the_body_else_the_header() {
        let e = map(429, json!({"error": {"name": "RateLimited", "message": "slow down", "retry_after": 7}}));
        assert_eq!(e.retry_after(), Some(7));
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_static("5"));
        let body = json!({"id": null, "error": {"name": "ConcurrencyLimited", "message": "m", "limit": 3}});
        let e = Error::from_response(429, &headers, body.to_string().as_bytes());
        assert!(matches!(e, Error::ConcurrencyLimited { limit: Some(3), retry_after: Some(5), .. }), "{e:?}");
        let body = json!({"id": null, "error": {"name": "QueueFull", "message": "m", "limit": 50, "retry_after": 10}});
        let e = Error::from_response(429, &HeaderMap::new(), body.to_string().as_bytes());
        assert!(matches!(e, Error::QueueFull { limit: Some(50), retry_after: Some(10), .. }), "{e:?}");
        assert_eq!((e.name(), e.status(), e.retry_after()), (Some("QueueFull"), Some(429), Some(10)));
    }

    #[test]
    fn unknown_names_and_bodies_without_an_error_object_are_kept_as_they_came() {
        let e = map(418, json!({"error": {"name": "Teapot", "message": "short and stout"}}));
        assert!(
            matches!(&e, Error::Other { name, status: 418, message } if name == "Teapot" && message == "short and stout")
        );
        assert_eq!(e.name(), Some("Teapot"));
        let e = Error::from_response(502, &HeaderMap::new(), b"<html>Bad gateway</html>");
        assert!(
            matches!(&e, Error::UnexpectedStatus { status: 502, body } if body == "<html>Bad gateway</html>")
        );
        assert_eq!((e.name(), e.status(), e.is_refusal()), (None, Some(502), true));
        let e = Error::from_response(500, &HeaderMap::new(), b"");
        assert_eq!(e.to_string(), "the server answered HTTP 500");
        let e = map(400, json!({"error": "a string, not an object"}));
        assert!(matches!(e, Error::UnexpectedStatus { status: 400, .. }));
    }
}
