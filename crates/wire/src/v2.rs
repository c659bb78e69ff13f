//! The v2 interface's own shapes: a run's status per family, and the token balance.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::enums::wire_enum;
use crate::runs::RunError;

/// The state of a v2 run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum V2State {
    /// Accepted, not started.
    InQueue,
    /// Running.
    Processing,
    /// Finished; `output` is available.
    Completed,
    /// Failed (see `error`).
    Failed,
    /// Canceled.
    Canceled,
    /// A state this version does not know.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

wire_enum!(V2State {
    InQueue => "in_queue",
    Processing => "processing",
    Completed => "completed",
    Failed => "failed",
    Canceled => "canceled",
});

impl V2State {
    /// Whether the run has ended.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Canceled)
    }
}

impl From<atelier_core::status::RunStatus> for V2State {
    fn from(s: atelier_core::status::RunStatus) -> Self {
        use atelier_core::status::RunStatus as S;
        match s {
            S::Queued => Self::InQueue,
            S::Running => Self::Processing,
            S::Succeeded => Self::Completed,
            S::Failed => Self::Failed,
            S::Canceled => Self::Canceled,
        }
    }
}

/// The `output` of a v2 status: a list of URLs, except for the fabric family (one URL, null
/// until produced).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum V2Output {
    /// A list of URLs.
    Many(Vec<String>),
    /// One URL (fabric).
    One(String),
}

/// A v2 status object (`GET /api/v2/{family}/status/{id}`): exactly the fields the family
/// has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct V2Status {
    /// The run id.
    pub id: String,
    /// Its state.
    pub status: V2State,
    /// Array of URLs; a single URL string (or null) for fabric.
    #[serde(default)]
    pub output: Option<V2Output>,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<RunError>,
    /// Try-on: the request as sent (inline images shown as `<base64>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Map<String, Value>>,
    /// Try-on and try-on pro: the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    /// The answer as it came (kept by a reader; never written).
    #[serde(skip)]
    #[schemars(skip)]
    pub raw: Value,
}

impl V2Status {
    /// The output URLs as a list, whatever the family's shape.
    pub fn urls(&self) -> Vec<String> {
        match &self.output {
            Some(V2Output::Many(list)) => list.clone(),
            Some(V2Output::One(url)) => vec![url.clone()],
            None => Vec::new(),
        }
    }
}

/// `GET /api/v2/user/tokens`: the token balance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "Tokens")]
pub struct TokenBalance {
    /// The available balance.
    pub tokens: i64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn v2_output_is_a_list_or_one_url() {
        let many: V2Status = serde_json::from_value(
            json!({"id": "gen_1", "status": "completed", "output": ["u1", "u2"], "error": null}),
        )
        .unwrap();
        assert_eq!(many.urls(), ["u1", "u2"]);
        let one: V2Status = serde_json::from_value(
            json!({"id": "gen_1", "status": "in_queue", "output": "u", "error": null}),
        )
        .unwrap();
        assert_eq!((one.urls(), one.status.is_terminal()), (vec!["u".to_string()], false));
        let none: V2Status =
            serde_json::from_value(json!({"id": "gen_1", "status": "failed", "output": null, "error": null}))
                .unwrap();
        assert!(none.urls().is_empty());
    }

    #[test]
    fn the_states_are_core_s_v2_names() {
        for &s in atelier_core::status::RunStatus::ALL {
            assert_eq!(V2State::from(s).as_str(), s.v2_name());
            assert_eq!(serde_json::to_value(V2State::from(s)).unwrap(), json!(s.v2_name()));
        }
    }
}
