//! Per-tool concurrency slots: how many nodes of each tool this process runs
//! at once, beside the total of `EngineConfig::slots`.
//!
//! Only the dispatcher takes a slot, and only after it claimed a task of a
//! tool that was not [`ToolSlots::full`] when it asked; slots are given back
//! by anyone (the [`ToolPermit`] is dropped when the task's execution ends).
//! Counts can therefore only fall between the question and the claim, so a
//! limit is never exceeded.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Notify;

pub(crate) struct ToolSlots {
    /// Tool → most nodes at once; 0 = never. Tools not listed are unlimited here.
    limits: BTreeMap<String, usize>,
    running: Mutex<HashMap<String, usize>>,
    freed: Notify,
}

impl ToolSlots {
    pub(crate) fn new(limits: BTreeMap<String, usize>) -> Arc<Self> {
        Arc::new(Self { limits, running: Mutex::new(HashMap::new()), freed: Notify::new() })
    }

    /// The tools this process cannot take now: their limit is 0 or reached.
    pub(crate) fn full(&self) -> Vec<&str> {
        let running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        self.limits
            .iter()
            .filter(|(tool, &limit)| running.get(tool.as_str()).copied().unwrap_or(0) >= limit)
            .map(|(tool, _)| tool.as_str())
            .collect()
    }

    /// Counts a node of `tool` as running until the permit is dropped.
    pub(crate) fn take(self: &Arc<Self>, tool: &str) -> ToolPermit {
        if !self.limits.contains_key(tool) {
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
    use super::*;

    #[tokio::test]
    async fn a_tool_is_full_at_its_limit_until_a_permit_is_dropped() {
        let slots = ToolSlots::new(BTreeMap::from([("video".to_string(), 1), ("sketch".to_string(), 0)]));
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
}
