//! Failpoints for crash tests: places where a worker process can be made to
//! die on purpose, to prove that the queue survives it.
//!
//! They exist only with the `failpoints` cargo feature, which the CLI's test
//! build turns on (a dev-dependency feature); `cargo build` and release
//! binaries contain none of this. With the feature, `ATELIER_FAILPOINT`
//! (read once, when the workers are built; comma-separated) arms them:
//!
//! - `after_publish`: abort the process after a node's outputs are written to
//!   the blob store and before its completion is committed, the window where
//!   a crash leaves published objects behind an unfinished task;
//! - `abort_on_tool:TOOL`: abort the process when it starts a node of `TOOL`,
//!   a "poison" node that kills every worker that takes it.
//!
//! Aborting is `std::process::abort`: no destructor, no flush, no release of
//! the lease, as a crash would be.

use atelier_store::ClaimedTask;

/// The failpoints armed in this process (none without the feature).
#[derive(Debug, Clone, Default)]
pub(crate) struct Failpoints {
    #[cfg(feature = "failpoints")]
    after_publish: bool,
    #[cfg(feature = "failpoints")]
    abort_on_tools: Vec<String>,
}

#[cfg(feature = "failpoints")]
impl Failpoints {
    /// Reads `ATELIER_FAILPOINT`.
    pub(crate) fn from_env() -> Self {
        let spec = std::env::var("ATELIER_FAILPOINT").unwrap_or_default();
        let mut armed = Self::default();
        for point in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match point.split_once(':') {
                None if point == "after_publish" => armed.after_publish = true,
                Some(("abort_on_tool", tool)) => armed.abort_on_tools.push(tool.to_string()),
                _ => tracing::error!(failpoint = point, "unknown failpoint in ATELIER_FAILPOINT; ignored"),
            }
        }
        if armed.after_publish || !armed.abort_on_tools.is_empty() {
            tracing::warn!(failpoints = %spec, "failpoints armed: this process will abort on purpose");
        }
        armed
    }

    /// After a node's outputs are in the blob store, before its completion.
    pub(crate) fn after_publish(&self, task: &ClaimedTask) {
        if self.after_publish {
            abort("after_publish", task);
        }
    }

    /// When a node starts, before its inputs are read.
    pub(crate) fn before_tool(&self, task: &ClaimedTask) {
        if self.abort_on_tools.contains(&task.node.tool) {
            abort("abort_on_tool", task);
        }
    }
}

#[cfg(feature = "failpoints")]
fn abort(point: &str, task: &ClaimedTask) -> ! {
    tracing::error!(run = %task.run_id, node = %task.node.name, attempt = task.attempt, point,
        "failpoint reached: aborting the process");
    std::process::abort()
}

#[cfg(not(feature = "failpoints"))]
impl Failpoints {
    pub(crate) fn from_env() -> Self {
        Self::default()
    }

    pub(crate) fn after_publish(&self, _task: &ClaimedTask) {}

    pub(crate) fn before_tool(&self, _task: &ClaimedTask) {}
}
