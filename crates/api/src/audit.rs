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

pub(crate) fn routes() -> axum::Router<AppState> {
    axum::Router::new().route("/api/v3/audit", axum::routing::get(list))
}

#[derive(serde::Deserialize)]
struct Page {
    action: Option<String>,
    since: Option<String>,
    before: Option<i64>,
    limit: Option<i64>,
}

/// `GET /api/v3/audit`: the caller's account's entries, newest first.
async fn list(
    axum::extract::State(state): axum::extract::State<AppState>,
    crate::extract::Caller(account): crate::extract::Caller,
    page: Result<axum::extract::Query<Page>, axum::extract::rejection::QueryRejection>,
) -> Result<axum::Json<atelier_wire::AuditList>, crate::error::ApiError> {
    use atelier_core::RequestError;
    let axum::extract::Query(page) = page.map_err(|e| RequestError::InvalidRequest(e.body_text()))?;
    let since = match page.since.as_deref().filter(|s| !s.is_empty()) {
        Some(text) => Some(atelier_core::time::parse_time(text).ok_or_else(|| {
            RequestError::invalid(
                "since",
                "a time such as 2026-11-01T00:00:00Z, or a date such as 2026-11-01",
            )
        })?),
        None => None,
    };
    let limit = page.limit.unwrap_or(50);
    if !(1..=500).contains(&limit) {
        return Err(RequestError::invalid("limit", "1 to 500").into());
    }
    let query = atelier_store::AuditQuery {
        account_id: Some(account.id),
        action: page.action.as_deref().filter(|a| !a.is_empty()),
        since,
        before_id: page.before,
        limit,
    };
    let entries = state.store.audit_entries(&query).await?;
    let next_before = (entries.len() as i64 == limit).then(|| entries.last().map(|e| e.id)).flatten();
    let entries = entries
        .into_iter()
        .map(|e| atelier_wire::AuditEntry {
            id: e.id,
            at: atelier_store::format_time(e.at),
            actor: e.actor,
            address: e.address,
            action: e.action,
            target: e.target,
            summary: serde_json::from_str(&e.summary).unwrap_or(Value::String(e.summary)),
            prev_hash: e.prev_hash,
            hash: e.hash,
        })
        .collect();
    Ok(axum::Json(atelier_wire::AuditList { entries, next_before }))
}
