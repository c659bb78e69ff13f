//! The error vocabulary: the names of error answers ([`ErrorName`]) and of node errors
//! ([`NodeErrorName`]), each listed once, and the errors of a request found before anything
//! runs ([`RequestError`]).

use serde_json::Value;

use crate::status::string_enum;

string_enum! {
    /// The stable machine names of error answers (`error.name`): the interface documents
    /// every one, and the OpenAPI document, the clients and the handlers all read this list.
    pub enum ErrorName {
        InvalidRequest,
        MissingInputs,
        Unauthorized,
        InsufficientTokens,
        SpendLimitReached,
        UnknownTool,
        WorkflowNotFound,
        RunNotFound,
        UploadNotFound,
        BatchNotFound,
        DeliveryNotFound,
        PayloadTooLarge,
        InvalidInput,
        InvalidImage,
        ReadOnlyTemplate,
        IdempotencyConflict,
        IdempotencyKeyReused,
        RateLimited,
        ConcurrencyLimited,
        QueueFull,
        FileNotFound,
        OutputExpired,
        FileUrlInvalid,
        Deleted,
        SessionRequired,
        Forbidden,
        KeyNotFound,
        Conflict,
        InternalError,
    }
}

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
    pub fn name(&self) -> ErrorName {
        match self {
            Self::InvalidRequest(_) => ErrorName::InvalidRequest,
            Self::MissingInputs(_) => ErrorName::MissingInputs,
            Self::InvalidInput { .. } => ErrorName::InvalidInput,
            Self::UnknownTool(_) => ErrorName::UnknownTool,
            Self::WorkflowNotFound(_) => ErrorName::WorkflowNotFound,
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

/// Why a node (and so its run) failed, was skipped or was canceled: the `error` object of a
/// node, and of a run, in status answers. Produced by the store, the engine and the tools.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NodeError {
    pub name: NodeErrorName,
    pub message: String,
    /// On a run's error: the node whose failure ended it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

string_enum! {
/// The stable machine names of [`NodeError`]; the interface documents every one.
pub enum NodeErrorName {
    /// The run was canceled before the node finished.
    Canceled,
    /// The tool or the engine failed on this input.
    ToolFailed,
    /// An input image is not a readable image.
    InvalidImage,
    /// An input URL could not be fetched.
    InputFetchFailed,
    /// The engine is unreachable or overloaded.
    EngineUnavailable,
    /// The node ran past its time limit.
    Timeout,
    /// Not run: a node it depends on failed.
    UpstreamFailed,
    /// The worker running the node stopped responding (its lease expired).
    WorkerLost,
    /// The node was not started within its run's `start_within_secs` (not charged).
    NotStarted,
}
}

impl NodeError {
    pub fn new(name: NodeErrorName, message: impl Into<String>) -> Self {
        Self { name, message: message.into(), node: None }
    }

    /// What every unfinished node, and the run, carry when the run is canceled.
    pub fn canceled() -> Self {
        Self::new(NodeErrorName::Canceled, "the run was canceled")
    }

    /// What a node carries when it is skipped because `node` failed.
    pub fn upstream_failed(node: &str) -> Self {
        Self::new(NodeErrorName::UpstreamFailed, format!("not run: upstream node '{node}' failed"))
    }

    /// What an attempt whose lease expired carries.
    pub fn worker_lost() -> Self {
        Self::new(NodeErrorName::WorkerLost, "the worker running this node stopped responding")
    }

    /// A run's error when its node `node` failed with `cause`.
    pub fn run_failed(node: &str, cause: Option<&NodeError>) -> Self {
        let (name, message) = cause.map_or((NodeErrorName::ToolFailed, ""), |c| (c.name, c.message.as_str()));
        Self { name, message: format!("node '{node}' failed: {message}"), node: Some(node.to_string()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_errors_serialize_as_the_interface_shows_them() {
        let json = serde_json::to_string(&NodeError::canceled()).unwrap();
        assert_eq!(json, r#"{"name":"Canceled","message":"the run was canceled"}"#);
        let cause = NodeError::new(NodeErrorName::Timeout, "took too long");
        let run = serde_json::to_value(NodeError::run_failed("Up", Some(&cause))).unwrap();
        assert_eq!(
            run,
            serde_json::json!({"name": "Timeout", "message": "node 'Up' failed: took too long", "node": "Up"})
        );
        for &name in NodeErrorName::ALL {
            let text = serde_json::to_value(name).unwrap();
            assert_eq!(text, name.as_str());
            assert_eq!(serde_json::from_value::<NodeErrorName>(text).unwrap(), name);
        }
    }

    #[test]
    fn each_list_of_names_reads_back_what_it_writes() {
        assert_eq!(ErrorName::ALL.len(), ErrorName::NAMES.len());
        for (&name, &text) in ErrorName::ALL.iter().zip(ErrorName::NAMES) {
            assert_eq!((name.as_str(), name.to_string()), (text, text.to_string()));
            assert_eq!(text.parse::<ErrorName>(), Ok(name));
            assert_eq!(serde_json::to_value(name).unwrap(), text);
        }
        for (&name, &text) in NodeErrorName::ALL.iter().zip(NodeErrorName::NAMES) {
            assert_eq!(text.parse::<NodeErrorName>(), Ok(name));
        }
        assert_eq!("Teapot".parse::<ErrorName>(), Err("unknown ErrorName 'Teapot'".to_string()));
        assert_eq!(
            "toolfailed".parse::<NodeErrorName>(),
            Err("unknown NodeErrorName 'toolfailed'".to_string()),
            "names are exact"
        );
    }
}
