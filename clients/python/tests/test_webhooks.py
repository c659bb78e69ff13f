"""The Standard Webhooks verifier: published vector, own vectors, and every way to fail."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import pytest

from atelier_client import WebhookVerificationError, sign_webhook, verify_webhook

# The example of the Standard Webhooks specification.
SPEC_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SPEC_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
SPEC_TS = 1614265330
SPEC_BODY = b'{"test": 2432232314}'
SPEC_SIG = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

SECRET = "whsec_" + base64.b64encode(b"atelier test secret key 32 bytes").decode()
OTHER_SECRET = "whsec_" + base64.b64encode(b"another secret, not the right one").decode()
BODY = json.dumps({"workflow_run_id": "wr_abc", "overall_status": "succeeded"}).encode()


def headers(msg_id: str, ts: int, sig: str) -> dict:
    return {"webhook-id": msg_id, "webhook-timestamp": str(ts), "webhook-signature": sig}


def own_signature(secret: str, msg_id: str, ts: int, body: bytes) -> str:
    """Computed independently of the package."""
    key = base64.b64decode(secret[len("whsec_") :])
    mac = hmac.new(key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def test_published_example_verifies() -> None:
    assert sign_webhook(SPEC_SECRET, SPEC_ID, SPEC_TS, SPEC_BODY) == SPEC_SIG
    body = verify_webhook(SPEC_SECRET, headers(SPEC_ID, SPEC_TS, SPEC_SIG), SPEC_BODY, now=SPEC_TS + 10)
    assert body == {"test": 2432232314}


def test_own_vector_matches_an_independent_computation() -> None:
    ts = int(time.time())
    sig = own_signature(SECRET, "msg_1", ts, BODY)
    assert sign_webhook(SECRET, "msg_1", ts, BODY) == sig
    assert verify_webhook(SECRET, headers("msg_1", ts, sig), BODY)["overall_status"] == "succeeded"


def test_headers_are_case_insensitive_and_str_bodies_work() -> None:
    ts = int(time.time())
    sig = sign_webhook(SECRET, "msg_2", ts, BODY)
    upper = {"Webhook-Id": "msg_2", "WEBHOOK-TIMESTAMP": str(ts), "Webhook-Signature": sig}
    assert verify_webhook(SECRET, upper, BODY.decode())["workflow_run_id"] == "wr_abc"


@pytest.mark.parametrize(
    "change",
    ["body", "id", "timestamp", "secret"],
)
def test_tampering_is_rejected(change: str) -> None:
    ts = int(time.time())
    sig = sign_webhook(SECRET, "msg_3", ts, BODY)
    secret, msg_id, stamp, body = SECRET, "msg_3", ts, BODY
    if change == "body":
        body = BODY.replace(b"succeeded", b"failed")
    elif change == "id":
        msg_id = "msg_4"
    elif change == "timestamp":
        stamp = ts + 1
    else:
        secret = OTHER_SECRET
    with pytest.raises(WebhookVerificationError):
        verify_webhook(secret, headers(msg_id, stamp, sig), body)


def test_spec_example_with_a_tampered_body_is_rejected() -> None:
    with pytest.raises(WebhookVerificationError):
        verify_webhook(SPEC_SECRET, headers(SPEC_ID, SPEC_TS, SPEC_SIG), b'{"test": 2432232315}', now=SPEC_TS)


@pytest.mark.parametrize("offset", [-301, 301, -10_000, 10_000])
def test_timestamps_out_of_tolerance_are_rejected(offset: int) -> None:
    now = 1_700_000_000
    ts = now + offset
    sig = sign_webhook(SECRET, "msg_5", ts, BODY)
    with pytest.raises(WebhookVerificationError, match="timestamp"):
        verify_webhook(SECRET, headers("msg_5", ts, sig), BODY, now=now)


def test_timestamps_at_the_edge_of_tolerance_pass() -> None:
    now = 1_700_000_000
    for ts in (now - 300, now + 300):
        sig = sign_webhook(SECRET, "msg_6", ts, BODY)
        verify_webhook(SECRET, headers("msg_6", ts, sig), BODY, now=now)
    ts = now - 50
    sig = sign_webhook(SECRET, "msg_6", ts, BODY)
    with pytest.raises(WebhookVerificationError):
        verify_webhook(SECRET, headers("msg_6", ts, sig), BODY, tolerance=10, now=now)


def test_any_one_of_several_signatures_is_enough() -> None:
    """During a rotation the server signs with the new and the previous secret."""
    ts = int(time.time())
    old = sign_webhook(OTHER_SECRET, "msg_7", ts, BODY)
    new = sign_webhook(SECRET, "msg_7", ts, BODY)
    for sig in (f"{old} {new}", f"{new} {old}", f"v2,AAAA {new}", f"{new}  v1,!!notbase64"):
        assert verify_webhook(SECRET, headers("msg_7", ts, sig), BODY)["workflow_run_id"] == "wr_abc"
        assert verify_webhook(OTHER_SECRET, headers("msg_7", ts, f"{old} {new}"), BODY)
    wrong = sign_webhook("whsec_" + base64.b64encode(b"third").decode(), "msg_7", ts, BODY)
    with pytest.raises(WebhookVerificationError, match="signature"):
        verify_webhook(SECRET, headers("msg_7", ts, f"{old} {wrong}"), BODY)


def test_only_v1_signatures_count() -> None:
    ts = int(time.time())
    sig = sign_webhook(SECRET, "msg_8", ts, BODY)
    with pytest.raises(WebhookVerificationError):
        verify_webhook(SECRET, headers("msg_8", ts, sig.replace("v1,", "v1a,")), BODY)
    with pytest.raises(WebhookVerificationError):
        verify_webhook(SECRET, headers("msg_8", ts, sig.split(",", 1)[1]), BODY)


@pytest.mark.parametrize("missing", ["webhook-id", "webhook-timestamp", "webhook-signature"])
def test_missing_headers_are_rejected(missing: str) -> None:
    ts = int(time.time())
    h = headers("msg_9", ts, sign_webhook(SECRET, "msg_9", ts, BODY))
    del h[missing]
    with pytest.raises(WebhookVerificationError, match=missing):
        verify_webhook(SECRET, h, BODY)


@pytest.mark.parametrize("stamp", ["", "abc", "1.5", "-5", "١٢٣"])
def test_malformed_timestamps_are_rejected(stamp: str) -> None:
    h = {"webhook-id": "m", "webhook-timestamp": stamp, "webhook-signature": "v1,AAAA"}
    with pytest.raises(WebhookVerificationError):
        verify_webhook(SECRET, h, BODY)


@pytest.mark.parametrize("secret", ["", "whsec_", "whsec_***"])
def test_malformed_secrets_are_rejected(secret: str) -> None:
    ts = int(time.time())
    with pytest.raises(WebhookVerificationError):
        verify_webhook(secret, headers("m", ts, "v1,AAAA"), BODY)


def test_a_secret_without_prefix_is_taken_as_base64() -> None:
    ts = int(time.time())
    sig = sign_webhook(SECRET, "msg_10", ts, BODY)
    assert verify_webhook(SECRET[len("whsec_") :], headers("msg_10", ts, sig), BODY)


def test_a_signed_body_that_is_not_json_is_rejected() -> None:
    ts = int(time.time())
    sig = sign_webhook(SECRET, "msg_11", ts, b"not json")
    with pytest.raises(WebhookVerificationError, match="JSON"):
        verify_webhook(SECRET, headers("msg_11", ts, sig), b"not json")
