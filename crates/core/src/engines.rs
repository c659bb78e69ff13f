//! Which engine runs each tool, as the interface shows it (`GET /api/v3/tools`, `/readyz`).
//! The engines themselves live in `atelier-tools` (built-in) and `atelier-engines` (model
//! servers); this is the vocabulary the API reads without knowing either.

use serde::{Deserialize, Serialize};

use crate::tools::{Fidelity, ToolId};

/// What runs a tool's nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// The built-in CPU engine.
    Builtin,
    /// A ComfyUI server (an API-format graph per tool).
    Comfyui,
    /// A Cog HTTP prediction server (one model).
    Cog,
    /// An ONNX model run in-process.
    Onnx,
}

impl EngineKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Builtin => "builtin",
            Self::Comfyui => "comfyui",
            Self::Cog => "cog",
            Self::Onnx => "onnx",
        }
    }
}

/// How one tool is served.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolRoute {
    pub kind: EngineKind,
    /// The configured endpoints (`[engines.NAME]`) that serve it; empty for `builtin`.
    pub endpoints: Vec<String>,
    /// `production` when routed to a model; the built-in engine's own fidelity otherwise.
    pub fidelity: Fidelity,
}

/// The health of one configured endpoint, as its last check found it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EndpointHealth {
    pub name: String,
    pub kind: EngineKind,
    pub healthy: bool,
    /// Why it is unhealthy (for the operator: `/readyz` is not behind an API key, so this
    /// never holds a secret, and names the endpoint rather than its address).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Nodes it is running now, and the most it runs at once.
    pub busy: usize,
    pub capacity: usize,
}

/// What the API asks of the engines.
pub trait EngineDirectory: Send + Sync {
    fn route(&self, tool: ToolId) -> ToolRoute;
    /// Every configured endpoint; empty when every tool runs on the built-in engine.
    fn health(&self) -> Vec<EndpointHealth>;
    /// Whether the tool's nodes wait for an engine now: it is routed to model servers and
    /// none of its endpoints is healthy (the `waiting_for: "engine"` extension of a queued
    /// node's status).
    fn waiting_for_engine(&self, tool: ToolId) -> bool {
        let route = self.route(tool);
        if route.endpoints.is_empty() {
            return false;
        }
        let health = self.health();
        !route.endpoints.iter().any(|name| health.iter().any(|h| &h.name == name && h.healthy))
    }
    /// A model server's callback for the job `id`, with the token its URL carried;
    /// `false` when no job of this process waits for it with that token.
    fn callback(&self, id: &str, token: &str, body: serde_json::Value) -> bool {
        let _ = (id, token, body);
        false
    }
}

/// Every tool on the built-in engine.
#[derive(Debug, Clone, Copy, Default)]
pub struct BuiltinOnly;

impl EngineDirectory for BuiltinOnly {
    fn route(&self, tool: ToolId) -> ToolRoute {
        ToolRoute { kind: EngineKind::Builtin, endpoints: Vec::new(), fidelity: tool.spec().fidelity }
    }

    fn health(&self) -> Vec<EndpointHealth> {
        Vec::new()
    }
}
