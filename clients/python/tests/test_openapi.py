"""The client's interface tables against the ``/openapi.json`` of the server under test.

Fails when the document has an operation, a parameter, a schema or a field the client does
not know, and when the client relies on one the document does not have (both ways).
"""

from __future__ import annotations

import copy
from typing import Any, Dict, Set

from conftest import Server
from openapi_check import PENDING, missing_methods, problems

from atelier_client import Client
from atelier_client.models import RunSummary, Tool, ToolParam, model_fields


def test_the_client_covers_the_servers_document(openapi: Dict[str, Any]) -> None:
    found = problems(openapi, PENDING)
    assert found == [], "the client and the server's OpenAPI document disagree:\n" + "\n".join(found)


def test_every_table_entry_has_its_methods() -> None:
    assert missing_methods() == []


def test_the_check_notices_changes(openapi: Dict[str, Any]) -> None:
    """Each kind of drift, made on a copy of the live document, is reported."""

    def drift(change: Any) -> str:
        doc = copy.deepcopy(openapi)
        change(doc)
        return "\n".join(problems(doc, PENDING))

    schemas = lambda d: d["components"]["schemas"]  # noqa: E731
    assert "no client method covers it" in drift(
        lambda d: d["paths"].__setitem__("/api/v3/teleport", {"post": {"responses": {}}})
    )
    assert "the document does not have it" in drift(lambda d: d["paths"].pop("/api/v3/tools"))
    assert "'brand_new'" in drift(lambda d: schemas(d)["NodeResult"]["properties"].__setitem__("brand_new", {}))
    assert "'model_name'" in drift(lambda d: schemas(d)["NodeResult"]["properties"].pop("model_name"))
    assert "'page_token'" in drift(
        lambda d: d["paths"]["/api/v3/runs"]["get"]["parameters"].append({"name": "page_token", "in": "query"})
    )
    assert "'NewError'" in drift(lambda d: schemas(d)["Error"]["properties"]["name"]["enum"].append("NewError"))
    assert "'paused'" in drift(lambda d: schemas(d)["RunState"]["enum"].append("paused"))
    assert "'WebhookStartedEvent'" in drift(lambda d: schemas(d).__setitem__("WebhookStartedEvent", {"type": "object"}))
    assert "'Tokens'" in drift(
        lambda d: d["paths"]["/api/v3/estimate"]["post"]["responses"]["200"]["content"]["application/json"].__setitem__(
            "schema", {"$ref": "#/components/schemas/Tokens"}
        )
    )


def test_items_the_document_leaves_open_match_live_answers(server: Server, png: str) -> None:
    """``ToolList`` items and ``RunList.runs`` items are bare objects in the document: their
    models are checked against what the server sends."""
    with Client(server.base_url, server.api_key) as client:
        tools = client.tools()
        client.run("reframe", {"image": png, "aspect_ratio": "4:5"}).wait(timeout=120, poll_interval=0.2)
        runs = client.runs(limit=5).runs
    tool_keys: Set[str] = set().union(*(t.raw.keys() for t in tools))
    assert tool_keys == model_fields(Tool)
    param_keys: Set[str] = set().union(*(p.raw.keys() for t in tools for p in t.params))
    # Optional keys (values, min, max) appear only on some parameters; all of them on some.
    assert param_keys == model_fields(ToolParam)
    run_keys: Set[str] = set().union(*(r.raw.keys() for r in runs))
    assert runs and run_keys == model_fields(RunSummary)
