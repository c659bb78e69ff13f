"""Models read the documented shapes, keep ``raw``, and ignore unknown fields."""

from __future__ import annotations

from helpers import png_bytes

from atelier_client import (
    NodeRunStatus,
    RunHandle,
    V2Status,
    WebhookBatchEvent,
    WebhookNodeEvent,
    WebhookSpendEvent,
    WorkflowDefinition,
    WorkflowRunStatus,
    image_data_uri,
    parse_run_status,
    parse_webhook_event,
)
from atelier_client.models import model_fields


def test_status_shapes_are_told_apart_and_unknown_fields_kept() -> None:
    wf = parse_run_status(
        {
            "workflow_run_id": "wr_1",
            "overall_status": "failed",
            "outputs": {"a": None, "b": ["u1", "u2"]},
            "nodes": {
                "N": {
                    "id": "gen_1",
                    "status": "failed",
                    "output": [],
                    "error": {"name": "ToolFailed", "message": "boom"},
                    "model_name": "upscale",
                    "future": 1,
                }
            },
            "error": {"name": "ToolFailed", "message": "node 'N' failed: boom", "node": "N"},
            "queue_position": None,
            "brand_new": {"x": 1},
        }
    )
    assert isinstance(wf, WorkflowRunStatus)
    assert wf.done and wf.failed and not wf.succeeded and wf.run_id == "wr_1"
    assert wf.error is not None and wf.error.node == "N"
    assert wf.nodes["N"].error is not None and wf.nodes["N"].error.name == "ToolFailed"
    assert wf.nodes["N"].raw["future"] == 1 and wf.raw["brand_new"] == {"x": 1}
    node = parse_run_status({"id": "gen_2", "overall_status": "running", "status": "running", "progress": 0.25})
    assert isinstance(node, NodeRunStatus)
    assert not node.done and node.progress == 0.25 and node.output == [] and node.error is None


def test_run_handle_with_and_without_a_final_status() -> None:
    plain = RunHandle.from_raw({"id": "gen_1", "error": None})
    assert plain.status is None and plain.warnings == []
    waited = RunHandle.from_raw(
        {"id": "gen_1", "error": None, "status": {"id": "gen_1", "overall_status": "succeeded"}}
    )
    assert waited.status is not None and waited.status.succeeded


def test_v2_status_output_shapes() -> None:
    fabric = V2Status.from_raw({"id": "gen_1", "status": "completed", "output": "https://x/a.png", "error": None})
    assert fabric.urls == ["https://x/a.png"] and fabric.done and fabric.succeeded
    pending = V2Status.from_raw({"id": "gen_1", "status": "in_queue", "output": None, "error": None})
    assert pending.urls == [] and not pending.done
    tryon = V2Status.from_raw(
        {"id": "g", "status": "processing", "output": [], "error": None, "input": {"a": 1}, "model_name": "Beta"}
    )
    assert tryon.input == {"a": 1} and tryon.model_name == "Beta"


def test_workflow_definition_round_trips_unknown_fields() -> None:
    raw = {"name": "x", "nodes": [{"name": "A", "tool": "upscale"}], "outputs": {"o": "A.output"}, "extra": [1]}
    definition = WorkflowDefinition.from_raw(raw)
    definition.description = "new"
    out = definition.to_dict()
    assert out["extra"] == [1] and out["description"] == "new" and "layout" not in out
    assert model_fields(WorkflowDefinition) == {"name", "description", "variables", "nodes", "outputs", "layout"}


def test_webhook_bodies_are_typed() -> None:
    node = parse_webhook_event({"type": "node", "run_id": "wr_1", "node": "Up", "id": "gen_1", "status": "running"})
    assert isinstance(node, WebhookNodeEvent) and (node.node, node.status) == ("Up", "running")
    v3 = parse_webhook_event({"workflow_run_id": "wr_1", "overall_status": "succeeded", "outputs": {}, "nodes": {}})
    assert isinstance(v3, WorkflowRunStatus) and v3.succeeded
    v2 = parse_webhook_event({"id": "gen_1", "status": "completed", "output": "u", "error": None})
    assert isinstance(v2, V2Status) and v2.urls == ["u"]
    batch = parse_webhook_event(
        {"type": "batch.completed", "batch": {"id": "bat_1", "status": "finished", "items": {"total": 2, "failed": 1}}}
    )
    assert isinstance(batch, WebhookBatchEvent) and batch.batch.id == "bat_1"
    assert (batch.batch.status, batch.batch.items.failed) == ("finished", 1)
    spend = parse_webhook_event(
        {
            "type": "spend.threshold",
            "applies_to": "account",
            "period": "month",
            "threshold": 100,
            "limit": 500,
            "used": 496,
            "resets_at": "2026-12-01T00:00:00.000000",
            "created_at": "2026-11-29T10:00:00.000000",
        }
    )
    assert isinstance(spend, WebhookSpendEvent) and spend.key is None
    assert (spend.applies_to, spend.period, spend.threshold, spend.limit, spend.used) == ("account", "month", 100, 500, 496)


def test_image_data_uri_sniffs_the_type() -> None:
    assert image_data_uri(png_bytes(2, 2)).startswith("data:image/png;base64,iVBOR")
    assert image_data_uri(b"\xff\xd8\xff\xe0rest").startswith("data:image/jpeg;base64,")
    assert image_data_uri(b"RIFF\0\0\0\0WEBPVP8 ").startswith("data:image/webp;base64,")
    assert image_data_uri(b"abc", "image/gif").startswith("data:image/gif;base64,")
