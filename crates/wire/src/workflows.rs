//! Saved workflows: the document, its description (spec 2.3), the list, a validation, and
//! the price of a run.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::enums::wire_enum;
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
    /// Input variables: one value a run gives, sent to several parameters.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub variables: IndexMap<String, WorkflowVariable>,
    /// The nodes, each a tool run.
    pub nodes: Vec<WorkflowNode>,
    /// Output name → `Node.output`.
    #[serde(default)]
    pub outputs: IndexMap<String, String>,
    /// Extension: where an editor placed each node (`$var:NAME` and `$out:NAME` for variables
    /// and outputs): [x, y]. Kept and returned; runs ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<IndexMap<String, [f64; 2]>>,
}

/// A node of a workflow: one tool run, its parameters set or linked to other nodes' outputs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WorkflowNode {
    /// Its name, unique in the workflow (`Name.param` input keys and `Name.output` links use it).
    pub name: String,
    /// The tool it runs.
    pub tool: String,
    /// Parameter values it sets; a run's input may override them.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub params: Map<String, Value>,
    /// Parameter → `Upstream.output`: the parameter takes that node's output.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub links: IndexMap<String, String>,
    /// Whether it runs.
    #[serde(default)]
    pub mode: NodeMode,
}

/// Whether a workflow node runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum NodeMode {
    /// It runs.
    #[default]
    Active,
    /// It does not run and costs nothing: its primary image input passes through.
    Bypassed,
    /// A mode this version does not know.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

wire_enum!(NodeMode { Active => "active", Bypassed => "bypassed" });

/// An input variable of a workflow: a run gives it once, and each target parameter gets it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WorkflowVariable {
    /// The type of every target parameter.
    #[serde(rename = "type")]
    pub kind: ParamKind,
    /// The `Node.param` keys that receive the value.
    pub targets: Vec<String>,
}

impl From<&atelier_core::workflow::WorkflowDef> for WorkflowDefinition {
    fn from(def: &atelier_core::workflow::WorkflowDef) -> Self {
        use atelier_core::workflow::Mode;
        let variables = def
            .variables
            .iter()
            .map(|(name, var)| {
                let variable =
                    WorkflowVariable { kind: ParamKind::parse(&var.ty), targets: var.targets.clone() };
                (name.clone(), variable)
            })
            .collect();
        let nodes = def
            .nodes
            .iter()
            .map(|node| WorkflowNode {
                name: node.name.clone(),
                tool: node.tool.clone(),
                params: node.params.clone(),
                links: node.links.clone(),
                mode: match node.mode {
                    Mode::Active => NodeMode::Active,
                    Mode::Bypassed => NodeMode::Bypassed,
                },
            })
            .collect();
        Self {
            name: def.name.clone(),
            description: Some(def.description.clone()).filter(|d| !d.is_empty()),
            variables,
            nodes,
            outputs: def.outputs.clone(),
            layout: Some(def.layout.clone()).filter(|l| !l.is_empty()),
        }
    }
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

    /// The document as the server writes it is the document as core keeps it, field for
    /// field: the shipped templates, and one with every optional part.
    #[test]
    fn a_definition_is_written_as_core_writes_it() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../templates");
        let mut documents: Vec<Value> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .map(|p| serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap())
            .collect();
        assert!(documents.len() >= 3, "the templates are read");
        documents.push(serde_json::json!({
            "name": "all", "description": "every part",
            "variables": {"photo": {"type": "image", "targets": ["Up.image"]}},
            "nodes": [{"name": "Up", "tool": "upscale", "params": {"scale": 2}},
                      {"name": "Sq", "tool": "reframe", "links": {"image": "Up.output"}, "mode": "bypassed"}],
            "outputs": {"big": "Up.output"},
            "layout": {"Up": [1.0, 2.5], "$var:photo": [0.0, 0.0]},
        }));
        for document in documents {
            let def = atelier_core::workflow::WorkflowDef::parse(document).unwrap();
            let core = serde_json::to_value(&def).unwrap();
            let wire = serde_json::to_value(WorkflowDefinition::from(&def)).unwrap();
            assert_eq!(wire, core);
            let read: WorkflowDefinition = serde_json::from_value(core).unwrap();
            assert_eq!(read, WorkflowDefinition::from(&def), "read back the same");
        }
    }

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
