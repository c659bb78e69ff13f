//! `/openapi.json`. The operations (paths, parameters, prose) are written here by hand,
//! beside the routes (`v3.rs`, `v2.rs`, `console.rs`, `lib.rs`); every shape's schema is
//! generated from its type in `atelier-wire`, and the tools' input schemas and the v2
//! families come from `atelier-core`. Tests keep the operations in step: every documented
//! operation must be routed (`crates/cli/tests/integration/interface/api_v3.rs`), the
//! document is pinned by a snapshot, and Schemathesis checks every answer against it
//! (`tests/contract.sh`). A new route needs its entry here.

use atelier_core::tools::TOOLS;
use atelier_core::v2::Family;
use atelier_wire::{ParamKind, ToolParam};
use serde_json::{json, Map, Value};

/// The `RateLimit-*` headers every answer to a keyed request carries while rate limits are on.
fn rate_limit_headers() -> Map<String, Value> {
    ["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"]
        .iter()
        .map(|h| (h.to_string(), json!({"$ref": format!("#/components/headers/{h}")})))
        .collect()
}

fn op(summary: &str, body: Option<&str>, ok: &str, errors: &[u16]) -> Value {
    let mut responses = Map::new();
    responses.insert("200".into(), json!({"description": "OK", "headers": rate_limit_headers(), "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{ok}")}}}}));
    // Every keyed operation may answer 429 RateLimited; run endpoints (which answer a run
    // handle) also ConcurrencyLimited.
    let mut codes = errors.to_vec();
    codes.push(429);
    codes.sort_unstable();
    for code in codes {
        let mut response = json!({"description": "Error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}}});
        if code == 429 {
            let mut headers = rate_limit_headers();
            headers.insert("Retry-After".into(), json!({"$ref": "#/components/headers/Retry-After"}));
            response["description"] = json!(if ok == "RunHandle" {
                "Too many requests with this key (RateLimited), too many unfinished runs (ConcurrencyLimited), or too many runs waiting to start (QueueFull)"
            } else {
                "Too many requests with this key (RateLimited)"
            });
            response["headers"] = Value::Object(headers);
        }
        if code == 402 {
            response["description"] = json!("The balance does not cover the price (InsufficientTokens), or the price would \
cross a spend limit of the key or of its account for the UTC day or month (SpendLimitReached: `applies_to`, `period`, \
`limit`, `used`, `required`, `resets_at`); nothing was made");
        }
        responses.insert(code.to_string(), response);
    }
    let mut o = json!({"summary": summary, "security": [{"ApiKey": []}], "responses": responses});
    if let Some(body) = body {
        o["requestBody"] = json!({"required": true, "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{body}")}}}});
    }
    o
}

/// A run endpoint: it takes an optional `Idempotency-Key`, marks a replayed answer with
/// `Idempotent-Replayed: true`, and may answer 409 `IdempotencyConflict` (422
/// `IdempotencyKeyReused` shares the 422 of invalid input).
fn idempotent(mut operation: Value) -> Value {
    operation["parameters"] = json!([{"name": "Idempotency-Key", "in": "header", "required": false,
        "description": "The same key with the same body within 24 hours gets the first accepted answer again (with Idempotent-Replayed: true) and starts nothing; a refused request leaves its key unused. Per account; 1-255 visible ASCII characters",
        "schema": {"type": "string", "minLength": 1, "maxLength": crate::idempotency::MAX_KEY_LEN, "pattern": "^[!-~]+$"}}]);
    operation["responses"]["200"]["headers"]["Idempotent-Replayed"] = json!({
        "description": "Present, `true`, when this is the recorded answer of an earlier request with the same Idempotency-Key",
        "schema": {"type": "string", "enum": ["true"]}});
    operation["responses"]["409"]["description"] =
        json!("A request with the same Idempotency-Key is still being processed (IdempotencyConflict)");
    operation
}

fn path_param(mut operation: Value, name: &str) -> Value {
    operation["parameters"] =
        json!([{"name": name, "in": "path", "required": true, "schema": {"type": "string"}}]);
    operation
}

/// The `{name}` of `/api/v3/workflow/{name}`: the rule of
/// `atelier_core::workflow::validate_workflow_name`, in words (a JSON Schema pattern cannot say
/// "no control or invisible formatting character" portably).
fn workflow_name_param(mut operation: Value) -> Value {
    operation["parameters"] = json!([{"name": "name", "in": "path", "required": true,
        "description": "The workflow name, percent-encoded as a path segment (a space is %20, `%` is %25, a literal `+` stays `+`). \
1 to 100 characters (Unicode code points, after NFC normalisation): no `/` (also not as %2F), no control character, \
no invisible formatting character (bidirectional marks and overrides, zero-width space, …), no white space at either end, \
not `.` or `..`. Names are compared after NFC normalisation, otherwise exactly (case counts). Anything else is 422 InvalidInput.",
        "schema": {"type": "string", "minLength": 1, "maxLength": atelier_core::workflow::WORKFLOW_NAME_MAX_CHARS}}]);
    operation
}

fn tool_schema(params: &[atelier_core::params::ParamSpec]) -> Value {
    let mut props = Map::new();
    let mut required = Vec::new();
    for p in params {
        let view = ToolParam::from(p);
        let mut schema = match view.kind {
            ParamKind::Image => {
                json!({"type": "string", "description": "Public URL, data URI, base64, or upload:<id> (POST /api/v3/uploads)"})
            }
            ParamKind::Select => json!({"type": "string", "enum": view.values}),
            ParamKind::Number => json!({"type": "number"}),
            ParamKind::Boolean => json!({"type": "boolean"}),
            ParamKind::String | ParamKind::Unknown => json!({"type": "string"}),
        };
        if let Some(d) = view.default {
            schema["default"] = d;
        }
        if let Some(min) = view.min {
            schema["minimum"] = min;
        }
        if let Some(max) = view.max {
            schema["maximum"] = max;
        }
        if view.kind == ParamKind::Number {
            if let Some(values) = view.values {
                schema["enum"] = json!(values);
            }
        }
        if view.required {
            required.push(p.name);
        }
        props.insert(p.name.to_string(), schema);
    }
    json!({"type": "object", "additionalProperties": false, "properties": props, "required": required})
}

/// Response headers of rate and concurrency limits (IETF RateLimit fields, draft 03+).
fn headers() -> Value {
    let int =
        |description: &str| json!({"description": description, "schema": {"type": "integer", "minimum": 0}});
    json!({
        "RateLimit-Limit": int("Requests this key may make at once (the burst)"),
        "RateLimit-Remaining": int("Requests this key may still make at once"),
        "RateLimit-Reset": int("Seconds until the full burst is available again"),
        "Retry-After": int("Seconds to wait before trying again"),
    })
}

/// A console operation (`/console/api/*`): authorized by the session cookie; a change also
/// needs the session's CSRF token. `ok` is a schema, or `None` for 204.
fn console_op(summary: &str, body: Option<&str>, ok: Option<&str>, errors: &[u16], changes: bool) -> Value {
    let mut responses = Map::new();
    match ok {
        Some(ok) => responses.insert("200".into(), json!({"description": "OK", "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{ok}")}}}})),
        None => responses.insert("204".into(), json!({"description": "Done"})),
    };
    let mut codes = errors.to_vec();
    codes.push(401);
    if changes {
        codes.push(403);
    }
    codes.sort_unstable();
    codes.dedup();
    for code in codes {
        let description = match code {
            401 => "No session, or it ended (SessionRequired)",
            403 => "Without the session's CSRF token, or from another site (Forbidden)",
            _ => "Error",
        };
        responses.insert(code.to_string(), json!({"description": description, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}}}));
    }
    let mut o = json!({"summary": summary, "tags": ["console"], "security": [{"ConsoleSession": []}], "responses": responses});
    if changes {
        o["parameters"] = json!([{"name": "X-CSRF-Token", "in": "header", "required": true,
            "description": "The session's CSRF token (from sign-in or GET /console/api/session)", "schema": {"type": "string"}}]);
    }
    if let Some(body) = body {
        o["requestBody"] = json!({"required": true, "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{body}")}}}});
    }
    o
}

fn add_param(operation: &mut Value, param: Value) {
    match operation["parameters"].as_array_mut() {
        Some(list) => list.push(param),
        None => operation["parameters"] = json!([param]),
    }
}

fn query(name: &str, description: &str, schema: Value) -> Value {
    json!({"name": name, "in": "query", "required": false, "description": description, "schema": schema})
}

/// `/api/v3/batches` (`batches.rs`).
fn batch_paths(paths: &mut Map<String, Value>) {
    let mut create = idempotent(op(
        "Run a tool or a saved workflow once per item, the whole price reserved up front",
        Some("BatchRequest"),
        "Batch",
        &[400, 401, 402, 404, 409, 413, 422],
    ));
    create["description"] = json!("Extension. Every item is compiled and priced (the shared `input` with the item's own \
values over it) and its images checked (URLs against the input policy, `upload:<id>` as the account's own uploads; inline \
image data is refused: 422 naming `items[i].param`), then the price of every item is reserved at once, or 402 \
InsufficientTokens with the total (`required`) and the balance, and nothing is made. Items then run a few at a time \
(`[batches] in_flight` runs of one batch at once, round robin with other batches), in the `bulk` lane unless `priority` \
says otherwise. A failed or canceled item's tokens are released as a run's are. With `webhook_url`, a signed \
`batch.completed` POST (body: WebhookBatchEvent) is sent each time the batch ends.");
    paths.insert(
        "/api/v3/batches".into(),
        json!({
            "post": create,
            "get": with_params(op("The account's batches, newest first", None, "BatchList", &[400, 401]), vec![
                query("limit", "At most this many (1-100, 20 by default)", json!({"type": "integer", "minimum": 1, "maximum": 100})),
                query("before", "The previous page's next_before", json!({"type": "integer"})),
            ]),
        }),
    );
    paths.insert(
        "/api/v3/batches/{batch_id}".into(),
        json!({
            "get": path_param(op("A batch: its items by state, tokens and progress", None, "Batch", &[401, 404, 410]), "batch_id"),
            "delete": path_param(op("Delete a batch that ended, with every run of it: their outputs and stored inline images now, the ledger lines kept; later reads of the batch and its runs answer 410 Deleted", None, "Deletion", &[401, 404, 409]), "batch_id"),
        }),
    );
    let mut items = path_param(
        op(
            "A page of a batch's items, in order, with their runs' outputs and errors",
            None,
            "BatchItemList",
            &[400, 401, 404, 410, 422],
        ),
        "batch_id",
    );
    for param in [
        query(
            "status",
            "Only items in this state",
            json!({"type": "string", "enum": ["pending", "queued", "running", "succeeded", "failed", "canceled"]}),
        ),
        query("after", "The previous page's next_after (an item index)", json!({"type": "integer"})),
        query(
            "limit",
            "At most this many (1-100, 50 by default)",
            json!({"type": "integer", "minimum": 1, "maximum": 100}),
        ),
    ] {
        add_param(&mut items, param);
    }
    paths.insert("/api/v3/batches/{batch_id}/items".into(), json!({"get": items}));
    paths.insert(
        "/api/v3/batches/{batch_id}/cancel".into(),
        json!({"post": path_param(op("Cancel a batch: pending items will not start, its runs are canceled, what it holds is given back", None, "Batch", &[401, 404, 410]), "batch_id")}),
    );
    paths.insert(
        "/api/v3/batches/{batch_id}/retry".into(),
        json!({"post": path_param(op("Run the failed items again (new runs, their price reserved again; the failed runs kept as attempts)", None, "Batch", &[401, 402, 404, 410]), "batch_id")}),
    );
    paths.insert(
        "/api/v3/batches/{batch_id}/webhooks".into(),
        json!({"get": path_param(op("A batch's webhook deliveries (batch.completed) and every attempt", None, "WebhookDeliveries", &[401, 404, 410]), "batch_id")}),
    );
    let mut events = path_param(
        op(
            "Follow a batch: Server-Sent Events of its progress, then its final state",
            None,
            "Batch",
            &[401, 404, 410],
        ),
        "batch_id",
    );
    events["responses"]["200"] = json!({"description": "A text/event-stream: a `progress` event (data: Batch) whenever its items' counts change (at most twice a second), then one `status` event (data: the Batch once finished or canceled, id `end`), then the stream ends. Comments every 15 s keep it open. An event's id is its counts: send it as Last-Event-ID to hear only of what changed since",
        "content": {"text/event-stream": {"schema": {"type": "object", "required": ["event", "data"],
            "description": "One event of the stream",
            "properties": {
                "event": {"type": "string", "enum": ["progress", "status"]},
                "id": {"type": "string", "description": "pending.queued.running.succeeded.failed.canceled (`end` for the status event)"},
                "data": {"type": "string", "contentMediaType": "application/json",
                    "description": "JSON: the Batch", "contentSchema": {"$ref": "#/components/schemas/Batch"}},
                "retry": {"type": "integer"}}}}}});
    add_param(
        &mut events,
        json!({"name": "Last-Event-ID", "in": "header", "required": false,
        "description": "The id of the last event received", "schema": {"type": "string"}}),
    );
    paths.insert("/api/v3/batches/{batch_id}/events".into(), json!({"get": events}));
    for (file, summary, content) in [
        ("results.jsonl", "Every item as a line of JSON (a BatchItem), streamed", "application/x-ndjson"),
        ("results.zip", "Every succeeded item's outputs as a ZIP, each under its ref (or item-<index>) and output name, streamed", "application/zip"),
    ] {
        let mut operation = path_param(op(summary, None, "BatchItem", &[401, 404, 410]), "batch_id");
        operation["responses"]["200"]["content"] = json!({content: {"schema": {"type": "string", "format": "binary"}}});
        paths.insert(format!("/api/v3/batches/{{batch_id}}/{file}"), json!({"get": operation}));
    }
}

fn with_params(mut operation: Value, params: Vec<Value>) -> Value {
    for param in params {
        add_param(&mut operation, param);
    }
    operation
}

/// The console's routes (`console.rs`).
fn console_paths(paths: &mut Map<String, Value>) {
    let mut sign_in = console_op(
        "Sign in with an API key: a session cookie and a CSRF token",
        Some("SignIn"),
        Some("Session"),
        &[400, 403, 422, 429],
        false,
    );
    sign_in["security"] = json!([]);
    sign_in["description"] = json!("Sets the session cookie (atelier_session, or __Host-atelier_session with Secure behind HTTPS): HttpOnly, SameSite=Strict, Path=/. Failed sign-ins are limited per client address (429 RateLimited).");
    sign_in["responses"]["401"]["description"] = json!("The key is not valid (Unauthorized)");
    sign_in["responses"]["429"]["headers"] =
        json!({"Retry-After": {"$ref": "#/components/headers/Retry-After"}});
    paths.insert("/console/api/session".into(), json!({
        "post": sign_in,
        "get": console_op("The session: account, CSRF token, expiry and balance", None, Some("Session"), &[], false),
        "delete": console_op("Sign out", None, None, &[], true),
    }));
    let mut new_key = console_op(
        "A new API key, shown once, with the scopes the body names (run and read without a body; never beyond the session's own)",
        Some("NewKeyRequest"),
        Some("NewKey"),
        &[400, 422],
        true,
    );
    new_key["requestBody"]["required"] = json!(false);
    paths.insert(
        "/console/api/keys".into(),
        json!({
            "get": console_op("The account's API keys, by prefix", None, Some("KeyList"), &[], false),
            "post": new_key,
        }),
    );
    let mut revoke = console_op(
        "Revoke an API key (and end the sessions signed in with it)",
        None,
        Some("Key"),
        &[404, 409, 422],
        true,
    );
    add_param(
        &mut revoke,
        json!({"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}),
    );
    paths.insert("/console/api/keys/{id}".into(), json!({"delete": revoke}));
    let mut limits = console_op(
        "Set a key's spend limits (left-out fields unchanged, null: the operator's default, -1: none); never above the session's own key's limits (403)",
        Some("LimitsRequest"),
        Some("Key"),
        &[400, 404, 422],
        true,
    );
    add_param(
        &mut limits,
        json!({"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}),
    );
    paths.insert("/console/api/keys/{id}/limits".into(), json!({"put": limits}));
    let mut ledger =
        console_op("The account's ledger, newest first", None, Some("Ledger"), &[400, 422], false);
    add_param(
        &mut ledger,
        query("kind", "Only lines of this kind", atelier_wire::schema::reference("LedgerKind")),
    );
    add_param(&mut ledger, query("run_id", "Only lines of this run", json!({"type": "string"})));
    add_param(
        &mut ledger,
        query(
            "before",
            "Lines older than this id (the previous page's next_before)",
            json!({"type": "integer"}),
        ),
    );
    add_param(&mut ledger, query("limit", "Lines per page, 1-200 (50)", json!({"type": "integer"})));
    paths.insert("/console/api/ledger".into(), json!({"get": ledger}));
    let mut usage =
        console_op("Tokens charged and nodes run per UTC day", None, Some("Usage"), &[400, 422], false);
    add_param(
        &mut usage,
        query(
            "days",
            "Days up to today, 1-366 (30)",
            json!({"type": "integer", "minimum": 1, "maximum": 366}),
        ),
    );
    paths.insert("/console/api/usage".into(), json!({"get": usage}));
    paths.insert("/console/api/runs/{run_id}".into(), json!({"get": path_param(console_op("A run with the graph it ran", None, Some("RunDetail"), &[404], false), "run_id")}));
    let mut rerun = path_param(
        console_op(
            "Run a run's target again with the same input",
            None,
            Some("RunHandle"),
            &[400, 402, 404, 409, 422, 429],
            true,
        ),
        "run_id",
    );
    add_param(
        &mut rerun,
        json!({"name": "X-CSRF-Token", "in": "header", "required": true, "schema": {"type": "string"}}),
    );
    paths.insert("/console/api/runs/{run_id}/rerun".into(), json!({"post": rerun}));
}

/// [`document`] as the bytes `/openapi.json` answers, made once: the document depends on
/// nothing configured, and generating its schemas is not free.
pub fn document_bytes() -> axum::body::Bytes {
    static BYTES: std::sync::LazyLock<axum::body::Bytes> =
        std::sync::LazyLock::new(|| crate::render::to_bytes(&document()));
    BYTES.clone()
}

/// The OpenAPI 3.1 document of the whole interface.
pub fn document() -> Value {
    let mut paths = Map::new();
    let mut run = idempotent(op(
        "Start a run of a tool or a saved workflow",
        Some("RunRequest"),
        "RunHandle",
        &[400, 401, 402, 404, 409, 413, 422],
    ));
    add_param(
        &mut run,
        json!({"name": "Prefer", "in": "header", "required": false,
        "description": "Extension: `wait=N` (RFC 7240) waits up to N seconds (at most 60, or the server's max_wait_secs) for the run to finish; when it does, the handle carries the final status under `status` and the answer has Preference-Applied",
        "schema": {"type": "string", "pattern": "^wait=[0-9]{1,2}$"}}),
    );
    run["responses"]["200"]["headers"]["Preference-Applied"] = json!({
        "description": "`wait=N` when the run finished within the wait asked for, and `status` holds its final status",
        "schema": {"type": "string"}});
    paths.insert("/api/v3/run".into(), json!({"post": run}));
    let mut events = path_param(
        op(
            "Follow a run: Server-Sent Events of its nodes' changes, then its final status",
            None,
            "RunStatus",
            &[401, 404, 410],
        ),
        "run_id",
    );
    events["responses"]["200"] = json!({"description": "A text/event-stream: `node` events (data: NodeEvent) as nodes change, then one `status` event (data: the final RunStatus, id `end`), then the stream ends. Comments every 15 s keep it open. Send the last event's id as Last-Event-ID to resume",
        "content": {"text/event-stream": {"schema": {"type": "object", "required": ["event", "data"],
            "description": "One event of the stream",
            "properties": {
                "event": {"type": "string", "enum": ["node", "status"]},
                "id": {"type": "string", "description": "The state of every node this event reflects (`end` for the status event)"},
                "data": {"type": "string", "contentMediaType": "application/json",
                    "description": "JSON: a NodeEvent for `node`, the final RunStatus for `status`",
                    "contentSchema": {"anyOf": [{"$ref": "#/components/schemas/NodeEvent"}, {"$ref": "#/components/schemas/RunStatus"}]}},
                "retry": {"type": "integer"}}}}}});
    add_param(
        &mut events,
        json!({"name": "Last-Event-ID", "in": "header", "required": false,
        "description": "The id of the last event received: only what changed since is sent", "schema": {"type": "string"}}),
    );
    paths.insert("/api/v3/status/{run_id}/events".into(), json!({"get": events}));
    paths.insert(
        "/api/v3/webhooks/secret".into(),
        json!({"get": op("The account's webhook signing secret (made on first read)", None, "WebhookSecret", &[401])}),
    );
    let mut audit = op(
        "Extension. The account's audit log, newest first: keys made, scoped, limited and revoked, sign-ins (and failed ones), sign-outs, workflows saved and deleted, webhook secrets rotated, webhook endpoints set and removed, runs and batches deleted, and the operator's changes to the account. Each entry holds the hash of the one before it",
        None,
        "AuditList",
        &[400, 401, 422],
    );
    audit["parameters"] = json!([
        {"name": "action", "in": "query", "required": false, "description": "Only actions that start with this (`key.`)", "schema": {"type": "string"}},
        {"name": "since", "in": "query", "required": false, "description": "Only entries at or after this time (RFC 3339, or a date)", "schema": {"type": "string"}},
        {"name": "before", "in": "query", "required": false, "description": "Entries older than this id (the previous page's next_before)", "schema": {"type": "integer"}},
        {"name": "limit", "in": "query", "required": false, "description": "Entries per page, 1 to 500 (50)", "schema": {"type": "integer", "minimum": 1, "maximum": 500}},
    ]);
    paths.insert("/api/v3/audit".into(), json!({"get": audit}));
    paths.insert(
        "/api/v3/usage".into(),
        json!({"get": op("Extension. The spend limits of the calling key and of its account (tokens per UTC day and month; the key's cap on running nodes), and what each used in the current period", None, "SpendReport", &[401])}),
    );
    paths.insert(
        "/api/v3/webhooks/endpoint".into(),
        json!({
            "get": op("Extension. The account's own webhook endpoint, where its `spend.threshold` events go (body: WebhookSpendEvent; a key or the account reached 80% or 100% of a daily or monthly spend limit, once per period), and its latest 50 deliveries", None, "WebhookEndpoint", &[401]),
            "put": op("Extension. Set the account's webhook endpoint: an absolute http or https URL, checked against the address policy of image URLs", Some("WebhookEndpointRequest"), "WebhookEndpoint", &[400, 401, 413, 422]),
            "delete": op("Extension. Remove the account's webhook endpoint: spend alerts are no longer sent (deliveries already queued still are)", None, "WebhookEndpoint", &[401]),
        }),
    );
    paths.insert(
        "/api/v3/webhooks/secret/rotate".into(),
        json!({"post": op("A new webhook signing secret; the previous one still signs for 24 hours", None, "WebhookSecret", &[401])}),
    );
    let mut replay = op(
        "Send one of a run's webhook deliveries again, now: a new attempt with the same webhook-id (receivers deduplicate it), in the delivery log; 409 while it is pending",
        None,
        "WebhookDelivery",
        &[401, 404, 409, 410],
    );
    replay["parameters"] = json!([
        {"name": "run_id", "in": "path", "required": true, "schema": {"type": "string"}},
        {"name": "delivery", "in": "path", "required": true, "description": "The delivery's id (its webhook-id, msg_…), from GET /api/v3/runs/{run_id}/webhooks", "schema": {"type": "string"}},
    ]);
    paths.insert("/api/v3/runs/{run_id}/webhooks/{delivery}/replay".into(), json!({"post": replay}));
    paths.insert(
        "/api/v3/runs/{run_id}/webhooks".into(),
        json!({"get": path_param(op("A run's webhook deliveries and every attempt", None, "WebhookDeliveries", &[401, 404]), "run_id")}),
    );
    paths.insert(
        "/api/v3/status/{run_id}".into(),
        json!({"get": path_param(op("Poll a run", None, "RunStatus", &[401, 404, 410]), "run_id")}),
    );
    paths.insert(
        "/api/v3/cancel/{run_id}".into(),
        json!({"post": path_param(op("Cancel a run", None, "RunStatus", &[401, 404, 410]), "run_id")}),
    );
    let mut runs = op("Recent runs of the account", None, "RunList", &[400, 401, 422]);
    add_param(&mut runs, query("limit", "Runs per page, 1-100 (20)", json!({"type": "integer"})));
    add_param(
        &mut runs,
        query(
            "before",
            "Runs created before this time (the previous page's next_before)",
            json!({"type": "integer"}),
        ),
    );
    add_param(
        &mut runs,
        query(
            "status",
            "Extension: only runs in this state",
            json!({"type": "string", "enum": atelier_core::status::RunStatus::NAMES}),
        ),
    );
    add_param(
        &mut runs,
        query("target", "Extension: only runs of this tool or workflow", json!({"type": "string"})),
    );
    paths.insert("/api/v3/runs".into(), json!({"get": runs}));
    paths.insert(
        "/api/v3/runs/{run_id}".into(),
        json!({"delete": path_param(op("Delete a finished run: its outputs and stored inputs now, its ledger lines kept; later reads answer 410 Deleted", None, "Deletion", &[401, 404, 409]), "run_id")}),
    );
    paths.insert(
        "/api/v3/workflow/{name}".into(),
        json!({
            "get": workflow_name_param(op("Describe a workflow", None, "WorkflowDescription", &[401, 404, 422])),
            "put": workflow_name_param(op("Save a workflow to the account", Some("Workflow"), "WorkflowDescription", &[400, 401, 422])),
            "delete": workflow_name_param(op("Delete an account workflow", None, "Deleted", &[401, 404, 409, 422])),
        }),
    );
    paths.insert(
        "/api/v3/workflows".into(),
        json!({"get": op("List workflows and system templates", None, "WorkflowList", &[401])}),
    );
    let mut validate = op(
        "Every problem of a workflow document, and what discovery will show of it (saves nothing)",
        Some("Workflow"),
        "Validation",
        &[400, 401],
    );
    add_param(
        &mut validate,
        query("name", "The name it would be saved under (untitled)", json!({"type": "string"})),
    );
    paths.insert("/api/v3/workflows/validate".into(), json!({"post": validate}));
    paths.insert(
        "/api/v3/tools".into(),
        json!({"get": op("Tools, their parameters, prices and fidelity", None, "ToolList", &[401])}),
    );
    paths.insert("/api/v3/estimate".into(), json!({"post": op("Price a run without starting it", Some("RunRequest"), "Estimate", &[400, 401, 404, 422])}));
    let mut upload =
        op("Upload an image, to name it in runs as upload:<id>", None, "Upload", &[400, 401, 413, 422]);
    upload["description"] = json!(format!(
        "Extension. The image is the body (raw bytes, any content type but multipart), or the part named `{}` of a \
multipart/form-data body. It is checked as an image input is (JPEG, PNG, WebP or GIF by its first bytes; the input byte, \
pixel and side limits, read from its header), kept for the account under its SHA-256 (the same bytes again: the same \
id, stored once, kept longer), and may be named by the image inputs of runs (tools and workflows, v3 and v2) as `upload:<id>` until `expires_at` \
(24 hours from the last upload by default). Another account's id is 404 UploadNotFound. A body (or `file` part) sent as \
`application/x-ndjson`, `application/jsonl` or `text/csv` (a part also by its file name's `.jsonl` or `.csv`) is a batch's items \
file instead: checked as UTF-8 with every line or row an item, answered with `format` `jsonl` or `csv`, and named by a batch's \
`items_file`.",
        crate::uploads::FILE_PART
    ));
    upload["requestBody"] = json!({"required": true, "content": {
        "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
        "image/*": {"schema": {"type": "string", "format": "binary"}},
        "application/x-ndjson": {"schema": {"type": "string"}},
        "text/csv": {"schema": {"type": "string"}},
        "multipart/form-data": {"schema": {"type": "object", "required": [crate::uploads::FILE_PART],
            "properties": {crate::uploads::FILE_PART: {"type": "string", "format": "binary"}}}}}});
    paths.insert("/api/v3/uploads".into(), json!({"post": upload}));
    paths.insert(
        "/api/v3/uploads/{id}".into(),
        json!({"get": path_param(op("An upload of this account, while runs may name it", None, "Upload", &[401, 404]), "id")}),
    );
    let mut direct = op(
        "Begin a direct upload: a signed URL of the storage to PUT the bytes to (S3 storage only)",
        Some("DirectUploadRequest"),
        "DirectUpload",
        &[400, 401, 409, 422],
    );
    direct["description"] = json!("Extension. The client sends the bytes straight to the bucket with `PUT url` (no API \
key; the URL is signed and valid for an hour), then completes the upload with `POST /api/v3/uploads/direct/{id}`, which \
checks them as `POST /api/v3/uploads` does. 409 Conflict where the storage is a local directory.");
    paths.insert("/api/v3/uploads/direct".into(), json!({"post": direct}));
    paths.insert(
        "/api/v3/uploads/direct/{id}".into(),
        json!({"post": path_param(op("Complete a direct upload: its bytes checked and kept as an upload", None, "Upload", &[401, 404, 413, 422]), "id")}),
    );
    batch_paths(&mut paths);
    for family in Family::ALL {
        let path = family.path();
        paths.insert(
            format!("/api/v2/{path}/run"),
            json!({"post": idempotent(op(&format!("Start a v2 {path} run"), Some(&format!("V2Run_{}", family.as_str())), "RunHandle", &[400, 401, 402, 404, 409, 413, 422]))}),
        );
        paths.insert(
            format!("/api/v2/{path}/status/{{run_id}}"),
            json!({"get": path_param(op(&format!("Poll a v2 {path} run"), None, "V2Status", &[401, 404, 410]), "run_id")}),
        );
    }
    paths.insert("/api/v2/user/tokens".into(), json!({"get": op("Token balance", None, "Tokens", &[401])}));
    paths.insert("/files/{key}".into(), json!({"get": {"summary": "An output file (an unguessable URL; with signed output URLs, one that carries expires and signature)", "responses": {
        "200": {"description": "The file"}, "206": {"description": "A byte range"}, "304": {"description": "Not modified"},
        "403": {"description": "Signed output URLs: unsigned, expired or forged (FileUrlInvalid)"},
        "404": {"description": "No such file"}, "410": {"description": "Retention ended"}, "416": {"description": "Range not satisfiable"}}}}));
    paths.insert(
        "/healthz".into(),
        json!({"get": {"summary": "Liveness", "responses": {"200": {"description": "Alive"}}}}),
    );
    paths.insert("/readyz".into(), json!({"get": {"summary": "Readiness", "responses": {"200": {"description": "Ready"}, "503": {"description": "Not ready"}}}}));

    // The shapes' schemas come from their types (`atelier-wire`); only the v2 bodies and the
    // tools' inputs, which are read as open objects, are made here.
    let mut schemas = atelier_wire::schema::components();
    for family in Family::ALL {
        let mut body = Map::new();
        body.insert("type".into(), json!("object"));
        body.insert(
            "description".into(),
            json!(format!("Mapped onto the v3 tool(s) of /api/v2/{}; v3 spellings accepted. Extension: webhook_url, webhook_events, priority, start_within_secs, cache and retention_secs as in RunRequest (a completed delivery's body is the v2 status)", family.path())),
        );
        schemas.insert(format!("V2Run_{}", family.as_str()), Value::Object(body));
    }
    for tool in TOOLS {
        schemas.insert(format!("Tool_{}", tool.name), tool_schema(tool.params));
    }
    console_paths(&mut paths);
    declare_scopes(&mut paths);
    links_and_examples(&mut paths, &mut schemas);
    json!({
        "openapi": "3.1.0",
        "info": {"title": "Atelier", "version": env!("CARGO_PKG_VERSION"),
                 "description": "Asynchronous fashion image generation: v3 unified runs and workflows, v2 per-tool endpoints. The web console's API (tag console) is under /console/api and authorized by a session cookie; /console/api/v3/* answers every /api/v3/* operation the same way for the signed-in account (a change also needs X-CSRF-Token)."},
        "paths": paths,
        "components": {"schemas": schemas, "headers": headers(), "securitySchemes": {"ApiKey": {"type": "apiKey", "in": "header", "name": "X-API-KEY", "description": "An API key. Each key holds scopes (run, read, workflows, webhooks, keys); an operation names the one it needs as its security requirement's scope and as x-atelier-scope, and a key without it gets 403 Forbidden"},
            "ConsoleSession": {"type": "apiKey", "in": "cookie", "name": "atelier_session", "description": "The console's session cookie, from POST /console/api/session (never accepted under /api)"}}},
    })
}

/// Every keyed operation says which scope it needs ([`crate::scopes`], the table the server
/// enforces): as the scope of its security requirement, as `x-atelier-scope`, and in its 403
/// answer.
fn declare_scopes(paths: &mut Map<String, Value>) {
    use crate::scopes::{needs, Needs};
    for (path, item) in paths.iter_mut() {
        let Some(item) = item.as_object_mut() else { continue };
        for (method, operation) in item.iter_mut() {
            let Some(Needs::Scope(scope)) = needs(&method.to_ascii_uppercase(), path) else { continue };
            let Some(requirements) = operation["security"].as_array_mut() else { continue };
            for requirement in requirements.iter_mut().filter_map(Value::as_object_mut) {
                for scopes in requirement.values_mut() {
                    *scopes = json!([scope.as_str()]);
                }
            }
            operation["x-atelier-scope"] = json!(scope.as_str());
            let lacks = format!("The key lacks the '{scope}' scope (Forbidden)");
            let responses = &mut operation["responses"];
            match responses["403"]["description"].as_str() {
                Some(csrf) => responses["403"]["description"] = json!(format!("{lacks}; or: {csrf}")),
                None => {
                    responses["403"] = json!({"description": lacks, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}}});
                }
            }
        }
    }
}

/// A 16×16 PNG (a red rectangle on grey) as a data URI: the image of the request examples.
const EXAMPLE_IMAGE: &str = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAAAHElEQVR42mN4TSJgoK+GExo2WNGohuGmYXAkPgAeOkKPWvYVBAAAAABJRU5ErkJggg==";

/// `{method}_{path}` with the path's segments joined by `_` and braces dropped, e.g.
/// `get_api_v3_status_run_id`.
fn operation_id(method: &str, path: &str) -> String {
    let segments: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| s.trim_matches(|c| c == '{' || c == '}').replace(['-', '.', '*'], "_"))
        .collect();
    format!("{method}_{}", segments.join("_"))
}

/// What lets a client (or a generated test) follow one answer into the next request, and
/// request examples that are accepted as they are:
/// * an `operationId` on every operation;
/// * links from the answers that create runs and workflows to the operations that read them
///   (a run's `id` → its status and cancel; a saved workflow's name → describe, delete; a
///   description's `sample_payload` → estimate);
/// * examples of the run, workflow and v2 bodies, with a real image;
/// * the `key` parameter of `/files/{key}`.
fn links_and_examples(paths: &mut Map<String, Value>, schemas: &mut Map<String, Value>) {
    for (path, item) in paths.iter_mut() {
        if let Some(item) = item.as_object_mut() {
            for (method, operation) in item.iter_mut() {
                operation["operationId"] = json!(operation_id(method, path));
            }
        }
    }
    let link = |path: &str, method: &str, parameters: Value| json!({"operationId": operation_id(method, path), "parameters": parameters});
    let run_links = json!({
        "status": link("/api/v3/status/{run_id}", "get", json!({"run_id": "$response.body#/id"})),
        "cancel": link("/api/v3/cancel/{run_id}", "post", json!({"run_id": "$response.body#/id"})),
    });
    paths["/api/v3/run"]["post"]["responses"]["200"]["links"] = run_links;
    for family in Family::ALL {
        let status = format!("/api/v2/{}/status/{{run_id}}", family.path());
        paths[&format!("/api/v2/{}/run", family.path())]["post"]["responses"]["200"]["links"] =
            json!({"status": link(&status, "get", json!({"run_id": "$response.body#/id"}))});
    }
    let estimate = json!({"operationId": operation_id("post", "/api/v3/estimate"), "requestBody": "$response.body#/sample_payload"});
    let workflow = &mut paths["/api/v3/workflow/{name}"];
    workflow["put"]["responses"]["200"]["links"] = json!({
        "describe": link("/api/v3/workflow/{name}", "get", json!({"name": "$request.path.name"})),
        "delete": link("/api/v3/workflow/{name}", "delete", json!({"name": "$request.path.name"})),
        "estimate": estimate,
    });
    workflow["get"]["responses"]["200"]["links"] = json!({"estimate": estimate});
    paths["/files/{key}"]["get"]["parameters"] = json!([{"name": "key", "in": "path", "required": true,
        "description": "The object key from an output URL, e.g. outputs/{run}/{node}/0.png (its slashes are part of the path)",
        "schema": {"type": "string"}},
        {"name": "expires", "in": "query", "required": false, "description": "With signed output URLs: the URL's expiry, Unix seconds (part of the URL a status gives)", "schema": {"type": "integer"}},
        {"name": "signature", "in": "query", "required": false, "description": "With signed output URLs: HMAC-SHA256 of the key and expiry, base64url (part of the URL a status gives)", "schema": {"type": "string"}}]);

    let img = EXAMPLE_IMAGE;
    schemas["RunRequest"]["examples"] = json!([
        {"type": "node", "target": "upscale", "input": {"image": img, "scale": 2}},
        {"type": "workflow", "target": "tryon-upscale", "input": {"garment": img, "Tryon.model_image": img}},
    ]);
    schemas["Workflow"]["examples"] = json!([{
        "name": "Try-on then upscale",
        "variables": {"garment": {"type": "image", "targets": ["Tryon.garment_image"]}},
        "nodes": [
            {"name": "Tryon", "tool": "virtual_tryon", "params": {"category": "tops"}},
            {"name": "Upscale", "tool": "upscale", "params": {"scale": 2}, "links": {"image": "Tryon.output"}},
        ],
        "outputs": {"final_image": "Upscale.output"},
    }]);
    for family in Family::ALL {
        let example = match family {
            Family::Tryon | Family::TryonPro => {
                json!({"category": "top", "model_image": img, "garment_image": img})
            }
            Family::VirtualModel => json!({"model_name": "Standard", "ethnicity": "any", "gender": "Female",
                "dresstype": "summer dress", "background": "studio"}),
            Family::Fabric => {
                json!({"category": "top", "model_image": img, "fabric_description": "red silk"})
            }
            Family::SketchToDress => json!({"image": img}),
        };
        schemas[&format!("V2Run_{}", family.as_str())]["examples"] = json!([example]);
    }
}
