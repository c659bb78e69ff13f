//! Transport-free operations behind the endpoints.

use std::time::Duration;

use atelier_core::params::Params;
use atelier_core::plan::{compile_node, compile_workflow, Plan};
use atelier_core::status::Priority;
use atelier_core::tools::{self, Prices, ToolSpec};
use atelier_core::workflow::WorkflowDef;
use atelier_core::{ids, RequestError};
use atelier_store::{Account, IdempotentAnswer, NewRun, RunKind, RunWebhook};
use atelier_wire as wire;
use serde_json::{Map, Value};

use crate::body::BodySlices;
use crate::error::ApiError;
use crate::state::AppState;
use crate::webhooks::WebhookRequest;
use crate::{inputs, render};

/// What to run: a parsed v3 run body (or a v2 body mapped onto a tool).
#[derive(Debug, Clone)]
pub struct RunRequest {
    pub kind: RunKind,
    pub target: String,
    /// The input; a long string in it may be a placeholder for a slice of the request's
    /// body (`slices`): the run is compiled on placeholders, and `crate::inputs` stores the
    /// images they stand for and puts the other strings back.
    pub input: Params,
    pub slices: BodySlices,
    /// Where the run's events are sent (`webhook_url`, `webhook_events`).
    pub webhook: Option<WebhookRequest>,
    /// The lane the body asked for (`priority`); `None`: the key's default.
    pub priority: Option<Priority>,
    /// How soon each node must start once queued (`start_within_secs`); `None`: no limit.
    pub start_within: Option<Duration>,
    /// Whether the result cache may fill the run's nodes (`cache`, true unless `false`).
    pub cache: bool,
    /// How long its outputs are kept (`retention_secs`, checked against the operator's range
    /// when it is submitted); `None`: the key's, else the operator's default.
    pub retention_secs: Option<u64>,
}

/// The longest `start_within_secs`: a day.
pub use atelier_wire::runs::MAX_START_WITHIN_SECS;

/// Takes the optional `start_within_secs` of a run body (an extension of the v3 and v2
/// bodies): a whole number of seconds, 1 to [`MAX_START_WITHIN_SECS`].
pub fn take_start_within(body: &mut Map<String, Value>) -> Result<Option<Duration>, RequestError> {
    match body.remove("start_within_secs").filter(|v| !v.is_null()) {
        None => Ok(None),
        Some(value) => match value.as_u64() {
            Some(secs @ 1..=MAX_START_WITHIN_SECS) => Ok(Some(Duration::from_secs(secs))),
            _ => Err(RequestError::invalid(
                "start_within_secs",
                format!("must be a whole number of seconds from 1 to {MAX_START_WITHIN_SECS}"),
            )),
        },
    }
}

/// Takes the optional `retention_secs` of a run body (an extension of the v3 and v2 bodies):
/// a whole number of seconds, 0 for zero retention; its range is the operator's, checked when
/// the run is submitted ([`crate::settings::RetentionPolicy`]).
pub fn take_retention(body: &mut Map<String, Value>) -> Result<Option<u64>, RequestError> {
    match body.remove("retention_secs").filter(|v| !v.is_null()) {
        None => Ok(None),
        Some(value) => value.as_u64().map(Some).ok_or_else(|| {
            RequestError::invalid("retention_secs", "must be a whole number of seconds (0: zero retention)")
        }),
    }
}

/// Takes the optional `cache` of a run body (an extension of the v3 and v2 bodies): `false`
/// runs every node afresh; absent or `null` is `true`.
pub fn take_cache(body: &mut Map<String, Value>) -> Result<bool, RequestError> {
    match body.remove("cache") {
        None | Some(Value::Null) => Ok(true),
        Some(Value::Bool(cache)) => Ok(cache),
        Some(_) => Err(RequestError::invalid("cache", "must be true or false")),
    }
}

/// Takes the optional `priority` of a run body (an extension of the v3 and v2 bodies):
/// `interactive`, `normal` or `bulk`.
pub fn take_priority(body: &mut Map<String, Value>) -> Result<Option<Priority>, RequestError> {
    match body.remove("priority").filter(|v| !v.is_null()) {
        None => Ok(None),
        Some(Value::String(lane)) => lane
            .parse()
            .map(Some)
            .map_err(|_| RequestError::invalid("priority", "must be 'interactive', 'normal' or 'bulk'")),
        Some(_) => {
            Err(RequestError::invalid("priority", "must be a string: 'interactive', 'normal' or 'bulk'"))
        }
    }
}

impl RunRequest {
    /// Parses `{type, target, input}`, with the optional `webhook_url` and `webhook_events`.
    pub fn parse(body: &Map<String, Value>) -> Result<Self, RequestError> {
        Self::from_body(body.clone())
    }

    /// [`RunRequest::parse`], taking the body: its input is moved, not copied (a run's body
    /// may carry images of several MiB).
    pub fn from_body(mut body: Map<String, Value>) -> Result<Self, RequestError> {
        let field = |name: &str| body.get(name).filter(|v| !v.is_null());
        let kind = match field("type").map(|v| v.as_str()) {
            Some(Some("node")) => RunKind::Node,
            Some(Some("workflow")) => RunKind::Workflow,
            Some(_) => return Err(RequestError::InvalidRequest("type must be 'node' or 'workflow'".into())),
            None => {
                return Err(RequestError::InvalidRequest("type is required ('node' or 'workflow')".into()))
            }
        };
        let target = match field("target") {
            Some(Value::String(t)) if !t.is_empty() => t.clone(),
            Some(_) => return Err(RequestError::InvalidRequest("target must be a non-empty string".into())),
            None => return Err(RequestError::InvalidRequest("target is required".into())),
        };
        match field("input") {
            Some(Value::Object(_)) => {}
            Some(_) => return Err(RequestError::InvalidRequest("input must be an object".into())),
            None => return Err(RequestError::InvalidRequest("input is required".into())),
        }
        let webhook = WebhookRequest::take(&mut body)?;
        let priority = take_priority(&mut body)?;
        let start_within = take_start_within(&mut body)?;
        let cache = take_cache(&mut body)?;
        let retention_secs = take_retention(&mut body)?;
        for key in body.keys() {
            if !["type", "target", "input"].contains(&key.as_str()) {
                return Err(RequestError::InvalidRequest(format!("unknown field '{key}'")));
            }
        }
        let Some(Value::Object(input)) = body.remove("input") else {
            return Err(RequestError::InvalidRequest("input must be an object".into()));
        };
        // A workflow is looked up by its normalised name, and the run records that name.
        let target = match kind {
            RunKind::Workflow => atelier_core::workflow::requested_workflow_name("target", &target)?,
            RunKind::Node => target,
        };
        Ok(Self {
            kind,
            target,
            input,
            slices: BodySlices::default(),
            webhook,
            priority,
            start_within,
            cache,
            retention_secs,
        })
    }
}

/// What a run request runs, found once: a tool, or a workflow the account can see.
pub enum Target {
    Tool(&'static ToolSpec),
    Workflow(Box<WorkflowDef>),
}

impl Target {
    /// The tool or the workflow `request` names.
    pub async fn find(state: &AppState, account: &Account, request: &RunRequest) -> Result<Self, ApiError> {
        Ok(match request.kind {
            RunKind::Node => Self::Tool(tools::tool(&request.target)?),
            RunKind::Workflow => {
                Self::Workflow(Box::new(load_workflow(state, account, &request.target).await?))
            }
        })
    }

    /// The priced plan of a run of this target on `input`: validation and pricing, no writes.
    pub fn compile(&self, input: &Params, prices: &Prices) -> Result<Plan, RequestError> {
        match self {
            Self::Tool(tool) => compile_node(tool.name, input, prices),
            Self::Workflow(def) => compile_workflow(def, input, prices),
        }
    }

    /// Whether this is a single-tool run, whose errors name parameters without a node.
    pub fn is_tool(&self) -> bool {
        matches!(self, Self::Tool(_))
    }
}

/// Compiles a request into a plan: validation and pricing, no writes.
pub async fn plan(state: &AppState, account: &Account, request: &RunRequest) -> Result<Plan, ApiError> {
    Ok(Target::find(state, account, request).await?.compile(&request.input, &state.config.prices)?)
}

pub async fn load_workflow(state: &AppState, account: &Account, name: &str) -> Result<WorkflowDef, ApiError> {
    let row = state
        .store
        .find_workflow(Some(account.id), name)
        .await?
        .ok_or_else(|| RequestError::WorkflowNotFound(name.to_string()))?;
    WorkflowDef::parse(row.definition).map_err(|e| ApiError::Internal(format!("stored workflow {name}: {e}")))
}

/// Accepted run: its id and any warnings.
pub struct Accepted {
    pub id: String,
    pub warnings: Vec<String>,
}

impl Accepted {
    /// The answer: the run handle.
    pub fn handle(&self) -> Value {
        serde_json::to_value(render::run_handle(&self.id, &self.warnings)).unwrap_or_default()
    }
}

/// A run request on its way in.
pub struct Submission<'a> {
    pub request: RunRequest,
    /// v2 tool family, for v2 runs.
    pub family: Option<&'a str>,
    /// What a v2 status echoes back as `input`.
    pub echo: Option<Value>,
    /// The run's id, chosen before anything is written, so that an idempotency key can be
    /// claimed for this run.
    pub id: String,
}

impl<'a> Submission<'a> {
    pub fn new(request: RunRequest, family: Option<&'a str>, echo: Option<Value>) -> Self {
        let id = match request.kind {
            RunKind::Node => ids::generation_id(),
            RunKind::Workflow => ids::workflow_run_id(),
        };
        Self { request, family, echo, id }
    }
}

/// Validates, prices and accepts a run (reserving its price). On any
/// error nothing is written and nothing is charged. With `idempotency_key` (claimed for this
/// submission's id), the answer is recorded under the key in the transaction that creates the
/// run.
pub async fn submit(
    state: &AppState,
    account: &Account,
    submission: Submission<'_>,
    idempotency_key: Option<&str>,
) -> Result<Accepted, ApiError> {
    let Submission { mut request, family, echo, id } = submission;
    let retention_secs = state.config.retention.of_run(request.retention_secs, account.retention_secs)?;
    let target = Target::find(state, account, &request).await?;
    // Compiled on placeholders (the long strings held once, in `slices`), then every image
    // value is read once, and only a request that passes every check stores anything.
    request.slices.lift(&mut request.input);
    let slices = &request.slices;
    let mut plan = target.compile(&request.input, &state.config.prices).map_err(|e| {
        // An error that quotes a value quotes it as sent.
        let mut input = request.input.clone();
        inputs::settle(&mut input, slices, &inputs::StoredImages::default());
        target.compile(&input, &state.config.prices).err().unwrap_or(e)
    })?;
    let images = inputs::check(state, account, &plan, slices, target.is_tool()).await?;
    if let Some(webhook) = &request.webhook {
        webhook.check(&state.config.inputs).await?;
    }
    let stored = inputs::store(state, account, images).await?;
    for node in &mut plan.nodes {
        inputs::settle(&mut node.params, slices, &stored);
    }
    inputs::settle_input(&mut request.input, slices, &stored);
    for warning in &plan.warnings {
        tracing::warn!(account = %account.name, target = %request.target, "{warning}");
    }
    // A v3 run keeps its input (inline images as their stored references), so that the
    // console can run it again; a v2 run keeps what its status echoes.
    let echo = match family {
        Some(_) => echo,
        None => Some(Value::Object(request.input.clone())),
    };
    let node_ids = match request.kind {
        RunKind::Node => vec![id.clone()],
        RunKind::Workflow => plan.nodes.iter().map(|_| ids::generation_id()).collect(),
    };
    let accepted = Accepted { id, warnings: plan.warnings.clone() };
    let answer = accepted.handle();
    state
        .store
        .create_run(&NewRun {
            id: accepted.id.clone(),
            account_id: account.id,
            kind: request.kind,
            family,
            target: &request.target,
            plan: &plan,
            node_ids,
            echo,
            idempotency: idempotency_key.map(|key| IdempotentAnswer { key, status: 200, body: &answer }),
            inputs: &stored.ids,
            webhook: request.webhook.as_ref().map(|w| RunWebhook { url: w.url.as_str(), events: w.events }),
            // The request's span: the run's nodes and deliveries continue its trace.
            trace_parent: atelier_telemetry::traces::traceparent(&tracing::Span::current()),
            priority: request.priority.unwrap_or(account.priority),
            key_id: account.key_id,
            start_within: request.start_within,
            cache: request.cache,
            retention_secs,
            from_batch: false,
        })
        .await?;
    Ok(accepted)
}

/// `POST /api/v3/estimate`: the price, per node, without reserving.
pub async fn estimate(
    state: &AppState,
    account: &Account,
    request: &RunRequest,
) -> Result<wire::Estimate, ApiError> {
    let plan = plan(state, account, request).await?;
    let balance = state.store.balance(account.id).await?;
    Ok(price(&plan, Some(balance)))
}

/// A plan's price, in total and per node; with the balance for an estimate.
pub fn price(plan: &Plan, balance: Option<i64>) -> wire::Estimate {
    let nodes = plan.nodes.iter().map(|n| (n.name.clone(), n.price)).collect();
    wire::Estimate { tokens: plan.price(), nodes, balance }
}

/// The workflow description of spec 2.3. The document and the sample body are core's
/// (`WorkflowDef`), read into their wire types.
pub fn describe(name: &str, def: &WorkflowDef) -> Result<wire::WorkflowDescription, ApiError> {
    let internal = |e: serde_json::Error| ApiError::Internal(format!("describing {name}: {e}"));
    let inputs = def.inputs();
    Ok(wire::WorkflowDescription {
        name: name.to_string(),
        workflow: def.into(),
        sample_payload: serde_json::from_value(def.sample_payload(name)).map_err(internal)?,
        inputs: wire::WorkflowInputs {
            mandatory: inputs.mandatory,
            optional: inputs.optional,
            linked: inputs.linked,
        },
        outputs: def.outputs.clone(),
    })
}
