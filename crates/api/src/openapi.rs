//! `/openapi.json`, generated from the route table and the tool schemas,
//! so the document cannot drift from the code that serves it.

use atelier_core::tools::{ParamSpecView, TOOLS};
use atelier_core::v2::Family;
use serde_json::{json, Map, Value};

const ERROR_NAMES: &[&str] = &[
    "InvalidRequest",
    "MissingInputs",
    "Unauthorized",
    "InsufficientTokens",
    "UnknownTool",
    "WorkflowNotFound",
    "RunNotFound",
    "PayloadTooLarge",
    "InvalidInput",
    "InvalidImage",
    "ReadOnlyTemplate",
    "InternalError",
];

fn op(summary: &str, body: Option<&str>, ok: &str, errors: &[u16]) -> Value {
    let mut responses = Map::new();
    responses.insert("200".into(), json!({"description": "OK", "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{ok}")}}}}));
    for code in errors {
        responses.insert(
            code.to_string(),
            json!({"description": "Error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}}}),
        );
    }
    let mut o = json!({"summary": summary, "security": [{"ApiKey": []}], "responses": responses});
    if let Some(body) = body {
        o["requestBody"] = json!({"required": true, "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{body}")}}}});
    }
    o
}

fn path_param(mut operation: Value, name: &str) -> Value {
    operation["parameters"] =
        json!([{"name": name, "in": "path", "required": true, "schema": {"type": "string"}}]);
    operation
}

fn tool_schema(params: &[atelier_core::params::ParamSpec]) -> Value {
    let mut props = Map::new();
    let mut required = Vec::new();
    for p in params {
        let view = ParamSpecView::from(p);
        let mut schema = match view.ty {
            "image" => json!({"type": "string", "description": "Public URL, data URI or base64"}),
            "select" => json!({"type": "string", "enum": view.values}),
            "number" => json!({"type": "number"}),
            "boolean" => json!({"type": "boolean"}),
            _ => json!({"type": "string"}),
        };
        if let Some(d) = view.default {
            schema["default"] = d;
        }
        if let Some(min) = view.min {
            schema["minimum"] = min;
        }
        if let Some(max) = view.max {
            schema["maximum"] = max;
        }
        if view.ty == "number" {
            if let Some(values) = view.values {
                schema["enum"] = json!(values);
            }
        }
        if view.required {
            required.push(p.name);
        }
        props.insert(p.name.to_string(), schema);
    }
    json!({"type": "object", "additionalProperties": false, "properties": props, "required": required})
}

/// The OpenAPI 3.1 document of the whole interface.
pub fn document() -> Value {
    let mut paths = Map::new();
    paths.insert("/api/v3/run".into(), json!({"post": op("Start a run of a tool or a saved workflow", Some("RunRequest"), "RunHandle", &[400, 401, 402, 404, 413, 422])}));
    paths.insert(
        "/api/v3/status/{run_id}".into(),
        json!({"get": path_param(op("Poll a run", None, "RunStatus", &[401, 404]), "run_id")}),
    );
    paths.insert(
        "/api/v3/cancel/{run_id}".into(),
        json!({"post": path_param(op("Cancel a run", None, "RunStatus", &[401, 404]), "run_id")}),
    );
    paths.insert(
        "/api/v3/runs".into(),
        json!({"get": op("Recent runs of the account", None, "RunList", &[400, 401])}),
    );
    paths.insert(
        "/api/v3/workflow/{name}".into(),
        json!({
            "get": path_param(op("Describe a workflow", None, "WorkflowDescription", &[401, 404]), "name"),
            "put": path_param(op("Save a workflow to the account", Some("Workflow"), "WorkflowDescription", &[400, 401, 422]), "name"),
            "delete": path_param(op("Delete an account workflow", None, "Deleted", &[401, 404, 409]), "name"),
        }),
    );
    paths.insert(
        "/api/v3/workflows".into(),
        json!({"get": op("List workflows and system templates", None, "WorkflowList", &[401])}),
    );
    paths.insert(
        "/api/v3/tools".into(),
        json!({"get": op("Tools, their parameters, prices and fidelity", None, "ToolList", &[401])}),
    );
    paths.insert("/api/v3/estimate".into(), json!({"post": op("Price a run without starting it", Some("RunRequest"), "Estimate", &[400, 401, 404, 422])}));
    for family in Family::ALL {
        let path = family.path();
        paths.insert(
            format!("/api/v2/{path}/run"),
            json!({"post": op(&format!("Start a v2 {path} run"), Some(&format!("V2Run_{}", family.as_str())), "RunHandle", &[400, 401, 402, 413, 422])}),
        );
        paths.insert(
            format!("/api/v2/{path}/status/{{run_id}}"),
            json!({"get": path_param(op(&format!("Poll a v2 {path} run"), None, "V2Status", &[401, 404]), "run_id")}),
        );
    }
    paths.insert("/api/v2/user/tokens".into(), json!({"get": op("Token balance", None, "Tokens", &[401])}));
    paths.insert("/files/{key}".into(), json!({"get": {"summary": "An output file (public, unguessable URL)", "responses": {
        "200": {"description": "The file"}, "206": {"description": "A byte range"}, "304": {"description": "Not modified"},
        "404": {"description": "No such file"}, "410": {"description": "Retention ended"}, "416": {"description": "Range not satisfiable"}}}}));
    paths.insert(
        "/healthz".into(),
        json!({"get": {"summary": "Liveness", "responses": {"200": {"description": "Alive"}}}}),
    );
    paths.insert("/readyz".into(), json!({"get": {"summary": "Readiness", "responses": {"200": {"description": "Ready"}, "503": {"description": "Not ready"}}}}));

    let mut schemas = Map::new();
    let nullable_error = json!({"oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/Error"}]});
    schemas.insert("Error".into(), json!({"type": "object", "required": ["name", "message"], "properties": {
        "name": {"type": "string", "enum": ERROR_NAMES}, "message": {"type": "string"},
        "missing": {"type": "array", "items": {"type": "string"}}, "field": {"type": "string"}, "reason": {"type": "string"},
        "allowed": {"type": "array"}, "required": {"type": "integer"}, "balance": {"type": "integer"}}}));
    schemas.insert("ErrorResponse".into(), json!({"type": "object", "properties": {"id": {"type": "null"}, "error": {"$ref": "#/components/schemas/Error"}}}));
    schemas.insert("RunRequest".into(), json!({"type": "object", "required": ["type", "target", "input"], "properties": {
        "type": {"type": "string", "enum": ["node", "workflow"]},
        "target": {"type": "string", "description": "A tool name (type node) or a workflow name (type workflow)"},
        "input": {"type": "object"}}}));
    schemas.insert("RunHandle".into(), json!({"type": "object", "required": ["id", "error"], "properties": {
        "id": {"type": "string"}, "error": nullable_error, "warnings": {"type": "array", "items": {"type": "string"}}}}));
    schemas.insert("RunStatus".into(), json!({"type": "object", "description": "Workflow runs: workflow_run_id, overall_status, outputs, nodes. Node runs: id, overall_status, status, model_name, output.", "properties": {
        "workflow_run_id": {"type": "string"}, "id": {"type": "string"},
        "overall_status": {"type": "string", "enum": ["queued", "running", "succeeded", "failed", "canceled"]},
        "outputs": {"type": "object"}, "nodes": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/NodeResult"}},
        "output": {"type": "array", "items": {"type": "string"}}, "model_name": {"type": "string"},
        "error": nullable_error, "created_at": {"type": "string"}, "finished_at": {"type": ["string", "null"]},
        "expires_at": {"type": ["string", "null"]}, "tokens": {"type": "integer"}}}));
    schemas.insert("NodeResult".into(), json!({"type": "object", "required": ["id", "status", "output", "error", "model_name"], "properties": {
        "id": {"type": "string"}, "status": {"type": "string", "enum": ["pending", "queued", "running", "succeeded", "failed", "skipped", "canceled"]},
        "output": {"type": "array", "items": {"type": "string"}}, "error": nullable_error, "model_name": {"type": "string"}}}));
    schemas.insert("RunList".into(), json!({"type": "object", "properties": {"runs": {"type": "array"}, "next_before": {"type": ["integer", "null"]}}}));
    schemas.insert(
        "Workflow".into(),
        json!({"type": "object", "required": ["nodes"], "properties": {
        "name": {"type": "string"}, "description": {"type": "string"}, "variables": {"type": "object"},
        "nodes": {"type": "array"}, "outputs": {"type": "object"}}}),
    );
    schemas.insert("WorkflowDescription".into(), json!({"type": "object", "required": ["name", "workflow", "sample_payload", "inputs", "outputs"], "properties": {
        "name": {"type": "string"}, "workflow": {"$ref": "#/components/schemas/Workflow"}, "sample_payload": {"$ref": "#/components/schemas/RunRequest"},
        "inputs": {"type": "object", "properties": {"mandatory": {"type": "object"}, "optional": {"type": "object"}, "linked": {"type": "object"}}},
        "outputs": {"type": "object"}}}));
    schemas.insert("WorkflowList".into(), json!({"type": "array", "items": {"type": "object", "required": ["id", "name", "system_workflow", "created_at"], "properties": {
        "id": {"type": "integer"}, "name": {"type": "string"}, "system_workflow": {"type": "boolean"}, "created_at": {"type": "string"}}}}));
    schemas.insert(
        "Deleted".into(),
        json!({"type": "object", "properties": {"name": {"type": "string"}, "deleted": {"type": "boolean"}}}),
    );
    schemas.insert("ToolList".into(), json!({"type": "array", "items": {"type": "object"}}));
    schemas.insert("Estimate".into(), json!({"type": "object", "properties": {"tokens": {"type": "integer"}, "nodes": {"type": "object"}, "balance": {"type": "integer"}}}));
    schemas.insert("V2Status".into(), json!({"type": "object", "required": ["id", "status", "output", "error"], "properties": {
        "id": {"type": "string"}, "status": {"type": "string", "enum": ["in_queue", "processing", "completed", "failed", "canceled"]},
        "output": {"description": "Array of URLs; a single URL string (or null) for fabric"}, "error": nullable_error,
        "input": {"type": "object"}, "model_name": {"type": "string"}}}));
    schemas.insert(
        "Tokens".into(),
        json!({"type": "object", "required": ["tokens"], "properties": {"tokens": {"type": "integer"}}}),
    );
    for family in Family::ALL {
        let mut body = Map::new();
        body.insert("type".into(), json!("object"));
        body.insert(
            "description".into(),
            json!(format!("Mapped onto the v3 tool(s) of /api/v2/{}; v3 spellings accepted", family.path())),
        );
        schemas.insert(format!("V2Run_{}", family.as_str()), Value::Object(body));
    }
    for tool in TOOLS {
        schemas.insert(format!("Tool_{}", tool.name), tool_schema(tool.params));
    }
    json!({
        "openapi": "3.1.0",
        "info": {"title": "Atelier", "version": env!("CARGO_PKG_VERSION"),
                 "description": "Asynchronous fashion image generation: v3 unified runs and workflows, v2 per-tool endpoints."},
        "paths": paths,
        "components": {"schemas": schemas, "securitySchemes": {"ApiKey": {"type": "apiKey", "in": "header", "name": "X-API-KEY"}}},
    })
}
