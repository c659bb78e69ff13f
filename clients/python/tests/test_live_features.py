"""Webhooks, live events and waiting requests against the server under test."""

from __future__ import annotations

import base64
import json
import time
from typing import Any, Dict, List

import httpx
import pytest
from conftest import Server
from helpers import FakeServer, Reply, Seen
from openapi_check import NOTHING_PENDING, doc_operations, problems

from atelier_client import (
    Client,
    InvalidInput,
    NodeEvent,
    NodeRunStatus,
    RunNotFound,
    StatusEvent,
    V2Status,
    WebhookNodeEvent,
    WebhookSpendEvent,
    WorkflowRunStatus,
    parse_webhook_event,
    verify_webhook,
)
from atelier_client.models import model_fields

WAIT = dict(timeout=120, poll_interval=0.2)

WORKFLOW_NAME = "py live features: up → square"
WORKFLOW: Dict[str, Any] = {
    "variables": {"photo": {"type": "image", "targets": ["Up.image"]}},
    "nodes": [
        {"name": "Up", "tool": "upscale", "params": {"scale": 2}},
        {"name": "Square", "tool": "reframe", "params": {"aspect_ratio": "1:1"}, "links": {"image": "Up.output"}},
    ],
    "outputs": {"big": "Up.output", "square": "Square.output"},
}


@pytest.fixture(scope="module")
def workflow(server: Server) -> str:
    with Client(server.base_url, server.api_key) as client:
        client.save_workflow(WORKFLOW_NAME, WORKFLOW)
    return WORKFLOW_NAME


def comparable(status: Dict[str, Any]) -> Dict[str, Any]:
    """A status without the fields that only a waiting run has."""
    return {k: v for k, v in status.items() if k not in ("queue_position", "progress")}


# --- the document ---------------------------------------------------------------------------------


def test_openapi_documents_every_feature(openapi: Dict[str, Any]) -> None:
    found = problems(openapi, NOTHING_PENDING)
    assert found == [], "\n".join(found)
    events = doc_operations(openapi)[("GET", "/api/v3/status/{}/events")]
    assert "text/event-stream" in events["responses"]["200"]["content"]


# --- waiting requests ---------------------------------------------------------------------------------


def test_prefer_wait_answers_with_the_final_status(client: Client, server: Server, png: str) -> None:
    run = client.run("upscale", {"image": png}, wait=30)
    assert run.final_status is not None, "the run should finish within 30 s"
    assert isinstance(run.final_status, NodeRunStatus) and run.final_status.succeeded
    assert run.handle.status is run.final_status and run.handle.error is None
    assert run.wait() is run.final_status
    assert comparable(client.status(run.id).raw) == comparable(run.final_status.raw)
    raw = httpx.post(
        server.base_url + "/api/v3/run",
        json={"type": "node", "target": "upscale", "input": {"image": png}},
        headers={"X-API-KEY": server.api_key, "Prefer": "wait=30"},
        timeout=60,
    )
    assert raw.status_code == 200 and raw.headers.get("Preference-Applied") == "wait=30"
    assert raw.json()["status"]["overall_status"] == "succeeded"


def test_prefer_wait_shorter_than_the_run_gives_a_plain_handle(client: Client, png: str, workflow: str) -> None:
    # Two nodes in a row, each with the suite's simulated latency: longer than a second (run
    # afresh: the suite ran this work before, and the result cache would fill it at once).
    run = client.run_workflow(workflow, {"photo": png}, wait=1, cache=False)
    assert run.final_status is None and "status" not in run.raw
    assert run.wait(**WAIT).succeeded


# --- live events ------------------------------------------------------------------------------------


def test_events_of_a_node_run(client: Client, png: str) -> None:
    run = client.run("upscale", {"image": png})
    events = list(client.events(run.id))
    assert isinstance(events[-1], StatusEvent)
    nodes = [e for e in events if isinstance(e, NodeEvent)]
    assert nodes and all(e.run_id == run.id for e in nodes)
    assert nodes[-1].status == "succeeded" and nodes[-1].output
    assert all(e.event_id for e in events)
    final = events[-1].status
    assert isinstance(final, NodeRunStatus) and final.succeeded
    assert comparable(final.raw) == comparable(client.status(run.id).raw)
    for e in nodes:
        assert set(e.raw) <= model_fields(NodeEvent), set(e.raw) - model_fields(NodeEvent)
        if e.progress is not None:
            assert e.status == "running" and 0 <= e.progress <= 1


def test_events_of_a_workflow_run_and_resuming(client: Client, png: str, workflow: str) -> None:
    run = client.run_workflow(workflow, {"photo": png})
    events = list(run.events())
    nodes = [e for e in events if isinstance(e, NodeEvent)]
    assert {e.node for e in nodes} == {"Up", "Square"}
    for name in ("Up", "Square"):
        assert [e.status for e in nodes if e.node == name][-1] == "succeeded"
    final = events[-1]
    assert isinstance(final, StatusEvent) and isinstance(final.status, WorkflowRunStatus)
    assert final.status.succeeded and set(final.status.outputs) == {"big", "square"}
    assert comparable(final.raw) == comparable(client.status(run.id).raw)
    # Resuming after the first event replays what came after it, and ends with the status.
    first = events[0].event_id
    resumed = list(client.events(run.id, last_event_id=first))
    assert resumed and isinstance(resumed[-1], StatusEvent)
    assert first not in [e.event_id for e in resumed]
    assert len(resumed) <= len(events) - 1


def test_events_of_a_finished_run_end_with_its_status(client: Client, png: str) -> None:
    run = client.run("reframe", {"image": png, "aspect_ratio": "1:1"})
    final = run.wait(use_events=False, **WAIT)
    events = list(client.events(run.id))
    assert isinstance(events[-1], StatusEvent)
    assert comparable(events[-1].status.raw) == comparable(final.raw)


def test_wait_follows_events(client: Client, png: str) -> None:
    run = client.run("background_removal", {"image": png})
    started = time.monotonic()
    final = run.wait(timeout=120, poll_interval=30)  # polling every 30 s would be slow
    assert final.succeeded and time.monotonic() - started < 25
    v2 = client.v2_run("sketch_to_dress", {"image": png})
    v2_final = v2.wait(timeout=120, poll_interval=30)
    assert isinstance(v2_final, V2Status) and v2_final.succeeded


def test_events_of_an_unknown_run(client: Client) -> None:
    with pytest.raises(RunNotFound):
        list(client.events("gen_doesnotexist00000"))


def test_events_stream_format(server: Server, png: str, client: Client) -> None:
    run = client.run("upscale", {"image": png})
    with httpx.stream(
        "GET",
        f"{server.base_url}/api/v3/status/{run.id}/events",
        headers={"X-API-KEY": server.api_key},
        timeout=60,
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        text = response.read().decode()
    assert "event: node" in text and "event: status" in text and "id:" in text
    assert text.rstrip().splitlines()[-1].startswith("data:")


# --- webhooks --------------------------------------------------------------------------------------


def deliveries_of(receiver: FakeServer, path: str = "/hook") -> List[Seen]:
    return receiver.requests_to("POST", path)


def wait_for(predicate: Any, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError("timed out")


def test_webhook_secret_and_rotation(client: Client) -> None:
    first = client.webhook_secret()
    assert first.key.startswith("whsec_") and base64.b64decode(first.key[len("whsec_") :])
    assert client.webhook_secret().key == first.key
    rotated = client.rotate_webhook_secret()
    assert rotated.key.startswith("whsec_") and rotated.key != first.key
    assert rotated.previous_key_expires_at
    assert client.webhook_secret().key == rotated.key


def test_webhooks_are_delivered_signed(client: Client, png: str, workflow: str) -> None:
    with FakeServer() as receiver:
        receiver.routes[("POST", "/hook")] = Reply(200, b"ok")
        secret = client.webhook_secret().key
        run = client.run_workflow(
            workflow, {"photo": png}, webhook_url=receiver.url + "/hook", webhook_events=["completed", "node"]
        )
        final = run.wait(**WAIT)
        assert final.succeeded
        wait_for(lambda: any(s.json().get("type") != "node" for s in deliveries_of(receiver)))
        seen = deliveries_of(receiver)
        bodies = [verify_webhook(secret, s.headers, s.body) for s in seen]
        typed = [parse_webhook_event(b) for b in bodies]
        assert {type(t) for t in typed} == {WebhookNodeEvent, WorkflowRunStatus}
        completed = [b for b in bodies if b.get("type") != "node"]
        node = [b for b in bodies if b.get("type") == "node"]
        assert len(completed) == 1
        assert comparable(completed[0]) == comparable(client.status(run.id).raw)
        assert {b["node"] for b in node} == {"Up", "Square"}
        for b in node:
            assert b["run_id"] == run.id and b["id"].startswith("gen_") and b["status"]
        assert len({s.headers["webhook-id"] for s in seen}) == len(seen)

        deliveries = wait_for(
            lambda: (lambda ds: ds if ds and all(d.state == "delivered" for d in ds) else None)(
                client.webhook_deliveries(run.id)
            )
        )
        assert {d.event for d in deliveries} == {"completed", "node"}
        # Every delivery the service recorded as delivered reached the receiver (read again:
        # node deliveries may arrive after the completed one that `seen` waited for).
        assert {d.id for d in deliveries} == {s.headers["webhook-id"] for s in deliveries_of(receiver)}
        for d in deliveries:
            assert d.url == receiver.url + "/hook" and d.created_at
            assert d.attempts and d.attempts[-1].status_code == 200 and d.attempts[-1].error is None
            assert (d.node is None) == (d.event == "completed")


def test_spend_thresholds_reach_the_accounts_endpoint(client: Client, server: Server, png: str) -> None:
    with FakeServer() as receiver:
        receiver.routes[("POST", "/alerts")] = Reply(200)
        created = json.loads(server.admin("key", "create", "default", "--json"))
        prefix = created["api_key"][:8]
        server.admin("key", "limit", prefix, "--daily", "1")
        endpoint = client.set_webhook_endpoint(receiver.url + "/alerts")
        assert (endpoint.url, endpoint.events) == (receiver.url + "/alerts", ["spend.threshold"])
        try:
            with Client(server.base_url, created["api_key"]) as limited:
                limited.run("upscale", {"image": png}, cache=False).wait(**WAIT)
            seen = wait_for(lambda: (lambda s: s if len(s) >= 2 else None)(deliveries_of(receiver, "/alerts")))
            secret = client.webhook_secret().key
            events = sorted(
                (parse_webhook_event(verify_webhook(secret, s.headers, s.body)) for s in seen),
                key=lambda e: e.threshold,  # type: ignore[union-attr]
            )
            assert all(isinstance(e, WebhookSpendEvent) for e in events)
            assert [(e.threshold, e.applies_to, e.key, e.period, e.limit, e.used) for e in events] == [  # type: ignore[union-attr]
                (80, "key", prefix, "day", 1, 1),
                (100, "key", prefix, "day", 1, 1),
            ]
            log = wait_for(
                lambda: (lambda ds: ds if len(ds) == 2 and all(d.state == "delivered" for d in ds) else None)(
                    client.webhook_endpoint().deliveries
                )
            )
            assert {d.event for d in log} == {"spend"}
        finally:
            assert client.remove_webhook_endpoint().url is None


def test_only_completed_is_sent_by_default(client: Client, png: str) -> None:
    with FakeServer() as receiver:
        receiver.routes[("POST", "/hook")] = Reply(204)
        run = client.run("upscale", {"image": png}, webhook_url=receiver.url + "/hook")
        run.wait(**WAIT)
        wait_for(lambda: deliveries_of(receiver))
        time.sleep(1)
        [only] = deliveries_of(receiver)
        assert only.json()["overall_status"] == "succeeded"
        [d] = client.webhook_deliveries(run.id)
        assert d.event == "completed" and d.node is None


def test_both_secrets_sign_during_rotation(client: Client, png: str) -> None:
    with FakeServer() as receiver:
        receiver.routes[("POST", "/hook")] = Reply(200)
        old = client.webhook_secret().key
        new = client.rotate_webhook_secret().key
        client.run("upscale", {"image": png}, webhook_url=receiver.url + "/hook").wait(**WAIT)
        [seen] = wait_for(lambda: deliveries_of(receiver))
        assert len(seen.headers["webhook-signature"].split(" ")) >= 2
        assert verify_webhook(new, seen.headers, seen.body) == verify_webhook(old, seen.headers, seen.body)


def test_a_v2_runs_completed_webhook_carries_its_v2_status(client: Client, png: str) -> None:
    with FakeServer() as receiver:
        receiver.routes[("POST", "/hook")] = Reply(200)
        secret = client.webhook_secret().key
        run = client.v2_run("fabric", 
            {"category": "top", "model_image": png, "fabric_description": "blue denim"},
            webhook_url=receiver.url + "/hook",
        )
        final = run.wait(**WAIT)
        [seen] = wait_for(lambda: deliveries_of(receiver))
        body = parse_webhook_event(verify_webhook(secret, seen.headers, seen.body))
        assert isinstance(body, V2Status) and body.raw == final.raw


def test_bad_webhook_requests_are_refused(client: Client, png: str) -> None:
    for options, field in (
        ({"webhook_url": "https://example.com/x", "webhook_events": ["started"]}, "webhook_events"),
        ({"webhook_url": "https://example.com/x", "webhook_events": []}, "webhook_events"),
        ({"webhook_events": ["completed"]}, "webhook_events"),
        ({"webhook_url": "ftp://example.com/x"}, "webhook_url"),
        ({"webhook_url": "not a url"}, "webhook_url"),
    ):
        with pytest.raises(InvalidInput) as info:
            client.run("upscale", {"image": png}, **options)
        assert info.value.field == field, options


def test_a_run_queues_in_the_lane_it_names(client: Client, png: str) -> None:
    run = client.run("upscale", {"image": png}, priority="bulk")
    final = run.wait(**WAIT)
    assert final.succeeded and isinstance(final, NodeRunStatus) and final.priority == "bulk"
    [listed] = [r for r in client.runs(limit=20).runs if r.id == run.id]
    assert listed.priority == "bulk"
    assert client.status(client.run("upscale", {"image": png}).id).priority == "normal", "the key's lane"
    with pytest.raises(InvalidInput) as info:
        client.run("upscale", {"image": png}, priority="urgent")
    assert info.value.field == "priority"


def test_a_run_may_say_how_soon_it_must_start(client: Client, png: str) -> None:
    final = client.run("upscale", {"image": png}, start_within_secs=60).wait(**WAIT)
    assert final.succeeded, "started well within its minute"
    for late in (0, 86401):
        with pytest.raises(InvalidInput) as info:
            client.run("upscale", {"image": png}, start_within_secs=late)
        assert info.value.field == "start_within_secs"


def test_a_zero_retention_run_hands_its_outputs_back_inline(client: Client, png: str) -> None:
    final = client.run("upscale", {"image": png}, retention_secs=0).wait(**WAIT)
    assert final.succeeded and isinstance(final, NodeRunStatus)
    assert final.output and final.output[0].startswith("data:image/png;base64,"), final.output[:1]
    assert final.outputs_kept is None, "still held"
    with pytest.raises(InvalidInput) as info:
        client.run("upscale", {"image": png}, retention_secs=10**9)
    assert info.value.field == "retention_secs"


def test_failed_deliveries_are_recorded_and_retried(client: Client, png: str) -> None:
    with FakeServer() as receiver:
        receiver.routes[("POST", "/hook")] = Reply(500, b"down")
        run = client.run("upscale", {"image": png}, webhook_url=receiver.url + "/hook")
        run.wait(**WAIT)
        [d] = wait_for(lambda: [d for d in client.webhook_deliveries(run.id) if d.attempts])
        assert d.state in ("pending", "failed")
        assert d.attempts[0].attempt == 1 and d.attempts[0].status_code == 500
        assert d.attempts[0].duration_ms is not None and d.attempts[0].at
        if d.state == "pending":
            assert d.next_attempt_at
