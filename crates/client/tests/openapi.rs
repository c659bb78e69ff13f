//! The client against the server's OpenAPI document (`atelier_api::openapi::document()`),
//! in both directions: every operation under `/api/` has a client method, every schema the
//! client models has the same fields as its model, and nothing the client lists is gone from
//! the document. What the client leaves out on purpose is listed in
//! `atelier_client::interface`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use atelier_client::interface::{
    serde_fields, LOCATED, NOT_COVERED, NOT_MODELED, OPERATIONS, SCHEMAS, UNDOCUMENTED_FIELDS,
};
use atelier_client::{NodeState, RunState, Tool, ToolParam, V2State, ERROR_NAMES, NODE_ERROR_NAMES};
use serde_json::Value;

const METHODS: &[&str] = &["get", "put", "post", "delete", "patch", "head", "options"];

fn document() -> Value {
    atelier_api::openapi::document()
}

fn not_covered(path: &str) -> bool {
    NOT_COVERED.iter().any(|(prefix, _)| path.starts_with(prefix) || path == prefix.trim_end_matches('/'))
}

/// `#/components/schemas/NAME` → `NAME`.
fn schema_ref(value: &Value) -> Option<String> {
    value.get("$ref")?.as_str()?.strip_prefix("#/components/schemas/").map(str::to_string)
}

/// The properties of an object schema, or of an array schema's items.
fn properties(schema: &Value) -> BTreeSet<String> {
    let object = if schema.get("type") == Some(&Value::from("array")) { &schema["items"] } else { schema };
    object["properties"].as_object().map(|p| p.keys().cloned().collect()).unwrap_or_default()
}

fn set(fields: Vec<&'static str>) -> BTreeSet<String> {
    fields.into_iter().map(str::to_string).collect()
}

fn undocumented(schema: &str) -> BTreeSet<String> {
    UNDOCUMENTED_FIELDS.iter().filter(|(s, _)| *s == schema).map(|(_, f)| f.to_string()).collect()
}

/// The differences between a schema's properties and a model's fields, in words.
fn compare(
    what: &str,
    documented: &BTreeSet<String>,
    modeled: &BTreeSet<String>,
    extra: &BTreeSet<String>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for field in documented.difference(modeled) {
        problems.push(format!("{what}: the document has `{field}`, the model does not"));
    }
    for field in modeled.difference(documented) {
        if !extra.contains(field) {
            problems.push(format!("{what}: the model has `{field}`, the document does not"));
        }
    }
    for field in extra.intersection(documented) {
        problems.push(format!("{what}: `{field}` is documented now: remove it from UNDOCUMENTED_FIELDS"));
    }
    problems
}

#[test]
fn every_operation_under_api_has_a_client_method_and_every_listed_one_exists() {
    let doc = document();
    let mut problems = Vec::new();
    let paths = doc["paths"].as_object().unwrap();
    for (path, item) in paths {
        for method in METHODS.iter().filter(|m| item.get(**m).is_some()) {
            if not_covered(path) {
                continue;
            }
            let upper = method.to_uppercase();
            if !OPERATIONS.iter().any(|op| op.method == upper && op.path == path) {
                problems.push(format!(
                    "{upper} {path}: no client method (add one, or list the path in NOT_COVERED)"
                ));
            }
        }
    }
    for op in OPERATIONS {
        let Some(operation) = paths.get(op.path).and_then(|item| item.get(op.method.to_lowercase())) else {
            problems.push(format!(
                "{} {}: the client calls it, the document does not have it",
                op.method, op.path
            ));
            continue;
        };
        let params = |place: &str| -> BTreeSet<String> {
            operation["parameters"]
                .as_array()
                .map(|list| {
                    list.iter()
                        .filter(|p| p["in"] == place)
                        .filter_map(|p| p["name"].as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        let what = format!("{} {}", op.method, op.path);
        for (place, sent) in [("query", op.query), ("header", op.headers)] {
            let documented = params(place);
            let sent: BTreeSet<String> = sent.iter().map(|s| s.to_string()).collect();
            for missing in documented.difference(&sent) {
                problems.push(format!("{what}: the {place} parameter `{missing}` cannot be sent"));
            }
            for unknown in sent.difference(&documented) {
                problems.push(format!(
                    "{what}: sends the {place} parameter `{unknown}` the document does not have"
                ));
            }
        }
        let request = schema_ref(&operation["requestBody"]["content"]["application/json"]["schema"]);
        if request.as_deref() != op.request {
            problems.push(format!("{what}: request schema {request:?}, the client's is {:?}", op.request));
        }
        let response = schema_ref(&operation["responses"]["200"]["content"]["application/json"]["schema"]);
        if response.as_deref() != op.response {
            problems.push(format!("{what}: response schema {response:?}, the client's is {:?}", op.response));
        }
    }
    assert!(problems.is_empty(), "the client and the document differ:\n{}", problems.join("\n"));
}

#[test]
fn every_modeled_schema_has_the_model_s_fields_and_no_other() {
    let doc = document();
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    let mut problems = Vec::new();
    for (name, fields) in SCHEMAS {
        let Some(schema) = schemas.get(*name) else {
            problems.push(format!("{name}: modeled by the client, gone from the document"));
            continue;
        };
        problems.extend(compare(name, &properties(schema), &set(fields()), &undocumented(name)));
    }
    for (pointer, fields) in LOCATED {
        let Some(schema) = doc.pointer(pointer) else {
            problems.push(format!("{pointer}: modeled by the client, gone from the document"));
            continue;
        };
        problems.extend(compare(pointer, &properties(schema), &set(fields()), &BTreeSet::new()));
    }
    for name in schemas.keys() {
        let modeled = SCHEMAS.iter().any(|(s, _)| s == name);
        let left_out = NOT_MODELED.iter().any(|(s, _)| match s.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => s == name,
        });
        if !modeled && !left_out {
            problems
                .push(format!("{name}: a schema without a model (add one to SCHEMAS, or to NOT_MODELED)"));
        }
    }
    assert!(problems.is_empty(), "the models and the document differ:\n{}", problems.join("\n"));
}

#[test]
fn tools_are_read_with_every_field_the_server_renders() {
    // `ToolList` documents bare objects: the server's own rendering is the reference.
    let rendered = atelier_api::render::tools(
        &atelier_core::tools::Prices::default(),
        &atelier_core::engines::BuiltinOnly,
    );
    let tool_fields = set(serde_fields::<Tool>());
    let param_fields = set(serde_fields::<ToolParam>());
    let mut param_keys = BTreeSet::new();
    for tool in rendered.as_array().unwrap() {
        let keys: BTreeSet<String> = tool.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, tool_fields, "the fields of {}", tool["name"]);
        for param in tool["params"].as_array().unwrap() {
            param_keys.extend(param.as_object().unwrap().keys().cloned());
        }
        let typed: Tool = serde_json::from_value(tool.clone()).unwrap();
        assert!(typed.params.iter().all(|p| p.kind != atelier_client::ParamKind::Unknown), "{}", typed.name);
    }
    assert_eq!(param_keys, param_fields, "the fields of tool parameters");
}

#[test]
fn every_error_name_and_state_the_document_lists_is_known() {
    let doc = document();
    let strings = |pointer: &str| -> BTreeSet<String> {
        doc.pointer(pointer)
            .and_then(Value::as_array)
            .unwrap_or_else(|| panic!("{pointer} is not an enum"))
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    };
    let errors = strings("/components/schemas/Error/properties/name/enum");
    let known: BTreeSet<String> = ERROR_NAMES.iter().map(|s| s.to_string()).collect();
    assert_eq!(errors, known, "the error names with a variant of their own");

    let node_errors: BTreeSet<String> = NODE_ERROR_NAMES.iter().map(|s| s.to_string()).collect();
    assert_eq!(strings("/components/schemas/RunError/properties/name/enum"), node_errors);

    let names = |states: Vec<Value>| -> BTreeSet<String> {
        states.into_iter().filter_map(|v| v.as_str().map(str::to_string)).collect()
    };
    let run_states = names(RunState::ALL.iter().map(|s| serde_json::to_value(s).unwrap()).collect());
    assert_eq!(strings("/components/schemas/RunStatus/properties/overall_status/enum"), run_states);
    let node_states = names(NodeState::ALL.iter().map(|s| serde_json::to_value(s).unwrap()).collect());
    assert_eq!(strings("/components/schemas/NodeResult/properties/status/enum"), node_states);
    assert_eq!(strings("/components/schemas/NodeEvent/properties/status/enum"), node_states);
    let v2_states = names(V2State::ALL.iter().map(|s| serde_json::to_value(s).unwrap()).collect());
    assert_eq!(strings("/components/schemas/V2Status/properties/status/enum"), v2_states);
    assert_eq!(
        strings("/components/schemas/RunRequest/properties/webhook_events/items/enum"),
        names(vec![
            serde_json::to_value(atelier_client::WebhookEventKind::Completed).unwrap(),
            serde_json::to_value(atelier_client::WebhookEventKind::Node).unwrap(),
        ])
    );
}
