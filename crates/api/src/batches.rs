//! `/api/v3/batches` (an extension): one tool or saved workflow run once per item.
//!
//! Accepting a batch compiles and prices every item (the shared `input` with the item's own
//! values over it) and checks its images (URLs against the input policy, uploads as the
//! account's own; inline data is refused: a batch names its images), then the store reserves
//! the whole price and writes the batch and its items in one transaction, or refuses it with
//! 402 and writes nothing. The maintenance leader's feeder then starts the items as runs
//! (`atelier_store::Batches::feed_batches`). Results are read a page at a time and streamed:
//! `results.jsonl` one line per item, `results.zip` each output as it is read from storage,
//! so neither holds a batch's outputs in memory.

use std::collections::{HashMap, HashSet};

use atelier_blob::BlobStore;
use atelier_core::params::{stored_input_reference, Params};
use atelier_core::status::{Priority, RunStatus};
use atelier_core::{ids, tools, RequestError};
use atelier_store::{
    format_time, Account, BatchRecord, BatchStatus, ItemQuery, ItemRecord, ItemStatus, NewBatch,
    NewBatchItem, RunKind, RunRecord, StoreError, StoredInput,
};
use atelier_wire as wire;
use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures::{StreamExt as _, TryStreamExt as _};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::error::{ApiError, RunError};
use crate::extract::{BatchId, Caller, JsonObject};
use crate::ops::{RunRequest, Target};
use crate::state::AppState;
use crate::zip::ZipWriter;
use crate::{idempotency, inputs, render, uploads, webhooks};

/// The longest `ref` of an item.
pub const MAX_REF_CHARS: usize = 200;
/// Items read per page while streaming results.
const RESULTS_PAGE: i64 = 100;

pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v3/batches", post(create).get(list))
        .route("/api/v3/batches/{batch_id}", get(show).delete(delete_batch))
        .route("/api/v3/batches/{batch_id}/items", get(items))
        .route("/api/v3/batches/{batch_id}/cancel", post(cancel))
        .route("/api/v3/batches/{batch_id}/retry", post(retry))
        .route("/api/v3/batches/{batch_id}/results.jsonl", get(results_jsonl))
        .route("/api/v3/batches/{batch_id}/results.zip", get(results_zip))
        .route("/api/v3/batches/{batch_id}/webhooks", get(deliveries))
}

/// A parsed batch body.
struct BatchBody {
    /// The target and shared input, parsed as a run's (`type`, `target`, `input`, `priority`,
    /// `cache`, `webhook_url`: where the `batch.completed` delivery goes).
    run: RunRequest,
    items: Items,
}

/// A batch's items: in the body, or an uploaded items file (`items_file`), read once the
/// target is known (a CSV cell is typed by the parameter it fills).
enum Items {
    Inline(Vec<(Option<String>, Params)>),
    File(String),
}

impl BatchBody {
    fn parse(mut body: Map<String, Value>, max_items: usize) -> Result<Self, RequestError> {
        for key in body.keys() {
            if ![
                "type",
                "target",
                "input",
                "items",
                "items_file",
                "priority",
                "cache",
                "webhook_url",
                "retention_secs",
            ]
            .contains(&key.as_str())
            {
                return Err(RequestError::InvalidRequest(format!("unknown field '{key}'")));
            }
        }
        let file = match body.remove("items_file") {
            None | Some(Value::Null) => None,
            Some(Value::String(file)) => Some(file),
            Some(_) => return Err(RequestError::invalid("items_file", "must be a string: upload:<id>")),
        };
        let items = match (body.remove("items"), file) {
            (Some(Value::Array(items)), None) => items,
            (Some(_), None) => {
                return Err(RequestError::invalid("items", "must be an array of item objects"))
            }
            (None, Some(file)) => return Ok(Self { run: Self::run_of(body)?, items: Items::File(file) }),
            (Some(_), Some(_)) => {
                return Err(RequestError::InvalidRequest("send items or items_file, not both".into()))
            }
            (None, None) => {
                return Err(RequestError::InvalidRequest("items (or items_file) is required".into()))
            }
        };
        check_count(items.len(), max_items, "items")?;
        let items =
            items.into_iter().enumerate().map(|(i, item)| parse_item(i, item)).collect::<Result<_, _>>()?;
        Ok(Self { run: Self::run_of(body)?, items: Items::Inline(items) })
    }

    /// The rest of the body, read as a run's, in the bulk lane unless it says otherwise.
    fn run_of(mut body: Map<String, Value>) -> Result<RunRequest, RequestError> {
        match body.get("input") {
            Some(Value::Object(_)) => {}
            None | Some(Value::Null) => {
                body.insert("input".into(), Value::Object(Map::new()));
            }
            Some(_) => return Err(RequestError::InvalidRequest("input must be an object".into())),
        }
        let mut run = RunRequest::from_body(body)?;
        run.priority = Some(run.priority.unwrap_or(Priority::Bulk));
        Ok(run)
    }
}

/// 1 to `max_items` items.
fn check_count(n: usize, max_items: usize, field: &str) -> Result<(), RequestError> {
    if n == 0 || n > max_items {
        return Err(RequestError::invalid(field, format!("must have 1 to {max_items} items")));
    }
    Ok(())
}

fn parse_item(index: usize, item: Value) -> Result<(Option<String>, Params), RequestError> {
    let field = |name: &str| format!("items[{index}].{name}");
    let Value::Object(mut item) = item else {
        return Err(RequestError::invalid(format!("items[{index}]"), "must be an object: {input, ref}"));
    };
    for key in item.keys() {
        if key != "input" && key != "ref" {
            return Err(RequestError::invalid(field(key), "unknown field: an item has input and ref"));
        }
    }
    let reference = match item.remove("ref") {
        None | Some(Value::Null) => None,
        Some(Value::String(r)) if !r.is_empty() && r.chars().count() <= MAX_REF_CHARS => Some(r),
        Some(_) => {
            return Err(RequestError::invalid(
                field("ref"),
                format!("must be a string of 1 to {MAX_REF_CHARS} characters"),
            ))
        }
    };
    let input = match item.remove("input") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(input)) => input,
        Some(_) => return Err(RequestError::invalid(field("input"), "must be an object")),
    };
    Ok((reference, input))
}

/// Names an item's field in an error about it: `items[3].image` (`items[3].Node.param` in a
/// workflow).
fn in_item(index: usize, e: ApiError) -> ApiError {
    let name = |f: &str| format!("items[{index}].{f}");
    match e {
        ApiError::Request(RequestError::InvalidInput { field, reason, allowed }) => {
            ApiError::Request(RequestError::InvalidInput { field: name(&field), reason, allowed })
        }
        ApiError::Request(RequestError::MissingInputs(keys)) => {
            ApiError::Request(RequestError::MissingInputs(keys.iter().map(|k| name(k)).collect()))
        }
        ApiError::InvalidImage { field, reason } => ApiError::InvalidImage { field: name(&field), reason },
        ApiError::UploadNotFound { id, field } => {
            ApiError::UploadNotFound { id, field: field.map(|f| name(&f)) }
        }
        other => other,
    }
}

async fn create(
    State(state): State<AppState>,
    Caller(account): Caller,
    headers: HeaderMap,
    JsonObject(body): JsonObject,
) -> Result<Response, RunError> {
    let keyed = idempotency::Keyed::of(idempotency::key(&headers)?, "/api/v3/batches", &body);
    let body = BatchBody::parse(body, state.config.max_batch_items).map_err(ApiError::from)?;
    let id = ids::batch_id();
    let answer = idempotency::accept_once(&state, &account, keyed, id.clone(), |key| {
        accept(&state, &account, body, id, key)
    })
    .await?;
    Ok(answer.into_response())
}

/// Compiles, prices and checks every item, then has the store reserve and write the batch.
async fn accept(
    state: &AppState,
    account: &Account,
    body: BatchBody,
    id: String,
    idempotency_key: Option<String>,
) -> Result<Value, ApiError> {
    let BatchBody { run, items } = body;
    let retention_secs = match state.config.retention.of_run(run.retention_secs, account.retention_secs)? {
        Some(0) => {
            return Err(RequestError::invalid(
                "retention_secs",
                "a batch's results are read after it ends: zero retention is for single runs",
            )
            .into())
        }
        kept => kept,
    };
    let target = Target::find(state, account, &run).await?;
    if let Some(webhook) = &run.webhook {
        webhook.check(&state.config.inputs).await?;
    }
    let node_run = target.is_tool();
    let (items, files) = match items {
        Items::Inline(items) => (items, Vec::new()),
        Items::File(value) => {
            let (format, text, file) = uploads::items_file(state, account, &value).await?;
            let ty = |name: &str| match &target {
                Target::Tool(spec) => spec.param(name).map(|p| &p.ty),
                Target::Workflow(def) => def.input_spec(name).map(|p| &p.ty),
            };
            let items = format
                .parse(&text, |name, cell| atelier_core::catalogue::typed_cell(cell, ty(name)))
                .map_err(|e| RequestError::invalid("items_file", e))?;
            check_count(items.len(), state.config.max_batch_items, "items_file")?;
            (items.into_iter().map(|i| (i.reference, i.input)).collect(), vec![file])
        }
    };
    // An image value is checked once per batch (a garment shared by 2,000 items is one upload).
    let mut images: HashMap<String, Option<StoredInput>> = HashMap::new();
    let mut batch_items = Vec::with_capacity(items.len());
    for (index, (reference, own)) in items.into_iter().enumerate() {
        let mut input = run.input.clone();
        input.extend(own);
        let mut plan = target.compile(&input, &state.config.prices).map_err(|e| in_item(index, e.into()))?;
        let mut used = Vec::new();
        for node in &mut plan.nodes {
            let Ok(spec) = tools::tool(&node.tool) else { continue };
            for param in spec.image_params() {
                let Some(Value::String(value)) = node.params.get(param.name) else { continue };
                let value = value.clone();
                let stored = match images.get(&value) {
                    Some(stored) => stored.clone(),
                    None => {
                        let field = if node_run {
                            param.name.to_string()
                        } else {
                            format!("{}.{}", node.name, param.name)
                        };
                        let stored = inputs::batch_image(state, account, &value, &field)
                            .await
                            .map_err(|e| in_item(index, e))?;
                        images.insert(value.clone(), stored.clone());
                        stored
                    }
                };
                if let Some(upload) = stored {
                    node.params
                        .insert(param.name.to_string(), Value::String(stored_input_reference(&upload.key())));
                    if !used.contains(&upload.id) {
                        used.push(upload.id);
                    }
                }
            }
        }
        batch_items.push(NewBatchItem { reference, input: Value::Object(input), plan, inputs: used });
    }
    let batch = NewBatch {
        id,
        account_id: account.id,
        key_id: account.key_id,
        kind: run.kind,
        target: &run.target,
        priority: run.priority.unwrap_or(Priority::Bulk),
        cache: run.cache,
        trace_parent: atelier_telemetry::traces::traceparent(&tracing::Span::current()),
        webhook_url: run.webhook.as_ref().map(|w| w.url.as_str()),
        items: batch_items,
        retention_secs,
        files,
        idempotency: None,
    };
    // The answer recorded under the key is the batch as accepted: every item pending.
    let price = batch.price();
    let now = atelier_core::time::now_micros();
    let total = i64::try_from(batch.items.len()).unwrap_or(i64::MAX);
    let accepted = BatchRecord {
        id: batch.id.clone(),
        account_id: account.id,
        kind: batch.kind,
        target: batch.target.to_string(),
        priority: batch.priority,
        cache: batch.cache,
        status: BatchStatus::Running,
        total,
        price,
        reserved: price,
        charged: 0,
        counts: atelier_store::ItemCounts { pending: total, ..Default::default() },
        created_at: now,
        finished_at: None,
    };
    let answer = serde_json::to_value(render_batch(&accepted, None)).unwrap_or_default();
    let batch = NewBatch {
        idempotency: idempotency_key.as_deref().map(|key| atelier_store::IdempotentAnswer {
            key,
            status: 200,
            body: &answer,
        }),
        ..batch
    };
    state.store.create_batch(&batch).await?;
    tracing::info!(account = %account.name, batch = %batch.id, items = total, tokens = price, "batch accepted");
    Ok(answer)
}

/// A store error about batch `id` as the API answers it: `BatchNotFound` for a batch that is
/// not the caller's.
pub(crate) fn lookup(id: &str) -> impl FnOnce(StoreError) -> ApiError + '_ {
    move |e| match e {
        StoreError::NotFound => ApiError::BatchNotFound(id.to_string()),
        other => other.into(),
    }
}

async fn show(
    State(state): State<AppState>,
    Caller(account): Caller,
    BatchId(id): BatchId,
) -> Result<Json<wire::Batch>, ApiError> {
    let batch = state.store.get_batch(account.id, &id).await.map_err(lookup(&id))?;
    Ok(Json(render_batch(&batch, None)))
}

async fn cancel(
    State(state): State<AppState>,
    Caller(account): Caller,
    BatchId(id): BatchId,
) -> Result<Json<wire::Batch>, ApiError> {
    let batch = state.store.cancel_batch(account.id, &id).await.map_err(lookup(&id))?;
    Ok(Json(render_batch(&batch, None)))
}

async fn retry(
    State(state): State<AppState>,
    Caller(account): Caller,
    BatchId(id): BatchId,
) -> Result<Json<wire::Batch>, ApiError> {
    let (batch, retried) = state.store.retry_batch(account.id, &id).await.map_err(lookup(&id))?;
    Ok(Json(render_batch(&batch, Some(retried))))
}

#[derive(Deserialize)]
struct ListPage {
    limit: Option<i64>,
    before: Option<i64>,
}

async fn list(
    State(state): State<AppState>,
    Caller(account): Caller,
    page: Result<Query<ListPage>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<wire::BatchList>, ApiError> {
    let Query(page) = page.map_err(|e| RequestError::InvalidRequest(e.body_text()))?;
    let limit = page.limit.unwrap_or(20).clamp(1, 100);
    let batches = state.store.list_batches(account.id, page.before, limit).await?;
    let next_before = (batches.len() as i64 == limit).then(|| batches.last().map(|b| b.created_at)).flatten();
    let batches = batches
        .iter()
        .map(|b| wire::BatchSummary {
            id: b.id.clone(),
            status: state_of(b.status),
            kind: b.kind.into(),
            target: b.target.clone(),
            total: b.total,
            created_at: format_time(b.created_at),
            finished_at: b.finished_at.map(format_time),
        })
        .collect();
    Ok(Json(wire::BatchList { batches, next_before }))
}

#[derive(Deserialize)]
struct ItemPage {
    status: Option<String>,
    after: Option<i64>,
    limit: Option<i64>,
}

/// The item states a query names.
fn item_status(text: Option<&str>) -> Result<Option<ItemStatus>, ApiError> {
    match text.filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(text) => text.parse::<ItemStatus>().map(Some).map_err(|_| {
            RequestError::invalid("status", "one of pending, queued, running, succeeded, failed, canceled")
                .into()
        }),
    }
}

async fn items(
    State(state): State<AppState>,
    Caller(account): Caller,
    BatchId(id): BatchId,
    page: Result<Query<ItemPage>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<wire::BatchItemList>, ApiError> {
    let Query(page) = page.map_err(|e| RequestError::InvalidRequest(e.body_text()))?;
    let limit = page.limit.unwrap_or(50).clamp(1, 100);
    let query = ItemQuery { status: item_status(page.status.as_deref())?, after: page.after, limit };
    let records = state.store.batch_items(account.id, &id, &query).await.map_err(lookup(&id))?;
    let next_after = (records.len() as i64 == limit).then(|| records.last().map(|i| i.index)).flatten();
    let mut items = Vec::with_capacity(records.len());
    for record in &records {
        let run = item_run(&state, account.id, record).await?;
        items.push(render_item(&state.blob, record, run.as_ref()));
    }
    Ok(Json(wire::BatchItemList { items, next_after }))
}

/// The item's current run, when it has one.
async fn item_run(
    state: &AppState,
    account_id: i64,
    item: &ItemRecord,
) -> Result<Option<RunRecord>, ApiError> {
    let Some(run_id) = &item.run_id else { return Ok(None) };
    match state.store.get_run(account_id, run_id).await {
        Ok(run) => Ok(Some(run)),
        Err(StoreError::NotFound) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Every item of a batch, a page at a time, with its run; the stream ends after the last
/// page, or with an error item when a read fails midway (the response has started: its
/// status cannot change any more).
fn item_pages(
    state: AppState,
    account_id: i64,
    batch_id: String,
) -> impl futures::Stream<Item = Result<(ItemRecord, Option<RunRecord>), ApiError>> {
    futures::stream::try_unfold(Some(-1i64), move |after| {
        let (state, batch_id) = (state.clone(), batch_id.clone());
        async move {
            let Some(after) = after else { return Ok(None) };
            let query = ItemQuery { status: None, after: Some(after), limit: RESULTS_PAGE };
            let records = state.store.batch_items(account_id, &batch_id, &query).await?;
            let next =
                (records.len() as i64 == RESULTS_PAGE).then(|| records.last().map(|r| r.index)).flatten();
            let mut page = Vec::with_capacity(records.len());
            for record in records {
                let run = item_run(&state, account_id, &record).await?;
                page.push(Ok((record, run)));
            }
            Ok::<_, ApiError>(Some((futures::stream::iter(page), next)))
        }
    })
    .try_flatten()
}

async fn results_jsonl(
    State(state): State<AppState>,
    Caller(account): Caller,
    BatchId(id): BatchId,
) -> Result<Response, ApiError> {
    // Found first, so that a batch that does not exist is a 404, not an empty stream.
    state.store.get_batch(account.id, &id).await.map_err(lookup(&id))?;
    let blob = state.blob.clone();
    let lines = item_pages(state, account.id, id.clone()).map(move |item| match item {
        Ok((record, run)) => {
            let mut line = serde_json::to_vec(&render_item(&blob, &record, run.as_ref())).unwrap_or_default();
            line.push(b'\n');
            Ok::<_, std::io::Error>(Bytes::from(line))
        }
        Err(e) => {
            tracing::warn!(error = %e, "reading a batch's items failed while streaming its results");
            Err(std::io::Error::other(e.to_string()))
        }
    });
    Ok(attachment(Body::from_stream(lines), "application/x-ndjson", &format!("{id}-results.jsonl")))
}

async fn results_zip(
    State(state): State<AppState>,
    Caller(account): Caller,
    BatchId(id): BatchId,
) -> Result<Response, ApiError> {
    state.store.get_batch(account.id, &id).await.map_err(lookup(&id))?;
    let blob = state.blob.clone();
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    let items = item_pages(state, account.id, id.clone());
    tokio::spawn(async move {
        let mut zip = ZipWriter::new(atelier_core::time::now_micros() / 1_000_000);
        let mut names = Names::default();
        let mut items = std::pin::pin!(items);
        while let Some(item) = items.next().await {
            let (record, run) = match item {
                Ok(item) => item,
                Err(e) => {
                    tracing::warn!(error = %e, "reading a batch's items failed while streaming its outputs");
                    let _ = tx.send(Err(std::io::Error::other(e.to_string()))).await;
                    return;
                }
            };
            let Some(run) = run.filter(|r| r.status == RunStatus::Succeeded) else { continue };
            let folder = names.folder(&record);
            for (name, key) in output_files(&run) {
                let data = match blob.get(&key).await {
                    Ok(data) => data,
                    // Swept since (past its retention): left out.
                    Err(e) => {
                        tracing::debug!(error = %e, key, "a batch output is gone; left out of the archive");
                        continue;
                    }
                };
                let header = zip.entry(&format!("{folder}/{name}"), &data);
                if tx.send(Ok(Bytes::from(header))).await.is_err() || tx.send(Ok(data)).await.is_err() {
                    return; // The client went away.
                }
            }
        }
        let _ = tx.send(Ok(Bytes::from(zip.finish()))).await;
    });
    let body = Body::from_stream(tokio_stream_of(rx));
    Ok(attachment(body, "application/zip", &format!("{id}-results.zip")))
}

fn tokio_stream_of<T: Send + 'static>(
    mut rx: tokio::sync::mpsc::Receiver<T>,
) -> impl futures::Stream<Item = T> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

fn attachment(body: Body, content_type: &'static str, filename: &str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Ok(value) = HeaderValue::from_str(&format!("attachment; filename=\"{filename}\"")) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    response
}

/// The folders of `results.zip`: an item's `ref` made safe for a path, or `item-<index>`;
/// a folder name already taken gets `~<index>`.
#[derive(Default)]
struct Names {
    taken: HashSet<String>,
}

impl Names {
    fn folder(&mut self, item: &ItemRecord) -> String {
        let base = match &item.reference {
            Some(r) => {
                let safe: String = r
                    .chars()
                    .map(|c| {
                        if c.is_control() || matches!(c, '/' | '\\' | ':' | '*' | '?' | '"' | '<' | '>' | '|')
                        {
                            '_'
                        } else {
                            c
                        }
                    })
                    .collect();
                let safe = safe.trim().trim_matches('.').to_string();
                if safe.is_empty() {
                    format!("item-{}", item.index)
                } else {
                    safe
                }
            }
            None => format!("item-{}", item.index),
        };
        if self.taken.insert(base.clone()) {
            base
        } else {
            let name = format!("{base}~{}", item.index);
            self.taken.insert(name.clone());
            name
        }
    }
}

/// A succeeded run's output objects, each with its name in the archive: a tool's
/// `output.<ext>` (`output-<n>.<ext>` when it made several), a workflow's output names.
fn output_files(run: &RunRecord) -> Vec<(String, String)> {
    let named = |name: &str, keys: &[String]| -> Vec<(String, String)> {
        keys.iter()
            .enumerate()
            .map(|(n, key)| {
                let ext = key.rsplit_once('.').map_or("bin", |(_, ext)| ext);
                let file =
                    if keys.len() == 1 { format!("{name}.{ext}") } else { format!("{name}-{}.{ext}", n + 1) };
                (file, key.clone())
            })
            .collect()
    };
    match run.kind {
        RunKind::Node => run.nodes.first().map(|n| named("output", &n.outputs)).unwrap_or_default(),
        RunKind::Workflow => run
            .outputs
            .iter()
            .flat_map(|(name, node)| {
                run.nodes
                    .iter()
                    .find(|n| &n.name == node)
                    .map(|n| named(name, &n.outputs))
                    .unwrap_or_default()
            })
            .collect(),
    }
}

fn state_of(status: BatchStatus) -> wire::BatchState {
    match status {
        BatchStatus::Running => wire::BatchState::Running,
        BatchStatus::Finished => wire::BatchState::Finished,
        BatchStatus::Canceled => wire::BatchState::Canceled,
    }
}

fn item_state(status: ItemStatus) -> wire::ItemState {
    match status {
        ItemStatus::Pending => wire::ItemState::Pending,
        ItemStatus::Queued => wire::ItemState::Queued,
        ItemStatus::Running => wire::ItemState::Running,
        ItemStatus::Succeeded => wire::ItemState::Succeeded,
        ItemStatus::Failed => wire::ItemState::Failed,
        ItemStatus::Canceled => wire::ItemState::Canceled,
    }
}

/// A batch's `batch.completed` deliveries, each with its attempts.
async fn deliveries(
    State(state): State<AppState>,
    Caller(account): Caller,
    BatchId(id): BatchId,
) -> Result<Json<wire::WebhookDeliveryList>, ApiError> {
    // A deleted batch's deliveries are gone with it.
    state.store.get_batch(account.id, &id).await.map_err(lookup(&id))?;
    let list = state.store.batch_deliveries(account.id, &id).await.map_err(lookup(&id))?;
    Ok(Json(wire::WebhookDeliveryList { deliveries: list.iter().map(webhooks::delivery_shape).collect() }))
}

/// The body of a batch's delivery: `batch.completed` with the batch as its status endpoint
/// answers.
pub fn webhook_body(batch: &BatchRecord) -> Result<Vec<u8>, String> {
    let event = wire::WebhookBatchEvent {
        kind: wire::BatchEventType::BatchCompleted,
        batch: render_batch(batch, None),
    };
    serde_json::to_vec(&event).map_err(|e| e.to_string())
}

/// A batch's wire shape; `retried` on a retry's answer.
pub fn render_batch(batch: &BatchRecord, retried: Option<i64>) -> wire::Batch {
    let c = &batch.counts;
    let total = c.total().max(batch.total);
    wire::Batch {
        id: batch.id.clone(),
        status: state_of(batch.status),
        kind: batch.kind.into(),
        target: batch.target.clone(),
        priority: batch.priority.into(),
        items: wire::BatchCounts {
            total,
            pending: c.pending,
            queued: c.queued,
            running: c.running,
            succeeded: c.succeeded,
            failed: c.failed,
            canceled: c.canceled,
        },
        tokens: wire::BatchTokens { price: batch.price, reserved: batch.reserved, charged: batch.charged },
        progress: if total > 0 { c.ended() as f64 / total as f64 } else { 1.0 },
        created_at: format_time(batch.created_at),
        finished_at: batch.finished_at.map(format_time),
        retried,
    }
}

/// An item's wire shape, with its run's outputs and error.
fn render_item(blob: &BlobStore, item: &ItemRecord, run: Option<&RunRecord>) -> wire::BatchItem {
    let status = run.map(|r| render::v3_status(blob, r, None));
    let succeeded = item.status == ItemStatus::Succeeded;
    let (output, outputs, error) = match status {
        Some(s) => (s.output.filter(|_| succeeded), s.outputs.filter(|_| succeeded), s.error),
        None => (None, None, None),
    };
    wire::BatchItem {
        index: item.index,
        reference: item.reference.clone(),
        status: item_state(item.status),
        run_id: item.run_id.clone(),
        attempts: item.history.clone(),
        output,
        outputs,
        error,
    }
}

/// `DELETE /api/v3/batches/{batch_id}`: a batch that ended, with every run of it (each
/// attempt of each item), deleted as `DELETE /api/v3/runs/{id}` deletes a run; later reads of
/// the batch and its runs answer 410 `Deleted`. A running batch is 409 (cancel it first).
pub(crate) async fn delete_batch(
    State(state): State<AppState>,
    Caller(account): Caller,
    origin: crate::audit::Origin,
    BatchId(id): BatchId,
) -> Result<Json<wire::Deletion>, ApiError> {
    let deletion = state
        .store
        .delete_batch(account.id, &id, &crate::deletion::actor(&account))
        .await
        .map_err(lookup(&id))?;
    if !deletion.already {
        let summary = serde_json::json!({"runs": deletion.runs.len()});
        crate::audit::record(&state, &account, &origin, "batch.deleted", Some(&id), summary).await;
    }
    for run in &deletion.runs {
        state.finished.forget(Some(&run.run_id));
    }
    match crate::deletion::erase_batch(state.store.as_ref(), &state.blob, &deletion).await {
        Ok(objects) if !deletion.already => {
            tracing::info!(batch = %id, runs = deletion.runs.len(), objects, "deleted a batch on request")
        }
        Ok(_) => {}
        Err(e) => {
            tracing::warn!(batch = %id, error = %e, "deleting a batch's stored files failed; the sweeper retries")
        }
    }
    Ok(Json(wire::Deletion { id, deleted: true, deleted_at: format_time(deletion.deleted_at) }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(body: Value) -> Result<BatchBody, RequestError> {
        BatchBody::parse(body.as_object().unwrap().clone(), 3)
    }

    #[test]
    fn a_body_is_a_run_body_with_items() {
        let body = parse(json!({"type": "node", "target": "upscale", "input": {"scale": 2},
            "items": [{"input": {"image": "u"}, "ref": "sku-1"}, {}]}))
        .unwrap();
        assert_eq!(body.run.priority, Some(Priority::Bulk), "bulk by default");
        let Items::Inline(items) = &body.items else { panic!("items in the body") };
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].0.as_deref(), Some("sku-1"));
        let file = parse(json!({"type": "node", "target": "upscale", "items_file": "upload:abc"})).unwrap();
        let hooked =
            parse(json!({"type": "node", "target": "upscale", "items": [{}], "webhook_url": "https://example.com/h"}))
                .unwrap();
        assert_eq!(hooked.run.webhook.map(|w| w.url.to_string()).as_deref(), Some("https://example.com/h"));
        assert!(matches!(file.items, Items::File(ref v) if v == "upload:abc"));
        for (bad, says) in [
            (json!({"type": "node", "target": "upscale"}), "items (or items_file) is required"),
            (
                json!({"type": "node", "target": "upscale", "items": [{}], "items_file": "upload:x"}),
                "not both",
            ),
            (json!({"type": "node", "target": "upscale", "items_file": 3}), "items_file"),
            (json!({"type": "node", "target": "upscale", "items": []}), "1 to 3"),
            (json!({"type": "node", "target": "upscale", "items": [{}, {}, {}, {}]}), "1 to 3"),
            (json!({"type": "node", "target": "upscale", "items": [{"inputs": {}}]}), "items[0].inputs"),
            (json!({"type": "node", "target": "upscale", "items": [{"ref": ""}]}), "items[0].ref"),
            (json!({"type": "node", "target": "upscale", "items": [7]}), "items[0]"),
            (
                json!({"type": "node", "target": "upscale", "items": [{}], "webhook_events": ["node"]}),
                "unknown field",
            ),
            (
                json!({"type": "node", "target": "upscale", "items": [{}], "webhook_url": "ftp://x"}),
                "webhook_url",
            ),
            (
                json!({"type": "node", "target": "upscale", "items": [{}], "input": 3}),
                "input must be an object",
            ),
        ] {
            let e = parse(bad.clone()).err().unwrap_or_else(|| panic!("{bad}"));
            assert!(e.to_string().contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn zip_folders_are_safe_refs_made_unique() {
        let item = |index, r: Option<&str>| ItemRecord {
            index,
            reference: r.map(str::to_owned),
            status: ItemStatus::Succeeded,
            run_id: None,
            history: vec![],
        };
        let mut names = Names::default();
        assert_eq!(names.folder(&item(0, Some("SKU/1"))), "SKU_1");
        assert_eq!(names.folder(&item(1, Some("SKU/1"))), "SKU_1~1");
        assert_eq!(names.folder(&item(2, Some("../.."))), "_", "no step out of the archive");
        assert_eq!(names.folder(&item(3, None)), "item-3");
        assert_eq!(names.folder(&item(4, Some("..."))), "item-4");
    }
}
