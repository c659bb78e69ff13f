//! What every handler shares: the state the router holds ([`AppState`]: the store, object
//! storage, the settings, finished runs).

use std::sync::Arc;

use atelier_blob::BlobStore;
use atelier_store::SharedStore;

use crate::finished;
use crate::settings::ApiConfig;

/// Shared by every handler.
#[derive(Clone)]
pub struct AppState {
    pub store: SharedStore,
    pub blob: BlobStore,
    pub config: Arc<ApiConfig>,
    /// Statuses of finished runs, rendered once (see [`crate::finished`]).
    pub finished: Arc<finished::FinishedRuns>,
}

impl AppState {
    pub fn new(store: SharedStore, blob: BlobStore, config: ApiConfig) -> Self {
        let finished: Arc<finished::FinishedRuns> = Arc::default();
        let listener: Arc<dyn atelier_store::ChangeListener> = finished.clone();
        store.changes().listen(Arc::downgrade(&listener));
        Self { store, blob, config: Arc::new(config), finished }
    }
}
