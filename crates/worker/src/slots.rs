//! Per-tool concurrency slots: how many nodes of each tool this process runs
//! at once, beside the total of `WorkerConfig::slots`.
//!
//! A tool is bounded by `WorkerConfig::tool_slots`, by its executor's
//! [`Capacity`] (a model server's usable endpoints: none while they are all
//! down), or by both (the smaller). Only the dispatcher takes a slot, and only
//! after it claimed a task of a tool that was not [`ToolSlots::full`] when it
//! asked; slots are given back by anyone (the [`ToolPermit`] is dropped when
//! the task's execution ends). Counts can therefore only fall between the
//! question and the claim, so a limit is never exceeded (a capacity can shrink
//! meanwhile: an endpoint going down; the executor then gives the node back).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use atelier_tools::{Capacity, Executor};
use tokio::sync::Notify;

pub(crate) struct ToolSlots {
    /// Tool → most nodes at once; 0 = never. Tools not listed are unlimited here.
    limits: BTreeMap<String, usize>,
    /// Tool → its executor, for the tools whose executor bounds them (model servers).
    engines: BTreeMap<String, Arc<dyn Executor>>,
    running: Mutex<HashMap<String, usize>>,
    freed: Notify,
}

/// A tool whose executor has no usable endpoint.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Down {
    pub tool: String,
    /// How long it has had none.
    pub for_: Duration,
    /// How long its nodes may wait.
    pub wait: Duration,
    pub why: String,
}

impl ToolSlots {
    pub(crate) fn new(
        limits: BTreeMap<String, usize>,
        engines: BTreeMap<String, Arc<dyn Executor>>,
    ) -> Arc<Self> {
        Arc::new(Self { limits, engines, running: Mutex::new(HashMap::new()), freed: Notify::new() })
    }

    /// Whether any tool is bounded here (claims then take one task at a time, so that each
    /// knows which tools are full).
    pub(crate) fn any(&self) -> bool {
        !self.limits.is_empty() || !self.engines.is_empty()
    }

    /// Whether `tool` can take another node now, `running` of its nodes running here.
    fn has_room(&self, tool: &str, running: usize) -> bool {
        if self.limits.get(tool).is_some_and(|&limit| running >= limit) {
            return false;
        }
        match self.engines.get(tool).map(|e| e.capacity()) {
            // An endpoint shared with other tools may be taken by their nodes: `has_room`.
            Some(capacity) => capacity.has_room() && capacity.limit().is_none_or(|limit| running < limit),
            None => true,
        }
    }

    /// The tools this process cannot take now: their limit is 0 or reached, or their model
    /// servers have no usable endpoint or no free slot. (Two tools sharing an endpoint may
    /// each be claimed for its last slot between a claim and the node taking the slot; the
    /// second then waits for it in its worker slot.)
    pub(crate) fn full(&self) -> Vec<String> {
        let running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        let bounded: std::collections::BTreeSet<&String> =
            self.limits.keys().chain(self.engines.keys()).collect();
        bounded
            .into_iter()
            .filter(|tool| !self.has_room(tool, running.get(tool.as_str()).copied().unwrap_or(0)))
            .cloned()
            .collect()
    }

    /// Whether every bounded tool is in `full` (a claim that skips them can only return
    /// tasks of unbounded tools, so it may take several).
    pub(crate) fn all_in(&self, full: &[String]) -> bool {
        self.limits.keys().chain(self.engines.keys()).all(|t| full.contains(t))
    }

    /// The tools whose model servers have no usable endpoint now.
    pub(crate) fn down(&self) -> Vec<Down> {
        self.engines
            .iter()
            .filter_map(|(tool, executor)| match executor.capacity() {
                Capacity::Down { since, wait, why } => {
                    Some(Down { tool: tool.clone(), for_: since.elapsed(), wait, why })
                }
                _ => None,
            })
            .collect()
    }

    /// Counts a node of `tool` as running until the permit is dropped.
    pub(crate) fn take(self: &Arc<Self>, tool: &str) -> ToolPermit {
        if !self.limits.contains_key(tool) && !self.engines.contains_key(tool) {
            return ToolPermit { slots: self.clone(), tool: None };
        }
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        *running.entry(tool.to_string()).or_insert(0) += 1;
        ToolPermit { slots: self.clone(), tool: Some(tool.to_string()) }
    }

    /// Resolves once a limited tool's slot has been given back since the last call
    /// (at once if one was given back while nobody waited).
    pub(crate) async fn freed(&self) {
        self.freed.notified().await
    }
}

/// A node of a tool counted as running; dropping it gives the slot back.
pub(crate) struct ToolPermit {
    slots: Arc<ToolSlots>,
    /// `None` for a tool without a limit.
    tool: Option<String>,
}

impl Drop for ToolPermit {
    fn drop(&mut self) {
        let Some(tool) = self.tool.take() else { return };
        let mut running = self.slots.running.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = running.get_mut(&tool) {
            *n = n.saturating_sub(1);
        }
        drop(running);
        // `notify_one` keeps the wake-up when the dispatcher is not waiting yet.
        self.slots.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use atelier_tools::{Artifact, Execution, ToolError};

    use super::*;

    #[tokio::test]
    async fn a_tool_is_full_at_its_limit_until_a_permit_is_dropped() {
        let slots = ToolSlots::new(
            BTreeMap::from([("video".to_string(), 1), ("sketch".to_string(), 0)]),
            BTreeMap::new(),
        );
        assert_eq!(slots.full(), ["sketch"], "a limit of 0 is always full");
        let unlimited = slots.take("upscale");
        let video = slots.take("video");
        assert_eq!(slots.full(), ["sketch", "video"]);
        drop(unlimited);
        assert_eq!(slots.full(), ["sketch", "video"], "unlimited tools count nothing");
        drop(video);
        assert_eq!(slots.full(), ["sketch"]);
        tokio::time::timeout(std::time::Duration::from_secs(1), slots.freed())
            .await
            .expect("a slot given back before waiting still wakes the waiter");
    }

    /// An executor whose capacity the test sets.
    struct Remote(Mutex<Capacity>);

    #[async_trait::async_trait]
    impl Executor for Remote {
        async fn run(&self, _: Execution) -> Result<Vec<Artifact>, ToolError> {
            Ok(Vec::new())
        }
        fn capacity(&self) -> Capacity {
            self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
        }
    }

    #[tokio::test]
    async fn a_model_servers_tool_is_full_at_its_usable_slots_and_while_it_has_none() {
        let remote = Arc::new(Remote(Mutex::new(Capacity::Slots { total: 2, free: 2 })));
        let engines = BTreeMap::from([("virtual_tryon".to_string(), remote.clone() as Arc<dyn Executor>)]);
        let slots = ToolSlots::new(BTreeMap::from([("virtual_tryon".to_string(), 1)]), engines.clone());
        assert!(slots.any());
        let first = slots.take("virtual_tryon");
        assert_eq!(slots.full(), ["virtual_tryon"], "the configured limit (1) is below the capacity (2)");
        drop(first);

        let slots = ToolSlots::new(BTreeMap::new(), engines);
        let first = slots.take("virtual_tryon");
        assert!(slots.full().is_empty(), "one of two slots taken");
        *remote.0.lock().unwrap() = Capacity::Slots { total: 2, free: 0 };
        assert_eq!(slots.full(), ["virtual_tryon"], "another tool's nodes hold the shared endpoint");
        *remote.0.lock().unwrap() = Capacity::Slots { total: 2, free: 1 };
        let second = slots.take("virtual_tryon");
        assert_eq!(slots.full(), ["virtual_tryon"]);
        assert!(slots.all_in(&slots.full()) && !slots.all_in(&[]));
        drop((first, second));
        assert!(slots.full().is_empty() && slots.down().is_empty());

        let since = Instant::now() - Duration::from_secs(5);
        *remote.0.lock().unwrap() =
            Capacity::Down { since, wait: Duration::from_secs(60), why: "gpu1: unreachable".into() };
        assert_eq!(slots.full(), ["virtual_tryon"], "no usable endpoint: nothing is claimed");
        let down = slots.down();
        assert_eq!(down.len(), 1);
        assert!(down[0].for_ >= Duration::from_secs(5) && down[0].wait == Duration::from_secs(60));
        assert_eq!(down[0].why, "gpu1: unreachable");
    }
}
