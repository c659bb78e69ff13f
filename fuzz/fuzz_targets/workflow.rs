//! The saved-workflow format and the compiler, from arbitrary JSON.
//!
//! Input: a JSON document, either a workflow definition or `[definition,
//! input]` (the `input` object of a run request); or, when the first byte
//! cannot start JSON, a compact encoding of a graph (see [`graph`]) that
//! reaches deep, valid workflows (long chains, wide fan-out) far sooner than
//! JSON mutations do. Invariants checked:
//!
//! * what `PUT /api/v3/workflow/{name}` stores (the definition serialised)
//!   parses back to the same definition and validates the same way, so a
//!   saved workflow can always be read again (a failure there is a 500);
//! * for a valid workflow, the discovery view and the compiler agree: the
//!   sample payload holds exactly the mandatory inputs, compiling it never
//!   reports a missing input, compiling an empty input reports exactly the
//!   mandatory ones, and a value for a linked parameter is a warning, never
//!   an error;
//! * every plan is well formed: all nodes, in topological order, resolved
//!   parameters that pass their schema, fan-out and outputs at least 1 and
//!   within the plan limits, prices that add up without overflow (free only
//!   when bypassed), and it survives the JSON round trip the store makes;
//! * `compile_node` of every tool, with the document as the input, gives a
//!   well-formed one-node plan or an error, never a panic.

#![no_main]

use std::collections::BTreeSet;

use atelier_core::params::ParamType;
use atelier_core::plan::{compile_node, compile_workflow, Plan, MAX_NODE_OUTPUTS};
use atelier_core::tools::{self, Prices, TOOLS};
use atelier_core::workflow::WorkflowDef;
use atelier_core::RequestError;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Map, Value};

fuzz_target!(|data: &[u8]| {
    let value = match data.first() {
        // JSON starts with one of these (or whitespace); anything else is
        // read as the compact graph encoding below.
        Some(b'{' | b'[' | b'"' | b' ' | b'\n' | b'\t' | b'\r') => {
            match serde_json::from_slice::<Value>(data) {
                Ok(value) => value,
                Err(_) => return,
            }
        }
        _ => graph(data),
    };
    let (definition, input) = match value {
        Value::Array(mut pair) if pair.len() == 2 => {
            let input = pair.pop().and_then(|v| v.as_object().cloned());
            (pair.pop().unwrap_or(Value::Null), input)
        }
        other => (other, None),
    };
    if let Some(params) = input.clone().or_else(|| definition.as_object().cloned()) {
        for tool in TOOLS {
            if let Ok(plan) = compile_node(tool.name, &params, &Prices::default()) {
                assert_eq!(plan.nodes.len(), 1);
                check_plan(&plan);
            }
        }
    }
    check_workflow(definition, input.unwrap_or_default());
});

fn check_workflow(definition: Value, input: Map<String, Value>) {
    let Ok(def) = WorkflowDef::parse(definition) else { return };

    // The stored form reads back as the same workflow.
    let stored = serde_json::to_value(&def).expect("a parsed workflow serialises");
    let reread = WorkflowDef::parse(stored).expect("the stored form of a workflow parses");
    assert_eq!(reread, def, "stored workflow differs from the saved one");
    let valid = def.validate();
    assert_eq!(reread.validate(), valid, "stored workflow validates differently");
    if valid.is_err() {
        return;
    }

    let inputs = def.inputs();
    let mandatory: BTreeSet<&str> = inputs.mandatory.keys().map(String::as_str).collect();
    let sample = def.sample_payload("fuzz");
    let sample_input = sample["input"].as_object().cloned().expect("sample_payload has an input object");
    let sample_keys: BTreeSet<&str> = sample_input.keys().map(String::as_str).collect();
    assert_eq!(sample_keys, mandatory, "sample_payload does not hold exactly the mandatory inputs");

    // The sample payload, filled in, never misses an input.
    let with_sample = compile_workflow(&def, &sample_input, &Prices::default());
    if let Err(RequestError::MissingInputs(missing)) = &with_sample {
        panic!("the sample payload misses inputs {missing:?} (mandatory: {mandatory:?})");
    }
    if let Ok(plan) = &with_sample {
        check_workflow_plan(&def, plan);
    }

    // Nothing given: exactly the mandatory inputs are missing.
    match compile_workflow(&def, &Map::new(), &Prices::default()) {
        Err(RequestError::MissingInputs(missing)) => {
            let missing: BTreeSet<&str> = missing.iter().map(String::as_str).collect();
            assert_eq!(missing, mandatory, "missing inputs differ from the mandatory ones");
        }
        Ok(plan) => {
            assert!(mandatory.is_empty(), "compiled without the mandatory inputs {mandatory:?}");
            check_workflow_plan(&def, &plan);
        }
        Err(_) => {}
    }

    // Values for linked parameters are ignored with a warning.
    if !inputs.linked.is_empty() {
        let mut with_linked = sample_input.clone();
        for key in inputs.linked.keys() {
            with_linked.insert(key.clone(), Value::from("<image>"));
        }
        match (&with_sample, compile_workflow(&def, &with_linked, &Prices::default())) {
            (Ok(_), Ok(plan)) => {
                assert!(plan.warnings.len() >= inputs.linked.len(), "a linked input was not warned about");
            }
            (Err(a), Err(b)) => assert_eq!(a.name(), b.name(), "a linked input changed the error"),
            (a, b) => panic!("a linked input changed the outcome: {a:?} vs {b:?}"),
        }
    }

    // Arbitrary caller input: any error, or a well-formed plan.
    if let Ok(plan) = compile_workflow(&def, &input, &Prices::default()) {
        check_workflow_plan(&def, &plan);
    }
}

fn check_workflow_plan(def: &WorkflowDef, plan: &Plan) {
    check_plan(plan);
    let names: BTreeSet<&str> = plan.nodes.iter().map(|n| n.name.as_str()).collect();
    let defined: BTreeSet<&str> = def.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, defined, "the plan does not hold every node once");
    assert_eq!(plan.nodes.len(), def.nodes.len());
    let outputs: Vec<&String> = plan.outputs.keys().collect();
    let declared: Vec<&String> = def.outputs.keys().collect();
    assert_eq!(outputs, declared, "plan outputs differ from the workflow's");
    for node in plan.outputs.values() {
        assert!(plan.node(node).is_some(), "output names unknown node {node}");
    }
}

fn check_plan(plan: &Plan) {
    let mut total: i64 = 0;
    for (i, node) in plan.nodes.iter().enumerate() {
        let tool = tools::tool(&node.tool).expect("plan nodes run known tools");
        for source in node.links.values() {
            let at = plan.nodes.iter().position(|n| &n.name == source);
            assert!(at.is_some_and(|at| at < i), "{}: source {source} is not earlier in the plan", node.name);
        }
        assert!(node.fanout >= 1 && node.outputs >= 1, "{}: no work", node.name);
        assert!(node.outputs <= MAX_NODE_OUTPUTS, "{}: {} outputs", node.name, node.outputs);
        if node.bypassed {
            assert_eq!(node.price, 0, "{}: a bypassed node costs nothing", node.name);
        } else {
            assert!(node.price >= 1, "{}: price {}", node.name, node.price);
            for (param, value) in &node.params {
                let spec = tool.param(param).expect("resolved parameters belong to the tool");
                assert!(
                    spec.check(value).is_ok(),
                    "{}.{param}: resolved value {value} fails its schema",
                    node.name
                );
            }
        }
        total = total.checked_add(node.price).expect("plan price overflows");
    }
    assert_eq!(plan.price(), total);
    let stored = serde_json::to_value(plan).expect("plans serialise");
    let reread: Plan = serde_json::from_value(stored).expect("stored plans parse");
    assert_eq!(&reread, plan, "plan changes through JSON");
}

/// A workflow from 3 bytes per node: the tool; the node whose output feeds
/// the primary image (below 0x80: that many nodes before the previous one;
/// otherwise none); and flags (bit 0: bypassed,
/// bits 1-3: `num_outputs` - 1 where the tool has it, bit 4: leave the
/// mandatory parameters to the caller). Every mandatory parameter a node does
/// not leave to the caller gets a valid value, so most graphs validate.
fn graph(data: &[u8]) -> Value {
    let mut nodes = Vec::new();
    // 32 nodes are plenty for every shape (and keep each input fast).
    for (i, node) in data.chunks_exact(3).take(32).enumerate() {
        let tool = &TOOLS[usize::from(node[0]) % TOOLS.len()];
        let flags = node[2];
        let mut params = Map::new();
        let mut links = Map::new();
        if let Some(primary) = tool.primary_image {
            if i > 0 && node[1] < 0x80 {
                // 0 is the previous node, 1 the one before, ...
                let source = i - 1 - usize::from(node[1]) % i;
                links.insert(primary.into(), json!(format!("N{source}.output")));
            }
        }
        for spec in tool.params {
            if links.contains_key(spec.name) || (!spec.is_mandatory() && spec.name != "num_outputs") {
                continue;
            }
            if flags & 0x10 != 0 && spec.is_mandatory() {
                continue;
            }
            let value = match &spec.ty {
                ParamType::Image => json!("https://example.com/i.png"),
                ParamType::Select { values } => json!(values.first().copied().unwrap_or("")),
                ParamType::Number { min, max, .. } if spec.name == "num_outputs" => {
                    json!((f64::from((flags >> 1) & 7) + min).min(*max))
                }
                ParamType::Number { min, .. } => json!(min),
                ParamType::String => json!("x"),
                ParamType::Boolean => json!(false),
            };
            params.insert(spec.name.into(), value);
        }
        let mode = if flags & 1 != 0 { "bypassed" } else { "active" };
        nodes.push(json!({"name": format!("N{i}"), "tool": tool.name, "params": params, "links": links, "mode": mode}));
    }
    let last = nodes.len().saturating_sub(1);
    json!({"nodes": nodes, "outputs": {"result": format!("N{last}.output")}})
}
