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
    /// InsufficientTokens: the run's price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<i64>,
    /// InsufficientTokens: the available balance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub balance: Option<i64>,
    /// The account's cap on unfinished runs (ConcurrencyLimited), or the account's or the API
    /// key's cap on runs waiting to start (QueueFull).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
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
