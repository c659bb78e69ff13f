//! The HTTP error shape, mapped once from each layer's errors.

use atelier_core::{ErrorName, RequestError};
use atelier_store::StoreError;
use atelier_wire::{ErrorBody, ErrorResponse};
use axum::http::header::{self, HeaderValue};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

/// Every error an endpoint can answer with.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error(transparent)]
    Request(#[from] RequestError),
    #[error("a valid X-API-KEY header is required")]
    Unauthorized,
    /// A console route without a live session (signed out, expired, or its key revoked).
    #[error("sign in to the console first: no session, or it ended")]
    SessionRequired,
    /// A console change without the session's CSRF token, or from another site.
    #[error("{0}")]
    Forbidden(String),
    /// Too many failed console sign-ins from one address.
    #[error("too many failed sign-ins from this address: retry after {retry_after} s")]
    SignInLimited { retry_after: u64 },
    #[error("API key {0} not found")]
    KeyNotFound(i64),
    #[error("{0}")]
    Conflict(String),
    #[error("run '{0}' not found")]
    RunNotFound(String),
    /// An upload this account did not make, or whose time is over; in a run, `field` is the
    /// image input that names it.
    #[error("{}upload '{id}' not found: this account never uploaded it, or its time is over", field.as_ref().map(|f| format!("{f}: ")).unwrap_or_default())]
    UploadNotFound { id: String, field: Option<String> },
    #[error("batch '{0}' not found")]
    BatchNotFound(String),
    #[error("the run has no webhook delivery '{0}'")]
    DeliveryNotFound(String),
    #[error("insufficient tokens: the price is {required}, the balance is {balance}")]
    InsufficientTokens { required: i64, balance: i64 },
    /// `required` more tokens would cross a key's or an account's spend limit for the day or
    /// the month.
    #[error("the {holder}'s {} spend limit of {limit} tokens would be crossed: {used} used, the price is {required}; it resets at {}", match period { atelier_core::spend::Period::Day => "daily", atelier_core::spend::Period::Month => "monthly" }, atelier_store::format_time(*resets_at))]
    SpendLimitReached {
        holder: atelier_core::spend::Holder,
        period: atelier_core::spend::Period,
        limit: i64,
        used: i64,
        required: i64,
        resets_at: atelier_store::Micros,
    },
    #[error("the request body is larger than {limit} bytes")]
    PayloadTooLarge { limit: usize },
    #[error("{field}: {reason}")]
    InvalidImage { field: String, reason: String },
    #[error("no such file")]
    FileNotFound,
    #[error("this output expired and is no longer available")]
    OutputExpired,
    /// A `/files` request without a valid signature, with signed output URLs.
    #[error("{0}")]
    FileUrlInvalid(atelier_core::file_urls::Refusal),
    /// A run (or an output of it) deleted on request; the message says which and when.
    #[error("{0}")]
    Deleted(String),
    #[error("system templates are read-only: '{0}' cannot be changed here")]
    ReadOnlyTemplate(String),
    #[error("a request with this Idempotency-Key is still being processed; retry it later")]
    IdempotencyConflict,
    #[error("this Idempotency-Key was used for a different request (another endpoint or body)")]
    IdempotencyKeyReused,
    #[error("too many requests with this API key: retry after {retry_after} s")]
    RateLimited { retry_after: u64 },
    #[error("the account has {limit} unfinished runs, its limit: retry once one has finished")]
    ConcurrencyLimited { limit: i64 },
    #[error("the {} has {limit} runs waiting to start, its limit: retry once they start", if *per_key { "API key" } else { "account" })]
    QueueFull { limit: i64, per_key: bool },
    /// Detail is logged, never shown.
    #[error("internal error")]
    Internal(String),
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::InsufficientTokens { required, balance } => {
                Self::InsufficientTokens { required, balance }
            }
            StoreError::SpendLimitReached { holder, period, limit, used, required, resets_at } => {
                Self::SpendLimitReached { holder, period, limit, used, required, resets_at }
            }
            StoreError::ConcurrencyLimited { limit } => Self::ConcurrencyLimited { limit },
            StoreError::QueueFull { limit, per_key } => Self::QueueFull { limit, per_key },
            StoreError::IdempotencyConflict => Self::IdempotencyConflict,
            StoreError::Deleted { id, at } => {
                Self::Deleted(format!("'{id}' was deleted on request at {}", atelier_store::format_time(at)))
            }
            StoreError::Conflict(reason) => Self::Conflict(reason),
            other => Self::Internal(other.to_string()),
        }
    }
}

/// `Retry-After` of 429 `ConcurrencyLimited`. When one of the account's runs will finish is
/// unknown; this is the upper end of the polling interval the interface recommends.
pub const CONCURRENCY_RETRY_AFTER_SECS: u64 = 5;

/// `Retry-After` of 429 `QueueFull`: when a queued run will start is unknown; a queue full
/// enough to refuse takes longer to move than one poll interval.
pub const QUEUE_RETRY_AFTER_SECS: u64 = 10;

impl ApiError {
    /// Maps a store error from looking up run `id`: `NotFound` is the
    /// caller's 404 `RunNotFound` (also for another account's run).
    pub fn run_lookup(id: &str) -> impl FnOnce(StoreError) -> ApiError + '_ {
        move |e| match e {
            StoreError::NotFound => ApiError::RunNotFound(id.to_string()),
            other => other.into(),
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Self::Request(r) => match r {
                RequestError::InvalidRequest(_) | RequestError::MissingInputs(_) => StatusCode::BAD_REQUEST,
                RequestError::InvalidInput { .. } => StatusCode::UNPROCESSABLE_ENTITY,
                RequestError::UnknownTool(_) | RequestError::WorkflowNotFound(_) => StatusCode::NOT_FOUND,
            },
            Self::Unauthorized | Self::SessionRequired => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::KeyNotFound(_) => StatusCode::NOT_FOUND,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::SignInLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::RunNotFound(_)
            | Self::BatchNotFound(_)
            | Self::DeliveryNotFound(_)
            | Self::FileNotFound
            | Self::UploadNotFound { .. } => StatusCode::NOT_FOUND,
            Self::InsufficientTokens { .. } | Self::SpendLimitReached { .. } => StatusCode::PAYMENT_REQUIRED,
            Self::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::InvalidImage { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            Self::OutputExpired | Self::Deleted(_) => StatusCode::GONE,
            Self::FileUrlInvalid(_) => StatusCode::FORBIDDEN,
            Self::ReadOnlyTemplate(_) | Self::IdempotencyConflict => StatusCode::CONFLICT,
            Self::IdempotencyKeyReused => StatusCode::UNPROCESSABLE_ENTITY,
            Self::RateLimited { .. } | Self::ConcurrencyLimited { .. } | Self::QueueFull { .. } => {
                StatusCode::TOO_MANY_REQUESTS
            }
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn name(&self) -> ErrorName {
        match self {
            Self::Request(r) => r.name(),
            Self::Unauthorized => ErrorName::Unauthorized,
            Self::SessionRequired => ErrorName::SessionRequired,
            Self::Forbidden(_) => ErrorName::Forbidden,
            Self::SignInLimited { .. } => ErrorName::RateLimited,
            Self::KeyNotFound(_) => ErrorName::KeyNotFound,
            Self::Conflict(_) => ErrorName::Conflict,
            Self::RunNotFound(_) => ErrorName::RunNotFound,
            Self::UploadNotFound { .. } => ErrorName::UploadNotFound,
            Self::BatchNotFound(_) => ErrorName::BatchNotFound,
            Self::DeliveryNotFound(_) => ErrorName::DeliveryNotFound,
            Self::InsufficientTokens { .. } => ErrorName::InsufficientTokens,
            Self::SpendLimitReached { .. } => ErrorName::SpendLimitReached,
            Self::PayloadTooLarge { .. } => ErrorName::PayloadTooLarge,
            Self::InvalidImage { .. } => ErrorName::InvalidImage,
            Self::FileNotFound => ErrorName::FileNotFound,
            Self::OutputExpired => ErrorName::OutputExpired,
            Self::FileUrlInvalid(_) => ErrorName::FileUrlInvalid,
            Self::Deleted(_) => ErrorName::Deleted,
            Self::ReadOnlyTemplate(_) => ErrorName::ReadOnlyTemplate,
            Self::IdempotencyConflict => ErrorName::IdempotencyConflict,
            Self::IdempotencyKeyReused => ErrorName::IdempotencyKeyReused,
            Self::RateLimited { .. } => ErrorName::RateLimited,
            Self::ConcurrencyLimited { .. } => ErrorName::ConcurrencyLimited,
            Self::QueueFull { .. } => ErrorName::QueueFull,
            Self::Internal(_) => ErrorName::InternalError,
        }
    }

    /// The error object: `{name, message, …the fields of its name}`.
    pub fn body(&self) -> ErrorBody {
        let mut body = ErrorBody::new(self.name().as_str(), self.to_string());
        match self {
            Self::Request(RequestError::MissingInputs(keys)) => {
                body.missing = Some(keys.clone());
            }
            Self::Request(RequestError::InvalidInput { field, reason, allowed }) => {
                body.field = Some(field.clone());
                body.reason = Some(reason.clone());
                body.allowed = allowed.clone();
            }
            Self::InvalidImage { field, reason } => {
                body.field = Some(field.clone());
                body.reason = Some(reason.clone());
            }
            Self::UploadNotFound { field, .. } => {
                body.field = field.clone();
            }
            Self::FileUrlInvalid(refusal) => {
                body.reason = Some(refusal.reason().to_string());
            }
            Self::InsufficientTokens { required, balance } => {
                body.required = Some(*required);
                body.balance = Some(*balance);
            }
            Self::SpendLimitReached { holder, period, limit, used, required, resets_at } => {
                body.applies_to = Some(holder.to_string());
                body.period = Some(period.to_string());
                body.limit = Some(*limit);
                body.used = Some(*used);
                body.required = Some(*required);
                body.resets_at = Some(atelier_store::format_time(*resets_at));
            }
            Self::RateLimited { retry_after } | Self::SignInLimited { retry_after } => {
                body.retry_after = Some(*retry_after);
            }
            Self::ConcurrencyLimited { limit } => {
                body.limit = Some(*limit);
                body.retry_after = Some(CONCURRENCY_RETRY_AFTER_SECS);
            }
            Self::QueueFull { limit, .. } => {
                body.limit = Some(*limit);
                body.retry_after = Some(QUEUE_RETRY_AFTER_SECS);
            }
            Self::Request(_)
            | Self::Unauthorized
            | Self::SessionRequired
            | Self::Forbidden(_)
            | Self::KeyNotFound(_)
            | Self::Conflict(_)
            | Self::RunNotFound(_)
            | Self::BatchNotFound(_)
            | Self::DeliveryNotFound(_)
            | Self::PayloadTooLarge { .. }
            | Self::FileNotFound
            | Self::OutputExpired
            | Self::Deleted(_)
            | Self::ReadOnlyTemplate(_)
            | Self::IdempotencyConflict
            | Self::IdempotencyKeyReused
            | Self::Internal(_) => {}
        }
        body
    }

    /// The `Retry-After` of a 429, in seconds.
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            Self::RateLimited { retry_after } | Self::SignInLimited { retry_after } => Some(*retry_after),
            Self::ConcurrencyLimited { .. } => Some(CONCURRENCY_RETRY_AFTER_SECS),
            Self::QueueFull { .. } => Some(QUEUE_RETRY_AFTER_SECS),
            Self::Request(_)
            | Self::Unauthorized
            | Self::SessionRequired
            | Self::Forbidden(_)
            | Self::KeyNotFound(_)
            | Self::Conflict(_)
            | Self::RunNotFound(_)
            | Self::BatchNotFound(_)
            | Self::DeliveryNotFound(_)
            | Self::UploadNotFound { .. }
            | Self::InsufficientTokens { .. }
            | Self::SpendLimitReached { .. }
            | Self::PayloadTooLarge { .. }
            | Self::InvalidImage { .. }
            | Self::FileNotFound
            | Self::OutputExpired
            | Self::FileUrlInvalid(_)
            | Self::Deleted(_)
            | Self::ReadOnlyTemplate(_)
            | Self::IdempotencyConflict
            | Self::IdempotencyKeyReused
            | Self::Internal(_) => None,
        }
    }

    /// The status, `Retry-After` where it applies, and `body` as JSON.
    fn respond(&self, body: ErrorResponse) -> Response {
        self.log();
        let mut response = (self.status(), Json(body)).into_response();
        if let Some(secs) = self.retry_after() {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }

    fn log(&self) {
        if let Self::Internal(detail) = self {
            tracing::error!(detail, "internal error");
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        self.respond(ErrorResponse { id: None, error: self.body() })
    }
}

/// An error from a run endpoint, answered in the run-handle shape
/// `{"id": null, "error": {…}}`.
#[derive(Debug)]
pub struct RunError(pub ApiError);

impl<E: Into<ApiError>> From<E> for RunError {
    fn from(e: E) -> Self {
        Self(e.into())
    }
}

impl IntoResponse for RunError {
    fn into_response(self) -> Response {
        self.0.respond(ErrorResponse { id: Some(()), error: self.0.body() })
    }
}
