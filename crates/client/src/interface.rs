//! What this client covers of the server's interface, as data.
//!
//! [`OPERATIONS`] maps every operation (method and path) to the [`crate::Client`] methods
//! that call it, with the query and header parameters they can send and the request and
//! response schemas; [`SCHEMAS`] and [`LOCATED`] map the OpenAPI schemas the client reads or
//! sends to the models, whose field names come from serde ([`serde_fields`]). The crate's
//! `openapi` test compares both tables with the server's document in both directions, so a
//! change of the interface that the client does not follow fails a test. What the client
//! leaves out on purpose is listed in [`NOT_COVERED`] and [`NOT_MODELED`].

use serde::de::{self, DeserializeOwned, Deserializer, Visitor};

use crate::models::{
    Deleted, ErrorBody, ErrorResponse, Estimate, NodeEvent, NodeResult, RunError, RunHandle, RunList,
    RunRequest, RunStatus, TokenBalance, V2Status, ValidationProblem, WebhookAttempt, WebhookDelivery,
    WebhookDeliveryList, WebhookNodeEvent, WebhookSecret, WorkflowDefinition, WorkflowDescription,
    WorkflowInputs, WorkflowSummary, WorkflowValidation,
};

/// One HTTP operation and the client methods that call it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Operation {
    /// `GET`, `POST`, …
    pub method: &'static str,
    /// The path template, as the OpenAPI document writes it.
    pub path: &'static str,
    /// The [`crate::Client`] methods that call it.
    pub client_methods: &'static [&'static str],
    /// The query parameters the methods can send.
    pub query: &'static [&'static str],
    /// The header parameters the methods can send (beside `X-API-KEY`).
    pub headers: &'static [&'static str],
    /// The component schema of the request body.
    pub request: Option<&'static str>,
    /// The component schema of the 200 answer (`None`: not JSON, the events stream).
    pub response: Option<&'static str>,
}

macro_rules! operations {
    ($($method:literal $path:literal => [$($m:ident),+]
        query [$($q:literal),*] headers [$($h:literal),*] request $req:expr, response $resp:expr;)*) => {
        /// Every operation the client calls.
        pub const OPERATIONS: &[Operation] = &[$(Operation {
            method: $method,
            path: $path,
            client_methods: &[$(stringify!($m)),+],
            query: &[$($q),*],
            headers: &[$($h),*],
            request: $req,
            response: $resp,
        }),*];

        // The names above are methods of `Client`: this does not compile otherwise.
        const _: () = {
            $($(let _ = crate::Client::$m;)+)*
        };
    };
}

operations! {
    "POST" "/api/v3/run" => [run, run_workflow]
        query [] headers ["Idempotency-Key", "Prefer"] request Some("RunRequest"), response Some("RunHandle");
    "GET" "/api/v3/status/{run_id}" => [status, wait]
        query [] headers [] request None, response Some("RunStatus");
    "GET" "/api/v3/status/{run_id}/events" => [events, wait]
        query [] headers ["Last-Event-ID"] request None, response None;
    "POST" "/api/v3/cancel/{run_id}" => [cancel]
        query [] headers [] request None, response Some("RunStatus");
    "GET" "/api/v3/runs" => [runs]
        query ["limit", "before", "status", "target"] headers [] request None, response Some("RunList");
    "GET" "/api/v3/workflow/{name}" => [workflow]
        query [] headers [] request None, response Some("WorkflowDescription");
    "PUT" "/api/v3/workflow/{name}" => [save_workflow]
        query [] headers [] request Some("Workflow"), response Some("WorkflowDescription");
    "DELETE" "/api/v3/workflow/{name}" => [delete_workflow]
        query [] headers [] request None, response Some("Deleted");
    "GET" "/api/v3/workflows" => [workflows]
        query [] headers [] request None, response Some("WorkflowList");
    "POST" "/api/v3/workflows/validate" => [validate_workflow]
        query ["name"] headers [] request Some("Workflow"), response Some("Validation");
    "GET" "/api/v3/tools" => [tools]
        query [] headers [] request None, response Some("ToolList");
    "POST" "/api/v3/estimate" => [estimate, estimate_workflow]
        query [] headers [] request Some("RunRequest"), response Some("Estimate");
    "GET" "/api/v3/webhooks/secret" => [webhook_secret]
        query [] headers [] request None, response Some("WebhookSecret");
    "POST" "/api/v3/webhooks/secret/rotate" => [rotate_webhook_secret]
        query [] headers [] request None, response Some("WebhookSecret");
    "GET" "/api/v3/runs/{run_id}/webhooks" => [webhook_deliveries]
        query [] headers [] request None, response Some("WebhookDeliveries");
    "POST" "/api/v2/tryon/run" => [v2_tryon, v2_run]
        query [] headers ["Idempotency-Key"] request Some("V2Run_tryon"), response Some("RunHandle");
    "GET" "/api/v2/tryon/status/{run_id}" => [v2_tryon_status, v2_status]
        query [] headers [] request None, response Some("V2Status");
    "POST" "/api/v2/tryon/pro/run" => [v2_tryon_pro, v2_run]
        query [] headers ["Idempotency-Key"] request Some("V2Run_tryon_pro"), response Some("RunHandle");
    "GET" "/api/v2/tryon/pro/status/{run_id}" => [v2_tryon_pro_status, v2_status]
        query [] headers [] request None, response Some("V2Status");
    "POST" "/api/v2/virtualmodel/run" => [v2_virtual_model, v2_run]
        query [] headers ["Idempotency-Key"] request Some("V2Run_virtualmodel"), response Some("RunHandle");
    "GET" "/api/v2/virtualmodel/status/{run_id}" => [v2_virtual_model_status, v2_status]
        query [] headers [] request None, response Some("V2Status");
    "POST" "/api/v2/fabric/run" => [v2_fabric, v2_run]
        query [] headers ["Idempotency-Key"] request Some("V2Run_fabric"), response Some("RunHandle");
    "GET" "/api/v2/fabric/status/{run_id}" => [v2_fabric_status, v2_status]
        query [] headers [] request None, response Some("V2Status");
    "POST" "/api/v2/sketchtodress/run" => [v2_sketch_to_dress, v2_run]
        query [] headers ["Idempotency-Key"] request Some("V2Run_sketchtodress"), response Some("RunHandle");
    "GET" "/api/v2/sketchtodress/status/{run_id}" => [v2_sketch_to_dress_status, v2_status]
        query [] headers [] request None, response Some("V2Status");
    "GET" "/api/v2/user/tokens" => [balance]
        query [] headers [] request None, response Some("Tokens");
}

/// Paths the client leaves out on purpose (a path is left out when it starts with one of
/// these), and why.
pub const NOT_COVERED: &[(&str, &str)] = &[
    ("/console/", "the web console's API, authorized by a session cookie, not an API key"),
    ("/files/", "output files: Client::download fetches them by the URL a status gives"),
    ("/healthz", "liveness, for orchestrators"),
    ("/readyz", "readiness, for orchestrators"),
    ("/openapi.json", "the document itself"),
    ("/metrics", "operators' metrics"),
    ("/internal/", "the process's own endpoints (model servers' callbacks)"),
];

/// The field names of a model, as serde reads them.
pub type FieldsOf = fn() -> Vec<&'static str>;

/// OpenAPI component schema → the model that reads or writes it (for an array schema, the
/// model of its items).
pub const SCHEMAS: &[(&str, FieldsOf)] = &[
    ("RunRequest", serde_fields::<RunRequest>),
    ("RunHandle", serde_fields::<RunHandle>),
    ("RunStatus", serde_fields::<RunStatus>),
    ("NodeResult", serde_fields::<NodeResult>),
    ("RunError", serde_fields::<RunError>),
    ("Error", serde_fields::<ErrorBody>),
    ("ErrorResponse", serde_fields::<ErrorResponse>),
    ("RunList", serde_fields::<RunList>),
    ("Workflow", serde_fields::<WorkflowDefinition>),
    ("WorkflowDescription", serde_fields::<WorkflowDescription>),
    ("WorkflowList", serde_fields::<WorkflowSummary>),
    ("Deleted", serde_fields::<Deleted>),
    ("Estimate", serde_fields::<Estimate>),
    ("Validation", serde_fields::<WorkflowValidation>),
    ("V2Status", serde_fields::<V2Status>),
    ("Tokens", serde_fields::<TokenBalance>),
    ("NodeEvent", serde_fields::<NodeEvent>),
    ("WebhookSecret", serde_fields::<WebhookSecret>),
    ("WebhookDeliveries", serde_fields::<WebhookDeliveryList>),
    ("WebhookNodeEvent", serde_fields::<WebhookNodeEvent>),
];

/// Models of schemas without a component name: the JSON pointer of the schema in the
/// document, and the model.
pub const LOCATED: &[(&str, FieldsOf)] = &[
    ("/components/schemas/WorkflowDescription/properties/inputs", serde_fields::<WorkflowInputs>),
    ("/components/schemas/Validation/properties/errors/items", serde_fields::<ValidationProblem>),
    ("/components/schemas/WebhookDeliveries/properties/deliveries/items", serde_fields::<WebhookDelivery>),
    (
        "/components/schemas/WebhookDeliveries/properties/deliveries/items/properties/attempts/items",
        serde_fields::<WebhookAttempt>,
    ),
];

/// Schemas without a model, and why (a name ending in `*` stands for every name it starts).
pub const NOT_MODELED: &[(&str, &str)] = &[
    ("Tool_*", "tool inputs are JSON objects; Client::tools describes each tool's at run time"),
    ("V2Run_*", "v2 run bodies are JSON objects of the family's fields"),
    ("ToolList", "an array of bare objects: Tool and ToolParam are checked against the server's rendering"),
    ("SignIn", "console"),
    ("Session", "console"),
    ("Key", "console"),
    ("NewKey", "console"),
    ("KeyList", "console"),
    ("Ledger", "console"),
    ("Usage", "console"),
    ("RunDetail", "console"),
];

/// Fields the server sends that its document does not list: (schema, field). The test
/// checks each is still missing from the document, so the list shrinks when the document
/// is fixed. None at present.
pub const UNDOCUMENTED_FIELDS: &[(&str, &str)] = &[];

/// The field names serde reads for `T` (renames applied, skipped fields left out), found by
/// asking `T`'s `Deserialize` which fields it expects. Empty for a type that is not a
/// struct.
pub fn serde_fields<T: DeserializeOwned>() -> Vec<&'static str> {
    let mut fields = None;
    let _ = T::deserialize(Introspect(&mut fields));
    fields.unwrap_or_default().to_vec()
}

/// A deserializer that records the fields a struct asks for and stops there.
struct Introspect<'a>(&'a mut Option<&'static [&'static str]>);

#[derive(Debug)]
struct Stop;

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("introspection stops here")
    }
}

impl std::error::Error for Stop {}

impl de::Error for Stop {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Stop
    }
}

impl<'de> Deserializer<'de> for Introspect<'_> {
    type Error = Stop;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
        Err(Stop)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Stop> {
        *self.0 = Some(fields);
        Err(Stop)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_come_from_serde_with_renames_and_without_skipped_fields() {
        assert_eq!(
            serde_fields::<RunRequest>(),
            ["type", "target", "input", "webhook_url", "webhook_events", "priority", "start_within_secs"]
        );
        let status = serde_fields::<RunStatus>();
        assert!(status.contains(&"overall_status") && !status.contains(&"raw"), "{status:?}");
        let handle = serde_fields::<RunHandle>();
        assert_eq!(handle, ["id", "error", "warnings", "status"], "client-only fields are not JSON fields");
        assert!(serde_fields::<serde_json::Value>().is_empty());
    }

    #[test]
    fn every_operation_names_methods_and_paths_once() {
        let mut seen = std::collections::HashSet::new();
        for op in OPERATIONS {
            assert!(seen.insert((op.method, op.path)), "{} {} twice", op.method, op.path);
            assert!(!op.client_methods.is_empty());
        }
    }
}
