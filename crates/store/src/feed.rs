//! The change feed: which runs changed, as this process learns it, for whoever waits on a
//! run (live events, waiting requests) and for the webhook deliverer.
//!
//! A signal carries no state: it says "run X may have changed", and the waiter reads the run
//! again. So a signal may be spurious or coalesced with the next, but a change is never
//! reported without being committed first: SQLite publishes after the commit, and PostgreSQL
//! delivers its notifications (sent by triggers on `runs` and `nodes`, `atelier_runs`) only
//! when the transaction commits. When the notifications may have been interrupted, every
//! waiter is woken ([`ChangeFeed::publish_all`]); waiters also read again now and then, so
//! a lost signal delays, never loses, a change.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::watch;

/// What keeps something of runs and must hear of each change at once, in the publishing
/// thread (the API's finished statuses): `Some(run)`, or `None` for every run.
pub trait ChangeListener: Send + Sync {
    fn changed(&self, run_id: Option<&str>);
}

/// Per-run wake-ups, one for any run (the batch feeder), one for queued webhook
/// deliveries, a version of API keys, and the listeners.
pub struct ChangeFeed {
    runs: Mutex<HashMap<Box<str>, watch::Sender<u64>>>,
    any: watch::Sender<u64>,
    deliveries: watch::Sender<u64>,
    /// Bumped when any key may have changed (see [`ChangeFeed::publish_keys`]).
    keys: watch::Sender<u64>,
    listeners: Mutex<Vec<std::sync::Weak<dyn ChangeListener>>>,
}

impl std::fmt::Debug for ChangeFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChangeFeed").field("watched", &self.watched()).finish()
    }
}

impl Default for ChangeFeed {
    fn default() -> Self {
        Self {
            runs: Mutex::new(HashMap::new()),
            any: watch::Sender::new(0),
            deliveries: watch::Sender::new(0),
            keys: watch::Sender::new(0),
            listeners: Mutex::new(Vec::new()),
        }
    }
}

fn bump(sender: &watch::Sender<u64>) {
    sender.send_modify(|n| *n = n.wrapping_add(1));
}

impl ChangeFeed {
    /// Waits on run `run_id` from now on: [`RunWatch::changed`] resolves after the next
    /// signal for it. Subscribe before reading the run, so that no change after the read
    /// goes unnoticed.
    pub fn watch(self: &Arc<Self>, run_id: &str) -> RunWatch {
        let mut runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        let receiver = match runs.get(run_id) {
            Some(sender) => sender.subscribe(),
            None => {
                let (sender, receiver) = watch::channel(0);
                runs.insert(run_id.into(), sender);
                receiver
            }
        };
        RunWatch { feed: Arc::clone(self), run_id: run_id.into(), receiver }
    }

    /// Tells `listener` of every change from now on, for as long as it lives.
    pub fn listen(&self, listener: std::sync::Weak<dyn ChangeListener>) {
        let mut listeners = self.listeners.lock().unwrap_or_else(PoisonError::into_inner);
        listeners.retain(|l| l.strong_count() > 0);
        listeners.push(listener);
    }

    fn tell(&self, run_id: Option<&str>) {
        let listeners = self.listeners.lock().unwrap_or_else(PoisonError::into_inner);
        for listener in listeners.iter().filter_map(std::sync::Weak::upgrade) {
            listener.changed(run_id);
        }
    }

    /// Run `run_id` may have changed.
    pub fn publish(&self, run_id: &str) {
        self.tell(Some(run_id));
        bump(&self.any);
        let runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(sender) = runs.get(run_id) {
            bump(sender);
        }
    }

    /// Every run may have changed (notifications were interrupted), deliveries may be
    /// queued, and keys may have changed.
    pub fn publish_all(&self) {
        self.tell(None);
        let runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        runs.values().for_each(bump);
        bump(&self.any);
        bump(&self.deliveries);
        bump(&self.keys);
    }

    /// An API key may have changed in what authentication reads (revoked, scopes, lane,
    /// retention) or been removed: whatever keeps verified keys reads them again.
    pub fn publish_keys(&self) {
        bump(&self.keys);
    }

    /// The keys' version: it changes with every [`ChangeFeed::publish_keys`]. What was read
    /// of a key under one version is current while the version stays.
    pub fn keys_version(&self) -> u64 {
        *self.keys.borrow()
    }

    /// Resolves, through [`watch::Receiver::changed`], when any run may have changed.
    pub fn any_run(&self) -> watch::Receiver<u64> {
        self.any.subscribe()
    }

    /// Webhook deliveries may have been queued.
    pub fn publish_deliveries(&self) {
        bump(&self.deliveries);
    }

    /// Resolves, through [`watch::Receiver::changed`], when deliveries may have been queued.
    pub fn deliveries(&self) -> watch::Receiver<u64> {
        self.deliveries.subscribe()
    }

    /// Runs with someone waiting on them (for tests).
    pub fn watched(&self) -> usize {
        self.runs.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

/// A subscription to one run's signals (see [`ChangeFeed::watch`]); the run's entry goes
/// when its last watch is dropped.
#[derive(Debug)]
pub struct RunWatch {
    feed: Arc<ChangeFeed>,
    run_id: Box<str>,
    receiver: watch::Receiver<u64>,
}

impl RunWatch {
    /// Resolves after the next signal for the run (at once if one came since the last call).
    pub async fn changed(&mut self) {
        // The sender lives while this watch does (its entry is removed only when the last
        // watch is dropped), so this never fails; if it did, waiting longer would not help.
        let _ = self.receiver.changed().await;
    }
}

impl Drop for RunWatch {
    fn drop(&mut self) {
        let mut runs = self.feed.runs.lock().unwrap_or_else(PoisonError::into_inner);
        // This watch's receiver is still counted until the end of this function.
        if runs.get(&*self.run_id).is_some_and(|sender| sender.receiver_count() <= 1) {
            runs.remove(&*self.run_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    async fn fires(watch: &mut RunWatch) -> bool {
        tokio::time::timeout(Duration::from_millis(50), watch.changed()).await.is_ok()
    }

    #[tokio::test]
    async fn a_watch_sees_its_run_only_and_entries_go_with_the_last_watch() {
        let feed = Arc::new(ChangeFeed::default());
        let mut a = feed.watch("run_a");
        let mut a2 = feed.watch("run_a");
        let mut b = feed.watch("run_b");
        assert_eq!(feed.watched(), 2);
        feed.publish("run_a");
        feed.publish("run_c");
        assert!(fires(&mut a).await);
        assert!(fires(&mut a2).await);
        assert!(!fires(&mut b).await);
        // Signals coalesce: two before a wait are one wake-up.
        feed.publish("run_b");
        feed.publish("run_b");
        assert!(fires(&mut b).await);
        assert!(!fires(&mut b).await);
        drop(a);
        assert_eq!(feed.watched(), 2);
        drop(a2);
        drop(b);
        assert_eq!(feed.watched(), 0);
    }

    #[tokio::test]
    async fn publish_all_wakes_every_watch_and_the_deliverer() {
        let feed = Arc::new(ChangeFeed::default());
        let mut a = feed.watch("run_a");
        let mut deliveries = feed.deliveries();
        let keys = feed.keys_version();
        feed.publish_all();
        assert!(fires(&mut a).await);
        assert!(tokio::time::timeout(Duration::from_millis(50), deliveries.changed()).await.is_ok());
        assert_ne!(feed.keys_version(), keys, "keys may have changed too");
    }

    #[test]
    fn each_key_change_is_a_new_keys_version() {
        let feed = ChangeFeed::default();
        let first = feed.keys_version();
        feed.publish_keys();
        let second = feed.keys_version();
        assert_ne!(first, second);
        assert_eq!(feed.keys_version(), second, "reading it changes nothing");
        feed.publish("run_a");
        assert_eq!(feed.keys_version(), second, "a run's change is not a key's");
    }
}
