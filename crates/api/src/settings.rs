//! The HTTP layer's settings ([`ApiConfig`] and its parts), which the process fills in from
//! its configuration. Reads nothing else of the crate, so every module can read it.

use std::sync::Arc;
use std::time::Duration;

use atelier_core::engines::{BuiltinOnly, EngineDirectory};
use atelier_core::tools::Prices;
use atelier_inputs::InputPolicy;
use atelier_store::SessionLimits;
use atelier_telemetry::metrics::PrometheusHandle;

/// The longest `Prefer: wait` honoured, in seconds (`ApiConfig::max_wait_secs` may lower it).
pub const MAX_WAIT_SECS: u64 = 60;

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
    pub console: ConsoleConfig,
    /// `/metrics`, when metrics are on and served by the API's own listener.
    pub metrics: Option<MetricsConfig>,
    /// The longest `Prefer: wait` a run request may ask for (at most
    /// [`MAX_WAIT_SECS`]); 0 turns waiting off.
    pub max_wait_secs: u64,
    /// Uploaded images (`POST /api/v3/uploads`).
    pub uploads: UploadPolicy,
    /// The most items a batch may have (`POST /api/v3/batches`).
    pub max_batch_items: usize,
    /// How outputs are signed, as `/readyz` says.
    pub provenance: atelier_wire::probes::Provenance,
    /// The retention keys and runs may set (`retention_secs`).
    pub retention: RetentionPolicy,
    /// How long a key the database verified is trusted without reading it again
    /// ([`crate::keys`]); zero reads it on every request.
    pub verified_keys: std::time::Duration,
}

/// Retention a customer controls: what a key or a run may set as `retention_secs`, within the
/// operator's range (`[outputs] min_retention_secs`, `max_retention_secs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionPolicy {
    pub min_secs: u64,
    pub max_secs: u64,
}

impl Default for RetentionPolicy {
    /// Anything from zero retention to the spec's 3 days.
    fn default() -> Self {
        Self { min_secs: 0, max_secs: 3 * 24 * 3600 }
    }
}

impl RetentionPolicy {
    /// Whether `secs` is in the operator's range; the refusal names the range.
    pub fn check(&self, secs: u64) -> Result<u64, String> {
        if (self.min_secs..=self.max_secs).contains(&secs) {
            Ok(secs)
        } else {
            Err(format!("must be a whole number of seconds from {} to {}", self.min_secs, self.max_secs))
        }
    }

    /// A run's retention: what its request asked for (refused outside the range), else its
    /// key's (brought into the range, which may have changed since the key's was set), else
    /// `None`, the operator's default.
    pub fn of_run(
        &self,
        asked: Option<u64>,
        key: Option<u64>,
    ) -> Result<Option<u64>, atelier_core::RequestError> {
        match (asked, key) {
            (Some(secs), _) => self
                .check(secs)
                .map(Some)
                .map_err(|e| atelier_core::RequestError::invalid("retention_secs", e)),
            (None, Some(secs)) => Ok(Some(secs.clamp(self.min_secs, self.max_secs))),
            (None, None) => Ok(None),
        }
    }
}

/// Default [`ApiConfig::max_batch_items`].
pub const MAX_BATCH_ITEMS: usize = 50_000;

/// How uploads are checked and kept. Their bytes are held to the input policy's
/// `max_bytes`, like any image input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UploadPolicy {
    /// How long an upload may be named by runs after it was (last) uploaded.
    pub keep: Duration,
    /// Most pixels (`width * height`), read from the image's header.
    pub max_pixels: u64,
    /// Most pixels a side.
    pub max_side: u32,
}

impl UploadPolicy {
    /// Default [`UploadPolicy::keep`]: 24 hours.
    pub const DEFAULT_KEEP: Duration = Duration::from_secs(24 * 3600);
}

impl Default for UploadPolicy {
    fn default() -> Self {
        Self { keep: Self::DEFAULT_KEEP, max_pixels: 40_000_000, max_side: 8192 }
    }
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
            console: ConsoleConfig::default(),
            max_wait_secs: MAX_WAIT_SECS,
            metrics: None,
            uploads: UploadPolicy::default(),
            max_batch_items: MAX_BATCH_ITEMS,
            provenance: atelier_wire::probes::Provenance::off(),
            retention: RetentionPolicy::default(),
            verified_keys: crate::keys::KEY_CACHE_TTL,
        }
    }
}

/// A request rate: `burst` at once, `per_second` sustained. `per_second` 0 = no limit.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RateLimit {
    pub per_second: f64,
    pub burst: u32,
}

/// Settings of the console's API.
#[derive(Debug, Clone)]
pub struct ConsoleConfig {
    pub sessions: SessionLimits,
    /// Failed sign-ins per client address: `burst` at once, then `per_second`.
    pub sign_in: RateLimit,
    /// Origins the pages may show images and videos from besides their own (where output
    /// URLs point when they are served elsewhere).
    pub media_sources: Vec<String>,
}

impl Default for ConsoleConfig {
    fn default() -> Self {
        Self {
            sessions: SessionLimits::default(),
            sign_in: RateLimit { per_second: 1.0 / 6.0, burst: 10 },
            media_sources: Vec::new(),
        }
    }
}

/// What serves `/metrics`.
#[derive(Clone)]
pub struct MetricsConfig {
    /// Renders what was recorded (the process's recorder).
    pub handle: PrometheusHandle,
    /// When set, a scrape must send `Authorization: Bearer <token>`.
    pub token: Option<Arc<str>>,
}

impl std::fmt::Debug for MetricsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsConfig").field("token", &self.token.as_ref().map(|_| "…")).finish()
    }
}
