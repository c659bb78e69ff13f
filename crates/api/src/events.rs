//! Following a run as it changes, over the store's change feed
//! ([`atelier_store::ChangeFeed`]): live events (`GET /api/v3/status/{id}/events`, Server-Sent
//! Events) and waiting requests (`Prefer: wait=N` on `POST /api/v3/run`).
//!
//! Both subscribe to the run, then read it, and read it again at each signal (and at
//! [`FALLBACK_READ`] without one, should a signal be lost), so what they report is what the
//! database holds at each read.
//!
//! The event stream sends `node` events (a node's state or progress changed since the last
//! event), then one `status` event with the final status, the JSON of the status endpoint,
//! and ends. Each event's id says the state of every node it reflects (for example
//! `s.r420.q`: the first node succeeded, the second runs at 42%, the third is queued), so a
//! client that reconnects with `Last-Event-ID` gets an event for each node whose state
//! differs from that, and nothing it already has; the `status` event's id is `end`. A
//! node that changes twice between two reads shows its second state only.
//!
//! A batch's stream (`GET /api/v3/batches/{id}/events`) sends a `progress` event, the JSON
//! of the batch's status endpoint, whenever its items' counts or its state changed since the
//! last event (read at most every [`BATCH_READ_EVERY`], woken by any run's change), then a
//! `status` event (id `end`) when the batch ends, and ends. An event's id is the counts it
//! shows, so a client that reconnects gets nothing until something changed.

use std::convert::Infallible;
use std::time::{Duration, Instant};

use atelier_core::status::NodeStatus;
use atelier_store::{NodeRecord, RunRecord, RunWatch};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures::stream::{self, Stream};

use crate::error::ApiError;
use crate::extract::{BatchId, Caller, RunId};
use crate::render;
use crate::state::AppState;

/// How often a follower reads the run when no signal came.
pub const FALLBACK_READ: Duration = Duration::from_secs(5);
/// How often a quiet event stream sends a comment, so that proxies keep it open.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// The id of the final event.
const END_ID: &str = "end";

/// How often a followed batch is read at most: its items' runs change all the time.
pub const BATCH_READ_EVERY: Duration = Duration::from_millis(500);

pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v3/status/{run_id}/events", get(events))
        .route("/api/v3/batches/{batch_id}/events", get(batch_events))
}

/// What a client has seen of a node: its state, and its progress in thousandths while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    status: NodeStatus,
    progress: Option<u16>,
}

impl Seen {
    fn of(node: &NodeRecord) -> Self {
        let progress = (node.status == NodeStatus::Running)
            .then(|| (node.progress.unwrap_or(0.0).clamp(0.0, 1.0) * 1000.0).round() as u16);
        Self { status: node.status, progress }
    }

    fn letter(self) -> char {
        match self.status {
            NodeStatus::Pending => 'p',
            NodeStatus::Queued => 'q',
            NodeStatus::Running => 'r',
            NodeStatus::Succeeded => 's',
            NodeStatus::Failed => 'f',
            NodeStatus::Skipped => 'k',
            NodeStatus::Canceled => 'c',
        }
    }

    fn parse(text: &str) -> Option<Self> {
        let mut chars = text.chars();
        let status = match chars.next()? {
            'p' => NodeStatus::Pending,
            'q' => NodeStatus::Queued,
            'r' => NodeStatus::Running,
            's' => NodeStatus::Succeeded,
            'f' => NodeStatus::Failed,
            'k' => NodeStatus::Skipped,
            'c' => NodeStatus::Canceled,
            _ => return None,
        };
        let rest = chars.as_str();
        let progress = match (status, rest) {
            (NodeStatus::Running, digits) => Some(digits.parse::<u16>().ok().filter(|p| *p <= 1000)?),
            (_, "") => None,
            _ => return None,
        };
        Some(Self { status, progress })
    }
}

/// The id of an event after which the client has seen `seen`.
fn event_id(seen: &[Option<Seen>]) -> String {
    let parts: Vec<String> = seen
        .iter()
        .map(|s| match s {
            Some(s) => match s.progress {
                Some(p) => format!("{}{p}", s.letter()),
                None => s.letter().to_string(),
            },
            None => "-".to_string(),
        })
        .collect();
    parts.join(".")
}

/// What a `Last-Event-ID` says the client has seen of a run of `nodes` nodes; nothing when it
/// is absent or is not an id of this stream (every node is then sent).
fn parse_event_id(id: &str, nodes: usize) -> Vec<Option<Seen>> {
    let parsed: Option<Vec<Option<Seen>>> = id
        .split('.')
        .map(|part| if part == "-" { Some(None) } else { Seen::parse(part).map(Some) })
        .collect();
    match parsed {
        Some(seen) if seen.len() == nodes => seen,
        _ => vec![None; nodes],
    }
}

fn node_event(state: &AppState, run: &RunRecord, node: &NodeRecord) -> atelier_wire::NodeEvent {
    atelier_wire::NodeEvent {
        run_id: run.id.clone(),
        node: node.name.clone(),
        id: node.gen_id.clone(),
        status: node.status.into(),
        error: node.error.as_ref().map(atelier_wire::RunError::from),
        progress: (node.status == NodeStatus::Running).then(|| node.progress.unwrap_or(0.0)),
        output: (node.status == NodeStatus::Succeeded)
            .then(|| node.outputs.iter().map(|k| state.blob.url(k)).collect()),
        event_id: None,
    }
}

/// A stream's state between events.
struct Follow {
    state: AppState,
    account_id: i64,
    run_id: String,
    watch: RunWatch,
    seen: Option<Vec<Option<Seen>>>,
    resume: Option<String>,
    queued: std::collections::VecDeque<Event>,
    ended: bool,
    /// Counts the stream in `atelier_event_streams_open` while it lives.
    _open: crate::metrics::Open,
}

impl Follow {
    /// The next event: those of the last read first, then the run read again, at once and
    /// then at each signal, until something changed.
    async fn next(mut self) -> Option<(Result<Event, Infallible>, Self)> {
        loop {
            if let Some(event) = self.queued.pop_front() {
                return Some((Ok(event), self));
            }
            if self.ended {
                return None;
            }
            match self.state.store.get_run(self.account_id, &self.run_id).await {
                Ok(run) => self.read(&run),
                Err(e) => {
                    tracing::warn!(run = %self.run_id, error = %e, "reading a followed run failed");
                }
            }
            if self.queued.is_empty() {
                tokio::select! {
                    () = self.watch.changed() => {}
                    () = tokio::time::sleep(FALLBACK_READ) => {}
                }
            }
        }
    }

    /// Queues the events a read of the run brings.
    fn read(&mut self, run: &RunRecord) {
        let resume = self.resume.take();
        if resume.as_deref() == Some(END_ID) && run.status.is_terminal() {
            self.finish(run);
            return;
        }
        let seen =
            self.seen.get_or_insert_with(|| parse_event_id(resume.as_deref().unwrap_or(""), run.nodes.len()));
        if seen.len() != run.nodes.len() {
            *seen = vec![None; run.nodes.len()];
        }
        for (i, node) in run.nodes.iter().enumerate() {
            let now = Seen::of(node);
            if seen[i] != Some(now) {
                seen[i] = Some(now);
                let data = node_event(&self.state, run, node);
                self.queued.push_back(
                    Event::default()
                        .event("node")
                        .id(event_id(seen))
                        .data(serde_json::to_string(&data).unwrap_or_default()),
                );
            }
        }
        if run.status.is_terminal() {
            self.finish(run);
        }
    }

    fn finish(&mut self, run: &RunRecord) {
        let status = render::v3_status(&self.state.blob, run, None);
        let data = serde_json::to_string(&status).unwrap_or_default();
        self.queued.push_back(Event::default().event("status").id(END_ID).data(data));
        self.ended = true;
    }
}

async fn events(
    State(state): State<AppState>,
    Caller(account): Caller,
    RunId(id): RunId,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    // Subscribed before the first read, so no change after it goes unseen.
    let watch = state.store.changes().watch(&id);
    // The run must exist and be the caller's before the stream starts (a 404 otherwise).
    state.store.get_run(account.id, &id).await.map_err(ApiError::run_lookup(&id))?;
    let resume = headers.get("last-event-id").and_then(|v| v.to_str().ok()).map(|s| s.trim().to_string());
    let follow = Follow {
        state,
        account_id: account.id,
        run_id: id,
        watch,
        seen: None,
        resume,
        queued: Default::default(),
        ended: false,
        _open: crate::metrics::Open::new("atelier_event_streams_open"),
    };
    Ok(sse(Box::pin(stream::unfold(follow, Follow::next))))
}

type EventStream = std::pin::Pin<Box<dyn Stream<Item = Result<Event, Infallible>> + Send>>;

/// An event stream's answer: kept alive with comments, and not buffered by proxies.
fn sse(stream: EventStream) -> Response {
    let mut response =
        Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE).text("keep-alive")).into_response();
    // Proxies that buffer answers (nginx) pass this one on as it comes.
    response
        .headers_mut()
        .insert(HeaderName::from_static("x-accel-buffering"), HeaderValue::from_static("no"));
    response
}

/// A batch being followed (see the module documentation).
struct FollowBatch {
    state: AppState,
    account_id: i64,
    batch_id: String,
    /// Signals of the batch's own changes (it started, ended or started again).
    watch: RunWatch,
    /// Any run's change: its items'.
    runs: tokio::sync::watch::Receiver<u64>,
    /// The id of the last event sent (or the client's `Last-Event-ID`).
    seen: Option<String>,
    last_read: Option<Instant>,
    ended: bool,
    _open: crate::metrics::Open,
}

impl FollowBatch {
    async fn next(mut self) -> Option<(Result<Event, Infallible>, Self)> {
        loop {
            if self.ended {
                return None;
            }
            if let Some(last) = self.last_read {
                tokio::time::sleep_until((last + BATCH_READ_EVERY).into()).await;
            }
            self.runs.borrow_and_update();
            self.last_read = Some(Instant::now());
            match self.state.store.get_batch(self.account_id, &self.batch_id).await {
                Ok(batch) => {
                    if let Some(event) = self.read(&batch) {
                        return Some((Ok(event), self));
                    }
                }
                Err(e) => {
                    tracing::warn!(batch = %self.batch_id, error = %e, "reading a followed batch failed")
                }
            }
            tokio::select! {
                () = self.watch.changed() => {}
                _ = self.runs.changed() => {}
                () = tokio::time::sleep(FALLBACK_READ) => {}
            }
        }
    }

    /// The event a read of the batch brings, if it changed since the last one.
    fn read(&mut self, batch: &atelier_store::BatchRecord) -> Option<Event> {
        let data = || serde_json::to_string(&crate::batches::render_batch(batch, None)).unwrap_or_default();
        if batch.status != atelier_store::BatchStatus::Running {
            self.ended = true;
            return Some(Event::default().event("status").id(END_ID).data(data()));
        }
        let c = &batch.counts;
        let id =
            format!("{}.{}.{}.{}.{}.{}", c.pending, c.queued, c.running, c.succeeded, c.failed, c.canceled);
        if self.seen.as_deref() == Some(id.as_str()) {
            return None;
        }
        let event = Event::default().event("progress").id(&id).data(data());
        self.seen = Some(id);
        Some(event)
    }
}

async fn batch_events(
    State(state): State<AppState>,
    Caller(account): Caller,
    BatchId(id): BatchId,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let watch = state.store.changes().watch(&id);
    let runs = state.store.changes().any_run();
    state.store.get_batch(account.id, &id).await.map_err(crate::batches::lookup(&id))?;
    let seen = headers.get("last-event-id").and_then(|v| v.to_str().ok()).map(|s| s.trim().to_string());
    let follow = FollowBatch {
        state,
        account_id: account.id,
        batch_id: id,
        watch,
        runs,
        seen,
        last_read: None,
        ended: false,
        _open: crate::metrics::Open::new("atelier_event_streams_open"),
    };
    Ok(sse(Box::pin(stream::unfold(follow, FollowBatch::next))))
}

/// The `wait=N` preference of a `Prefer` header (RFC 7240), at most `max` seconds; `None`
/// without one, or for 0.
pub fn preferred_wait(headers: &HeaderMap, max: u64) -> Option<u64> {
    headers
        .get_all("prefer")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|pref| {
            let pref = pref.split(';').next()?.trim();
            let (name, value) = pref.split_once('=')?;
            name.trim()
                .eq_ignore_ascii_case("wait")
                .then(|| value.trim().trim_matches('"').parse::<u64>().ok())?
        })
        .next()
        .filter(|&secs| secs > 0 && max > 0)
        .map(|secs| secs.min(max))
}

/// Waits up to `within` for run `run_id` to finish: the finished run, or `None` when it is
/// still going (or cannot be read).
pub async fn wait_for_end(
    state: &AppState,
    account_id: i64,
    run_id: &str,
    within: Duration,
) -> Option<RunRecord> {
    let deadline = Instant::now() + within;
    let mut watch = state.store.changes().watch(run_id);
    let _open = crate::metrics::Open::new("atelier_waiting_requests");
    loop {
        let run = state.store.get_run(account_id, run_id).await.ok()?;
        if run.status.is_terminal() {
            return Some(run);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        tokio::select! {
            () = watch.changed() => {}
            () = tokio::time::sleep(left.min(FALLBACK_READ)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::MAX_WAIT_SECS;

    #[test]
    fn event_ids_round_trip_and_refuse_anything_else() {
        let seen = vec![
            Some(Seen { status: NodeStatus::Succeeded, progress: None }),
            Some(Seen { status: NodeStatus::Running, progress: Some(420) }),
            None,
            Some(Seen { status: NodeStatus::Skipped, progress: None }),
        ];
        let id = event_id(&seen);
        assert_eq!(id, "s.r420.-.k");
        assert_eq!(parse_event_id(&id, 4), seen);
        for other in ["", "end", "s.r420.-", "s.r420.-.k.q", "s.x.-.k", "s.r1001.-.k", "s.s5.-.k", "s.r.-.k"]
        {
            assert_eq!(parse_event_id(other, 4), vec![None; 4], "{other:?}");
        }
    }

    #[test]
    fn the_wait_preference_is_read_as_rfc_7240_writes_it() {
        let headers = |values: &[&str]| {
            let mut map = HeaderMap::new();
            for v in values {
                map.append("prefer", HeaderValue::from_str(v).unwrap_or(HeaderValue::from_static("")));
            }
            map
        };
        let preferred_wait_of = |h: &HeaderMap| preferred_wait(h, MAX_WAIT_SECS);
        assert_eq!(preferred_wait(&headers(&["wait=30"]), 0), None, "waiting turned off");
        assert_eq!(preferred_wait(&headers(&["wait=30"]), 5), Some(5));
        assert_eq!(preferred_wait_of(&headers(&[])), None);
        assert_eq!(preferred_wait_of(&headers(&["wait=10"])), Some(10));
        assert_eq!(preferred_wait_of(&headers(&["respond-async, Wait = 7"])), Some(7));
        assert_eq!(preferred_wait_of(&headers(&["handling=lenient", "wait=\"3\"; foo=bar"])), Some(3));
        assert_eq!(preferred_wait_of(&headers(&["wait=600"])), Some(MAX_WAIT_SECS));
        for refused in ["wait=0", "wait=-1", "wait=soon", "wait", "return=minimal"] {
            assert_eq!(preferred_wait_of(&headers(&[refused])), None, "{refused}");
        }
    }
}
