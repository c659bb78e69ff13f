//! The compiler: a run request (tool or workflow plus inputs) becomes an
//! executable [`Plan`] with every node's resolved parameters, its fan-out and
//! its price, before anything is written or charged.

use std::collections::HashMap;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::dag::{self, Node as _};
use crate::params::Params;
use crate::tools::{self, Prices, ToolSpec, OUTPUT};
use crate::workflow::{split_key, Mode, WorkflowDef};
use crate::RequestError;

/// One node of a plan: what to run, on what, and what it costs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanNode {
    pub name: String,
    pub tool: String,
    /// Resolved literal parameters (defaults filled, linked ones absent).
    pub params: Params,
    /// Parameter name → upstream node name (whose `output` feeds it).
    pub links: IndexMap<String, String>,
    pub bypassed: bool,
    /// How many times the tool runs (once per image of a multi-image link).
    pub fanout: u32,
    /// How many files the node produces in all.
    pub outputs: u32,
    /// Tokens for the whole node (unit price × fan-out; 0 when bypassed).
    pub price: i64,
}

/// Most files one node of a plan may produce (its outputs per run × its
/// fan-out). Larger plans are refused with `InvalidInput` naming the node.
pub const MAX_NODE_OUTPUTS: u32 = 1000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// In topological order: every node comes after its sources.
    pub nodes: Vec<PlanNode>,
    /// Friendly output name → node name.
    pub outputs: IndexMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl Plan {
    pub fn price(&self) -> i64 {
        self.nodes.iter().map(|n| n.price).sum()
    }

    pub fn node(&self, name: &str) -> Option<&PlanNode> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// Nodes that feed `name`.
    pub fn parents(&self, name: &str) -> Vec<&str> {
        let mut parents: Vec<&str> = self.node(name).map(|n| n.sources().collect()).unwrap_or_default();
        parents.sort_unstable();
        parents.dedup();
        parents
    }

    /// Nodes fed by `name`.
    pub fn children(&self, name: &str) -> Vec<&str> {
        dag::children(&self.nodes, name)
    }

    /// Every node downstream of `name`, transitively.
    pub fn descendants(&self, name: &str) -> Vec<&str> {
        dag::descendants(&self.nodes, name)
    }
}

impl dag::Node for PlanNode {
    fn name(&self) -> &str {
        &self.name
    }

    fn sources(&self) -> impl Iterator<Item = &str> {
        self.links.values().map(String::as_str)
    }
}

/// Whether the input `key` of a run of `tool` feeds an image parameter.
pub fn node_image_input(tool: &'static ToolSpec, key: &str) -> bool {
    tool.image_params().any(|p| p.name == key)
}

/// Whether the input `key` of a run of workflow `def` feeds image parameters only: a
/// `Node.param` key naming an image parameter, or a variable whose targets all are.
pub fn workflow_image_input(def: &WorkflowDef, key: &str) -> bool {
    let is_image = |target: &str| {
        split_key(target).is_some_and(|(node, param)| {
            def.node(node)
                .and_then(|n| tools::tool(&n.tool).ok())
                .is_some_and(|tool| node_image_input(tool, param))
        })
    };
    match def.variables.get(key) {
        Some(var) => !var.targets.is_empty() && var.targets.iter().all(|t| is_image(t)),
        None => is_image(key),
    }
}

/// A single-tool run: `input` holds plain parameter names.
pub fn compile_node(tool_name: &str, input: &Params, prices: &Prices) -> Result<Plan, RequestError> {
    let tool = tools::tool(tool_name)?;
    let params = tool.resolve(input, &[])?;
    let outputs = tool.outputs_per_run(&params);
    let price = prices.unit_price(tool, &params);
    Ok(Plan {
        nodes: vec![PlanNode {
            name: tool.name.to_string(),
            tool: tool.name.to_string(),
            params,
            links: IndexMap::new(),
            bypassed: false,
            fanout: 1,
            outputs,
            price,
        }],
        outputs: IndexMap::new(),
        warnings: Vec::new(),
    })
}

/// A workflow run: `input` keys are `Node.param` or variable names
/// (spec 4.1 rules 1–3). The workflow must already be valid.
pub fn compile_workflow(def: &WorkflowDef, input: &Params, prices: &Prices) -> Result<Plan, RequestError> {
    let mut given: HashMap<&str, Params> = HashMap::new();
    let mut warnings = Vec::new();
    let mut place = |key: &str, node: &str, param: &str, value: &Value, warnings: &mut Vec<String>| {
        let Some(def_node) = def.node(node) else {
            return Err(RequestError::invalid(
                key,
                format!("unknown input: the workflow has no node '{node}'"),
            ));
        };
        let tool = tools::tool(&def_node.tool)?;
        if tool.param(param).is_none() {
            return Err(RequestError::InvalidInput {
                field: key.to_string(),
                reason: format!("unknown parameter for tool {}", tool.name),
                allowed: Some(tool.params.iter().map(|p| Value::from(p.name)).collect()),
            });
        }
        if let Some(link) = def_node.links.get(param) {
            warnings.push(format!("input '{node}.{param}' ignored: the parameter is linked to {link}"));
            return Ok(());
        }
        given.entry(def_node.name.as_str()).or_default().insert(param.to_string(), value.clone());
        Ok(())
    };
    for (key, value) in input {
        if let Some(var) = def.variables.get(key) {
            for target in &var.targets {
                if let Some((node, param)) = split_key(target) {
                    place(key, node, param, value, &mut warnings)?;
                }
            }
        } else if let Some((node, param)) = split_key(key) {
            place(key, node, param, value, &mut warnings)?;
        } else {
            return Err(RequestError::InvalidInput {
                field: key.clone(),
                reason: "unknown input: expected Node.param or a variable of the workflow".into(),
                allowed: Some(def.variables.keys().map(|k| Value::from(k.as_str())).collect()),
            });
        }
    }

    let order = def.topo_order()?;
    let mut nodes: Vec<PlanNode> = Vec::with_capacity(order.len());
    let mut missing = Vec::new();
    let mut first_error = None;
    for i in order {
        let node = &def.nodes[i];
        let tool = tools::tool(&node.tool)?;
        let mut params = node.params.clone();
        params.retain(|_, v| !v.is_null());
        if let Some(overrides) = given.get(node.name.as_str()) {
            params.extend(overrides.clone());
        }
        let linked: Vec<&str> = node.links.keys().map(String::as_str).collect();
        let links: IndexMap<String, String> = node
            .links
            .iter()
            .filter_map(|(param, link)| split_key(link).map(|(src, _)| (param.clone(), src.to_string())))
            .collect();
        let count_of = |src: &str| nodes.iter().find(|n| n.name == src).map_or(1, |n| n.outputs);

        if node.mode == Mode::Bypassed {
            let primary = tool.primary_image.unwrap_or("image");
            let outputs = match links.get(primary) {
                Some(src) => count_of(src),
                None => {
                    if !params.contains_key(primary) {
                        missing.push(input_key(def, &node.name, primary));
                    }
                    1
                }
            };
            params.retain(|k, _| k == primary);
            nodes.push(PlanNode {
                name: node.name.clone(),
                tool: tool.name.to_string(),
                params,
                links: links.into_iter().filter(|(p, _)| p == primary).collect(),
                bypassed: true,
                fanout: 1,
                outputs,
                price: 0,
            });
            continue;
        }

        let resolved = match tool.resolve(&params, &linked) {
            Ok(r) => r,
            Err(RequestError::MissingInputs(keys)) => {
                missing.extend(keys.iter().map(|k| input_key(def, &node.name, k)));
                continue;
            }
            Err(e) => {
                first_error.get_or_insert(e.in_node(&node.name));
                continue;
            }
        };
        let multi: Vec<(&String, u32)> =
            links.iter().map(|(p, src)| (p, count_of(src))).filter(|(_, c)| *c > 1).collect();
        if multi.len() > 1 {
            first_error.get_or_insert(RequestError::invalid(
                &node.name,
                "fan-out over more than one linked parameter is not supported",
            ));
            continue;
        }
        let fanout = multi.first().map_or(1, |(_, c)| *c);
        // Fan-out multiplies along every chain of multi-output nodes (8 × 8 × …),
        // so the product is bounded before it can overflow or queue a runaway run.
        let outputs = tool.outputs_per_run(&resolved).checked_mul(fanout).filter(|&n| n <= MAX_NODE_OUTPUTS);
        let Some(outputs) = outputs else {
            first_error.get_or_insert(RequestError::invalid(
                &node.name,
                format!(
                    "the node would run {fanout} times and produce more than {MAX_NODE_OUTPUTS} files; \
                     lower num_outputs upstream"
                ),
            ));
            continue;
        };
        nodes.push(PlanNode {
            name: node.name.clone(),
            tool: tool.name.to_string(),
            outputs,
            price: prices.unit_price(tool, &resolved) * i64::from(fanout),
            params: resolved,
            links,
            bypassed: false,
            fanout,
        });
    }
    // Missing inputs are reported first: that is the error the spec names.
    if !missing.is_empty() {
        missing.sort();
        missing.dedup();
        return Err(RequestError::MissingInputs(missing));
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    let outputs = def
        .outputs
        .iter()
        .filter_map(|(name, src)| {
            split_key(src).filter(|(_, o)| *o == OUTPUT).map(|(node, _)| (name.clone(), node.to_string()))
        })
        .collect();
    Ok(Plan { nodes, outputs, warnings })
}

/// The key a caller uses for a parameter: the variable's name if one targets it.
fn input_key(def: &WorkflowDef, node: &str, param: &str) -> String {
    let key = format!("{node}.{param}");
    def.variable_for(&key).map_or(key, str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: Value) -> Params {
        v.as_object().cloned().unwrap()
    }

    fn wf(v: Value) -> WorkflowDef {
        let def = WorkflowDef::parse(v).unwrap();
        def.validate().unwrap();
        def
    }

    fn tryon_upscale() -> WorkflowDef {
        wf(json!({
            "variables": { "garment": { "type": "image", "targets": ["Tryon.garment_image"] } },
            "nodes": [
                { "name": "Upscale", "tool": "upscale", "params": { "scale": 2 }, "links": { "image": "Tryon.output" } },
                { "name": "Tryon", "tool": "virtual_tryon", "params": { "category": "tops" } }
            ],
            "outputs": { "final_image": "Upscale.output" }
        }))
    }

    #[test]
    fn variables_overrides_and_linked_warnings() {
        let plan = compile_workflow(
            &tryon_upscale(),
            &params(
                json!({"garment": "g", "Tryon.model_image": "m", "Upscale.scale": 4, "Upscale.image": "x"}),
            ),
            &Prices::default(),
        )
        .unwrap();
        assert_eq!(plan.nodes[0].name, "Tryon", "topological order");
        assert_eq!(plan.nodes[0].params["garment_image"], json!("g"));
        assert_eq!(plan.nodes[1].params["scale"], json!(4));
        assert!(!plan.nodes[1].params.contains_key("image"));
        assert_eq!(plan.warnings.len(), 1);
        assert_eq!(plan.price(), 1 + 2);
        assert_eq!(plan.outputs["final_image"], "Upscale");
    }

    #[test]
    fn missing_inputs_use_caller_keys() {
        let err = compile_workflow(&tryon_upscale(), &params(json!({})), &Prices::default()).unwrap_err();
        assert_eq!(err, RequestError::MissingInputs(vec!["Tryon.model_image".into(), "garment".into()]));
    }

    #[test]
    fn unknown_input_keys_are_rejected() {
        let def = tryon_upscale();
        for key in ["Ghost.image", "Tryon.zoom", "plain"] {
            let mut input = params(json!({"garment": "g", "Tryon.model_image": "m"}));
            input.insert(key.into(), json!("x"));
            match compile_workflow(&def, &input, &Prices::default()).unwrap_err() {
                RequestError::InvalidInput { field, .. } => assert_eq!(field, key),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn fan_out_multiplies_runs_and_price() {
        let def = wf(json!({
            "nodes": [
                { "name": "Model", "tool": "virtual_model", "params": { "num_outputs": 3 } },
                { "name": "Up", "tool": "upscale", "links": { "image": "Model.output" } },
                { "name": "Cut", "tool": "background_removal", "links": { "image": "Up.output" } }
            ],
            "outputs": { "images": "Cut.output" }
        }));
        let plan = compile_workflow(
            &def,
            &params(json!({"Model.ethnicity": "a", "Model.gender": "Female", "Model.dresstype": "d", "Model.background": "b"})), &Prices::default(),
        )
        .unwrap();
        let up = plan.node("Up").unwrap();
        assert_eq!((up.fanout, up.outputs, up.price), (3, 3, 3));
        assert_eq!(plan.node("Cut").unwrap().fanout, 3);
        assert_eq!(plan.price(), 3 + 3 + 3);
        assert_eq!(plan.descendants("Model"), vec!["Up", "Cut"]);
    }

    /// Found by the `workflow` fuzz target (fuzz/seeds/workflow/regression-fanout-overflow.bin):
    /// twelve chained multipose nodes of 8 outputs each multiplied the fan-out past `u32::MAX`
    /// (a panic with overflow checks, a wrapped output count and price without).
    #[test]
    fn fan_out_is_bounded_instead_of_overflowing() {
        let chain = |n: usize| {
            let nodes: Vec<Value> = (0..n)
                .map(|i| {
                    let mut node =
                        json!({"name": format!("N{i}"), "tool": "multipose", "params": {"num_outputs": 8}});
                    if i == 0 {
                        node["params"]["image"] = json!("https://example.com/i.png");
                    } else {
                        node["links"] = json!({"image": format!("N{}.output", i - 1)});
                    }
                    node
                })
                .collect();
            wf(json!({"nodes": nodes, "outputs": {"result": format!("N{}.output", n - 1)}}))
        };
        // 8 × 8 × 8 = 512 files: within the limit.
        let plan = compile_workflow(&chain(3), &Params::new(), &Prices::default()).unwrap();
        assert_eq!(plan.node("N2").map(|n| (n.fanout, n.outputs, n.price)), Some((64, 512, 512)));
        // 8^4 and beyond, up to the 8^12 that overflowed: refused, naming the first node over.
        for n in [4, 12] {
            match compile_workflow(&chain(n), &Params::new(), &Prices::default()).unwrap_err() {
                RequestError::InvalidInput { field, reason, .. } => {
                    assert_eq!(field, "N3");
                    assert!(reason.contains(&MAX_NODE_OUTPUTS.to_string()), "{reason}");
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn bypassed_nodes_pass_through_for_free() {
        let def = wf(json!({
            "nodes": [
                { "name": "Up", "tool": "upscale", "mode": "bypassed" },
                { "name": "Cut", "tool": "background_removal", "links": { "image": "Up.output" } }
            ],
            "outputs": { "image": "Cut.output" }
        }));
        assert_eq!(def.inputs().mandatory.keys().collect::<Vec<_>>(), vec!["Up.image"]);
        let plan = compile_workflow(&def, &params(json!({"Up.image": "i"})), &Prices::default()).unwrap();
        assert!(plan.nodes[0].bypassed);
        assert_eq!(plan.price(), 1);
    }

    #[test]
    fn image_inputs_are_told_from_the_others() {
        let upscale = tools::tool("upscale").unwrap();
        assert!(node_image_input(upscale, "image"));
        assert!(!node_image_input(upscale, "scale"));
        assert!(!node_image_input(upscale, "nope"));
        let mut def = tryon_upscale();
        assert!(workflow_image_input(&def, "Tryon.model_image"));
        assert!(!workflow_image_input(&def, "Tryon.category"));
        assert!(!workflow_image_input(&def, "Nobody.image"));
        def.variables.insert(
            "photo".into(),
            crate::workflow::Variable { ty: "image".into(), targets: vec!["Tryon.model_image".into()] },
        );
        def.variables.insert(
            "mixed".into(),
            crate::workflow::Variable {
                ty: "image".into(),
                targets: vec!["Tryon.model_image".into(), "Tryon.category".into()],
            },
        );
        assert!(workflow_image_input(&def, "photo"));
        assert!(!workflow_image_input(&def, "mixed"), "a variable that also feeds a text parameter");
    }

    #[test]
    fn node_runs_resolve_and_price() {
        let plan = compile_node("multipose", &params(json!({"image": "i"})), &Prices::default()).unwrap();
        assert_eq!((plan.nodes[0].outputs, plan.price()), (4, 4));
        assert_eq!(
            compile_node("nope", &Params::new(), &Prices::default()).unwrap_err(),
            RequestError::UnknownTool("nope".into())
        );
    }
}
