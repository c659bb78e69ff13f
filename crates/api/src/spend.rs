//! Spend limits on the interface: `GET /api/v3/usage` (the calling key's and its account's
//! limits and usage), their view, and the rule that a console session never grants more than
//! its own key holds.

use atelier_core::spend::UNLIMITED;
use atelier_store::{format_time, LimitChange, PeriodUse, SpendUse};
use atelier_wire as wire;
use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};

use crate::error::ApiError;
use crate::extract::Caller;
use crate::state::AppState;

pub(crate) fn routes() -> Router<AppState> {
    Router::new().route("/api/v3/usage", get(usage))
}

async fn usage(
    State(state): State<AppState>,
    Caller(account): Caller,
) -> Result<Json<wire::SpendReport>, ApiError> {
    let key_id = account.key_id.ok_or(ApiError::Unauthorized)?;
    let (spent, key) = state.store.spend(account.id, Some(key_id)).await?;
    let key = key.ok_or(ApiError::Unauthorized)?;
    Ok(Json(wire::SpendReport { account: view(&spent), key: view(&key) }))
}

/// A key's or an account's limits and usage as the interface shows them.
pub fn view(spend: &SpendUse) -> wire::Spend {
    let period = |p: &PeriodUse| wire::SpendPeriod {
        limit: p.limit,
        used: p.used,
        resets_at: format_time(p.resets_at),
    };
    wire::Spend {
        daily: period(&spend.day),
        monthly: period(&spend.month),
        running_nodes_limit: spend.concurrency,
        running_nodes: spend.running,
        settings: wire::LimitSettings {
            daily: spend.settings.daily,
            monthly: spend.settings.monthly,
            running_nodes: spend.settings.concurrency,
        },
    }
}

/// The change a console session asks for, refused (403 `Forbidden`) where it would give a
/// key more than the session's own key has: a limit above the session key's, or none where
/// the session key has one. Values below -1, and a cap on running nodes of 0, are 422.
pub(crate) fn change(request: &wire::LimitsRequest, own: &SpendUse) -> Result<LimitChange, ApiError> {
    let wanted = [
        ("daily", request.daily, own.day.limit),
        ("monthly", request.monthly, own.month.limit),
        ("running_nodes", request.running_nodes, own.concurrency),
    ];
    for (field, setting, own_limit) in wanted {
        let Some(setting) = setting else { continue };
        let least = if field == "running_nodes" { 1 } else { 0 };
        if let Some(n) = setting.filter(|&n| n != UNLIMITED && n < least) {
            return Err(atelier_core::RequestError::invalid(
                field,
                format!("{n} is not a limit: give {least} or more, -1 for no limit, or null for the default"),
            )
            .into());
        }
        let Some(own_limit) = own_limit else { continue };
        // What the setting would put in force is unknown for null (the default may be
        // anything), so only numbers within the session key's own limit pass.
        match setting {
            Some(n) if n != UNLIMITED && n <= own_limit => {}
            _ => {
                return Err(ApiError::Forbidden(format!(
                    "{field}: the key this session signed in with is limited to {own_limit}; it cannot give a key \
                     more (a number up to {own_limit})"
                )))
            }
        }
    }
    Ok(LimitChange { daily: request.daily, monthly: request.monthly, concurrency: request.running_nodes })
}

#[cfg(test)]
mod tests {
    use super::*;
    use atelier_core::spend::{Holder, Period};
    use atelier_store::Limits;

    fn own(daily: Option<i64>, concurrency: Option<i64>) -> SpendUse {
        let period = |period, limit| PeriodUse { period, limit, used: 0, resets_at: 0 };
        SpendUse {
            holder: Holder::Key,
            settings: Limits::default(),
            day: period(Period::Day, daily),
            month: period(Period::Month, None),
            concurrency,
            running: Some(0),
        }
    }

    #[test]
    fn a_session_grants_up_to_its_own_keys_limits() {
        let limited = own(Some(100), Some(2));
        let body = |json: serde_json::Value| serde_json::from_value::<wire::LimitsRequest>(json).unwrap();
        let allowed =
            change(&body(serde_json::json!({"daily": 100, "monthly": -1, "running_nodes": 1})), &limited);
        assert_eq!(
            allowed.unwrap(),
            LimitChange { daily: Some(Some(100)), monthly: Some(Some(-1)), concurrency: Some(Some(1)) }
        );
        for refused in [
            serde_json::json!({"daily": 101}),
            serde_json::json!({"daily": -1}),
            serde_json::json!({"daily": null}),
            serde_json::json!({"running_nodes": 3}),
        ] {
            assert!(
                matches!(change(&body(refused.clone()), &limited), Err(ApiError::Forbidden(_))),
                "{refused}"
            );
        }
        // An unlimited session key grants anything, the default included.
        let free = own(None, None);
        assert!(change(&body(serde_json::json!({"daily": null, "monthly": 5})), &free).is_ok());
        for invalid in [serde_json::json!({"daily": -2}), serde_json::json!({"running_nodes": 0})] {
            assert!(matches!(change(&body(invalid.clone()), &free), Err(ApiError::Request(_))), "{invalid}");
        }
        assert_eq!(change(&body(serde_json::json!({})), &limited).unwrap(), LimitChange::default());
    }
}
