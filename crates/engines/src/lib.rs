//! # atelier-engines
//!
//! Model servers behind Atelier's tools. Each tool runs on the built-in CPU engine unless
//! `[tools.TOOL]` routes it to one or more `[engines.NAME]` endpoints (see [`settings`]):
//!
//! - `comfyui` ([`comfyui`]): a ComfyUI server runs the tool's API-format graph;
//! - `cog` ([`cog`]): a Cog HTTP prediction server runs its model;
//! - `onnx` ([`onnx`]): an ONNX model runs in this process, on the CPU.
//!
//! [`Engines::build`] turns the configuration into executors set on the tool
//! [`Registry`], and into the [`EngineDirectory`] the API shows
//! (`GET /api/v3/tools`, `/readyz`). [`Engines::watch`] keeps the endpoints' health current;
//! [`check`] validates every routed tool against its live server (`atelier engines check`).
//!
//! Model servers are separate processes that Atelier talks to over HTTP; none is linked or
//! shipped with it.
//!
//! ## What is where
//!
//! Model servers behind tools (docs/ENGINES.md): the `[engines]`/`[tools]` configuration and
//! the checks that need no server (`settings.rs`); an entry's endpoints, fixed or found by DNS
//! (`discovery.rs`); endpoints with their HTTP client, slots and health (down since when,
//! re-probed within a second), (`endpoint.rs`); the pool that spreads a tool's nodes and
//! reports its capacity (`pool.rs`); parameters to a model's inputs and files back to artifacts
//! (`mapping.rs`); the executors `Cog` (`cog.rs`), `Comfyui` (`comfyui.rs`, with the endpoint's
//! one websocket, kept as the endpoint's engine state) and `Onnx` (`onnx.rs`, in-process
//! through `atelier-saliency`'s ONNX runner); model servers' callbacks into this process (`callbacks.rs`, Cog's progress);
//! health checks and the validation against live servers (`check.rs`); `Engines`, which
//! installs the executors on the `Registry` and is the API's `EngineDirectory`.
//!
//! Not here: scheduling, retries and storage (the engine's); the servers themselves (separate
//! programs).

pub mod callbacks;
pub mod check;
pub mod cog;
pub mod comfyui;
pub mod discovery;
pub mod endpoint;
mod mapping;
pub mod onnx;
pub mod pool;
pub mod settings;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use atelier_core::engines::{EndpointHealth, EngineDirectory, EngineKind, ToolRoute};
use atelier_core::tools::{Fidelity, ToolId};
use atelier_inputs::Fetcher;
use atelier_tools::Registry;
use tokio_util::sync::CancellationToken;

pub use callbacks::{CallbackHub, CALLBACK_PATH};
pub use cog::Callbacks;
use discovery::Group;
use endpoint::Endpoint;
use pool::Pool;
pub use settings::{EndpointSettings, Routing, ToolSettings};

/// The first re-check of an endpoint found down; later ones double up to
/// `health_interval_secs`.
const FIRST_RECHECK: Duration = Duration::from_secs(1);

/// `pause` plus up to 20%, from the clock's nanoseconds (no two workers in step).
fn jittered(pause: Duration) -> Duration {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    pause + pause.mul_f64(f64::from(nanos % 1000) / 5000.0)
}

/// The configured engines of a process.
#[derive(Clone)]
pub struct Engines {
    routing: Routing,
    /// Each `[engines.NAME]`: its endpoints now.
    groups: BTreeMap<String, Arc<Group>>,
    hub: Arc<CallbackHub>,
    /// What runs the `onnx` kind's models (tract unless the worker names ONNX Runtime).
    runtime: atelier_saliency::Runtime,
}

impl std::fmt::Debug for Engines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engines").field("engines", &self.groups.keys().collect::<Vec<_>>()).finish()
    }
}

impl Engines {
    /// Validates the configuration (without the servers) and prepares the endpoints; ONNX
    /// models are loaded here, so a missing or unusable file stops the start.
    pub fn new(routing: Routing) -> Result<Self, String> {
        routing.validate()?;
        let mut groups = BTreeMap::new();
        for (name, settings) in &routing.engines {
            groups.insert(name.clone(), Group::new(name, settings)?);
        }
        Ok(Self {
            routing,
            groups,
            hub: Arc::new(CallbackHub::default()),
            runtime: atelier_saliency::Runtime::Tract,
        })
    }

    /// The `onnx` kind's models run on `runtime` (`worker.onnxruntime`) instead of tract.
    pub fn with_network_runtime(mut self, runtime: atelier_saliency::Runtime) -> Self {
        self.runtime = runtime;
        self
    }

    pub fn routing(&self) -> &Routing {
        &self.routing
    }

    /// Whether any tool leaves the built-in engine.
    pub fn any_routed(&self) -> bool {
        ToolId::ALL.iter().any(|t| self.routing.route(*t).is_some())
    }

    /// Routes every configured tool on `registry` to its engine. `public_url`: where this
    /// process receives callbacks (a process that serves HTTP); `None` in a worker process.
    pub fn install(
        &self,
        registry: &mut Registry,
        fetcher: Arc<Fetcher>,
        public_url: Option<&str>,
    ) -> Result<(), String> {
        let callbacks =
            public_url.map(|base| Callbacks { hub: self.hub.clone(), base_url: base.to_string() });
        // The registry's dispatcher learns when an endpoint comes back, or is discovered.
        for group in self.groups.values() {
            group.notify_when_usable(registry.capacity_changed().clone());
        }
        for tool in ToolId::ALL {
            let Some((route, names)) = self.routing.route(tool) else { continue };
            let pool = Pool::new(
                tool.spec().name,
                names.iter().filter_map(|(n, _)| self.groups.get(*n).cloned()).collect(),
            );
            let kind = pool.kind();
            let executor: Arc<dyn atelier_tools::Executor> = match kind {
                EngineKind::Cog => {
                    Arc::new(cog::Cog::new(pool, route.clone(), fetcher.clone(), callbacks.clone()))
                }
                EngineKind::Comfyui => Arc::new(
                    comfyui::Comfyui::new(pool, route.clone())
                        .map_err(|e| format!("tools.{}: {e}", tool.spec().name))?,
                ),
                EngineKind::Onnx => {
                    let (name, settings) = names[0];
                    Arc::new(
                        onnx::Onnx::load(name, settings, &self.runtime)
                            .map_err(|e| format!("engines.{name}: {e}"))?,
                    )
                }
                EngineKind::Builtin => continue,
            };
            let identity = cache_identity(kind, &names, route, &self.runtime);
            let model = model_identity(kind, &names, route, &self.runtime);
            registry.set(tool, Arc::new(Routed { inner: executor, identity, model }));
        }
        Ok(())
    }

    /// Checks every remote endpoint's health now and then every `health_interval_secs`, until
    /// `stop` ([`watch_health`]), and resolves every `discover = "dns"` entry's name every
    /// `discover_interval_secs`: a new address's health is checked at once (it takes nodes
    /// once that passes), a gone address's watch ends (its running nodes finish).
    pub fn watch(&self, stop: CancellationToken) -> Vec<tokio::task::JoinHandle<()>> {
        let remote = self.groups.values().filter(|g| g.settings.kind != EngineKind::Onnx);
        let mut watches = Vec::new();
        for group in remote {
            if group.discovers() {
                watches.push(tokio::spawn(discover(group.clone(), stop.clone())));
            } else {
                watches.extend(
                    group.endpoints().into_iter().map(|e| tokio::spawn(watch_health(e, stop.clone()))),
                );
            }
        }
        watches
    }

    /// The view the API takes of the engines.
    pub fn directory(&self) -> Arc<dyn EngineDirectory> {
        Arc::new(self.clone())
    }
}

/// Keeps `endpoint`'s health current until `stop`: checked now and every
/// `health_interval_secs`; one that is down is probed again after about a second, then at
/// doubling intervals up to `health_interval_secs` (each with up to 20% jitter, so that
/// workers do not probe a restarting server in step), so that a server that comes back is
/// used within about a second. A request that finds the endpoint unreachable starts that at
/// once.
async fn watch_health(endpoint: Arc<Endpoint>, stop: CancellationToken) {
    let every = Duration::from_secs(endpoint.settings.health_interval_secs);
    let mut retry = FIRST_RECHECK;
    loop {
        let health = tokio::select! {
            _ = stop.cancelled() => break,
            health = check::health(&endpoint) => health,
        };
        let down = matches!(health, endpoint::Health::Unhealthy(_));
        endpoint.set_health(health);
        let pause = if down {
            let pause = jittered(retry.min(every));
            retry = (retry * 2).min(every);
            pause
        } else {
            retry = FIRST_RECHECK;
            every
        };
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = tokio::time::sleep(pause) => {}
            // A request found it unreachable: probe again soon, from the start.
            _ = endpoint.recheck.notified(), if !down => {
                retry = FIRST_RECHECK;
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = tokio::time::sleep(jittered(FIRST_RECHECK)) => {}
                }
            }
        }
    }
}

/// Follows a `discover = "dns"` entry until `stop`: resolves its name every
/// `discover_interval_secs` and watches the health of each endpoint while it is in the group.
async fn discover(group: Arc<Group>, stop: CancellationToken) {
    let every = Duration::from_secs(group.settings.discover_interval_secs);
    let mut watched: BTreeMap<String, CancellationToken> = BTreeMap::new();
    loop {
        let change = group.refresh().await;
        for gone in change.removed {
            if let Some(watch) = watched.remove(&gone.name) {
                watch.cancel();
            }
        }
        for endpoint in change.added {
            let watch = stop.child_token();
            watched.insert(endpoint.name.clone(), watch.clone());
            tokio::spawn(watch_health(endpoint, watch));
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(jittered(every)) => {}
        }
    }
}

impl EngineDirectory for Engines {
    fn route(&self, tool: ToolId) -> ToolRoute {
        match self.routing.route(tool) {
            Some((_, names)) => ToolRoute {
                kind: names.first().map_or(EngineKind::Builtin, |(_, e)| e.kind),
                endpoints: names.iter().map(|(n, _)| n.to_string()).collect(),
                fidelity: Fidelity::Production,
            },
            None => atelier_core::engines::BuiltinOnly.route(tool),
        }
    }

    fn health(&self) -> Vec<EndpointHealth> {
        let mut health = Vec::new();
        for group in self.groups.values() {
            let endpoints = group.endpoints();
            if endpoints.is_empty() {
                // A discovered entry with no address yet.
                health.push(EndpointHealth {
                    name: group.name.clone(),
                    kind: group.settings.kind,
                    healthy: false,
                    detail: group.why_empty(),
                    busy: 0,
                    capacity: 0,
                });
            }
            health.extend(endpoints.iter().map(|e| match e.kind {
                EngineKind::Onnx => EndpointHealth { healthy: true, detail: None, ..e.report() },
                _ => e.report(),
            }));
        }
        health
    }

    fn callback(&self, id: &str, token: &str, body: serde_json::Value) -> bool {
        self.hub.deliver(id, token, body)
    }
}

/// The result cache's identity of a tool routed to `names` with `route`
/// ([`atelier_tools::Executor::cache_identity`]), when every one of its endpoints is marked
/// `cacheable`: the engine kind, the endpoints' names, the route (mapping and constants) and,
/// for ComfyUI, the template's bytes, for ONNX the model's bytes and the runtime, hashed. A
/// change of any of them is another identity.
fn cache_identity(
    kind: EngineKind,
    names: &[(&str, &EndpointSettings)],
    route: &ToolSettings,
    runtime: &atelier_saliency::Runtime,
) -> Option<String> {
    use sha2::{Digest, Sha256};
    if names.is_empty() || !names.iter().all(|(_, settings)| settings.cacheable) {
        return None;
    }
    let mut hash = Sha256::new();
    for (name, settings) in names {
        hash.update(name.as_bytes());
        hash.update([0]);
        // What the model is, for ONNX (its file's bytes are read once here, at start).
        if kind == EngineKind::Onnx {
            hash.update(std::fs::read(&settings.model).ok()?);
            // Nothing on tract, so its identities stay what they were.
            hash.update(runtime.qualify("").as_bytes());
        }
    }
    hash.update(serde_json::to_vec(route).ok()?);
    if kind == EngineKind::Comfyui {
        hash.update(std::fs::read(&route.template).ok()?);
    }
    let digest = hex::encode(hash.finalize());
    Some(format!("{}/{digest}", kind.as_str()))
}

/// What a tool routed to `names` runs, as its outputs' credentials name it
/// ([`atelier_tools::Executor::maker`]): the ONNX model's file and hash (and ONNX Runtime when
/// it runs it), the ComfyUI template's file and hash, or the Cog endpoints' names.
fn model_identity(
    kind: EngineKind,
    names: &[(&str, &EndpointSettings)],
    route: &ToolSettings,
    runtime: &atelier_saliency::Runtime,
) -> String {
    use sha2::{Digest, Sha256};
    let file = |path: &std::path::Path| {
        let name = path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        match std::fs::read(path) {
            Ok(bytes) => format!("{name} sha256:{}", hex::encode(Sha256::digest(bytes))),
            Err(_) => name,
        }
    };
    let endpoints = names.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ");
    match kind {
        EngineKind::Onnx => {
            runtime.qualify(&names.first().map_or(endpoints, |(_, settings)| file(&settings.model)))
        }
        EngineKind::Comfyui => format!("template {} on {endpoints}", file(&route.template)),
        _ => endpoints,
    }
}

/// A routed executor: what it runs, and whether the operator marked its outputs cacheable.
struct Routed {
    inner: Arc<dyn atelier_tools::Executor>,
    identity: Option<String>,
    model: String,
}

#[async_trait::async_trait]
impl atelier_tools::Executor for Routed {
    async fn run(
        &self,
        execution: atelier_tools::Execution,
    ) -> Result<Vec<atelier_tools::Artifact>, atelier_tools::ToolError> {
        self.inner.run(execution).await
    }

    fn resumable(&self) -> bool {
        self.inner.resumable()
    }

    fn engine(&self) -> &'static str {
        self.inner.engine()
    }

    fn capacity(&self) -> atelier_tools::Capacity {
        self.inner.capacity()
    }

    fn cache_identity(&self) -> Option<String> {
        self.identity.clone()
    }

    fn maker(&self, _tool: atelier_core::tools::ToolId) -> atelier_tools::Maker {
        atelier_tools::Maker { model: self.model.clone(), trained: true }
    }
}
