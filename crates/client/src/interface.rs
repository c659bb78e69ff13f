//! What this client covers of the server's interface, as data.
//!
//! [`OPERATIONS`] maps every operation (method and path) to the [`crate::Client`] methods
//! that call it, with the query and header parameters they can send and the request and
//! response schemas. The crate's `openapi` test compares it with the server's document in
//! both directions, so an operation the client does not follow fails a test; what the client
//! leaves out on purpose is listed in [`NOT_COVERED`]. The models need no such check: they
//! are `atelier-wire`'s types, which the server writes and the document's schemas come from.

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
    "DELETE" "/api/v3/runs/{run_id}" => [delete_run]
        query [] headers [] request None, response Some("Deletion");
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
    "POST" "/api/v3/uploads" => [upload, upload_file, upload_items_file]
        query [] headers [] request None, response Some("Upload");
    "POST" "/api/v3/uploads/direct" => [begin_direct_upload, upload_direct]
        query [] headers [] request Some("DirectUploadRequest"), response Some("DirectUpload");
    "POST" "/api/v3/uploads/direct/{id}" => [complete_direct_upload, upload_direct]
        query [] headers [] request None, response Some("Upload");
    "GET" "/api/v3/uploads/{id}" => [get_upload]
        query [] headers [] request None, response Some("Upload");
    "POST" "/api/v3/batches" => [create_batch]
        query [] headers ["Idempotency-Key"] request Some("BatchRequest"), response Some("Batch");
    "GET" "/api/v3/batches" => [batches]
        query ["limit", "before"] headers [] request None, response Some("BatchList");
    "GET" "/api/v3/batches/{batch_id}" => [batch]
        query [] headers [] request None, response Some("Batch");
    "DELETE" "/api/v3/batches/{batch_id}" => [delete_batch]
        query [] headers [] request None, response Some("Deletion");
    "GET" "/api/v3/batches/{batch_id}/items" => [batch_items]
        query ["status", "after", "limit"] headers [] request None, response Some("BatchItemList");
    "POST" "/api/v3/batches/{batch_id}/cancel" => [cancel_batch]
        query [] headers [] request None, response Some("Batch");
    "POST" "/api/v3/batches/{batch_id}/retry" => [retry_batch]
        query [] headers [] request None, response Some("Batch");
    "GET" "/api/v3/batches/{batch_id}/webhooks" => [batch_webhook_deliveries]
        query [] headers [] request None, response Some("WebhookDeliveries");
    "GET" "/api/v3/batches/{batch_id}/events" => [batch_events]
        query [] headers ["Last-Event-ID"] request None, response None;
    "GET" "/api/v3/batches/{batch_id}/results.jsonl" => [download_batch_results]
        query [] headers [] request None, response None;
    "GET" "/api/v3/batches/{batch_id}/results.zip" => [download_batch_zip]
        query [] headers [] request None, response None;
    "GET" "/api/v3/audit" => [audit]
        query ["action", "since", "before", "limit"] headers [] request None, response Some("AuditList");
    "GET" "/api/v3/usage" => [usage]
        query [] headers [] request None, response Some("SpendReport");
    "GET" "/api/v3/webhooks/secret" => [webhook_secret]
        query [] headers [] request None, response Some("WebhookSecret");
    "POST" "/api/v3/webhooks/secret/rotate" => [rotate_webhook_secret]
        query [] headers [] request None, response Some("WebhookSecret");
    "GET" "/api/v3/webhooks/endpoint" => [webhook_endpoint]
        query [] headers [] request None, response Some("WebhookEndpoint");
    "PUT" "/api/v3/webhooks/endpoint" => [set_webhook_endpoint]
        query [] headers [] request Some("WebhookEndpointRequest"), response Some("WebhookEndpoint");
    "DELETE" "/api/v3/webhooks/endpoint" => [remove_webhook_endpoint]
        query [] headers [] request None, response Some("WebhookEndpoint");
    "GET" "/api/v3/runs/{run_id}/webhooks" => [webhook_deliveries]
        query [] headers [] request None, response Some("WebhookDeliveries");
    "POST" "/api/v3/runs/{run_id}/webhooks/{delivery}/replay" => [replay_delivery]
        query [] headers [] request None, response Some("WebhookDelivery");
    "POST" "/api/v2/tryon/run" => [v2_run]
        query [] headers ["Idempotency-Key"] request Some("V2Run_tryon"), response Some("RunHandle");
    "GET" "/api/v2/tryon/status/{run_id}" => [v2_status]
        query [] headers [] request None, response Some("V2Status");
    "POST" "/api/v2/tryon/pro/run" => [v2_run]
        query [] headers ["Idempotency-Key"] request Some("V2Run_tryon_pro"), response Some("RunHandle");
    "GET" "/api/v2/tryon/pro/status/{run_id}" => [v2_status]
        query [] headers [] request None, response Some("V2Status");
    "POST" "/api/v2/virtualmodel/run" => [v2_run]
        query [] headers ["Idempotency-Key"] request Some("V2Run_virtualmodel"), response Some("RunHandle");
    "GET" "/api/v2/virtualmodel/status/{run_id}" => [v2_status]
        query [] headers [] request None, response Some("V2Status");
    "POST" "/api/v2/fabric/run" => [v2_run]
        query [] headers ["Idempotency-Key"] request Some("V2Run_fabric"), response Some("RunHandle");
    "GET" "/api/v2/fabric/status/{run_id}" => [v2_status]
        query [] headers [] request None, response Some("V2Status");
    "POST" "/api/v2/sketchtodress/run" => [v2_run]
        query [] headers ["Idempotency-Key"] request Some("V2Run_sketchtodress"), response Some("RunHandle");
    "GET" "/api/v2/sketchtodress/status/{run_id}" => [v2_status]
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_names_methods_and_paths_once() {
        let mut seen = std::collections::HashSet::new();
        for op in OPERATIONS {
            assert!(seen.insert((op.method, op.path)), "{} {} twice", op.method, op.path);
            assert!(!op.client_methods.is_empty());
        }
    }
}
