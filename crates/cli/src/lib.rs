//! The `atelier` program's wiring: configuration, system templates, and the
//! assembly of store, blob store, workers and HTTP server into one process.
//! Logic lives in the library crates; this crate only connects them.
//!
//! ## What is where
//!
//! Configuration layering (`config.rs`), the shipped system templates (`templates.rs`, from
//! `templates/*.json`), assembly of one process (`lib.rs`, starting the metrics recorder and
//! `[metrics] listen`; logs and the traces exporter in `main.rs`), the commands (`main.rs`;
//! `admin migrate-data` in `migrate_data.rs`; `atelier run`, a client of a server over
//! `atelier-client`, in `run_cmd.rs`).
//!
//! Not here: logic beyond wiring.

pub mod batch_cmd;
pub mod config;
pub mod migrate_data;
pub mod purge;
pub mod run_cmd;
pub mod templates;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use atelier_api::settings::MetricsConfig;
use atelier_api::{ApiConfig, AppState, RateLimit};
use atelier_blob::BlobStore;
use atelier_inputs::{Fetcher, InputPolicy};
use atelier_provenance::{Provenance, Trust};
use atelier_store::{PgStore, SharedStore, SqliteStore, StoreConfig};
use atelier_tools::{BuiltinOptions, Registry};
use atelier_worker::{CompletedBody, Deliverer, DeliveryConfig};
use atelier_worker::{Maintenance, WorkerConfig, Workers};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use config::{Config, DatabaseKind};

/// Opens the database named by `database.url` (by default `{data_dir}/atelier.db`), creating
/// and migrating it.
pub async fn open_store(config: &Config) -> anyhow::Result<SharedStore> {
    let store_config = StoreConfig {
        retention: config.retention(),
        inline_hold: Duration::from_secs(config.outputs.inline_hold_secs),
        max_attempts: config.worker.max_attempts,
        max_unfinished_runs: config.limits.unfinished_runs_per_account,
        max_queued_runs: config.limits.queued_runs_per_account,
        max_queued_runs_per_key: config.limits.queued_runs_per_key,
        max_running_nodes: config.limits.running_nodes_per_account,
        lower_lane_share_permille: (config.worker.lower_lane_share * 1000.0).round() as u32,
        spend: config.limits.spend_defaults(),
    };
    match config.database().map_err(anyhow::Error::msg)? {
        DatabaseKind::Sqlite(path) => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating data directory {}", dir.display()))?;
            }
            let store = SqliteStore::open(&path, store_config)
                .await
                .with_context(|| format!("opening the database {}", path.display()))?;
            Ok(Arc::new(store))
        }
        DatabaseKind::Postgres(url) => {
            let store = PgStore::connect(&url, store_config)
                .await
                .with_context(|| format!("connecting to the database {}", config::redact_password(&url)))?;
            Ok(Arc::new(store))
        }
    }
}

/// Opens object storage: `storage.url` (local directory or S3-compatible bucket), by default
/// `{data_dir}/objects`; with `[outputs] access = "signed"`, output URLs signed.
pub fn open_blob(config: &Config) -> anyhow::Result<BlobStore> {
    let location = config.storage_location()?;
    let cdn = Some(config.outputs.cdn_base_url.as_str()).filter(|u| !u.is_empty());
    let blob = BlobStore::open(&location, &config.storage.s3.settings(), &config.public_url(), cdn)
        .with_context(|| format!("opening object storage at {location:?}"))?;
    Ok(match url_signer(config)? {
        Some(signer) => blob.with_signed_urls(signer),
        None => blob,
    })
}

/// What signs output URLs with `[outputs] access = "signed"`: `outputs.url_keys`, or the key
/// kept in `{data_dir}/url-key` (made at first start, readable by its owner only).
fn url_signer(config: &Config) -> anyhow::Result<Option<atelier_blob::UrlSigner>> {
    use atelier_blob::UrlSigner;
    if config.outputs.access != config::OutputAccess::Signed {
        return Ok(None);
    }
    let keys: Vec<Vec<u8>> = if config.outputs.url_keys.is_empty() {
        let path = config.storage.data_dir.join("url-key");
        vec![generated_secret(&path, UrlSigner::new_key)?.into_bytes()]
    } else {
        config.outputs.url_key_bytes()
    };
    UrlSigner::new(keys, config.outputs.url_secs).map(Some).map_err(anyhow::Error::msg)
}

/// The secret kept in the file at `path`, made by `make` when there is none yet. A new one is
/// written whole to a file of its own (readable by its owner only) and then linked to `path`,
/// which fails if another process linked one first: every process keeps the first, and none
/// ever reads a file half written.
fn generated_secret(path: &std::path::Path, make: impl FnOnce() -> String) -> anyhow::Result<String> {
    use std::io::Write as _;
    let read = || -> anyhow::Result<String> {
        let secret = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let secret = secret.trim().to_string();
        anyhow::ensure!(!secret.is_empty(), "{} is empty: delete it to make a new key", path.display());
        Ok(secret)
    };
    if path.exists() {
        return read();
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let staged = path.with_extension(format!("{}.new", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let secret = make();
    let mut file = options.open(&staged).with_context(|| format!("creating {}", staged.display()))?;
    file.write_all(secret.as_bytes())
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", staged.display()))?;
    let linked = std::fs::hard_link(&staged, path);
    let _ = std::fs::remove_file(&staged);
    match linked {
        Ok(()) => {
            tracing::info!(path = %path.display(), "generated a key for signing output URLs");
            Ok(secret)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read(),
        Err(e) => Err(e).with_context(|| format!("creating {}", path.display())),
    }
}

pub fn input_policy(config: &Config) -> InputPolicy {
    InputPolicy {
        allow_private_addresses: config.inputs.allow_private_addresses,
        max_bytes: config.inputs.max_bytes,
        timeout: Duration::from_secs(config.inputs.timeout_secs),
        max_redirects: config.inputs.max_redirects,
    }
}

/// The built-in engine with its learned subject model loaded (`worker.subject_model`, on
/// `worker.onnxruntime` when set).
pub fn builtin_tools(config: &Config) -> anyhow::Result<Registry> {
    let runtime = network_runtime(&config.worker)?;
    Ok(Registry::builtin(BuiltinOptions {
        simulated_latency: Duration::from_millis(config.worker.simulated_latency_ms),
        noop: config.worker.noop_tools,
        limits: atelier_imaging::Limits {
            max_pixels: config.inputs.max_pixels,
            max_side: config.inputs.max_side,
            max_frames: config.inputs.max_frames,
            max_total_pixels: config.inputs.max_total_pixels,
        },
        subject: subject_model(&config.worker.subject_model, &runtime)?,
    }))
}

/// What runs the learned networks: ONNX Runtime from `worker.onnxruntime` when set (loaded once
/// per process, [`atelier_saliency::OnnxRuntime::load`]), else tract.
pub fn network_runtime(worker: &config::Worker) -> anyhow::Result<atelier_saliency::Runtime> {
    let library = worker.onnxruntime.trim();
    if library.is_empty() {
        return Ok(atelier_saliency::Runtime::Tract);
    }
    let ort = atelier_saliency::OnnxRuntime::load(std::path::Path::new(library), worker.onnxruntime_threads)
        .map_err(|e| {
            anyhow::anyhow!(
                "{e} (worker.onnxruntime, ATELIER__WORKER__ONNXRUNTIME; leave it empty for the built-in tract)"
            )
        })?;
    Ok(atelier_saliency::Runtime::OnnxRuntime(ort))
}

/// Loads the learned subject model named by `worker.subject_model` on `runtime`: `builtin`
/// (shared by every service in the process that uses the same runtime: loading it is the same
/// work each time), `none`, or a file.
pub fn subject_model(
    setting: &str,
    runtime: &atelier_saliency::Runtime,
) -> anyhow::Result<Option<Arc<dyn atelier_imaging::SubjectModel>>> {
    use atelier_imaging::SubjectModel as _;
    type Shared = std::sync::OnceLock<Arc<atelier_saliency::U2Net>>;
    static BUILTIN: [Shared; 2] = [Shared::new(), Shared::new()];
    let hint = || {
        format!(
            "cannot load the subject model (worker.subject_model = {setting:?}; \
             ATELIER__WORKER__SUBJECT_MODEL takes \"{}\", \"{}\" for the backdrop model alone, \
             or the path of a U2-Net ONNX file)",
            config::SUBJECT_MODEL_BUILTIN,
            config::SUBJECT_MODEL_NONE
        )
    };
    let shared = match runtime {
        atelier_saliency::Runtime::Tract => &BUILTIN[0],
        atelier_saliency::Runtime::OnnxRuntime(_) => &BUILTIN[1],
    };
    let model: Arc<atelier_saliency::U2Net> = match setting.trim() {
        config::SUBJECT_MODEL_NONE => return Ok(None),
        config::SUBJECT_MODEL_BUILTIN => match shared.get() {
            Some(model) => model.clone(),
            None => {
                let model = Arc::new(atelier_saliency::U2Net::embedded_on(runtime).with_context(hint)?);
                shared.get_or_init(|| model).clone()
            }
        },
        path => Arc::new(
            atelier_saliency::U2Net::from_file_on(runtime, std::path::Path::new(path)).with_context(hint)?,
        ),
    };
    tracing::info!(model = model.name(), ?runtime, "subject model loaded");
    Ok(Some(model))
}

/// The configured model servers (`[engines]`, `[tools]`), checked against the live servers
/// when any tool is routed to one: a server that answers and finds the configuration wrong
/// stops the start with what is wrong; one that does not answer (down, starting) is only
/// reported, and its nodes wait and retry until it is healthy.
pub async fn engines(config: &Config) -> anyhow::Result<atelier_engines::Engines> {
    use atelier_engines::check::Outcome;
    let engines = atelier_engines::Engines::new(config.routing())
        .map_err(anyhow::Error::msg)?
        .with_network_runtime(network_runtime(&config.worker)?);
    if !engines.any_routed() {
        return Ok(engines);
    }
    let mut wrong = Vec::new();
    for finding in atelier_engines::check::check(&engines).await {
        match finding.outcome {
            Outcome::Valid => {
                tracing::info!(tool = %finding.tool, engine = %finding.endpoint, "engine checked")
            }
            Outcome::Unreachable(why) => tracing::warn!(
                tool = %finding.tool, engine = %finding.endpoint, why,
                "engine not reachable; its nodes wait until it is"
            ),
            Outcome::Invalid(problems) => {
                for problem in problems {
                    wrong.push(format!("tools.{} on engines.{}: {problem}", finding.tool, finding.endpoint));
                }
            }
        }
    }
    if !wrong.is_empty() {
        anyhow::bail!("the engine configuration does not fit its servers:\n  {}", wrong.join("\n  "));
    }
    Ok(engines)
}

/// A running service: HTTP server, workers and maintenance.
pub struct Running {
    pub addr: SocketAddr,
    /// Where `/metrics` is served when `[metrics] listen` moves it off the API's address.
    pub metrics_addr: Option<SocketAddr>,
    pub store: SharedStore,
    pub blob: BlobStore,
    tasks: Tasks,
}

impl Running {
    /// Stops accepting requests and work, lets in-flight nodes finish within
    /// the grace period, and waits for everything to stop.
    pub async fn shutdown(self) {
        self.tasks.stop().await;
    }

    pub fn token(&self) -> CancellationToken {
        self.tasks.shutdown.clone()
    }
}

/// What a process runs, and the token that stops it: the one handle of `serve`, `worker` and
/// a pull worker.
struct Tasks {
    shutdown: CancellationToken,
    handles: Vec<JoinHandle<()>>,
}

impl Tasks {
    /// Cancels the token, then waits for every task to end.
    async fn stop(self) {
        self.shutdown.cancel();
        for task in self.handles {
            let _ = task.await;
        }
    }
}

/// The origins output URLs point to other than the API's own (a CDN, a public URL), for the
/// console's Content-Security-Policy.
fn media_origins(config: &Config) -> Vec<String> {
    [config.outputs.cdn_base_url.as_str(), config.server.public_url.as_str()]
        .iter()
        .filter_map(|u| url::Url::parse(u).ok())
        .map(|u| u.origin().ascii_serialization())
        .filter(|o| o != "null")
        .collect()
}

/// Starts the service on an already-open store. `tools` defaults to the
/// built-in engine.
pub async fn start(config: &Config, store: SharedStore, tools: Option<Registry>) -> anyhow::Result<Running> {
    templates::install(store.as_ref()).await?;
    let listener = tokio::net::TcpListener::bind(config.server.listen)
        .await
        .with_context(|| format!("listening on {}", config.server.listen))?;
    let addr = listener.local_addr()?;
    // Output URLs derive from the bound address when no public URL is set
    // (the configured port may be 0).
    let mut config = config.clone();
    config.server.listen = addr;
    let blob = open_blob(&config)?;
    let policy = input_policy(&config);
    let engines = engines(&config).await?;
    let shutdown = CancellationToken::new();
    let mut tasks = Vec::new();
    let metrics = metrics(&config, &shutdown, &mut tasks)?;
    let (provenance, signing) = provenance(&config)?;
    let api_config = ApiConfig {
        max_body_bytes: config.server.max_body_bytes,
        inputs: policy.clone(),
        file_max_age_secs: config.retention().as_secs(),
        rate_limit: RateLimit { per_second: config.limits.requests_per_second, burst: config.limits.burst },
        prices: config.prices().map_err(anyhow::Error::msg)?,
        engines: atelier_api::Engines(engines.directory()),
        console: config.console.settings(media_origins(&config)),
        max_wait_secs: config.server.max_wait_secs.min(atelier_api::settings::MAX_WAIT_SECS),
        verified_keys: Duration::from_millis(config.server.verified_keys_ms),
        metrics: metrics.clone().filter(|_| config.metrics.listen.is_none()),
        uploads: atelier_api::UploadPolicy {
            keep: Duration::from_secs(config.inputs.upload_keep_hours.saturating_mul(3600)),
            max_pixels: config.inputs.max_pixels,
            max_side: config.inputs.max_side,
        },
        max_batch_items: config.batches.max_items,
        provenance: signing,
        retention: config.retention_policy(),
    };
    let engine_directory = api_config.engines.clone();
    let state = AppState::new(store.clone(), blob.clone(), api_config);
    let metrics_addr = match (metrics, config.metrics.listen) {
        (Some(metrics), Some(addr)) => {
            Some(serve_metrics(addr, &store, &blob, engine_directory, metrics, &shutdown, &mut tasks).await?)
        }
        _ => None,
    };

    let app = atelier_api::router(state);
    let stop = shutdown.clone();
    tasks.push(tokio::spawn(async move {
        // With each connection's address: failed console sign-ins are counted per address.
        let app = app.into_make_service_with_connect_info::<SocketAddr>();
        let served =
            axum::serve(listener, app).with_graceful_shutdown(async move { stop.cancelled().await }).await;
        if let Err(e) = served {
            tracing::error!(error = %e, "HTTP server stopped");
        }
    }));

    tasks.extend(engines.watch(shutdown.clone()));
    // Webhooks from model servers reach this process at its public URL.
    let public_url = config.public_url();
    let wiring = Wiring { engines: &engines, callbacks_at: Some(&public_url), provenance };
    spawn_workers(&config, &store, &blob, tools, wiring, &shutdown, &mut tasks)?;
    Ok(Running { addr, metrics_addr, store, blob, tasks: Tasks { shutdown, handles: tasks } })
}

/// Starts a worker process's part of the service on an already-open store: the
/// workers (`worker.workers` slots) and the maintenance services, no HTTP. `tools` defaults
/// to the built-in engine.
pub async fn start_worker(
    config: &Config,
    store: SharedStore,
    tools: Option<Registry>,
) -> anyhow::Result<WorkerProcess> {
    let blob = open_blob(config)?;
    let engines = engines(config).await?;
    let shutdown = CancellationToken::new();
    let mut tasks = engines.watch(shutdown.clone());
    // A worker has no API: its metrics are served only on `[metrics] listen`.
    let metrics_addr = match (metrics(config, &shutdown, &mut tasks)?, config.metrics.listen) {
        (Some(metrics), Some(addr)) => {
            let directory = atelier_api::Engines(engines.directory());
            Some(serve_metrics(addr, &store, &blob, directory, metrics, &shutdown, &mut tasks).await?)
        }
        _ => None,
    };
    let (provenance, _) = provenance(config)?;
    let wiring = Wiring { engines: &engines, callbacks_at: None, provenance };
    spawn_workers(config, &store, &blob, tools, wiring, &shutdown, &mut tasks)?;
    Ok(WorkerProcess { metrics_addr, tasks: Tasks { shutdown, handles: tasks } })
}

/// This process's metrics when `[metrics] enabled`: the recorder installed (once per
/// process) and kept drained until `shutdown`, and the store's own series turned on.
fn metrics(
    config: &Config,
    shutdown: &CancellationToken,
    tasks: &mut Vec<JoinHandle<()>>,
) -> anyhow::Result<Option<MetricsConfig>> {
    if !config.metrics.enabled {
        return Ok(None);
    }
    let handle = atelier_telemetry::metrics::install().map_err(|e| anyhow::anyhow!("metrics: {e}"))?;
    atelier_store::enable_metrics();
    let stop = shutdown.clone();
    tasks.push(tokio::spawn(atelier_telemetry::metrics::upkeep(handle.clone(), async move {
        stop.cancelled().await
    })));
    let token = (!config.metrics.token.is_empty()).then(|| Arc::from(config.metrics.token.as_str()));
    Ok(Some(MetricsConfig { handle, token }))
}

/// Serves `/metrics` alone on `addr` (`[metrics] listen`) until `shutdown`; the bound address.
async fn serve_metrics(
    addr: SocketAddr,
    store: &SharedStore,
    blob: &BlobStore,
    engines: atelier_api::Engines,
    metrics: MetricsConfig,
    shutdown: &CancellationToken,
    tasks: &mut Vec<JoinHandle<()>>,
) -> anyhow::Result<SocketAddr> {
    let listener =
        tokio::net::TcpListener::bind(addr).await.with_context(|| format!("metrics listening on {addr}"))?;
    let bound = listener.local_addr()?;
    let config = ApiConfig { engines, metrics: Some(metrics), ..ApiConfig::default() };
    let app = atelier_api::metrics::router(AppState::new(store.clone(), blob.clone(), config));
    let stop = shutdown.clone();
    tasks.push(tokio::spawn(async move {
        let served =
            axum::serve(listener, app).with_graceful_shutdown(async move { stop.cancelled().await }).await;
        if let Err(e) = served {
            tracing::error!(error = %e, "the metrics listener stopped");
        }
    }));
    Ok(bound)
}

/// A running `atelier worker`: workers and maintenance.
pub struct WorkerProcess {
    /// Where `/metrics` is served (`[metrics] listen`).
    pub metrics_addr: Option<SocketAddr>,
    tasks: Tasks,
}

impl WorkerProcess {
    /// Stops claiming work, lets in-flight nodes finish within the grace period (or releases
    /// them), and waits for everything to stop.
    pub async fn shutdown(self) {
        self.tasks.stop().await;
    }

    pub fn token(&self) -> CancellationToken {
        self.tasks.shutdown.clone()
    }
}

/// How a process's workers reach the model servers, and sign what they make.
struct Wiring<'a> {
    engines: &'a atelier_engines::Engines,
    /// Where model servers' callbacks reach this process (one that serves HTTP).
    callbacks_at: Option<&'a str>,
    provenance: Option<Arc<Provenance>>,
}

/// The signer of this process's outputs (`[provenance]`), and what `/readyz` says of it. A
/// generated certificate is made under `{data_dir}/provenance` at first start.
pub fn provenance(
    config: &Config,
) -> anyhow::Result<(Option<Arc<Provenance>>, atelier_wire::probes::Provenance)> {
    use atelier_wire::probes::{Provenance as State, Signing};
    let opened =
        Provenance::open(&config.provenance, &config.storage.data_dir).map_err(anyhow::Error::msg)?;
    let state = match opened.as_ref().map(Provenance::trust) {
        None => State::off(),
        Some(Trust::Configured) => State { signing: Signing::Configured, note: None },
        Some(Trust::Generated { dir }) => {
            let note = format!(
                "outputs are signed with a certificate this service generated ({}): validators show \
                 their Content Credentials as valid but from an unknown signer; set [provenance] \
                 certificate and private_key to sign as your organisation (docs/PROVENANCE.md)",
                dir.join("ca.pem").display()
            );
            tracing::warn!("{note}");
            State { signing: Signing::Generated, note: Some(note) }
        }
    };
    Ok((opened.map(Arc::new), state))
}

/// The workers' settings from `[worker]` (or its old name `[engine]`).
fn worker_config(config: &Config, provenance: Option<Arc<Provenance>>) -> WorkerConfig {
    WorkerConfig {
        provenance,
        slots: config.worker.workers,
        tool_slots: config.worker.tool_slots.clone(),
        lease: Duration::from_secs(config.worker.lease_secs),
        heartbeat: Duration::from_secs(config.worker.heartbeat_secs),
        poll: Duration::from_millis(config.worker.poll_ms.max(10)),
        node_timeout: Duration::from_secs(config.worker.node_timeout_secs),
        retry_backoff: Duration::from_millis(config.worker.retry_backoff_ms),
        shutdown_grace: Duration::from_secs(config.worker.shutdown_grace_secs),
        cache: atelier_worker::CacheSettings {
            enabled: config.cache.enabled,
            shared: config.cache.shared,
            max_age: cache_max_age(config),
        },
    }
}

/// How long result cache entries are used: `cache.max_age_hours`, or the outputs' retention.
fn cache_max_age(config: &Config) -> Duration {
    match config.cache.max_age_hours {
        0 => config.retention(),
        hours => Duration::from_secs(hours.saturating_mul(3600)),
    }
}

/// Starts a pull worker: workers that lease the tasks of `token`'s tools from the API at
/// `server` (`/worker/v1`, [`atelier_worker::remote`]) and run them on this process's tools
/// (`[engines]` and `[tools]` route them to the model servers beside it). No database or
/// storage is opened, and no maintenance or webhook delivery runs here.
pub async fn start_pull_worker(
    config: &Config,
    server: &str,
    token: &str,
    tools: Option<Registry>,
) -> anyhow::Result<WorkerProcess> {
    let queue = atelier_worker::remote::Remote::new(server, token).map_err(anyhow::Error::msg)?;
    let engines = engines(config).await?;
    let shutdown = CancellationToken::new();
    let mut tasks = engines.watch(shutdown.clone());
    let fetcher =
        Arc::new(Fetcher::new(input_policy(config)).map_err(|e| anyhow::anyhow!("input fetcher: {e}"))?);
    let mut tools = match tools {
        Some(tools) => tools,
        None => builtin_tools(config)?,
    };
    engines.install(&mut tools, fetcher.clone(), None).map_err(anyhow::Error::msg)?;
    let (provenance, _) = provenance(config)?;
    let workers = Workers::with_queue(Arc::new(queue), tools, fetcher, worker_config(config, provenance));
    tasks.push(tokio::spawn(workers.run(shutdown.clone())));
    Ok(WorkerProcess { metrics_addr: None, tasks: Tasks { shutdown, handles: tasks } })
}

/// Spawns the workers (when `worker.workers > 0`), the maintenance services (lease rescuer,
/// output sweeper, idempotency-key janitor) and the webhook deliverer onto `tasks`, stopping
/// with `shutdown`.
fn spawn_workers(
    config: &Config,
    store: &SharedStore,
    blob: &BlobStore,
    tools: Option<Registry>,
    wiring: Wiring<'_>,
    shutdown: &CancellationToken,
    tasks: &mut Vec<JoinHandle<()>>,
) -> anyhow::Result<()> {
    let worker_config = worker_config(config, wiring.provenance.clone());
    if config.worker.workers > 0 {
        let fetcher =
            Arc::new(Fetcher::new(input_policy(config)).map_err(|e| anyhow::anyhow!("input fetcher: {e}"))?);
        let mut tools = match tools {
            Some(tools) => tools,
            None => builtin_tools(config)?,
        };
        wiring
            .engines
            .install(&mut tools, fetcher.clone(), wiring.callbacks_at)
            .map_err(anyhow::Error::msg)?;
        let workers = Workers::new(store.clone(), blob.clone(), tools, fetcher, worker_config.clone());
        tasks.push(tokio::spawn(workers.run(shutdown.clone())));
    }
    let maintenance = Maintenance {
        store: store.clone(),
        blob: blob.clone(),
        rescue_interval: (worker_config.lease / 2).max(Duration::from_millis(100)),
        sweep_interval: Duration::from_secs(config.outputs.sweep_interval_secs.max(1)),
        janitor_interval: atelier_worker::JANITOR_INTERVAL,
        cache_max_age: cache_max_age(config),
        cache_max_bytes: (config.cache.max_bytes > 0)
            .then(|| i64::try_from(config.cache.max_bytes).unwrap_or(i64::MAX)),
        batch_window: i64::from(config.batches.in_flight),
        audit_retention: (config.audit.retention_days > 0)
            .then(|| Duration::from_secs(u64::from(config.audit.retention_days) * 86_400)),
    };
    tasks.push(tokio::spawn(maintenance.run(shutdown.clone())));
    // Webhook deliveries, from every process: each is claimed by one.
    let delivery = DeliveryConfig {
        concurrency: config.webhooks.concurrency,
        first_retry: Duration::from_millis(config.webhooks.first_retry_ms.max(1)),
        policy: input_policy(config),
    };
    let bodies = Arc::new(StatusBodies(blob.clone()));
    let deliverer = Deliverer::new(store.clone(), bodies, &delivery)
        .map_err(|e| anyhow::anyhow!("webhook sender: {e}"))?;
    let stop = shutdown.clone();
    tasks.push(tokio::spawn(deliverer.run(async move { stop.cancelled().await })));
    Ok(())
}

/// A `completed` webhook's body for the deliverer: the run's status as the API answers it.
struct StatusBodies(BlobStore);

impl CompletedBody for StatusBodies {
    fn completed(&self, run: &atelier_store::RunRecord) -> Result<Vec<u8>, String> {
        atelier_api::webhooks::completed_body(&self.0, run)
    }

    fn batch(&self, batch: &atelier_store::BatchRecord) -> Result<Vec<u8>, String> {
        atelier_api::batches::webhook_body(batch)
    }
}
