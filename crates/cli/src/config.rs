//! Configuration: defaults → `atelier.toml` → `ATELIER__SECTION__KEY`
//! environment variables → command-line flags. Every key is documented in
//! `atelier.example.toml` at the repository root.
//!
//! `[worker]` was called `[engine]` before "engine" came to mean a model server only; the
//! old name is still read, from the file and from `ATELIER__ENGINE__*` variables
//! ([`Renamed`]). Where one source names a key under both, `[worker]`'s value is used.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use atelier_core::file_urls;
use atelier_core::tools::{PriceSetting, Prices};
use figment::providers::{Env, Format, Serialized, Toml};
use figment::value::{Dict, Map, Value};
use figment::{Figment, Metadata, Profile, Provider};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub server: Server,
    pub storage: Storage,
    pub database: Database,
    /// This process's workers (`[worker]`; read from `[engine]` too, its old name).
    pub worker: Worker,
    pub inputs: Inputs,
    pub outputs: Outputs,
    pub limits: Limits,
    pub console: Console,
    pub webhooks: Webhooks,
    /// The result cache (`[cache]`).
    pub cache: Cache,
    /// Batches (`[batches]`).
    pub batches: Batches,
    /// The audit log (`[audit]`).
    pub audit: Audit,
    pub metrics: Metrics,
    pub traces: Traces,
    /// Content Credentials on the outputs (`[provenance]`; docs/PROVENANCE.md).
    pub provenance: atelier_provenance::Settings,
    /// Tool name → its price (`[prices]`); tools not named keep the built-in price.
    pub prices: BTreeMap<String, PriceSetting>,
    /// Model servers (`[engines.NAME]`; docs/ENGINES.md).
    pub engines: BTreeMap<String, atelier_engines::EndpointSettings>,
    /// Tool → the engine that runs it and how its parameters reach the model (`[tools.TOOL]`);
    /// tools not named run on the built-in engine.
    pub tools: BTreeMap<String, atelier_engines::ToolSettings>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Server {
    /// Address the HTTP server listens on.
    pub listen: SocketAddr,
    /// Base of output URLs; empty = `http://{listen}`.
    pub public_url: String,
    pub max_body_bytes: usize,
    /// Tokens of the `default` account created on first start.
    pub default_tokens: i64,
    /// The longest `Prefer: wait=N` a run request may ask for, in seconds (at most 60); 0
    /// turns waiting off.
    pub max_wait_secs: u64,
    /// How long a verified API key is trusted without reading it again, in milliseconds (at
    /// most 1000); 0 reads the key on every request.
    pub verified_keys_ms: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Storage {
    /// Holds `atelier.db` (SQLite) and `objects/` (outputs).
    pub data_dir: PathBuf,
    /// Where outputs are stored: `file:///path` or `s3://bucket/prefix`; empty for
    /// `{data_dir}/objects`.
    pub url: String,
    /// Settings of S3-compatible storage (`s3://` URLs).
    pub s3: StorageS3,
}

/// `[database]`: which database holds the durable state.
#[derive(Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Database {
    /// `sqlite:///path/atelier.db`, `postgres://user:password@host:port/database`, or empty
    /// for `{data_dir}/atelier.db`.
    pub url: String,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database").field("url", &redact_password(&self.url)).finish()
    }
}

/// `scheme://user:password@host/…` with the password replaced by `***`.
pub fn redact_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let (authority, tail) = rest.split_once('/').map_or((rest, None), |(a, t)| (a, Some(t)));
    let Some((userinfo, host)) = authority.rsplit_once('@') else { return url.to_string() };
    let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
    let hidden = if userinfo.contains(':') { format!("{user}:***") } else { user.to_string() };
    match tail {
        Some(t) => format!("{scheme}://{hidden}@{host}/{t}"),
        None => format!("{scheme}://{hidden}@{host}"),
    }
}

/// Which database a configuration names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatabaseKind {
    Sqlite(PathBuf),
    Postgres(String),
}

/// `[storage.s3]`: what an `s3://bucket/prefix` URL does not say. Empty strings are unset;
/// unset credentials come from the `AWS_*` environment variables.
#[derive(Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageS3 {
    pub endpoint: String,
    pub region: String,
    pub access_key_id: String,
    pub secret_access_key: String,
    /// Path-style requests; unset: path style when `endpoint` is set.
    pub path_style: Option<bool>,
}

impl std::fmt::Debug for StorageS3 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.settings().fmt(f)
    }
}

impl StorageS3 {
    pub fn settings(&self) -> atelier_blob::S3Settings {
        let set = |v: &String| Some(v.clone()).filter(|v| !v.is_empty());
        atelier_blob::S3Settings {
            endpoint: set(&self.endpoint),
            region: set(&self.region),
            access_key_id: set(&self.access_key_id),
            secret_access_key: set(&self.secret_access_key),
            path_style: self.path_style,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Worker {
    /// Nodes run at once by this process; 0 = API only.
    pub workers: usize,
    /// Tool name → the most nodes of that tool this process runs at once (within
    /// `workers`); 0 = this process never runs that tool. Tools not listed are bounded by
    /// `workers` only.
    pub tool_slots: BTreeMap<String, usize>,
    pub lease_secs: u64,
    pub heartbeat_secs: u64,
    pub poll_ms: u64,
    pub node_timeout_secs: u64,
    pub max_attempts: u32,
    pub retry_backoff_ms: u64,
    pub shutdown_grace_secs: u64,
    /// Priority lanes: the share (0 to 1) of running nodes kept for lower lanes while they
    /// have work waiting, rounded up to whole slots (at least one); 0 = strict priority.
    pub lower_lane_share: f64,
    /// Added to every built-in tool run, to mimic GPU timing in client tests.
    pub simulated_latency_ms: u64,
    /// Benchmarking only: every built-in tool returns a 1x1 PNG at once instead of doing
    /// its work, so that runs measure scheduling and the queue alone.
    pub noop_tools: bool,
    /// The learned subject model of the built-in cut-out tools: `builtin` (U²-Net-p, inside
    /// the binary), `none` (the backdrop model alone), or the path of a U²-Net-family ONNX
    /// file. Loaded at start; a model that cannot be loaded stops the start.
    pub subject_model: String,
    /// The path of an ONNX Runtime library (`libonnxruntime.so`, 1.17 or newer; the PyPI
    /// package `onnxruntime` ships one) that runs the learned networks (the subject model and
    /// `onnx` engines) instead of the built-in `tract` (U²-Net-p's forward pass 2.7× faster).
    /// Empty: tract.
    pub onnxruntime: String,
    /// Threads each forward pass on ONNX Runtime may use (1 to 64).
    pub onnxruntime_threads: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Inputs {
    /// Allow image URLs on loopback, private and link-local addresses (tests only).
    pub allow_private_addresses: bool,
    pub max_bytes: u64,
    pub timeout_secs: u64,
    pub max_redirects: usize,
    pub max_pixels: u64,
    pub max_side: u32,
    /// Most frames an animated input (GIF, WebP, APNG) may have.
    pub max_frames: u32,
    /// Most pixels over all the frames of an animated input.
    pub max_total_pixels: u64,
    /// How long an upload may be named by runs after its last upload, in hours.
    pub upload_keep_hours: u64,
}

/// `[cache]`: the result cache (docs/CLIENTS.md, "Result cache").
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Cache {
    /// Fill a node from an earlier node of the same work instead of running it (charged 0).
    pub enabled: bool,
    /// One cache for all accounts (a hit may copy another account's output). Off: each
    /// account's own.
    pub shared: bool,
    /// Entries are used for at most this many hours (0: as long as their outputs are kept).
    pub max_age_hours: u64,
    /// The most bytes of outputs the cache's entries may name; beyond it the oldest entries
    /// are dropped at each sweep (the outputs stay with their runs). 0: no cap.
    pub max_bytes: u64,
}

impl Default for Cache {
    fn default() -> Self {
        Self { enabled: true, shared: false, max_age_hours: 0, max_bytes: 0 }
    }
}

/// `[audit]`: the audit log (docs/OPERATIONS.md, "Audit log").
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Audit {
    /// Entries older than this many days are removed (an `audit.pruned` entry records how
    /// many, and the chain goes on from it). 0 = kept for ever.
    pub retention_days: u32,
}

impl Default for Audit {
    fn default() -> Self {
        Self { retention_days: 365 }
    }
}

/// `[batches]`: many items through one tool or workflow (docs/CLIENTS.md, "Batches").
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Batches {
    /// The most items one batch may have.
    pub max_items: usize,
    /// Runs of one batch queued or running at once, at most: its other items wait, so that
    /// other work and other batches take turns with it.
    pub in_flight: u32,
}

impl Default for Batches {
    fn default() -> Self {
        Self { max_items: atelier_api::settings::MAX_BATCH_ITEMS, in_flight: 16 }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Outputs {
    /// How long outputs stay readable after a run finishes, for runs whose key and request
    /// set no `retention_secs`.
    pub retention_hours: u64,
    /// The shortest `retention_secs` a key or a run may set; 0 allows zero retention.
    pub min_retention_secs: u64,
    /// The longest `retention_secs` a key or a run may set; 0: `retention_hours`.
    pub max_retention_secs: u64,
    /// Zero retention: how long after a run finished its outputs are held inline (in its
    /// nodes' rows, for its final status, webhook and events) before they are dropped.
    pub inline_hold_secs: u64,
    pub sweep_interval_secs: u64,
    /// Base URL that serves the stored objects directly (a CDN in front of the bucket
    /// prefix); output URLs become `{cdn_base_url}/{key}`. Empty: the API's `/files` route.
    pub cdn_base_url: String,
    /// `public`: an output URL is enough to read the output (the interface's CDN-style
    /// URLs); `signed`: output URLs carry an expiry and a signature, and `/files` refuses
    /// any other request (not with `cdn_base_url`, which cannot check them).
    pub access: OutputAccess,
    /// With `signed`: how long an output URL works after the status that gave it was read.
    pub url_secs: u64,
    /// With `signed`: the keys that sign output URLs (at least 32 characters each): the first
    /// signs, every one verifies. Empty: a key generated at first start under `{data_dir}`
    /// (the embedded database only; every process of a shared database needs the same keys).
    pub url_keys: Vec<String>,
}

impl Outputs {
    /// `url_keys` as the bytes that key the signatures.
    pub fn url_key_bytes(&self) -> Vec<Vec<u8>> {
        self.url_keys.iter().map(|k| k.as_bytes().to_vec()).collect()
    }
}

/// `[outputs] access`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputAccess {
    #[default]
    Public,
    Signed,
}

/// `[limits]`: request rates per API key and concurrency per account. 0 turns a limit off.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Requests per second one API key may make, sustained, to `/api/v3` and `/api/v2`
    /// (counted in each API process); beyond it, 429 `RateLimited`. 0 = no limit.
    pub requests_per_second: f64,
    /// Requests one API key may make at once before `requests_per_second` applies.
    pub burst: u32,
    /// Soft cap: nodes of one account running at once, over all workers; its other
    /// nodes wait in the queue. 0 = no cap.
    pub running_nodes_per_account: u32,
    /// Hard cap: unfinished (queued or running) runs of one account; a new run beyond it
    /// gets 429 `ConcurrencyLimited`. 0 = no cap.
    pub unfinished_runs_per_account: u32,
    /// The queue's cap: runs of one account waiting to start (no node started yet); a new
    /// run beyond it gets 429 `QueueFull`. 0 = no cap.
    pub queued_runs_per_account: u32,
    /// The same cap per API key: runs submitted with one key (or a console session signed in
    /// with it) waiting to start. 0 = no cap.
    pub queued_runs_per_key: u32,
    /// Spend limits, the default of every key or account that sets none of its own
    /// (`atelier admin key limit`, `atelier admin account limit`): tokens one key may reserve
    /// per UTC day and per UTC month; beyond them, 402 `SpendLimitReached`. 0 = no limit.
    pub daily_tokens_per_key: u64,
    pub monthly_tokens_per_key: u64,
    /// The same for all keys of one account together.
    pub daily_tokens_per_account: u64,
    pub monthly_tokens_per_account: u64,
    /// Nodes of one key running at once, over all workers; its other nodes wait in the
    /// queue. 0 = no cap.
    pub running_nodes_per_key: u32,
}

impl Limits {
    /// The spend limits' defaults as the store reads them.
    pub fn spend_defaults(&self) -> atelier_store::SpendDefaults {
        let limit = |n: u64| (n > 0).then(|| i64::try_from(n).unwrap_or(i64::MAX));
        atelier_store::SpendDefaults {
            account_daily: limit(self.daily_tokens_per_account),
            account_monthly: limit(self.monthly_tokens_per_account),
            key_daily: limit(self.daily_tokens_per_key),
            key_monthly: limit(self.monthly_tokens_per_key),
            key_concurrency: limit(u64::from(self.running_nodes_per_key)),
        }
    }
}

/// `[metrics]`: Prometheus metrics at `/metrics` (docs/OPERATIONS.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Metrics {
    /// Record metrics and serve `/metrics`.
    pub enabled: bool,
    /// When set, a scrape must send `Authorization: Bearer <token>`.
    pub token: String,
    /// When set, `/metrics` is served on this address instead of the API's (the only way a
    /// `worker` process serves it).
    pub listen: Option<SocketAddr>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self { enabled: true, token: String::new(), listen: None }
    }
}

/// `[traces]`: OpenTelemetry traces over OTLP/HTTP (docs/OPERATIONS.md), one trace per run
/// across the API and worker processes.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Traces {
    /// The collector's OTLP/HTTP base URL (`http://collector:4318`; `/v1/traces` is added);
    /// unset, no span is recorded.
    pub endpoint: Option<String>,
    /// `service.name` of this process's spans.
    pub service_name: String,
    /// The share of new traces kept, 0 to 1 (a caller's `traceparent` decides for its own).
    pub sample_ratio: f64,
}

impl Default for Traces {
    fn default() -> Self {
        Self { endpoint: None, service_name: "atelier".to_owned(), sample_ratio: 1.0 }
    }
}

/// `[webhooks]`: how run webhooks are delivered (docs/CLIENTS.md). Which addresses they may
/// go to is `[inputs]`' policy.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Webhooks {
    /// Deliveries in flight at once, per process.
    pub concurrency: usize,
    /// The wait before the second attempt; it doubles with each attempt after (at most an
    /// hour), for 24 hours.
    pub first_retry_ms: u64,
}

impl Default for Webhooks {
    fn default() -> Self {
        Self { concurrency: 32, first_retry_ms: 5000 }
    }
}

/// `[console]`: the web console's sessions and sign-in limit (docs/CONSOLE.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Console {
    /// A console session unused this many minutes ends.
    pub session_idle_minutes: u64,
    /// A console session ends this many hours after sign-in, however used.
    pub session_hours: u64,
    /// Failed sign-ins one client address may make per minute (and at once); more get 429
    /// until the minute is up. 0 = no limit.
    pub sign_in_failures_per_minute: u32,
}

impl Default for Console {
    fn default() -> Self {
        Self { session_idle_minutes: 12 * 60, session_hours: 7 * 24, sign_in_failures_per_minute: 10 }
    }
}

impl Console {
    /// The console's settings; `media` are the origins output URLs may point to.
    pub fn settings(&self, media: Vec<String>) -> atelier_api::settings::ConsoleConfig {
        atelier_api::settings::ConsoleConfig {
            media_sources: media,
            sessions: atelier_store::SessionLimits {
                idle: Duration::from_secs(self.session_idle_minutes.saturating_mul(60)),
                absolute: Duration::from_secs(self.session_hours.saturating_mul(3600)),
            },
            sign_in: atelier_api::RateLimit {
                per_second: f64::from(self.sign_in_failures_per_minute) / 60.0,
                burst: self.sign_in_failures_per_minute,
            },
        }
    }
}

impl Default for Server {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            public_url: String::new(),
            max_body_bytes: 40 * 1024 * 1024,
            default_tokens: 1000,
            max_wait_secs: 60,
            verified_keys_ms: 500,
        }
    }
}

impl Default for Storage {
    fn default() -> Self {
        Self { data_dir: PathBuf::from("data"), url: String::new(), s3: StorageS3::default() }
    }
}

/// `worker.subject_model` value for the model built into the binary.
pub const SUBJECT_MODEL_BUILTIN: &str = "builtin";
/// `worker.subject_model` value for no learned model.
pub const SUBJECT_MODEL_NONE: &str = "none";

impl Default for Worker {
    fn default() -> Self {
        Self {
            workers: 4,
            tool_slots: BTreeMap::new(),
            lease_secs: 30,
            heartbeat_secs: 10,
            poll_ms: 1000,
            node_timeout_secs: 600,
            max_attempts: 3,
            retry_backoff_ms: 2000,
            shutdown_grace_secs: 30,
            lower_lane_share: 0.1,
            simulated_latency_ms: 0,
            noop_tools: false,
            subject_model: SUBJECT_MODEL_BUILTIN.to_string(),
            onnxruntime: String::new(),
            onnxruntime_threads: 1,
        }
    }
}

impl Default for Inputs {
    fn default() -> Self {
        Self {
            allow_private_addresses: false,
            max_bytes: 20 * 1024 * 1024,
            timeout_secs: 20,
            max_redirects: 3,
            max_pixels: 40_000_000,
            max_side: 8192,
            max_frames: 100,
            max_total_pixels: 400_000_000,
            upload_keep_hours: 24,
        }
    }
}

impl Default for Outputs {
    fn default() -> Self {
        Self {
            retention_hours: 72,
            min_retention_secs: 0,
            max_retention_secs: 0,
            inline_hold_secs: 600,
            sweep_interval_secs: 600,
            cdn_base_url: String::new(),
            access: OutputAccess::Public,
            url_secs: 3600,
            url_keys: Vec::new(),
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        // Far above what a client polling every few seconds, or a test suite, sends: the
        // rate limit only stops runaway loops. Per-tenant limits are the operator's choice.
        Self {
            requests_per_second: 100.0,
            burst: 1000,
            running_nodes_per_account: 0,
            unfinished_runs_per_account: 0,
            queued_runs_per_account: 0,
            queued_runs_per_key: 0,
            daily_tokens_per_key: 0,
            monthly_tokens_per_key: 0,
            daily_tokens_per_account: 0,
            monthly_tokens_per_account: 0,
            running_nodes_per_key: 0,
        }
    }
}

/// A provider whose section `old` is read as section `new`: a section renamed in a new
/// version and still accepted under its old name. Within the provider, a key given under
/// both names keeps `new`'s value; the metadata (the file's path, the variables' prefix) is
/// the inner provider's, so errors still name where a value came from.
struct Renamed<P> {
    inner: P,
    old: &'static str,
    new: &'static str,
}

impl<P: Provider> Provider for Renamed<P> {
    fn metadata(&self) -> Metadata {
        self.inner.metadata()
    }

    fn data(&self) -> Result<Map<Profile, Dict>, figment::Error> {
        let mut data = self.inner.data()?;
        for dict in data.values_mut() {
            if let Some(old) = dict.remove(self.old) {
                let merged = match dict.remove(self.new) {
                    Some(new) => under(new, old),
                    None => old,
                };
                dict.insert(self.new.to_string(), merged);
            }
        }
        Ok(data)
    }

    fn profile(&self) -> Option<Profile> {
        self.inner.profile()
    }
}

/// `over` with the keys only `below` has added, at every depth.
fn under(over: Value, below: Value) -> Value {
    match (over, below) {
        (Value::Dict(tag, mut over), Value::Dict(_, below)) => {
            for (key, value) in below {
                let merged = match over.remove(&key) {
                    Some(kept) => under(kept, value),
                    None => value,
                };
                over.insert(key, merged);
            }
            Value::Dict(tag, over)
        }
        (over, _) => over,
    }
}

impl Config {
    /// Loads defaults, then the file (if it exists), then the environment.
    pub fn load(file: Option<&std::path::Path>) -> Result<Self, String> {
        let path = file.map(PathBuf::from).unwrap_or_else(|| PathBuf::from("atelier.toml"));
        if file.is_some() && !path.exists() {
            return Err(format!("configuration file {} does not exist", path.display()));
        }
        let config: Config = Self::figment(Toml::file(&path), Env::prefixed("ATELIER__").split("__"))
            .extract()
            .map_err(|e| {
                let mut msg = format!("invalid configuration: {e}");
                if let Some(key) = e.path.first() {
                    let env = format!("ATELIER__{}", e.path.join("__").to_uppercase());
                    msg.push_str(&format!(" (key {key}; environment variable {env})"));
                }
                msg
            })?;
        config.validate()?;
        Ok(config)
    }

    /// The defaults, then `file`, then `env`, each with `[engine]` read as `[worker]`.
    fn figment(file: impl Provider, env: impl Provider) -> Figment {
        Figment::from(Serialized::defaults(Config::default()))
            .merge(Renamed { inner: file, old: "engine", new: "worker" })
            .merge(Renamed { inner: env, old: "engine", new: "worker" })
    }

    pub fn validate(&self) -> Result<(), String> {
        let e = &self.worker;
        if e.lease_secs == 0 || e.heartbeat_secs == 0 || e.heartbeat_secs >= e.lease_secs {
            return Err("worker.heartbeat_secs must be at least 1 and less than worker.lease_secs (ATELIER__WORKER__HEARTBEAT_SECS, ATELIER__WORKER__LEASE_SECS)".into());
        }
        if let Some(unknown) = e.tool_slots.keys().find(|tool| atelier_core::tools::tool(tool).is_err()) {
            let known: Vec<&str> = atelier_core::tools::TOOLS.iter().map(|t| t.name).collect();
            return Err(format!(
                "worker.tool_slots: unknown tool {unknown:?}; the tools are {} (ATELIER__WORKER__TOOL_SLOTS__{})",
                known.join(", "),
                unknown.to_uppercase()
            ));
        }
        if e.subject_model.trim().is_empty() {
            return Err(format!(
                "worker.subject_model must be \"{SUBJECT_MODEL_BUILTIN}\", \"{SUBJECT_MODEL_NONE}\" or the path of a U2-Net ONNX file (ATELIER__WORKER__SUBJECT_MODEL)"
            ));
        }
        if !(1..=64).contains(&e.onnxruntime_threads) {
            return Err(
                "worker.onnxruntime_threads must be between 1 and 64 (ATELIER__WORKER__ONNXRUNTIME_THREADS)"
                    .into(),
            );
        }
        if e.max_attempts == 0 {
            return Err("worker.max_attempts must be at least 1 (ATELIER__WORKER__MAX_ATTEMPTS)".into());
        }
        if !(0.0..=1.0).contains(&e.lower_lane_share) {
            return Err(
                "worker.lower_lane_share must be between 0 and 1 (ATELIER__WORKER__LOWER_LANE_SHARE)".into(),
            );
        }
        let l = &self.limits;
        if !l.requests_per_second.is_finite() || l.requests_per_second < 0.0 {
            return Err("limits.requests_per_second must be 0 (no limit) or a positive number (ATELIER__LIMITS__REQUESTS_PER_SECOND)".into());
        }
        if l.requests_per_second > 0.0 && l.burst == 0 {
            return Err("limits.burst must be at least 1 while limits.requests_per_second is set (ATELIER__LIMITS__BURST)".into());
        }
        if self.console.session_idle_minutes == 0 || self.console.session_hours == 0 {
            return Err("console.session_idle_minutes and console.session_hours must be at least 1 (ATELIER__CONSOLE__SESSION_IDLE_MINUTES, ATELIER__CONSOLE__SESSION_HOURS)".into());
        }
        if self.outputs.retention_hours == 0 {
            return Err(
                "outputs.retention_hours must be at least 1 (ATELIER__OUTPUTS__RETENTION_HOURS)".into()
            );
        }
        let retention = self.retention_policy();
        if retention.min_secs > retention.max_secs {
            return Err(format!(
                "outputs.min_retention_secs ({}) must not exceed outputs.max_retention_secs ({}) (ATELIER__OUTPUTS__MIN_RETENTION_SECS, ATELIER__OUTPUTS__MAX_RETENTION_SECS)",
                retention.min_secs, retention.max_secs
            ));
        }
        if !(1..=24 * 3600).contains(&self.outputs.inline_hold_secs) {
            return Err(
                "outputs.inline_hold_secs must be from 1 to 86400 (ATELIER__OUTPUTS__INLINE_HOLD_SECS)"
                    .into(),
            );
        }
        if !(1..=24 * 365).contains(&self.inputs.upload_keep_hours) {
            return Err("inputs.upload_keep_hours must be from 1 to 8760 (a year) (ATELIER__INPUTS__UPLOAD_KEEP_HOURS)".into());
        }
        if !(1..=1_000_000).contains(&self.batches.max_items) {
            return Err("batches.max_items must be from 1 to 1000000 (ATELIER__BATCHES__MAX_ITEMS)".into());
        }
        if !(1..=10_000).contains(&self.batches.in_flight) {
            return Err("batches.in_flight must be from 1 to 10000 (ATELIER__BATCHES__IN_FLIGHT)".into());
        }
        self.prices()?;
        self.routing().validate()?;
        self.database().map_err(|e| format!("database.url: {e} (ATELIER__DATABASE__URL, --database-url)"))?;
        self.storage_location()
            .map_err(|e| format!("storage.url: {e} (ATELIER__STORAGE__URL, --storage-url)"))?;
        let cdn = &self.outputs.cdn_base_url;
        if !cdn.is_empty() && !cdn.starts_with("http://") && !cdn.starts_with("https://") {
            return Err(
                "outputs.cdn_base_url must start with http:// or https:// (ATELIER__OUTPUTS__CDN_BASE_URL)"
                    .into(),
            );
        }
        if self.outputs.access == OutputAccess::Signed {
            if !cdn.is_empty() {
                return Err("outputs.access = \"signed\" cannot be used with outputs.cdn_base_url: a CDN \
                            cannot check the signatures (ATELIER__OUTPUTS__ACCESS)"
                    .into());
            }
            if !(1..=7 * 24 * 3600).contains(&self.outputs.url_secs) {
                return Err("outputs.url_secs must be from 1 to 604800 (ATELIER__OUTPUTS__URL_SECS)".into());
            }
            if !self.outputs.url_keys.is_empty() {
                file_urls::UrlSigner::new(self.outputs.url_key_bytes(), self.outputs.url_secs).map_err(|e| {
                    format!(
                        "outputs.url_keys: {e} (make one with `openssl rand -hex 32`) (ATELIER__OUTPUTS__URL_KEYS)"
                    )
                })?;
            }
            if self.outputs.url_keys.is_empty() && matches!(self.database(), Ok(DatabaseKind::Postgres(_))) {
                return Err(
                    "outputs.access = \"signed\" with a shared database needs outputs.url_keys: every \
                            API process must sign with the same keys (ATELIER__OUTPUTS__URL_KEYS)"
                        .into(),
                );
            }
        }
        if !self.server.public_url.is_empty() && !self.server.public_url.starts_with("http") {
            return Err(
                "server.public_url must start with http:// or https:// (ATELIER__SERVER__PUBLIC_URL)".into(),
            );
        }
        Ok(())
    }

    /// The price table: the built-in prices with `[prices]` applied.
    pub fn prices(&self) -> Result<Prices, String> {
        Prices::configured(&self.prices)
            .map_err(|e| format!("{e} (ATELIER__PRICES__TOOL, ATELIER__PRICES__TOOL__KEY)"))
    }

    /// `[engines]` and `[tools]`.
    pub fn routing(&self) -> atelier_engines::Routing {
        atelier_engines::Routing { engines: self.engines.clone(), tools: self.tools.clone() }
    }

    pub fn public_url(&self) -> String {
        if self.server.public_url.is_empty() {
            format!("http://{}", self.server.listen)
        } else {
            self.server.public_url.trim_end_matches('/').to_string()
        }
    }

    /// The database: `database.url`, or `{data_dir}/atelier.db` when it is empty.
    pub fn database(&self) -> Result<DatabaseKind, String> {
        let url = self.database.url.trim();
        if url.is_empty() {
            return Ok(DatabaseKind::Sqlite(self.storage.data_dir.join("atelier.db")));
        }
        if let Some(path) = url.strip_prefix("sqlite://") {
            if !path.starts_with('/') {
                return Err(format!(
                    "database URL {url:?}: a sqlite URL needs an absolute path (sqlite:///path/atelier.db)"
                ));
            }
            return Ok(DatabaseKind::Sqlite(PathBuf::from(path)));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(DatabaseKind::Postgres(url.to_string()));
        }
        Err(format!("database URL {url:?}: expected sqlite:///path or postgres://…"))
    }

    /// Where outputs are stored: `storage.url`, or `{data_dir}/objects` when it is empty.
    pub fn storage_location(&self) -> Result<atelier_blob::Location, atelier_blob::BlobError> {
        if self.storage.url.is_empty() {
            Ok(atelier_blob::Location::Local(self.storage.data_dir.join("objects")))
        } else {
            atelier_blob::Location::parse(&self.storage.url)
        }
    }

    pub fn retention(&self) -> Duration {
        Duration::from_secs(self.outputs.retention_hours * 3600)
    }

    /// The `retention_secs` keys and runs may set: `[outputs] min_retention_secs` to
    /// `max_retention_secs` (by default, `retention_hours`).
    pub fn retention_policy(&self) -> atelier_api::RetentionPolicy {
        let max_secs = match self.outputs.max_retention_secs {
            0 => self.retention().as_secs(),
            secs => secs,
        };
        atelier_api::RetentionPolicy { min_secs: self.outputs.min_retention_secs, max_secs }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_database(url: &str) -> Config {
        let mut config = Config::default();
        config.database.url = url.to_string();
        config
    }

    #[test]
    fn database_urls_name_a_backend_or_say_why_not() {
        assert_eq!(with_database("").database(), Ok(DatabaseKind::Sqlite(PathBuf::from("data/atelier.db"))));
        assert_eq!(
            with_database("sqlite:///srv/a.db").database(),
            Ok(DatabaseKind::Sqlite("/srv/a.db".into()))
        );
        let pg = "postgres://atelier:pw@db:5432/atelier";
        assert_eq!(with_database(pg).database(), Ok(DatabaseKind::Postgres(pg.into())));
        assert!(matches!(with_database("postgresql://db/x").database(), Ok(DatabaseKind::Postgres(_))));
        for (url, why) in [("sqlite://rel.db", "absolute path"), ("mysql://db/x", "expected sqlite")] {
            let err = with_database(url).validate().unwrap_err();
            assert!(err.contains(why) && err.contains("ATELIER__DATABASE__URL"), "{url}: {err}");
        }
    }

    #[test]
    fn passwords_never_reach_debug_output() {
        assert_eq!(redact_password("postgres://u:secret@h:5432/db"), "postgres://u:***@h:5432/db");
        assert_eq!(redact_password("postgres://u:p@ss@h/db?x=1"), "postgres://u:***@h/db?x=1");
        assert_eq!(redact_password("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(redact_password("postgres://h/db"), "postgres://h/db");
        assert_eq!(redact_password("not a url"), "not a url");
        let text = format!("{:?}", with_database("postgres://u:hunter2@h/db"));
        assert!(!text.contains("hunter2"), "{text}");
        let mut config = Config::default();
        config.storage.s3.secret_access_key = "hunter3".into();
        assert!(!format!("{config:?}").contains("hunter3"));
    }

    #[test]
    fn the_example_file_with_every_setting_uncommented_is_valid() {
        let text = include_str!("../../../atelier.example.toml");
        let uncommented: String = text
            .lines()
            .map(|line| {
                // Settings, and the headers of the commented example entries ([engines.*], [tools.*]).
                let setting = line.strip_prefix("# ").filter(|rest| {
                    rest.starts_with('[')
                        || rest.split_once(" = ").is_some_and(|(key, _)| {
                            !key.is_empty() && key.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
                        })
                });
                setting.unwrap_or(line).to_string() + "\n"
            })
            .collect();
        let config: Config = Config::figment(Toml::string(&uncommented), Serialized::defaults(Dict::new()))
            .extract()
            .unwrap_or_else(|e| panic!("{e}\n{uncommented}"));
        config.validate().unwrap();
        assert_eq!(config.storage.s3.endpoint, "http://127.0.0.1:9000");
        let tool_slots: Vec<(&str, usize)> =
            config.worker.tool_slots.iter().map(|(tool, &n)| (tool.as_str(), n)).collect();
        assert_eq!(tool_slots, [("video", 1), ("virtual_tryon_pro", 2)]);
        assert_eq!(config.engines.keys().collect::<Vec<_>>(), ["birefnet", "gpu1"]);
        assert_eq!(config.tools["upscale"].inputs["image"].node.as_deref(), Some("1"));
        let prices = config.prices().unwrap();
        assert_eq!(prices, atelier_core::tools::Prices::default(), "the example shows the built-in prices");
    }

    #[test]
    fn limits_are_checked_and_zero_turns_them_off() {
        let mut config = Config::default();
        assert_eq!((config.limits.requests_per_second, config.limits.burst), (100.0, 1000));
        config.limits = Limits { requests_per_second: 0.0, burst: 0, ..Limits::default() };
        config.validate().expect("0 = no rate limit, burst unused");
        for (rate, burst, part) in [
            (-1.0, 10, "ATELIER__LIMITS__REQUESTS_PER_SECOND"),
            (f64::NAN, 10, "ATELIER__LIMITS__REQUESTS_PER_SECOND"),
            (0.5, 0, "ATELIER__LIMITS__BURST"),
        ] {
            config.limits.requests_per_second = rate;
            config.limits.burst = burst;
            let err = config.validate().unwrap_err();
            assert!(err.contains(part), "{rate}/{burst}: {err}");
        }
    }

    #[test]
    fn the_old_engine_section_is_read_as_worker() {
        // Two sources, the later one standing for the environment.
        let file = |text: &str| Toml::string(text);
        let env = |section: &str, workers: u64| Toml::string(&format!("[{section}]\nworkers = {workers}\n"));
        let none = || Toml::string("");
        let load = |file, env| -> Config { Config::figment(file, env).extract().unwrap() };

        let old = load(file("[engine]\nworkers = 2\n[engine.tool_slots]\nvideo = 1\n"), none());
        assert_eq!((old.worker.workers, old.worker.tool_slots.get("video")), (2, Some(&1)));
        // Both names in one source: [worker] wins key by key, at every depth.
        let both = load(
            file(
                "[engine]\nworkers = 2\nlease_secs = 40\n[engine.tool_slots]\nvideo = 1\nupscale = 5\n\
                 [worker]\nworkers = 3\n[worker.tool_slots]\nupscale = 2\n",
            ),
            none(),
        );
        assert_eq!((both.worker.workers, both.worker.lease_secs), (3, 40));
        let slots: Vec<(&str, usize)> =
            both.worker.tool_slots.iter().map(|(t, &n)| (t.as_str(), n)).collect();
        assert_eq!(slots, [("upscale", 2), ("video", 1)]);
        // A later source wins whichever name either uses (ATELIER__ENGINE__WORKERS over [worker]).
        assert_eq!(load(file("[worker]\nworkers = 3\n"), env("engine", 7)).worker.workers, 7);
        assert_eq!(load(file("[engine]\nworkers = 3\n"), env("worker", 8)).worker.workers, 8);
        // A wrong value under the old name is reported under the new one.
        let err =
            Config::figment(file("[engine]\nworkers = \"many\"\n"), none()).extract::<Config>().unwrap_err();
        assert_eq!(err.path, ["worker", "workers"]);
    }

    #[test]
    fn tool_slots_name_known_tools_only() {
        let mut config = Config::default();
        config.worker.tool_slots = BTreeMap::from([("video".into(), 0), ("upscale".into(), 2)]);
        config.validate().unwrap();
        config.worker.tool_slots.insert("vidoe".into(), 1);
        let err = config.validate().unwrap_err();
        for part in
            ["worker.tool_slots", "\"vidoe\"", "background_removal", "ATELIER__WORKER__TOOL_SLOTS__VIDOE"]
        {
            assert!(err.contains(part), "{part} missing from: {err}");
        }
    }

    #[test]
    fn signed_output_urls_need_keys_that_every_process_shares_and_no_cdn() {
        let mut config = Config::default();
        config.outputs.access = OutputAccess::Signed;
        config.validate().expect("the embedded database makes its own key");
        let check = |config: &Config, part: &str| {
            let err = config.validate().unwrap_err();
            assert!(err.contains(part), "{part} missing from: {err}");
        };
        let mut shared = config.clone();
        shared.database.url = "postgres://db/atelier".into();
        check(&shared, "ATELIER__OUTPUTS__URL_KEYS");
        shared.outputs.url_keys = vec!["k".repeat(32)];
        shared.validate().unwrap();
        shared.outputs.url_keys.push("short".into());
        check(&shared, "key 2 is shorter than 32");
        for secs in [0, 604_801] {
            config.outputs.url_secs = secs;
            check(&config, "ATELIER__OUTPUTS__URL_SECS");
        }
        config.outputs.url_secs = 3600;
        config.outputs.cdn_base_url = "https://cdn.example.com".into();
        check(&config, "cannot be used with outputs.cdn_base_url");
        let from_file: Config = Config::figment(
            Toml::string("[outputs]\naccess = \"signed\"\nurl_keys = [\"a\", \"b\"]\n"),
            Toml::string(""),
        )
        .extract()
        .unwrap();
        assert_eq!((from_file.outputs.access, from_file.outputs.url_keys.len()), (OutputAccess::Signed, 2));
        let err = Config::figment(Toml::string("[outputs]\naccess = \"private\"\n"), Toml::string(""))
            .extract::<Config>()
            .unwrap_err();
        assert!(err.to_string().contains("public"), "{err}");
    }

    #[test]
    fn uploads_are_kept_from_an_hour_to_a_year() {
        let mut config = Config::default();
        for hours in [1, 24, 8760] {
            config.inputs.upload_keep_hours = hours;
            config.validate().unwrap();
        }
        for hours in [0, 8761] {
            config.inputs.upload_keep_hours = hours;
            let err = config.validate().unwrap_err();
            assert!(err.contains("ATELIER__INPUTS__UPLOAD_KEEP_HOURS"), "{err}");
        }
    }
}
