"""What this client covers of the server's interface, as data.

:data:`OPERATIONS` maps every operation (method + path template) to the client methods that
call it, with the query and header parameters they can send and the response schema they
read. :data:`SCHEMAS` maps every OpenAPI schema the client reads or sends to the model
classes (whose field names are the JSON names). The package's tests compare both tables with
the server's ``/openapi.json`` in both directions, so a server change that the client does
not follow fails a test.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, FrozenSet, Optional, Set, Tuple

from .errors import ERROR_FIELDS
from .models import (
    Batch,
    BatchCounts,
    BatchItem,
    BatchItemList,
    BatchList,
    BatchSummary,
    BatchTokens,
    DeletedWorkflow,
    Deletion,
    DirectUpload,
    Estimate,
    NodeEvent,
    NodeResult,
    NodeRunStatus,
    RunErrorInfo,
    RunHandle,
    RunList,
    RunSummary,
    TokenBalance,
    Tool,
    ToolParam,
    Upload,
    V2Status,
    ValidationProblem,
    WebhookAttempt,
    WebhookDelivery,
    WebhookDeliveryList,
    WebhookBatchEvent,
    WebhookEndpoint,
    WebhookNodeEvent,
    WebhookSpendEvent,
    AuditEntry,
    AuditList,
    LimitSettings,
    Spend,
    SpendPeriod,
    SpendReport,
    WebhookSecret,
    WorkflowDefinition,
    WorkflowDescription,
    WorkflowInputs,
    WorkflowRunStatus,
    WorkflowSummary,
    WorkflowValidation,
    model_fields,
)

__all__ = [
    "Operation",
    "OPERATIONS",
    "SCHEMAS",
    "KNOWN_FIELDS",
    "LOCATED_SCHEMAS",
    "UNDOCUMENTED_ITEM_MODELS",
    "VALUE_SCHEMAS",
    "schema_fields",
]


@dataclass(frozen=True)
class Operation:
    """One HTTP operation and the client methods that call it."""

    method: str
    path: str
    #: Methods of both :class:`Client` and :class:`AsyncClient`.
    client_methods: Tuple[str, ...]
    #: Query parameters the methods can send.
    query: FrozenSet[str] = frozenset()
    #: Header parameters the methods can send (beside ``X-API-KEY``).
    headers: FrozenSet[str] = frozenset()
    #: The OpenAPI component schema of the 200 answer (``None``: not JSON, e.g. a stream).
    response: Optional[str] = None
    #: The OpenAPI component schema of the request body, if any.
    request: Optional[str] = None


_RUN_HEADERS = frozenset({"Idempotency-Key"})


def _v2(path: str, schema: str) -> Tuple[Operation, ...]:
    """A v2 family's two operations: every family is called through ``v2_run`` and
    ``v2_status`` with the family's name."""
    return (
        Operation("POST", f"/api/v2/{path}/run", ("v2_run",), headers=_RUN_HEADERS, response="RunHandle", request=schema),
        Operation("GET", f"/api/v2/{path}/status/{{run_id}}", ("v2_status",), response="V2Status"),
    )


OPERATIONS: Tuple[Operation, ...] = (
    Operation(
        "POST",
        "/api/v3/run",
        ("run", "run_workflow"),
        headers=frozenset({"Idempotency-Key", "Prefer"}),
        response="RunHandle",
        request="RunRequest",
    ),
    Operation("GET", "/api/v3/status/{run_id}", ("status",), response="RunStatus"),
    Operation("GET", "/api/v3/status/{run_id}/events", ("events",), headers=frozenset({"Last-Event-ID"})),
    Operation("POST", "/api/v3/cancel/{run_id}", ("cancel",), response="RunStatus"),
    Operation("DELETE", "/api/v3/runs/{run_id}", ("delete_run",), response="Deletion"),
    Operation(
        "GET",
        "/api/v3/runs",
        ("runs", "iter_runs"),
        query=frozenset({"limit", "before", "status", "target"}),
        response="RunList",
    ),
    Operation("GET", "/api/v3/workflow/{name}", ("workflow",), response="WorkflowDescription"),
    Operation("PUT", "/api/v3/workflow/{name}", ("save_workflow",), response="WorkflowDescription", request="Workflow"),
    Operation("DELETE", "/api/v3/workflow/{name}", ("delete_workflow",), response="Deleted"),
    Operation("GET", "/api/v3/workflows", ("workflows",), response="WorkflowList"),
    Operation(
        "POST",
        "/api/v3/workflows/validate",
        ("validate_workflow",),
        query=frozenset({"name"}),
        response="Validation",
        request="Workflow",
    ),
    Operation("GET", "/api/v3/tools", ("tools",), response="ToolList"),
    Operation("POST", "/api/v3/estimate", ("estimate", "estimate_workflow"), response="Estimate", request="RunRequest"),
    # The body of an upload is the image's bytes (no schema).
    Operation("POST", "/api/v3/uploads", ("upload",), response="Upload"),
    Operation("GET", "/api/v3/uploads/{id}", ("get_upload",), response="Upload"),
    Operation(
        "POST",
        "/api/v3/uploads/direct",
        ("begin_direct_upload", "upload_direct"),
        response="DirectUpload",
        request="DirectUploadRequest",
    ),
    Operation("POST", "/api/v3/uploads/direct/{id}", ("complete_direct_upload", "upload_direct"), response="Upload"),
    Operation("POST", "/api/v3/batches", ("create_batch",), response="Batch", request="BatchRequest", headers=frozenset({"Idempotency-Key"})),
    Operation("GET", "/api/v3/batches", ("batches",), query=frozenset({"limit", "before"}), response="BatchList"),
    Operation("GET", "/api/v3/batches/{batch_id}", ("batch",), response="Batch"),
    Operation(
        "GET",
        "/api/v3/batches/{batch_id}/items",
        ("batch_items",),
        query=frozenset({"status", "after", "limit"}),
        response="BatchItemList",
    ),
    Operation("POST", "/api/v3/batches/{batch_id}/cancel", ("cancel_batch",), response="Batch"),
    Operation("POST", "/api/v3/batches/{batch_id}/retry", ("retry_batch",), response="Batch"),
    Operation("DELETE", "/api/v3/batches/{batch_id}", ("delete_batch",), response="Deletion"),
    Operation("GET", "/api/v3/batches/{batch_id}/webhooks", ("batch_webhook_deliveries",), response="WebhookDeliveries"),
    Operation("GET", "/api/v3/batches/{batch_id}/events", ("batch_events",), headers=frozenset({"Last-Event-ID"})),
    # Files, streamed to a path.
    Operation("GET", "/api/v3/batches/{batch_id}/results.jsonl", ("download_batch_results",)),
    Operation("GET", "/api/v3/batches/{batch_id}/results.zip", ("download_batch_zip",)),
    Operation("GET", "/api/v3/audit", ("audit",), response="AuditList", query=frozenset({"action", "since", "before", "limit"})),
    Operation("GET", "/api/v3/usage", ("usage",), response="SpendReport"),
    Operation("GET", "/api/v3/webhooks/secret", ("webhook_secret",), response="WebhookSecret"),
    Operation("POST", "/api/v3/webhooks/secret/rotate", ("rotate_webhook_secret",), response="WebhookSecret"),
    Operation("GET", "/api/v3/webhooks/endpoint", ("webhook_endpoint",), response="WebhookEndpoint"),
    Operation(
        "PUT", "/api/v3/webhooks/endpoint", ("set_webhook_endpoint",), request="WebhookEndpointRequest", response="WebhookEndpoint"
    ),
    Operation("DELETE", "/api/v3/webhooks/endpoint", ("remove_webhook_endpoint",), response="WebhookEndpoint"),
    Operation("GET", "/api/v3/runs/{run_id}/webhooks", ("webhook_deliveries",), response="WebhookDeliveries"),
    Operation("POST", "/api/v3/runs/{run_id}/webhooks/{delivery}/replay", ("replay_delivery",), response="WebhookDelivery"),
    *_v2("tryon", "V2Run_tryon"),
    *_v2("tryon/pro", "V2Run_tryon_pro"),
    *_v2("virtualmodel", "V2Run_virtualmodel"),
    *_v2("fabric", "V2Run_fabric"),
    *_v2("sketchtodress", "V2Run_sketchtodress"),
    Operation("GET", "/api/v2/user/tokens", ("balance",), response="Tokens"),
)

#: OpenAPI component schema -> the model classes that read it (``NodeEvent``: the data of
#: the events stream's ``node`` events; ``WebhookNodeEvent``: the body of a ``node`` webhook). A schema read by several
#: classes (the two shapes of a status) is covered by the union of their fields. An empty
#: tuple: the client reads the schema's items through another entry (arrays), or passes the
#: body through as a dict (v2 run bodies, whose fields are the tools').
SCHEMAS: Dict[str, Tuple[type, ...]] = {
    "RunHandle": (RunHandle,),
    "RunStatus": (WorkflowRunStatus, NodeRunStatus),
    "NodeResult": (NodeResult,),
    "RunError": (RunErrorInfo,),
    "RunList": (RunList,),
    "WorkflowDescription": (WorkflowDescription,),
    "Workflow": (WorkflowDefinition,),
    "WorkflowList": (WorkflowSummary,),
    "Deleted": (DeletedWorkflow,),
    "Deletion": (Deletion,),
    "ToolList": (Tool,),
    "Tool": (Tool,),
    "ToolParam": (ToolParam,),
    "RunSummary": (RunSummary,),
    "WorkflowSummary": (WorkflowSummary,),
    "Estimate": (Estimate,),
    "Upload": (Upload,),
    "DirectUpload": (DirectUpload,),
    "Batch": (Batch,),
    "BatchCounts": (BatchCounts,),
    "BatchTokens": (BatchTokens,),
    "BatchList": (BatchList,),
    "BatchSummary": (BatchSummary,),
    "BatchItemList": (BatchItemList,),
    "BatchItem": (BatchItem,),
    "Validation": (WorkflowValidation,),
    "V2Status": (V2Status,),
    "Tokens": (TokenBalance,),
    "NodeEvent": (NodeEvent,),
    "WebhookSecret": (WebhookSecret,),
    "SpendReport": (SpendReport,),
    "AuditList": (AuditList,),
    "AuditEntry": (AuditEntry,),
    "Spend": (Spend,),
    "SpendPeriod": (SpendPeriod,),
    "LimitSettings": (LimitSettings,),
    "WebhookDeliveries": (WebhookDeliveryList,),
    "WebhookDelivery": (WebhookDelivery,),
    "WebhookNodeEvent": (WebhookNodeEvent,),
    "WebhookBatchEvent": (WebhookBatchEvent,),
    "WebhookEndpoint": (WebhookEndpoint,),
    "WebhookSpendEvent": (WebhookSpendEvent,),
    "V2Run_tryon": (),
    "V2Run_tryon_pro": (),
    "V2Run_virtualmodel": (),
    "V2Run_fabric": (),
    "V2Run_sketchtodress": (),
}

#: Schemas whose fields the client knows without a model class: the run body it writes, the
#: error object (attributes of :class:`AtelierError`), and a workflow's nodes and variables
#: (plain dicts in :class:`WorkflowDefinition`, written and read as the document has them).
KNOWN_FIELDS: Dict[str, FrozenSet[str]] = {
    "WorkflowNode": frozenset({"name", "tool", "params", "links", "mode"}),
    "WorkflowVariable": frozenset({"type", "targets"}),
    "RunRequest": frozenset(
        {
            "type",
            "target",
            "input",
            "webhook_url",
            "webhook_events",
            "priority",
            "start_within_secs",
            "cache",
            "retention_secs",
        }
    ),
    "BatchRequest": frozenset(
        {"type", "target", "input", "items", "items_file", "priority", "cache", "retention_secs", "webhook_url"}
    ),
    "BatchItemRequest": frozenset({"input", "ref"}),
    "DirectUploadRequest": frozenset({"content_type"}),
    "WebhookEndpointRequest": frozenset({"url"}),
    "Error": frozenset(ERROR_FIELDS),
    "ErrorResponse": frozenset({"id", "error"}),
}

#: Models whose schema has no component name of its own: found from an operation's 200
#: answer (``method``, ``path``) and a path inside it (property names; ``[]`` for the
#: items of an array).
LOCATED_SCHEMAS: Tuple[Tuple[type, str, str, Tuple[str, ...]], ...] = (
    (WorkflowInputs, "GET", "/api/v3/workflow/{name}", ("inputs",)),
    (ValidationProblem, "POST", "/api/v3/workflows/validate", ("errors", "[]")),
    (WebhookDelivery, "GET", "/api/v3/runs/{run_id}/webhooks", ("deliveries", "[]")),
    (WebhookAttempt, "GET", "/api/v3/runs/{run_id}/webhooks", ("deliveries", "[]", "attempts", "[]")),
)

#: Models of items the document leaves as a bare ``object``: none now (every item schema has
#: its fields).
UNDOCUMENTED_ITEM_MODELS: Tuple[type, ...] = ()

#: Component schemas of values, not objects (the document's enums and one-or-many unions):
#: the check compares their values, no model reads them as objects.
VALUE_SCHEMAS: FrozenSet[str] = frozenset(
    {
        "RunState",
        "BatchState",
        "ItemState",
        "NodeState",
        "V2State",
        "Priority",
        "RunKind",
        "WebhookEventKind",
        "WaitingFor",
        "DeliveryState",
        "DeliveryEvent",
        "BatchEventType",
        "SpendEventType",
        "ParamKind",
        "NamedOutput",
        "V2Output",
        "NodeEventType",
        "EngineKind",
        "Fidelity",
        "OutputKind",
        "NodeMode",
    }
)


def schema_fields(classes: Tuple[type, ...]) -> Set[str]:
    """The union of the JSON fields the classes read."""
    out: Set[str] = set()
    for cls in classes:
        out |= model_fields(cls)
    return out
