//! Completions written in groups: while one transaction records completions, the ones that
//! arrive meanwhile wait and go together in the next (a group commit). A completion that
//! finds none in progress is written at once, so nothing waits for a group to fill.

use std::sync::{Arc, Mutex};

use atelier_store::{ClaimedTask, Outcome, Result, SharedStore};
use tokio::sync::oneshot;
use tracing::warn;

type Waiting = (ClaimedTask, Outcome, oneshot::Sender<Result<bool>>);

#[derive(Clone, Default)]
pub(crate) struct Completions {
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    waiting: Vec<Waiting>,
    /// A writer is running: it takes what is waiting before it stops.
    writing: bool,
}

impl Completions {
    /// Records the end of an attempt as `TaskQueue::complete` does, in the next group; the
    /// error as text (the store's, or that the writer stopped).
    pub(crate) async fn complete(
        &self,
        store: &SharedStore,
        task: ClaimedTask,
        outcome: Outcome,
    ) -> std::result::Result<bool, String> {
        let (done, answer) = oneshot::channel();
        let start = {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            state.waiting.push((task, outcome, done));
            !std::mem::replace(&mut state.writing, true)
        };
        if start {
            // A task of its own, so that the completion that started it returns with its
            // answer and frees its slot while later groups are written.
            tokio::spawn(write_groups(self.state.clone(), store.clone()));
        }
        match answer.await {
            Ok(recorded) => recorded.map_err(|e| e.to_string()),
            Err(_) => Err("the completion writer stopped".into()),
        }
    }
}

async fn write_groups(state: Arc<Mutex<State>>, store: SharedStore) {
    loop {
        let group = {
            let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
            if state.waiting.is_empty() {
                state.writing = false;
                return;
            }
            std::mem::take(&mut state.waiting)
        };
        write(&store, group).await;
    }
}

/// One transaction for the group; when it fails, each completion on its own, so that one
/// that cannot be written does not take the others with it.
async fn write(store: &SharedStore, group: Vec<Waiting>) {
    let pairs: Vec<(&ClaimedTask, &Outcome)> = group.iter().map(|(t, o, _)| (t, o)).collect();
    let recorded = store.complete_batch(&pairs).await;
    drop(pairs);
    match recorded {
        Ok(recorded) => {
            for ((_, _, done), recorded) in group.into_iter().zip(recorded) {
                let _ = done.send(Ok(recorded));
            }
        }
        Err(e) if group.len() > 1 => {
            warn!(error = %e, completions = group.len(), "recording a group of completions failed; recording each alone");
            for (task, outcome, done) in group {
                let _ = done.send(store.complete(&task, outcome).await);
            }
        }
        Err(e) => {
            if let Some((_, _, done)) = group.into_iter().next() {
                let _ = done.send(Err(e));
            }
        }
    }
}
