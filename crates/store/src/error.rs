//! What a store operation fails with.

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("insufficient tokens: {required} required, {balance} available")]
    InsufficientTokens { required: i64, balance: i64 },
    /// `required` more tokens would cross the `holder`'s (key's or account's) limit for the
    /// `period`, of which `used` is used; it resets at `resets_at`.
    #[error(
        "the {holder}'s {period} spend limit of {limit} tokens is reached: {used} used, {required} required"
    )]
    SpendLimitReached {
        holder: atelier_core::spend::Holder,
        period: atelier_core::spend::Period,
        limit: i64,
        used: i64,
        required: i64,
        resets_at: atelier_core::time::Micros,
    },
    /// The account already has `limit` unfinished runs (`StoreConfig::max_unfinished_runs`).
    #[error("too many unfinished runs: the limit is {limit}")]
    ConcurrencyLimited { limit: i64 },
    /// The account (or, with `per_key`, the key) already has `limit` runs waiting to start
    /// (`StoreConfig::max_queued_runs`, `max_queued_runs_per_key`).
    #[error("too many queued runs: the limit is {limit}")]
    QueueFull { limit: i64, per_key: bool },
    #[error("not found")]
    NotFound,
    /// A run deleted on request: its row remains, its content does not.
    #[error("'{id}' was deleted on request")]
    Deleted { id: String, at: atelier_core::time::Micros },
    #[error("{0}")]
    Conflict(String),
    /// The idempotency key is no longer held for this run (taken over, or expired): the run
    /// was not created.
    #[error("the idempotency key is held by another request")]
    IdempotencyConflict,
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// The queue is out of reach: a pull worker could not reach the API that holds it, or
    /// the API refused its token.
    #[error("the queue is unavailable: {0}")]
    Unavailable(String),
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;
