"""The synchronous client: :class:`Client`, and the run handles :class:`Run` and :class:`V2Run`.

Generated from ``async_client.py`` by ``clients/python/unasync.py``: change that file, then
run ``python3 unasync.py``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Dict, Generator, Generic, Iterable, Iterator, List, Mapping, Optional, TypeVar, Union

import httpx

from . import _calls as calls
from ._calls import Call
from ._common import StatusLike, check_poll_interval
from .errors import AtelierError, EventStreamError, RateLimited, WaitTimeout
from .models import (
    Batch,
    BatchEvent,
    DirectUpload,
    BatchItemList,
    BatchList,
    DeletedWorkflow,
    Deletion,
    Estimate,
    RunEvent,
    RunHandle,
    RunList,
    RunStatus,
    RunSummary,
    StatusEvent,
    Tool,
    Upload,
    V2Status,
    WebhookDelivery,
    WebhookEndpoint,
    AuditList,
    SpendReport,
    WebhookSecret,
    WorkflowDefinition,
    WorkflowDescription,
    WorkflowSummary,
    WorkflowValidation,
)
from .sse import SSEDecoder

__all__ = ["Client", "Run", "V2Run"]

T = TypeVar("T")
S = TypeVar("S", bound=StatusLike)


class _RunBase(Generic[S]):
    """What :class:`Run` and :class:`V2Run` share: the handle, and waiting."""

    def __init__(self, client: "Client", handle: RunHandle) -> None:
        self._client = client
        #: The run request's answer.
        self.handle: RunHandle = handle
        #: The run id (``wr_...`` or ``gen_...``).
        self.id: str = handle.id
        #: Why parts of the input were ignored (linked parameters), usually empty.
        self.warnings: List[str] = list(handle.warnings)
        #: The final status once known (from ``Prefer: wait``, or after :meth:`wait`).
        self.final_status: Optional[S] = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id!r})"

    @property
    def raw(self) -> Dict[str, Any]:
        """The run request's JSON answer."""
        return self.handle.raw

    def status(self) -> S:  # pragma: no cover - overridden
        raise NotImplementedError

    def _final_from_event(self, event: StatusEvent) -> S:  # pragma: no cover - overridden
        raise NotImplementedError

    def cancel(self) -> RunStatus:
        """Cancels the run (``POST /api/v3/cancel/{id}``); returns its v3 status."""
        return self._client.cancel(self.id)

    def events(self, last_event_id: Optional[str] = None) -> Iterator[RunEvent]:
        """The run's live events (see :meth:`Client.events`)."""
        return self._client.events(self.id, last_event_id=last_event_id)

    def wait(self, timeout: Optional[float] = None, poll_interval: float = 1.0, use_events: bool = True) -> S:
        """Waits until the run has ended; returns its final status (succeeded, failed or
        canceled: check ``.succeeded``; a failed run is not an exception).

        Args:
            timeout: Seconds to wait at most (``None``: no limit). The asynchronous client
                stops at it exactly; the synchronous one checks it on the events stream
                whenever data arrives (at least every keep-alive, 15 s) and by the read
                timeout, so it may be exceeded there by a few seconds.
            poll_interval: Seconds between status requests when polling.
            use_events: Follow the events stream (``GET /api/v3/status/{id}/events``) and
                fall back to polling when the server does not offer it or it keeps
                dropping; ``False`` polls from the start.

        Raises:
            WaitTimeout: the run had not ended within ``timeout``.
        """
        if self.final_status is not None:
            return self.final_status
        check_poll_interval(poll_interval)
        deadline = None if timeout is None else time.monotonic() + timeout
        if use_events:
            try:
                final = self._wait_events(deadline, timeout)
            except EventStreamError:
                final = None  # fall back to polling
            if final is not None:
                self.final_status = final
                return final
        while True:
            try:
                current = self.status()
            except RateLimited as e:
                # Too many requests with this key: wait as told, then poll again.
                left = None if deadline is None else deadline - time.monotonic()
                pause = float(e.retry_after or poll_interval)
                if left is not None and left <= pause:
                    raise WaitTimeout(self.id, timeout or 0.0) from e
                time.sleep(pause)
                continue
            if current.done:
                self.final_status = current
                return current
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise WaitTimeout(self.id, timeout or 0.0, current)
            time.sleep(poll_interval if remaining is None else min(poll_interval, remaining))

    def _wait_events(self, deadline: Optional[float], timeout: Optional[float]) -> Optional[S]:
        """The final status from the events stream; ``None`` when the stream ended without it
        (the caller polls then). Past ``deadline``, :class:`WaitTimeout`: the stream checks it
        whenever data arrives, and the asynchronous client also cancels at it exactly."""
        stream = self._client._event_stream(self.id, None, deadline=deadline, timeout=timeout)
        scope = calls.no_cancel_scope(None if deadline is None else max(0.0, deadline - time.monotonic()))
        try:
            with scope:
                for event in stream:
                    if isinstance(event, StatusEvent):
                        final = self._final_from_event(event)
                        return final if final.done else None
            if scope.cancelled_caught:
                raise WaitTimeout(self.id, timeout or 0.0)
            return None
        finally:
            stream.close()


class Run(_RunBase[RunStatus]):
    """A v3 run (``Client.run`` / ``Client.run_workflow``)."""

    def status(self) -> RunStatus:
        """The current v3 status (``GET /api/v3/status/{id}``)."""
        return self._client.status(self.id)

    def _final_from_event(self, event: StatusEvent) -> RunStatus:
        return event.status


class V2Run(_RunBase[V2Status]):
    """A v2 run; :meth:`status` and :meth:`wait` answer the family's v2 status object."""

    def __init__(self, client: "Client", handle: RunHandle, family: str) -> None:
        super().__init__(client, handle)
        #: The v2 family (``tryon``, ``tryon_pro``, ``virtual_model``, ``fabric``,
        #: ``sketch_to_dress``).
        self.family = family

    def status(self) -> V2Status:
        """The current v2 status (``GET /api/v2/{family}/status/{id}``)."""
        return self._client.v2_status(self.family, self.id)

    def _final_from_event(self, event: StatusEvent) -> V2Status:
        return self.status()


class Client:
    """A synchronous client of the Atelier HTTP interface (v3 and v2).

    Args:
        base_url: The server, e.g. ``http://127.0.0.1:8080`` (default: ``ATELIER_URL``).
        api_key: The account's API key (default: ``ATELIER_API_KEY``); sent as
            ``X-API-KEY`` on every request.
        timeout: Seconds for each request (connect, read, write); ``None`` for no limit.
        http_client: An ``httpx.Client`` to use instead of a new one (not closed by
            :meth:`close`); useful for proxies, custom TLS or a mock transport.

    Use it as a context manager (``with``), or call :meth:`close`. Transport failures raise
    ``httpx.TransportError``; error answers raise :class:`atelier_client.AtelierError`
    subclasses.
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        timeout: Optional[float] = calls.DEFAULT_TIMEOUT,
        http_client: Optional[httpx.Client] = None,
    ) -> None:
        self.base_url, self._api_key = calls.settings(base_url, api_key)
        self.timeout = timeout
        self._owns_http = http_client is None
        self._http = http_client if http_client is not None else httpx.Client(timeout=timeout)

    def __repr__(self) -> str:
        return f"Client(base_url={self.base_url!r})"

    # --- plumbing --------------------------------------------------------------------

    def close(self) -> None:
        """Closes the connections (unless the ``httpx.Client`` was given)."""
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _headers(self, extra: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
        headers = {"X-API-KEY": self._api_key, "User-Agent": calls.USER_AGENT}
        if extra:
            headers.update(extra)
        return headers

    def _timeout(self, extra: float = 0.0) -> Optional[float]:
        return None if self.timeout is None else self.timeout + extra

    def _call(self, call: Call[T]) -> T:
        response = self._http.request(
            call.method,
            self.base_url + call.path,
            json=call.json,
            content=call.content,
            params=call.params,
            headers=self._headers(call.headers),
            timeout=self._timeout(call.extra_timeout),
        )
        calls.check(response)
        return call.parse(response)

    # --- v3 runs -----------------------------------------------------------------------

    def run(
        self,
        tool: str,
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
    ) -> Run:
        """Starts a single-tool run (``POST /api/v3/run`` with ``type: node``).

        Args:
            tool: The tool name (``upscale``, ``virtual_tryon``, ...).
            input: The tool's parameters; images as URLs, data URIs or base64.
            webhook_url: Where to POST signed notifications of the run.
            webhook_events: Which: ``"completed"`` (default on the server) and/or ``"node"``.
            idempotency_key: Sent as ``Idempotency-Key``: the same key and body within 24 h
                return the first answer and start nothing.
            wait: 1..60: ask the server to hold the answer until the run ends, at most that
                many seconds (``Prefer: wait=N``); when it does, the returned run carries
                ``final_status`` and :meth:`Run.wait` returns at once.
            priority: The lane: ``"interactive"`` (someone waits for it), ``"normal"`` or
                ``"bulk"``; unset, the API key's lane (normal unless set).
            start_within_secs: 1..86400: a node no worker started within this many seconds
                of its queueing fails ``NotStarted``, not charged; unset, no limit.
            cache: ``False`` runs every node afresh; unset, a node this account ran with
                the same tool, parameters, seed and images is filled from the result cache
                (the same outputs, charged nothing).
            retention_secs: How long the outputs are kept after the run ended, in seconds,
                within the server's range (by default 0 to 3 days; 422 InvalidInput
                otherwise); unset, the API key's retention, else the server's default.
                ``0`` is zero retention: the outputs come back inline as ``data:`` URLs in
                the final status, webhooks and events, are never stored, and are dropped
                after a short hold (then the status has ``outputs_kept=False``).

        Returns:
            The :class:`Run` (``.id``, ``.warnings``, ``.wait()``, ``.cancel()``).
        """
        handle = self._call(
            calls.run(
                "node",
                tool,
                input,
                webhook_url=webhook_url,
                webhook_events=webhook_events,
                idempotency_key=idempotency_key,
                wait=wait,
                priority=priority,
                start_within_secs=start_within_secs,
                cache=cache,
                retention_secs=retention_secs,
            )
        )
        return self._run(handle)

    def run_workflow(
        self,
        name: str,
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
    ) -> Run:
        """Starts a saved workflow (``POST /api/v3/run`` with ``type: workflow``).

        ``input`` keys are ``node.param`` or the workflow's variable names (see
        :meth:`workflow`'s ``inputs``). The options are those of :meth:`run`.
        """
        handle = self._call(
            calls.run(
                "workflow",
                name,
                input,
                webhook_url=webhook_url,
                webhook_events=webhook_events,
                idempotency_key=idempotency_key,
                wait=wait,
                priority=priority,
                start_within_secs=start_within_secs,
                cache=cache,
                retention_secs=retention_secs,
            )
        )
        return self._run(handle)

    def _run(self, handle: RunHandle) -> Run:
        run = Run(self, handle)
        if handle.status is not None and handle.status.done:
            run.final_status = handle.status
        return run

    def status(self, run_id: str) -> RunStatus:
        """``GET /api/v3/status/{run_id}``: a :class:`WorkflowRunStatus` for ``wr_`` ids, a
        :class:`NodeRunStatus` for ``gen_`` ids (also a node of a workflow run)."""
        return self._call(calls.status(run_id))

    def cancel(self, run_id: str) -> RunStatus:
        """``POST /api/v3/cancel/{run_id}``: cancels an unfinished run (a finished one is
        left as it is); returns its status."""
        return self._call(calls.cancel(run_id))

    def delete_run(self, run_id: str) -> Deletion:
        """``DELETE /api/v3/runs/{run_id}``: deletes a finished run's outputs and stored inputs
        now (its ledger lines stay); reads of it then raise :class:`Deleted`. An unfinished run
        raises :class:`Conflict`: cancel it first."""
        return self._call(calls.delete_run(run_id))

    def runs(
        self,
        limit: Optional[int] = None,
        before: Optional[int] = None,
        status: Optional[str] = None,
        target: Optional[str] = None,
    ) -> RunList:
        """``GET /api/v3/runs``: one page of the account's runs, newest first.

        Args:
            limit: Runs per page, 1..100 (server default 20).
            before: The previous page's ``next_before``.
            status: Only runs in this state (``queued``, ``running``, ``succeeded``, ...).
            target: Only runs of this tool or workflow.
        """
        return self._call(calls.runs(limit=limit, before=before, status=status, target=target))

    def iter_runs(
        self, *, page_size: Optional[int] = None, status: Optional[str] = None, target: Optional[str] = None
    ) -> Iterator[RunSummary]:
        """Every run of the account, newest first, page after page."""
        before: Optional[int] = None
        while True:
            page = self.runs(limit=page_size, before=before, status=status, target=target)
            for run in page.runs:
                yield run
            if page.next_before is None or not page.runs:
                return
            before = page.next_before

    def events(self, run_id: str, last_event_id: Optional[str] = None) -> Iterator[RunEvent]:
        """The run's live events (``GET /api/v3/status/{run_id}/events``, Server-Sent Events).

        Yields a :class:`NodeEvent` per node state or progress change, then one
        :class:`StatusEvent` with the final status, and ends. If the connection drops
        before that, it reconnects with ``Last-Event-ID`` and goes on where it stopped.

        Args:
            last_event_id: Resume after this event (an ``event_id`` seen earlier).

        Raises:
            RunNotFound: no such run.
            EventStreamError: the server does not offer the stream, or it kept dropping.
        """
        return self._event_stream(run_id, last_event_id)

    def batch_events(self, batch_id: str, last_event_id: Optional[str] = None) -> Iterator[BatchEvent]:
        """The batch's live events (``GET /api/v3/batches/{batch_id}/events``).

        Yields a :class:`BatchEvent` ``progress`` each time its items' counts change, then
        one ``status`` (``event.final``) when it is finished or canceled, and ends;
        reconnecting as :meth:`events` does.

        Raises:
            BatchNotFound: no such batch of the account.
            EventStreamError: the server does not offer the stream, or it kept dropping.
        """
        return self._event_stream(batch_id, last_event_id, batch=True)

    def _event_stream(
        self,
        run_id: str,
        last_event_id: Optional[str],
        *,
        deadline: Optional[float] = None,
        timeout: Optional[float] = None,
        max_reconnects: int = 5,
        batch: bool = False,
    ) -> Generator[Any, None, None]:
        """A run's events (a batch's with ``batch=True``), reconnecting until the last."""
        url = self.base_url + (calls.batch_events_path(run_id) if batch else calls.events_path(run_id))
        parse = calls.to_batch_event if batch else calls.to_run_event
        retry = calls.DEFAULT_RETRY_SECONDS
        failures = 0

        def remaining() -> Optional[float]:
            return None if deadline is None else deadline - time.monotonic()

        def expired() -> WaitTimeout:
            return WaitTimeout(run_id, timeout or 0.0)

        while True:
            left = remaining()
            if left is not None and left <= 0:
                raise expired()
            read = calls.EVENTS_READ_TIMEOUT if left is None else max(0.05, min(calls.EVENTS_READ_TIMEOUT, left))
            decoder = SSEDecoder(last_event_id)
            progressed = False
            try:
                with self._http.stream(
                    "GET",
                    url,
                    headers=self._headers(calls.events_headers(last_event_id)),
                    timeout=calls.events_timeout(self.timeout, read),
                ) as response:
                    if not calls.is_event_stream(response):
                        response.read()
                        raise calls.open_error(response)
                    for chunk in response.iter_bytes():
                        for sse in decoder.feed(chunk):
                            progressed = True
                            last_event_id = decoder.last_event_id
                            event = parse(sse)
                            yield event
                            if isinstance(event, StatusEvent) or (isinstance(event, BatchEvent) and event.final):
                                return
                        if decoder.retry is not None:
                            retry = decoder.retry / 1000.0
                        left = remaining()
                        if left is not None and left <= 0:
                            raise expired()
            except httpx.TimeoutException:
                left = remaining()
                if left is not None and left <= 0:
                    raise expired() from None
            except httpx.TransportError:
                pass
            # The stream ended before the status event: reconnect after `retry`.
            last_event_id = decoder.last_event_id
            failures = 0 if progressed else failures + 1
            if failures > max_reconnects:
                raise EventStreamError(f"the events stream of {run_id} kept closing before the final status")
            left = remaining()
            time.sleep(retry if left is None else max(0.0, min(retry, left)))

    # --- discovery, pricing, workflows -------------------------------------------------

    def tools(self) -> List[Tool]:
        """``GET /api/v3/tools``: every tool, its parameters, price rule and fidelity."""
        return self._call(calls.tools())

    def estimate(self, tool: str, input: Mapping[str, Any]) -> Estimate:
        """``POST /api/v3/estimate`` for a tool run: its price; nothing is reserved."""
        return self._call(calls.estimate("node", tool, input))

    def estimate_workflow(self, name: str, input: Mapping[str, Any]) -> Estimate:
        """``POST /api/v3/estimate`` for a workflow run."""
        return self._call(calls.estimate("workflow", name, input))

    def workflow(self, name: str) -> WorkflowDescription:
        """``GET /api/v3/workflow/{name}``: the graph, its inputs and a sample run body."""
        return self._call(calls.workflow(name))

    def workflows(self) -> List[WorkflowSummary]:
        """``GET /api/v3/workflows``: the account's workflows and the system templates."""
        return self._call(calls.workflows())

    def save_workflow(
        self, name: str, definition: Union[WorkflowDefinition, Mapping[str, Any]]
    ) -> WorkflowDescription:
        """``PUT /api/v3/workflow/{name}``: saves (or replaces) a workflow of the account;
        returns its description."""
        return self._call(calls.save_workflow(name, definition))

    def delete_workflow(self, name: str) -> DeletedWorkflow:
        """``DELETE /api/v3/workflow/{name}``. System templates raise ``ReadOnlyTemplate``."""
        return self._call(calls.delete_workflow(name))

    def validate_workflow(
        self, definition: Union[WorkflowDefinition, Mapping[str, Any]], name: Optional[str] = None
    ) -> WorkflowValidation:
        """``POST /api/v3/workflows/validate``: every problem of a document (saves nothing);
        ``name`` is the name it would be saved under."""
        return self._call(calls.validate_workflow(definition, name))

    # --- uploads -----------------------------------------------------------------------

    def upload(self, image: Union[bytes, str, "os.PathLike[str]"]) -> Upload:
        """``POST /api/v3/uploads``: sends an image once, by its bytes (or the file at a
        path). Give ``upload.input`` (``upload:<id>``) to an image input until
        ``upload.expires_at``; the same bytes again are the same upload, kept longer. A path
        ending in ``.jsonl`` or ``.csv`` is a batch's items file (``items_file``)."""
        data = image if isinstance(image, (bytes, bytearray)) else Path(image).read_bytes()
        return self._call(calls.upload(bytes(data), calls.items_media_type(image)))

    def upload_direct(self, image: Union[bytes, str, "os.PathLike[str]"]) -> Upload:
        """A direct upload (S3 storage): the bytes go from here straight to the bucket, not
        through the API. Begins it (:meth:`begin_direct_upload`), ``PUT``s the bytes to the
        signed URL and completes it (:meth:`complete_direct_upload`), which checks them as
        :meth:`upload` does; a path ending in ``.jsonl`` or ``.csv`` is an items file. A
        server on local storage raises ``Conflict``: use :meth:`upload` there."""
        data = image if isinstance(image, (bytes, bytearray)) else Path(image).read_bytes()
        media_type = calls.items_media_type(image)
        direct = self.begin_direct_upload(media_type)
        headers = {"Content-Type": media_type} if media_type else {}
        sent = self._http.put(direct.url, content=bytes(data), headers=headers, timeout=self._timeout(0.0))
        if sent.status_code >= 300:
            raise AtelierError(
                f"the storage answered HTTP {sent.status_code}", status_code=sent.status_code, body=sent.text
            )
        return self.complete_direct_upload(direct.id)

    def begin_direct_upload(self, content_type: Optional[str] = None) -> DirectUpload:
        """``POST /api/v3/uploads/direct``: a signed URL of the storage to ``PUT`` the bytes
        to (``content_type``: ``None`` for an image, or an items file's media type)."""
        return self._call(calls.begin_direct_upload(content_type))

    def complete_direct_upload(self, direct_id: str) -> Upload:
        """``POST /api/v3/uploads/direct/{id}``: the bytes sent to the URL, checked and kept
        as an upload."""
        return self._call(calls.complete_direct_upload(direct_id))

    def get_upload(self, upload_id: str) -> Upload:
        """``GET /api/v3/uploads/{id}``: an upload of this account, while runs may name it."""
        return self._call(calls.get_upload(upload_id))

    # --- batches -----------------------------------------------------------------------

    def create_batch(
        self,
        target: str,
        items: Iterable[Mapping[str, Any]] = (),
        *,
        items_file: Optional[str] = None,
        workflow: bool = False,
        input: Optional[Mapping[str, Any]] = None,
        priority: Optional[str] = None,
        cache: Optional[bool] = None,
        webhook_url: Optional[str] = None,
        idempotency_key: Optional[str] = None,
        retention_secs: Optional[int] = None,
    ) -> Batch:
        """``POST /api/v3/batches``: runs the tool ``target`` (a saved workflow with
        ``workflow=True``) once per item, the whole price reserved up front
        (:class:`InsufficientTokens` with the total otherwise).

        Args:
            items: Each ``{"input": {...}, "ref": "SKU-1"}``; image values are URLs or
                ``upload:<id>`` (inline images are refused in a batch).
            items_file: Instead of ``items``, an uploaded JSONL or CSV file
                (``upload.input`` of :meth:`upload` given a ``.jsonl`` or ``.csv`` path).
            input: Values every item gets (an item's own value wins).
            priority: The items' lane (``bulk`` by default).
            cache: ``False`` runs every node afresh.
            retention_secs: How long each item's outputs are kept after its run ended, in
                seconds, as in :meth:`run` but at least 1 (a batch's results are read after
                it ends); unset, the API key's or server's default.
            webhook_url: Receives a signed ``batch.completed`` POST
                (:class:`WebhookBatchEvent`) each time the batch ends.
            idempotency_key: The same batch sent again with it answers the first one.
        """
        body = calls.batch_body(
            target,
            items,
            items_file=items_file,
            workflow=workflow,
            input=input,
            priority=priority,
            cache=cache,
            webhook_url=webhook_url,
            retention_secs=retention_secs,
        )
        return self._call(calls.create_batch(body, idempotency_key))

    def batch(self, batch_id: str) -> Batch:
        """``GET /api/v3/batches/{batch_id}``: its items by state, tokens and progress."""
        return self._call(calls.batch(batch_id))

    def batches(self, limit: Optional[int] = None, before: Optional[int] = None) -> BatchList:
        """``GET /api/v3/batches``: a page of the account's batches, newest first."""
        return self._call(calls.batches(limit=limit, before=before))

    def batch_items(
        self, batch_id: str, status: Optional[str] = None, after: Optional[int] = None, limit: Optional[int] = None
    ) -> BatchItemList:
        """``GET /api/v3/batches/{batch_id}/items``: a page of items in order (``status``:
        only those; ``after``: the previous page's ``next_after``)."""
        return self._call(calls.batch_items(batch_id, status=status, after=after, limit=limit))

    def cancel_batch(self, batch_id: str) -> Batch:
        """``POST /api/v3/batches/{batch_id}/cancel``: pending items will not start, its runs
        are canceled and what it holds is given back."""
        return self._call(calls.cancel_batch(batch_id))

    def batch_webhook_deliveries(self, batch_id: str) -> List[WebhookDelivery]:
        """``GET /api/v3/batches/{batch_id}/webhooks``: the batch's ``batch.completed``
        messages and every attempt."""
        return self._call(calls.batch_webhook_deliveries(batch_id))

    def retry_batch(self, batch_id: str) -> Batch:
        """``POST /api/v3/batches/{batch_id}/retry``: runs the failed items again (their
        price reserved again); ``retried`` says how many."""
        return self._call(calls.retry_batch(batch_id))

    def delete_batch(self, batch_id: str) -> Deletion:
        """``DELETE /api/v3/batches/{batch_id}``: deletes a batch that ended (finished or
        canceled) with every run of it, their outputs and stored inputs now (the ledger lines
        stay); reads of the batch and its runs then raise :class:`Deleted`. A running batch
        raises :class:`Conflict`: cancel it first."""
        return self._call(calls.delete_batch(batch_id))

    def download_batch_results(self, batch_id: str, path: Union[str, "os.PathLike[str]"]) -> int:
        """``GET /api/v3/batches/{batch_id}/results.jsonl`` to ``path`` (a line of JSON per
        item, :class:`BatchItem`); returns the bytes written."""
        return self._save(f"/api/v3/batches/{calls.seg(batch_id)}/results.jsonl", path)

    def download_batch_zip(self, batch_id: str, path: Union[str, "os.PathLike[str]"]) -> int:
        """``GET /api/v3/batches/{batch_id}/results.zip`` to ``path``: every succeeded item's
        outputs, under its ref (or ``item-<index>``) and output name."""
        return self._save(f"/api/v3/batches/{calls.seg(batch_id)}/results.zip", path)

    def _save(self, url_path: str, path: Union[str, "os.PathLike[str]"]) -> int:
        """Streams an answer to ``path`` through ``path.part``, renamed at the end."""
        target = Path(path)
        part = target.with_name(target.name + ".part")
        written = 0
        with self._http.stream(
            "GET", self.base_url + url_path, headers=self._headers({}), timeout=self._timeout(0.0)
        ) as response:
            if response.status_code >= 400:
                response.read()
                calls.check(response)
            with open(part, "wb") as out:
                for chunk in response.iter_bytes():
                    out.write(chunk)
                    written += len(chunk)
        os.replace(part, target)
        return written

    # --- v2 ----------------------------------------------------------------------------

    def balance(self) -> int:
        """``GET /api/v2/user/tokens``: the available token balance."""
        return self._call(calls.balance())

    def v2_run(
        self,
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
    ) -> V2Run:
        """``POST /api/v2/{family}/run``; ``family`` is one of ``tryon``, ``tryon_pro``,
        ``virtual_model``, ``fabric``, ``sketch_to_dress`` (or its path, ``tryon/pro``...).

        ``webhook_url`` / ``webhook_events`` as in :meth:`run`; a ``completed`` delivery of a
        v2 run carries the family's v2 status. ``priority``, ``start_within_secs``, ``cache``
        and ``retention_secs`` as in :meth:`run`."""
        handle = self._call(
            calls.v2_run(
                family,
                input,
                webhook_url=webhook_url,
                webhook_events=webhook_events,
                idempotency_key=idempotency_key,
                priority=priority,
                start_within_secs=start_within_secs,
                cache=cache,
                retention_secs=retention_secs,
            )
        )
        return V2Run(self, handle, family)

    def v2_status(self, family: str, run_id: str) -> V2Status:
        """``GET /api/v2/{family}/status/{run_id}`` (only runs of that family)."""
        return self._call(calls.v2_status(family, run_id))

    # --- spend limits ------------------------------------------------------------------

    def audit(
        self,
        action: Optional[str] = None,
        since: Optional[str] = None,
        before: Optional[int] = None,
        limit: Optional[int] = None,
    ) -> AuditList:
        """``GET /api/v3/audit`` (the ``keys`` scope): a page of the account's audit log,
        newest first; filter by ``action`` prefix (``"key."``) and ``since`` (a time)."""
        return self._call(calls.audit(action, since, before, limit))

    def usage(self) -> SpendReport:
        """``GET /api/v3/usage``: the spend limits of this key and of its account (tokens per
        UTC day and month, the key's cap on running nodes) and what each used."""
        return self._call(calls.usage())

    # --- webhooks ----------------------------------------------------------------------

    def webhook_secret(self) -> WebhookSecret:
        """``GET /api/v3/webhooks/secret``: the account's signing secret (``whsec_...``)."""
        return self._call(calls.webhook_secret())

    def rotate_webhook_secret(self) -> WebhookSecret:
        """``POST /api/v3/webhooks/secret/rotate``: a new secret; the previous one also
        signs until ``previous_key_expires_at``."""
        return self._call(calls.rotate_webhook_secret())

    def webhook_endpoint(self) -> WebhookEndpoint:
        """``GET /api/v3/webhooks/endpoint``: the account's own endpoint, where its
        ``spend.threshold`` events go, and its latest deliveries."""
        return self._call(calls.webhook_endpoint())

    def set_webhook_endpoint(self, url: str) -> WebhookEndpoint:
        """``PUT /api/v3/webhooks/endpoint``: sets the account's endpoint."""
        return self._call(calls.set_webhook_endpoint(url))

    def remove_webhook_endpoint(self) -> WebhookEndpoint:
        """``DELETE /api/v3/webhooks/endpoint``: removes it (spend alerts are then not sent)."""
        return self._call(calls.remove_webhook_endpoint())

    def webhook_deliveries(self, run_id: str) -> List[WebhookDelivery]:
        """``GET /api/v3/runs/{run_id}/webhooks``: the run's webhook messages and attempts."""
        return self._call(calls.webhook_deliveries(run_id))

    def replay_delivery(self, run_id: str, delivery: str) -> WebhookDelivery:
        """``POST /api/v3/runs/{run_id}/webhooks/{delivery}/replay``: sends one of the run's
        deliveries again, now (a new attempt with the same ``webhook-id``); the delivery as
        it is then. ``Conflict`` while it is pending, ``DeliveryNotFound`` for an id the run
        does not have."""
        return self._call(calls.replay_delivery(run_id, delivery))
