//! What every handler shares: the HTTP layer's settings ([`ApiConfig`]) and the state the
//! router holds ([`AppState`]: the store, object storage, the settings, finished runs).

use std::sync::Arc;

use atelier_blob::BlobStore;
use atelier_core::engines::{BuiltinOnly, EngineDirectory};
use atelier_core::tools::Prices;
use atelier_inputs::InputPolicy;
use atelier_store::SharedStore;

use crate::limits::RateLimit;
use crate::{console, events, finished, metrics};

/// Settings of the HTTP layer.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    pub max_body_bytes: usize,
    pub inputs: InputPolicy,
    /// `Cache-Control` max-age of `/files/…` responses.
    pub file_max_age_secs: u64,
    /// Requests per API key on `/api/v3` and `/api/v2`; off by default here (the
    /// program's defaults are in its configuration).
    pub rate_limit: RateLimit,
    /// What each tool costs (`[prices]`): plans, estimates and `GET /api/v3/tools` use it.
    pub prices: Prices,
    /// Which engine runs each tool, and the health of the configured endpoints
    /// (`GET /api/v3/tools`, `/readyz`).
    pub engines: Engines,
    /// The web console's sessions and sign-in limit.
    pub console: console::ConsoleConfig,
    /// `/metrics`, when metrics are on and served by the API's own listener.
    pub metrics: Option<metrics::MetricsConfig>,
    /// The longest `Prefer: wait` a run request may ask for (at most
    /// [`crate::events::MAX_WAIT_SECS`]); 0 turns waiting off.
    pub max_wait_secs: u64,
}

/// The engines as the API sees them (`atelier_core::engines`).
#[derive(Clone)]
pub struct Engines(pub Arc<dyn EngineDirectory>);

impl Default for Engines {
    fn default() -> Self {
        Self(Arc::new(BuiltinOnly))
    }
}

impl std::fmt::Debug for Engines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.health().iter().map(|h| &h.name)).finish()
    }
}

impl Default for ApiConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: 40 * 1024 * 1024,
            inputs: InputPolicy::default(),
            file_max_age_secs: 3 * 24 * 3600,
            rate_limit: RateLimit::default(),
            prices: Prices::default(),
            engines: Engines::default(),
            console: console::ConsoleConfig::default(),
            max_wait_secs: events::MAX_WAIT_SECS,
            metrics: None,
        }
    }
}

/// Shared by every handler.
#[derive(Clone)]
pub struct AppState {
    pub store: SharedStore,
    pub blob: BlobStore,
    pub config: Arc<ApiConfig>,
    /// Statuses of finished runs, rendered once (see [`crate::finished`]).
    pub finished: Arc<finished::FinishedRuns>,
}

impl AppState {
    pub fn new(store: SharedStore, blob: BlobStore, config: ApiConfig) -> Self {
        Self { store, blob, config: Arc::new(config), finished: Arc::default() }
    }
}
