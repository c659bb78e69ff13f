//! JSON shapes of runs, nodes and tools (spec 2.x, DESIGN 3.4).

use atelier_blob::BlobStore;
use atelier_core::status::NodeStatus;
use atelier_core::tools::{ParamSpecView, Prices, TOOLS};
use atelier_core::v2::Family;
use atelier_store::{format_time, NodeRecord, RunKind, RunRecord};
use serde_json::{json, Map, Value};

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

/// A node result inside a workflow status (spec 2.2).
fn node_result(blob: &BlobStore, node: &NodeRecord) -> Value {
    json!({
        "id": node.gen_id,
        "status": node.status.as_str(),
        "output": urls(blob, node),
        "error": node.error,
        "model_name": node.tool,
    })
}

/// `GET /api/v3/status/{id}`: the workflow-run shape or the node-run shape.
pub fn v3_status(blob: &BlobStore, run: &RunRecord) -> Value {
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
            })
        }
        RunKind::Node => {
            let node = run.nodes.first();
            json!({
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
            })
        }
    }
}

/// The node-run shape for one node of a workflow run, addressed by its `gen_` id.
pub fn v3_node_status(blob: &BlobStore, run: &RunRecord, node: &NodeRecord) -> Value {
    json!({
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
    })
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

/// `GET /api/v3/tools`.
pub fn tools(prices: &Prices) -> Value {
    Value::Array(
        TOOLS
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description,
                    "fidelity": t.fidelity,
                    "output": t.output,
                    "price": prices.rule(t),
                    "primary_image": t.primary_image,
                    "params": t.params.iter().map(ParamSpecView::from).collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}
