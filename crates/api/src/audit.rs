//! Security-relevant changes made over HTTP, recorded in the audit log
//! (`atelier_store::AuditLog`): who made them (the key by its prefix, or the console
//! session of a key), from which address, what and to what, with a summary that never
//! holds a secret.
//!
//! An entry is written once its change has been made, in a transaction of its own: a
//! process that dies between the two leaves the change without its entry (the change is
//! never undone for want of one). A failed write is logged and counted, and the answer is
//! the change's.

use std::net::SocketAddr;

use atelier_store::{Account, NewAuditEntry};
use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use serde_json::Value;

use crate::state::AppState;

/// Where a request came from: the client's address, and whether it came through the
/// console (a session) or with a key in its header.
#[derive(Debug, Clone, Default)]
pub(crate) struct Origin {
    pub address: Option<String>,
    pub console: bool,
}

impl<S: Send + Sync> FromRequestParts<S> for Origin {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let address =
            parts.extensions.get::<ConnectInfo<SocketAddr>>().map(|ConnectInfo(a)| a.ip().to_string());
        Ok(Origin { address, console: parts.uri.path().starts_with("/console/") })
    }
}

impl Origin {
    /// Who acts: `session:atl_abcd` or `key:atl_abcd`.
    pub(crate) fn actor(&self, account: &Account) -> String {
        let prefix = account.key_prefix.as_deref().unwrap_or("unknown");
        if self.console {
            format!("session:{prefix}")
        } else {
            format!("key:{prefix}")
        }
    }
}

/// Records `action` on `target` by `account`'s caller.
pub(crate) async fn record(
    state: &AppState,
    account: &Account,
    origin: &Origin,
    action: &str,
    target: Option<&str>,
    summary: Value,
) {
    let entry = NewAuditEntry {
        account_id: Some(account.id),
        actor: origin.actor(account),
        address: origin.address.clone(),
        action: action.into(),
        target: target.map(str::to_owned),
        summary,
    };
    write(state, entry).await;
}

/// Writes an entry; a failure is logged, never answered.
pub(crate) async fn write(state: &AppState, entry: NewAuditEntry) {
    if let Err(error) = state.store.record_audit(entry.clone()).await {
        tracing::error!(%error, action = entry.action, "an audit entry could not be written");
    }
}
