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

/// The stable machine names of [`NodeError`]; the interface documents every one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
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

impl NodeErrorName {
    pub const ALL: [Self; 9] = [
        Self::Canceled,
        Self::ToolFailed,
        Self::InvalidImage,
        Self::InputFetchFailed,
        Self::EngineUnavailable,
        Self::Timeout,
        Self::UpstreamFailed,
        Self::WorkerLost,
        Self::NotStarted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Canceled => "Canceled",
            Self::ToolFailed => "ToolFailed",
            Self::InvalidImage => "InvalidImage",
            Self::InputFetchFailed => "InputFetchFailed",
            Self::EngineUnavailable => "EngineUnavailable",
            Self::Timeout => "Timeout",
            Self::UpstreamFailed => "UpstreamFailed",
            Self::WorkerLost => "WorkerLost",
            Self::NotStarted => "NotStarted",
        }
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
        for name in NodeErrorName::ALL {
            let text = serde_json::to_value(name).unwrap();
            assert_eq!(text, name.as_str());
            assert_eq!(serde_json::from_value::<NodeErrorName>(text).unwrap(), name);
        }
    }
}
