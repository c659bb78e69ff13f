//! Following a run: its live events (`GET /api/v3/status/{id}/events`, Server-Sent Events)
//! and [`Client::wait`], which follows them and falls back to polling; and following a batch
//! (`GET /api/v3/batches/{id}/events`, [`Client::batch_events`]).
//!
//! The server sends a `node` event each time a node's state or progress changes (a batch: a
//! `progress` event each time its items' counts change), then one `status` event with the
//! final status (id `end`), and closes the stream. Each event's id says what the client has
//! seen; a reconnection that sends it as `Last-Event-ID` gets only what changed since. Both
//! streams reconnect that way when the connection drops before the `status` event.

use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;

use futures::stream::{self, BoxStream, Stream};
use futures::StreamExt;
use serde_json::Value;
use tokio::time::Instant;

use crate::client::{decode, decode_status, Client, READ_TIMEOUT};
use crate::error::Error;
use crate::models::{Batch, NodeEvent, RunStatus};
use crate::sse::{SseEvent, SseParser};

/// The wait before a reconnection, until the server sends `retry:`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// Reconnections in a row that bring no event before the stream gives up.
const MAX_RECONNECTS: u32 = 5;

/// One event of a run's stream.
// A run sends a handful of events: their size does not matter, boxing would only make
// matching on them clumsier.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum RunEvent {
    /// A node's state or progress changed (`event: node`).
    Node(NodeEvent),
    /// The run ended: its final status, the answer of the status endpoint (`event: status`,
    /// the last one).
    Status(RunStatus),
}

/// The stream [`Client::events`] returns.
pub type EventStream = BoxStream<'static, Result<RunEvent, Error>>;

/// One event of a batch's stream.
#[derive(Debug, Clone, PartialEq)]
pub enum BatchEvent {
    /// Its items' counts changed (`event: progress`): the batch as its endpoint answers.
    Progress(Batch),
    /// It ended, finished or canceled (`event: status`, the last one).
    Status(Batch),
}

/// The stream [`Client::batch_events`] returns.
pub type BatchEventStream = BoxStream<'static, Result<BatchEvent, Error>>;

/// What a stream follows: where its events come from, how they read, which one is the last.
trait Followed: Send + 'static {
    type Event: Send + 'static;
    /// The stream's path, for the followed id.
    fn path(id: &str) -> [&str; 5];
    /// An event; `None` for types this version does not know.
    fn parse(sse: SseEvent) -> Result<Option<Self::Event>, Error>;
    fn is_final(event: &Self::Event) -> bool;
}

struct Runs;

impl Followed for Runs {
    type Event = RunEvent;
    fn path(id: &str) -> [&str; 5] {
        ["api", "v3", "status", id, "events"]
    }
    fn parse(sse: SseEvent) -> Result<Option<RunEvent>, Error> {
        run_event(sse)
    }
    fn is_final(event: &RunEvent) -> bool {
        matches!(event, RunEvent::Status(_))
    }
}

struct Batches;

impl Followed for Batches {
    type Event = BatchEvent;
    fn path(id: &str) -> [&str; 5] {
        ["api", "v3", "batches", id, "events"]
    }
    fn parse(sse: SseEvent) -> Result<Option<BatchEvent>, Error> {
        batch_event(sse)
    }
    fn is_final(event: &BatchEvent) -> bool {
        matches!(event, BatchEvent::Status(_))
    }
}

/// Reads one SSE event of a batch's stream; `None` for event types this version does not
/// know.
pub(crate) fn batch_event(sse: SseEvent) -> Result<Option<BatchEvent>, Error> {
    let parse = || {
        serde_json::from_str::<Batch>(&sse.data)
            .map_err(|source| Error::Decode { what: "a batch event".into(), source })
    };
    match sse.event.as_str() {
        "progress" => Ok(Some(BatchEvent::Progress(parse()?))),
        "status" => Ok(Some(BatchEvent::Status(parse()?))),
        _ => Ok(None),
    }
}

/// How [`Client::wait`] waits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WaitOptions {
    /// The longest wait (`None`: no limit); then [`Error::WaitTimeout`].
    pub timeout: Option<Duration>,
    /// Between status requests, when polling.
    pub poll_interval: Duration,
    /// Follow the events stream (falling back to polling when the server does not offer it
    /// or it keeps dropping); `false` polls from the start.
    pub use_events: bool,
}

impl Default for WaitOptions {
    fn default() -> Self {
        Self { timeout: None, poll_interval: Duration::from_secs(1), use_events: true }
    }
}

/// Reads one SSE event of a run's stream; `None` for event types this version does not know.
pub(crate) fn run_event(sse: SseEvent) -> Result<Option<RunEvent>, Error> {
    let parse = |what: &str| {
        serde_json::from_str::<Value>(&sse.data).map_err(|source| Error::Decode { what: what.into(), source })
    };
    match sse.event.as_str() {
        "node" => {
            let mut event: NodeEvent = decode(parse("a node event")?, "a node event")?;
            event.event_id = sse.id;
            Ok(Some(RunEvent::Node(event)))
        }
        "status" => {
            Ok(Some(RunEvent::Status(decode_status(parse("the status event")?, "the status event")?)))
        }
        _ => Ok(None),
    }
}

/// The state of a stream between two events.
struct Follow<F: Followed> {
    client: Client,
    id: String,
    last_event_id: Option<String>,
    body: Option<Pin<Box<dyn Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>>,
    parser: SseParser,
    ready: VecDeque<F::Event>,
    ended: bool,
    /// Connections in a row that ended before an event.
    failures: u32,
    retry: Duration,
}

impl<F: Followed> Follow<F> {
    fn new(client: &Client, id: &str, last_event_id: Option<&str>) -> Self {
        Self {
            client: client.clone(),
            id: id.to_string(),
            last_event_id: last_event_id.map(str::to_string),
            body: None,
            parser: SseParser::default(),
            ready: VecDeque::new(),
            ended: false,
            failures: 0,
            retry: DEFAULT_RETRY,
        }
    }

    async fn next(mut self) -> Option<(Result<F::Event, Error>, Self)> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                if F::is_final(&event) {
                    self.ended = true;
                    self.ready.clear();
                    self.body = None;
                }
                return Some((Ok(event), self));
            }
            if self.ended {
                return None;
            }
            let Some(body) = self.body.as_mut() else {
                if self.failures > 0 {
                    tokio::time::sleep(self.retry).await;
                }
                match self.client.open_events(&F::path(&self.id), self.last_event_id.as_deref()).await {
                    Ok(response) => {
                        self.parser = SseParser::new(self.last_event_id.clone());
                        self.body = Some(Box::pin(response.bytes_stream()));
                    }
                    Err(e @ (Error::Transport(_) | Error::Timeout(_))) => {
                        if let Some(e) = self.dropped(e.to_string()) {
                            return Some((Err(e), self));
                        }
                    }
                    Err(e) => {
                        self.ended = true;
                        return Some((Err(e), self));
                    }
                }
                continue;
            };
            match tokio::time::timeout(READ_TIMEOUT, body.next()).await {
                Ok(Some(Ok(chunk))) => {
                    for sse in self.parser.feed(&chunk) {
                        self.last_event_id = sse.id.clone();
                        match F::parse(sse) {
                            Ok(Some(event)) => {
                                self.failures = 0;
                                self.ready.push_back(event);
                            }
                            Ok(None) => {}
                            Err(e) => {
                                self.ended = true;
                                return Some((Err(e), self));
                            }
                        }
                    }
                    if let Some(ms) = self.parser.retry_ms() {
                        self.retry = Duration::from_millis(ms);
                    }
                }
                Ok(Some(Err(e))) => {
                    if let Some(e) = self.dropped(e.to_string()) {
                        return Some((Err(e), self));
                    }
                }
                Ok(None) => {
                    if let Some(e) = self.dropped("the stream closed before the final status".into()) {
                        return Some((Err(e), self));
                    }
                }
                Err(_) => {
                    if let Some(e) = self.dropped(format!("nothing came for {} s", READ_TIMEOUT.as_secs())) {
                        return Some((Err(e), self));
                    }
                }
            }
        }
    }

    /// The connection ended before the final status: reconnect, unless it keeps happening
    /// without an event in between (then the error that ends the stream).
    fn dropped(&mut self, why: String) -> Option<Error> {
        self.body = None;
        self.failures += 1;
        if self.failures > MAX_RECONNECTS {
            self.ended = true;
            return Some(Error::EventStream(format!(
                "the events stream of {} kept closing before the final status ({why})",
                self.id
            )));
        }
        None
    }
}

impl Client {
    /// The run's live events (`GET /api/v3/status/{run_id}/events`): a
    /// [`RunEvent::Node`] per change of a node's state or progress, then one
    /// [`RunEvent::Status`] with the final status, and the stream ends. When the connection
    /// drops before that, it reconnects with `Last-Event-ID` and goes on where it stopped.
    ///
    /// `last_event_id` resumes after an event seen earlier ([`NodeEvent::event_id`]).
    ///
    /// The stream's errors end it: [`Error::RunNotFound`] (and other refusals) as the
    /// server answers; [`Error::EventStream`] when the server offers no stream or it kept
    /// dropping (poll [`Client::status`] then, as [`Client::wait`] does).
    pub fn events(&self, run_id: &str, last_event_id: Option<&str>) -> EventStream {
        stream::unfold(Follow::<Runs>::new(self, run_id, last_event_id), Follow::next).boxed()
    }

    /// The batch's live events (`GET /api/v3/batches/{batch_id}/events`, an extension): a
    /// [`BatchEvent::Progress`] each time its items' counts change, then one
    /// [`BatchEvent::Status`] when it is finished or canceled, and the stream ends;
    /// reconnecting as [`Client::events`] does. Errors as there, [`Error::BatchNotFound`]
    /// for a batch that is not the account's.
    pub fn batch_events(&self, batch_id: &str, last_event_id: Option<&str>) -> BatchEventStream {
        stream::unfold(Follow::<Batches>::new(self, batch_id, last_event_id), Follow::next).boxed()
    }

    /// Waits until the run has ended and returns its final status (succeeded, failed or
    /// canceled: a failed run is a status, not an error). Follows the events stream unless
    /// `options.use_events` is false, and polls [`Client::status`] when the stream is not
    /// offered or keeps dropping (waiting `retry_after` when rate limited).
    pub async fn wait(&self, run_id: &str, options: WaitOptions) -> Result<RunStatus, Error> {
        let deadline = options.timeout.map(|t| Instant::now() + t);
        let timed_out = |last: Option<RunStatus>| Error::WaitTimeout {
            run_id: run_id.to_string(),
            last: last.map(Box::new),
        };
        if options.use_events {
            let mut events = self.events(run_id, None);
            loop {
                let next = match deadline {
                    Some(deadline) => match tokio::time::timeout_at(deadline, events.next()).await {
                        Ok(next) => next,
                        Err(_) => return Err(timed_out(None)),
                    },
                    None => events.next().await,
                };
                match next {
                    Some(Ok(RunEvent::Status(status))) if status.is_done() => return Ok(status),
                    Some(Ok(RunEvent::Status(_))) | None => break,
                    Some(Ok(RunEvent::Node(_))) => {}
                    // The stream is not to be had: poll.
                    Some(Err(
                        Error::EventStream(_)
                        | Error::Transport(_)
                        | Error::Timeout(_)
                        | Error::Decode { .. },
                    )) => break,
                    Some(Err(e)) => return Err(e),
                }
            }
        }
        let mut last = None;
        loop {
            let pause = match self.status(run_id).await {
                Ok(status) if status.is_done() => return Ok(status),
                Ok(status) => {
                    last = Some(status);
                    options.poll_interval
                }
                Err(e @ (Error::RateLimited { .. } | Error::ConcurrencyLimited { .. })) => {
                    e.retry_after().map_or(options.poll_interval, Duration::from_secs)
                }
                Err(e) => return Err(e),
            };
            if let Some(deadline) = deadline {
                if Instant::now() + pause >= deadline {
                    tokio::time::sleep_until(deadline).await;
                    return Err(timed_out(last));
                }
            }
            tokio::time::sleep(pause).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::{NodeState, RunState};

    fn sse(event: &str, data: &str, id: Option<&str>) -> SseEvent {
        SseEvent { event: event.into(), data: data.into(), id: id.map(Into::into) }
    }

    #[test]
    fn events_are_typed_by_their_event_field() {
        let node = run_event(sse(
            "node",
            r#"{"run_id":"wr_1","node":"Square","id":"gen_1","status":"running","progress":0.4,"error":null}"#,
            Some("s.r400.q"),
        ))
        .unwrap();
        match node {
            Some(RunEvent::Node(n)) => {
                assert_eq!(
                    (n.node.as_str(), n.status, n.progress),
                    ("Square", NodeState::Running, Some(0.4))
                );
                assert_eq!(n.event_id.as_deref(), Some("s.r400.q"));
            }
            other => panic!("{other:?}"),
        }
        let status = run_event(sse(
            "status",
            r#"{"id":"gen_1","overall_status":"succeeded","output":["u"]}"#,
            Some("end"),
        ))
        .unwrap();
        match status {
            Some(RunEvent::Status(s)) => {
                assert_eq!(
                    (s.overall_status, s.output_urls()),
                    (RunState::Succeeded, &["u".to_string()][..])
                );
                assert_eq!(s.raw["output"][0], "u", "the raw answer is kept");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(run_event(sse("message", "{}", None)).unwrap(), None, "unknown types are skipped");
        assert!(matches!(run_event(sse("node", "not json", None)), Err(Error::Decode { .. })));
    }
}
