//! Health checks, and the validation of every routed tool against its live server
//! (`atelier engines check`, and the start of a process).
//!
//! ComfyUI: every node class of the tool's template is installed (`/object_info`), every
//! mapped or constant input is an input of its node, and every value the template or the
//! configuration gives a list-valued input (a model file name, a sampler) is among the options
//! the server offers. Cog: every mapped input is an input of the model (`/openapi.json`), of a
//! fitting type, every value a mapping sends is allowed by the model's choices, and every input
//! the model requires is sent.

use std::collections::BTreeMap;

use atelier_core::engines::EngineKind;
use atelier_core::params::ParamType;
use atelier_core::tools::ToolId;
use serde_json::Value;

use crate::comfyui;
use crate::endpoint::{Endpoint, Health};
use crate::settings::ToolSettings;
use crate::Engines;

/// What a health check of `endpoint` finds now.
pub(crate) async fn health(endpoint: &Endpoint) -> Health {
    let path = match endpoint.kind {
        EngineKind::Comfyui => "/system_stats",
        EngineKind::Cog => "/health-check",
        _ => return Health::Healthy,
    };
    let response = endpoint.client.get(endpoint.url(path)).timeout(endpoint.request_timeout()).send().await;
    let response = match response {
        Ok(r) if r.status().is_success() => r,
        Ok(r) => return Health::Unhealthy(format!("answered {}", r.status())),
        Err(e) if e.is_timeout() => return Health::Unhealthy("timed out".into()),
        Err(_) => return Health::Unhealthy("unreachable".into()),
    };
    if endpoint.kind == EngineKind::Cog {
        let body: Value = response.json().await.unwrap_or(Value::Null);
        return match body["status"].as_str() {
            Some("READY" | "BUSY") => Health::Healthy,
            Some(other) => Health::Unhealthy(format!("the model is {other}")),
            None => Health::Unhealthy("answered without a status".into()),
        };
    }
    Health::Healthy
}

/// The result of checking one tool on one endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub tool: String,
    pub endpoint: String,
    pub outcome: Outcome,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Valid,
    /// The server could not be asked (down, starting): not a configuration error.
    Unreachable(String),
    /// What is wrong, one line each.
    Invalid(Vec<String>),
}

/// Checks every routed tool on every endpoint that serves it (a `discover = "dns"` entry's
/// name is resolved first, and each address checked); also updates each endpoint's health.
pub async fn check(engines: &Engines) -> Vec<Finding> {
    let mut findings = Vec::new();
    for group in engines.groups.values() {
        group.refresh().await;
    }
    for tool in ToolId::ALL {
        let Some((route, names)) = engines.routing.route(tool) else { continue };
        for (name, _) in names {
            let Some(group) = engines.groups.get(name) else { continue };
            if let Some(why) = group.why_empty() {
                findings.push(Finding {
                    tool: tool.spec().name.to_string(),
                    endpoint: name.to_string(),
                    outcome: Outcome::Unreachable(why),
                });
            }
            for endpoint in group.endpoints() {
                let outcome = check_endpoint(&endpoint, tool, route).await;
                findings.push(Finding {
                    tool: tool.spec().name.to_string(),
                    endpoint: endpoint.name.clone(),
                    outcome,
                });
            }
        }
    }
    findings
}

async fn check_endpoint(endpoint: &Endpoint, tool: ToolId, route: &ToolSettings) -> Outcome {
    if endpoint.kind == EngineKind::Onnx {
        return Outcome::Valid;
    }
    let health = health(endpoint).await;
    endpoint.set_health(health.clone());
    match health {
        Health::Unhealthy(why) => Outcome::Unreachable(why),
        _ => match endpoint.kind {
            EngineKind::Comfyui => check_comfyui(endpoint, route).await,
            _ => check_cog(endpoint, tool, route).await,
        },
    }
}

async fn fetch(endpoint: &Endpoint, path: &str) -> Result<Value, Outcome> {
    comfyui::get_json(endpoint, path).await.map_err(|e| Outcome::Unreachable(e.to_string()))
}

async fn check_comfyui(endpoint: &Endpoint, route: &ToolSettings) -> Outcome {
    let template = match comfyui::read_template(route) {
        Ok(t) => t,
        Err(e) => return Outcome::Invalid(vec![e]),
    };
    let info = match fetch(endpoint, "/object_info").await {
        Ok(info) => info,
        Err(outcome) => return outcome,
    };
    let mut problems = Vec::new();
    // Node → input → the options of a list-valued input (`None` for other inputs).
    let mut inputs_of: BTreeMap<&str, BTreeMap<String, Option<Vec<Value>>>> = BTreeMap::new();
    for (id, node) in &template {
        let class = node["class_type"].as_str().unwrap_or_default();
        let Some(spec) = info.get(class) else {
            problems.push(format!(
                "node {id}: the node class {class} is not installed on the server (install its node pack)"
            ));
            continue;
        };
        let mut inputs = BTreeMap::new();
        for group in ["required", "optional"] {
            for (input, def) in spec["input"][group].as_object().into_iter().flatten() {
                let options = match &def[0] {
                    Value::Array(options) => Some(options.clone()),
                    // Newer servers: ["COMBO", {"options": [...]}].
                    Value::String(t) if t == "COMBO" => {
                        Some(def[1]["options"].as_array().cloned().unwrap_or_default())
                    }
                    _ => None,
                };
                inputs.insert(input.clone(), options);
            }
        }
        // Values the template itself sets on list-valued inputs (model files, samplers).
        for (input, value) in node["inputs"].as_object().into_iter().flatten() {
            if let (Some(Some(options)), Value::String(_)) = (inputs.get(input), value) {
                if !options.contains(value) && !is_upload(class, input) {
                    problems.push(format!(
                        "node {id} ({class}) {input}: {value} is not on the server (it has {})",
                        list(options)
                    ));
                }
            }
        }
        inputs_of.insert(id.as_str(), inputs);
    }
    let mut check_input = |what: String, node: &str, input: &str, values: Vec<&Value>| {
        let Some(inputs) = inputs_of.get(node) else { return };
        let class = template[node]["class_type"].as_str().unwrap_or_default();
        match inputs.get(input) {
            None => problems.push(format!("{what}: node {node} ({class}) has no input {input}")),
            Some(Some(options)) if !is_upload(class, input) => {
                for value in values.into_iter().filter(|v| v.is_string() && !options.contains(v)) {
                    problems.push(format!(
                        "{what}: {value} is not an option of node {node} ({class}) {input} (it has {})",
                        list(options)
                    ));
                }
            }
            Some(_) => {}
        }
    };
    for (param, m) in &route.inputs {
        let (Some(node), Some(input)) = (&m.node, &m.input) else { continue };
        check_input(format!("inputs.{param}"), node, input, m.map.values().chain(m.default.iter()).collect());
    }
    for (key, value) in &route.set {
        let (node, input) = key.split_once('.').unwrap_or((key, ""));
        check_input(format!("set.{key}"), node, input, vec![value]);
    }
    if problems.is_empty() {
        Outcome::Valid
    } else {
        Outcome::Invalid(problems)
    }
}

/// `LoadImage`'s file list names the server's inputs; uploads add to it.
fn is_upload(class: &str, input: &str) -> bool {
    input == "image" && class.starts_with("LoadImage")
}

fn list(options: &[Value]) -> String {
    let shown: Vec<String> =
        options.iter().take(8).map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string)).collect();
    let more = options.len().saturating_sub(shown.len());
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else if shown.is_empty() {
        "none".into()
    } else {
        shown.join(", ")
    }
}

async fn check_cog(endpoint: &Endpoint, tool: ToolId, route: &ToolSettings) -> Outcome {
    let schema = match fetch(endpoint, "/openapi.json").await {
        Ok(s) => s,
        Err(outcome) => return outcome,
    };
    let input = &schema["components"]["schemas"]["Input"];
    let Some(properties) = input["properties"].as_object() else {
        return Outcome::Invalid(vec!["the server's /openapi.json has no Input schema".into()]);
    };
    let spec = tool.spec();
    let mut problems = Vec::new();
    let mut sent: Vec<&str> = route.set.keys().map(String::as_str).collect();
    for (param, m) in &route.inputs {
        let Some(name) = m.name.as_deref() else { continue };
        sent.push(name);
        let Some(property) = properties.get(name) else {
            problems.push(format!(
                "inputs.{param}: the model has no input {name} (it has {})",
                names(properties)
            ));
            continue;
        };
        let ty = property_type(property, &schema);
        let image = spec.param(param).is_some_and(|p| p.ty == ParamType::Image);
        let fits = match (ty.as_deref(), image) {
            (Some("string"), true) => true,
            (_, true) => false,
            (Some("integer" | "number"), false) => {
                param == "seed" || spec.param(param).is_some_and(|p| matches!(p.ty, ParamType::Number { .. }))
            }
            _ => true,
        };
        if !fits {
            problems.push(format!(
                "inputs.{param}: the model's input {name} is of type {}, which {param} does not fit",
                ty.as_deref().unwrap_or("unknown")
            ));
        }
        if let Some(choices) = enum_of(property, &schema) {
            for value in m.map.values().chain(m.default.iter()).filter(|v| !choices.contains(v)) {
                problems.push(format!(
                    "inputs.{param}: the model's input {name} does not take {value} (it takes {})",
                    list(&choices)
                ));
            }
        }
    }
    for (name, value) in &route.set {
        match properties.get(name) {
            None => problems
                .push(format!("set.{name}: the model has no input {name} (it has {})", names(properties))),
            Some(property) => {
                if let Some(choices) = enum_of(property, &schema).filter(|c| !c.contains(value)) {
                    problems.push(format!(
                        "set.{name}: the model does not take {value} (it takes {})",
                        list(&choices)
                    ));
                }
            }
        }
    }
    for required in input["required"].as_array().into_iter().flatten().filter_map(Value::as_str) {
        if !sent.contains(&required) {
            problems.push(format!(
                "the model requires the input {required}, which no mapping sends (add it to inputs or set)"
            ));
        }
    }
    if problems.is_empty() {
        Outcome::Valid
    } else {
        Outcome::Invalid(problems)
    }
}

fn names(properties: &serde_json::Map<String, Value>) -> String {
    properties.keys().cloned().collect::<Vec<_>>().join(", ")
}

/// A property with `$ref`s and `allOf` (how Cog writes choices) followed.
fn resolved<'a>(property: &'a Value, schema: &'a Value) -> &'a Value {
    let reference = property["$ref"].as_str().or_else(|| property["allOf"][0]["$ref"].as_str());
    match reference.and_then(|r| r.strip_prefix("#/components/schemas/")) {
        Some(name) => &schema["components"]["schemas"][name],
        None => property,
    }
}

fn property_type(property: &Value, schema: &Value) -> Option<String> {
    resolved(property, schema)["type"].as_str().map(str::to_string)
}

fn enum_of(property: &Value, schema: &Value) -> Option<Vec<Value>> {
    resolved(property, schema)["enum"].as_array().cloned()
}
