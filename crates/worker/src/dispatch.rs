//! The dispatcher and the execution of one task.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use atelier_core::keys::output as output_key;
use atelier_core::params::stored_input_key;
use atelier_core::status::TaskState;
use atelier_core::{tools, NodeError, NodeErrorName};
use atelier_inputs::InputError;
use atelier_store::{CacheEntry, ClaimedTask, NodeRecord, Outcome};
use atelier_tools::{Artifact, Context, Execution, Progress, ToolError};
use base64::Engine as _;
use bytes::Bytes;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::{watch, Semaphore};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn, Instrument as _};

use crate::queue::CacheHit;
use crate::slots::ToolSlots;
use crate::{credentials, Workers};

/// Claims tasks while slots are free; waits for a wake-up, a tool slot given
/// back, an endpoint coming back or the poll interval when nothing it may take
/// is queued.
///
/// Two bounds hold at once: `slots` nodes in all, and for each bounded tool
/// (`tool_slots`, or a model server's usable slots: none while its endpoints
/// are all down) its limit. A claim names the tools that are full, so the
/// store hands out only work this process can start now and leaves the rest
/// queued: a node waiting for a model server holds no worker slot, and the
/// nodes of other tools behind it run. While no bounded tool has room, one
/// claim fills every free slot (`TaskQueue::claim_batch`; the tasks it can
/// return are all of unbounded tools), and without bounded tools a slot whose
/// task ends claims its next task in the transaction that records the end
/// (`crate::completions`); otherwise a claim takes one task, so that the next
/// claim knows which tools are full.
pub(crate) async fn dispatch(workers: Workers, shutdown: CancellationToken) {
    let slots = Arc::new(Semaphore::new(workers.config.slots.max(1)));
    let bounded: BTreeMap<String, Arc<dyn atelier_tools::Executor>> =
        workers.tools.bounded().into_iter().map(|(tool, e)| (tool.spec().name.to_string(), e)).collect();
    let tool_slots = ToolSlots::new(workers.config.tool_slots.clone(), bounded);
    if tool_slots.any() {
        info!(slots = workers.config.slots, tool_slots = ?workers.config.tool_slots, "per-tool slots");
    }
    let capacity_changed = workers.tools.capacity_changed().clone();
    let expirer = tokio::spawn(expire_waits(workers.clone(), tool_slots.clone(), shutdown.clone()));
    let mut running = tokio::task::JoinSet::new();
    loop {
        // `biased`: once shutdown is signalled, no branch that leads to a claim is taken.
        let first = tokio::select! {
            biased;
            _ = shutdown.cancelled() => break,
            permit = slots.clone().acquire_owned() => match permit { Ok(p) => p, Err(_) => break },
        };
        let skip = tool_slots.full();
        let mut permits = vec![first];
        if !tool_slots.any() || tool_slots.all_in(&skip) {
            while let Ok(more) = slots.clone().try_acquire_owned() {
                permits.push(more);
            }
        }
        let skip_names: Vec<&str> = skip.iter().map(String::as_str).collect();
        match workers
            .queue
            .claim_batch(&workers.worker_id, workers.config.lease, &skip_names, permits.len())
            .await
        {
            Ok(tasks) if shutdown.is_cancelled() => {
                for task in &tasks {
                    give_back(&workers, task).await;
                }
                break;
            }
            Ok(tasks) if !tasks.is_empty() => {
                // Slots beyond the tasks claimed are given back as `permits` drops.
                for (task, permit) in tasks.into_iter().zip(permits.drain(..)) {
                    let tool_permit = tool_slots.take(&task.node.tool);
                    let workers = workers.clone();
                    let shutdown = shutdown.clone();
                    running.spawn(async move {
                        let mut next = Some(task);
                        while let Some(task) = next {
                            let span = node_span(&task);
                            next = execute(&workers, task, &shutdown).instrument(span).await;
                        }
                        drop(tool_permit);
                        drop(permit);
                    });
                }
            }
            Ok(_) => {
                drop(permits);
                // With tools skipped, a slot given back or an endpoint that comes back may make
                // queued work claimable.
                let some_skipped = !skip.is_empty();
                tokio::select! {
                    biased;
                    _ = shutdown.cancelled() => break,
                    _ = workers.queue.task_ready() => {}
                    _ = tool_slots.freed(), if some_skipped => {}
                    _ = capacity_changed.notified(), if some_skipped => {}
                    _ = tokio::time::sleep(workers.config.poll) => {}
                }
            }
            Err(e) => {
                drop(permits);
                warn!(error = %e, "claiming a task failed");
                tokio::time::sleep(workers.config.poll).await;
            }
        }
        while running.try_join_next().is_some() {}
    }
    while running.join_next().await.is_some() {}
    expirer.abort();
}

/// How often the nodes of tools without a usable endpoint are checked for having waited too
/// long.
const EXPIRE_EVERY: Duration = Duration::from_secs(1);

/// Fails the queued nodes of a tool that has had no usable endpoint for its `wait_secs`, once
/// they have waited that long themselves (`EngineUnavailable`, not charged). Every worker
/// process with the tool routed does this for its own view of the endpoints; a node is
/// failed once (`TaskQueue::fail_waiting` re-reads each under its run's lock).
async fn expire_waits(workers: Workers, tool_slots: Arc<ToolSlots>, shutdown: CancellationToken) {
    let mut tick = tokio::time::interval(EXPIRE_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        for down in tool_slots.down() {
            if down.for_ < down.wait {
                continue;
            }
            let since = atelier_core::time::now_micros()
                .saturating_sub(i64::try_from(down.wait.as_micros()).unwrap_or(i64::MAX));
            let error = NodeError::new(
                NodeErrorName::EngineUnavailable,
                format!("{} for {} s; the node waited as long as it may", down.why, down.wait.as_secs()),
            );
            // In pages, so that one transaction never holds a long queue's runs.
            loop {
                match workers.queue.fail_waiting(&down.tool, since, &error, EXPIRE_PAGE).await {
                    Ok(n) if n > 0 => {
                        info!(tool = %down.tool, nodes = n, "failed nodes that waited too long for an engine");
                        metrics::counter!("atelier_engine_wait_expired_total", "tool" => down.tool.clone())
                            .increment(n as u64);
                        if n < EXPIRE_PAGE {
                            break;
                        }
                    }
                    Ok(_) => break,
                    Err(e) => {
                        warn!(tool = %down.tool, error = %e, "failing nodes that waited too long failed");
                        break;
                    }
                }
            }
        }
    }
}

const EXPIRE_PAGE: usize = 100;

/// Why an attempt ended without outputs.
struct Failure {
    name: NodeErrorName,
    message: String,
    retryable: bool,
    /// The engine lost the work before it answered (`ToolError::Lost`): not an attempt.
    lost: bool,
}

impl Failure {
    fn new(name: NodeErrorName, message: impl Into<String>, retryable: bool) -> Self {
        Self { name, message: message.into(), retryable, lost: false }
    }
}

impl From<InputError> for Failure {
    fn from(e: InputError) -> Self {
        Self::new(NodeErrorName::InputFetchFailed, e.to_string(), e.is_retryable())
    }
}

impl From<ToolError> for Failure {
    fn from(e: ToolError) -> Self {
        Self { lost: matches!(e, ToolError::Lost(_)), ..Self::new(e.name(), e.to_string(), e.is_retryable()) }
    }
}

impl From<atelier_blob::BlobError> for Failure {
    fn from(e: atelier_blob::BlobError) -> Self {
        Self::new(NodeErrorName::ToolFailed, format!("storage: {e}"), true)
    }
}

/// What a node's work gave: outputs it made, or copies of outputs the result cache holds.
enum Produced {
    Ran(Vec<String>),
    Cached(CacheHit),
}

enum Ended {
    Done(Result<Produced, Failure>),
    /// The lease is gone: canceled, or rescued after a stall. Write nothing.
    LeaseLost,
    /// Shutdown outlasted the grace period: give the task back.
    Shutdown,
}

/// The span of one attempt of a node: with traces on, a child of the span of the request
/// that made the run (`ClaimedTask::trace_parent`), so that a run is one trace whichever
/// processes run its nodes.
fn node_span(task: &ClaimedTask) -> tracing::Span {
    use tracing::field::Empty;
    atelier_telemetry::traces::run_span(task.trace_parent.as_deref(), || {
        tracing::info_span!(target: "atelier::trace", "node",
            otel.name = %format_args!("node {}", task.node.tool), atelier.run_id = %task.run_id,
            atelier.node = %task.node.name, atelier.tool = %task.node.tool, atelier.attempt = task.attempt,
            atelier.engine = Empty, atelier.outcome = Empty, otel.status_code = Empty,
            otel.status_description = Empty)
    })
}

/// Runs a claimed task in the caller's slot and records how it ended; returns the slot's next
/// task when the completion claimed one (`crate::completions`: without per-tool slots, and
/// unless shutdown began).
async fn execute(workers: &Workers, task: ClaimedTask, shutdown: &CancellationToken) -> Option<ClaimedTask> {
    let started = std::time::Instant::now();
    // Fired before the work is dropped when the run was canceled or the node ran out of time,
    // so that an executor with remote work stops it (`atelier_tools::Context`).
    let cancel = CancellationToken::new();
    let (progress_tx, mut progress) = watch::channel(None::<f32>);
    let deadline = tokio::time::Instant::now() + workers.config.node_timeout;
    // The work and its heartbeats borrow the task; the block ends them before the task is
    // handed to the completion writer.
    let ended = {
        let work = run_node(workers, &task, Attempt { cancel: &cancel, progress: progress_tx, deadline });
        tokio::pin!(work);
        let out_of_time = tokio::time::sleep_until(deadline);
        tokio::pin!(out_of_time);
        let mut beat = tokio::time::interval(workers.config.heartbeat);
        beat.tick().await;
        let mut stops = workers.queue.stops();
        // Progress is written at most every PROGRESS_EVERY; the latest value waits meanwhile.
        let mut unwritten: Option<f32> = None;
        let write_progress = tokio::time::sleep(Duration::ZERO);
        tokio::pin!(write_progress);
        let grace = async {
            shutdown.cancelled().await;
            tokio::time::sleep(workers.config.shutdown_grace).await;
        };
        tokio::pin!(grace);
        loop {
            tokio::select! {
                result = &mut work => break Ended::Done(result),
                _ = &mut out_of_time => {
                    cancel.cancel();
                    break Ended::Done(Err(Failure::new(
                        NodeErrorName::Timeout,
                        format!("the node did not finish within {} s", workers.config.node_timeout.as_secs()),
                        false,
                    )));
                }
                // A run was canceled somewhere: check this lease now rather than at the next beat.
                changed = stops.changed() => {
                    if changed.is_err() {
                        // The store is gone; heartbeats will say so.
                        stops = workers.queue.stops();
                    }
                    if let Ok(false) = workers.queue.heartbeat(&task, workers.config.lease).await {
                        break lease_lost(workers, &task, &cancel).await;
                    }
                }
                _ = beat.tick() => match workers.queue.heartbeat(&task, workers.config.lease).await {
                    Ok(true) => {}
                    Ok(false) => break lease_lost(workers, &task, &cancel).await,
                    Err(e) => warn!(error = %e, "heartbeat failed"),
                },
                Ok(()) = progress.changed() => {
                    unwritten = *progress.borrow_and_update();
                }
                _ = &mut write_progress, if unwritten.is_some() => {
                    if let Some(value) = unwritten.take() {
                        if let Err(e) = workers.queue.record_progress(&task, value).await {
                            warn!(error = %e, "recording progress failed");
                        }
                    }
                    write_progress.as_mut().reset(tokio::time::Instant::now() + PROGRESS_EVERY);
                }
                _ = &mut grace => break Ended::Shutdown,
            }
        }
    };
    let node = &task.node.name;
    let outcome = match ended {
        Ended::LeaseLost => {
            info!(run = %task.run_id, node, "lease lost; stopping the node");
            return None;
        }
        Ended::Shutdown => {
            give_back(workers, &task).await;
            return None;
        }
        Ended::Done(Ok(Produced::Ran(keys))) => {
            workers.failpoints.after_publish(&task);
            Outcome::Succeeded(keys)
        }
        Ended::Done(Ok(Produced::Cached(hit))) => {
            metrics::counter!("atelier_cache_lookups_total", "result" => "hit").increment(1);
            metrics::counter!("atelier_cache_bytes_saved_total")
                .increment(u64::try_from(hit.bytes).unwrap_or(0));
            Outcome::Cached { outputs: hit.outputs, source_run: hit.source_run }
        }
        Ended::Done(Err(f)) if f.lost && losses_in_a_row(workers, &task).await < MAX_LOSSES => {
            return_lost(workers, &task, &f).await;
            return None;
        }
        Ended::Done(Err(f)) => {
            let backoff = backoff(workers.config.retry_backoff, task.attempt, task.task_id);
            Outcome::Failed { error: NodeError::new(f.name, f.message), retryable: f.retryable, backoff }
        }
    };
    let succeeded = matches!(outcome, Outcome::Succeeded(_) | Outcome::Cached { .. });
    let kind = match &outcome {
        Outcome::Succeeded(_) => "succeeded",
        Outcome::Cached { .. } => "cached",
        Outcome::Failed { retryable: true, .. } if task.attempt < task.max_attempts => "retried",
        Outcome::Failed { .. } => "failed",
    };
    let engine_kind = engine_kind(workers, &task);
    let span = tracing::Span::current();
    span.record("atelier.engine", engine_kind);
    span.record("atelier.outcome", kind);
    if let Outcome::Failed { error, .. } = &outcome {
        span.record("otel.status_code", "error");
        span.record("otel.status_description", format_args!("{}: {}", error.name.as_str(), error.message));
    }
    // The task goes to the completion writer; what the log lines name stays here.
    let (run, node, tool, attempt) =
        (task.run_id.clone(), node.clone(), task.node.tool.clone(), task.attempt);
    // With bounded tools, the next claim must name the tools that are full: the dispatcher
    // makes it.
    let wants_next = !workers.bounded && !shutdown.is_cancelled();
    let next = match workers.completions.complete(&workers.queue, task, outcome, wants_next).await {
        Ok((true, next)) => {
            let elapsed = started.elapsed();
            info!(%run, node, %tool, attempt, succeeded, ms = elapsed.as_millis() as u64, "node finished");
            let labels = [("tool", tool.clone()), ("engine", engine_kind.to_string())];
            metrics::histogram!("atelier_node_attempt_duration_seconds", &labels)
                .record(elapsed.as_secs_f64());
            let labels =
                [("tool", tool.clone()), ("engine", engine_kind.to_string()), ("outcome", kind.to_string())];
            metrics::counter!("atelier_node_attempts_total", &labels).increment(1);
            next
        }
        Ok((false, next)) => {
            info!(%run, node, "completion fenced off: the claim was lost");
            next
        }
        Err(e) => {
            warn!(%run, node, error = %e, "recording a completion failed; the lease will expire and the node will run again");
            None
        }
    };
    match next {
        Some(next) if shutdown.is_cancelled() => {
            give_back(workers, &next).await;
            None
        }
        next => next,
    }
}

/// The kind of engine that runs the task's tool, as metrics and spans label it.
fn engine_kind(workers: &Workers, task: &ClaimedTask) -> &'static str {
    task.node
        .tool
        .parse::<tools::ToolId>()
        .ok()
        .and_then(|tool| workers.tools.get(tool))
        .map_or("builtin", |executor| executor.engine())
}

/// How often, at most, a running node's progress is written.
const PROGRESS_EVERY: Duration = Duration::from_millis(500);

/// The lease is gone. When the run was canceled, the executor's remote work is stopped too;
/// after a rescue (this worker stalled) another worker resumes the attempt, so it is left
/// running.
async fn lease_lost(workers: &Workers, task: &ClaimedTask, cancel: &CancellationToken) -> Ended {
    match workers.queue.task_state(task.task_id).await {
        Ok(Some(TaskState::Canceled)) | Ok(None) => cancel.cancel(),
        Ok(_) => {}
        Err(e) => warn!(error = %e, "reading why a lease was lost failed; leaving remote work running"),
    }
    Ended::LeaseLost
}

/// Work an engine lost, given back in a row, after which the next loss counts as a failed
/// attempt: a node whose input takes its server down each time (a crash on that input) ends
/// instead of taking the server down forever.
const MAX_LOSSES: usize = 5;

/// How many times in a row, since its last counted attempt, the node's work was lost.
async fn losses_in_a_row(workers: &Workers, task: &ClaimedTask) -> usize {
    match workers.queue.task_errors(task).await {
        Ok(errors) => errors.iter().rev().take_while(|e| e["counted"] == Value::Bool(false)).count(),
        Err(e) => {
            warn!(error = %e, "reading the node's attempts failed; counting the loss as an attempt");
            MAX_LOSSES
        }
    }
}

/// The engine lost the work before it answered: the node goes back to the queue without
/// counting an attempt, and is claimed again once its tool has room (a usable endpoint).
async fn return_lost(workers: &Workers, task: &ClaimedTask, failure: &Failure) {
    let error = NodeError::new(failure.name, failure.message.clone());
    info!(run = %task.run_id, node = %task.node.name, error = %failure.message, "the engine lost the work; the node waits for it");
    tracing::Span::current().record("atelier.outcome", "lost");
    let labels = [
        ("tool", task.node.tool.clone()),
        ("engine", engine_kind(workers, task).to_string()),
        ("outcome", "lost".to_string()),
    ];
    metrics::counter!("atelier_node_attempts_total", &labels).increment(1);
    match workers.queue.return_lost(task, &error).await {
        Ok(true) => {}
        Ok(false) => {
            info!(run = %task.run_id, node = %task.node.name, "giving back fenced off: the claim was lost")
        }
        Err(e) => warn!(error = %e, "giving back a lost node failed; its lease will expire"),
    }
}

/// Gives a task back at shutdown (unfinished after the grace period, or claimed while
/// shutdown began), without counting an attempt.
async fn give_back(workers: &Workers, task: &ClaimedTask) {
    if let Err(e) = workers.queue.release(task).await {
        warn!(error = %e, "releasing a task at shutdown failed; its lease will expire");
    }
}

/// Exponential backoff with deterministic jitter: base × 2^(attempt-1) × [1, 1.5).
fn backoff(base: Duration, attempt: u32, salt: i64) -> Duration {
    let exp = base.saturating_mul(1 << attempt.saturating_sub(1).min(16));
    let jitter = (salt.unsigned_abs() % 500) as u32;
    exp + exp * jitter / 1000
}

/// What `run_node` passes on to the executor (`atelier_tools::Context`).
struct Attempt<'a> {
    cancel: &'a CancellationToken,
    progress: watch::Sender<Option<f32>>,
    deadline: tokio::time::Instant,
}

/// Loads the node's inputs, and copies the outputs the result cache holds for the same work,
/// or runs its tool once per fan-out element, writes the outputs and records them in the
/// cache.
async fn run_node(workers: &Workers, task: &ClaimedTask, attempt: Attempt<'_>) -> Result<Produced, Failure> {
    workers.failpoints.before_tool(task);
    let node = &with_stored_inputs(workers, task).await?;
    let spec =
        tools::tool(&node.tool).map_err(|e| Failure::new(NodeErrorName::ToolFailed, e.to_string(), false))?;

    // Every image parameter as a list: linked ones from upstream outputs, the
    // rest from the values the caller gave.
    let mut images: HashMap<String, Vec<Bytes>> = HashMap::new();
    for param in spec.image_params() {
        if let Some(keys) = task.upstream.get(param.name) {
            let mut list = Vec::with_capacity(keys.len());
            for key in keys {
                let bytes = match held_output(key) {
                    Some(held) => held?,
                    None => workers.queue.get_blob(task, key).await?,
                };
                list.push(bytes);
            }
            images.insert(param.name.to_string(), list);
        } else if let Some(Value::String(value)) = node.params.get(param.name) {
            let source = atelier_inputs::parse(value)?;
            images.insert(param.name.to_string(), vec![workers.fetcher.load(&source).await?]);
        }
    }

    if node.bypassed {
        let primary = spec.primary_image.unwrap_or("image");
        let inputs = images.remove(primary).unwrap_or_default();
        let artifacts = inputs.into_iter().map(|bytes| Artifact { ext: sniff_ext(&bytes), bytes }).collect();
        return publish(workers, task, artifacts).await.map(Produced::Ran);
    }

    let executor = workers.tools.get(spec.id).ok_or_else(|| {
        Failure::new(
            NodeErrorName::EngineUnavailable,
            format!("no engine is configured for tool {}", node.tool),
            false,
        )
    })?;
    let fanned = images.iter().find(|(_, list)| list.len() > 1).map(|(k, _)| k.clone());
    let runs = fanned.as_ref().map_or(1, |k| images[k].len());
    let base_seed = seed_of(node);
    let cache = workers.config.cache;
    // Zero retention: nothing of the run is kept beyond it, a cache entry included.
    let cacheable = cache.enabled && node.cache && !task.inline_outputs;
    let cache_key = executor.cache_identity().filter(|_| cacheable).map(|identity| {
        let image_params: Vec<&str> = spec.image_params().map(|p| p.name).collect();
        crate::cache::key(&node.tool, &identity, &node.params, &image_params, base_seed, &images)
    });
    let scope = cache.scope(task.account_id);
    if let Some(key) = &cache_key {
        let newer_than =
            atelier_core::time::now_micros().saturating_sub(atelier_core::time::micros(cache.max_age));
        match workers.queue.cached(task, scope, key, newer_than).await {
            Ok(Some(hit)) => {
                info!(run = %task.run_id, node = %node.name, source = %hit.source_run, "filled from the result cache");
                return Ok(Produced::Cached(hit));
            }
            Ok(None) => metrics::counter!("atelier_cache_lookups_total", "result" => "miss").increment(1),
            Err(e) => {
                warn!(error = %e, "the result cache failed; running the node");
                metrics::counter!("atelier_cache_lookups_total", "result" => "error").increment(1);
            }
        }
    }
    let resumes = if executor.resumable() { resumable_attempt(workers, task).await? } else { 0 };
    let progress = Arc::new(attempt.progress);
    let mut artifacts = Vec::new();
    for index in 0..runs {
        let execution_images: HashMap<String, Bytes> = images
            .iter()
            .filter_map(|(k, list)| {
                let pick = if Some(k) == fanned.as_ref() { list.get(index) } else { list.first() };
                pick.map(|b| (k.clone(), b.clone()))
            })
            .collect();
        // Execution `index` of `runs` covers [index, index + 1) / runs of the node's progress.
        let share = progress.clone();
        let context = Context {
            attempt_key: format!("{}-{}-{index}-{resumes}", task.run_id, node.name),
            deadline: Some(attempt.deadline),
            // Progress only grows: a graph whose nodes each report from 0 (a sampler, then a
            // decoder) shows the furthest point reached.
            progress: Progress::new(move |f| {
                let reached = (index as f32 + f) / runs as f32;
                share.send_if_modified(|shown| match shown {
                    Some(before) if *before >= reached => false,
                    _ => {
                        *shown = Some(reached);
                        true
                    }
                });
            }),
            cancel: attempt.cancel.clone(),
        };
        let inputs: Vec<(String, Bytes)> = match &workers.config.provenance {
            Some(_) => execution_images.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            None => Vec::new(),
        };
        let seed = base_seed.wrapping_add(index as u64);
        let execution = Execution {
            context,
            tool: spec.id,
            params: node.params.clone(),
            images: execution_images,
            seed,
            index: index as u32,
        };
        let made = executor.run(execution).await?;
        let made = match &workers.config.provenance {
            Some(provenance) => {
                let about = credentials::Made {
                    task,
                    spec,
                    engine: executor.engine(),
                    maker: executor.maker(spec.id),
                    seed,
                    first_index: artifacts.len(),
                    inputs,
                };
                credentials::sign(provenance, about, made)
                    .await
                    .map_err(|e| Failure::new(NodeErrorName::ToolFailed, format!("provenance: {e}"), true))?
            }
            None => made,
        };
        artifacts.extend(made);
    }
    let bytes = artifacts.iter().map(|a| a.bytes.len() as i64).sum();
    let outputs = publish(workers, task, artifacts).await?;
    if let Some(key) = cache_key {
        let entry = CacheEntry {
            scope,
            key,
            run_id: task.run_id.clone(),
            node: task.node.name.clone(),
            outputs: outputs.clone(),
            bytes,
            created_at: atelier_core::time::now_micros(),
        };
        // The outputs are written: an entry naming them is good even if this attempt's
        // completion is fenced off (another attempt writes the same bytes).
        if let Err(e) = workers.queue.remember(entry).await {
            warn!(error = %e, "recording the node in the result cache failed");
        }
    }
    Ok(Produced::Ran(outputs))
}

/// Which attempt of the node's work this claim makes, counting only attempts that ended in a
/// recorded failure: a claim that follows a lost worker (a crash, a stall) or a shutdown makes
/// the same attempt again, so a resumable executor re-attaches to the job it left on the model
/// server instead of starting it twice.
async fn resumable_attempt(workers: &Workers, task: &ClaimedTask) -> Result<usize, Failure> {
    let errors = workers.queue.task_errors(task).await.map_err(|e| {
        Failure::new(NodeErrorName::ToolFailed, format!("reading the node's attempts: {e}"), true)
    })?;
    let worker_lost = NodeErrorName::WorkerLost.as_str();
    // Work an engine lost (`counted: false`) is sent again under the same key too.
    Ok(errors
        .iter()
        .filter(|e| e["error"]["name"].as_str() != Some(worker_lost) && e["counted"] != Value::Bool(false))
        .count())
}

async fn publish(
    workers: &Workers,
    task: &ClaimedTask,
    artifacts: Vec<Artifact>,
) -> Result<Vec<String>, Failure> {
    let mut keys = Vec::with_capacity(artifacts.len());
    for (i, artifact) in artifacts.into_iter().enumerate() {
        let key = output_key(&task.run_id, &task.node.name, i, artifact.ext);
        if task.inline_outputs {
            keys.push(hold_output(&key, &artifact.bytes));
            continue;
        }
        workers.queue.put_blob(task, &key, artifact.bytes).await?;
        keys.push(key);
    }
    Ok(keys)
}

/// Zero retention: an output as the `data:` URL the node's row holds in place of a key (the
/// key it would have had gives its type), never written to object storage.
fn hold_output(key: &str, bytes: &[u8]) -> String {
    let content_type = atelier_blob::http::content_type_for(key);
    format!("data:{content_type};base64,{}", base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// An upstream output held inline ([`hold_output`]) as its bytes; `None` for a stored one.
fn held_output(key: &str) -> Option<Result<Bytes, Failure>> {
    let encoded = key.strip_prefix("data:")?.split_once(";base64,").map(|(_, data)| data);
    Some(
        encoded
            .and_then(|data| base64::engine::general_purpose::STANDARD.decode(data).ok())
            .map(Bytes::from)
            .ok_or_else(|| {
                Failure::new(NodeErrorName::ToolFailed, "an upstream output held inline is not base64", false)
            }),
    )
}

/// The node with every stored-input reference in its parameters replaced by the value as it
/// was sent (`atelier_api`'s inline images): the node runs on, and derives its seed from,
/// its parameters as sent. An upload's reference is replaced by its bytes in base64.
async fn with_stored_inputs<'a>(
    workers: &Workers,
    task: &'a ClaimedTask,
) -> Result<Cow<'a, NodeRecord>, Failure> {
    let node = &task.node;
    let stored = |v: &Value| v.as_str().and_then(stored_input_key).is_some();
    if !node.params.values().any(stored) {
        return Ok(Cow::Borrowed(node));
    }
    let mut node = node.clone();
    for value in node.params.values_mut() {
        let Value::String(text) = value else { continue };
        let Some(key) = stored_input_key(text) else { continue };
        let bytes = workers.queue.get_blob(task, key).await?;
        // An upload is kept as its bytes: the node reads it as base64, as if sent inline.
        if atelier_core::keys::is_upload(key) {
            *value = Value::String(base64::engine::general_purpose::STANDARD.encode(&bytes));
            continue;
        }
        let sent = String::from_utf8(bytes.to_vec()).map_err(|_| {
            Failure::new(
                NodeErrorName::ToolFailed,
                format!("storage: the stored input {key} is not text"),
                false,
            )
        })?;
        *value = Value::String(sent);
    }
    Ok(Cow::Owned(node))
}

/// The `seed` parameter, or one derived from the parameters, so that the
/// same request gives the same output.
fn seed_of(node: &NodeRecord) -> u64 {
    if let Some(seed) = node.params.get("seed").and_then(Value::as_u64) {
        return seed;
    }
    let digest = Sha256::digest(serde_json::to_vec(&node.params).unwrap_or_default());
    u64::from_le_bytes([
        digest[0], digest[1], digest[2], digest[3], digest[4], digest[5], digest[6], digest[7],
    ])
}

/// The extension of a file a bypassed node passes through: its input's format.
fn sniff_ext(bytes: &[u8]) -> &'static str {
    atelier_core::media::sniff(bytes).map_or("bin", |format| format.extension())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_exponentially_with_bounded_jitter() {
        let base = Duration::from_millis(100);
        let b1 = backoff(base, 1, 7);
        let b3 = backoff(base, 3, 7);
        assert!(b1 >= base && b1 < base * 3 / 2);
        assert!(b3 >= base * 4 && b3 < base * 6);
    }
}
