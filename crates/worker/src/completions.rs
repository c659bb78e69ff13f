//! Completions written in groups: while one transaction records completions, the ones that
//! arrive meanwhile wait and go together in the next (a group commit). A completion that
//! finds none in progress is written at once, so nothing waits for a group to fill. The
//! transaction also claims the next task of each slot that asks for one, so that a slot
//! goes from one task to the next without a claim of its own and never holds two.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use atelier_store::{ClaimedTask, NextClaim, Outcome, Result};

use crate::queue::WorkQueue;

/// The queue completions are written to.
type Queue = std::sync::Arc<dyn WorkQueue>;
use tokio::sync::oneshot;
use tracing::warn;

/// Whether the attempt was recorded, and the slot's next task when it asked for one.
type Answer = Result<(bool, Option<ClaimedTask>)>;

struct Waiting {
    task: ClaimedTask,
    outcome: Outcome,
    wants_next: bool,
    answer: oneshot::Sender<Answer>,
}

#[derive(Clone)]
pub(crate) struct Completions {
    state: Arc<Mutex<State>>,
    worker: Arc<str>,
    lease: Duration,
}

#[derive(Default)]
struct State {
    waiting: Vec<Waiting>,
    /// A writer is running: it takes what is waiting before it stops.
    writing: bool,
}

impl Completions {
    /// Completions of tasks that `worker` claims for `lease`.
    pub(crate) fn new(worker: &str, lease: Duration) -> Self {
        Self { state: Arc::default(), worker: worker.into(), lease }
    }

    /// Records the end of an attempt as `TaskQueue::complete` does, in the next group, and,
    /// with `wants_next`, claims the slot's next task in the same transaction. Whether it was
    /// recorded and the next task; the error as text (the store's, or that the writer
    /// stopped).
    pub(crate) async fn complete(
        &self,
        store: &Queue,
        task: ClaimedTask,
        outcome: Outcome,
        wants_next: bool,
    ) -> std::result::Result<(bool, Option<ClaimedTask>), String> {
        let (answer, answered) = oneshot::channel();
        let start = {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            state.waiting.push(Waiting { task, outcome, wants_next, answer });
            !std::mem::replace(&mut state.writing, true)
        };
        if start {
            // A task of its own, so that the completion that started it returns with its
            // answer while later groups are written.
            tokio::spawn(self.clone().write_groups(store.clone()));
        }
        match answered.await {
            Ok(answer) => answer.map_err(|e| e.to_string()),
            Err(_) => Err("the completion writer stopped".into()),
        }
    }

    async fn write_groups(self, store: Queue) {
        loop {
            let group = {
                let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
                if state.waiting.is_empty() {
                    state.writing = false;
                    return;
                }
                std::mem::take(&mut state.waiting)
            };
            self.write(&store, group).await;
        }
    }

    /// One transaction for the group; when it fails, each completion on its own (and no next
    /// task claimed), so that one that cannot be written does not take the others with it.
    async fn write(&self, store: &Queue, group: Vec<Waiting>) {
        let pairs: Vec<(&ClaimedTask, &Outcome)> = group.iter().map(|w| (&w.task, &w.outcome)).collect();
        let limit = group.iter().filter(|w| w.wants_next).count();
        let next = (limit > 0).then(|| NextClaim { worker: &self.worker, lease: self.lease, limit });
        let result = store.complete_and_claim(&pairs, next).await;
        drop(pairs);
        match result {
            Ok((recorded, claimed)) => {
                let mut claimed = claimed.into_iter();
                for (waiting, recorded) in group.into_iter().zip(recorded) {
                    let next = if waiting.wants_next { claimed.next() } else { None };
                    let _ = waiting.answer.send(Ok((recorded, next)));
                }
            }
            Err(e) if group.len() > 1 => {
                warn!(error = %e, completions = group.len(), "recording a group of completions failed; recording each alone");
                for w in group {
                    let _ = w.answer.send(store.complete(&w.task, w.outcome).await.map(|r| (r, None)));
                }
            }
            Err(e) => {
                if let Some(w) = group.into_iter().next() {
                    let _ = w.answer.send(Err(e));
                }
            }
        }
    }
}
