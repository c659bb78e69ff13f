//! What every handler shares: the state the router holds ([`AppState`]: the store, object
//! storage, the settings, finished runs, verified keys).

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
    /// API keys the database verified a moment ago (see [`crate::keys`]).
    pub keys: Arc<crate::keys::VerifiedKeys>,
}

impl AppState {
    pub fn new(store: SharedStore, blob: BlobStore, config: ApiConfig) -> Self {
        let finished: Arc<finished::FinishedRuns> = Arc::default();
        let listener: Arc<dyn atelier_store::ChangeListener> = finished.clone();
        store.changes().listen(Arc::downgrade(&listener));
        let keys = Arc::new(crate::keys::VerifiedKeys::new(config.verified_keys));
        Self { store, blob, config: Arc::new(config), finished, keys }
    }
}
