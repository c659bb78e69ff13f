"""Errors raised by the client.

Every non-2xx answer of the server becomes an :class:`AtelierError`, or the subclass named
after the error's ``name`` (``{"error": {"name": "RunNotFound", ...}}`` raises
:class:`RunNotFound`). A name this version does not know still raises :class:`AtelierError`,
with ``.name`` set, so that code written against a newer server keeps working.

Failures *during* execution are not HTTP errors: a run that fails is a status answer with
``overall_status == "failed"`` and an ``error`` value (:class:`atelier_client.models.RunErrorInfo`).
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Type

__all__ = [
    "AtelierError",
    "InvalidRequest",
    "MissingInputs",
    "Unauthorized",
    "InsufficientTokens",
    "SpendLimitReached",
    "UnknownTool",
    "WorkflowNotFound",
    "RunNotFound",
    "UploadNotFound",
    "BatchNotFound",
    "DeliveryNotFound",
    "PayloadTooLarge",
    "InvalidInput",
    "InvalidImage",
    "ReadOnlyTemplate",
    "IdempotencyConflict",
    "IdempotencyKeyReused",
    "RateLimited",
    "ConcurrencyLimited",
    "QueueFull",
    "SessionRequired",
    "Forbidden",
    "KeyNotFound",
    "Conflict",
    "FileNotFound",
    "OutputExpired",
    "FileUrlInvalid",
    "Deleted",
    "InternalError",
    "ERROR_CLASSES",
    "ERROR_FIELDS",
    "error_from_response",
    "WebhookVerificationError",
    "WaitTimeout",
    "EventStreamError",
]

#: The fields an error object may carry (the OpenAPI ``Error`` schema), each exposed as an
#: attribute of :class:`AtelierError` (``None`` when absent).
ERROR_FIELDS = (
    "name",
    "message",
    "missing",
    "field",
    "reason",
    "allowed",
    "required",
    "balance",
    "retry_after",
    "limit",
    "applies_to",
    "period",
    "used",
    "resets_at",
)


class AtelierError(Exception):
    """An error answer of the server (any non-2xx status).

    Attributes:
        name: The error's stable machine name (``"RunNotFound"``), or ``None`` when the body
            carried no error object (a proxy's HTML page, an empty 502, ...).
        message: The human-readable message.
        status_code: The HTTP status.
        body: The decoded JSON body (``{"error": {...}}`` or ``{"id": null, "error": {...}}``),
            or the raw text when it was not JSON.
        error: The error object itself (``body["error"]``), ``{}`` when there was none.
        missing: ``MissingInputs``: the absent input keys.
        field, reason, allowed: ``InvalidInput`` / ``InvalidImage``: which value, why, and
            the allowed values of a select.
        required, balance: ``InsufficientTokens``: the run's price and the balance.
        retry_after: ``RateLimited`` / ``ConcurrencyLimited`` / ``QueueFull``: seconds to wait
            (from the body, else the ``Retry-After`` header).
        limit: ``ConcurrencyLimited``: the account's cap on unfinished runs; ``QueueFull``:
            its cap on runs waiting to start; ``SpendLimitReached``: the spend limit, in tokens.
        applies_to, period, used, resets_at: ``SpendLimitReached``: whose limit (``"key"`` or
            ``"account"``), its period (``"day"`` or ``"month"``, UTC), the tokens used in it,
            and when it resets (UTC, without an offset).
        headers: The response headers.
    """

    #: The error name this class stands for (``None`` on the base class).
    error_name: Optional[str] = None

    def __init__(
        self,
        message: str,
        *,
        name: Optional[str] = None,
        status_code: Optional[int] = None,
        body: Any = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        super().__init__(message)
        self.message: str = message
        self.name: Optional[str] = name if name is not None else self.error_name
        self.status_code: Optional[int] = status_code
        self.body: Any = body
        self.headers: Dict[str, str] = dict(headers or {})
        err = body.get("error") if isinstance(body, dict) else None
        self.error: Dict[str, Any] = dict(err) if isinstance(err, dict) else {}
        self.missing: Optional[List[str]] = self.error.get("missing")
        self.field: Optional[str] = self.error.get("field")
        self.reason: Optional[str] = self.error.get("reason")
        self.allowed: Optional[List[Any]] = self.error.get("allowed")
        self.required: Optional[int] = self.error.get("required")
        self.balance: Optional[int] = self.error.get("balance")
        self.limit: Optional[int] = self.error.get("limit")
        self.applies_to: Optional[str] = self.error.get("applies_to")
        self.period: Optional[str] = self.error.get("period")
        self.used: Optional[int] = self.error.get("used")
        self.resets_at: Optional[str] = self.error.get("resets_at")
        retry_after = self.error.get("retry_after")
        if retry_after is None:
            header = {k.lower(): v for k, v in self.headers.items()}.get("retry-after")
            if header is not None and header.strip().isdigit():
                retry_after = int(header.strip())
        self.retry_after: Optional[int] = retry_after

    def __str__(self) -> str:
        parts = []
        if self.status_code is not None:
            parts.append(str(self.status_code))
        if self.name:
            parts.append(self.name)
        prefix = " ".join(parts)
        return f"{prefix}: {self.message}" if prefix else self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, status_code={self.status_code!r}, message={self.message!r})"


class InvalidRequest(AtelierError):
    """400: the body is not what the endpoint takes (not JSON, wrong types, unknown fields)."""

    error_name = "InvalidRequest"


class MissingInputs(AtelierError):
    """400: mandatory inputs are absent; ``.missing`` lists them. Nothing was created."""

    error_name = "MissingInputs"


class Unauthorized(AtelierError):
    """401: no ``X-API-KEY``, or an unknown or revoked key."""

    error_name = "Unauthorized"


class InsufficientTokens(AtelierError):
    """402: the balance is lower than the run's price (``.required``, ``.balance``)."""

    error_name = "InsufficientTokens"


class SpendLimitReached(AtelierError):
    """402: the price would cross a spend limit of the key or of its account (``.applies_to``,
    ``.period``, ``.limit``, ``.used``, ``.required``, ``.resets_at``); nothing ran."""

    error_name = "SpendLimitReached"


class UnknownTool(AtelierError):
    """404: no tool of that name."""

    error_name = "UnknownTool"


class WorkflowNotFound(AtelierError):
    """404: no workflow of that name for this account, nor a system template."""

    error_name = "WorkflowNotFound"


class RunNotFound(AtelierError):
    """404: no run of that id for this account (also another account's run)."""

    error_name = "RunNotFound"


class UploadNotFound(AtelierError):
    """404: no upload of that id for this account (never uploaded by it, or its time is
    over); in a run, ``.field`` is the image input that names it."""

    error_name = "UploadNotFound"


class BatchNotFound(AtelierError):
    """404: no batch of that id for this account (also another account's batch)."""

    error_name = "BatchNotFound"


class DeliveryNotFound(AtelierError):
    """404: the run has no webhook delivery of that id (``replay_delivery``)."""

    error_name = "DeliveryNotFound"


class PayloadTooLarge(AtelierError):
    """413: the request body is over the server's limit."""

    error_name = "PayloadTooLarge"


class InvalidInput(AtelierError):
    """422: a value fails its schema (``.field``, ``.reason``, ``.allowed``)."""

    error_name = "InvalidInput"


class InvalidImage(AtelierError):
    """422: an image value is not an accepted image (``.field``, ``.reason``)."""

    error_name = "InvalidImage"


class ReadOnlyTemplate(AtelierError):
    """409: system templates cannot be changed or deleted."""

    error_name = "ReadOnlyTemplate"


class IdempotencyConflict(AtelierError):
    """409: a request with the same ``Idempotency-Key`` is still being processed."""

    error_name = "IdempotencyConflict"


class IdempotencyKeyReused(AtelierError):
    """422: the ``Idempotency-Key`` was used for a different request."""

    error_name = "IdempotencyKeyReused"


class RateLimited(AtelierError):
    """429: too many requests with this key; wait ``.retry_after`` seconds."""

    error_name = "RateLimited"


class ConcurrencyLimited(AtelierError):
    """429: the account has ``.limit`` unfinished runs; retry once one has finished."""

    error_name = "ConcurrencyLimited"


class QueueFull(AtelierError):
    """429: the account has ``.limit`` runs waiting to start; retry once some have started."""

    error_name = "QueueFull"


class SessionRequired(AtelierError):
    """401 (console routes): no live console session."""

    error_name = "SessionRequired"


class Forbidden(AtelierError):
    """403: the API key does not hold the scope the operation needs (the message names it;
    nothing changed); on console routes also a change without the session's CSRF token."""

    error_name = "Forbidden"


class KeyNotFound(AtelierError):
    """404 (console routes): no API key of that id."""

    error_name = "KeyNotFound"


class Conflict(AtelierError):
    """409: the change conflicts with the current state."""

    error_name = "Conflict"


class FileNotFound(AtelierError):
    """404 (``/files/...``): no such output file."""

    error_name = "FileNotFound"


class OutputExpired(AtelierError):
    """410 (``/files/...``): the output's retention period is over."""

    error_name = "OutputExpired"


class FileUrlInvalid(AtelierError):
    """403 (``/files/...``, signed output URLs): the URL is unsigned, expired or not the
    service's; ``reason`` is ``unsigned``, ``expired`` or ``signature``. Read the run's status
    again for a fresh URL."""

    error_name = "FileUrlInvalid"


class Deleted(AtelierError):
    """410: the run (or an output of it) was deleted on request."""

    error_name = "Deleted"


class InternalError(AtelierError):
    """500: the server failed; the message never carries internal detail."""

    error_name = "InternalError"


#: Error name -> class. Every name the server documents (the OpenAPI ``Error.name`` enum, and
#: the ``/files`` errors of ``crates/api/src/error.rs``).
ERROR_CLASSES: Dict[str, Type[AtelierError]] = {
    cls.error_name: cls
    for cls in (
        InvalidRequest,
        MissingInputs,
        Unauthorized,
        InsufficientTokens,
        SpendLimitReached,
        UnknownTool,
        WorkflowNotFound,
        RunNotFound,
        UploadNotFound,
        BatchNotFound,
        DeliveryNotFound,
        PayloadTooLarge,
        InvalidInput,
        InvalidImage,
        ReadOnlyTemplate,
        IdempotencyConflict,
        IdempotencyKeyReused,
        RateLimited,
        ConcurrencyLimited,
        QueueFull,
        SessionRequired,
        Forbidden,
        KeyNotFound,
        Conflict,
        FileNotFound,
        OutputExpired,
        FileUrlInvalid,
        Deleted,
        InternalError,
    )
    if cls.error_name is not None
}


def error_from_response(status_code: int, body: Any, headers: Optional[Mapping[str, str]] = None) -> AtelierError:
    """Builds the typed error for a non-2xx answer.

    ``body`` is the decoded JSON (or the text when it was not JSON). The server's error shape
    is ``{"error": {"name", "message", ...}}``, and on run endpoints
    ``{"id": null, "error": {...}}``; both carry the object under ``error``.
    """
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict) and isinstance(err.get("name"), str):
        name: str = err["name"]
        message = err.get("message")
        if not isinstance(message, str):
            message = name
        cls = ERROR_CLASSES.get(name, AtelierError)
        return cls(message, name=name, status_code=status_code, body=body, headers=headers)
    text = body if isinstance(body, str) else ""
    message = f"HTTP {status_code}" + (f": {text.strip()[:500]}" if text.strip() else "")
    return AtelierError(message, name=None, status_code=status_code, body=body, headers=headers)


class WebhookVerificationError(Exception):
    """A webhook request failed verification: missing headers, a bad or stale timestamp, or
    no signature that matches the secret. Answer such a request with 400 and do not act on
    it."""


class WaitTimeout(TimeoutError):
    """:meth:`Run.wait` gave up before the run finished.

    Attributes:
        run_id: The run waited for.
        last_status: The last status seen, or ``None``.
    """

    def __init__(self, run_id: str, timeout: float, last_status: Any = None) -> None:
        super().__init__(f"run {run_id} did not finish within {timeout} s")
        self.run_id = run_id
        self.timeout = timeout
        self.last_status = last_status


class EventStreamError(Exception):
    """The events stream could not be read to its end (it kept dropping, or the server does
    not offer it). :meth:`Run.wait` falls back to polling on this error."""
