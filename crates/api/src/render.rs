//! JSON shapes of runs, nodes and tools (spec 2.x, DESIGN 3.4).

use atelier_blob::BlobStore;
use atelier_core::engines::EngineDirectory;
use atelier_core::status::NodeStatus;
use atelier_core::tools::{ParamSpecView, Prices, TOOLS};
use atelier_core::v2::Family;
use atelier_store::{format_time, NodeRecord, RunKind, RunRecord};
use serde_json::{json, Map, Value};

/// A JSON value as the bytes of an answer.
pub fn to_bytes(value: &Value) -> axum::body::Bytes {
    axum::body::Bytes::from(value.to_string())
}

/// An answer of JSON bytes (rendered before, see [`crate::finished`]).
pub fn json_bytes(body: axum::body::Bytes) -> axum::response::Response {
    use axum::response::IntoResponse;
    let json = axum::http::HeaderValue::from_static("application/json");
    ([(axum::http::header::CONTENT_TYPE, json)], body).into_response()
}

fn time(t: Option<i64>) -> Value {
    t.map_or(Value::Null, |t| Value::from(format_time(t)))
}

fn urls(blob: &BlobStore, node: &NodeRecord) -> Vec<String> {
    node.outputs.iter().map(|k| blob.url(k)).collect()
}

/// Tokens charged so far: the price of every succeeded node.
fn tokens(run: &RunRecord) -> i64 {
    if run.status.is_terminal() {
        return run.charged;
    }
    run.nodes.iter().filter(|n| n.status == NodeStatus::Succeeded).map(|n| n.price).sum()
}

/// The answer of an accepted run (v3 and v2): `{"id", "error": null}`, plus `warnings`
/// when linked inputs were ignored.
pub fn run_handle(id: &str, warnings: &[String]) -> Value {
    let mut handle = json!({"id": id, "error": null});
    if !warnings.is_empty() {
        handle["warnings"] = json!(warnings);
    }
    handle
}

/// A node result inside a workflow status (spec 2.2), with `progress` while it runs.
fn node_result(blob: &BlobStore, node: &NodeRecord) -> Value {
    let mut result = json!({
        "id": node.gen_id,
        "status": node.status.as_str(),
        "output": urls(blob, node),
        "error": node.error,
        "model_name": node.tool,
    });
    add_progress(&mut result, node);
    result
}

/// `progress` (0 to 1) on a running node: a documented extension of the status shapes. 0
/// until its engine reports (the built-in engine does not).
fn add_progress(shape: &mut Value, node: &NodeRecord) {
    if node.status == NodeStatus::Running {
        shape["progress"] = json!(node.progress.unwrap_or(0.0));
    }
}

/// `waiting_for: "engine"` on each queued node whose tool waits for a model server (none of
/// its endpoints is healthy), a documented extension: on a node run's shape at the top, on a
/// workflow run's in each node's result.
pub fn add_waiting(shape: &mut Value, run: &RunRecord, waiting: impl Fn(&str) -> bool) {
    let waits = |n: &NodeRecord| n.status == NodeStatus::Queued && waiting(&n.tool);
    match run.kind {
        RunKind::Node => {
            if run.nodes.first().is_some_and(waits) {
                shape["waiting_for"] = json!("engine");
            }
        }
        RunKind::Workflow => {
            for node in run.nodes.iter().filter(|n| waits(n)) {
                if let Some(result) = shape["nodes"].get_mut(&node.name) {
                    result["waiting_for"] = json!("engine");
                }
            }
        }
    }
}

/// `GET /api/v3/status/{id}`: the workflow-run shape or the node-run shape, with
/// `queue_position` while the run waits (a documented extension).
pub fn v3_status(blob: &BlobStore, run: &RunRecord, queue_position: Option<i64>) -> Value {
    let mut shape = v3_shape(blob, run);
    if let Some(position) = queue_position {
        shape["queue_position"] = json!(position);
    }
    shape
}

fn v3_shape(blob: &BlobStore, run: &RunRecord) -> Value {
    match run.kind {
        RunKind::Workflow => {
            let outputs: Map<String, Value> = run
                .outputs
                .iter()
                .map(|(name, node)| {
                    let value = match run.nodes.iter().find(|n| &n.name == node) {
                        Some(n) if n.status == NodeStatus::Succeeded => {
                            let list = urls(blob, n);
                            if list.len() == 1 {
                                json!(list[0])
                            } else {
                                json!(list)
                            }
                        }
                        _ => Value::Null,
                    };
                    (name.clone(), value)
                })
                .collect();
            let nodes: Map<String, Value> =
                run.nodes.iter().map(|n| (n.name.clone(), node_result(blob, n))).collect();
            json!({
                "workflow_run_id": run.id,
                "overall_status": run.status.as_str(),
                "outputs": outputs,
                "nodes": nodes,
                "error": run.error,
                "created_at": time(Some(run.created_at)),
                "finished_at": time(run.finished_at),
                "expires_at": time(run.expires_at),
                "tokens": tokens(run),
                "priority": run.priority.as_str(),
            })
        }
        RunKind::Node => {
            let node = run.nodes.first();
            let mut shape = json!({
                "id": run.id,
                "overall_status": run.status.as_str(),
                "status": run.status.as_str(),
                "model_name": node.map_or(run.target.as_str(), |n| n.tool.as_str()),
                "output": node.map(|n| urls(blob, n)).unwrap_or_default(),
                "error": run.error,
                "created_at": time(Some(run.created_at)),
                "finished_at": time(run.finished_at),
                "expires_at": time(run.expires_at),
                "tokens": tokens(run),
                "priority": run.priority.as_str(),
            });
            if let Some(node) = node {
                add_progress(&mut shape, node);
            }
            shape
        }
    }
}

/// The node-run shape for one node of a workflow run, addressed by its `gen_` id.
pub fn v3_node_status(blob: &BlobStore, run: &RunRecord, node: &NodeRecord) -> Value {
    let mut shape = json!({
        "id": node.gen_id,
        "workflow_run_id": run.id,
        "overall_status": node.status.as_str(),
        "status": node.status.as_str(),
        "model_name": node.tool,
        "output": urls(blob, node),
        "error": node.error,
        "created_at": time(Some(run.created_at)),
        "finished_at": time(run.finished_at),
        "expires_at": time(run.expires_at),
        "tokens": if node.status == NodeStatus::Succeeded { node.price } else { 0 },
    });
    add_progress(&mut shape, node);
    shape
}

/// A v2 status object: exactly the fields the spec lists for the family.
pub fn v2_status(blob: &BlobStore, run: &RunRecord, family: Family) -> Value {
    let node = run.nodes.first();
    let output = node.map(|n| urls(blob, n)).unwrap_or_default();
    let mut obj = Map::new();
    obj.insert("id".into(), json!(run.id));
    obj.insert("status".into(), json!(run.status.v2_name()));
    obj.insert(
        "output".into(),
        match family {
            Family::Fabric => output.first().map_or(Value::Null, |u| json!(u)),
            _ => json!(output),
        },
    );
    obj.insert("error".into(), json!(run.error));
    let param = |key: &str| node.and_then(|n| n.params.get(key)).cloned().unwrap_or(Value::Null);
    match family {
        Family::Tryon => {
            obj.insert("input".into(), run.echo.clone().unwrap_or_else(|| json!({})));
            obj.insert("model_name".into(), param("model_name"));
        }
        Family::TryonPro => {
            let fit = node.is_some_and(|n| n.tool == "virtual_tryon_pro_fit");
            obj.insert("model_name".into(), json!(if fit { "Pro Fit" } else { "Pro" }));
        }
        Family::VirtualModel | Family::Fabric | Family::SketchToDress => {}
    }
    Value::Object(obj)
}

/// `GET /api/v3/tools`: each tool with the kind of engine that runs it and the fidelity of
/// what it makes there.
pub fn tools(prices: &Prices, engines: &dyn EngineDirectory) -> Value {
    Value::Array(
        TOOLS
            .iter()
            .map(|t| {
                let route = engines.route(t.id);
                json!({
                    "name": t.name,
                    "description": t.description,
                    "engine": route.kind,
                    "fidelity": route.fidelity,
                    "output": t.output,
                    "price": prices.rule(t),
                    "primary_image": t.primary_image,
                    "params": t.params.iter().map(ParamSpecView::from).collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}
