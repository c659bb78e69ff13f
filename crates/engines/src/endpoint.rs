//! Endpoints and the pools that spread a tool's nodes over them.
//!
//! An [`Endpoint`] is one configured server: its HTTP client (headers, timeouts), a
//! semaphore of `max_concurrency` slots (nodes beyond it wait here, not in the server's own
//! queue, so that cancels and timeouts stay exact) and the health its last check found. A
//! [`Pool`] is the endpoints of one tool: a node takes a slot on the healthy endpoint with the
//! most free slots, or waits for the first slot to free up. The pool's [`Capacity`] (the
//! slots of its usable endpoints, or since when it has none) is what the dispatcher reads
//! before it claims a node of the tool, so that nodes wait for a model server in the queue,
//! not in a worker slot.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use atelier_core::engines::{EndpointHealth, EngineKind};
use atelier_tools::{Capacity, ToolError};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use crate::discovery::Group;
use crate::settings::EndpointSettings;

/// What the last health check found.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Health {
    /// Not checked yet: tried as if healthy.
    Unknown,
    Healthy,
    Unhealthy(String),
}

pub struct Endpoint {
    pub(crate) name: String,
    pub(crate) kind: EngineKind,
    /// The base URL, without a trailing slash.
    pub(crate) base: String,
    pub(crate) client: reqwest::Client,
    pub(crate) settings: EndpointSettings,
    slots: Arc<Semaphore>,
    busy: AtomicUsize,
    health: Mutex<HealthState>,
    /// Wakes the health watch when a request found the endpoint unreachable, so that it
    /// probes again within a second rather than at the next `health_interval_secs`.
    pub(crate) recheck: Notify,
    /// Notified when the endpoint becomes usable (the dispatchers of the registries it
    /// serves wait on these to claim the nodes that waited for it).
    listeners: Mutex<Vec<Arc<Notify>>>,
    /// A ComfyUI endpoint's websocket, opened on first use.
    pub(crate) comfy_events: std::sync::OnceLock<Arc<crate::comfyui::Events>>,
}

#[derive(Debug)]
struct HealthState {
    health: Health,
    /// Since when the endpoint has been unusable (`None` while it is usable).
    down_since: Option<Instant>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint").field("name", &self.name).field("kind", &self.kind).finish_non_exhaustive()
    }
}

impl Endpoint {
    /// An endpoint found by discovery: not used until a health check passes.
    pub(crate) fn discovered(name: &str, settings: &EndpointSettings) -> Result<Arc<Self>, String> {
        let endpoint = Self::new(name, settings)?;
        *endpoint.health.lock().unwrap_or_else(PoisonError::into_inner) = HealthState {
            health: Health::Unhealthy("not checked yet".into()),
            down_since: Some(Instant::now()),
        };
        Ok(endpoint)
    }

    pub fn new(name: &str, settings: &EndpointSettings) -> Result<Arc<Self>, String> {
        let mut headers = HeaderMap::new();
        for (key, value) in &settings.headers {
            let header = HeaderName::try_from(key.as_str())
                .map_err(|e| format!("engines.{name}.headers: {key:?} is not a header name: {e}"))?;
            let mut value = HeaderValue::try_from(value.as_str())
                .map_err(|_| format!("engines.{name}.headers.{key}: not a valid header value"))?;
            value.set_sensitive(true);
            headers.insert(header, value);
        }
        let client = reqwest::Client::builder()
            .default_headers(headers)
            .connect_timeout(Duration::from_secs(settings.connect_timeout_secs))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("engines.{name}: {e}"))?;
        Ok(Arc::new(Self {
            name: name.to_string(),
            kind: settings.kind,
            base: settings.url.trim_end_matches('/').to_string(),
            client,
            settings: settings.clone(),
            slots: Arc::new(Semaphore::new(settings.max_concurrency.max(1))),
            busy: AtomicUsize::new(0),
            health: Mutex::new(HealthState { health: Health::Unknown, down_since: None }),
            recheck: Notify::new(),
            listeners: Mutex::new(Vec::new()),
            comfy_events: std::sync::OnceLock::new(),
        }))
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The per-call timeout of requests other than long waits.
    pub(crate) fn request_timeout(&self) -> Duration {
        Duration::from_secs(self.settings.request_timeout_secs)
    }

    pub(crate) fn health(&self) -> Health {
        self.health.lock().unwrap_or_else(PoisonError::into_inner).health.clone()
    }

    /// Since when the endpoint has been unusable; `None` while it is usable.
    pub(crate) fn down_since(&self) -> Option<Instant> {
        self.health.lock().unwrap_or_else(PoisonError::into_inner).down_since
    }

    pub(crate) fn set_health(&self, health: Health) {
        let mut state = self.health.lock().unwrap_or_else(PoisonError::into_inner);
        if state.health != health {
            match &health {
                Health::Unhealthy(why) => {
                    tracing::warn!(endpoint = %self.name, why, "engine endpoint unhealthy")
                }
                _ => tracing::info!(endpoint = %self.name, "engine endpoint healthy"),
            }
        }
        let usable = !matches!(health, Health::Unhealthy(_));
        let came_back = usable && state.down_since.is_some();
        state.down_since = match (usable, state.down_since) {
            (true, _) => None,
            (false, Some(since)) => Some(since),
            (false, None) => Some(Instant::now()),
        };
        state.health = health;
        drop(state);
        if came_back {
            for listener in self.listeners.lock().unwrap_or_else(PoisonError::into_inner).iter() {
                listener.notify_one();
            }
        }
    }

    /// Marks the endpoint unusable after a request failed to reach it, and has the health
    /// watch probe it again at once.
    pub(crate) fn mark_down(&self, why: &str) {
        self.set_health(Health::Unhealthy(why.to_string()));
        self.recheck.notify_one();
    }

    /// `notify` is notified whenever the endpoint becomes usable again.
    pub(crate) fn notify_when_usable(&self, notify: Arc<Notify>) {
        let mut listeners = self.listeners.lock().unwrap_or_else(PoisonError::into_inner);
        if !listeners.iter().any(|l| Arc::ptr_eq(l, &notify)) {
            listeners.push(notify);
        }
    }

    fn usable(&self) -> bool {
        !matches!(self.health(), Health::Unhealthy(_))
    }

    pub fn report(&self) -> EndpointHealth {
        let (healthy, detail) = match self.health() {
            Health::Healthy => (true, None),
            Health::Unknown => (true, Some("not checked yet".to_string())),
            Health::Unhealthy(why) => (false, Some(why)),
        };
        EndpointHealth {
            name: self.name.clone(),
            kind: self.kind,
            healthy,
            detail,
            busy: self.busy.load(Ordering::Relaxed),
            capacity: self.settings.max_concurrency,
        }
    }

    /// A client-visible message for a failed request: the endpoint's name and what went
    /// wrong, never its address (`reqwest` errors print the URL). The server never answered
    /// how the job ended, so the error is `Lost`: the node waits for the next usable
    /// endpoint without counting an attempt. An endpoint that refused the connection, or
    /// dropped it mid-answer (a restart), is marked unhealthy at once and probed again
    /// within a second.
    pub(crate) fn unreachable(&self, e: &reqwest::Error) -> ToolError {
        let what = if e.is_timeout() {
            "timed out"
        } else if e.is_connect() {
            self.mark_down("unreachable");
            "refused the connection or could not be reached"
        } else if e.is_decode() {
            "sent an unreadable answer"
        } else if e.is_body() {
            self.mark_down("the connection was lost");
            "broke off its answer"
        } else {
            // A connection closed or reset under a request: the server went away.
            self.mark_down("the connection was lost");
            "failed"
        };
        tracing::warn!(endpoint = %self.name, error = %e, "engine request failed");
        ToolError::Lost(format!("the {} engine {} {what}", self.kind.as_str(), self.name))
    }

    /// A 5xx: the server (or a proxy in front of it) failed, not the job. `Lost`, like a
    /// connection that failed.
    pub(crate) fn server_error(&self, status: reqwest::StatusCode, doing: &str) -> ToolError {
        tracing::warn!(endpoint = %self.name, %status, doing, "engine answered with a server error");
        self.recheck.notify_one();
        ToolError::Lost(format!(
            "the {} engine {} answered {status} to {doing}",
            self.kind.as_str(),
            self.name
        ))
    }

    /// Sends `request` with the per-call timeout; a transport error or a 5xx is `Lost`, any
    /// other answer but 2xx `Unavailable`, and says what `doing` failed.
    pub(crate) async fn send(
        &self,
        request: reqwest::RequestBuilder,
        doing: &str,
    ) -> Result<reqwest::Response, ToolError> {
        let response =
            request.timeout(self.request_timeout()).send().await.map_err(|e| self.unreachable(&e))?;
        if response.status().is_server_error() {
            return Err(self.server_error(response.status(), doing));
        }
        if !response.status().is_success() {
            return Err(ToolError::Unavailable(format!(
                "the {} engine {} answered {} to {doing}",
                self.kind.as_str(),
                self.name,
                response.status()
            )));
        }
        Ok(response)
    }
}

/// A slot held on an endpoint for one node.
pub struct Slot {
    pub endpoint: Arc<Endpoint>,
    _permit: OwnedSemaphorePermit,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.endpoint.busy.fetch_sub(1, Ordering::Relaxed);
    }
}

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
            (total + e.settings.max_concurrency.max(1), free + e.slots.available_permits())
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
        let best = usable
            .iter()
            .max_by_key(|e| (e.slots.available_permits(), std::cmp::Reverse(e.busy.load(Ordering::Relaxed))));
        if let Some(best) = best {
            if let Ok(permit) = best.slots.clone().try_acquire_owned() {
                return Ok(self.slot(best, permit));
            }
        }
        let waits = usable.iter().map(|e| {
            let e = Arc::clone(e);
            Box::pin(async move {
                let permit = e.slots.clone().acquire_owned().await;
                (e, permit)
            })
        });
        let ((endpoint, permit), _, _) = futures::future::select_all(waits).await;
        let permit =
            permit.map_err(|_| ToolError::Unavailable(format!("the engines of {} stopped", self.tool)))?;
        Ok(self.slot(&endpoint, permit))
    }

    fn slot(&self, endpoint: &Arc<Endpoint>, permit: OwnedSemaphorePermit) -> Slot {
        endpoint.busy.fetch_add(1, Ordering::Relaxed);
        Slot { endpoint: Arc::clone(endpoint), _permit: permit }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
