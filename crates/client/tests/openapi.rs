//! The client against the server's OpenAPI document (`atelier_api::openapi::document()`),
//! in both directions: every operation under `/api/` has a client method, and nothing the
//! client lists is gone from the document. What the client leaves out on purpose is listed in
//! `atelier_client::interface`. The models are the schemas' own types (`atelier-wire`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use atelier_client::interface::{NOT_COVERED, OPERATIONS};
use atelier_client::{NodeState, RunState, V2State, ERROR_NAMES, NODE_ERROR_NAMES};
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
    let listed = |names: &[&str]| -> BTreeSet<String> { names.iter().map(|s| s.to_string()).collect() };
    assert_eq!(strings("/components/schemas/Error/properties/name/enum"), listed(ERROR_NAMES));
    assert_eq!(strings("/components/schemas/RunError/properties/name/enum"), listed(NODE_ERROR_NAMES));
    let spelled = |values: Vec<&'static str>| listed(&values);
    assert_eq!(
        strings("/components/schemas/RunState/enum"),
        spelled(RunState::ALL.iter().map(|s| s.as_str()).collect())
    );
    assert_eq!(
        strings("/components/schemas/NodeState/enum"),
        spelled(NodeState::ALL.iter().map(|s| s.as_str()).collect())
    );
    assert_eq!(
        strings("/components/schemas/V2State/enum"),
        spelled(V2State::ALL.iter().map(|s| s.as_str()).collect())
    );
}
