//! The pools that spread a tool's nodes over its endpoints. A [`Pool`] is the endpoints of
//! one tool, those of the `[engines.*]` entries it is routed to (an entry with `discover =
//! "dns"` gains and loses endpoints, `crate::discovery`): a node takes a slot on the healthy
//! endpoint with the most free slots, or waits for the first slot to free up. The pool's
//! [`Capacity`] (the slots of its usable endpoints, or since when it has none) is what the
//! dispatcher reads before it claims a node of the tool, so that nodes wait for a model server
//! in the queue, not in a worker slot.

use std::sync::Arc;
use std::time::{Duration, Instant};

use atelier_core::engines::EngineKind;
use atelier_tools::{Capacity, ToolError};

use crate::discovery::Group;
use crate::endpoint::{Endpoint, Health, Slot};

/// The endpoints of one tool: those of the `[engines.*]` entries it is routed to, as they
/// are now (an entry with `discover = "dns"` gains and loses endpoints).
#[derive(Debug, Clone)]
pub struct Pool {
    pub(crate) tool: &'static str,
    groups: Vec<Arc<Group>>,
}

impl Pool {
    pub(crate) fn new(tool: &'static str, groups: Vec<Arc<Group>>) -> Self {
        Self { tool, groups }
    }

    /// The kind of the tool's engines (one kind per tool, checked by the configuration).
    pub(crate) fn kind(&self) -> EngineKind {
        self.groups.first().map_or(EngineKind::Builtin, |g| g.settings.kind)
    }

    fn endpoints(&self) -> Vec<Arc<Endpoint>> {
        self.groups.iter().flat_map(|g| g.endpoints()).collect()
    }

    /// What the tool can take now: the slots of its usable endpoints (and how many of them
    /// are free: endpoints may serve several tools), or, when none is usable, since when (the
    /// moment its last usable endpoint went down or left) and why.
    pub fn capacity(&self) -> Capacity {
        let endpoints = self.endpoints();
        let usable = endpoints.iter().filter(|e| e.usable());
        let (total, free) = usable.fold((0, 0), |(total, free), e| {
            (total + e.settings.max_concurrency.max(1), free + e.free_slots())
        });
        if total > 0 {
            return Capacity::Slots { total, free };
        }
        let since = endpoints
            .iter()
            .filter_map(|e| e.down_since())
            .chain(self.groups.iter().filter_map(|g| g.empty_since()))
            .max()
            .unwrap_or_else(Instant::now);
        Capacity::Down { since, wait: self.wait(), why: self.why_down(&endpoints) }
    }

    /// How long a node waits for a usable endpoint: the longest `wait_secs` of the pool's.
    fn wait(&self) -> Duration {
        Duration::from_secs(self.groups.iter().map(|g| g.settings.wait_secs).max().unwrap_or(0))
    }

    fn why_down(&self, endpoints: &[Arc<Endpoint>]) -> String {
        let why: Vec<String> = endpoints
            .iter()
            .map(|e| match e.health() {
                Health::Unhealthy(why) => format!("{}: {why}", e.name),
                _ => e.name.clone(),
            })
            .chain(self.groups.iter().filter_map(|g| g.why_empty()))
            .collect();
        format!("no healthy engine for {} ({})", self.tool, why.join("; "))
    }

    /// A slot on the healthy endpoint with the most free slots (the first listed on a tie), or
    /// the first to free up when all are busy. `Lost` when none is healthy: the node goes back
    /// to the queue, where it waits without holding a worker slot.
    pub async fn acquire(&self) -> Result<Slot, ToolError> {
        let endpoints = self.endpoints();
        let usable: Vec<&Arc<Endpoint>> = endpoints.iter().filter(|e| e.usable()).collect();
        if usable.is_empty() {
            return Err(ToolError::Lost(self.why_down(&endpoints)));
        }
        let best = usable.iter().max_by_key(|e| (e.free_slots(), std::cmp::Reverse(e.busy())));
        if let Some(slot) = best.and_then(|best| best.try_slot()) {
            return Ok(slot);
        }
        let waits = usable.iter().map(|e| Box::pin(Arc::clone(e).next_slot()));
        let (slot, _, _) = futures::future::select_all(waits).await;
        slot.ok_or_else(|| ToolError::Unavailable(format!("the engines of {} stopped", self.tool)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EndpointSettings;

    /// A fixed entry's group and its one endpoint.
    fn endpoint(name: &str, slots: usize) -> (Arc<Group>, Arc<Endpoint>) {
        let settings: EndpointSettings = serde_json::from_value(serde_json::json!({
            "kind": "cog", "url": "http://127.0.0.1:9", "max_concurrency": slots
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let group = Group::new(name, &settings).unwrap_or_else(|e| panic!("{e}"));
        let endpoint = group.endpoints().remove(0);
        (group, endpoint)
    }

    #[tokio::test]
    async fn nodes_go_to_the_least_busy_healthy_endpoint() {
        let ((group_a, a), (group_b, b)) = (endpoint("a", 2), endpoint("b", 2));
        let pool = Pool::new("upscale", vec![group_a, group_b]);
        let first = pool.acquire().await.unwrap_or_else(|e| panic!("{e}"));
        let second = pool.acquire().await.unwrap_or_else(|e| panic!("{e}"));
        assert_ne!(first.endpoint.name, second.endpoint.name, "the second node goes to the idle endpoint");
        assert_eq!(a.report().busy + b.report().busy, 2);

        // An unhealthy endpoint is skipped while it is unhealthy.
        drop((first, second));
        a.set_health(Health::Unhealthy("refused".into()));
        for _ in 0..3 {
            assert_eq!(pool.acquire().await.unwrap_or_else(|e| panic!("{e}")).endpoint.name, "b");
        }
        b.set_health(Health::Unhealthy("starting".into()));
        match pool.acquire().await {
            Err(ToolError::Lost(m)) => {
                assert!(m.contains("no healthy engine for upscale") && m.contains("a: refused"), "{m}")
            }
            other => panic!("{:?}", other.map(|s| s.endpoint.name.clone())),
        }
        a.set_health(Health::Healthy);
        assert_eq!(pool.acquire().await.unwrap_or_else(|e| panic!("{e}")).endpoint.name, "a");
        assert!(!b.report().healthy && b.report().detail.as_deref() == Some("starting"));
    }

    #[tokio::test]
    async fn a_full_pool_waits_for_the_first_free_slot() {
        let (group, _) = endpoint("a", 1);
        let pool = Pool::new("upscale", vec![group]);
        let held = pool.acquire().await.unwrap_or_else(|e| panic!("{e}"));
        let waiting = tokio::spawn({
            let pool = pool.clone();
            async move { pool.acquire().await.map(|s| s.endpoint.name.clone()) }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished());
        drop(held);
        let got = tokio::time::timeout(Duration::from_secs(5), waiting).await;
        assert!(matches!(got, Ok(Ok(Ok(ref name))) if name == "a"));
    }
}
