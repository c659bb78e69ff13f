"""Verifying Atelier's webhooks (the Standard Webhooks signature scheme).

A delivery is a ``POST`` with a JSON body and three headers:

- ``webhook-id``: the message id (``msg_...``), the same on every retry of a message;
- ``webhook-timestamp``: when it was sent, in Unix seconds;
- ``webhook-signature``: space-separated ``v1,<base64 signature>`` values, where each
  signature is ``HMAC-SHA256(key, f"{id}.{timestamp}.{body}")`` and ``key`` is the
  base64-decoded part of the secret ``whsec_<base64>``. While a rotated secret is still
  valid, the server signs with both the new and the previous secret; one match is enough.

Verify against the raw body bytes, before parsing them: a re-serialised body does not
match.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from typing import Any, Mapping, Optional, Union

from .errors import WebhookVerificationError

__all__ = ["verify_webhook", "sign_webhook", "WebhookVerificationError", "SECRET_PREFIX"]

#: The prefix of a webhook secret.
SECRET_PREFIX = "whsec_"


def _key(secret: str) -> bytes:
    if not isinstance(secret, str) or not secret:
        raise WebhookVerificationError("the webhook secret is empty")
    encoded = secret[len(SECRET_PREFIX) :] if secret.startswith(SECRET_PREFIX) else secret
    try:
        key = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as e:
        raise WebhookVerificationError("the webhook secret is not whsec_ followed by base64") from e
    if not key:
        raise WebhookVerificationError("the webhook secret is empty")
    return key


def _bytes(body: Union[bytes, bytearray, memoryview, str]) -> bytes:
    if isinstance(body, str):
        return body.encode("utf-8")
    return bytes(body)


def sign_webhook(secret: str, msg_id: str, timestamp: int, body: Union[bytes, str]) -> str:
    """The ``webhook-signature`` value (``v1,<base64>``) for a message: what the server
    sends. Useful to test a receiver."""
    mac = hmac.new(_key(secret), b"%s.%d.%s" % (msg_id.encode("utf-8"), int(timestamp), _bytes(body)), hashlib.sha256)
    return "v1," + base64.b64encode(mac.digest()).decode("ascii")


def _header(headers: Mapping[str, str], name: str) -> str:
    value: Optional[Any] = None
    # Mappings such as http.client.HTTPMessage or httpx.Headers are case-insensitive
    # already; a plain dict may not be.
    try:
        value = headers.get(name)
    except Exception:  # noqa: BLE001 - an unusual mapping: fall back to a scan
        value = None
    if value is None:
        for k, v in headers.items():
            if isinstance(k, str) and k.lower() == name:
                value = v
                break
    if value is None or (isinstance(value, str) and not value.strip()):
        raise WebhookVerificationError(f"missing header {name}")
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    return str(value).strip()


def verify_webhook(
    secret: str,
    headers: Mapping[str, str],
    body: Union[bytes, str],
    tolerance: int = 300,
    *,
    now: Optional[float] = None,
) -> Any:
    """Checks a webhook request and returns its parsed JSON body.

    Args:
        secret: The account's secret, ``whsec_<base64>`` (see :meth:`Client.webhook_secret`).
        headers: The request headers (any mapping; names are matched case-insensitively).
        body: The raw request body, exactly as received.
        tolerance: Largest accepted distance, in seconds, between ``webhook-timestamp`` and
            now, in either direction (guards against replays).
        now: The current Unix time (for tests); default ``time.time()``.

    Returns:
        The JSON body: for ``completed`` events the run's final status object, for ``node``
        events ``{"type": "node", "run_id", "node", "id", "status"}``.

    Raises:
        WebhookVerificationError: a header is missing, the timestamp is not an integer or is
            outside the tolerance, no ``v1`` signature matches, or the body is not JSON.
    """
    key = _key(secret)
    msg_id = _header(headers, "webhook-id")
    timestamp_text = _header(headers, "webhook-timestamp")
    signatures = _header(headers, "webhook-signature")
    if not timestamp_text.isdigit() or not timestamp_text.isascii():
        raise WebhookVerificationError("webhook-timestamp is not a Unix time in seconds")
    timestamp = int(timestamp_text)
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance:
        raise WebhookVerificationError("webhook-timestamp is too far from the current time")
    raw = _bytes(body)
    signed = b"%s.%s.%s" % (msg_id.encode("utf-8"), timestamp_text.encode("ascii"), raw)
    expected = hmac.new(key, signed, hashlib.sha256).digest()
    matched = False
    for candidate in signatures.split(" "):
        version, sep, encoded = candidate.partition(",")
        if not sep or version != "v1":
            continue
        try:
            given = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            continue
        # Compare every candidate (no early exit) in constant time.
        if hmac.compare_digest(given, expected):
            matched = True
    if not matched:
        raise WebhookVerificationError("no webhook-signature matches the secret")
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise WebhookVerificationError("the webhook body is not JSON") from e
