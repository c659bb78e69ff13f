"""The direct upload's three steps, against a stand-in for the server and the bucket: the
begin call, the PUT to the signed URL (without the API key), the completion."""

from __future__ import annotations

import json
from typing import List

import httpx
import pytest

from atelier_client import AtelierError, Client


def _transport(seen: List[httpx.Request], storage_status: int = 200) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == "/api/v3/uploads/direct":
            return httpx.Response(
                200,
                json={
                    "id": "dup_" + "a" * 24 + ".csv",
                    "url": "https://bucket.example.com/staging/1/x?X-Amz-Signature=abc",
                    "method": "PUT",
                    "complete": "/api/v3/uploads/direct/dup_" + "a" * 24 + ".csv",
                    "expires_at": "2026-11-28T19:00:00",
                    "max_bytes": 1000,
                },
            )
        if request.url.host == "bucket.example.com":
            return httpx.Response(storage_status, text="<Error/>" if storage_status >= 300 else "")
        if request.url.path.startswith("/api/v3/uploads/direct/"):
            return httpx.Response(
                200,
                json={"id": "f" * 64, "input": "upload:" + "f" * 64, "format": "csv", "size": 12, "width": 0, "height": 0},
            )
        return httpx.Response(404, json={"error": {"name": "FileNotFound", "message": "no"}})

    return httpx.MockTransport(handle)


def test_a_direct_upload_puts_the_bytes_to_the_signed_url_without_the_key(tmp_path) -> None:
    items = tmp_path / "items.csv"
    items.write_text("ref,image\na,upload:x\n")
    seen: List[httpx.Request] = []
    with Client("http://atelier.test", "atl_key", http_client=httpx.Client(transport=_transport(seen))) as client:
        upload = client.upload_direct(items)
    assert upload.format == "csv" and upload.input.startswith("upload:")
    begin, put, complete = seen
    assert json.loads(begin.content) == {"content_type": "text/csv"}
    assert begin.headers["x-api-key"] == "atl_key"
    assert put.method == "PUT" and put.url.host == "bucket.example.com"
    assert "x-api-key" not in put.headers, "the signed URL needs no key, and must not see it"
    assert put.content == items.read_bytes() and put.headers["content-type"] == "text/csv"
    assert complete.method == "POST" and complete.url.path.endswith(".csv")


def test_a_storage_that_refuses_the_bytes_is_an_error_before_completion() -> None:
    seen: List[httpx.Request] = []
    with Client("http://atelier.test", "atl_key", http_client=httpx.Client(transport=_transport(seen, 403))) as client:
        with pytest.raises(AtelierError) as refused:
            client.upload_direct(b"\x89PNG....")
    assert refused.value.status_code == 403
    assert len(seen) == 2, "no completion after a refused PUT"
