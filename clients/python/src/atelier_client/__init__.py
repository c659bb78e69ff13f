"""Python client of Atelier, the self-hostable fashion image-generation service.

Quick start::

    from atelier_client import Client

    with Client("http://127.0.0.1:8080", api_key="atl_...") as client:
        run = client.run("upscale", {"image": "https://example.com/a.png", "scale": 2})
        status = run.wait()
        print(status.overall_status, status.output)

See :class:`Client`, :class:`AsyncClient`, :func:`verify_webhook`, and the README.
"""

from ._calls import V2_FAMILIES, WEBHOOK_EVENTS, image_data_uri
from .async_client import AsyncClient, AsyncRun, AsyncV2Run
from .client import Client, Run, V2Run
from .errors import *  # noqa: F401,F403 - every error class
from .errors import __all__ as _errors_all
from .models import (
    DELIVERY_STATES,
    NODE_ERROR_NAMES,
    NODE_STATES,
    RUN_STATES,
    TERMINAL_RUN_STATES,
    TERMINAL_V2_STATES,
    V2_STATES,
    Batch,
    BatchEvent,
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
    OtherEvent,
    RunErrorInfo,
    RunEvent,
    RunHandle,
    RunList,
    RunStatus,
    RunSummary,
    StatusEvent,
    TokenBalance,
    Tool,
    ToolParam,
    Upload,
    V2Status,
    ValidationProblem,
    WebhookAttempt,
    WebhookDelivery,
    WebhookBatchEvent,
    WebhookNodeEvent,
    WebhookSecret,
    WorkflowDefinition,
    WorkflowDescription,
    WorkflowInputs,
    WorkflowRunStatus,
    WorkflowSummary,
    WorkflowValidation,
    parse_run_status,
    parse_webhook_event,
)
from .sse import ServerSentEvent, SSEDecoder
from .webhooks import sign_webhook, verify_webhook

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "Client",
    "AsyncClient",
    "Run",
    "V2Run",
    "AsyncRun",
    "AsyncV2Run",
    "verify_webhook",
    "sign_webhook",
    "image_data_uri",
    "V2_FAMILIES",
    "WEBHOOK_EVENTS",
    "SSEDecoder",
    "ServerSentEvent",
    "RUN_STATES",
    "TERMINAL_RUN_STATES",
    "NODE_STATES",
    "V2_STATES",
    "TERMINAL_V2_STATES",
    "NODE_ERROR_NAMES",
    "DELIVERY_STATES",
    "DirectUpload",
    "Batch",
    "BatchEvent",
    "BatchCounts",
    "BatchItem",
    "BatchItemList",
    "BatchList",
    "BatchSummary",
    "BatchTokens",
    "DeletedWorkflow",
    "Deletion",
    "Estimate",
    "NodeEvent",
    "NodeResult",
    "NodeRunStatus",
    "OtherEvent",
    "RunErrorInfo",
    "RunEvent",
    "RunHandle",
    "RunList",
    "RunStatus",
    "RunSummary",
    "StatusEvent",
    "TokenBalance",
    "Tool",
    "ToolParam",
    "Upload",
    "V2Status",
    "ValidationProblem",
    "WebhookAttempt",
    "WebhookDelivery",
    "WebhookBatchEvent",
    "WebhookNodeEvent",
    "WebhookSecret",
    "WorkflowDefinition",
    "WorkflowDescription",
    "WorkflowInputs",
    "WorkflowRunStatus",
    "WorkflowSummary",
    "WorkflowValidation",
    "parse_run_status",
    "parse_webhook_event",
    *_errors_all,
]
