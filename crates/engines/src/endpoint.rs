//! Endpoints: an [`Endpoint`] is one configured server: its HTTP client (headers, timeouts), a
//! semaphore of `max_concurrency` slots (nodes beyond it wait here, not in the server's own
//! queue, so that cancels and timeouts stay exact) and the health its last check found. The
//! pools that spread a tool's nodes over them are `crate::pool`'s.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use atelier_core::engines::{EndpointHealth, EngineKind};
use atelier_tools::ToolError;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

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
    /// What the endpoint's engine keeps for it, made on first use (a ComfyUI endpoint's
    /// websocket, `crate::comfyui::Events`); an endpoint serves one kind of engine.
    pub(crate) engine_state: std::sync::OnceLock<Arc<dyn std::any::Any + Send + Sync>>,
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
    /// How many of its slots are free now.
    pub(crate) fn free_slots(&self) -> usize {
        self.slots.available_permits()
    }

    /// How many nodes run on it now.
    pub(crate) fn busy(&self) -> usize {
        self.busy.load(Ordering::Relaxed)
    }

    /// A slot, when one is free now.
    pub(crate) fn try_slot(self: &Arc<Self>) -> Option<Slot> {
        self.slots.clone().try_acquire_owned().ok().map(|permit| Slot::new(self, permit))
    }

    /// The next of its slots to free up; `None` once the endpoint is closed.
    pub(crate) async fn next_slot(self: Arc<Self>) -> Option<Slot> {
        let permit = self.slots.clone().acquire_owned().await.ok()?;
        Some(Slot::new(&self, permit))
    }

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
            engine_state: std::sync::OnceLock::new(),
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

    pub(crate) fn usable(&self) -> bool {
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

impl Slot {
    fn new(endpoint: &Arc<Endpoint>, permit: OwnedSemaphorePermit) -> Self {
        endpoint.busy.fetch_add(1, Ordering::Relaxed);
        Self { endpoint: Arc::clone(endpoint), _permit: permit }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.endpoint.busy.fetch_sub(1, Ordering::Relaxed);
    }
}
