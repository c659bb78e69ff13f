"""Request descriptions shared by :class:`Client` and :class:`AsyncClient`.

Each public method builds a :class:`Call` here (method, path, body, headers, and how to read
the answer) and the sync or async client sends it; the two clients differ only in how they
wait.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Generic, Iterable, List, Mapping, Optional, TypeVar, Union
from urllib.parse import quote

import httpx

from .errors import AtelierError, EventStreamError, error_from_response
from .models import (
    Batch,
    BatchEvent,
    DirectUpload,
    BatchItemList,
    BatchList,
    DeletedWorkflow,
    Deletion,
    Estimate,
    NodeEvent,
    OtherEvent,
    RunEvent,
    RunHandle,
    RunList,
    RunStatus,
    StatusEvent,
    TokenBalance,
    Tool,
    Upload,
    V2Status,
    WebhookDelivery,
    WebhookDeliveryList,
    WebhookEndpoint,
    AuditList,
    SpendReport,
    WebhookSecret,
    WorkflowDefinition,
    WorkflowDescription,
    WorkflowSummary,
    WorkflowValidation,
    parse_run_status,
)
from .sse import ServerSentEvent

T = TypeVar("T")

#: v2 tool families: the client's name -> the path segment(s) after ``/api/v2/``.
V2_FAMILIES: Dict[str, str] = {
    "tryon": "tryon",
    "tryon_pro": "tryon/pro",
    "virtual_model": "virtualmodel",
    "fabric": "fabric",
    "sketch_to_dress": "sketchtodress",
}

#: Events a webhook may be sent for (``webhook_events``).
WEBHOOK_EVENTS = ("completed", "node")

#: What a delivery may tell (``WebhookDelivery.event``): a run's events, ``batch`` (a
#: batch's ``batch.completed``) and ``spend`` (a spend alert's ``spend.threshold``).
DELIVERY_EVENTS = WEBHOOK_EVENTS + ("batch", "spend")

DEFAULT_TIMEOUT = 30.0
#: Read timeout of the events stream: the server sends a keep-alive comment every 15 s.
EVENTS_READ_TIMEOUT = 45.0
#: Reconnection delay of the events stream until the server sends ``retry:``.
DEFAULT_RETRY_SECONDS = 1.0

USER_AGENT = "atelier-client-python"


@dataclass
class Call(Generic[T]):
    """One request and how to read its answer."""

    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    json: Any = None
    #: A body of bytes instead of JSON.
    content: Optional[bytes] = None
    params: Optional[Dict[str, Any]] = None
    headers: Dict[str, str] = field(default_factory=dict)
    #: Seconds added to the client's timeout (``Prefer: wait`` requests).
    extra_timeout: float = 0.0


def settings(base_url: Optional[str], api_key: Optional[str]) -> "tuple[str, str]":
    """The base URL and key: the arguments, else ``ATELIER_URL`` / ``ATELIER_API_KEY``."""
    url = base_url or os.environ.get("ATELIER_URL")
    key = api_key or os.environ.get("ATELIER_API_KEY")
    if not url:
        raise ValueError("base_url is required (or set ATELIER_URL)")
    if not key:
        raise ValueError("api_key is required (or set ATELIER_API_KEY)")
    return url.rstrip("/"), key


def seg(value: str) -> str:
    """A path segment, percent-encoded (workflow names may hold spaces, ``%``, Unicode)."""
    return quote(value, safe="")


def check(response: httpx.Response) -> None:
    """Raises the typed :class:`AtelierError` of a non-2xx answer (the body must be read)."""
    if 200 <= response.status_code < 300:
        return
    body: Any
    try:
        body = response.json()
    except (ValueError, UnicodeDecodeError):
        body = response.text
    raise error_from_response(response.status_code, body, response.headers)


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError as e:
        raise AtelierError(
            f"the server answered {response.status_code} with a body that is not JSON",
            status_code=response.status_code,
            body=response.text,
            headers=response.headers,
        ) from e


def _obj(response: httpx.Response) -> Dict[str, Any]:
    data = _json(response)
    if not isinstance(data, dict):
        raise AtelierError(
            "the server answered with JSON that is not an object",
            status_code=response.status_code,
            body=data,
            headers=response.headers,
        )
    return data


def _array(response: httpx.Response) -> List[Dict[str, Any]]:
    data = _json(response)
    if not isinstance(data, list):
        raise AtelierError(
            "the server answered with JSON that is not an array",
            status_code=response.status_code,
            body=data,
            headers=response.headers,
        )
    return [d for d in data if isinstance(d, dict)]


def _webhook_fields(
    body: Dict[str, Any], webhook_url: Optional[str], webhook_events: Optional[Iterable[str]]
) -> Dict[str, Any]:
    # Sent only when asked for. The server checks them (422 InvalidInput on a bad URL, an
    # empty or unknown event list, or events without a URL).
    if webhook_url is not None:
        body["webhook_url"] = webhook_url
    if webhook_events is not None:
        if isinstance(webhook_events, str):
            raise TypeError('webhook_events is a list, e.g. ["completed", "node"]')
        body["webhook_events"] = list(webhook_events)
    return body


def _with_queueing(
    body: Dict[str, Any],
    priority: Optional[str],
    start_within_secs: Optional[int],
    cache: Optional[bool] = None,
    retention_secs: Optional[int] = None,
) -> Dict[str, Any]:
    # The lane: ``interactive``, ``normal`` or ``bulk`` (the server checks it: 422
    # InvalidInput otherwise); unset, the server uses the API key's lane. And how soon
    # each node must start (1..86400 s, checked by the server too); unset, no limit.
    if priority is not None:
        body["priority"] = priority
    if start_within_secs is not None:
        body["start_within_secs"] = start_within_secs
    # ``False``: every node runs afresh instead of being filled from the result cache.
    if cache is not None:
        body["cache"] = bool(cache)
    # How long the outputs are kept after the run ended, in seconds (the server checks the
    # operator's range: 422 InvalidInput otherwise); 0: zero retention, the outputs come
    # back inline as ``data:`` URLs and are never stored. Unset, the key's or server's default.
    if retention_secs is not None:
        body["retention_secs"] = retention_secs
    return body


def _run_body(
    kind: str,
    target: str,
    input: Mapping[str, Any],
    webhook_url: Optional[str],
    webhook_events: Optional[Iterable[str]],
    priority: Optional[str] = None,
    start_within_secs: Optional[int] = None,
    cache: Optional[bool] = None,
    retention_secs: Optional[int] = None,
) -> Dict[str, Any]:
    body = _webhook_fields({"type": kind, "target": target, "input": dict(input)}, webhook_url, webhook_events)
    return _with_queueing(body, priority, start_within_secs, cache, retention_secs)


def _run_headers(idempotency_key: Optional[str], wait: Optional[int]) -> Dict[str, str]:
    headers: Dict[str, str] = {}
    if idempotency_key is not None:
        headers["Idempotency-Key"] = idempotency_key
    if wait is not None:
        if isinstance(wait, bool) or not isinstance(wait, int) or not 1 <= wait <= 60:
            raise ValueError("wait must be a whole number of seconds from 1 to 60")
        headers["Prefer"] = f"wait={wait}"
    return headers


def run(
    kind: str,
    target: str,
    input: Mapping[str, Any],
    *,
    webhook_url: Optional[str] = None,
    webhook_events: Optional[Iterable[str]] = None,
    idempotency_key: Optional[str] = None,
    wait: Optional[int] = None,
    priority: Optional[str] = None,
    start_within_secs: Optional[int] = None,
    cache: Optional[bool] = None,
    retention_secs: Optional[int] = None,
) -> Call[RunHandle]:
    """``POST /api/v3/run``."""
    return Call(
        "POST",
        "/api/v3/run",
        lambda r: RunHandle.from_raw(_obj(r)),
        json=_run_body(
            kind, target, input, webhook_url, webhook_events, priority, start_within_secs, cache, retention_secs
        ),
        headers=_run_headers(idempotency_key, wait),
        extra_timeout=float(wait or 0),
    )


def estimate(kind: str, target: str, input: Mapping[str, Any]) -> Call[Estimate]:
    """``POST /api/v3/estimate``."""
    return Call(
        "POST",
        "/api/v3/estimate",
        lambda r: Estimate.from_raw(_obj(r)),
        json={"type": kind, "target": target, "input": dict(input)},
    )


def upload(image: bytes, media_type: Optional[str] = None) -> Call[Upload]:
    """``POST /api/v3/uploads``: the image's (or items file's) bytes as the body."""
    return Call(
        "POST",
        "/api/v3/uploads",
        lambda r: Upload.from_raw(_obj(r)),
        content=bytes(image),
        headers={"Content-Type": media_type or "application/octet-stream"},
    )


def items_media_type(source: Any) -> Optional[str]:
    """The media type of an items file named by its path (``.jsonl``, ``.ndjson``, ``.csv``)."""
    if isinstance(source, (bytes, bytearray)):
        return None
    suffix = os.fspath(source).rsplit(".", 1)[-1].lower()
    return {"jsonl": "application/x-ndjson", "ndjson": "application/x-ndjson", "csv": "text/csv"}.get(suffix)


def begin_direct_upload(content_type: Optional[str] = None) -> Call[DirectUpload]:
    """``POST /api/v3/uploads/direct``."""
    body: Dict[str, Any] = {} if content_type is None else {"content_type": content_type}
    return Call("POST", "/api/v3/uploads/direct", lambda r: DirectUpload.from_raw(_obj(r)), json=body)


def complete_direct_upload(direct_id: str) -> Call[Upload]:
    """``POST /api/v3/uploads/direct/{id}``."""
    return Call("POST", f"/api/v3/uploads/direct/{seg(direct_id)}", lambda r: Upload.from_raw(_obj(r)))


def get_upload(upload_id: str) -> Call[Upload]:
    """``GET /api/v3/uploads/{id}``."""
    return Call("GET", f"/api/v3/uploads/{seg(upload_id)}", lambda r: Upload.from_raw(_obj(r)))


def create_batch(body: Dict[str, Any], idempotency_key: Optional[str] = None) -> Call[Batch]:
    """``POST /api/v3/batches``."""
    headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
    return Call("POST", "/api/v3/batches", lambda r: Batch.from_raw(_obj(r)), json=body, headers=headers)


def batch(batch_id: str) -> Call[Batch]:
    """``GET /api/v3/batches/{batch_id}``."""
    return Call("GET", f"/api/v3/batches/{seg(batch_id)}", lambda r: Batch.from_raw(_obj(r)))


def batches(limit: Optional[int] = None, before: Optional[int] = None) -> Call[BatchList]:
    """``GET /api/v3/batches``."""
    params = {k: v for k, v in (("limit", limit), ("before", before)) if v is not None}
    return Call("GET", "/api/v3/batches", lambda r: BatchList.from_raw(_obj(r)), params=params)


def batch_items(
    batch_id: str, status: Optional[str] = None, after: Optional[int] = None, limit: Optional[int] = None
) -> Call[BatchItemList]:
    """``GET /api/v3/batches/{batch_id}/items``."""
    params = {k: v for k, v in (("status", status), ("after", after), ("limit", limit)) if v is not None}
    path = f"/api/v3/batches/{seg(batch_id)}/items"
    return Call("GET", path, lambda r: BatchItemList.from_raw(_obj(r)), params=params)


def cancel_batch(batch_id: str) -> Call[Batch]:
    """``POST /api/v3/batches/{batch_id}/cancel``."""
    return Call("POST", f"/api/v3/batches/{seg(batch_id)}/cancel", lambda r: Batch.from_raw(_obj(r)))


def retry_batch(batch_id: str) -> Call[Batch]:
    """``POST /api/v3/batches/{batch_id}/retry``."""
    return Call("POST", f"/api/v3/batches/{seg(batch_id)}/retry", lambda r: Batch.from_raw(_obj(r)))


def delete_batch(batch_id: str) -> Call[Deletion]:
    """``DELETE /api/v3/batches/{batch_id}``."""
    return Call("DELETE", f"/api/v3/batches/{seg(batch_id)}", lambda r: Deletion.from_raw(_obj(r)))


def batch_body(
    target: str,
    items: Iterable[Mapping[str, Any]],
    *,
    items_file: Optional[str] = None,
    workflow: bool = False,
    input: Optional[Mapping[str, Any]] = None,
    priority: Optional[str] = None,
    cache: Optional[bool] = None,
    webhook_url: Optional[str] = None,
    retention_secs: Optional[int] = None,
) -> Dict[str, Any]:
    """The body of ``POST /api/v3/batches``: each item ``{"input": {...}, "ref": "..."}``."""
    body: Dict[str, Any] = {"type": "workflow" if workflow else "node", "target": target}
    if items_file is not None:
        body["items_file"] = items_file
    else:
        body["items"] = [dict(i) for i in items]
    if input:
        body["input"] = dict(input)
    if priority is not None:
        body["priority"] = priority
    if cache is not None:
        body["cache"] = cache
    # At least 1 (a batch's results are read after it ends); the server checks it.
    if retention_secs is not None:
        body["retention_secs"] = retention_secs
    if webhook_url is not None:
        body["webhook_url"] = webhook_url
    return body


def status(run_id: str) -> Call[RunStatus]:
    """``GET /api/v3/status/{run_id}``."""
    return Call("GET", f"/api/v3/status/{seg(run_id)}", lambda r: parse_run_status(_obj(r)))


def cancel(run_id: str) -> Call[RunStatus]:
    """``POST /api/v3/cancel/{run_id}``."""
    return Call("POST", f"/api/v3/cancel/{seg(run_id)}", lambda r: parse_run_status(_obj(r)))


def delete_run(run_id: str) -> Call[Deletion]:
    """``DELETE /api/v3/runs/{run_id}``."""
    return Call("DELETE", f"/api/v3/runs/{seg(run_id)}", lambda r: Deletion.from_raw(_obj(r)))


def runs(
    limit: Optional[int] = None,
    before: Optional[int] = None,
    status: Optional[str] = None,
    target: Optional[str] = None,
) -> Call[RunList]:
    """``GET /api/v3/runs``."""
    params = {
        k: v for k, v in (("limit", limit), ("before", before), ("status", status), ("target", target)) if v is not None
    }
    return Call("GET", "/api/v3/runs", lambda r: RunList.from_raw(_obj(r)), params=params)


def tools() -> Call[List[Tool]]:
    """``GET /api/v3/tools``."""
    return Call("GET", "/api/v3/tools", lambda r: [Tool.from_raw(t) for t in _array(r)])


def workflow(name: str) -> Call[WorkflowDescription]:
    """``GET /api/v3/workflow/{name}``."""
    return Call("GET", f"/api/v3/workflow/{seg(name)}", lambda r: WorkflowDescription.from_raw(_obj(r)))


def workflows() -> Call[List[WorkflowSummary]]:
    """``GET /api/v3/workflows``."""
    return Call("GET", "/api/v3/workflows", lambda r: [WorkflowSummary.from_raw(w) for w in _array(r)])


def _definition(definition: Union[WorkflowDefinition, Mapping[str, Any]]) -> Dict[str, Any]:
    if isinstance(definition, WorkflowDefinition):
        return definition.to_dict()
    return dict(definition)


def save_workflow(name: str, definition: Union[WorkflowDefinition, Mapping[str, Any]]) -> Call[WorkflowDescription]:
    """``PUT /api/v3/workflow/{name}``."""
    return Call(
        "PUT",
        f"/api/v3/workflow/{seg(name)}",
        lambda r: WorkflowDescription.from_raw(_obj(r)),
        json=_definition(definition),
    )


def delete_workflow(name: str) -> Call[DeletedWorkflow]:
    """``DELETE /api/v3/workflow/{name}``."""
    return Call("DELETE", f"/api/v3/workflow/{seg(name)}", lambda r: DeletedWorkflow.from_raw(_obj(r)))


def validate_workflow(
    definition: Union[WorkflowDefinition, Mapping[str, Any]], name: Optional[str] = None
) -> Call[WorkflowValidation]:
    """``POST /api/v3/workflows/validate``."""
    return Call(
        "POST",
        "/api/v3/workflows/validate",
        lambda r: WorkflowValidation.from_raw(_obj(r)),
        json=_definition(definition),
        params={"name": name} if name is not None else None,
    )


def balance() -> Call[int]:
    """``GET /api/v2/user/tokens``."""
    return Call("GET", "/api/v2/user/tokens", lambda r: TokenBalance.from_raw(_obj(r)).tokens)


def _family(family: str) -> str:
    if family in V2_FAMILIES:
        return V2_FAMILIES[family]
    if family in V2_FAMILIES.values():
        return family
    raise ValueError(f"unknown v2 family {family!r}; expected one of {sorted(V2_FAMILIES)}")


def v2_run(
    family: str,
    input: Mapping[str, Any],
    *,
    webhook_url: Optional[str] = None,
    webhook_events: Optional[Iterable[str]] = None,
    idempotency_key: Optional[str] = None,
    priority: Optional[str] = None,
    start_within_secs: Optional[int] = None,
    cache: Optional[bool] = None,
    retention_secs: Optional[int] = None,
) -> Call[RunHandle]:
    """``POST /api/v2/{family}/run``: the family's fields, plus the webhook and queueing fields."""
    return Call(
        "POST",
        f"/api/v2/{_family(family)}/run",
        lambda r: RunHandle.from_raw(_obj(r)),
        json=_with_queueing(
            _webhook_fields(dict(input), webhook_url, webhook_events),
            priority,
            start_within_secs,
            cache,
            retention_secs,
        ),
        headers=_run_headers(idempotency_key, None),
    )


def v2_status(family: str, run_id: str) -> Call[V2Status]:
    """``GET /api/v2/{family}/status/{run_id}``."""
    return Call("GET", f"/api/v2/{_family(family)}/status/{seg(run_id)}", lambda r: V2Status.from_raw(_obj(r)))


def audit(
    action: Optional[str] = None,
    since: Optional[str] = None,
    before: Optional[int] = None,
    limit: Optional[int] = None,
) -> Call[AuditList]:
    """``GET /api/v3/audit``."""
    pairs = (("action", action), ("since", since), ("before", before), ("limit", limit))
    params = {k: v for k, v in pairs if v is not None}
    return Call("GET", "/api/v3/audit", lambda r: AuditList.from_raw(_obj(r)), params=params)


def usage() -> Call[SpendReport]:
    """``GET /api/v3/usage``."""
    return Call("GET", "/api/v3/usage", lambda r: SpendReport.from_raw(_obj(r)))


def webhook_secret() -> Call[WebhookSecret]:
    """``GET /api/v3/webhooks/secret``."""
    return Call("GET", "/api/v3/webhooks/secret", lambda r: WebhookSecret.from_raw(_obj(r)))


def rotate_webhook_secret() -> Call[WebhookSecret]:
    """``POST /api/v3/webhooks/secret/rotate``."""
    return Call("POST", "/api/v3/webhooks/secret/rotate", lambda r: WebhookSecret.from_raw(_obj(r)))


def webhook_endpoint() -> Call[WebhookEndpoint]:
    """``GET /api/v3/webhooks/endpoint``."""
    return Call("GET", "/api/v3/webhooks/endpoint", lambda r: WebhookEndpoint.from_raw(_obj(r)))


def set_webhook_endpoint(url: str) -> Call[WebhookEndpoint]:
    """``PUT /api/v3/webhooks/endpoint``."""
    return Call("PUT", "/api/v3/webhooks/endpoint", lambda r: WebhookEndpoint.from_raw(_obj(r)), json={"url": url})


def remove_webhook_endpoint() -> Call[WebhookEndpoint]:
    """``DELETE /api/v3/webhooks/endpoint``."""
    return Call("DELETE", "/api/v3/webhooks/endpoint", lambda r: WebhookEndpoint.from_raw(_obj(r)))


def webhook_deliveries(run_id: str) -> Call[List[WebhookDelivery]]:
    """``GET /api/v3/runs/{run_id}/webhooks``."""

    return Call(
        "GET",
        f"/api/v3/runs/{seg(run_id)}/webhooks",
        lambda r: WebhookDeliveryList.from_raw(_obj(r)).deliveries,
    )


def replay_delivery(run_id: str, delivery: str) -> Call[WebhookDelivery]:
    """``POST /api/v3/runs/{run_id}/webhooks/{delivery}/replay``."""

    return Call(
        "POST",
        f"/api/v3/runs/{seg(run_id)}/webhooks/{seg(delivery)}/replay",
        lambda r: WebhookDelivery.from_raw(_obj(r)),
    )


# --- the events stream -------------------------------------------------------------------


def batch_webhook_deliveries(batch_id: str) -> Call[List[WebhookDelivery]]:
    """``GET /api/v3/batches/{batch_id}/webhooks``."""

    return Call(
        "GET",
        f"/api/v3/batches/{seg(batch_id)}/webhooks",
        lambda r: WebhookDeliveryList.from_raw(_obj(r)).deliveries,
    )


def batch_events_path(batch_id: str) -> str:
    """``GET /api/v3/batches/{batch_id}/events``."""
    return f"/api/v3/batches/{seg(batch_id)}/events"


def to_batch_event(sse: ServerSentEvent) -> Union[BatchEvent, OtherEvent]:
    """Reads one SSE event of a batch's stream."""
    try:
        data: Any = json.loads(sse.data)
    except ValueError:
        data = sse.data
    if sse.event in ("progress", "status") and isinstance(data, dict):
        return BatchEvent(event=sse.event, batch=Batch.from_raw(data), event_id=sse.id, raw=dict(data))
    return OtherEvent(event=sse.event, data=data, event_id=sse.id, raw=data if isinstance(data, dict) else {})


def events_path(run_id: str) -> str:
    """``GET /api/v3/status/{run_id}/events``."""
    return f"/api/v3/status/{seg(run_id)}/events"


def events_headers(last_event_id: Optional[str]) -> Dict[str, str]:
    headers = {"Accept": "text/event-stream", "Cache-Control": "no-cache"}
    if last_event_id is not None:
        headers["Last-Event-ID"] = last_event_id
    return headers


def events_timeout(base: Optional[float], read: float = EVENTS_READ_TIMEOUT) -> httpx.Timeout:
    return httpx.Timeout(base, read=read)


def open_error(response: httpx.Response) -> Exception:
    """What to raise for an events answer that is not a stream (its body read already).

    A ``RunNotFound`` (or ``Unauthorized``, ...) is the caller's error. A server without the
    events endpoint (a 404 that is not ``RunNotFound``, 405, 406, 501, or a 200 that is not
    ``text/event-stream``) gives :class:`EventStreamError`, on which :meth:`Run.wait` falls
    back to polling.
    """
    if response.status_code == 200:
        ctype = response.headers.get("content-type", "")
        return EventStreamError(f"the events endpoint answered {ctype or 'no content type'}, not text/event-stream")
    try:
        check(response)
    except AtelierError as e:
        if response.status_code in (404, 405, 406, 501) and e.name not in ("RunNotFound", "BatchNotFound"):
            unsupported = EventStreamError(f"the server offers no events stream ({response.status_code})")
            unsupported.__cause__ = e
            return unsupported
        return e
    return EventStreamError(f"the events endpoint answered {response.status_code}")


def is_event_stream(response: httpx.Response) -> bool:
    return response.status_code == 200 and response.headers.get("content-type", "").split(";")[0].strip().lower() == (
        "text/event-stream"
    )


def to_run_event(sse: ServerSentEvent) -> RunEvent:
    """Reads one SSE event of the run's stream."""
    try:
        data: Any = json.loads(sse.data)
    except ValueError:
        data = sse.data
    if sse.event == "node" and isinstance(data, dict):
        return NodeEvent.from_raw(data, event_id=sse.id)
    if sse.event == "status" and isinstance(data, dict):
        return StatusEvent.from_raw(data, event_id=sse.id)
    return OtherEvent(event=sse.event, data=data, event_id=sse.id, raw=data if isinstance(data, dict) else {})


def image_data_uri(data: bytes, mime: Optional[str] = None) -> str:
    """An image's bytes as a ``data:`` URI, the form image inputs take inline.

    The MIME type is sniffed from the magic bytes (PNG, JPEG, WebP, GIF) unless given.
    """
    import base64

    if mime is None:
        if data.startswith(b"\x89PNG\r\n\x1a\n"):
            mime = "image/png"
        elif data.startswith(b"\xff\xd8\xff"):
            mime = "image/jpeg"
        elif data[:4] == b"RIFF" and data[8:12] == b"WEBP":
            mime = "image/webp"
        elif data[:6] in (b"GIF87a", b"GIF89a"):
            mime = "image/gif"
        else:
            mime = "application/octet-stream"
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


class NoCancelScope:
    """The synchronous client's stand-in for ``anyio.move_on_after`` (``unasync.py`` puts it
    there): it never cancels, since its events stream checks the deadline itself."""

    cancelled_caught = False

    def __enter__(self) -> "NoCancelScope":
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def no_cancel_scope(delay: Optional[float]) -> NoCancelScope:
    return NoCancelScope()
