//! Store records as the wire shapes of runs, nodes and tools (spec 2.x, DESIGN 3.4): the
//! types are `atelier-wire`'s, this only fills them in.

use atelier_blob::BlobStore;
use atelier_core::engines::EngineDirectory;
use atelier_core::status::NodeStatus;
use atelier_core::tools::{Prices, TOOLS};
use atelier_core::v2::Family;
use atelier_store::{format_time, NodeRecord, RunKind, RunRecord};
use atelier_wire as wire;

/// A wire shape as the bytes of an answer.
pub fn to_bytes(shape: &impl serde::Serialize) -> axum::body::Bytes {
    // Serializing the wire types cannot fail: their maps have string keys.
    axum::body::Bytes::from(serde_json::to_vec(shape).unwrap_or_default())
}

/// An answer of JSON bytes (rendered before, see [`crate::finished`]).
pub fn json_bytes(body: axum::body::Bytes) -> axum::response::Response {
    use axum::response::IntoResponse;
    let json = axum::http::HeaderValue::from_static("application/json");
    ([(axum::http::header::CONTENT_TYPE, json)], body).into_response()
}

fn time(t: Option<i64>) -> Option<String> {
    t.map(format_time)
}

/// The output URLs of a node: none once its run's held outputs were dropped (zero retention,
/// past its hold), whether or not the sweeper has cleared the row yet.
fn urls(blob: &BlobStore, run: &RunRecord, node: &NodeRecord) -> Vec<String> {
    if run.outputs_dropped(atelier_core::time::now_micros()) {
        return Vec::new();
    }
    node.outputs.iter().map(|k| blob.url(k)).collect()
}

/// `outputs_kept: false` on a zero-retention run whose outputs were dropped.
fn outputs_kept(run: &RunRecord) -> Option<bool> {
    run.outputs_dropped(atelier_core::time::now_micros()).then_some(false)
}

fn error(e: &Option<atelier_core::NodeError>) -> Option<wire::RunError> {
    e.as_ref().map(wire::RunError::from)
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
pub fn run_handle(id: &str, warnings: &[String]) -> wire::RunHandle {
    wire::RunHandle::accepted(id, warnings.to_vec())
}

/// `progress` (0 to 1) on a running node: a documented extension of the status shapes. 0
/// until its engine reports (the built-in engine does not).
fn progress(node: &NodeRecord) -> Option<f32> {
    (node.status == NodeStatus::Running).then(|| node.progress.unwrap_or(0.0))
}

/// A node result inside a workflow status (spec 2.2), with `progress` while it runs.
fn node_result(blob: &BlobStore, run: &RunRecord, node: &NodeRecord) -> wire::NodeResult {
    wire::NodeResult {
        id: node.gen_id.clone(),
        status: node.status.into(),
        output: urls(blob, run, node),
        error: error(&node.error),
        model_name: node.tool.clone(),
        progress: progress(node),
        waiting_for: None,
        cached_from: node.cached_from.clone(),
    }
}

/// `waiting_for: "engine"` on each queued node whose tool waits for a model server (none of
/// its endpoints is healthy), a documented extension: on a node run's shape at the top, on a
/// workflow run's in each node's result.
pub fn add_waiting(shape: &mut wire::RunStatus, run: &RunRecord, waiting: impl Fn(&str) -> bool) {
    let waits = |n: &NodeRecord| n.status == NodeStatus::Queued && waiting(&n.tool);
    match run.kind {
        RunKind::Node => {
            if run.nodes.first().is_some_and(waits) {
                shape.waiting_for = Some(wire::WaitingFor::Engine);
            }
        }
        RunKind::Workflow => {
            let Some(results) = shape.nodes.as_mut() else { return };
            for node in run.nodes.iter().filter(|n| waits(n)) {
                if let Some(result) = results.get_mut(&node.name) {
                    result.waiting_for = Some(wire::WaitingFor::Engine);
                }
            }
        }
    }
}

/// `GET /api/v3/status/{id}`: the workflow-run shape or the node-run shape, with
/// `queue_position` while the run waits (a documented extension).
pub fn v3_status(blob: &BlobStore, run: &RunRecord, queue_position: Option<i64>) -> wire::RunStatus {
    let mut shape = wire::RunStatus {
        id: None,
        workflow_run_id: None,
        overall_status: run.status.into(),
        status: None,
        model_name: None,
        outputs: None,
        nodes: None,
        output: None,
        error: error(&run.error),
        created_at: format_time(run.created_at),
        finished_at: time(run.finished_at),
        expires_at: time(run.expires_at),
        tokens: tokens(run),
        priority: Some(run.priority.into()),
        progress: None,
        queue_position,
        waiting_for: None,
        cached_from: None,
        outputs_kept: outputs_kept(run),
        raw: serde_json::Value::Null,
    };
    match run.kind {
        RunKind::Workflow => {
            let output = |node: &String| match run.nodes.iter().find(|n| &n.name == node) {
                Some(n) if n.status == NodeStatus::Succeeded => {
                    let mut list = urls(blob, run, n);
                    Some(if list.len() == 1 {
                        wire::NamedOutput::One(list.remove(0))
                    } else {
                        wire::NamedOutput::Many(list)
                    })
                }
                _ => None,
            };
            shape.workflow_run_id = Some(run.id.clone());
            shape.outputs =
                Some(run.outputs.iter().map(|(name, node)| (name.clone(), output(node))).collect());
            shape.nodes =
                Some(run.nodes.iter().map(|n| (n.name.clone(), node_result(blob, run, n))).collect());
        }
        RunKind::Node => {
            let node = run.nodes.first();
            shape.id = Some(run.id.clone());
            shape.status = Some(run.status.into());
            shape.model_name = Some(node.map_or(run.target.clone(), |n| n.tool.clone()));
            shape.output = Some(node.map(|n| urls(blob, run, n)).unwrap_or_default());
            shape.progress = node.and_then(progress);
            shape.cached_from = node.and_then(|n| n.cached_from.clone());
        }
    }
    shape
}

/// The node-run shape for one node of a workflow run, addressed by its `gen_` id.
pub fn v3_node_status(blob: &BlobStore, run: &RunRecord, node: &NodeRecord) -> wire::RunStatus {
    wire::RunStatus {
        id: Some(node.gen_id.clone()),
        workflow_run_id: Some(run.id.clone()),
        overall_status: node.status.into(),
        status: Some(node.status.into()),
        model_name: Some(node.tool.clone()),
        outputs: None,
        nodes: None,
        output: Some(urls(blob, run, node)),
        error: error(&node.error),
        created_at: format_time(run.created_at),
        finished_at: time(run.finished_at),
        expires_at: time(run.expires_at),
        tokens: if node.status == NodeStatus::Succeeded { node.price } else { 0 },
        priority: None,
        progress: progress(node),
        queue_position: None,
        waiting_for: None,
        cached_from: node.cached_from.clone(),
        outputs_kept: outputs_kept(run),
        raw: serde_json::Value::Null,
    }
}

/// A v2 status object: exactly the fields the spec lists for the family.
pub fn v2_status(blob: &BlobStore, run: &RunRecord, family: Family) -> wire::V2Status {
    let node = run.nodes.first();
    let output = node.map(|n| urls(blob, run, n)).unwrap_or_default();
    let param = |key: &str| node.and_then(|n| n.params.get(key)).and_then(|v| v.as_str()).map(str::to_string);
    let (input, model_name) = match family {
        Family::Tryon => {
            let echo = match &run.echo {
                Some(serde_json::Value::Object(map)) => map.clone(),
                _ => serde_json::Map::new(),
            };
            (Some(echo), param("model_name"))
        }
        Family::TryonPro => {
            let fit = node.is_some_and(|n| n.tool == "virtual_tryon_pro_fit");
            (None, Some(if fit { "Pro Fit" } else { "Pro" }.to_string()))
        }
        Family::VirtualModel | Family::Fabric | Family::SketchToDress => (None, None),
    };
    wire::V2Status {
        id: run.id.clone(),
        status: run.status.into(),
        output: match family {
            Family::Fabric => output.into_iter().next().map(wire::V2Output::One),
            _ => Some(wire::V2Output::Many(output)),
        },
        error: error(&run.error),
        input,
        model_name,
        raw: serde_json::Value::Null,
    }
}

/// `GET /api/v3/tools`: each tool with the kind of engine that runs it and the fidelity of
/// what it makes there.
pub fn tools(prices: &Prices, engines: &dyn EngineDirectory) -> Vec<wire::Tool> {
    TOOLS
        .iter()
        .map(|t| {
            let route = engines.route(t.id);
            wire::Tool {
                name: t.name.to_string(),
                description: t.description.to_string(),
                engine: route.kind.into(),
                fidelity: route.fidelity.into(),
                output: t.output.into(),
                price: prices.rule(t),
                primary_image: t.primary_image.map(str::to_string),
                params: t.params.iter().map(wire::ToolParam::from).collect(),
                raw: serde_json::Value::Null,
            }
        })
        .collect()
}
