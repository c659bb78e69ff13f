//! Spend limits: what a key and its account may reserve per UTC day and month, what they
//! used, and the body that sets a key's limits.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

/// One period of a spend limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SpendPeriod {
    /// The limit in force, in tokens: the key's (or account's) own, or else the operator's
    /// default; null when there is none.
    pub limit: Option<i64>,
    /// Tokens reserved in the current period: runs' and batches' prices as they were
    /// accepted, less what they gave back (canceled or failed work).
    pub used: i64,
    /// When the period ends and `used` starts again from zero (UTC,
    /// `YYYY-MM-DDTHH:MM:SS.ffffff`): the next 00:00 UTC for the day, the first of the next
    /// month for the month.
    pub resets_at: String,
}

/// Limit settings as stored: a number is the limit; -1 is no limit, whatever the operator's
/// default; null follows the operator's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LimitSettings {
    /// Tokens per UTC day.
    pub daily: Option<i64>,
    /// Tokens per UTC month.
    pub monthly: Option<i64>,
    /// Keys: nodes running at once.
    pub running_nodes: Option<i64>,
}

/// A key's or an account's spend limits and what it used of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Spend {
    /// The UTC day.
    pub daily: SpendPeriod,
    /// The UTC month.
    pub monthly: SpendPeriod,
    /// Keys: the cap on its nodes running at once (the key's own or the operator's
    /// default); null when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_nodes_limit: Option<i64>,
    /// Keys: its nodes running now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_nodes: Option<i64>,
    /// The stored settings, where the limits in force come from.
    pub settings: LimitSettings,
}

/// The answer of `GET /api/v3/usage`: the spend limits of the calling key and of its
/// account, and what each used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SpendReport {
    /// The account's own limits: all its keys together.
    pub account: Spend,
    /// The calling key's limits.
    pub key: Spend,
}

/// The body of `PUT /console/api/keys/{id}/limits`. Each field left out stays as it is; a
/// number sets the limit (0 or more; -1: no limit, whatever the operator's default), null
/// returns it to the operator's default. A session never sets a limit above its own key's,
/// nor lifts one its own key has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LimitsRequest {
    /// Tokens per UTC day.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "nullable_limit")]
    pub daily: Option<Option<i64>>,
    /// Tokens per UTC month.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "nullable_limit")]
    pub monthly: Option<Option<i64>>,
    /// Nodes running at once (1 or more, or -1).
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "nullable_limit")]
    pub running_nodes: Option<Option<i64>>,
}

/// A field that is present, null or not: `Some(None)` for null, `None` (by `default`) when
/// left out.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Option<i64>>, D::Error> {
    Option::<i64>::deserialize(deserializer).map(Some)
}

fn nullable_limit(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": ["integer", "null"], "minimum": -1})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_left_out_field_is_unchanged_and_null_is_the_default() {
        let body: LimitsRequest = serde_json::from_str(r#"{"daily": 100, "monthly": null}"#).unwrap();
        assert_eq!(body, LimitsRequest { daily: Some(Some(100)), monthly: Some(None), running_nodes: None });
        assert_eq!(serde_json::to_value(body).unwrap(), serde_json::json!({"daily": 100, "monthly": null}));
        assert!(serde_json::from_str::<LimitsRequest>(r#"{"daily": "lots"}"#).is_err());
    }
}
