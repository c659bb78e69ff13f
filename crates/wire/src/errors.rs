//! The body of an error answer.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The error object of an error answer: a stable machine name, a message, and the fields
/// that name's errors carry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "Error")]
pub struct ErrorBody {
    /// The stable machine name (`InsufficientTokens`, `RunNotFound`, …).
    #[schemars(schema_with = "crate::names::error_name")]
    pub name: String,
    /// What went wrong, in words.
    #[serde(default)]
    pub message: String,
    /// MissingInputs: the absent keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<Vec<String>>,
    /// InvalidInput and InvalidImage: the value at fault; UploadNotFound in a run: the image
    /// input that names the upload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// InvalidInput and InvalidImage: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// InvalidInput: the allowed values of a select, or the known names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<Vec<Value>>,
    /// InsufficientTokens and SpendLimitReached: the run's (or batch's) price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<i64>,
    /// InsufficientTokens: the available balance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub balance: Option<i64>,
    /// The account's cap on unfinished runs (ConcurrencyLimited), the account's or the API
    /// key's cap on runs waiting to start (QueueFull), or the spend limit the price would
    /// cross, in tokens (SpendLimitReached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    /// SpendLimitReached: whose limit, `key` (the API key's own) or `account` (all keys of
    /// the account together).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::names::spend_holder")]
    pub applies_to: Option<String>,
    /// SpendLimitReached: the limit's period, `day` or `month` (UTC calendar periods).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::names::spend_period")]
    pub period: Option<String>,
    /// SpendLimitReached: tokens reserved in the current period so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used: Option<i64>,
    /// SpendLimitReached: when the period ends and its usage starts again from zero (UTC,
    /// `YYYY-MM-DDTHH:MM:SS.ffffff`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resets_at: Option<String>,
    /// Seconds to wait (429).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
}

impl ErrorBody {
    /// An error with only a name and a message.
    pub fn new(name: impl Into<String>, message: impl Into<String>) -> Self {
        Self { name: name.into(), message: message.into(), ..Self::default() }
    }
}

/// The body of an error answer: `{"error": {…}}`; on run endpoints `{"id": null, "error":
/// {…}}`, the run-handle shape.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorResponse {
    /// Run endpoints: null.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<()>,
    /// The error.
    #[serde(default)]
    pub error: ErrorBody,
}
