//! The JSON Schemas of the wire types, as the OpenAPI document's components.
//!
//! Schemas describe what the server writes (serde's serialize contract): a field it always
//! writes is required, one it skips when absent is optional. The request bodies (`RunRequest`,
//! `Workflow`) describe what it reads instead: a field with a default is optional. Each type is a component of its
//! own name (`#[schemars(rename)]` where the document's name differs from the type's), and
//! types refer to each other by `$ref`, so one type is one schema.

use schemars::generate::{Contract, SchemaSettings};
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value};

use crate::batches::{Batch, BatchItemList, BatchList, BatchRequest};
use crate::console;
use crate::errors::{ErrorBody, ErrorResponse};
use crate::runs::{Deletion, NodeEvent, RunHandle, RunList, RunRequest, RunStatus};
use crate::tools::Tool;
use crate::uploads::{DirectUpload, DirectUploadRequest, Upload};
use crate::v2::{TokenBalance, V2Status};
use crate::webhooks::{
    WebhookBatchEvent, WebhookDeliveryList, WebhookEndpoint, WebhookEndpointRequest, WebhookNodeEvent,
    WebhookSecret, WebhookSpendEvent,
};
use crate::workflows::{
    Deleted, Estimate, WorkflowDefinition, WorkflowDescription, WorkflowSummary, WorkflowValidation,
};

/// Where the document keeps its schemas.
const COMPONENTS: &str = "/components/schemas";

/// A generator of the document's schemas: of what the server writes (`Serialize`), or of what
/// it reads (`Deserialize`: a field is required unless it has a default).
pub fn generator(contract: Contract) -> SchemaGenerator {
    SchemaSettings::draft2020_12()
        .with(|s| {
            s.definitions_path = COMPONENTS.into();
            s.contract = contract;
            s.meta_schema = None;
        })
        .into_generator()
}

/// A reference to a component schema, `{"$ref": "#/components/schemas/NAME"}`.
pub fn reference(name: &str) -> Value {
    serde_json::json!({ "$ref": format!("#{COMPONENTS}/{name}") })
}

/// Every component schema the wire types make: the types the operations answer or take, and
/// the types they refer to. `ToolList` and `WorkflowList` are the arrays of `Tool` and
/// `WorkflowSummary` the list operations answer.
pub fn components() -> Map<String, Value> {
    let mut answers = generator(Contract::Serialize);
    for add in ROOTS {
        add(&mut answers);
    }
    let mut schemas = answers.take_definitions(true);
    // The request bodies are what the server reads: a field with a default may be left out,
    // though the server writes it where it answers the same shape (a workflow's `outputs`).
    let mut requests = generator(Contract::Deserialize);
    requests.subschema_for::<RunRequest>();
    requests.subschema_for::<WorkflowDefinition>();
    requests.subschema_for::<BatchRequest>();
    requests.subschema_for::<DirectUploadRequest>();
    for (name, schema) in requests.take_definitions(true) {
        if ["RunRequest", "Workflow", "BatchRequest", "BatchItemRequest", "DirectUploadRequest"]
            .contains(&name.as_str())
        {
            schemas.insert(name, schema);
        }
    }
    for schema in schemas.values_mut() {
        tidy(schema);
    }
    schemas.insert("ToolList".into(), serde_json::json!({"type": "array", "items": reference("Tool")}));
    schemas.insert(
        "WorkflowList".into(),
        serde_json::json!({"type": "array", "items": reference("WorkflowSummary")}),
    );
    schemas
}

/// What the generator writes that the document says otherwise, in one pass over a schema:
/// * an enum whose values have docs comes as `oneOf` of `const`s: it becomes `enum`, as
///   readers of the document (and generated clients) expect;
/// * an optional property (one the server skips when absent) comes nullable because it is an
///   `Option`: it is never null when present, so `null` goes;
/// * `default`s of fields (what a reader fills in) say nothing of an answer: they go;
/// * doc comments come with their line breaks: a paragraph becomes one line.
fn tidy(schema: &mut Value) {
    let Some(object) = schema.as_object_mut() else {
        if let Some(list) = schema.as_array_mut() {
            list.iter_mut().for_each(tidy);
        }
        return;
    };
    if let Some(values) = object.get("oneOf").and_then(string_consts) {
        object.remove("oneOf");
        object.insert("type".into(), Value::from("string"));
        object.insert("enum".into(), Value::from(values));
    }
    if let Some(Value::String(text)) = object.get_mut("description") {
        *text = unwrap_lines(text);
    }
    let required: Vec<String> = object
        .get("required")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            if let Some(property) = property.as_object_mut() {
                property.remove("default");
                if !required.contains(name) {
                    not_null(property);
                }
            }
        }
    }
    object.values_mut().for_each(tidy);
}

/// The values of a `oneOf` whose every branch is a string `const`.
fn string_consts(list: &Value) -> Option<Vec<Value>> {
    list.as_array()?.iter().map(|branch| branch.get("const").filter(|c| c.is_string()).cloned()).collect()
}

/// A schema without its `null`: `"type": ["string", "null"]` → `"string"`, `anyOf: [X,
/// null]` → X.
fn not_null(schema: &mut Map<String, Value>) {
    if let Some(Value::Array(types)) = schema.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        let kept = if kept.len() == 1 { kept[0].clone() } else { Value::from(kept) };
        schema.insert("type".into(), kept);
    }
    if let Some(Value::Array(branches)) = schema.get("anyOf") {
        let kept: Vec<Value> =
            branches.iter().filter(|b| b.get("type") != Some(&Value::from("null"))).cloned().collect();
        if kept.len() == 1 {
            schema.remove("anyOf");
            if let Some(Value::Object(only)) = kept.into_iter().next() {
                for (key, value) in only {
                    schema.entry(key).or_insert(value);
                }
            }
        } else {
            schema.insert("anyOf".into(), Value::from(kept));
        }
    }
}

/// A doc comment's paragraphs, each on one line.
fn unwrap_lines(text: &str) -> String {
    text.split("\n\n")
        .map(|p| p.split('\n').map(str::trim).collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n\n")
}

type Add = fn(&mut SchemaGenerator);

fn add<T: JsonSchema>(generator: &mut SchemaGenerator) {
    generator.subschema_for::<T>();
}

/// The types operations answer or take (the types they refer to come with them).
const ROOTS: &[Add] = &[
    add::<RunRequest>,
    add::<RunHandle>,
    add::<RunStatus>,
    add::<RunList>,
    add::<Deletion>,
    add::<NodeEvent>,
    add::<ErrorResponse>,
    add::<ErrorBody>,
    add::<V2Status>,
    add::<TokenBalance>,
    add::<Tool>,
    add::<WorkflowDefinition>,
    add::<WorkflowDescription>,
    add::<WorkflowSummary>,
    add::<WorkflowValidation>,
    add::<Deleted>,
    add::<Estimate>,
    add::<Upload>,
    add::<DirectUpload>,
    add::<Batch>,
    add::<BatchList>,
    add::<BatchItemList>,
    add::<WebhookSecret>,
    add::<WebhookDeliveryList>,
    add::<WebhookNodeEvent>,
    add::<WebhookBatchEvent>,
    add::<WebhookEndpoint>,
    add::<WebhookEndpointRequest>,
    add::<WebhookSpendEvent>,
    add::<crate::spend::SpendReport>,
    add::<crate::audit::AuditList>,
    add::<crate::spend::LimitsRequest>,
    add::<console::SignIn>,
    add::<console::Session>,
    add::<console::KeyList>,
    add::<console::NewKey>,
    add::<console::NewKeyRequest>,
    add::<console::Ledger>,
    add::<console::Usage>,
    add::<console::RunDetail>,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reference_resolves_and_unknown_values_are_not_documented() {
        let schemas = components();
        let text = serde_json::to_string(&schemas).unwrap();
        for part in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
            let name = &part[..part.find('"').unwrap()];
            assert!(schemas.contains_key(name), "{name} is referred to and missing");
        }
        assert!(!text.contains("\"unknown\""), "the Unknown variants are read, never written");
        assert_eq!(schemas["RunState"]["enum"], serde_json::json!(atelier_core::status::NodeStatus::NAMES));
        assert_eq!(schemas["Fidelity"]["enum"], serde_json::json!(atelier_core::tools::Fidelity::NAMES));
        assert_eq!(schemas["OutputKind"]["enum"], serde_json::json!(atelier_core::tools::OutputKind::NAMES));
        assert_eq!(schemas["EngineKind"]["enum"], serde_json::json!(["builtin", "comfyui", "cog", "onnx"]));
        assert_eq!(schemas["Scope"]["enum"], serde_json::json!(atelier_core::scopes::Scope::NAMES));
    }

    #[test]
    fn a_status_requires_what_every_shape_writes() {
        let schemas = components();
        let required: Vec<&str> =
            schemas["RunStatus"]["required"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        assert_eq!(
            required,
            ["overall_status", "error", "created_at", "finished_at", "expires_at", "tokens"]
        );
    }
}
