//! What the store records for `/metrics`, through the `metrics` facade (a no-op until the
//! process installs a recorder): runs, their nodes and the tokens charged, counted once per
//! run, after the transaction that ended it committed.

use std::sync::atomic::{AtomicBool, Ordering};

use atelier_core::status::{RunKind, RunStatus};
use metrics::counter;

use crate::rows::NodeCount;

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Turns on what costs the store a read: the node counts of each run that ends (one
/// statement per run). The process that installs a metrics recorder calls it.
pub fn enable_metrics() {
    ENABLED.store(true, Ordering::Relaxed);
}

pub(crate) fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// A run that a transaction ended, to be recorded once it committed.
#[derive(Debug)]
pub(crate) struct Ended {
    pub kind: RunKind,
    /// The tool of a node run; a workflow's name is not a label (there is no bound to them).
    pub target: String,
    pub status: RunStatus,
    pub charged: i64,
    /// Its nodes by tool and state (empty unless [`enable_metrics`] was called).
    pub nodes: Vec<NodeCount>,
}

/// Records runs whose transaction committed.
pub(crate) fn record<'a>(ended: impl IntoIterator<Item = &'a Ended>) {
    for run in ended {
        let kind = match run.kind {
            RunKind::Node => run.target.clone(),
            RunKind::Workflow => "workflow".to_string(),
        };
        counter!("atelier_runs_finished_total", "type" => kind, "status" => run.status.as_str()).increment(1);
        counter!("atelier_tokens_charged_total").increment(u64::try_from(run.charged).unwrap_or(0));
        for node in &run.nodes {
            let labels = [("tool", node.tool.clone()), ("status", node.status.clone())];
            counter!("atelier_nodes_finished_total", &labels).increment(u64::try_from(node.n).unwrap_or(0));
        }
    }
}
