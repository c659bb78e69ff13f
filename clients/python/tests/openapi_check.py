"""Compares the package's interface tables with a server's OpenAPI document, both ways.

``problems(doc, pending=...)`` lists every disagreement:

- an operation of the document (outside :data:`NOT_COVERED`) with no client method, and an
  operation the client calls that the document does not have;
- a query or header parameter of an operation the client does not send, and one it sends
  that the document does not list;
- an operation whose answer or body schema is not the one the client reads or writes;
- a schema reachable from the covered operations that no model reads;
- a field of a modeled schema that its model does not know, and a model field that the
  schema does not have;
- error names, node error names and state values that differ.

``pending`` holds parts of the document a coming server version adds before the client
does (see :data:`Pending`); nothing is pending now.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Set, Tuple

from atelier_client import WEBHOOK_EVENTS, AsyncClient, Client
from atelier_client._calls import DELIVERY_EVENTS
from atelier_client.errors import ERROR_CLASSES
from atelier_client.interface import (
    KNOWN_FIELDS,
    LOCATED_SCHEMAS,
    OPERATIONS,
    SCHEMAS,
    UNDOCUMENTED_ITEM_MODELS,
    VALUE_SCHEMAS,
    Operation,
    schema_fields,
)
from atelier_client.models import (
    DELIVERY_STATES,
    NODE_ERROR_NAMES,
    NODE_STATES,
    RUN_STATES,
    V2_STATES,
    model_fields,
)

#: Deliberately not covered by the client: the console's own API, files (plain URLs), health,
#: metrics, the document itself, and internal engine callbacks.
NOT_COVERED_PREFIXES = ("/console/", "/files/", "/internal/")
NOT_COVERED_PATHS = frozenset({"/healthz", "/readyz", "/openapi.json", "/metrics"})

#: Error names the client knows that the document's ``Error.name`` enum does not list:
#: the answers of ``/files/...`` (crates/api/src/error.rs).
ERRORS_OUTSIDE_DOCUMENT = frozenset({"FileNotFound", "OutputExpired", "FileUrlInvalid"})

#: Component schemas the client deliberately has no model for: the console's own API
#: (session cookie, not API keys), and each tool's input parameters (``Tool_<name>``: the
#: client passes a tool's input as a dict; ``GET /api/v3/tools`` describes the parameters).
NOT_MODELED_SCHEMAS = frozenset(
    {
        "SignIn",
        "Session",
        "Key",
        "NewKey",
        "NewKeyRequest",
        "LimitsRequest",
        "KeyList",
        "Scope",
        "Ledger",
        "LedgerEntry",
        "LedgerKind",
        "Usage",
        "UsageDay",
        "RunDetail",
        "RunDetailNode",
    }
)
NOT_MODELED_PREFIXES = ("Tool_",)

#: Fields the server sends that its document does not list; none now.
DOCUMENT_GAPS: Dict[str, FrozenSet[str]] = {}


@dataclass(frozen=True)
class Pending:
    """Parts of the interface the server is still adding."""

    operations: FrozenSet[Tuple[str, str]] = frozenset()
    #: (method, path, "query" | "header", name)
    params: FrozenSet[Tuple[str, str, str, str]] = frozenset()
    #: schema name -> fields
    fields: Dict[str, FrozenSet[str]] = field(default_factory=dict)
    #: component schemas
    schemas: FrozenSet[str] = frozenset()


#: Nothing is pending: the client covers the whole document.
PENDING = Pending()
NOTHING_PENDING = Pending()

_METHODS = ("get", "post", "put", "delete", "patch")


def _norm(path: str) -> str:
    return re.sub(r"\{[^}]*\}", "{}", path)


def covered(path: str) -> bool:
    return path not in NOT_COVERED_PATHS and not path.startswith(NOT_COVERED_PREFIXES)


def doc_operations(doc: Dict[str, Any]) -> Dict[Tuple[str, str], Dict[str, Any]]:
    """(METHOD, normalised path) -> operation, for the covered paths."""
    out = {}
    for path, item in doc.get("paths", {}).items():
        if not covered(path):
            continue
        for method in _METHODS:
            if method in item:
                out[(method.upper(), _norm(path))] = item[method]
    return out


def resolve(doc: Dict[str, Any], schema: Any) -> Dict[str, Any]:
    """Follows ``$ref``s to the schema object."""
    seen = 0
    while isinstance(schema, dict) and "$ref" in schema and seen < 20:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = doc.get("components", {}).get("schemas", {}).get(name, {})
        seen += 1
    return schema if isinstance(schema, dict) else {}


def ref_name(schema: Any) -> Optional[str]:
    if isinstance(schema, dict) and "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    return None


def ok_response(op: Dict[str, Any]) -> Dict[str, Any]:
    responses = op.get("responses", {})
    return responses.get("200") or responses.get("201") or {}


def json_schema_of(op: Dict[str, Any]) -> Any:
    return ok_response(op).get("content", {}).get("application/json", {}).get("schema")


def properties(doc: Dict[str, Any], schema: Any) -> Optional[Set[str]]:
    """The property names of an object schema, or of an array's items; ``None`` when the
    schema does not list any (a bare ``object``)."""
    s = resolve(doc, schema)
    if s.get("type") == "array":
        s = resolve(doc, s.get("items", {}))
    props = s.get("properties")
    if props is None:
        return None
    return set(props)


def walk(doc: Dict[str, Any], schema: Any, path: Iterable[str]) -> Tuple[Dict[str, Any], Optional[str]]:
    """The schema at ``path`` inside ``schema`` and its component name (if it is a ``$ref``)."""
    name = ref_name(schema)
    s = resolve(doc, schema)
    for step in path:
        nxt = s.get("items", {}) if step == "[]" else s.get("properties", {}).get(step, {})
        name = ref_name(nxt)
        s = resolve(doc, nxt)
    return s, name


def _refs(value: Any, out: Set[str]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "$ref" and isinstance(v, str) and v.startswith("#/components/schemas/"):
                out.add(v.rsplit("/", 1)[-1])
            else:
                _refs(v, out)
    elif isinstance(value, list):
        for v in value:
            _refs(v, out)


def reachable_schemas(doc: Dict[str, Any], ops: Iterable[Dict[str, Any]]) -> Set[str]:
    """Every component schema referenced (transitively) by the operations' JSON bodies and
    answers (an event stream's data is checked against live events instead)."""
    found: Set[str] = set()
    for op in ops:
        for response in op.get("responses", {}).values():
            _refs({k: v for k, v in response.get("content", {}).items() if k != "text/event-stream"}, found)
        _refs(op.get("requestBody", {}), found)
    schemas = doc.get("components", {}).get("schemas", {})
    todo = list(found)
    while todo:
        name = todo.pop()
        more: Set[str] = set()
        _refs(schemas.get(name, {}), more)
        for m in more - found:
            found.add(m)
            todo.append(m)
    return found


def _table() -> Dict[Tuple[str, str], Operation]:
    return {(op.method, _norm(op.path)): op for op in OPERATIONS}


def _compare(
    where: str, doc_fields: Set[str], client_fields: Set[str], allowed_extra: FrozenSet[str], problems: List[str]
) -> None:
    for f in sorted(doc_fields - client_fields):
        problems.append(f"{where}: the document has field {f!r}, the client does not know it")
    for f in sorted(client_fields - doc_fields - allowed_extra):
        problems.append(f"{where}: the client reads field {f!r}, the document does not have it")


def problems(doc: Dict[str, Any], pending: Pending = PENDING) -> List[str]:
    """Every disagreement between the document and the client's tables."""
    out: List[str] = []
    docs = doc_operations(doc)
    table = _table()
    schemas = doc.get("components", {}).get("schemas", {})
    pending_ops = {(m, _norm(p)) for m, p in pending.operations}

    # Operations, both ways.
    for key in sorted(set(docs) - set(table)):
        out.append(f"{key[0]} {key[1]}: in the document, no client method covers it")
    for key in sorted(set(table) - set(docs) - pending_ops):
        out.append(f"{key[0]} {key[1]}: the client calls it, the document does not have it")

    for key, op in sorted(table.items()):
        d = docs.get(key)
        if d is None:
            continue
        where = f"{key[0]} {op.path}"
        # Parameters, both ways.
        for kind, mine in (("query", op.query), ("header", op.headers)):
            theirs = {p["name"] for p in d.get("parameters", []) if p.get("in") == kind}
            lower = {n.lower(): n for n in mine}
            for name in sorted(theirs):
                if name.lower() not in lower:
                    out.append(f"{where}: {kind} parameter {name!r} in the document, the client does not send it")
            theirs_lower = {n.lower() for n in theirs}
            skip = {n.lower() for (m, p, k, n) in pending.params if (m, _norm(p)) == key and k == kind}
            for name in sorted(mine):
                if name.lower() not in theirs_lower and name.lower() not in skip:
                    out.append(f"{where}: the client sends {kind} parameter {name!r}, the document does not list it")
        # The answer and the body.
        answer = ref_name(json_schema_of(d))
        if answer != op.response:
            out.append(f"{where}: the document answers {answer!r}, the client reads {op.response!r}")
        body = ref_name(d.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema"))
        if body != op.request:
            out.append(f"{where}: the document takes body {body!r}, the client sends {op.request!r}")
        if op.response is not None and op.response not in SCHEMAS:
            out.append(f"{where}: answer schema {op.response!r} has no model in SCHEMAS")

    # Schemas found through an operation's answer (their component names, whatever the
    # server calls them, count as modeled).
    located_names: Set[str] = set()
    for cls, method, path, steps in LOCATED_SCHEMAS:
        d = docs.get((method, _norm(path)))
        if d is None:
            continue  # reported above unless pending
        s, name = walk(doc, json_schema_of(d), steps)
        if name:
            located_names.add(name)
        props = s.get("properties")
        where = f"{method} {path} {'.'.join(steps) or '(answer)'} ({cls.__name__})"
        if props is None:
            out.append(f"{where}: the document lists no fields")
            continue
        _compare(where, set(props), model_fields(cls), frozenset(), out)

    # Every schema the covered operations use is modeled.
    covered_ops = [d for key, d in docs.items() if key in table]
    known = set(SCHEMAS) | set(KNOWN_FIELDS) | located_names | VALUE_SCHEMAS
    for name in sorted(reachable_schemas(doc, covered_ops) - known):
        out.append(f"schema {name!r} is used by covered operations, no model reads it")

    # Every component schema is modeled, or deliberately not.
    for name in sorted(schemas):
        if name in known or name in NOT_MODELED_SCHEMAS:
            continue
        if name.startswith(NOT_MODELED_PREFIXES):
            continue
        out.append(f"schema {name!r} is in the document, the client has no model for it")

    # Modeled schemas: fields both ways.
    for name, classes in SCHEMAS.items():
        if name not in schemas:
            if name not in pending.schemas:
                out.append(f"schema {name!r}: modeled by the client, not in the document")
            continue
        if not classes:
            continue
        props = properties(doc, {"$ref": f"#/components/schemas/{name}"})
        if props is None:
            if not set(classes) <= set(UNDOCUMENTED_ITEM_MODELS):
                out.append(f"schema {name!r} lists no fields, and its model is not checked against live answers")
            continue
        allowed = pending.fields.get(name, frozenset()) | DOCUMENT_GAPS.get(name, frozenset())
        _compare(f"schema {name}", props, schema_fields(classes), allowed, out)
    for name, known in KNOWN_FIELDS.items():
        if name not in schemas:
            out.append(f"schema {name!r}: known to the client, not in the document")
            continue
        props = properties(doc, {"$ref": f"#/components/schemas/{name}"}) or set()
        _compare(f"schema {name}", props, set(known), pending.fields.get(name, frozenset()), out)

    # Names and states.
    def enum(schema: str, prop: str) -> Set[str]:
        field = resolve(doc, schemas.get(schema, {})).get("properties", {}).get(prop, {})
        return set(resolve(doc, field).get("enum", []))

    error_names = enum("Error", "name")
    _compare("Error.name values", error_names, set(ERROR_CLASSES), ERRORS_OUTSIDE_DOCUMENT, out)
    _compare("RunError.name values", enum("RunError", "name"), set(NODE_ERROR_NAMES), frozenset(), out)
    _compare("RunStatus.overall_status values", enum("RunStatus", "overall_status"), set(RUN_STATES), frozenset(), out)
    _compare("NodeResult.status values", enum("NodeResult", "status"), set(NODE_STATES), frozenset(), out)
    _compare("V2Status.status values", enum("V2Status", "status"), set(V2_STATES), frozenset(), out)
    if "NodeEvent" in schemas:
        _compare("NodeEvent.status values", enum("NodeEvent", "status"), set(NODE_STATES), frozenset(), out)
    if "WebhookDeliveries" in schemas:
        item, _ = walk(doc, {"$ref": "#/components/schemas/WebhookDeliveries"}, ("deliveries", "[]"))
        values = {k: set(resolve(doc, v).get("enum", [])) for k, v in item.get("properties", {}).items()}
        _compare("webhook delivery event values", values.get("event", set()), set(DELIVERY_EVENTS), frozenset(), out)
        _compare("webhook delivery state values", values.get("state", set()), set(DELIVERY_STATES), frozenset(), out)
    if "RunRequest" in schemas:
        events, _ = walk(doc, {"$ref": "#/components/schemas/RunRequest"}, ("webhook_events", "[]"))
        if events:
            _compare(
                "RunRequest.webhook_events values",
                set(resolve(doc, events).get("enum", [])),
                set(WEBHOOK_EVENTS),
                frozenset(),
                out,
            )
    return out


def missing_methods() -> List[str]:
    """Table entries whose methods the clients lack."""
    out = []
    for op in OPERATIONS:
        for name in op.client_methods:
            for cls in (Client, AsyncClient):
                if not callable(getattr(cls, name, None)):
                    out.append(f"{op.method} {op.path}: {cls.__name__}.{name} does not exist")
    return out
