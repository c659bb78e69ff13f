//! The tools' executors: the function half of "tools are data plus one
//! function". Schemas live in `atelier-core`; this crate runs them.
//!
//! An [`Executor`] takes one [`Execution`] (a tool's parameters and input image bytes) and
//! returns the files it produced. The [`Registry`] maps each [`ToolId`] to an executor: the
//! built-in CPU engine by default (one file per tool under `builtin/`), replaceable per tool
//! (by a remote engine, or by stubs in tests). Scheduling, retries and storage are the
//! engine's business, not this crate's.

mod builtin;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use atelier_core::params::Params;
use atelier_core::tools::ToolId;
use atelier_core::NodeErrorName;
use bytes::Bytes;

pub use builtin::Builtin;

/// One execution of a tool (one element of a fan-out).
#[derive(Debug, Clone)]
pub struct Execution {
    pub tool: ToolId,
    /// Resolved parameters, image parameters included as given.
    pub params: Params,
    /// Image parameter → the bytes of that image.
    pub images: HashMap<String, Bytes>,
    /// Deterministic seed: the `seed` parameter, or one derived from the inputs.
    pub seed: u64,
    /// Index of this execution within a fan-out, 0 otherwise.
    pub index: u32,
}

/// A file a tool produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Artifact {
    pub bytes: Bytes,
    /// File extension without the dot: `png`, `jpg`, `webp`, `mp4`.
    pub ext: &'static str,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// An input is not a decodable image within the limits. Permanent.
    #[error("{0}")]
    InvalidImage(String),
    /// The tool could not produce a result from these inputs. Permanent.
    #[error("{0}")]
    Failed(String),
    /// The engine is unreachable or overloaded. Retryable.
    #[error("{0}")]
    Unavailable(String),
}

impl ToolError {
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Unavailable(_))
    }

    /// The node error name the status endpoint shows.
    pub fn name(&self) -> NodeErrorName {
        match self {
            Self::InvalidImage(_) => NodeErrorName::InvalidImage,
            Self::Failed(_) => NodeErrorName::ToolFailed,
            Self::Unavailable(_) => NodeErrorName::EngineUnavailable,
        }
    }
}

#[async_trait::async_trait]
pub trait Executor: Send + Sync {
    async fn run(&self, execution: Execution) -> Result<Vec<Artifact>, ToolError>;
}

/// Tool → executor.
#[derive(Clone)]
pub struct Registry {
    executors: HashMap<ToolId, Arc<dyn Executor>>,
}

impl Registry {
    /// Every tool on the built-in CPU engine.
    pub fn builtin(options: BuiltinOptions) -> Self {
        let engine: Arc<dyn Executor> = Arc::new(Builtin::new(options));
        Self { executors: ToolId::ALL.iter().map(|&t| (t, engine.clone())).collect() }
    }

    /// Routes one tool to another executor.
    pub fn set(&mut self, tool: ToolId, executor: Arc<dyn Executor>) {
        self.executors.insert(tool, executor);
    }

    pub fn get(&self, tool: ToolId) -> Option<Arc<dyn Executor>> {
        self.executors.get(&tool).cloned()
    }
}

impl std::fmt::Debug for BuiltinOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltinOptions")
            .field("simulated_latency", &self.simulated_latency)
            .field("noop", &self.noop)
            .field("limits", &self.limits)
            .field("subject", &self.subject.as_ref().map(|m| m.name().to_string()))
            .finish()
    }
}

/// Settings of the built-in engine.
#[derive(Clone, Default)]
pub struct BuiltinOptions {
    /// Added to every execution, to mimic a GPU engine's timing in client tests.
    pub simulated_latency: Duration,
    /// For benchmarking the scheduler only: every tool returns one 1x1 PNG per
    /// execution without reading its inputs (after `simulated_latency`).
    pub noop: bool,
    pub limits: atelier_imaging::Limits,
    /// The learned subject model that `background_removal`, `product_shoot`, `reframe`
    /// (crop and auto) and `fabric` fuse with the backdrop model; `None`: the backdrop model
    /// alone (fast, right on studio backdrops only).
    pub subject: Option<Arc<dyn atelier_imaging::SubjectModel>>,
}
