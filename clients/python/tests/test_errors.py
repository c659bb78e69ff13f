"""Error answers become typed exceptions (offline, through httpx's mock transport)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any, Dict

import httpx
import pytest

import atelier_client
from atelier_client import (
    ERROR_CLASSES,
    AsyncClient,
    AtelierError,
    Client,
    ConcurrencyLimited,
    QueueFull,
    InsufficientTokens,
    InvalidInput,
    MissingInputs,
    RateLimited,
    RunNotFound,
)

REPO_ROOT = Path(__file__).resolve().parents[3]


def client_answering(status: int, body: Any, headers: Dict[str, str] = {}) -> Client:  # noqa: B006
    def handler(request: httpx.Request) -> httpx.Response:
        if isinstance(body, (dict, list)):
            return httpx.Response(status, json=body, headers=headers)
        return httpx.Response(status, content=body, headers=headers)

    return Client("http://atelier.test", "atl_x", http_client=httpx.Client(transport=httpx.MockTransport(handler)))


@pytest.mark.parametrize("name", sorted(ERROR_CLASSES))
def test_every_name_raises_its_class(name: str) -> None:
    body = {"error": {"name": name, "message": f"it was {name}"}}
    with client_answering(400, body) as client:
        with pytest.raises(ERROR_CLASSES[name]) as info:
            client.tools()
    err = info.value
    assert isinstance(err, AtelierError)
    assert (err.name, err.message, err.status_code, err.body) == (name, f"it was {name}", 400, body)
    assert getattr(atelier_client, name) is ERROR_CLASSES[name]


def test_run_endpoint_shape_and_extra_fields() -> None:
    body = {"id": None, "error": {"name": "InsufficientTokens", "message": "costs 3", "required": 3, "balance": 1}}
    with client_answering(402, body) as client:
        with pytest.raises(InsufficientTokens) as info:
            client.run("upscale", {"image": "x"})
    assert (info.value.required, info.value.balance, info.value.status_code) == (3, 1, 402)
    assert "402 InsufficientTokens: costs 3" == str(info.value)


def test_missing_and_invalid_fields() -> None:
    with client_answering(
        400, {"id": None, "error": {"name": "MissingInputs", "message": "m", "missing": ["a.b"]}}
    ) as c:
        with pytest.raises(MissingInputs) as missing:
            c.run_workflow("w", {})
    assert missing.value.missing == ["a.b"]
    body = {
        "error": {"name": "InvalidInput", "message": "scale: no", "field": "scale", "reason": "no", "allowed": [2, 4]}
    }
    with client_answering(422, body) as c:
        with pytest.raises(InvalidInput) as invalid:
            c.estimate("upscale", {"scale": 3})
    assert (invalid.value.field, invalid.value.reason, invalid.value.allowed) == ("scale", "no", [2, 4])


def test_retry_after_from_body_or_header() -> None:
    with client_answering(429, {"error": {"name": "RateLimited", "message": "slow", "retry_after": 7}}) as c:
        with pytest.raises(RateLimited) as info:
            c.balance()
    assert info.value.retry_after == 7
    body = {"id": None, "error": {"name": "ConcurrencyLimited", "message": "busy", "limit": 2}}
    with client_answering(429, body, {"Retry-After": "5"}) as c:
        with pytest.raises(ConcurrencyLimited) as busy:
            c.run("upscale", {})
    assert (busy.value.retry_after, busy.value.limit) == (5, 2)
    body = {"id": None, "error": {"name": "QueueFull", "message": "full", "limit": 50, "retry_after": 10}}
    with client_answering(429, body) as c:
        with pytest.raises(QueueFull) as full:
            c.run("upscale", {})
    assert (full.value.retry_after, full.value.limit, full.value.status_code) == (10, 50, 429)


def test_unknown_names_and_non_json_bodies_still_raise_atelier_error() -> None:
    with client_answering(418, {"error": {"name": "BrandNewError", "message": "new"}}) as c:
        with pytest.raises(AtelierError) as info:
            c.tools()
    assert type(info.value) is AtelierError and info.value.name == "BrandNewError"
    with client_answering(502, b"<html>bad gateway</html>", {"Content-Type": "text/html"}) as c:
        with pytest.raises(AtelierError) as gateway:
            c.tools()
    assert type(gateway.value) is AtelierError and gateway.value.name is None
    assert gateway.value.status_code == 502 and "bad gateway" in gateway.value.message
    with client_answering(404, b"") as c:
        with pytest.raises(AtelierError) as empty:
            c.status("gen_x")
    assert empty.value.name is None and empty.value.message == "HTTP 404"


def test_async_client_raises_the_same() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, json={"error": {"name": "RunNotFound", "message": "nope"}})

    async def main() -> None:
        http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
        async with AsyncClient("http://atelier.test", "atl_x", http_client=http) as client:
            with pytest.raises(RunNotFound):
                await client.status("gen_x")
        await http.aclose()

    asyncio.run(main())


def test_requests_carry_the_key_and_encode_path_segments() -> None:
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"name": "a b/c%", "deleted": True})

    http = httpx.Client(transport=httpx.MockTransport(handler))
    with Client("http://atelier.test/", "atl_key", http_client=http) as client:
        assert client.delete_workflow("a b/c%+é").deleted
    assert seen[0].headers["x-api-key"] == "atl_key"
    assert seen[0].url.raw_path == b"/api/v3/workflow/a%20b%2Fc%25%2B%C3%A9"


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATELIER_URL", "http://env.test:1/")
    monkeypatch.setenv("ATELIER_API_KEY", "atl_env")
    with Client() as client:
        assert client.base_url == "http://env.test:1"
    monkeypatch.delenv("ATELIER_API_KEY")
    with pytest.raises(ValueError, match="api_key"):
        Client()
    monkeypatch.delenv("ATELIER_URL")
    with pytest.raises(ValueError, match="base_url"):
        Client(api_key="k")


def test_every_error_name_of_the_server_source_has_a_class() -> None:
    """The names of the server's one list, `ErrorName` in crates/core/src/error.rs."""
    source = REPO_ROOT / "crates/core/src/error.rs"
    if not source.exists():
        pytest.skip("server sources not beside this package")
    core = source.read_text()
    listing = core[core.index("pub enum ErrorName {") : core.index("}", core.index("pub enum ErrorName {"))]
    names = set(re.findall(r"^\s+([A-Z][A-Za-z]+),$", listing, flags=re.M))
    assert {"InternalError", "FileNotFound", "OutputExpired", "MissingInputs"} <= names
    assert len(names) >= 20, "the listing was read"
    assert names - set(ERROR_CLASSES) == set()
