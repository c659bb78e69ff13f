//! Saved workflows: the document, its description (spec 2.3), the list, a validation, and
//! the price of a run.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::runs::RunRequest;
use crate::tools::ParamKind;

/// A workflow document: the body of `PUT /api/v3/workflow/{name}` and the `workflow` of a
/// description.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "Workflow")]
pub struct WorkflowDefinition {
    /// The name written in the definition: PUT saves under the path's name whatever this says;
    /// `atelier admin workflow import` saves under it when no --name is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Input variables: name → `{type, targets}`.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub variables: Map<String, Value>,
    /// The nodes (`{name, tool, params, links, bypass}`).
    pub nodes: Vec<Value>,
    /// Output name → `Node.output`.
    #[serde(default)]
    pub outputs: IndexMap<String, String>,
    /// Extension: where an editor placed each node (`$var:NAME` and `$out:NAME` for variables
    /// and outputs): [x, y]. Kept and returned; runs ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<IndexMap<String, [f64; 2]>>,
}

/// The `inputs` of a workflow description: key → descriptor such as `<type:image , default
/// value : null>` (see [`parse_descriptor`]); `linked` maps a parameter to its source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WorkflowInputs {
    /// Inputs a run must give.
    #[serde(default)]
    pub mandatory: IndexMap<String, String>,
    /// Inputs with a default a run may override.
    #[serde(default)]
    pub optional: IndexMap<String, String>,
    /// Parameters fed by upstream nodes (a run cannot override them).
    #[serde(default)]
    pub linked: IndexMap<String, String>,
}

impl WorkflowInputs {
    /// The type of a mandatory or optional input, from its descriptor.
    pub fn kind(&self, key: &str) -> Option<ParamKind> {
        let descriptor = self.mandatory.get(key).or_else(|| self.optional.get(key))?;
        parse_descriptor(descriptor).map(|(ty, _)| ParamKind::parse(ty))
    }
}

/// Reads a descriptor `<type:TYPE , default value : DEFAULT>` into its type and default.
pub fn parse_descriptor(descriptor: &str) -> Option<(&str, &str)> {
    let inner = descriptor.trim().strip_prefix("<type:")?.strip_suffix('>')?;
    let (ty, rest) = inner.split_once(',')?;
    let default = rest.trim().strip_prefix("default value")?.trim_start().strip_prefix(':')?;
    Some((ty.trim(), default.trim()))
}

/// `GET /api/v3/workflow/{name}`: the document, a ready run body and its inputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WorkflowDescription {
    /// The name it is saved under.
    pub name: String,
    /// The document.
    pub workflow: WorkflowDefinition,
    /// A ready run body with a placeholder (`<image>`) for every mandatory input.
    pub sample_payload: RunRequest,
    /// Its inputs.
    #[serde(default)]
    pub inputs: WorkflowInputs,
    /// Output name → `Node.param`.
    #[serde(default)]
    pub outputs: IndexMap<String, String>,
}

/// An item of `GET /api/v3/workflows`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkflowSummary {
    /// The workflow's id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// A system template (shared, read-only).
    #[serde(default)]
    pub system_workflow: bool,
    /// When it was saved.
    #[serde(default)]
    pub created_at: String,
}

/// `DELETE /api/v3/workflow/{name}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Deleted {
    /// The name.
    pub name: String,
    /// Always true.
    pub deleted: bool,
}

/// `POST /api/v3/estimate`: a run's price; nothing is reserved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Estimate {
    /// The whole run's price.
    pub tokens: i64,
    /// Node name → its price.
    #[serde(default)]
    pub nodes: IndexMap<String, i64>,
    /// The account's available balance (absent in a validation's estimate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub balance: Option<i64>,
}

/// One problem found by `POST /api/v3/workflows/validate`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ValidationProblem {
    /// Node, Node.param, variables.NAME, outputs.NAME, layout.KEY, nodes or name; null when
    /// the problem is the whole document.
    #[serde(default)]
    pub field: Option<String>,
    /// Why.
    pub reason: String,
}

/// `POST /api/v3/workflows/validate`: every problem of a document, and what discovery will
/// show of it (nothing is saved).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "Validation")]
pub struct WorkflowValidation {
    /// Whether the document has no problem.
    pub valid: bool,
    /// Every problem.
    #[serde(default)]
    pub errors: Vec<ValidationProblem>,
    /// What discovery would show of it, when valid.
    #[serde(default)]
    pub description: Option<WorkflowDescription>,
    /// The price with every mandatory input at a placeholder (non-image inputs at their first
    /// allowed value): where the price starts. When valid.
    #[serde(default)]
    pub estimate: Option<Estimate>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_give_type_and_default() {
        assert_eq!(parse_descriptor("<type:image , default value : null>"), Some(("image", "null")));
        assert_eq!(parse_descriptor("<type:number , default value : 2>"), Some(("number", "2")));
        assert_eq!(
            parse_descriptor("<type:string , default value : white studio>"),
            Some(("string", "white studio"))
        );
        assert_eq!(parse_descriptor("image"), None);
        let inputs = WorkflowInputs {
            mandatory: [(
                "Shoot.product_image".to_string(),
                "<type:image , default value : null>".to_string(),
            )]
            .into_iter()
            .collect(),
            optional: [("Up.scale".to_string(), "<type:number , default value : 2>".to_string())]
                .into_iter()
                .collect(),
            linked: IndexMap::new(),
        };
        assert_eq!(inputs.kind("Shoot.product_image"), Some(ParamKind::Image));
        assert_eq!(inputs.kind("Up.scale"), Some(ParamKind::Number));
        assert_eq!(inputs.kind("Up.image"), None);
    }
}
