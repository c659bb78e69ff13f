//! Errors in a request, found before anything runs.

use serde_json::Value;

/// Why a request was refused. Each variant has a stable machine name
/// ([`RequestError::name`]); the HTTP layer maps variants to status codes.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RequestError {
    /// The body is not what the endpoint takes (not JSON, wrong field types, unknown `type`).
    #[error("{0}")]
    InvalidRequest(String),
    /// Mandatory inputs are absent; keys as the caller would write them.
    #[error("missing mandatory inputs: {}", .0.join(", "))]
    MissingInputs(Vec<String>),
    /// A value fails its schema, or a parameter name is unknown.
    #[error("{field}: {reason}")]
    InvalidInput {
        field: String,
        reason: String,
        /// The allowed values, for selects and unknown names.
        allowed: Option<Vec<Value>>,
    },
    #[error("unknown tool '{0}'")]
    UnknownTool(String),
    #[error("workflow '{0}' not found")]
    WorkflowNotFound(String),
}

impl RequestError {
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::InvalidInput { field: field.into(), reason: reason.into(), allowed: None }
    }

    /// The stable machine name of the error, as it appears in `error.name`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::InvalidRequest(_) => "InvalidRequest",
            Self::MissingInputs(_) => "MissingInputs",
            Self::InvalidInput { .. } => "InvalidInput",
            Self::UnknownTool(_) => "UnknownTool",
            Self::WorkflowNotFound(_) => "WorkflowNotFound",
        }
    }

    /// Prefixes the field name with a node name (`Node.param`).
    pub fn in_node(self, node: &str) -> Self {
        match self {
            Self::InvalidInput { field, reason, allowed } => {
                Self::InvalidInput { field: format!("{node}.{field}"), reason, allowed }
            }
            Self::MissingInputs(keys) => {
                Self::MissingInputs(keys.into_iter().map(|k| format!("{node}.{k}")).collect())
            }
            other => other,
        }
    }
}
