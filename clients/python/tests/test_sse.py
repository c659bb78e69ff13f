"""The SSE parser, and the client's events stream / waiting against a local HTTP server.

These run without Atelier: ``helpers.FakeServer`` (``http.server`` in a thread) plays the
events endpoint, including dropped connections.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, Dict, List

import pytest
from helpers import FakeServer, Reply, Seen, sse

from atelier_client import (
    AsyncClient,
    Client,
    EventStreamError,
    NodeEvent,
    NodeRunStatus,
    OtherEvent,
    RunNotFound,
    SSEDecoder,
    StatusEvent,
    WaitTimeout,
    WorkflowRunStatus,
)

KEY = "atl_test"


def parse_all(text: bytes, chunk: int = 0) -> List[Any]:
    decoder = SSEDecoder()
    out = []
    if chunk:
        for i in range(0, len(text), chunk):
            out += decoder.feed(text[i : i + chunk])
    else:
        out += decoder.feed(text)
    decoder.close()
    return out


# --- the parser ----------------------------------------------------------------------------


def test_multi_line_data_event_and_id() -> None:
    events = parse_all(b'event: node\nid: 7\ndata: {"a":\ndata:  1}\n\n')
    assert len(events) == 1
    e = events[0]
    assert (e.event, e.id, e.data) == ("node", "7", '{"a":\n 1}')
    assert json.loads(e.data) == {"a": 1}


def test_comments_are_ignored_and_default_type_is_message() -> None:
    events = parse_all(b": keep-alive\n\n:another\ndata: x\n\n: keep-alive\n\n")
    assert [(e.event, e.data) for e in events] == [("message", "x")]


def test_line_endings_crlf_cr_lf_and_split_chunks() -> None:
    text = b"id: 1\r\nevent: a\r\ndata: one\r\n\r\nid: 2\revent: b\rdata: two\r\rid: 3\nevent: c\ndata: three\n\n"
    expected = [("a", "one", "1"), ("b", "two", "2"), ("c", "three", "3")]
    for size in (0, 1, 2, 3, 5, 7):
        got = [(e.event, e.data, e.id) for e in parse_all(text, size)]
        assert got == expected, size


def test_a_crlf_split_between_chunks_is_one_line_end() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\n") == []  # the LF of the CRLF, not an empty line
    events = decoder.feed(b"\r\n")
    assert [e.data for e in events] == ["a"]


def test_utf8_split_inside_a_character() -> None:
    text = "data: héllo ✓\n\n".encode()
    assert [e.data for e in parse_all(text, 1)] == ["héllo ✓"]


def test_id_persists_and_blank_id_resets_and_nul_is_ignored() -> None:
    events = parse_all(b"id: 5\ndata: a\n\ndata: b\n\nid\ndata: c\n\nid: x\x00y\ndata: d\n\n")
    assert [(e.data, e.id) for e in events] == [("a", "5"), ("b", "5"), ("c", ""), ("d", "")]


def test_retry_sets_the_reconnection_delay_digits_only() -> None:
    decoder = SSEDecoder()
    events = decoder.feed(b"retry: 2500\ndata: a\n\nretry: soon\ndata: b\n\n")
    assert decoder.retry == 2500
    assert [(e.data, e.retry) for e in events] == [("a", 2500), ("b", None)]


def test_field_without_colon_space_handling_and_unknown_fields() -> None:
    events = parse_all(b"data\ndata:x\ndata:  y\nfoo: bar\n\n")
    assert [e.data for e in events] == ["\nx\n y"]


def test_events_without_data_are_not_dispatched_but_their_id_counts() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"id: 9\nevent: node\n\n") == []
    assert decoder.last_event_id == "9"
    assert [e.event for e in decoder.feed(b"data: z\n\n")] == ["message"]


def test_an_unterminated_event_at_the_end_is_dropped_and_bom_is_skipped() -> None:
    assert [e.data for e in parse_all(b"\xef\xbb\xbfdata: a\n\ndata: b\n")] == ["a"]


# --- the client's events stream -----------------------------------------------------------

NODE_STATUS: Dict[str, Any] = {
    "id": "gen_1",
    "overall_status": "succeeded",
    "status": "succeeded",
    "model_name": "upscale",
    "output": ["http://x/files/a.png"],
    "error": None,
    "created_at": "2024-01-01T00:00:00.000000",
    "finished_at": "2024-01-01T00:00:01.000000",
    "expires_at": "2024-01-04T00:00:01.000000",
    "tokens": 1,
}

WORKFLOW_STATUS: Dict[str, Any] = {
    "workflow_run_id": "wr_1",
    "overall_status": "succeeded",
    "outputs": {"final": "http://x/files/b.png"},
    "nodes": {
        "Up": {
            "id": "gen_2",
            "status": "succeeded",
            "output": ["http://x/files/b.png"],
            "error": None,
            "model_name": "upscale",
        }
    },
    "error": None,
    "tokens": 1,
}


def node_event(status: str, **extra: Any) -> Dict[str, Any]:
    return {"run_id": "gen_1", "node": "upscale", "id": "gen_1", "status": status, **extra}


def stream(*chunks: bytes, drop: bool = False) -> Reply:
    return Reply(200, iter(chunks), {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}, drop=drop)


def test_events_yield_typed_events_and_end_at_status() -> None:
    with FakeServer() as fake:
        fake.routes[("GET", "/api/v3/status/gen_1/events")] = stream(
            b": keep-alive\n\n",
            sse("node", node_event("running", progress=0.5), id="1"),
            sse("node", node_event("succeeded", output=["http://x/files/a.png"]), id="2"),
            sse("later", {"x": 1}, id="3"),
            sse("status", NODE_STATUS, id="4"),
            sse("node", node_event("ignored"), id="5"),
        )
        with Client(fake.url, KEY) as client:
            events = list(client.events("gen_1"))
        assert [type(e) for e in events] == [NodeEvent, NodeEvent, OtherEvent, StatusEvent]
        first = events[0]
        assert isinstance(first, NodeEvent)
        assert (first.status, first.progress, first.event_id, first.node) == ("running", 0.5, "1", "upscale")
        assert isinstance(events[1], NodeEvent) and events[1].output == ["http://x/files/a.png"]
        assert isinstance(events[2], OtherEvent) and events[2].event == "later" and events[2].data == {"x": 1}
        final = events[3]
        assert isinstance(final, StatusEvent) and isinstance(final.status, NodeRunStatus)
        assert final.status.succeeded and final.event_id == "4"
        seen = fake.requests_to("GET", "/api/v3/status/gen_1/events")
        assert seen[0].headers["x-api-key"] == KEY
        assert seen[0].headers["accept"] == "text/event-stream"
        assert "last-event-id" not in seen[0].headers


def test_events_reconnect_with_last_event_id_after_a_drop() -> None:
    calls: List[Seen] = []

    def handler(seen: Seen) -> Reply:
        calls.append(seen)
        if len(calls) == 1:
            return stream(b"retry: 50\n\n", sse("node", node_event("running"), id="ev-1"), drop=True)
        if len(calls) == 2:
            # Closed cleanly but before the status event: also a reason to reconnect.
            return stream(sse("node", node_event("running", progress=0.9), id="ev-2"))
        return stream(sse("status", WORKFLOW_STATUS, id="ev-3"))

    with FakeServer() as fake:
        fake.routes[("GET", "/api/v3/status/wr_1/events")] = handler
        with Client(fake.url, KEY) as client:
            started = time.monotonic()
            events = list(client.events("wr_1"))
            took = time.monotonic() - started
    assert [e.event_id for e in events] == ["ev-1", "ev-2", "ev-3"]
    assert isinstance(events[-1], StatusEvent) and isinstance(events[-1].status, WorkflowRunStatus)
    assert events[-1].status.nodes["Up"].output == ["http://x/files/b.png"]
    assert [c.headers.get("last-event-id") for c in calls] == [None, "ev-1", "ev-2"]
    assert took < 5  # the server's retry (50 ms) was used


def test_events_resume_from_a_given_last_event_id() -> None:
    with FakeServer() as fake:
        fake.routes[("GET", "/api/v3/status/gen_1/events")] = stream(sse("status", NODE_STATUS, id="9"))
        with Client(fake.url, KEY) as client:
            assert len(list(client.events("gen_1", last_event_id="8"))) == 1
        assert fake.seen[0].headers["last-event-id"] == "8"


def test_events_of_an_unknown_run_raise_run_not_found() -> None:
    with FakeServer() as fake:
        fake.routes[("GET", "/api/v3/status/gen_x/events")] = Reply(
            404, {"error": {"name": "RunNotFound", "message": "run 'gen_x' not found"}}
        )
        with Client(fake.url, KEY) as client:
            with pytest.raises(RunNotFound):
                list(client.events("gen_x"))


def test_events_on_a_server_without_the_endpoint_raise_event_stream_error() -> None:
    with FakeServer() as fake:
        with Client(fake.url, KEY) as client:
            with pytest.raises(EventStreamError):
                list(client.events("gen_1"))


def test_events_that_keep_dropping_give_up() -> None:
    with FakeServer() as fake:
        fake.routes[("GET", "/api/v3/status/gen_1/events")] = lambda s: stream(b"retry: 1\n\n: hi\n\n", drop=True)
        with Client(fake.url, KEY) as client:
            with pytest.raises(EventStreamError):
                list(client.events("gen_1"))
        assert len(fake.requests_to("GET", "/api/v3/status/gen_1/events")) == 6


# --- waiting ---------------------------------------------------------------------------------


def run_route(fake: FakeServer, run_id: str = "gen_1", **extra: Any) -> None:
    fake.routes[("POST", "/api/v3/run")] = Reply(200, {"id": run_id, "error": None, **extra})


def test_wait_uses_the_events_stream() -> None:
    with FakeServer() as fake:
        run_route(fake)
        fake.routes[("GET", "/api/v3/status/gen_1/events")] = stream(
            sse("node", node_event("running"), id="1"), sse("status", NODE_STATUS, id="2")
        )
        with Client(fake.url, KEY) as client:
            run = client.run("upscale", {"image": "x"})
            final = run.wait(timeout=10)
        assert isinstance(final, NodeRunStatus) and final.succeeded
        assert run.final_status is final
        assert fake.requests_to("GET", "/api/v3/status/gen_1") == []  # no polling


def test_wait_falls_back_to_polling_when_the_server_has_no_events() -> None:
    polls: List[int] = []

    def status(seen: Seen) -> Reply:
        polls.append(1)
        state = "running" if len(polls) < 3 else "succeeded"
        return Reply(200, {**NODE_STATUS, "overall_status": state, "status": state})

    with FakeServer() as fake:
        run_route(fake)
        fake.routes[("GET", "/api/v3/status/gen_1")] = status
        with Client(fake.url, KEY) as client:
            final = client.run("upscale", {"image": "x"}).wait(timeout=10, poll_interval=0.05)
        assert final.succeeded and len(polls) == 3
        assert len(fake.requests_to("GET", "/api/v3/status/gen_1/events")) == 1


def test_wait_while_polling_respects_rate_limits() -> None:
    answers = [
        Reply(429, {"error": {"name": "RateLimited", "message": "slow down", "retry_after": 0}}, {"Retry-After": "0"}),
        Reply(200, NODE_STATUS),
    ]
    with FakeServer() as fake:
        run_route(fake)
        fake.routes[("GET", "/api/v3/status/gen_1")] = lambda seen: answers.pop(0)
        with Client(fake.url, KEY) as client:
            final = client.run("upscale", {"image": "x"}).wait(timeout=10, poll_interval=0.05, use_events=False)
        assert final.succeeded and answers == []


def test_wait_times_out_while_polling() -> None:
    with FakeServer() as fake:
        run_route(fake)
        fake.routes[("GET", "/api/v3/status/gen_1")] = Reply(200, {**NODE_STATUS, "overall_status": "queued"})
        with Client(fake.url, KEY) as client:
            run = client.run("upscale", {"image": "x"})
            started = time.monotonic()
            with pytest.raises(WaitTimeout) as info:
                run.wait(timeout=0.5, poll_interval=0.1, use_events=False)
        assert time.monotonic() - started < 3
        assert info.value.run_id == "gen_1" and info.value.last_status.overall_status == "queued"


def test_wait_times_out_on_a_quiet_stream() -> None:
    def quiet(seen: Seen) -> Reply:
        def chunks() -> Any:
            yield b": keep-alive\n\n"
            time.sleep(3)
            yield b": keep-alive\n\n"

        return Reply(200, chunks(), {"Content-Type": "text/event-stream"})

    with FakeServer() as fake:
        run_route(fake)
        fake.routes[("GET", "/api/v3/status/gen_1/events")] = quiet
        with Client(fake.url, KEY) as client:
            started = time.monotonic()
            with pytest.raises(WaitTimeout):
                client.run("upscale", {"image": "x"}).wait(timeout=0.5)
            assert time.monotonic() - started < 2.5


def test_prefer_wait_sends_the_header_and_keeps_the_final_status() -> None:
    def run(seen: Seen) -> Reply:
        assert seen.headers["prefer"] == "wait=20"
        return Reply(200, {"id": "gen_1", "error": None, "status": NODE_STATUS}, {"Preference-Applied": "wait=20"})

    with FakeServer() as fake:
        fake.routes[("POST", "/api/v3/run")] = run
        with Client(fake.url, KEY) as client:
            r = client.run("upscale", {"image": "x"}, wait=20, idempotency_key="k1")
            assert r.final_status is not None and r.final_status.succeeded
            assert r.wait() is r.final_status
        assert fake.seen[0].headers["idempotency-key"] == "k1"
        assert len(fake.seen) == 1  # no status request at all


def test_prefer_wait_without_a_status_is_a_plain_handle() -> None:
    with FakeServer() as fake:
        run_route(fake, warnings=["ignored"])
        with Client(fake.url, KEY) as client:
            r = client.run("upscale", {"image": "x"}, wait=1)
        assert r.final_status is None and r.warnings == ["ignored"]


def test_wait_argument_is_checked() -> None:
    with Client("http://127.0.0.1:9", KEY) as client:
        for bad in (0, 61, 2.5, True):
            with pytest.raises(ValueError):
                client.run("upscale", {}, wait=bad)  # type: ignore[arg-type]


def test_webhook_fields_are_sent_only_when_given() -> None:
    with FakeServer() as fake:
        run_route(fake)
        with Client(fake.url, KEY) as client:
            client.run("upscale", {"image": "x"})
            client.run_workflow(
                "w f", {"a": 1}, webhook_url="https://hook.example/x", webhook_events=["completed", "node"]
            )
            with pytest.raises(TypeError):
                client.run("upscale", {}, webhook_url="https://hook.example/x", webhook_events="node")  # type: ignore[arg-type]
            fake.routes[("POST", "/api/v2/fabric/run")] = Reply(200, {"id": "gen_2", "error": None})
            client.v2_run("fabric", {"category": "top"}, webhook_url="https://hook.example/y", webhook_events=("node",))
        first, second = (s.json() for s in fake.requests_to("POST", "/api/v3/run"))
        [v2] = (s.json() for s in fake.requests_to("POST", "/api/v2/fabric/run"))
        assert v2 == {"category": "top", "webhook_url": "https://hook.example/y", "webhook_events": ["node"]}
        assert first == {"type": "node", "target": "upscale", "input": {"image": "x"}}
        assert second == {
            "type": "workflow",
            "target": "w f",
            "input": {"a": 1},
            "webhook_url": "https://hook.example/x",
            "webhook_events": ["completed", "node"],
        }


def test_webhook_endpoints_parse_their_answers() -> None:
    delivery = {
        "id": "msg_1",
        "event": "node",
        "node": "Up",
        "url": "https://hook.example/x",
        "state": "failed",
        "created_at": "2024-01-01T00:00:00.000000",
        "next_attempt_at": None,
        "attempts": [
            {"attempt": 1, "at": "2024-01-01T00:00:00.100000", "status_code": 500, "error": None, "duration_ms": 12},
            {
                "attempt": 2,
                "at": "2024-01-01T00:00:05.100000",
                "status_code": None,
                "error": "timeout",
                "duration_ms": 10000,
            },
        ],
        "new_field": True,
    }
    with FakeServer() as fake:
        fake.routes[("GET", "/api/v3/webhooks/secret")] = Reply(200, {"key": "whsec_AAAA"})
        fake.routes[("POST", "/api/v3/webhooks/secret/rotate")] = Reply(
            200, {"key": "whsec_BBBB", "previous_key_expires_at": "2024-01-02T00:00:00.000000"}
        )
        fake.routes[("GET", "/api/v3/runs/wr_1/webhooks")] = Reply(200, {"deliveries": [delivery]})
        with Client(fake.url, KEY) as client:
            assert client.webhook_secret().key == "whsec_AAAA"
            rotated = client.rotate_webhook_secret()
            assert (rotated.key, rotated.previous_key_expires_at) == ("whsec_BBBB", "2024-01-02T00:00:00.000000")
            [d] = client.webhook_deliveries("wr_1")
        assert (d.id, d.event, d.node, d.state, d.next_attempt_at) == ("msg_1", "node", "Up", "failed", None)
        assert [(a.attempt, a.status_code, a.error) for a in d.attempts] == [(1, 500, None), (2, None, "timeout")]
        assert d.raw["new_field"] is True


# --- the same, asynchronously ------------------------------------------------------------------


def test_async_events_reconnect_and_wait() -> None:
    calls: List[Seen] = []

    def handler(seen: Seen) -> Reply:
        calls.append(seen)
        if len(calls) == 1:
            return stream(b"retry: 20\n\n", sse("node", node_event("running"), id="a"), drop=True)
        return stream(sse("status", NODE_STATUS, id="b"))

    async def main(url: str) -> None:
        async with AsyncClient(url, KEY) as client:
            events = [e async for e in client.events("gen_1")]
            assert [e.event_id for e in events] == ["a", "b"]
            run = await client.run("upscale", {"image": "x"})
            final = await run.wait(timeout=10)
            assert final.succeeded

    with FakeServer() as fake:
        run_route(fake)
        fake.routes[("GET", "/api/v3/status/gen_1/events")] = handler
        asyncio.run(main(fake.url))
    assert [c.headers.get("last-event-id") for c in calls[:2]] == [None, "a"]


def test_async_wait_falls_back_to_polling_and_times_out_exactly() -> None:
    async def main(url: str) -> None:
        async with AsyncClient(url, KEY) as client:
            run = await client.run("upscale", {"image": "x"})
            started = time.monotonic()
            with pytest.raises(WaitTimeout):
                await run.wait(timeout=0.6, poll_interval=0.1)
            assert time.monotonic() - started < 2

    with FakeServer() as fake:
        run_route(fake)
        fake.routes[("GET", "/api/v3/status/gen_1")] = Reply(200, {**NODE_STATUS, "overall_status": "running"})
        asyncio.run(main(fake.url))
        assert len(fake.requests_to("GET", "/api/v3/status/gen_1")) >= 3


def test_async_wait_times_out_on_a_quiet_stream() -> None:
    def quiet(seen: Seen) -> Reply:
        def chunks() -> Any:
            yield b": keep-alive\n\n"
            time.sleep(3)
            yield b": keep-alive\n\n"

        return Reply(200, chunks(), {"Content-Type": "text/event-stream"})

    async def main(url: str) -> None:
        async with AsyncClient(url, KEY) as client:
            run = await client.run("upscale", {"image": "x"})
            started = time.monotonic()
            with pytest.raises(WaitTimeout):
                await run.wait(timeout=0.5)
            assert time.monotonic() - started < 1.5

    with FakeServer() as fake:
        run_route(fake)
        fake.routes[("GET", "/api/v3/status/gen_1/events")] = quiet
        asyncio.run(main(fake.url))
