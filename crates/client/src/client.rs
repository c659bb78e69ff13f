//! [`Client`]: one method per operation of the interface.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, CONTENT_TYPE, USER_AGENT};
use reqwest::{Method, RequestBuilder, Response};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use url::Url;

use crate::error::Error;
use crate::models::{
    Batch, BatchItemList, BatchList, BatchRequest, Deleted, Deletion, DirectUpload, DirectUploadRequest,
    Estimate, ItemState, Priority, RunHandle, RunKind, RunList, RunState, RunStatus, TokenBalance, Tool,
    Upload, V2Status, WebhookDelivery, WebhookDeliveryList, WebhookEventKind, WebhookSecret,
    WorkflowDefinition, WorkflowDescription, WorkflowSummary, WorkflowValidation,
};

/// The timeout of each call unless the builder says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest `Prefer: wait` the server honours, in seconds.
pub const MAX_WAIT_SECS: u64 = 60;
/// How long a chunk of a streamed answer (events, downloads) may take; the events stream
/// sends a keep-alive comment every 15 s.
pub const READ_TIMEOUT: Duration = Duration::from_secs(45);

/// A client of one Atelier server, for one API key. Cheap to clone (one connection pool).
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) http: reqwest::Client,
    pub(crate) base: Url,
    api_key: HeaderValue,
    pub(crate) timeout: Option<Duration>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key stays out of logs.
        f.debug_struct("Client").field("base", &self.inner.base.as_str()).finish_non_exhaustive()
    }
}

/// Builds a [`Client`] (see [`Client::builder`]).
#[derive(Debug)]
pub struct ClientBuilder {
    base_url: String,
    api_key: String,
    timeout: Option<Duration>,
    connect_timeout: Duration,
    user_agent: String,
    http: Option<reqwest::Client>,
}

impl ClientBuilder {
    /// The limit of each call ([`DEFAULT_TIMEOUT`]); a `Prefer: wait` adds its wait to it.
    /// Streams (events, downloads) are bounded per chunk instead ([`READ_TIMEOUT`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// No limit on calls.
    pub fn no_timeout(mut self) -> Self {
        self.timeout = None;
        self
    }

    /// The limit on connecting (10 s by default).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The `User-Agent` header.
    pub fn user_agent(mut self, agent: impl Into<String>) -> Self {
        self.user_agent = agent.into();
        self
    }

    /// A `reqwest::Client` of your own (proxies, TLS roots); the connect timeout is then
    /// yours to set on it.
    pub fn http_client(mut self, http: reqwest::Client) -> Self {
        self.http = Some(http);
        self
    }

    /// The client; fails when the base URL is not an http(s) URL or the key cannot be a
    /// header value.
    pub fn build(self) -> Result<Client, Error> {
        let base = Url::parse(self.base_url.trim())
            .map_err(|e| Error::Config(format!("base URL {:?}: {e}", self.base_url)))?;
        if !matches!(base.scheme(), "http" | "https") || base.cannot_be_a_base() {
            return Err(Error::Config(format!("base URL {:?}: not an http(s) URL", self.base_url)));
        }
        if self.api_key.is_empty() {
            return Err(Error::Config("the API key is empty".into()));
        }
        let mut api_key = HeaderValue::from_str(&self.api_key)
            .map_err(|_| Error::Config("the API key is not a valid header value".into()))?;
        api_key.set_sensitive(true);
        let http = match self.http {
            Some(http) => http,
            None => {
                let mut headers = HeaderMap::new();
                if let Ok(agent) = HeaderValue::from_str(&self.user_agent) {
                    headers.insert(USER_AGENT, agent);
                }
                reqwest::Client::builder()
                    .connect_timeout(self.connect_timeout)
                    .default_headers(headers)
                    .build()
                    .map_err(|e| Error::Config(format!("building the HTTP client: {e}")))?
            }
        };
        Ok(Client { inner: Arc::new(Inner { http, base, api_key, timeout: self.timeout }) })
    }
}

/// Options of a run request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunOptions {
    /// Where to POST signed notifications of the run (`webhook_url`).
    pub webhook_url: Option<String>,
    /// Which notifications (`webhook_events`; the server's default is `completed`).
    pub webhook_events: Option<Vec<WebhookEventKind>>,
    /// The lane (`priority`; the server's default is the API key's, normal unless set).
    pub priority: Option<Priority>,
    /// `start_within_secs` (1 to 86400): a node no worker started within this many seconds
    /// of its queueing fails `NotStarted`, not charged.
    pub start_within_secs: Option<u64>,
    /// `cache: false` (with `Some(false)`): every node runs afresh instead of being filled
    /// from the result cache.
    pub cache: Option<bool>,
    /// `retention_secs`: how long the run's outputs are kept, within the server's range; 0
    /// is zero retention (outputs come back inline as `data:` URLs and are never stored).
    pub retention_secs: Option<u64>,
    /// Sent as `Idempotency-Key`: the same key and body within 24 h get the first answer
    /// again and start nothing.
    pub idempotency_key: Option<String>,
    /// `Prefer: wait=N` (1 to 60; v3 runs only): the server holds the answer until the run
    /// ends, at most N seconds; when it ended, [`RunHandle::status`] holds its final status.
    pub wait: Option<u64>,
}

/// Filters of [`Client::runs`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunQuery {
    /// Runs per page, 1 to 100 (server default 20).
    pub limit: Option<u32>,
    /// The previous page's `next_before`.
    pub before: Option<i64>,
    /// Only runs in this state.
    pub status: Option<RunState>,
    /// Only runs of this tool or workflow.
    pub target: Option<String>,
}

/// Filters of [`Client::audit`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditQuery {
    /// Only actions that start with this (`key.`).
    pub action: Option<String>,
    /// Only entries at or after this time (RFC 3339, or a date).
    pub since: Option<String>,
    /// The previous page's `next_before`.
    pub before: Option<i64>,
    /// Entries per page, 1 to 500 (server default 50).
    pub limit: Option<u32>,
}

/// A v2 tool family (core's): the path of its run and status endpoints.
pub use atelier_core::v2::Family as V2Family;

/// A JSON value, `what` naming the answer in errors.
pub(crate) fn decode<T: DeserializeOwned>(value: Value, what: &str) -> Result<T, Error> {
    serde_json::from_value(value).map_err(|source| Error::Decode { what: what.to_string(), source })
}

/// A status answer, with the answer kept in `raw`.
pub(crate) fn decode_status(value: Value, what: &str) -> Result<RunStatus, Error> {
    let mut status: RunStatus = decode(value.clone(), what)?;
    status.raw = value;
    Ok(status)
}

fn object(input: Value, what: &str) -> Result<Map<String, Value>, Error> {
    match input {
        Value::Object(map) => Ok(map),
        other => Err(Error::InvalidArgument(format!("{what} must be a JSON object, not {other}"))),
    }
}

impl Client {
    /// A client of the server at `base_url` (e.g. `http://127.0.0.1:8080`) with `api_key`,
    /// sent as `X-API-KEY`.
    pub fn new(base_url: &str, api_key: &str) -> Result<Self, Error> {
        Self::builder(base_url, api_key).build()
    }

    /// A client from `ATELIER_URL` and `ATELIER_API_KEY`.
    pub fn from_env() -> Result<Self, Error> {
        let var = |name: &str| {
            std::env::var(name)
                .ok()
                .filter(|v| !v.trim().is_empty())
                .ok_or_else(|| Error::Config(format!("{name} is not set")))
        };
        Self::new(&var("ATELIER_URL")?, &var("ATELIER_API_KEY")?)
    }

    /// A builder, to set timeouts or the HTTP client.
    pub fn builder(base_url: &str, api_key: &str) -> ClientBuilder {
        ClientBuilder {
            base_url: base_url.to_string(),
            api_key: api_key.to_string(),
            timeout: Some(DEFAULT_TIMEOUT),
            connect_timeout: Duration::from_secs(10),
            user_agent: concat!("atelier-client-rust/", env!("CARGO_PKG_VERSION")).to_string(),
            http: None,
        }
    }

    /// The server's base URL.
    pub fn base_url(&self) -> &Url {
        &self.inner.base
    }

    /// The URL of an operation: the base URL's path, then `segments`, each percent-encoded
    /// as one path segment (workflow names may hold spaces, `%`, any Unicode).
    pub(crate) fn url(&self, segments: &[&str]) -> Url {
        let mut url = self.inner.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty();
            path.extend(segments);
        }
        url
    }

    /// The URL of a v2 operation: `/api/v2/{family path}/{tail…}`.
    fn v2_url(&self, family: V2Family, tail: &[&str]) -> Url {
        let mut segments = vec!["api", "v2"];
        segments.extend(family.path().split('/'));
        segments.extend_from_slice(tail);
        self.url(&segments)
    }

    /// A request with the key; `extra` is added to the timeout (waiting requests).
    pub(crate) fn request(&self, method: Method, url: Url, extra: Duration) -> RequestBuilder {
        let request = self.inner.http.request(method, url).header("X-API-KEY", self.inner.api_key.clone());
        match self.inner.timeout {
            Some(timeout) => request.timeout(timeout + extra),
            None => request,
        }
    }

    /// Sends `request`; a non-2xx answer is its typed [`Error`].
    pub(crate) async fn send(&self, request: RequestBuilder) -> Result<Response, Error> {
        let response = request.send().await.map_err(|e| self.transport(e))?;
        if response.status().is_success() {
            return Ok(response);
        }
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.bytes().await.map_err(|e| self.transport(e))?;
        Err(Error::from_response(status, &headers, &body))
    }

    fn transport(&self, e: reqwest::Error) -> Error {
        match self.inner.timeout {
            Some(timeout) if e.is_timeout() => Error::Timeout(timeout),
            _ => Error::Transport(e),
        }
    }

    /// Sends `request` and reads its JSON answer.
    async fn call(&self, request: RequestBuilder, what: &str) -> Result<(HeaderMap, Value), Error> {
        let response = self.send(request).await?;
        let headers = response.headers().clone();
        let body = response.bytes().await.map_err(|e| self.transport(e))?;
        let value = serde_json::from_slice(&body)
            .map_err(|source| Error::Decode { what: what.to_string(), source })?;
        Ok((headers, value))
    }

    async fn get<T: DeserializeOwned>(&self, segments: &[&str], what: &str) -> Result<T, Error> {
        let request = self.request(Method::GET, self.url(segments), Duration::ZERO);
        decode(self.call(request, what).await?.1, what)
    }

    fn run_body(
        kind: RunKind,
        target: &str,
        input: Value,
        options: &RunOptions,
    ) -> Result<Map<String, Value>, Error> {
        let mut body = Map::new();
        body.insert("type".into(), Value::String(kind.as_str().to_string()));
        body.insert("target".into(), Value::String(target.to_string()));
        body.insert("input".into(), Value::Object(object(input, "input")?));
        add_webhook(&mut body, options);
        Ok(body)
    }

    async fn submit(
        &self,
        url: Url,
        body: &Map<String, Value>,
        options: &RunOptions,
        what: &str,
    ) -> Result<RunHandle, Error> {
        let wait = match options.wait {
            Some(wait) if !(1..=MAX_WAIT_SECS).contains(&wait) => {
                return Err(Error::InvalidArgument(format!(
                    "wait is 1 to {MAX_WAIT_SECS} seconds, not {wait}"
                )));
            }
            Some(wait) => Some(wait),
            None => None,
        };
        // A waiting request may take its wait on top of the usual time.
        let extra = Duration::from_secs(wait.unwrap_or(0));
        let mut request = self.request(Method::POST, url, extra).json(body);
        if let Some(key) = &options.idempotency_key {
            request = request.header("Idempotency-Key", key);
        }
        if let Some(wait) = wait {
            request = request.header("Prefer", format!("wait={wait}"));
        }
        let (headers, value) = self.call(request, what).await?;
        let status_value = value.get("status").filter(|s| s.is_object()).cloned();
        let mut handle: RunHandle = decode(value, what)?;
        if let (Some(status), Some(value)) = (handle.status.as_mut(), status_value) {
            status.raw = value;
        }
        handle.replayed = headers.get("idempotent-replayed").is_some_and(|v| v.as_bytes() == b"true");
        handle.preference_applied =
            headers.get("preference-applied").and_then(|v| v.to_str().ok()).map(str::to_string);
        Ok(handle)
    }

    // --- v3 runs ----------------------------------------------------------------------

    /// `POST /api/v3/run` with `type: node`: starts a run of one tool. `input` is a JSON
    /// object of the tool's parameters (images as URLs, data URIs or base64).
    pub async fn run(&self, tool: &str, input: Value, options: RunOptions) -> Result<RunHandle, Error> {
        let body = Self::run_body(RunKind::Node, tool, input, &options)?;
        self.submit(self.url(&["api", "v3", "run"]), &body, &options, "the run answer").await
    }

    /// `POST /api/v3/run` with `type: workflow`: starts a saved workflow. `input` keys are
    /// `node.param` or the workflow's variable names (see [`Client::workflow`]).
    pub async fn run_workflow(
        &self,
        name: &str,
        input: Value,
        options: RunOptions,
    ) -> Result<RunHandle, Error> {
        let body = Self::run_body(RunKind::Workflow, name, input, &options)?;
        self.submit(self.url(&["api", "v3", "run"]), &body, &options, "the run answer").await
    }

    /// `GET /api/v3/status/{run_id}`: a run's status (also one node of a workflow run, by
    /// its generation id).
    pub async fn status(&self, run_id: &str) -> Result<RunStatus, Error> {
        let request = self.request(Method::GET, self.url(&["api", "v3", "status", run_id]), Duration::ZERO);
        decode_status(self.call(request, "the status").await?.1, "the status")
    }

    /// `POST /api/v3/cancel/{run_id}`: cancels an unfinished run (a finished one is left as
    /// it is); its status.
    pub async fn cancel(&self, run_id: &str) -> Result<RunStatus, Error> {
        let request = self.request(Method::POST, self.url(&["api", "v3", "cancel", run_id]), Duration::ZERO);
        decode_status(self.call(request, "the cancel answer").await?.1, "the cancel answer")
    }

    /// `DELETE /api/v3/runs/{run_id}`: deletes a finished run's outputs and stored inputs now
    /// (its ledger lines stay); its reads then fail with [`Error::Deleted`]. Asking again
    /// answers the first deletion. An unfinished run is [`Error::Conflict`]: cancel it first.
    pub async fn delete_run(&self, run_id: &str) -> Result<Deletion, Error> {
        let request = self.request(Method::DELETE, self.url(&["api", "v3", "runs", run_id]), Duration::ZERO);
        decode(self.call(request, "the deletion").await?.1, "the deletion")
    }

    /// `GET /api/v3/runs`: a page of the account's runs, newest first.
    pub async fn runs(&self, query: &RunQuery) -> Result<RunList, Error> {
        let mut pairs: Vec<(&str, String)> = Vec::new();
        if let Some(limit) = query.limit {
            pairs.push(("limit", limit.to_string()));
        }
        if let Some(before) = query.before {
            pairs.push(("before", before.to_string()));
        }
        if let Some(status) = query.status {
            pairs.push(("status", status.as_str().to_string()));
        }
        if let Some(target) = &query.target {
            pairs.push(("target", target.clone()));
        }
        let request =
            self.request(Method::GET, self.url(&["api", "v3", "runs"]), Duration::ZERO).query(&pairs);
        decode(self.call(request, "the run list").await?.1, "the run list")
    }

    // --- discovery, pricing, workflows ------------------------------------------------

    /// `GET /api/v3/tools`: every tool, its parameters, price rule and engine.
    pub async fn tools(&self) -> Result<Vec<Tool>, Error> {
        let request = self.request(Method::GET, self.url(&["api", "v3", "tools"]), Duration::ZERO);
        let (_, value) = self.call(request, "the tool list").await?;
        let items: Vec<Value> = decode(value, "the tool list")?;
        items
            .into_iter()
            .map(|item| {
                let mut tool: Tool = decode(item.clone(), "a tool")?;
                tool.raw = item;
                Ok(tool)
            })
            .collect()
    }

    /// `POST /api/v3/estimate` of a tool run: its price and the balance; nothing is
    /// reserved.
    pub async fn estimate(&self, tool: &str, input: Value) -> Result<Estimate, Error> {
        self.estimate_of(RunKind::Node, tool, input).await
    }

    /// `POST /api/v3/estimate` of a workflow run.
    pub async fn estimate_workflow(&self, name: &str, input: Value) -> Result<Estimate, Error> {
        self.estimate_of(RunKind::Workflow, name, input).await
    }

    async fn estimate_of(&self, kind: RunKind, target: &str, input: Value) -> Result<Estimate, Error> {
        let body = Self::run_body(kind, target, input, &RunOptions::default())?;
        let request =
            self.request(Method::POST, self.url(&["api", "v3", "estimate"]), Duration::ZERO).json(&body);
        decode(self.call(request, "the estimate").await?.1, "the estimate")
    }

    /// `GET /api/v3/workflow/{name}`: the graph, its inputs and outputs, and a run body to
    /// fill in.
    pub async fn workflow(&self, name: &str) -> Result<WorkflowDescription, Error> {
        self.get(&["api", "v3", "workflow", name], "the workflow description").await
    }

    /// `PUT /api/v3/workflow/{name}`: saves (or replaces) a workflow of the account; its
    /// description.
    pub async fn save_workflow(
        &self,
        name: &str,
        definition: &WorkflowDefinition,
    ) -> Result<WorkflowDescription, Error> {
        let request = self
            .request(Method::PUT, self.url(&["api", "v3", "workflow", name]), Duration::ZERO)
            .json(definition);
        decode(self.call(request, "the workflow description").await?.1, "the workflow description")
    }

    /// `DELETE /api/v3/workflow/{name}` (a system template is [`Error::ReadOnlyTemplate`]).
    pub async fn delete_workflow(&self, name: &str) -> Result<Deleted, Error> {
        let request =
            self.request(Method::DELETE, self.url(&["api", "v3", "workflow", name]), Duration::ZERO);
        decode(self.call(request, "the delete answer").await?.1, "the delete answer")
    }

    /// `GET /api/v3/workflows`: the account's workflows and the system templates.
    pub async fn workflows(&self) -> Result<Vec<WorkflowSummary>, Error> {
        self.get(&["api", "v3", "workflows"], "the workflow list").await
    }

    /// `POST /api/v3/workflows/validate`: every problem of a document, and what discovery
    /// would show of it saved under `name`; saves nothing.
    pub async fn validate_workflow(
        &self,
        definition: &WorkflowDefinition,
        name: Option<&str>,
    ) -> Result<WorkflowValidation, Error> {
        let mut request = self
            .request(Method::POST, self.url(&["api", "v3", "workflows", "validate"]), Duration::ZERO)
            .json(definition);
        if let Some(name) = name {
            request = request.query(&[("name", name)]);
        }
        decode(self.call(request, "the validation").await?.1, "the validation")
    }

    // --- governance -------------------------------------------------------------------

    /// `GET /api/v3/audit` (the `keys` scope): a page of the account's audit log, newest
    /// first.
    pub async fn audit(&self, query: &AuditQuery) -> Result<atelier_wire::AuditList, Error> {
        let mut pairs: Vec<(&str, String)> = Vec::new();
        if let Some(action) = &query.action {
            pairs.push(("action", action.clone()));
        }
        if let Some(since) = &query.since {
            pairs.push(("since", since.clone()));
        }
        if let Some(before) = query.before {
            pairs.push(("before", before.to_string()));
        }
        if let Some(limit) = query.limit {
            pairs.push(("limit", limit.to_string()));
        }
        let request =
            self.request(Method::GET, self.url(&["api", "v3", "audit"]), Duration::ZERO).query(&pairs);
        decode(self.call(request, "the audit log").await?.1, "the audit log")
    }

    /// `GET /api/v3/usage`: the spend limits of this key and of its account (tokens per UTC
    /// day and month, the key's cap on running nodes) and what each used.
    pub async fn usage(&self) -> Result<atelier_wire::SpendReport, Error> {
        self.get(&["api", "v3", "usage"], "the usage").await
    }

    // --- webhooks ---------------------------------------------------------------------

    /// `GET /api/v3/webhooks/secret`: the account's signing secret (made on first read).
    pub async fn webhook_secret(&self) -> Result<WebhookSecret, Error> {
        self.get(&["api", "v3", "webhooks", "secret"], "the webhook secret").await
    }

    /// `POST /api/v3/webhooks/secret/rotate`: a new secret; the previous one still signs
    /// until `previous_key_expires_at`.
    pub async fn rotate_webhook_secret(&self) -> Result<WebhookSecret, Error> {
        let url = self.url(&["api", "v3", "webhooks", "secret", "rotate"]);
        let request = self.request(Method::POST, url, Duration::ZERO);
        decode(self.call(request, "the webhook secret").await?.1, "the webhook secret")
    }

    /// `GET /api/v3/webhooks/endpoint`: the account's own endpoint, where its
    /// `spend.threshold` events go, and its latest deliveries.
    pub async fn webhook_endpoint(&self) -> Result<atelier_wire::WebhookEndpoint, Error> {
        self.get(&["api", "v3", "webhooks", "endpoint"], "the webhook endpoint").await
    }

    /// `PUT /api/v3/webhooks/endpoint`: sets the account's endpoint.
    pub async fn set_webhook_endpoint(&self, url: &str) -> Result<atelier_wire::WebhookEndpoint, Error> {
        let body = atelier_wire::WebhookEndpointRequest { url: url.to_owned() };
        let url = self.url(&["api", "v3", "webhooks", "endpoint"]);
        let request = self.request(Method::PUT, url, Duration::ZERO).json(&body);
        decode(self.call(request, "the webhook endpoint").await?.1, "the webhook endpoint")
    }

    /// `DELETE /api/v3/webhooks/endpoint`: removes the account's endpoint (spend alerts are
    /// then not sent).
    pub async fn remove_webhook_endpoint(&self) -> Result<atelier_wire::WebhookEndpoint, Error> {
        let url = self.url(&["api", "v3", "webhooks", "endpoint"]);
        let request = self.request(Method::DELETE, url, Duration::ZERO);
        decode(self.call(request, "the webhook endpoint").await?.1, "the webhook endpoint")
    }

    /// `GET /api/v3/runs/{run_id}/webhooks`: a run's webhook messages and every attempt.
    pub async fn webhook_deliveries(&self, run_id: &str) -> Result<Vec<WebhookDelivery>, Error> {
        let list: WebhookDeliveryList =
            self.get(&["api", "v3", "runs", run_id, "webhooks"], "the webhook deliveries").await?;
        Ok(list.deliveries)
    }

    /// `POST /api/v3/runs/{run_id}/webhooks/{delivery}/replay`: sends one of the run's
    /// deliveries again, now (a new attempt with the same `webhook-id`); the delivery as it is
    /// then. `Error::Conflict` while it is pending, `Error::DeliveryNotFound` for an id the run
    /// does not have.
    pub async fn replay_delivery(&self, run_id: &str, delivery: &str) -> Result<WebhookDelivery, Error> {
        let url = self.url(&["api", "v3", "runs", run_id, "webhooks", delivery, "replay"]);
        let request = self.request(Method::POST, url, Duration::ZERO);
        decode(self.call(request, "the replayed delivery").await?.1, "the replayed delivery")
    }

    // --- v2 -----------------------------------------------------------------------------

    /// `GET /api/v2/user/tokens`: the available balance.
    pub async fn balance(&self) -> Result<i64, Error> {
        let balance: TokenBalance = self.get(&["api", "v2", "user", "tokens"], "the balance").await?;
        Ok(balance.tokens)
    }

    /// `POST /api/v2/{family}/run`: `input` is the family's fields (see the interface);
    /// `options.wait` is refused (v2 runs answer at once).
    pub async fn v2_run(
        &self,
        family: V2Family,
        input: Value,
        options: RunOptions,
    ) -> Result<RunHandle, Error> {
        if options.wait.is_some() {
            return Err(Error::InvalidArgument("v2 run endpoints do not take Prefer: wait".into()));
        }
        let mut body = object(input, "input")?;
        add_webhook(&mut body, &options);
        let url = self.v2_url(family, &["run"]);
        self.submit(url, &body, &options, "the v2 run answer").await
    }

    /// `GET /api/v2/{family}/status/{run_id}` (runs of that family only).
    pub async fn v2_status(&self, family: V2Family, run_id: &str) -> Result<V2Status, Error> {
        let request = self.request(Method::GET, self.v2_url(family, &["status", run_id]), Duration::ZERO);
        let (_, value) = self.call(request, "the v2 status").await?;
        let mut status: V2Status = decode(value.clone(), "the v2 status")?;
        status.raw = value;
        Ok(status)
    }

    // --- uploads --------------------------------------------------------------------------

    /// `POST /api/v3/uploads`: sends an image once by its bytes; its [`Upload::input`]
    /// (`upload:<id>`) names it in the image inputs of runs until
    /// [`Upload::expires_at`]. The same bytes again are the same upload, kept longer.
    pub async fn upload(&self, image: bytes::Bytes) -> Result<Upload, Error> {
        let request = self
            .request(Method::POST, self.url(&["api", "v3", "uploads"]), Duration::ZERO)
            .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
            .body(image);
        decode(self.call(request, "the upload").await?.1, "the upload")
    }

    /// [`Client::upload`] of the file at `path`.
    pub async fn upload_file(&self, path: &Path) -> Result<Upload, Error> {
        let bytes =
            tokio::fs::read(path).await.map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
        self.upload(bytes.into()).await
    }

    /// `POST /api/v3/uploads` of a batch's items file (`.jsonl`/`.ndjson` or `.csv`, by the
    /// path's extension); its [`Upload::input`] is a batch's `items_file`.
    pub async fn upload_items_file(&self, path: &Path) -> Result<Upload, Error> {
        let media_type =
            match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
                Some("jsonl" | "ndjson") => "application/x-ndjson",
                Some("csv") => "text/csv",
                _ => {
                    return Err(Error::InvalidArgument(format!(
                        "{}: an items file is .jsonl or .csv",
                        path.display()
                    )))
                }
            };
        let bytes =
            tokio::fs::read(path).await.map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
        let request = self
            .request(Method::POST, self.url(&["api", "v3", "uploads"]), Duration::ZERO)
            .header(reqwest::header::CONTENT_TYPE, media_type)
            .body(bytes);
        decode(self.call(request, "the upload").await?.1, "the upload")
    }

    /// A direct upload (S3 storage): the bytes go from here straight to the bucket, not
    /// through the API. Begins it ([`Client::begin_direct_upload`]), `PUT`s the bytes to the
    /// signed URL, and completes it ([`Client::complete_direct_upload`]), which checks them
    /// as [`Client::upload`] does. `content_type`: `None` for an image, or an items file's
    /// (`text/csv`, `application/x-ndjson`). A server on local storage answers
    /// [`Error::Conflict`]: use [`Client::upload`] there.
    pub async fn upload_direct(
        &self,
        bytes: bytes::Bytes,
        content_type: Option<&str>,
    ) -> Result<Upload, Error> {
        let direct = self.begin_direct_upload(content_type).await?;
        let mut put = self.inner.http.put(&direct.url).body(bytes);
        if let Some(t) = content_type {
            put = put.header(reqwest::header::CONTENT_TYPE, t);
        }
        let answer = put.send().await.map_err(Error::Transport)?;
        let status = answer.status().as_u16();
        if !(200..300).contains(&status) {
            let body = answer.text().await.unwrap_or_default();
            return Err(Error::UnexpectedStatus { status, body: body.chars().take(200).collect() });
        }
        self.complete_direct_upload(&direct.id).await
    }

    /// `POST /api/v3/uploads/direct`: a signed URL of the storage to `PUT` the bytes to, and
    /// the id that completes the upload.
    pub async fn begin_direct_upload(&self, content_type: Option<&str>) -> Result<DirectUpload, Error> {
        let url = self.url(&["api", "v3", "uploads", "direct"]);
        let body = DirectUploadRequest { content_type: content_type.map(str::to_string) };
        let request = self.request(Method::POST, url, Duration::ZERO).json(&body);
        decode(self.call(request, "the direct upload").await?.1, "the direct upload")
    }

    /// `POST /api/v3/uploads/direct/{id}`: the bytes sent to a direct upload's URL, checked
    /// and kept as an upload.
    pub async fn complete_direct_upload(&self, id: &str) -> Result<Upload, Error> {
        let url = self.url(&["api", "v3", "uploads", "direct", id]);
        decode(
            self.call(self.request(Method::POST, url, Duration::ZERO), "the upload").await?.1,
            "the upload",
        )
    }

    /// `GET /api/v3/uploads/{id}`: an upload of this account, while runs may name it.
    pub async fn get_upload(&self, id: &str) -> Result<Upload, Error> {
        self.get(&["api", "v3", "uploads", id], "the upload").await
    }

    // --- batches --------------------------------------------------------------------------

    /// `POST /api/v3/batches`: runs a tool or a saved workflow once per item, the whole price
    /// reserved up front (402 [`Error::InsufficientTokens`] with the total otherwise). With an
    /// `idempotency_key`, sending the same batch again answers the first one.
    pub async fn create_batch(
        &self,
        batch: &BatchRequest,
        idempotency_key: Option<&str>,
    ) -> Result<Batch, Error> {
        let mut request =
            self.request(Method::POST, self.url(&["api", "v3", "batches"]), Duration::ZERO).json(batch);
        if let Some(key) = idempotency_key {
            request = request.header("Idempotency-Key", key);
        }
        decode(self.call(request, "the batch").await?.1, "the batch")
    }

    /// `GET /api/v3/batches/{batch_id}`: its items by state, tokens and progress.
    pub async fn batch(&self, batch_id: &str) -> Result<Batch, Error> {
        self.get(&["api", "v3", "batches", batch_id], "the batch").await
    }

    /// `GET /api/v3/batches`: a page of the account's batches, newest first (`before`: the
    /// previous page's `next_before`).
    pub async fn batches(&self, limit: Option<i64>, before: Option<i64>) -> Result<BatchList, Error> {
        let mut pairs: Vec<(&str, String)> = Vec::new();
        if let Some(limit) = limit {
            pairs.push(("limit", limit.to_string()));
        }
        if let Some(before) = before {
            pairs.push(("before", before.to_string()));
        }
        let request =
            self.request(Method::GET, self.url(&["api", "v3", "batches"]), Duration::ZERO).query(&pairs);
        decode(self.call(request, "the batch list").await?.1, "the batch list")
    }

    /// `GET /api/v3/batches/{batch_id}/items`: a page of its items in order (`status`: only
    /// those; `after`: the previous page's `next_after`).
    pub async fn batch_items(
        &self,
        batch_id: &str,
        status: Option<ItemState>,
        after: Option<i64>,
        limit: Option<i64>,
    ) -> Result<BatchItemList, Error> {
        let mut pairs: Vec<(&str, String)> = Vec::new();
        if let Some(status) = status {
            let text = serde_json::to_value(status).ok().and_then(|v| v.as_str().map(str::to_owned));
            pairs.push(("status", text.unwrap_or_default()));
        }
        if let Some(after) = after {
            pairs.push(("after", after.to_string()));
        }
        if let Some(limit) = limit {
            pairs.push(("limit", limit.to_string()));
        }
        let url = self.url(&["api", "v3", "batches", batch_id, "items"]);
        let request = self.request(Method::GET, url, Duration::ZERO).query(&pairs);
        decode(self.call(request, "the batch's items").await?.1, "the batch's items")
    }

    /// `DELETE /api/v3/batches/{batch_id}`: deletes a batch that ended with every run of it
    /// (their outputs and stored inline images now; the ledger lines stay); reads of the batch
    /// and its runs then fail with [`Error::Deleted`]. A running batch is [`Error::Conflict`]:
    /// cancel it first.
    pub async fn delete_batch(&self, batch_id: &str) -> Result<Deletion, Error> {
        let url = self.url(&["api", "v3", "batches", batch_id]);
        decode(
            self.call(self.request(Method::DELETE, url, Duration::ZERO), "the deletion").await?.1,
            "the deletion",
        )
    }

    /// `POST /api/v3/batches/{batch_id}/cancel`: pending items will not start, its runs are
    /// canceled, and what it holds is given back.
    pub async fn cancel_batch(&self, batch_id: &str) -> Result<Batch, Error> {
        let url = self.url(&["api", "v3", "batches", batch_id, "cancel"]);
        decode(self.call(self.request(Method::POST, url, Duration::ZERO), "the batch").await?.1, "the batch")
    }

    /// `GET /api/v3/batches/{batch_id}/webhooks`: a batch's `batch.completed` messages and
    /// every attempt.
    pub async fn batch_webhook_deliveries(&self, batch_id: &str) -> Result<Vec<WebhookDelivery>, Error> {
        let list: WebhookDeliveryList =
            self.get(&["api", "v3", "batches", batch_id, "webhooks"], "the webhook deliveries").await?;
        Ok(list.deliveries)
    }

    /// `POST /api/v3/batches/{batch_id}/retry`: runs the failed items again (their price
    /// reserved again); [`Batch::retried`] says how many.
    pub async fn retry_batch(&self, batch_id: &str) -> Result<Batch, Error> {
        let url = self.url(&["api", "v3", "batches", batch_id, "retry"]);
        decode(self.call(self.request(Method::POST, url, Duration::ZERO), "the batch").await?.1, "the batch")
    }

    /// `GET /api/v3/batches/{batch_id}/results.jsonl` to `path` (one [`crate::BatchItem`] a
    /// line), written as [`Client::download`] writes. Returns the bytes written.
    pub async fn download_batch_results(&self, batch_id: &str, path: &Path) -> Result<u64, Error> {
        let url = self.url(&["api", "v3", "batches", batch_id, "results.jsonl"]);
        self.save(self.request(Method::GET, url, Duration::ZERO), path).await
    }

    /// `GET /api/v3/batches/{batch_id}/results.zip` to `path`: every succeeded item's outputs,
    /// each under its ref (or `item-<index>`) and output name.
    pub async fn download_batch_zip(&self, batch_id: &str, path: &Path) -> Result<u64, Error> {
        let url = self.url(&["api", "v3", "batches", batch_id, "results.zip"]);
        self.save(self.request(Method::GET, url, Duration::ZERO), path).await
    }

    // --- outputs --------------------------------------------------------------------------

    /// Downloads an output URL (as a status gives it; a path is taken relative to the base
    /// URL) to `path`, through `path` + `.part` renamed at the end, so that `path` is never
    /// half written. The key is not sent: output URLs are public (and may be a CDN's).
    /// Returns the bytes written.
    pub async fn download(&self, url: &str, path: impl AsRef<Path>) -> Result<u64, Error> {
        let path = path.as_ref();
        let url = self
            .inner
            .base
            .join(url)
            .map_err(|e| Error::InvalidArgument(format!("output URL {url:?}: {e}")))?;
        self.save(self.inner.http.get(url), path).await
    }

    /// Sends `request` and writes its answer's body to `path` as [`Client::download`] says.
    async fn save(&self, request: RequestBuilder, path: &Path) -> Result<u64, Error> {
        use tokio::io::AsyncWriteExt as _;
        let response = match self.inner.timeout {
            Some(timeout) => tokio::time::timeout(timeout, self.send(request))
                .await
                .map_err(|_| Error::Timeout(timeout))??,
            None => self.send(request).await?,
        };
        let mut part = path.as_os_str().to_owned();
        part.push(".part");
        let part = std::path::PathBuf::from(part);
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| Error::Io { path, source }
        };
        let mut file = tokio::fs::File::create(&part).await.map_err(io(&part))?;
        let mut body = response.bytes_stream();
        let mut written = 0u64;
        loop {
            let chunk = match tokio::time::timeout(READ_TIMEOUT, body.next()).await {
                Ok(Some(chunk)) => chunk.map_err(|e| self.transport(e)),
                Ok(None) => break,
                Err(_) => Err(Error::Timeout(READ_TIMEOUT)),
            };
            let chunk = match chunk {
                Ok(chunk) => chunk,
                Err(e) => {
                    drop(file);
                    let _ = tokio::fs::remove_file(&part).await;
                    return Err(e);
                }
            };
            file.write_all(&chunk).await.map_err(io(&part))?;
            written += chunk.len() as u64;
        }
        file.flush().await.map_err(io(&part))?;
        drop(file);
        tokio::fs::rename(&part, path).await.map_err(io(path))?;
        Ok(written)
    }

    /// Opens an event stream (one connection): `path`, a run's or a batch's.
    pub(crate) async fn open_events(
        &self,
        path: &[&str],
        last_event_id: Option<&str>,
    ) -> Result<Response, Error> {
        let url = self.url(path);
        let mut request = self
            .inner
            .http
            .get(url)
            .header("X-API-KEY", self.inner.api_key.clone())
            .header(ACCEPT, "text/event-stream")
            .header("Cache-Control", "no-cache");
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id);
        }
        // The stream has no overall limit; the answer's head must come within the timeout.
        let sent = match self.inner.timeout {
            Some(timeout) => {
                tokio::time::timeout(timeout, request.send()).await.map_err(|_| Error::Timeout(timeout))?
            }
            None => request.send().await,
        };
        let response = sent.map_err(Error::Transport)?;
        let status = response.status().as_u16();
        let is_stream = response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| {
            v.split(';').next().unwrap_or_default().trim().eq_ignore_ascii_case("text/event-stream")
        });
        if status == 200 && is_stream {
            return Ok(response);
        }
        if status == 200 {
            return Err(Error::EventStream("the events endpoint did not answer text/event-stream".into()));
        }
        let headers = response.headers().clone();
        let body = response.bytes().await.map_err(Error::Transport)?;
        match Error::from_response(status, &headers, &body) {
            // A server without the endpoint: the caller may poll instead.
            e if matches!(status, 404 | 405 | 406 | 501)
                && !matches!(e, Error::RunNotFound { .. } | Error::BatchNotFound { .. }) =>
            {
                Err(Error::EventStream(format!("the server offers no events stream (HTTP {status})")))
            }
            e => Err(e),
        }
    }
}

fn add_webhook(body: &mut Map<String, Value>, options: &RunOptions) {
    if let Some(url) = &options.webhook_url {
        body.insert("webhook_url".into(), Value::String(url.clone()));
    }
    if let Some(events) = &options.webhook_events {
        body.insert("webhook_events".into(), serde_json::to_value(events).unwrap_or(Value::Null));
    }
    if let Some(priority) = options.priority {
        body.insert("priority".into(), serde_json::to_value(priority).unwrap_or(Value::Null));
    }
    if let Some(secs) = options.start_within_secs {
        body.insert("start_within_secs".into(), Value::from(secs));
    }
    if let Some(cache) = options.cache {
        body.insert("cache".into(), Value::Bool(cache));
    }
    if let Some(secs) = options.retention_secs {
        body.insert("retention_secs".into(), Value::from(secs));
    }
}
