//! The saved workflow format, its validation and its discovery view.
//!
//! A workflow is an immutable DAG of named nodes. Each node runs one tool;
//! `links` feed a parameter from an upstream node's `output`; `variables`
//! give one input name to several node parameters; `outputs` names the
//! results a caller reads.

use std::collections::{HashMap, HashSet};

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use unicode_normalization::UnicodeNormalization as _;

use crate::params::{number_value, ParamSpec, ParamType, Params};
use crate::tools::{self, ToolSpec, OUTPUT};
use crate::RequestError;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Active,
    /// Does not run and costs nothing; passes its primary image input through.
    Bypassed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeDef {
    pub name: String,
    pub tool: String,
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub params: Params,
    /// Parameter name → `Upstream.output`.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub links: IndexMap<String, String>,
    #[serde(default)]
    pub mode: Mode,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variable {
    #[serde(rename = "type")]
    pub ty: String,
    /// `Node.param` keys that receive the variable's value.
    pub targets: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowDef {
    /// Display name; the saved name is the one it is stored under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub variables: IndexMap<String, Variable>,
    pub nodes: Vec<NodeDef>,
    /// Friendly output name → `Node.output`.
    #[serde(default)]
    pub outputs: IndexMap<String, String>,
    /// Where an editor placed things: key → `[x, y]`. Keys are node names, and by
    /// convention `$var:NAME` for variables and `$out:NAME` for outputs. Kept with the
    /// workflow and returned by discovery; nothing that runs reads it.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub layout: IndexMap<String, [f64; 2]>,
}

/// The most positions a layout holds when the workflow has fewer places to put.
pub const LAYOUT_MAX_ENTRIES: usize = 256;

/// The three input maps of a workflow description (spec 2.3).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Inputs {
    pub mandatory: IndexMap<String, String>,
    pub optional: IndexMap<String, String>,
    pub linked: IndexMap<String, String>,
}

/// Whether `name` is a valid node or variable name (also used for account
/// names): 1 to 64 characters of `A-Z a-z 0-9 _ -`. Node and variable names
/// are the parts of `Node.param` input keys, so they keep this narrow rule.
pub fn valid_identifier(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
}

/// The longest workflow name, in characters (Unicode code points, counted
/// after normalisation to NFC).
pub const WORKFLOW_NAME_MAX_CHARS: usize = 100;

/// Checks a workflow name as a person wrote it and returns the name it is
/// saved and looked up under: its NFC form, so that the composed and the
/// decomposed spelling of `Été` are one name. The error is the reason, for
/// the `reason` of a 422 `InvalidInput`.
///
/// A workflow name is 1 to [`WORKFLOW_NAME_MAX_CHARS`] characters; it has no
/// `/` (names are path segments of `/api/v3/workflow/{name}`), no control
/// character (Unicode category Cc), none of the invisible characters that
/// reorder or hide text (see [`is_hidden_format_char`]), no white space at
/// either end, and is not `.` or `..` (which URLs treat as path steps).
/// Anything else is allowed: spaces inside, punctuation, `+`, `%`, any
/// script, emoji. Names are compared exactly once normalised: no case folding.
pub fn validate_workflow_name(name: &str) -> Result<String, String> {
    let name: String = name.nfc().collect();
    if name.is_empty() {
        return Err("a workflow name cannot be empty".into());
    }
    let chars = name.chars().count();
    if chars > WORKFLOW_NAME_MAX_CHARS {
        return Err(format!(
            "a workflow name is at most {WORKFLOW_NAME_MAX_CHARS} characters; this one has {chars}"
        ));
    }
    if name.contains('/') {
        return Err("a workflow name cannot contain '/'".into());
    }
    if let Some((i, c)) = name.chars().enumerate().find(|(_, c)| c.is_control()) {
        return Err(format!(
            "a workflow name cannot contain control characters (U+{:04X} at character {})",
            u32::from(c),
            i + 1
        ));
    }
    if let Some((i, c)) = name.chars().enumerate().find(|&(_, c)| is_hidden_format_char(c)) {
        return Err(format!(
            "a workflow name cannot contain invisible formatting characters (U+{:04X} at character {})",
            u32::from(c),
            i + 1
        ));
    }
    if name.starts_with(char::is_whitespace) || name.ends_with(char::is_whitespace) {
        return Err("a workflow name cannot begin or end with white space".into());
    }
    if name == "." || name == ".." {
        return Err("a workflow name cannot be '.' or '..' (URLs treat them as path steps)".into());
    }
    Ok(name)
}

/// A workflow name from a request (`field` says where it was), checked and normalised to the
/// form it is saved under; an `InvalidInput` naming `field` says why not.
pub fn requested_workflow_name(field: &str, raw: &str) -> Result<String, RequestError> {
    validate_workflow_name(raw).map_err(|reason| RequestError::invalid(field, reason))
}

/// The invisible characters a workflow name may not hold: bidirectional
/// marks, embeddings, overrides and isolates (they reorder what is shown, so
/// a name could read as another), zero-width and other invisible formatting
/// characters, the line and paragraph separators. Left allowed, though
/// invisible too: the zero-width joiner and non-joiner (emoji sequences such
/// as 👩‍💻, Persian and Indic scripts) and the tag characters of subdivision
/// flags (🏴󠁧󠁢󠁳󠁣󠁴󠁿).
pub fn is_hidden_format_char(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}' // soft hyphen
            | '\u{061C}' // Arabic letter mark
            | '\u{180E}' // Mongolian vowel separator
            | '\u{200B}' // zero-width space
            | '\u{200E}'..='\u{200F}' // left-to-right and right-to-left marks
            | '\u{2028}'..='\u{2029}' // line and paragraph separators
            | '\u{202A}'..='\u{202E}' // bidirectional embeddings and overrides
            | '\u{2060}'..='\u{2064}' // word joiner, invisible operators
            | '\u{2066}'..='\u{206F}' // bidirectional isolates, deprecated format characters
            | '\u{FEFF}' // zero-width no-break space (byte-order mark)
            | '\u{FFF9}'..='\u{FFFB}' // interlinear annotation
    )
}

fn invalid(node: &str, reason: impl Into<String>) -> RequestError {
    RequestError::invalid(node, reason)
}

/// Splits `Node.param` at its first dot.
pub fn split_key(key: &str) -> Option<(&str, &str)> {
    key.split_once('.')
}

impl WorkflowDef {
    pub fn parse(value: Value) -> Result<Self, RequestError> {
        serde_json::from_value(value)
            .map_err(|e| RequestError::InvalidRequest(format!("invalid workflow: {e}")))
    }

    pub fn node(&self, name: &str) -> Option<&NodeDef> {
        self.nodes.iter().find(|n| n.name == name)
    }

    fn node_tool(&self, name: &str) -> Option<&'static ToolSpec> {
        self.node(name).and_then(|n| tools::tool(&n.tool).ok())
    }

    /// The source node of a link value `Node.output`.
    fn link_source<'a>(&self, node: &str, param: &str, link: &'a str) -> Result<&'a str, RequestError> {
        let field = format!("{node}.{param}");
        let (source, output) = split_key(link)
            .ok_or_else(|| invalid(&field, format!("link '{link}' must have the form Node.output")))?;
        if self.node(source).is_none() {
            return Err(invalid(&field, format!("dangling link: no node named '{source}'")));
        }
        if output != OUTPUT {
            return Err(invalid(&field, format!("node '{source}' has no output '{output}'")));
        }
        Ok(source)
    }

    /// Checks everything that can be checked without a run's inputs. Errors
    /// name the offending node (and parameter). The error is the first of
    /// [`WorkflowDef::problems`].
    pub fn validate(&self) -> Result<(), RequestError> {
        match self.problems().into_iter().next() {
            Some(problem) => Err(problem),
            None => Ok(()),
        }
    }

    /// Every problem [`WorkflowDef::validate`] would find, in the order it finds them: at
    /// most one per parameter, link, variable target or output, so that an editor can mark
    /// each place at once. Each is an `InvalidInput` whose field is `Node`, `Node.param`,
    /// `variables.NAME`, `outputs.NAME`, `layout.KEY` or `nodes`.
    pub fn problems(&self) -> Vec<RequestError> {
        let mut problems = Vec::new();
        if self.nodes.is_empty() {
            problems.push(RequestError::invalid("nodes", "a workflow needs at least one node"));
            return problems;
        }
        let mut seen = HashSet::new();
        for node in &self.nodes {
            if !valid_identifier(&node.name) {
                problems.push(invalid(&node.name, "node names are 1-64 characters of A-Z a-z 0-9 _ -"));
            } else if !seen.insert(node.name.as_str()) {
                problems.push(invalid(&node.name, "duplicate node name"));
            }
        }
        for node in &self.nodes {
            self.node_problems(node, &mut problems);
        }
        if let Err(cycle) = self.topo_order() {
            problems.push(cycle);
        }
        self.variable_problems(&mut problems);
        for (name, source) in &self.outputs {
            let field = format!("outputs.{name}");
            match split_key(source) {
                None => problems.push(RequestError::invalid(field, "must have the form Node.output")),
                Some((node, output)) if self.node(node).is_none() || output != OUTPUT => problems
                    .push(RequestError::invalid(field, format!("'{source}' is not the output of a node"))),
                Some(_) => {}
            }
        }
        self.layout_problems(&mut problems);
        problems
    }

    fn node_problems(&self, node: &NodeDef, problems: &mut Vec<RequestError>) {
        let tool = match tools::tool(&node.tool) {
            Ok(tool) => tool,
            Err(RequestError::UnknownTool(t)) => {
                problems.push(invalid(&node.name, format!("unknown tool '{t}'")));
                return;
            }
            Err(other) => {
                problems.push(other);
                return;
            }
        };
        for (param, value) in &node.params {
            let Some(spec) = tool.param(param) else {
                problems.push(invalid(
                    &format!("{}.{param}", node.name),
                    format!("unknown parameter for tool {}", tool.name),
                ));
                continue;
            };
            if !value.is_null() {
                if let Err(e) = spec.check(value) {
                    problems.push(e.in_node(&node.name));
                }
            }
        }
        for (param, link) in &node.links {
            if let Err(e) = self.check_link(node, tool, param, link) {
                problems.push(e);
            }
        }
        if node.mode == Mode::Bypassed && tool.primary_image.is_none() {
            problems.push(invalid(
                &node.name,
                format!("tool {} has no image input to pass through, so it cannot be bypassed", tool.name),
            ));
        }
    }

    fn check_link(
        &self,
        node: &NodeDef,
        tool: &ToolSpec,
        param: &str,
        link: &str,
    ) -> Result<(), RequestError> {
        let field = format!("{}.{param}", node.name);
        let spec = tool
            .param(param)
            .ok_or_else(|| invalid(&field, format!("unknown parameter for tool {}", tool.name)))?;
        let source = self.link_source(&node.name, param, link)?;
        if source == node.name {
            return Err(invalid(&node.name, "a node cannot link to itself"));
        }
        let produces = self.node_tool(source).map(|t| t.output);
        if spec.ty != ParamType::Image || produces != Some(tools::OutputKind::Image) {
            return Err(invalid(
                &field,
                format!("type mismatch: {} is {} and {source}.output is not an image", field, spec.ty.name()),
            ));
        }
        if node.params.get(param).is_some_and(|v| !v.is_null()) {
            return Err(invalid(&field, "a linked parameter cannot also have a value"));
        }
        Ok(())
    }

    fn variable_problems(&self, problems: &mut Vec<RequestError>) {
        let mut targeted = HashSet::new();
        for (name, var) in &self.variables {
            let field = format!("variables.{name}");
            if !valid_identifier(name) {
                problems.push(RequestError::invalid(
                    field,
                    "variable names are 1-64 characters of A-Z a-z 0-9 _ -",
                ));
                continue;
            }
            if self.node(name).is_some() {
                problems.push(RequestError::invalid(field, "a variable cannot share its name with a node"));
                continue;
            }
            if var.targets.is_empty() {
                problems.push(RequestError::invalid(field, "a variable needs at least one target"));
                continue;
            }
            for target in &var.targets {
                let spec = match self.target_spec(target) {
                    Ok(spec) => spec,
                    Err(reason) => {
                        problems.push(RequestError::invalid(&field, reason));
                        continue;
                    }
                };
                if spec.ty.name() != var.ty {
                    problems.push(RequestError::invalid(
                        &field,
                        format!("type mismatch: variable is {} but {target} is {}", var.ty, spec.ty.name()),
                    ));
                } else if !targeted.insert(target.as_str()) {
                    problems.push(RequestError::invalid(
                        &field,
                        format!("{target} is the target of two variables"),
                    ));
                }
            }
        }
    }

    /// Positions are finite, and there are not more of them than an editor could place.
    fn layout_problems(&self, problems: &mut Vec<RequestError>) {
        let places = self.nodes.len() + self.variables.len() + self.outputs.len();
        if self.layout.len() > LAYOUT_MAX_ENTRIES.max(places) {
            problems.push(RequestError::invalid(
                "layout",
                format!(
                    "at most {} positions (one per node, variable and output)",
                    LAYOUT_MAX_ENTRIES.max(places)
                ),
            ));
        }
        for (key, position) in &self.layout {
            if key.chars().count() > 200 {
                problems.push(RequestError::invalid("layout", "a layout key is at most 200 characters"));
            } else if !position.iter().all(|c| c.is_finite() && c.abs() <= 1e7) {
                problems.push(RequestError::invalid(
                    format!("layout.{key}"),
                    "a position is [x, y], two finite numbers within ±10,000,000",
                ));
            }
        }
    }

    fn target_spec(&self, target: &str) -> Result<&'static ParamSpec, String> {
        let (node, param) =
            split_key(target).ok_or_else(|| format!("target '{target}' must have the form Node.param"))?;
        let def = self.node(node).ok_or_else(|| format!("dangling target: no node named '{node}'"))?;
        let tool = tools::tool(&def.tool).map_err(|e| e.to_string())?;
        let spec =
            tool.param(param).ok_or_else(|| format!("{target}: unknown parameter for tool {}", tool.name))?;
        if def.links.contains_key(param) {
            return Err(format!("{target} is linked and cannot be the target of a variable"));
        }
        Ok(spec)
    }

    /// Node indexes in an order where every node comes after its sources.
    /// A cycle is an error naming one node on it.
    pub fn topo_order(&self) -> Result<Vec<usize>, RequestError> {
        let index: HashMap<&str, usize> =
            self.nodes.iter().enumerate().map(|(i, n)| (n.name.as_str(), i)).collect();
        let mut indegree = vec![0usize; self.nodes.len()];
        let mut children = vec![Vec::new(); self.nodes.len()];
        for (i, node) in self.nodes.iter().enumerate() {
            for link in node.links.values() {
                if let Some(&src) = split_key(link).and_then(|(s, _)| index.get(s)) {
                    indegree[i] += 1;
                    children[src].push(i);
                }
            }
        }
        let mut ready: Vec<usize> = (0..self.nodes.len()).filter(|&i| indegree[i] == 0).rev().collect();
        let mut order = Vec::with_capacity(self.nodes.len());
        while let Some(i) = ready.pop() {
            order.push(i);
            for &c in children[i].iter().rev() {
                indegree[c] -= 1;
                if indegree[c] == 0 {
                    ready.push(c);
                }
            }
        }
        if order.len() < self.nodes.len() {
            let on_cycle = (0..self.nodes.len()).find(|&i| indegree[i] > 0).unwrap_or(0);
            return Err(invalid(&self.nodes[on_cycle].name, "the graph has a cycle through this node"));
        }
        Ok(order)
    }

    /// Which variable, if any, targets `Node.param`.
    pub fn variable_for(&self, key: &str) -> Option<&str> {
        self.variables.iter().find(|(_, v)| v.targets.iter().any(|t| t == key)).map(|(name, _)| name.as_str())
    }

    /// Parameters of a node that a caller can see: all of an active node's,
    /// only the pass-through image of a bypassed one.
    pub fn visible_params(&self, node: &NodeDef) -> Vec<&'static ParamSpec> {
        let Ok(tool) = tools::tool(&node.tool) else { return Vec::new() };
        match node.mode {
            Mode::Active => tool.params.iter().collect(),
            Mode::Bypassed => tool.primary_image.and_then(|p| tool.param(p)).into_iter().collect(),
        }
    }

    /// The discovery view (spec 2.3, DESIGN 3.5).
    pub fn inputs(&self) -> Inputs {
        let mut inputs =
            Inputs { mandatory: IndexMap::new(), optional: IndexMap::new(), linked: IndexMap::new() };
        // Variables first, so their names lead the list, as a caller reads them.
        for (name, var) in &self.variables {
            let mut mandatory = false;
            let mut shown = None;
            for target in &var.targets {
                let Some((node, param)) = split_key(target) else { continue };
                let Some(def) = self.node(node) else { continue };
                let Ok(spec) = self.target_spec(target) else { continue };
                match def.params.get(param).filter(|v| !v.is_null()).cloned().or(spec.default.to_value()) {
                    Some(v) => shown = shown.or(Some(v)),
                    None if spec.required => mandatory = true,
                    None => {}
                }
            }
            if mandatory {
                inputs.mandatory.insert(name.clone(), descriptor(&var.ty, None));
            } else {
                inputs.optional.insert(name.clone(), descriptor(&var.ty, shown.as_ref()));
            }
        }
        for node in &self.nodes {
            for spec in self.visible_params(node) {
                let key = format!("{}.{}", node.name, spec.name);
                if let Some(link) = node.links.get(spec.name) {
                    inputs.linked.insert(key, link.clone());
                    continue;
                }
                if self.variable_for(&key).is_some() {
                    continue;
                }
                let value = node.params.get(spec.name).filter(|v| !v.is_null()).cloned();
                if value.is_none() && spec.is_mandatory() {
                    inputs.mandatory.insert(key, descriptor(spec.ty.name(), None));
                } else {
                    let shown = value.or(spec.default.to_value());
                    inputs.optional.insert(key, descriptor(spec.ty.name(), shown.as_ref()));
                }
            }
        }
        inputs
    }

    /// A ready body for `POST /api/v3/run` with a placeholder per mandatory input.
    pub fn sample_payload(&self, name: &str) -> Value {
        let inputs = self.inputs();
        let input: serde_json::Map<String, Value> = inputs
            .mandatory
            .keys()
            .map(|key| (key.clone(), Value::from(format!("<{}>", self.input_type(key).unwrap_or("value")))))
            .collect();
        json!({"type": "workflow", "target": name, "input": input})
    }

    /// The parameter an input key (variable or `Node.param`) fills: a variable's first
    /// target's.
    pub fn input_spec(&self, key: &str) -> Option<&'static ParamSpec> {
        let target = match self.variables.get(key) {
            Some(var) => var.targets.first()?.as_str(),
            None => key,
        };
        let (node, param) = split_key(target)?;
        self.node_tool(node)?.param(param)
    }

    /// An input for every mandatory input, each a [`ParamSpec::placeholder`]: what a price
    /// is estimated with before a caller has the values.
    pub fn placeholder_input(&self) -> Params {
        self.inputs()
            .mandatory
            .keys()
            .filter_map(|key| Some((key.clone(), self.input_spec(key)?.placeholder())))
            .collect()
    }

    /// The type name of an input key (variable or `Node.param`).
    pub fn input_type(&self, key: &str) -> Option<&str> {
        if let Some(var) = self.variables.get(key) {
            return Some(var.ty.as_str());
        }
        let (node, param) = split_key(key)?;
        let tool = self.node_tool(node)?;
        tool.param(param).map(|p| p.ty.name())
    }
}

/// `<type:TYPE , default value : DEFAULT>`, exactly as discovery shows it.
pub fn descriptor(ty: &str, default: Option<&Value>) -> String {
    let shown = match default {
        None | Some(Value::Null) => "null".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.as_f64().map_or_else(|| n.to_string(), |f| number_value(f).to_string()),
        Some(other) => other.to_string(),
    };
    format!("<type:{ty} , default value : {shown}>")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tryon_upscale() -> WorkflowDef {
        WorkflowDef::parse(json!({
            "name": "Tryon then upscale",
            "variables": { "garment": { "type": "image", "targets": ["Tryon.garment_image"] } },
            "nodes": [
                { "name": "Tryon", "tool": "virtual_tryon", "params": { "category": "tops" } },
                { "name": "Upscale", "tool": "upscale", "params": { "scale": 2 },
                  "links": { "image": "Tryon.output" }, "mode": "active" }
            ],
            "outputs": { "final_image": "Upscale.output" }
        }))
        .unwrap()
    }

    #[test]
    fn discovery_matches_the_documented_shapes() {
        let wf = tryon_upscale();
        wf.validate().unwrap();
        let inputs = wf.inputs();
        assert_eq!(inputs.mandatory.get("garment").unwrap(), "<type:image , default value : null>");
        assert_eq!(inputs.mandatory.get("Tryon.model_image").unwrap(), "<type:image , default value : null>");
        assert!(!inputs.mandatory.contains_key("Tryon.garment_image"));
        assert_eq!(inputs.optional.get("Tryon.category").unwrap(), "<type:select , default value : tops>");
        assert_eq!(inputs.optional.get("Upscale.scale").unwrap(), "<type:number , default value : 2>");
        assert_eq!(inputs.optional.get("Tryon.seed").unwrap(), "<type:number , default value : null>");
        assert_eq!(inputs.linked.get("Upscale.image").unwrap(), "Tryon.output");
        assert_eq!(
            wf.sample_payload("tryon-upscale"),
            json!({"type": "workflow", "target": "tryon-upscale",
                   "input": {"garment": "<image>", "Tryon.model_image": "<image>"}})
        );
    }

    #[test]
    fn descriptors() {
        assert_eq!(descriptor("boolean", Some(&json!(false))), "<type:boolean , default value : false>");
        assert_eq!(descriptor("number", Some(&json!(2.0))), "<type:number , default value : 2>");
        assert_eq!(descriptor("image", None), "<type:image , default value : null>");
    }

    fn field_of(err: RequestError) -> String {
        match err {
            RequestError::InvalidInput { field, .. } => field,
            other => panic!("expected InvalidInput, got {other:?}"),
        }
    }

    #[test]
    fn validation_names_the_offending_node() {
        let mut wf = tryon_upscale();
        wf.nodes[1].links.insert("image".into(), "Nope.output".into());
        assert_eq!(field_of(wf.validate().unwrap_err()), "Upscale.image");

        let mut wf = tryon_upscale();
        wf.nodes[0].links.insert("model_image".into(), "Upscale.output".into());
        let field = field_of(wf.validate().unwrap_err());
        assert!(field == "Tryon" || field == "Upscale", "{field}");

        let mut wf = tryon_upscale();
        wf.nodes[1].tool = "teleport".into();
        assert_eq!(field_of(wf.validate().unwrap_err()), "Upscale");

        let mut wf = tryon_upscale();
        wf.nodes[1].params.insert("zoom".into(), json!(2));
        assert_eq!(field_of(wf.validate().unwrap_err()), "Upscale.zoom");

        let mut wf = tryon_upscale();
        wf.nodes[1].params.insert("scale".into(), json!(3));
        assert_eq!(field_of(wf.validate().unwrap_err()), "Upscale.scale");

        // Type mismatch: a video output cannot feed an image parameter.
        let mut wf = tryon_upscale();
        wf.nodes[0].tool = "video".into();
        wf.nodes[0].params.clear();
        wf.variables.clear();
        assert_eq!(field_of(wf.validate().unwrap_err()), "Upscale.image");

        let mut wf = tryon_upscale();
        wf.outputs.insert("x".into(), "Ghost.output".into());
        assert_eq!(field_of(wf.validate().unwrap_err()), "outputs.x");

        let mut wf = tryon_upscale();
        wf.variables.get_mut("garment").unwrap().targets.push("Upscale.image".into());
        assert_eq!(field_of(wf.validate().unwrap_err()), "variables.garment");
    }

    #[test]
    fn problems_lists_every_place_at_once_and_validate_reports_the_first() {
        let mut wf = tryon_upscale();
        wf.nodes[0].params.insert("category".into(), json!("hats"));
        wf.nodes[0].params.insert("zoom".into(), json!(1));
        wf.nodes[1].params.insert("scale".into(), json!(3));
        wf.nodes[1].links.insert("image".into(), "Nope.output".into());
        wf.variables.get_mut("garment").unwrap().targets.push("Ghost.image".into());
        wf.outputs.insert("x".into(), "Ghost.output".into());
        wf.layout.insert("Tryon".into(), [f64::INFINITY, 0.0]);
        let problems = wf.problems();
        let fields: Vec<String> = problems.iter().cloned().map(field_of).collect();
        assert_eq!(
            fields,
            [
                "Tryon.category",
                "Tryon.zoom",
                "Upscale.scale",
                "Upscale.image",
                "variables.garment",
                "outputs.x",
                "layout.Tryon"
            ]
        );
        assert_eq!(wf.validate().unwrap_err(), problems[0]);
        assert!(tryon_upscale().problems().is_empty());

        // A node whose tool is unknown is one problem, not one per parameter.
        let mut wf = tryon_upscale();
        wf.nodes[1].tool = "teleport".into();
        assert_eq!(wf.problems().into_iter().map(field_of).collect::<Vec<_>>(), ["Upscale"]);
        let empty = WorkflowDef::parse(json!({"nodes": []})).unwrap();
        assert_eq!(empty.problems().into_iter().map(field_of).collect::<Vec<_>>(), ["nodes"]);
    }

    #[test]
    fn a_layout_is_kept_and_bounded() {
        let mut doc = serde_json::to_value(tryon_upscale()).unwrap();
        assert!(doc.get("layout").is_none(), "no layout, no field");
        doc["layout"] =
            json!({"Tryon": [10, -20.5], "$var:garment": [-200, 0], "$out:final_image": [600, 0]});
        let wf = WorkflowDef::parse(doc.clone()).unwrap();
        wf.validate().unwrap();
        assert_eq!(wf.layout["Tryon"], [10.0, -20.5]);
        assert_eq!(WorkflowDef::parse(serde_json::to_value(&wf).unwrap()).unwrap(), wf, "round trip");
        assert_eq!(wf.inputs(), tryon_upscale().inputs(), "discovery's inputs ignore it");

        let mut wide = tryon_upscale();
        for i in 0..=LAYOUT_MAX_ENTRIES {
            wide.layout.insert(format!("k{i}"), [0.0, 0.0]);
        }
        assert_eq!(field_of(wide.validate().unwrap_err()), "layout");
        let mut far = tryon_upscale();
        far.layout.insert("Tryon".into(), [2e7, 0.0]);
        assert_eq!(field_of(far.validate().unwrap_err()), "layout.Tryon");
        doc["layout"] = json!({"Tryon": [1]});
        assert!(WorkflowDef::parse(doc.clone()).is_err(), "a position is two numbers");
        doc["layout"] = json!({"Tryon": "here"});
        assert!(WorkflowDef::parse(doc).is_err());
    }

    #[test]
    fn bypass_needs_a_primary_image() {
        let wf = WorkflowDef::parse(json!({
            "nodes": [{ "name": "M", "tool": "virtual_model", "mode": "bypassed" }]
        }))
        .unwrap();
        assert_eq!(field_of(wf.validate().unwrap_err()), "M");
    }

    #[test]
    fn workflow_names_people_write_are_accepted() {
        for name in [
            "Summer Lookbook",
            "Try-on + upscale (4x)",
            "Été 2027",
            "100% cotton",
            "a%2Fb",
            "夏のルック",
            "Лето 2027",
            "🧵 fabric swap 👗",
            "👩‍💻 team look",
            "🏴󠁧󠁢󠁳󠁣󠁴󠁿 tartan",
            "non\u{00A0}breaking inside",
            "x",
            "...",
            "tryon-upscale",
        ] {
            assert_eq!(validate_workflow_name(name).as_deref(), Ok(name), "{name:?}");
        }
    }

    #[test]
    fn workflow_names_are_at_most_100_characters_not_bytes() {
        let hundred = "é".repeat(100);
        assert_eq!(hundred.len(), 200);
        assert_eq!(validate_workflow_name(&hundred), Ok(hundred.clone()));
        let emoji = "🧵".repeat(100);
        assert_eq!(emoji.len(), 400);
        assert_eq!(validate_workflow_name(&emoji), Ok(emoji.clone()));
        let reason = validate_workflow_name(&"é".repeat(101)).unwrap_err();
        assert!(reason.contains("at most 100 characters") && reason.contains("101"), "{reason}");
        assert!(validate_workflow_name(&"🧵".repeat(101)).is_err());
    }

    #[test]
    fn workflow_names_are_normalised_to_nfc() {
        let decomposed = "E\u{0301}te\u{0301} 2027";
        assert_eq!(validate_workflow_name(decomposed).unwrap(), "\u{00C9}t\u{00E9} 2027");
        // 100 characters once composed, 200 code points as written.
        let long = "e\u{0301}".repeat(100);
        assert_eq!(validate_workflow_name(&long).unwrap().chars().count(), 100);
        // No case folding and no compatibility mapping.
        assert_eq!(validate_workflow_name("LOOK").unwrap(), "LOOK");
        assert_eq!(validate_workflow_name("ﬁt").unwrap(), "ﬁt");
    }

    #[test]
    fn workflow_names_refuse_slashes_controls_hidden_characters_and_outer_space() {
        let reason = |name: &str| validate_workflow_name(name).unwrap_err();
        assert!(reason("").contains("empty"));
        assert!(reason("a/b").contains("'/'"));
        assert!(reason("/").contains("'/'"));
        assert!(reason("line\nbreak").contains("U+000A at character 5"), "{}", reason("line\nbreak"));
        assert!(reason("tab\there").contains("control"));
        assert!(reason("nul\0").contains("control"));
        assert!(reason("del\u{7F}").contains("control"));
        assert!(reason("c1\u{85}x").contains("control"));
        for hidden in ['\u{200B}', '\u{202E}', '\u{2066}', '\u{200F}', '\u{FEFF}', '\u{00AD}', '\u{2028}'] {
            let r = reason(&format!("a{hidden}b"));
            assert!(r.contains("invisible"), "U+{:04X}: {r}", u32::from(hidden));
        }
        for spaced in [" lead", "trail ", "\u{00A0}nbsp", "ideographic\u{3000}", "  "] {
            assert!(reason(spaced).contains("white space"), "{spaced:?}");
        }
        assert!(reason(".").contains("path steps"));
        assert!(reason("..").contains("path steps"));
    }

    #[test]
    fn node_and_variable_names_keep_the_identifier_rule() {
        assert!(valid_identifier("Tryon_2-b"));
        assert!(valid_identifier(&"a".repeat(64)));
        for bad in ["", "Summer Lookbook", "Été", "a.b", "a/b", "a+b"] {
            assert!(!valid_identifier(bad), "{bad:?}");
        }
        assert!(!valid_identifier(&"a".repeat(65)));

        let mut wf = tryon_upscale();
        wf.nodes[0].name = "Try on".into();
        assert_eq!(field_of(wf.validate().unwrap_err()), "Try on");
        let mut wf = tryon_upscale();
        let var = wf.variables.shift_remove("garment").unwrap();
        wf.variables.insert("the garment".into(), var);
        assert_eq!(field_of(wf.validate().unwrap_err()), "variables.the garment");
    }

    #[test]
    fn unknown_fields_are_rejected() {
        assert!(WorkflowDef::parse(json!({"nodes": [], "colour": 1})).is_err());
    }
}
