//! The tools' executors: the function half of "tools are data plus one
//! function". Schemas live in `atelier-core`; this crate runs them.
//!
//! An [`Executor`] takes one [`Execution`] (a tool's parameters and input image bytes) and
//! returns the files it produced. The [`Registry`] maps each [`ToolId`] to an executor: the
//! built-in CPU engine by default (one file per tool under `builtin/`), replaceable per tool
//! (by a remote engine, or by stubs in tests). Scheduling, retries and storage are the
//! engine's business, not this crate's.
//!
//! ## What is where
//!
//! The executors: the `Executor` trait, which runs one `Execution` (a tool's parameters, its
//! input images' bytes, seed and fan-out index) and returns the files it produced, and reports
//! its `Capacity` (a model server's usable slots, or since when it has none); `ToolError`
//! (`Lost`: the engine lost the work before it answered, not an attempt); the `Registry`, which
//! maps each `ToolId` to an executor (the built-in engine by default, replaceable per tool);
//! the built-in CPU engine for all twelve tools, on the blocking pool, one file per tool under
//! `builtin/` (the three try-ons share `tryon.rs`).
//!
//! Not here: schemas (in `core`), scheduling, storage.

mod builtin;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use atelier_core::params::Params;
use atelier_core::tools::ToolId;
use atelier_core::NodeErrorName;
use bytes::Bytes;
pub use tokio_util::sync::CancellationToken;

pub use builtin::Builtin;

/// One execution of a tool (one element of a fan-out).
#[derive(Debug, Clone)]
pub struct Execution {
    /// Who is running it, for how long, and how to report progress; remote engines use it.
    pub context: Context,
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

/// What an executor knows of the attempt it runs in, beyond the tool's inputs.
///
/// `attempt_key` names the attempt on a model server: it is the same when a restarted
/// service resumes an attempt that was running (so a remote engine re-attaches to the job
/// instead of running it twice) and different for each retry after a failure. `cancel` fires
/// when the run is canceled or the node times out; an executor that started remote work
/// stops it then. A node whose lease passes to another worker, or a graceful shutdown, drops
/// the executor's future without firing it: the remote job keeps running for whoever
/// resumes the attempt.
#[derive(Debug, Clone, Default)]
pub struct Context {
    pub attempt_key: String,
    /// When the node's time runs out.
    pub deadline: Option<tokio::time::Instant>,
    pub progress: Progress,
    pub cancel: CancellationToken,
}

/// Where an executor reports how far it got (0 to 1). Cheap to call often: the engine keeps
/// the latest value and writes it at most a few times a second.
#[derive(Clone, Default)]
pub struct Progress(Option<Arc<dyn Fn(f32) + Send + Sync>>);

impl Progress {
    pub fn new(report: impl Fn(f32) + Send + Sync + 'static) -> Self {
        Self(Some(Arc::new(report)))
    }

    /// Reports a fraction, clamped to 0..=1; NaN is ignored.
    pub fn report(&self, fraction: f32) {
        if let (Some(report), false) = (&self.0, fraction.is_nan()) {
            report(fraction.clamp(0.0, 1.0));
        }
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Progress(reported)" } else { "Progress(ignored)" })
    }
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
    /// The engine answered that the job could not be done now (it ran out of memory twice,
    /// was interrupted by someone else). Retryable, and counts as an attempt.
    #[error("{0}")]
    Unavailable(String),
    /// The engine could not be reached, or went away before it answered how the job ended (a
    /// refused or reset connection, a 5xx, a server that restarted and forgot the job). The
    /// work is not the job's fault: the node goes back to the queue without counting an
    /// attempt and runs again, under the same attempt key, once its tool has a healthy
    /// endpoint.
    #[error("{0}")]
    Lost(String),
}

impl ToolError {
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Unavailable(_) | Self::Lost(_))
    }

    /// The node error name the status endpoint shows.
    pub fn name(&self) -> NodeErrorName {
        match self {
            Self::InvalidImage(_) => NodeErrorName::InvalidImage,
            Self::Failed(_) => NodeErrorName::ToolFailed,
            Self::Unavailable(_) | Self::Lost(_) => NodeErrorName::EngineUnavailable,
        }
    }
}

#[async_trait::async_trait]
pub trait Executor: Send + Sync {
    async fn run(&self, execution: Execution) -> Result<Vec<Artifact>, ToolError>;

    /// Whether the executor re-attaches to the work of an attempt by its
    /// [`Context::attempt_key`] (a remote model server keeps running a job the service lost
    /// track of). The engine reads the node's attempt history to make the key only for
    /// these.
    fn resumable(&self) -> bool {
        false
    }

    /// What kind of engine this is, as metrics label it (`builtin`, `cog`, `comfyui`, `onnx`).
    fn engine(&self) -> &'static str {
        "builtin"
    }

    /// What makes this executor's outputs what they are, when they are the same for the same
    /// tool, parameters, seed and input images: the result cache keys nodes by it, so a change
    /// of it (a new version, another model or template) never reuses an older output. `None`
    /// (the default): the outputs may differ run to run, and nodes are never cached.
    fn cache_identity(&self) -> Option<String> {
        None
    }

    /// What makes `tool`'s outputs, as their Content Credentials name it: a model or template
    /// and its hash for a model server, the built-in engine and its version otherwise.
    fn maker(&self, _tool: ToolId) -> Maker {
        Maker { model: BUILTIN_MAKER.to_string(), trained: false }
    }

    /// How many of the tool's nodes this executor can run at once now. The dispatcher claims
    /// a tool's nodes only while it has room, so that a node never holds a worker slot while
    /// it waits for a model server.
    fn capacity(&self) -> Capacity {
        Capacity::Unbounded
    }
}

/// What an executor can take now ([`Executor::capacity`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Capacity {
    /// No bound of its own (in-process executors): the worker's slots bound it.
    Unbounded,
    /// At most `total` nodes at once (the slots of the endpoints that are usable now), of
    /// which `free` are not taken now (endpoints shared with other tools count their nodes).
    Slots { total: usize, free: usize },
    /// No endpoint is usable: the tool's nodes wait in the queue.
    Down {
        /// Since when no endpoint has been usable.
        since: std::time::Instant,
        /// How long a node may wait for one before it fails with `EngineUnavailable`.
        wait: Duration,
        /// Why, per endpoint: `gpu1: unreachable; gpu2: answered 503`.
        why: String,
    },
}

impl Capacity {
    /// Whether a node could start now (without counting the nodes claimed and not started).
    pub fn has_room(&self) -> bool {
        match self {
            Self::Unbounded => true,
            Self::Slots { free, .. } => *free > 0,
            Self::Down { .. } => false,
        }
    }

    /// The most nodes at once; `None` when unbounded.
    pub fn limit(&self) -> Option<usize> {
        match self {
            Self::Unbounded => None,
            Self::Slots { total, .. } => Some(*total),
            Self::Down { .. } => Some(0),
        }
    }
}

/// The built-in engine, as [`Maker::model`] names it.
pub const BUILTIN_MAKER: &str = concat!("atelier built-in ", env!("CARGO_PKG_VERSION"));

/// What makes a tool's outputs ([`Executor::maker`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Maker {
    /// The model, template or engine.
    pub model: String,
    /// Whether a trained model takes part (every model server does; the built-in engine does
    /// where a tool uses its learned subject model).
    pub trained: bool,
}

/// Tool → executor.
#[derive(Clone)]
pub struct Registry {
    executors: HashMap<ToolId, Arc<dyn Executor>>,
    /// Notified when an executor's [`Capacity`] may have grown (an endpoint became usable).
    capacity_changed: Arc<tokio::sync::Notify>,
}

impl Registry {
    /// Every tool on the built-in CPU engine.
    pub fn builtin(options: BuiltinOptions) -> Self {
        let engine: Arc<dyn Executor> = Arc::new(Builtin::new(options));
        Self {
            executors: ToolId::ALL.iter().map(|&t| (t, engine.clone())).collect(),
            capacity_changed: Arc::new(tokio::sync::Notify::new()),
        }
    }

    /// Routes one tool to another executor.
    pub fn set(&mut self, tool: ToolId, executor: Arc<dyn Executor>) {
        self.executors.insert(tool, executor);
    }

    pub fn get(&self, tool: ToolId) -> Option<Arc<dyn Executor>> {
        self.executors.get(&tool).cloned()
    }

    /// The tools whose executors bound how many nodes run at once (model servers), with
    /// their executors.
    pub fn bounded(&self) -> Vec<(ToolId, Arc<dyn Executor>)> {
        let mut bounded: Vec<_> = self
            .executors
            .iter()
            .filter(|(_, e)| e.capacity() != Capacity::Unbounded)
            .map(|(t, e)| (*t, e.clone()))
            .collect();
        bounded.sort_by_key(|(t, _)| t.spec().name);
        bounded
    }

    /// What executors notify when their capacity may have grown; the dispatcher waits on it.
    pub fn capacity_changed(&self) -> &Arc<tokio::sync::Notify> {
        &self.capacity_changed
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
