"""Typed views of the server's JSON answers.

Each model is a dataclass built with ``from_raw(dict)``. It keeps the whole answer as
``.raw`` and ignores fields it does not know, so a newer server that adds fields does not
break an older client. The field names are the JSON names (the OpenAPI test of this package
checks them against the server's document).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Mapping, Optional, Set, Union

__all__ = [
    "AuditEntry",
    "AuditList",
    "SpendPeriod",
    "LimitSettings",
    "Spend",
    "SpendReport",
    "RUN_STATES",
    "TERMINAL_RUN_STATES",
    "NODE_STATES",
    "V2_STATES",
    "TERMINAL_V2_STATES",
    "NODE_ERROR_NAMES",
    "DELIVERY_STATES",
    "RunErrorInfo",
    "NodeResult",
    "WorkflowRunStatus",
    "NodeRunStatus",
    "RunStatus",
    "parse_run_status",
    "RunHandle",
    "V2Status",
    "ToolParam",
    "Tool",
    "WorkflowDefinition",
    "WorkflowInputs",
    "WorkflowDescription",
    "WorkflowSummary",
    "Estimate",
    "RunSummary",
    "RunList",
    "ValidationProblem",
    "WorkflowValidation",
    "DeletedWorkflow",
    "TokenBalance",
    "WebhookSecret",
    "WebhookAttempt",
    "WebhookDelivery",
    "WebhookDeliveryList",
    "WebhookNodeEvent",
    "parse_webhook_event",
    "NodeEvent",
    "StatusEvent",
    "OtherEvent",
    "RunEvent",
    "model_fields",
]

#: Values of ``overall_status`` (v3 runs), in the order a run moves through them; ``pending``
#: and ``skipped`` only for one node of a workflow run, polled by its generation id.
RUN_STATES = ("pending", "queued", "running", "succeeded", "failed", "skipped", "canceled")
#: The states a run ends in.
TERMINAL_RUN_STATES = frozenset({"succeeded", "failed", "skipped", "canceled"})
#: Values of a node's ``status`` inside a workflow run.
NODE_STATES = ("pending", "queued", "running", "succeeded", "failed", "skipped", "canceled")
#: Values of a v2 status's ``status``.
V2_STATES = ("in_queue", "processing", "completed", "failed", "canceled")
#: The v2 states a run ends in.
TERMINAL_V2_STATES = frozenset({"completed", "failed", "canceled"})
#: States of a webhook delivery.
DELIVERY_STATES = ("pending", "delivered", "failed")
#: Names of the ``error`` value of a failed, skipped or canceled node or run.
NODE_ERROR_NAMES = (
    "Canceled",
    "ToolFailed",
    "InvalidImage",
    "InputFetchFailed",
    "EngineUnavailable",
    "Timeout",
    "UpstreamFailed",
    "WorkerLost",
    "NotStarted",
)

# A field whose metadata has ``json=None`` is the client's own (not a JSON field).
_CLIENT_ONLY = {"json": None}


def model_fields(cls: type) -> Set[str]:
    """The JSON field names a model reads (its dataclass fields less ``raw`` and the
    client's own fields)."""
    out: Set[str] = set()
    for f in fields(cls):
        if f.name == "raw":
            continue
        if "json" in f.metadata:
            name = f.metadata["json"]
            if name is None:
                continue
            out.add(name)
        else:
            out.add(f.name)
    return out


def _raw_field() -> Any:
    return field(default_factory=dict, repr=False, compare=False)


def _dict(value: Any) -> Dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def _list(value: Any) -> List[Any]:
    return list(value) if isinstance(value, list) else []


def _opt_int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _opt_float(value: Any) -> Optional[float]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def _opt_str(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


def _opt_bool(value: Any) -> Optional[bool]:
    return value if isinstance(value, bool) else None


@dataclass
class RunErrorInfo:
    """The ``error`` value of a failed, skipped or canceled run or node (not an HTTP error).

    ``name`` is one of :data:`NODE_ERROR_NAMES` (``ToolFailed``, ``Canceled``, ...); ``node``
    names the failed node on a run's error.
    """

    name: str
    message: str
    node: Optional[str] = None
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Any) -> Optional["RunErrorInfo"]:
        """``None`` for a JSON ``null`` (no error)."""
        if not isinstance(raw, Mapping):
            return None
        return cls(
            name=str(raw.get("name", "")),
            message=str(raw.get("message", "")),
            node=_opt_str(raw.get("node")),
            raw=dict(raw),
        )


@dataclass
class NodeResult:
    """One node of a workflow run status (``nodes[name]``)."""

    id: str
    status: str
    output: List[str]
    error: Optional[RunErrorInfo]
    model_name: str
    #: 0..1 while the node runs, else ``None``.
    progress: Optional[float] = None
    #: ``"engine"`` while queued and the tool's model servers are all down.
    waiting_for: Optional[str] = None
    #: The run whose outputs these are copies of, when the result cache filled the node
    #: (charged nothing).
    cached_from: Optional[str] = None
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "NodeResult":
        return cls(
            id=str(raw.get("id", "")),
            status=str(raw.get("status", "")),
            output=_list(raw.get("output")),
            error=RunErrorInfo.from_raw(raw.get("error")),
            model_name=str(raw.get("model_name", "")),
            progress=_opt_float(raw.get("progress")),
            waiting_for=_opt_str(raw.get("waiting_for")),
            cached_from=_opt_str(raw.get("cached_from")),
            raw=dict(raw),
        )


class _RunState:
    """What both v3 status shapes answer: whether and how the run ended."""

    overall_status: str

    @property
    def done(self) -> bool:
        """The run ended (succeeded, failed or canceled)."""
        return self.overall_status in TERMINAL_RUN_STATES

    @property
    def succeeded(self) -> bool:
        return self.overall_status == "succeeded"

    @property
    def failed(self) -> bool:
        return self.overall_status == "failed"

    @property
    def canceled(self) -> bool:
        return self.overall_status == "canceled"


@dataclass
class WorkflowRunStatus(_RunState):
    """``GET /api/v3/status/{id}`` of a workflow run (``wr_`` id)."""

    workflow_run_id: str
    overall_status: str
    #: Friendly output name -> URL (a list of URLs when the node made several), ``None``
    #: until produced.
    outputs: Dict[str, Any]
    nodes: Dict[str, NodeResult]
    error: Optional[RunErrorInfo] = None
    created_at: Optional[str] = None
    finished_at: Optional[str] = None
    expires_at: Optional[str] = None
    #: Tokens charged so far.
    tokens: Optional[int] = None
    #: While queued: how many nodes of the same tool wait ahead of the run's first queued node.
    queue_position: Optional[int] = None
    #: The lane it queues in: ``interactive``, ``normal`` or ``bulk``.
    priority: Optional[str] = None
    #: ``False`` once the outputs of a zero-retention run (``retention_secs=0``) were dropped,
    #: at ``expires_at`` (they were handed back inline as ``data:`` URLs until then, never
    #: stored); the output lists are then empty. ``None`` otherwise.
    outputs_kept: Optional[bool] = None
    raw: Dict[str, Any] = _raw_field()

    @property
    def run_id(self) -> str:
        return self.workflow_run_id

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "WorkflowRunStatus":
        return cls(
            workflow_run_id=str(raw.get("workflow_run_id", "")),
            overall_status=str(raw.get("overall_status", "")),
            outputs=_dict(raw.get("outputs")),
            nodes={
                str(k): NodeResult.from_raw(v) for k, v in _dict(raw.get("nodes")).items() if isinstance(v, Mapping)
            },
            error=RunErrorInfo.from_raw(raw.get("error")),
            created_at=_opt_str(raw.get("created_at")),
            finished_at=_opt_str(raw.get("finished_at")),
            expires_at=_opt_str(raw.get("expires_at")),
            tokens=_opt_int(raw.get("tokens")),
            queue_position=_opt_int(raw.get("queue_position")),
            priority=_opt_str(raw.get("priority")),
            outputs_kept=_opt_bool(raw.get("outputs_kept")),
            raw=dict(raw),
        )


@dataclass
class NodeRunStatus(_RunState):
    """``GET /api/v3/status/{id}`` of a single-node run (``gen_`` id), or of one node of a
    workflow run addressed by its generation id (then ``workflow_run_id`` is set)."""

    id: str
    overall_status: str
    #: The same value as ``overall_status``.
    status: str
    model_name: str
    output: List[str]
    error: Optional[RunErrorInfo] = None
    created_at: Optional[str] = None
    finished_at: Optional[str] = None
    expires_at: Optional[str] = None
    tokens: Optional[int] = None
    progress: Optional[float] = None
    queue_position: Optional[int] = None
    #: ``"engine"`` while queued and the tool's model servers are all down.
    waiting_for: Optional[str] = None
    #: The lane it queues in: ``interactive``, ``normal`` or ``bulk``.
    priority: Optional[str] = None
    workflow_run_id: Optional[str] = None
    #: The run whose outputs these are copies of, when the result cache filled the node
    #: (charged nothing).
    cached_from: Optional[str] = None
    #: ``False`` once the outputs of a zero-retention run (``retention_secs=0``) were dropped,
    #: at ``expires_at`` (they were handed back inline as ``data:`` URLs until then, never
    #: stored); the output lists are then empty. ``None`` otherwise.
    outputs_kept: Optional[bool] = None
    raw: Dict[str, Any] = _raw_field()

    @property
    def run_id(self) -> str:
        return self.id

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "NodeRunStatus":
        overall = str(raw.get("overall_status", raw.get("status", "")))
        return cls(
            id=str(raw.get("id", "")),
            overall_status=overall,
            status=str(raw.get("status", overall)),
            model_name=str(raw.get("model_name", "")),
            output=_list(raw.get("output")),
            error=RunErrorInfo.from_raw(raw.get("error")),
            created_at=_opt_str(raw.get("created_at")),
            finished_at=_opt_str(raw.get("finished_at")),
            expires_at=_opt_str(raw.get("expires_at")),
            tokens=_opt_int(raw.get("tokens")),
            progress=_opt_float(raw.get("progress")),
            queue_position=_opt_int(raw.get("queue_position")),
            waiting_for=_opt_str(raw.get("waiting_for")),
            priority=_opt_str(raw.get("priority")),
            workflow_run_id=_opt_str(raw.get("workflow_run_id")),
            cached_from=_opt_str(raw.get("cached_from")),
            outputs_kept=_opt_bool(raw.get("outputs_kept")),
            raw=dict(raw),
        )


#: A v3 status answer: the workflow-run shape or the node-run shape.
RunStatus = Union[WorkflowRunStatus, NodeRunStatus]


def parse_run_status(raw: Mapping[str, Any]) -> RunStatus:
    """Picks the shape of a v3 status answer: a workflow run has ``nodes``."""
    if "nodes" in raw:
        return WorkflowRunStatus.from_raw(raw)
    return NodeRunStatus.from_raw(raw)


@dataclass
class RunHandle:
    """The answer of every run request (v3 and v2).

    ``status`` is set only when the request asked to wait (``Prefer: wait=N``) and the run
    finished within that time: it is the final status.
    """

    id: str
    error: Optional[Dict[str, Any]] = None
    #: Why parts of the input were ignored (e.g. values for linked parameters).
    warnings: List[str] = field(default_factory=list)
    status: Optional[RunStatus] = None
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "RunHandle":
        status = raw.get("status")
        return cls(
            id=str(raw.get("id") or ""),
            error=_dict(raw["error"]) if isinstance(raw.get("error"), Mapping) else None,
            warnings=[str(w) for w in _list(raw.get("warnings"))],
            status=parse_run_status(status) if isinstance(status, Mapping) else None,
            raw=dict(raw),
        )


@dataclass
class V2Status:
    """A v2 status object (``GET /api/v2/{family}/status/{id}``).

    ``output`` is a list of URLs, except for the fabric family where it is a single URL
    string (``None`` until done). ``input`` (the request as sent, inline images shown as
    ``<base64>``) and ``model_name`` are present for the families that document them.
    """

    id: str
    status: str
    output: Union[List[str], str, None]
    error: Optional[RunErrorInfo] = None
    input: Optional[Dict[str, Any]] = None
    model_name: Optional[str] = None
    raw: Dict[str, Any] = _raw_field()

    @property
    def done(self) -> bool:
        return self.status in TERMINAL_V2_STATES

    @property
    def succeeded(self) -> bool:
        return self.status == "completed"

    @property
    def failed(self) -> bool:
        return self.status == "failed"

    @property
    def canceled(self) -> bool:
        return self.status == "canceled"

    @property
    def urls(self) -> List[str]:
        """The output URLs as a list, whatever the family's shape."""
        if isinstance(self.output, str):
            return [self.output]
        return list(self.output or [])

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "V2Status":
        output = raw.get("output")
        return cls(
            id=str(raw.get("id", "")),
            status=str(raw.get("status", "")),
            output=output if isinstance(output, (list, str)) else None,
            error=RunErrorInfo.from_raw(raw.get("error")),
            input=_dict(raw["input"]) if isinstance(raw.get("input"), Mapping) else None,
            model_name=_opt_str(raw.get("model_name")),
            raw=dict(raw),
        )


@dataclass
class ToolParam:
    """One parameter of a tool, as ``GET /api/v3/tools`` describes it."""

    name: str
    #: ``image``, ``select``, ``number``, ``string`` or ``boolean``.
    type: str
    required: bool
    default: Any = None
    #: The allowed values of a select (or of a number with fixed values).
    values: Optional[List[Any]] = None
    min: Any = None
    max: Any = None
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "ToolParam":
        values = raw.get("values")
        return cls(
            name=str(raw.get("name", "")),
            type=str(raw.get("type", "")),
            required=bool(raw.get("required", False)),
            default=raw.get("default"),
            values=list(values) if isinstance(values, list) else None,
            min=raw.get("min"),
            max=raw.get("max"),
            raw=dict(raw),
        )


@dataclass
class Tool:
    """A tool of ``GET /api/v3/tools``: its parameters, price rule and engine fidelity."""

    name: str
    description: str
    #: Kind of engine that runs it: ``builtin``, ``comfyui``, ``cog`` or ``onnx``.
    engine: Any
    #: ``production`` or ``preview``: how faithful its output is on that engine.
    fidelity: Any
    #: ``image`` or ``video``.
    output: Any
    #: The price rule in words (``"1 per run, 2 at scale 4"``).
    price: Any
    #: The parameter a bypassed node passes through, if any.
    primary_image: Optional[str]
    params: List[ToolParam]
    raw: Dict[str, Any] = _raw_field()

    def param(self, name: str) -> Optional[ToolParam]:
        """The parameter of that name, or ``None``."""
        return next((p for p in self.params if p.name == name), None)

    @property
    def required_params(self) -> List[str]:
        return [p.name for p in self.params if p.required]

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "Tool":
        return cls(
            name=str(raw.get("name", "")),
            description=str(raw.get("description", "")),
            engine=raw.get("engine"),
            fidelity=raw.get("fidelity"),
            output=raw.get("output"),
            price=raw.get("price"),
            primary_image=_opt_str(raw.get("primary_image")),
            params=[ToolParam.from_raw(p) for p in _list(raw.get("params")) if isinstance(p, Mapping)],
            raw=dict(raw),
        )


@dataclass
class WorkflowDefinition:
    """A saved workflow document (the ``workflow`` of a description; the body of
    :meth:`Client.save_workflow`)."""

    nodes: List[Dict[str, Any]]
    name: Optional[str] = None
    description: Optional[str] = None
    variables: Dict[str, Any] = field(default_factory=dict)
    outputs: Dict[str, Any] = field(default_factory=dict)
    #: Where an editor placed each node; runs ignore it.
    layout: Optional[Dict[str, Any]] = None
    raw: Dict[str, Any] = _raw_field()

    def to_dict(self) -> Dict[str, Any]:
        """The JSON document: ``raw`` (so unknown fields survive a round trip) with this
        object's fields over it; fields left ``None`` are not sent."""
        out = dict(self.raw)
        for name in model_fields(type(self)):
            value = getattr(self, name)
            if value is None:
                out.pop(name, None)
            else:
                out[name] = value
        return out

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "WorkflowDefinition":
        layout = raw.get("layout")
        return cls(
            nodes=[dict(n) for n in _list(raw.get("nodes")) if isinstance(n, Mapping)],
            name=_opt_str(raw.get("name")),
            description=_opt_str(raw.get("description")),
            variables=_dict(raw.get("variables")),
            outputs=_dict(raw.get("outputs")),
            layout=_dict(layout) if isinstance(layout, Mapping) else None,
            raw=dict(raw),
        )


@dataclass
class WorkflowInputs:
    """The ``inputs`` of a workflow description: key -> descriptor string such as
    ``'<type:image , default value : null>'``; ``linked`` maps a parameter to its source."""

    mandatory: Dict[str, str]
    optional: Dict[str, str]
    linked: Dict[str, str]
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Any) -> "WorkflowInputs":
        raw = _dict(raw)
        return cls(
            mandatory=_dict(raw.get("mandatory")),
            optional=_dict(raw.get("optional")),
            linked=_dict(raw.get("linked")),
            raw=raw,
        )


@dataclass
class WorkflowDescription:
    """``GET /api/v3/workflow/{name}``: the graph, its inputs and outputs, and a ready run
    body (``sample_payload``)."""

    name: str
    workflow: WorkflowDefinition
    sample_payload: Dict[str, Any]
    inputs: WorkflowInputs
    #: Friendly output name -> ``node.param``.
    outputs: Dict[str, str]
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "WorkflowDescription":
        return cls(
            name=str(raw.get("name", "")),
            workflow=WorkflowDefinition.from_raw(_dict(raw.get("workflow"))),
            sample_payload=_dict(raw.get("sample_payload")),
            inputs=WorkflowInputs.from_raw(raw.get("inputs")),
            outputs=_dict(raw.get("outputs")),
            raw=dict(raw),
        )


@dataclass
class WorkflowSummary:
    """An item of ``GET /api/v3/workflows``."""

    id: int
    name: str
    system_workflow: bool
    created_at: str
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "WorkflowSummary":
        return cls(
            id=int(raw.get("id", 0)),
            name=str(raw.get("name", "")),
            system_workflow=bool(raw.get("system_workflow", False)),
            created_at=str(raw.get("created_at", "")),
            raw=dict(raw),
        )


@dataclass
class Estimate:
    """``POST /api/v3/estimate``: the price of a run, per node; nothing is reserved.

    ``balance`` is the account's available balance (absent in a validation's estimate).
    """

    tokens: int
    nodes: Dict[str, int]
    balance: Optional[int] = None
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "Estimate":
        return cls(
            tokens=int(raw.get("tokens", 0)),
            nodes={str(k): int(v) for k, v in _dict(raw.get("nodes")).items()},
            balance=_opt_int(raw.get("balance")),
            raw=dict(raw),
        )


@dataclass
class Upload:
    """``POST /api/v3/uploads``: an image sent once by its bytes. Give ``input``
    (``upload:<id>``) to an image input of a run (a tool's or a workflow's) until ``expires_at``."""

    #: The SHA-256 of the bytes, hex: the same bytes are the same upload.
    id: str
    input: str
    #: ``png``, ``jpg``, ``webp`` or ``gif``.
    format: str
    size: int
    width: int
    height: int
    created_at: str
    expires_at: str
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "Upload":
        return cls(
            id=str(raw.get("id", "")),
            input=str(raw.get("input", "")),
            format=str(raw.get("format", "")),
            size=int(raw.get("size", 0)),
            width=int(raw.get("width", 0)),
            height=int(raw.get("height", 0)),
            created_at=str(raw.get("created_at", "")),
            expires_at=str(raw.get("expires_at", "")),
            raw=dict(raw),
        )


@dataclass
class DirectUpload:
    """``POST /api/v3/uploads/direct`` (S3 storage): ``PUT`` the bytes to ``url`` (no API
    key: it is signed, until ``expires_at``), then ``POST`` to ``complete``."""

    id: str
    url: str
    #: Always ``PUT``.
    method: str
    #: ``/api/v3/uploads/direct/{id}``.
    complete: str
    expires_at: str
    max_bytes: int
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "DirectUpload":
        return cls(
            id=str(raw.get("id", "")),
            url=str(raw.get("url", "")),
            method=str(raw.get("method", "PUT")),
            complete=str(raw.get("complete", "")),
            expires_at=str(raw.get("expires_at", "")),
            max_bytes=int(raw.get("max_bytes", 0)),
            raw=dict(raw),
        )


@dataclass
class RunSummary:
    """An item of ``GET /api/v3/runs``."""

    id: str
    #: ``node`` or ``workflow``.
    type: str
    target: str
    overall_status: str
    created_at: str
    #: The lane it queues in: ``interactive``, ``normal`` or ``bulk``.
    priority: Optional[str] = None
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "RunSummary":
        return cls(
            id=str(raw.get("id", "")),
            type=str(raw.get("type", "")),
            target=str(raw.get("target", "")),
            overall_status=str(raw.get("overall_status", "")),
            created_at=str(raw.get("created_at", "")),
            priority=_opt_str(raw.get("priority")),
            raw=dict(raw),
        )


@dataclass
class RunList:
    """A page of ``GET /api/v3/runs``, newest first. Pass ``next_before`` as ``before`` for
    the next page; it is ``None`` on the last page."""

    runs: List[RunSummary]
    next_before: Optional[int]
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "RunList":
        return cls(
            runs=[RunSummary.from_raw(r) for r in _list(raw.get("runs")) if isinstance(r, Mapping)],
            next_before=_opt_int(raw.get("next_before")),
            raw=dict(raw),
        )


@dataclass
class BatchCounts:
    """A batch's items by state."""

    total: int
    pending: int
    queued: int
    running: int
    succeeded: int
    failed: int
    canceled: int
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Any) -> "BatchCounts":
        raw = _dict(raw)
        count = lambda name: int(raw.get(name) or 0)  # noqa: E731
        return cls(
            total=count("total"),
            pending=count("pending"),
            queued=count("queued"),
            running=count("running"),
            succeeded=count("succeeded"),
            failed=count("failed"),
            canceled=count("canceled"),
            raw=dict(raw),
        )


@dataclass
class BatchTokens:
    """A batch's tokens: ``price`` reserved for it in all (retries included), ``reserved``
    held now, ``charged`` so far."""

    price: int
    reserved: int
    charged: int
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Any) -> "BatchTokens":
        raw = _dict(raw)
        return cls(
            price=int(raw.get("price") or 0),
            reserved=int(raw.get("reserved") or 0),
            charged=int(raw.get("charged") or 0),
            raw=dict(raw),
        )


@dataclass
class Batch:
    """A batch (``POST /api/v3/batches``, ``GET /api/v3/batches/{id}``, cancel, retry).
    ``status`` is ``running``, ``finished`` or ``canceled``; ``retried`` is set on a retry's
    answer only."""

    id: str
    status: str
    type: str
    target: str
    priority: str
    items: BatchCounts
    tokens: BatchTokens
    progress: float
    created_at: str
    finished_at: Optional[str]
    retried: Optional[int] = None
    raw: Dict[str, Any] = _raw_field()

    @property
    def running(self) -> bool:
        return self.status == "running"

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "Batch":
        return cls(
            id=str(raw.get("id", "")),
            status=str(raw.get("status", "")),
            type=str(raw.get("type", "")),
            target=str(raw.get("target", "")),
            priority=str(raw.get("priority", "")),
            items=BatchCounts.from_raw(raw.get("items")),
            tokens=BatchTokens.from_raw(raw.get("tokens")),
            progress=float(raw.get("progress") or 0.0),
            created_at=str(raw.get("created_at", "")),
            finished_at=_opt_str(raw.get("finished_at")),
            retried=_opt_int(raw.get("retried")),
            raw=dict(raw),
        )


@dataclass
class BatchSummary:
    """A batch in ``GET /api/v3/batches``."""

    id: str
    status: str
    type: str
    target: str
    total: int
    created_at: str
    finished_at: Optional[str]
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "BatchSummary":
        return cls(
            id=str(raw.get("id", "")),
            status=str(raw.get("status", "")),
            type=str(raw.get("type", "")),
            target=str(raw.get("target", "")),
            total=int(raw.get("total") or 0),
            created_at=str(raw.get("created_at", "")),
            finished_at=_opt_str(raw.get("finished_at")),
            raw=dict(raw),
        )


@dataclass
class BatchList:
    """A page of ``GET /api/v3/batches``, newest first; ``next_before`` is ``None`` on the last."""

    batches: List[BatchSummary]
    next_before: Optional[int]
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "BatchList":
        return cls(
            batches=[BatchSummary.from_raw(b) for b in _list(raw.get("batches")) if isinstance(b, Mapping)],
            next_before=_opt_int(raw.get("next_before")),
            raw=dict(raw),
        )


@dataclass
class BatchItem:
    """One item of a batch (a page of ``…/items``, a line of ``results.jsonl``): its ``ref``,
    state, current run, earlier runs (``attempts``), outputs and error. ``output`` holds a
    tool batch's URLs, ``outputs`` a workflow batch's (output name -> URL or list)."""

    index: int
    ref: Optional[str]
    status: str
    run_id: Optional[str]
    attempts: List[str]
    output: Optional[List[str]]
    outputs: Optional[Dict[str, Any]]
    error: Optional[RunErrorInfo]
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "BatchItem":
        output = raw.get("output")
        outputs = raw.get("outputs")
        return cls(
            index=int(raw.get("index") or 0),
            ref=_opt_str(raw.get("ref")),
            status=str(raw.get("status", "")),
            run_id=_opt_str(raw.get("run_id")),
            attempts=[str(a) for a in _list(raw.get("attempts"))],
            output=[str(u) for u in output] if isinstance(output, list) else None,
            outputs=dict(outputs) if isinstance(outputs, Mapping) else None,
            error=RunErrorInfo.from_raw(raw.get("error")),
            raw=dict(raw),
        )


@dataclass
class BatchItemList:
    """A page of ``GET /api/v3/batches/{id}/items``; pass ``next_after`` as ``after``."""

    items: List[BatchItem]
    next_after: Optional[int]
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "BatchItemList":
        return cls(
            items=[BatchItem.from_raw(i) for i in _list(raw.get("items")) if isinstance(i, Mapping)],
            next_after=_opt_int(raw.get("next_after")),
            raw=dict(raw),
        )


@dataclass
class ValidationProblem:
    """One problem found by ``POST /api/v3/workflows/validate``."""

    #: ``Node``, ``Node.param``, ``variables.NAME``, ``outputs.NAME``, ... or ``None``.
    field: Optional[str]
    reason: str
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "ValidationProblem":
        return cls(field=_opt_str(raw.get("field")), reason=str(raw.get("reason", "")), raw=dict(raw))


@dataclass
class WorkflowValidation:
    """``POST /api/v3/workflows/validate``: every problem of a document, and when it has
    none, what discovery will show of it and where its price starts."""

    valid: bool
    errors: List[ValidationProblem]
    description: Optional[WorkflowDescription]
    estimate: Optional[Estimate]
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "WorkflowValidation":
        description = raw.get("description")
        estimate = raw.get("estimate")
        return cls(
            valid=bool(raw.get("valid", False)),
            errors=[ValidationProblem.from_raw(e) for e in _list(raw.get("errors")) if isinstance(e, Mapping)],
            description=WorkflowDescription.from_raw(description) if isinstance(description, Mapping) else None,
            estimate=Estimate.from_raw(estimate) if isinstance(estimate, Mapping) else None,
            raw=dict(raw),
        )


@dataclass
class DeletedWorkflow:
    """``DELETE /api/v3/workflow/{name}``."""

    name: str
    deleted: bool
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "DeletedWorkflow":
        return cls(name=str(raw.get("name", "")), deleted=bool(raw.get("deleted", False)), raw=dict(raw))


@dataclass
class Deletion:
    """``DELETE /api/v3/runs/{run_id}``: what was deleted, and when (the first deletion's time
    when asked again)."""

    id: str
    deleted: bool
    deleted_at: str
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "Deletion":
        return cls(
            id=str(raw.get("id", "")),
            deleted=bool(raw.get("deleted", False)),
            deleted_at=str(raw.get("deleted_at", "")),
            raw=dict(raw),
        )


@dataclass
class TokenBalance:
    """``GET /api/v2/user/tokens``: the available balance (reservations excluded)."""

    tokens: int
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "TokenBalance":
        return cls(tokens=int(raw.get("tokens", 0)), raw=dict(raw))


@dataclass
class WebhookSecret:
    """The account's webhook signing secret (``whsec_...``).

    After a rotation, ``previous_key_expires_at`` says until when deliveries are also
    signed with the previous secret.
    """

    key: str
    previous_key_expires_at: Optional[str] = None
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "WebhookSecret":
        return cls(
            key=str(raw.get("key", "")),
            previous_key_expires_at=_opt_str(raw.get("previous_key_expires_at")),
            raw=dict(raw),
        )


@dataclass
class WebhookAttempt:
    """One attempt to deliver a webhook."""

    attempt: int
    at: str
    #: The receiver's HTTP status, ``None`` when no answer came.
    status_code: Optional[int]
    error: Optional[str]
    duration_ms: Optional[int]
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "WebhookAttempt":
        return cls(
            attempt=int(raw.get("attempt", 0)),
            at=str(raw.get("at", "")),
            status_code=_opt_int(raw.get("status_code")),
            error=_opt_str(raw.get("error")),
            duration_ms=_opt_int(raw.get("duration_ms")),
            raw=dict(raw),
        )


@dataclass
class WebhookDelivery:
    """A webhook message of a run (``GET /api/v3/runs/{id}/webhooks``)."""

    #: The message id (``msg_...``), also its ``webhook-id`` header.
    id: str
    #: ``completed`` or ``node`` (a run's), ``batch`` (a batch's), ``spend`` (a spend alert's).
    event: str
    #: The node, for ``node`` events.
    node: Optional[str]
    url: str
    #: ``pending``, ``delivered`` or ``failed``.
    state: str
    created_at: str
    next_attempt_at: Optional[str]
    attempts: List[WebhookAttempt]
    #: How often it was replayed (``replay_delivery``).
    replays: int = 0
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "WebhookDelivery":
        return cls(
            id=str(raw.get("id", "")),
            event=str(raw.get("event", "")),
            node=_opt_str(raw.get("node")),
            url=str(raw.get("url", "")),
            state=str(raw.get("state", "")),
            created_at=str(raw.get("created_at", "")),
            next_attempt_at=_opt_str(raw.get("next_attempt_at")),
            attempts=[WebhookAttempt.from_raw(a) for a in _list(raw.get("attempts")) if isinstance(a, Mapping)],
            replays=int(raw.get("replays") or 0),
            raw=dict(raw),
        )


@dataclass
class WebhookDeliveryList:
    """``GET /api/v3/runs/{id}/webhooks``: ``{"deliveries": [...]}``."""

    deliveries: List[WebhookDelivery]
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "WebhookDeliveryList":
        return cls(
            deliveries=[WebhookDelivery.from_raw(d) for d in _list(raw.get("deliveries")) if isinstance(d, Mapping)],
            raw=dict(raw),
        )


@dataclass
class WebhookNodeEvent:
    """The body of a ``node`` webhook delivery: a node of a run reached ``status``."""

    #: Always ``"node"``.
    type: str
    run_id: str
    node: str
    #: The node's generation id.
    id: Optional[str]
    status: str
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "WebhookNodeEvent":
        return cls(
            type=str(raw.get("type", "")),
            run_id=str(raw.get("run_id", "")),
            node=str(raw.get("node", "")),
            id=_opt_str(raw.get("id")),
            status=str(raw.get("status", "")),
            raw=dict(raw),
        )


@dataclass
class WebhookBatchEvent:
    """The body of a batch's webhook delivery: the batch ended (``batch.completed``)."""

    #: Always ``"batch.completed"``.
    type: str
    #: The batch as ``GET /api/v3/batches/{id}`` answers it when the delivery is made.
    batch: Batch
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "WebhookBatchEvent":
        batch = raw.get("batch")
        return cls(
            type=str(raw.get("type", "")),
            batch=Batch.from_raw(batch if isinstance(batch, Mapping) else {}),
            raw=dict(raw),
        )


@dataclass
class WebhookSpendEvent:
    """The body of a spend alert's delivery to the account's endpoint
    (``spend.threshold``): a key or the account reached 80% or 100% of a daily or monthly
    spend limit. Sent once per key or account, period and threshold."""

    #: Always ``"spend.threshold"``.
    type: str
    #: ``key`` (one API key's own limit) or ``account`` (all its keys together).
    applies_to: str
    #: ``day`` or ``month`` (UTC calendar periods).
    period: str
    #: 80 or 100.
    threshold: int
    limit: int
    #: Tokens reserved in the period when the threshold was reached.
    used: int
    #: When the period ends and its usage starts again from zero.
    resets_at: str
    created_at: str
    #: The key's prefix, for a key's limit.
    key: Optional[str] = None
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "WebhookSpendEvent":
        return cls(
            type=str(raw.get("type", "")),
            applies_to=str(raw.get("applies_to", "")),
            period=str(raw.get("period", "")),
            threshold=int(raw.get("threshold") or 0),
            limit=int(raw.get("limit") or 0),
            used=int(raw.get("used") or 0),
            resets_at=str(raw.get("resets_at", "")),
            created_at=str(raw.get("created_at", "")),
            key=_opt_str(raw.get("key")),
            raw=dict(raw),
        )


@dataclass
class WebhookEndpoint:
    """The account's own webhook endpoint (``GET /api/v3/webhooks/endpoint``): where its
    ``spend.threshold`` events go, and the latest deliveries to it, newest first."""

    #: ``None`` when no endpoint is set (spend alerts are then not sent).
    url: Optional[str]
    events: List[str]
    deliveries: List[WebhookDelivery]
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "WebhookEndpoint":
        return cls(
            url=_opt_str(raw.get("url")),
            events=[str(e) for e in _list(raw.get("events"))],
            deliveries=[WebhookDelivery.from_raw(d) for d in _list(raw.get("deliveries")) if isinstance(d, Mapping)],
            raw=dict(raw),
        )


def parse_webhook_event(
    body: Mapping[str, Any],
) -> Union[WebhookNodeEvent, WebhookBatchEvent, WebhookSpendEvent, WorkflowRunStatus, NodeRunStatus, V2Status]:
    """Types a verified webhook body (see :func:`atelier_client.verify_webhook`).

    A ``node`` delivery gives a :class:`WebhookNodeEvent`; a ``completed`` delivery is the
    run's final status: a v3 status for v3 runs, the family's :class:`V2Status` for v2 runs;
    a batch's delivery gives a :class:`WebhookBatchEvent`; a spend alert a
    :class:`WebhookSpendEvent`.
    """
    if body.get("type") == "node":
        return WebhookNodeEvent.from_raw(body)
    if body.get("type") == "batch.completed":
        return WebhookBatchEvent.from_raw(body)
    if body.get("type") == "spend.threshold":
        return WebhookSpendEvent.from_raw(body)
    if "overall_status" in body or "workflow_run_id" in body:
        return parse_run_status(body)
    return V2Status.from_raw(body)


@dataclass
class NodeEvent:
    """An ``event: node`` of the events stream: one node changed state or progress."""

    run_id: str
    node: str
    #: The node's generation id (``gen_...``).
    id: str
    status: str
    #: 0..1, only while running.
    progress: Optional[float] = None
    #: Output URLs, once succeeded.
    output: Optional[List[str]] = None
    error: Optional[RunErrorInfo] = None
    #: The SSE ``id:`` of this event (pass it as ``last_event_id`` to resume after it).
    event_id: Optional[str] = field(default=None, metadata=_CLIENT_ONLY)
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any], event_id: Optional[str] = None) -> "NodeEvent":
        output = raw.get("output")
        return cls(
            run_id=str(raw.get("run_id", "")),
            node=str(raw.get("node", "")),
            id=str(raw.get("id", "")),
            status=str(raw.get("status", "")),
            progress=_opt_float(raw.get("progress")),
            output=[str(u) for u in output] if isinstance(output, list) else None,
            error=RunErrorInfo.from_raw(raw.get("error")),
            event_id=event_id,
            raw=dict(raw),
        )


@dataclass
class StatusEvent:
    """The last event of the stream (``event: status``): the run's final status, the same
    object as ``GET /api/v3/status/{id}``."""

    status: RunStatus = field(metadata=_CLIENT_ONLY)
    event_id: Optional[str] = field(default=None, metadata=_CLIENT_ONLY)
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any], event_id: Optional[str] = None) -> "StatusEvent":
        return cls(status=parse_run_status(raw), event_id=event_id, raw=dict(raw))


@dataclass
class OtherEvent:
    """An event type this client version does not know (kept for forward compatibility).
    ``data`` is the parsed JSON, or the text when it is not JSON."""

    event: str = field(metadata=_CLIENT_ONLY)
    data: Any = field(metadata=_CLIENT_ONLY)
    event_id: Optional[str] = field(default=None, metadata=_CLIENT_ONLY)
    raw: Dict[str, Any] = _raw_field()


#: What :meth:`Client.events` yields.
RunEvent = Union[NodeEvent, StatusEvent, OtherEvent]


@dataclass
class BatchEvent:
    """An event of a batch's stream (:meth:`Client.batch_events`): ``event`` is
    ``progress`` (its items' counts changed) or ``status`` (it ended: the last event)."""

    event: str = field(metadata=_CLIENT_ONLY)
    batch: Batch = field(metadata=_CLIENT_ONLY)
    #: The SSE ``id:`` of this event (pass it as ``last_event_id`` to resume after it).
    event_id: Optional[str] = field(default=None, metadata=_CLIENT_ONLY)
    raw: Dict[str, Any] = _raw_field()

    @property
    def final(self) -> bool:
        return self.event == "status"


@dataclass
class SpendPeriod:
    """One period of a spend limit: the limit in force (``None``: none), the tokens used in
    the current period, and when it resets (UTC, without an offset)."""

    limit: Optional[int]
    used: int
    resets_at: str
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "SpendPeriod":
        return cls(
            limit=_opt_int(raw.get("limit")),
            used=_opt_int(raw.get("used")) or 0,
            resets_at=str(raw.get("resets_at", "")),
            raw=dict(raw),
        )


@dataclass
class LimitSettings:
    """Limit settings as stored: a number is the limit, ``-1`` no limit whatever the default,
    ``None`` the operator's default."""

    daily: Optional[int] = None
    monthly: Optional[int] = None
    running_nodes: Optional[int] = None
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "LimitSettings":
        return cls(
            daily=_opt_int(raw.get("daily")),
            monthly=_opt_int(raw.get("monthly")),
            running_nodes=_opt_int(raw.get("running_nodes")),
            raw=dict(raw),
        )


@dataclass
class Spend:
    """A key's or an account's spend limits and what it used (``daily``, ``monthly``); for
    a key, its cap on running nodes and the nodes running now."""

    daily: SpendPeriod
    monthly: SpendPeriod
    settings: LimitSettings
    running_nodes_limit: Optional[int] = None
    running_nodes: Optional[int] = None
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "Spend":
        return cls(
            daily=SpendPeriod.from_raw(_dict(raw.get("daily"))),
            monthly=SpendPeriod.from_raw(_dict(raw.get("monthly"))),
            settings=LimitSettings.from_raw(_dict(raw.get("settings"))),
            running_nodes_limit=_opt_int(raw.get("running_nodes_limit")),
            running_nodes=_opt_int(raw.get("running_nodes")),
            raw=dict(raw),
        )


@dataclass
class SpendReport:
    """``GET /api/v3/usage``: the calling key's spend limits and usage, and its account's."""

    account: Spend
    key: Spend
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "SpendReport":
        return cls(
            account=Spend.from_raw(_dict(raw.get("account"))),
            key=Spend.from_raw(_dict(raw.get("key"))),
            raw=dict(raw),
        )


@dataclass
class AuditEntry:
    """One entry of the account's audit log (``GET /api/v3/audit``): who (``actor``), from
    where (``address``), what (``action``) to what (``target``), with ``summary`` (never a
    secret) and the chain's hashes."""

    id: int
    at: str
    actor: str
    action: str
    address: Optional[str] = None
    target: Optional[str] = None
    summary: Any = None
    prev_hash: str = ""
    hash: str = ""
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "AuditEntry":
        return cls(
            id=_opt_int(raw.get("id")) or 0,
            at=str(raw.get("at", "")),
            actor=str(raw.get("actor", "")),
            action=str(raw.get("action", "")),
            address=_opt_str(raw.get("address")),
            target=_opt_str(raw.get("target")),
            summary=raw.get("summary"),
            prev_hash=str(raw.get("prev_hash", "")),
            hash=str(raw.get("hash", "")),
            raw=dict(raw),
        )


@dataclass
class AuditList:
    """A page of the audit log, newest first; ``next_before`` is the next page's ``before``."""

    entries: List[AuditEntry]
    next_before: Optional[int] = None
    raw: Dict[str, Any] = _raw_field()

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> "AuditList":
        return cls(
            entries=[AuditEntry.from_raw(_dict(e)) for e in _list(raw.get("entries"))],
            next_before=_opt_int(raw.get("next_before")),
            raw=dict(raw),
        )
