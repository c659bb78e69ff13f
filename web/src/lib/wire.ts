// Generated from the OpenAPI document's schemas (crates/wire): do not edit.
// After a change of a wire type: ATELIER_BLESS=1 cargo test -p atelier-api --test generated

/** One entry of the audit log: a security-relevant change, who made it and from where. */
export interface AuditEntry {
  /** Its place in the log's chain, from 1 without gaps. */
  id: number;
  /** When (UTC, `YYYY-MM-DDTHH:MM:SS.ffffff`). */
  at: string;
  /** Who: `key:atl_abcd` (an API key, by prefix), `session:atl_abcd` (a console session of that key), `operator` (the command line), `system` or `anonymous` (a failed sign-in). */
  actor: string;
  /** The client's address, for changes made over HTTP. */
  address: string | null;
  /** What was done: `key.created`, `key.revoked`, `key.limits_set`, `session.signed_in`, `session.sign_in_failed`, `workflow.saved`, `run.deleted`, … */
  action: string;
  /** What it was done to: a key's prefix, a workflow's name, a run's id. */
  target: string | null;
  /** What changed (never a secret); null when the action says it all. */
  summary: unknown;
  /** The hash of the entry before it in the chain. */
  prev_hash: string;
  /** This entry's hash, over its fields and `prev_hash` (SHA-256, hex). */
  hash: string;
}

/** A page of the account's audit log, newest first. */
export interface AuditList {
  /** The entries. */
  entries: AuditEntry[];
  /** The `before` of the next page; null on the last. */
  next_before: number | null;
}

/** A batch (the answer of `POST /api/v3/batches`, `GET /api/v3/batches/{id}`, cancel and retry). */
export interface Batch {
  /** The batch id: `bat_…`. */
  id: string;
  /** Where it stands. */
  status: BatchState;
  /** `node` or `workflow`. */
  type: RunKind;
  /** The tool or workflow each item runs. */
  target: string;
  /** The lane its runs queue in. */
  priority: Priority;
  /** Its items by state. */
  items: BatchCounts;
  /** Its tokens. */
  tokens: BatchTokens;
  /** The share of its items that ended (succeeded, failed or canceled), 0 to 1. */
  progress: number;
  /** When it was accepted. */
  created_at: string;
  /** When its last item ended (or it was canceled); null while running. */
  finished_at: string | null;
  /** Retry only: how many failed items were started again. */
  retried?: number;
}

/** Items of a batch by state. */
export interface BatchCounts {
  /** Items in all. */
  total: number;
  /** Waiting for their turn. */
  pending: number;
  /** Their run is queued. */
  queued: number;
  /** Their run is running. */
  running: number;
  /** Their run succeeded. */
  succeeded: number;
  /** Their run failed. */
  failed: number;
  /** Canceled. */
  canceled: number;
}

/** The `type` of a batch webhook body. */
export type BatchEventType = "batch.completed";

/** One item of a batch, with its current run's results (a line of `results.jsonl`). */
export interface BatchItem {
  /** Its place in the batch, from 0. */
  index: number;
  /** The caller's reference, as sent. */
  ref: string | null;
  /** Where it stands. */
  status: ItemState;
  /** Its current run (`GET /api/v3/status/{id}`); null while pending or when canceled before it started. */
  run_id: string | null;
  /** Its earlier runs, oldest first (attempts a retry replaced). */
  attempts: string[];
  /** Tool batches: the output URLs once it succeeded. */
  output?: string[];
  /** Workflow batches: output name → its URL (a list when the node made several). */
  outputs?: Record<string, NamedOutput | null>;
  /** Why its run failed, or that it was canceled. */
  error: RunError | null;
}

/** `GET /api/v3/batches/{id}/items`: a page of items in order. */
export interface BatchItemList {
  /** The items. */
  items: BatchItem[];
  /** Pass as `after` for the next page; null on the last one. */
  next_after: number | null;
}

/** One item of a batch request. */
export interface BatchItemRequest {
  /** The item's input values, added to the batch's shared `input`. */
  input?: Record<string, unknown>;
  /** The caller's reference for the item (a SKU): echoed with its results and naming its files in `results.zip`. At most 200 characters. */
  ref?: string;
}

/** `GET /api/v3/batches`: the account's batches, newest first. */
export interface BatchList {
  /** The batches. */
  batches: BatchSummary[];
  /** Pass as `before` for the next page; null on the last one. */
  next_before: number | null;
}

/** The body of `POST /api/v3/batches`. */
export interface BatchRequest {
  /** `node` or `workflow`, as in a run. */
  type: RunKind;
  /** A tool name (type node) or a saved workflow's name (type workflow). */
  target: string;
  /** Values every item gets (an item's own value of the same key wins), as a run's input. */
  input?: Record<string, unknown>;
  /** The items, in order (at least one). Image values are URLs or uploads (`upload:<id>`): inline images are refused in a batch. Either `items` or `items_file`. */
  items?: BatchItemRequest[];
  /** The items as an uploaded JSONL or CSV file (`upload:<id>` of `POST /api/v3/uploads` sent as `application/x-ndjson` or `text/csv`): JSONL, one item object a line (`{"input": {...}, "ref": "..."}` or the inputs with `ref`); CSV, a header row of input names (`ref`: the reference) and one row per item, a cell typed by its parameter. */
  items_file?: string;
  /** The lane the items' runs queue in; `bulk` by default. */
  priority?: Priority;
  /** `false` runs every node afresh instead of filling it from the result cache. */
  cache?: boolean;
  /** Receives a signed `batch.completed` POST (a `WebhookBatchEvent`) each time the batch ends, as a run's `webhook_url` does; the items' runs send none of their own. */
  webhook_url?: string;
  /** How long each item's outputs are kept after its run finished, in seconds, as a run's `retention_secs`; never 0 (a batch's results are read after it ends). */
  retention_secs?: number;
}

/** Where a batch stands. */
export type BatchState = "running" | "finished" | "canceled";

/** A batch in a list. */
export interface BatchSummary {
  /** The batch id. */
  id: string;
  /** Where it stands. */
  status: BatchState;
  /** `node` or `workflow`. */
  type: RunKind;
  /** The tool or workflow. */
  target: string;
  /** Items in all. */
  total: number;
  /** When it was accepted. */
  created_at: string;
  /** When it ended; null while running. */
  finished_at: string | null;
}

/** A batch's tokens. */
export interface BatchTokens {
  /** Reserved for it in all: the whole price at acceptance, and again for retried items. */
  price: number;
  /** Held now: for items not started and by its unfinished runs. Released as they end. */
  reserved: number;
  /** Charged for its items' runs so far. */
  charged: number;
}

/** `DELETE /api/v3/workflow/{name}`. */
export interface Deleted {
  /** The name. */
  name: string;
  /** Always true. */
  deleted: boolean;
}

/** `DELETE /api/v3/runs/{run_id}`: what was deleted, and when (the first deletion's time, when it is asked again). */
export interface Deletion {
  /** The run's (or batch's) id. */
  id: string;
  /** Always true. */
  deleted: boolean;
  /** When it was deleted (UTC, ISO 8601). */
  deleted_at: string;
}

/** What a webhook delivery tells. */
export type DeliveryEvent = "completed" | "node" | "batch" | "spend";

/** The state of a webhook delivery. */
export type DeliveryState = "pending" | "delivered" | "failed";

/** A direct upload begun (`POST /api/v3/uploads/direct`, S3 storage only): send the bytes to `url` with `method` (no API key: the URL is signed), then `POST` to `complete`, which checks them as any upload and answers the `Upload`. */
export interface DirectUpload {
  /** The direct upload's id (`dup_…`), named by `complete`. */
  id: string;
  /** Where to send the bytes: a signed URL of the storage, valid until `expires_at`. */
  url: string;
  /** Always `PUT`. */
  method: string;
  /** The path to `POST` once the bytes are sent: `/api/v3/uploads/direct/{id}`. */
  complete: string;
  /** Until when `url` takes the bytes. */
  expires_at: string;
  /** The most bytes the completion accepts: an image's as an input's (`inputs.max_bytes`), an items file's as a request body's (`server.max_body_bytes`). */
  max_bytes: number;
}

/** The body of `POST /api/v3/uploads/direct`. */
export interface DirectUploadRequest {
  /** What will be sent: an image (any image type, the default), or an items file (`application/x-ndjson`, `application/jsonl` or `text/csv`). */
  content_type?: string;
}

/** The kind of engine that runs a tool. */
export type EngineKind = "builtin" | "comfyui" | "cog" | "onnx";

/** The error object of an error answer: a stable machine name, a message, and the fields that name's errors carry. */
export interface Error {
  /** The stable machine name (`InsufficientTokens`, `RunNotFound`, …). */
  name: "InvalidRequest" | "MissingInputs" | "Unauthorized" | "InsufficientTokens" | "SpendLimitReached" | "UnknownTool" | "WorkflowNotFound" | "RunNotFound" | "UploadNotFound" | "BatchNotFound" | "DeliveryNotFound" | "PayloadTooLarge" | "InvalidInput" | "InvalidImage" | "ReadOnlyTemplate" | "IdempotencyConflict" | "IdempotencyKeyReused" | "RateLimited" | "ConcurrencyLimited" | "QueueFull" | "FileNotFound" | "OutputExpired" | "FileUrlInvalid" | "Deleted" | "SessionRequired" | "Forbidden" | "KeyNotFound" | "Conflict" | "InternalError";
  /** What went wrong, in words. */
  message: string;
  /** MissingInputs: the absent keys. */
  missing?: string[];
  /** InvalidInput and InvalidImage: the value at fault; UploadNotFound in a run: the image input that names the upload. */
  field?: string;
  /** InvalidInput and InvalidImage: why. */
  reason?: string;
  /** InvalidInput: the allowed values of a select, or the known names. */
  allowed?: unknown[];
  /** InsufficientTokens and SpendLimitReached: the run's (or batch's) price. */
  required?: number;
  /** InsufficientTokens: the available balance. */
  balance?: number;
  /** The account's cap on unfinished runs (ConcurrencyLimited), the account's or the API key's cap on runs waiting to start (QueueFull), or the spend limit the price would cross, in tokens (SpendLimitReached). */
  limit?: number;
  /** SpendLimitReached: whose limit, `key` (the API key's own) or `account` (all keys of the account together). */
  applies_to?: "key" | "account";
  /** SpendLimitReached: the limit's period, `day` or `month` (UTC calendar periods). */
  period?: "day" | "month";
  /** SpendLimitReached: tokens reserved in the current period so far. */
  used?: number;
  /** SpendLimitReached: when the period ends and its usage starts again from zero (UTC, `YYYY-MM-DDTHH:MM:SS.ffffff`). */
  resets_at?: string;
  /** Seconds to wait (429). */
  retry_after?: number;
}

/** The body of an error answer: `{"error": {…}}`; on run endpoints `{"id": null, "error": {…}}`, the run-handle shape. */
export interface ErrorResponse {
  /** Run endpoints: null. */
  id?: null;
  /** The error. */
  error: Error;
}

/** `POST /api/v3/estimate`: a run's price; nothing is reserved. */
export interface Estimate {
  /** The whole run's price. */
  tokens: number;
  /** Node name → its price. */
  nodes: Record<string, number>;
  /** The account's available balance (absent in a validation's estimate). */
  balance?: number;
}

/** How faithful a tool's output is on the engine that runs it. */
export type Fidelity = "production" | "preview";

/** Where an item stands. */
export type ItemState = "pending" | "queued" | "running" | "succeeded" | "failed" | "canceled";

/** An API key of the account, by prefix (the key itself is shown once, when made). */
export interface Key {
  /** The key's id. */
  id: number;
  /** The key's first characters. */
  prefix: string;
  /** When it was made. */
  created_at: string;
  /** When it was last used. */
  last_used: string | null;
  /** When it was revoked. */
  revoked_at: string | null;
  /** The key this session signed in with. */
  current: boolean;
  /** What the key may do. */
  scopes: Scope[];
  /** Its spend limits and what it used of them. */
  spend: Spend;
}

/** The account's API keys. */
export interface KeyList {
  /** Every key, revoked ones included. */
  keys: Key[];
}

/** A page of the account's ledger, newest first. */
export interface Ledger {
  /** The lines. */
  entries: LedgerEntry[];
  /** Pass as `before` for the next page; null on the last one. */
  next_before: number | null;
}

/** A line of the account's ledger. */
export interface LedgerEntry {
  /** The line's id (pages go by it). */
  id: number;
  /** The run it belongs to. */
  run_id: string | null;
  /** The run's tool or workflow. */
  target: string | null;
  /** What the line records. */
  kind: LedgerKind;
  /** Tokens. */
  amount: number;
  /** When it was written. */
  created_at: string;
  /** `cache_hit`: the run whose outputs were copied. */
  source_run?: string;
}

/** The kind of a ledger line: a run reserves its price when accepted; when it ends, what its succeeded nodes cost is charged and the rest released. */
export type LedgerKind = "grant" | "reserve" | "charge" | "release" | "cache_hit";

/** Limit settings as stored: a number is the limit; -1 is no limit, whatever the operator's default; null follows the operator's default. */
export interface LimitSettings {
  /** Tokens per UTC day. */
  daily: number | null;
  /** Tokens per UTC month. */
  monthly: number | null;
  /** Keys: nodes running at once. */
  running_nodes: number | null;
}

/** The body of `PUT /console/api/keys/{id}/limits`. Each field left out stays as it is; a number sets the limit (0 or more; -1: no limit, whatever the operator's default), null returns it to the operator's default. A session never sets a limit above its own key's, nor lifts one its own key has. */
export interface LimitsRequest {
  /** Tokens per UTC day. */
  daily?: number;
  /** Tokens per UTC month. */
  monthly?: number;
  /** Nodes running at once (1 or more, or -1). */
  running_nodes?: number;
}

/** A named output of a workflow run: its URL, or a list when the node made several. */
export type NamedOutput = string | string[];

/** A new API key: its view and the key itself. */
export interface NewKey {
  /** The key's id. */
  id: number;
  /** The key's first characters. */
  prefix: string;
  /** When it was made. */
  created_at: string;
  /** When it was last used. */
  last_used: string | null;
  /** When it was revoked. */
  revoked_at: string | null;
  /** The key this session signed in with. */
  current: boolean;
  /** What the key may do. */
  scopes: Scope[];
  /** Its spend limits and what it used of them. */
  spend: Spend;
  /** The key itself: shown this once. */
  key: string;
}

/** The body of `POST /console/api/keys` (optional): the new key's scopes, `run` and `read` when left out; never beyond the session's own. */
export interface NewKeyRequest {
  /** What the new key may do. */
  scopes?: Scope[];
}

/** The data of a `node` event of /api/v3/status/{run_id}/events: a node's state or progress changed. */
export interface NodeEvent {
  /** The run. */
  run_id: string;
  /** The node's name (a node run's only node is named after its tool). */
  node: string;
  /** The node's generation id. */
  id: string;
  /** Its state. */
  status: NodeState;
  /** Why it failed, was skipped or canceled. */
  error: RunError | null;
  /** 0 to 1, while it runs. */
  progress?: number;
  /** Output URLs, once it succeeded. */
  output?: string[];
}

/** The `type` of a `node` webhook body. */
export type NodeEventType = "node";

/** Whether a workflow node runs. */
export type NodeMode = "active" | "bypassed";

/** A node of a workflow run's status (`nodes[name]`). */
export interface NodeResult {
  /** The node's generation id (`gen_…`), also a status id of its own. */
  id: string;
  /** The node's state. */
  status: NodeState;
  /** Output URLs, once it succeeded. */
  output: string[];
  /** Why it failed, was skipped or canceled. */
  error: RunError | null;
  /** The tool it runs. */
  model_name: string;
  /** Extension: while the node runs, how far it got as its engine reports it (0 until a report). */
  progress?: number;
  /** Extension: on a queued node whose tool's model servers are all down, what it waits for; it runs when one is healthy again. */
  waiting_for?: WaitingFor;
  /** Extension: the node's outputs are copies, from the result cache, of the outputs of this run's node that did the same work (same tool, engine, parameters, seed and input images); the node was charged nothing. */
  cached_from?: string;
}

/** The state of one node of a run. */
export type NodeState = "pending" | "queued" | "running" | "succeeded" | "failed" | "skipped" | "canceled";

/** What a tool's `output` holds. */
export type OutputKind = "image" | "video";

/** The type of a tool parameter. */
export type ParamKind = "image" | "select" | "number" | "string" | "boolean";

/** Extension: the lane the run's nodes queue in: interactive (someone waits for it) before normal before bulk, a share of the claims kept for lower lanes; the default is the API key's lane, normal unless set. */
export type Priority = "interactive" | "normal" | "bulk";

/** A run with the graph it ran. */
export interface RunDetail {
  /** The run id. */
  id: string;
  /** `node` or `workflow`. */
  type: RunKind;
  /** The tool or workflow. */
  target: string;
  /** Its status. */
  status: RunStatus;
  /** The graph. */
  nodes: RunDetailNode[];
  /** Whether POST …/rerun can run it again (v3 runs). */
  rerun: boolean;
}

/** A node of the graph a run ran. */
export interface RunDetailNode {
  /** The node's name. */
  name: string;
  /** Its generation id. */
  gen_id: string;
  /** The tool it runs. */
  tool: string;
  /** Parameter → upstream node. */
  links: Record<string, string>;
  /** Whether it passed its input through instead of running. */
  bypassed: boolean;
  /** Its price. */
  price: number;
}

/** Why a run or node failed, or that it was canceled. */
export interface RunError {
  /** The stable machine name. */
  name: "Canceled" | "ToolFailed" | "InvalidImage" | "InputFetchFailed" | "EngineUnavailable" | "Timeout" | "UpstreamFailed" | "WorkerLost" | "NotStarted";
  /** What happened, in words. */
  message: string;
  /** The failed node (run errors). */
  node?: string;
}

/** The answer of every accepted run request, v3 and v2. */
export interface RunHandle {
  /** The run id: `wr_…` for workflow runs, `gen_…` for tool and v2 runs. */
  id: string;
  /** Always null on an accepted run (a refusal is an error answer). */
  error: Error | null;
  /** Why parts of the input were ignored (values for linked parameters). */
  warnings?: string[];
  /** Extension: the final status, when `Prefer: wait` was asked for and the run finished in time. */
  status?: RunStatus;
}

/** A run's kind: one tool, or a saved workflow. */
export type RunKind = "node" | "workflow";

/** A page of `GET /api/v3/runs`, newest first. */
export interface RunList {
  /** The runs. */
  runs: RunSummary[];
  /** Pass as `before` for the next page; null on the last one. */
  next_before: number | null;
}

/** The body of `POST /api/v3/run` and `POST /api/v3/estimate`; also a workflow description's `sample_payload`. */
export interface RunRequest {
  /** `node` or `workflow`. */
  type: RunKind;
  /** A tool name (type node) or a workflow name (type workflow; see the name of /api/v3/workflow/{name}). */
  target: string;
  /** Tool parameters (node runs), or `Node.param` keys and variable names (workflows). */
  input: Record<string, unknown>;
  /** Extension: an http(s) URL that receives a signed POST (Standard Webhooks) when the run finishes; the same address policy as image URLs. */
  webhook_url?: string;
  /** Extension: what is sent to webhook_url: `completed` (the final status; the default) and `node` (each node's state change). */
  webhook_events?: WebhookEventKind[];
  /** Extension: the lane the run's nodes queue in (the default: the API key's lane, normal unless set). */
  priority?: Priority;
  /** Extension: each node must be started by a worker within this many seconds of being queued; one that is not fails NotStarted (not charged). No limit when absent. */
  start_within_secs?: number;
  /** Extension: `false` runs every node afresh. By default a node whose exact work (tool, engine, parameters, seed and input images) this account ran before, and whose outputs are still kept, is filled from the result cache: the same outputs, charged nothing. */
  cache?: boolean;
  /** Extension: how long the run's outputs are kept after it finished, in seconds, within the operator's range (by default 0 to 3 days); absent: the API key's retention, else the operator's default (3 days). 0 is zero retention: the outputs come back inline as `data:` URLs in the final status, webhook and events, are never stored, and are dropped after a short hold (`outputs_kept: false`). */
  retention_secs?: number;
}

/** The state of a run (`overall_status`), in the order a run moves through them. The status of one node of a workflow run, addressed by its generation id, is the node's state, which may also be `pending` or `skipped`. */
export type RunState = "pending" | "queued" | "running" | "succeeded" | "failed" | "skipped" | "canceled";

/** `GET /api/v3/status/{id}`. Workflow runs: workflow_run_id, overall_status, outputs, nodes. Node runs: id, overall_status, status, model_name, output. One node of a workflow run, addressed by its generation id: the node-run shape with workflow_run_id. */
export interface RunStatus {
  /** Node runs: the run's id; a node of a workflow run: the node's generation id. */
  id?: string;
  /** Workflow runs, and nodes addressed by their generation id: the workflow run's id. */
  workflow_run_id?: string;
  /** The state of the whole run. */
  overall_status: RunState;
  /** Node runs: the same as overall_status. */
  status?: RunState;
  /** Node runs: the tool. */
  model_name?: string;
  /** Workflow runs: output name → its URL (a list when the node made several), null until produced. */
  outputs?: Record<string, NamedOutput | null>;
  /** Workflow runs: node name → its result, in the workflow's order. */
  nodes?: Record<string, NodeResult>;
  /** Node runs: output URLs. */
  output?: string[];
  /** Why the run failed, or that it was canceled. */
  error: RunError | null;
  /** When the run was accepted. */
  created_at: string;
  /** When it ended. */
  finished_at: string | null;
  /** Until when its outputs are kept. */
  expires_at: string | null;
  /** Tokens charged so far. */
  tokens: number;
  /** Extension: the lane the run queues in. */
  priority?: Priority;
  /** Extension: while the node runs, how far it got as its engine reports it (0 until a report). */
  progress?: number;
  /** Extension: while the run is queued, how many nodes of the same tool, of all accounts, wait ahead of its first queued node. */
  queue_position?: number;
  /** Extension: on a queued node run whose tool's model servers are all down, what it waits for; it runs when one is healthy again. */
  waiting_for?: WaitingFor;
  /** Extension, node runs: the node's outputs are copies, from the result cache, of the outputs of this run's node that did the same work; the node was charged nothing. */
  cached_from?: string;
  /** Extension: `false` once the outputs of a zero-retention run (`retention_secs: 0`) were dropped, at `expires_at`: they were handed back inline (as `data:` URLs) until then and never stored, and the output lists are empty. Absent otherwise. */
  outputs_kept?: boolean;
}

/** An item of `GET /api/v3/runs`. */
export interface RunSummary {
  /** The run id. */
  id: string;
  /** `node` or `workflow`. */
  type: RunKind;
  /** The tool or workflow. */
  target: string;
  /** Its state. */
  overall_status: RunState;
  /** When it was accepted. */
  created_at: string;
  /** The lane it queues in. */
  priority: Priority | null;
}

/** One thing an API key may do (`atelier_core::scopes`). */
export type Scope = "run" | "read" | "workflows" | "webhooks" | "keys";

/** A console session: the account, the CSRF token that changes need, its expiry and the balance. */
export interface Session {
  /** The account's name. */
  account: string;
  /** Send it as X-CSRF-Token with every change. */
  csrf_token: string;
  /** When the session ends at the latest. */
  expires_at: string;
  /** The account's available balance. */
  balance: number;
  /** What the key this session signed in with may do: the session may do the same. */
  scopes: Scope[];
}

/** The body of a sign-in. */
export interface SignIn {
  /** The API key to sign in with. */
  api_key: string;
}

/** A key's or an account's spend limits and what it used of them. */
export interface Spend {
  /** The UTC day. */
  daily: SpendPeriod;
  /** The UTC month. */
  monthly: SpendPeriod;
  /** Keys: the cap on its nodes running at once (the key's own or the operator's default); null when there is none. */
  running_nodes_limit?: number;
  /** Keys: its nodes running now. */
  running_nodes?: number;
  /** The stored settings, where the limits in force come from. */
  settings: LimitSettings;
}

/** The `type` of a spend alert's webhook body. */
export type SpendEventType = "spend.threshold";

/** One period of a spend limit. */
export interface SpendPeriod {
  /** The limit in force, in tokens: the key's (or account's) own, or else the operator's default; null when there is none. */
  limit: number | null;
  /** Tokens reserved in the current period: runs' and batches' prices as they were accepted, less what they gave back (canceled or failed work). */
  used: number;
  /** When the period ends and `used` starts again from zero (UTC, `YYYY-MM-DDTHH:MM:SS.ffffff`): the next 00:00 UTC for the day, the first of the next month for the month. */
  resets_at: string;
}

/** The answer of `GET /api/v3/usage`: the spend limits of the calling key and of its account, and what each used. */
export interface SpendReport {
  /** The account's own limits: all its keys together. */
  account: Spend;
  /** The calling key's limits. */
  key: Spend;
}

/** `GET /api/v2/user/tokens`: the token balance. */
export interface Tokens {
  /** The available balance. */
  tokens: number;
}

/** A tool: its parameters, price rule and engine. */
export interface Tool {
  /** The tool's name (a node run's `target`). */
  name: string;
  /** What it does. */
  description: string;
  /** The kind of engine that runs it. */
  engine: EngineKind;
  /** How faithful its output is on that engine. */
  fidelity: Fidelity;
  /** What its `output` holds. */
  output: OutputKind;
  /** The price rule in words (`1 per run, 2 at scale 4`). */
  price: string;
  /** The parameter a bypassed node passes through. */
  primary_image: string | null;
  /** Its parameters. */
  params: ToolParam[];
}

export type ToolList = Tool[];

/** A parameter of a tool. */
export interface ToolParam {
  /** The parameter's name (the `input` key). */
  name: string;
  /** Its type. */
  type: ParamKind;
  /** Whether a run must give it. */
  required: boolean;
  /** The value used when it is not given. */
  default: unknown;
  /** The allowed values of a select (or of a number with fixed values). */
  values?: unknown[];
  /** A number's least value. */
  min?: number;
  /** A number's greatest value. */
  max?: number;
}

/** An uploaded image, or an items file of a batch (JSONL or CSV). */
export interface Upload {
  /** The upload's id: the SHA-256 of its bytes, hex. The same bytes uploaded again by the same account get the same id (and are stored once). */
  id: string;
  /** The value to give an image input of a run (a tool's or a workflow's): `upload:<id>`. */
  input: string;
  /** The image's format: `png`, `jpg`, `webp` or `gif`; `jsonl` or `csv` for an items file (named by a batch's `items_file`, not by an image input). */
  format: string;
  /** Its size in bytes. */
  size: number;
  /** Its width in pixels (0 for an items file). */
  width: number;
  /** Its height in pixels (0 for an items file). */
  height: number;
  /** When these bytes were first uploaded (while they were kept). */
  created_at: string;
  /** Until when runs may name it; uploading the same bytes again extends it. */
  expires_at: string;
}

/** Tokens charged and nodes run per UTC day, every day of the window listed. */
export interface Usage {
  /** The days, oldest first. */
  days: UsageDay[];
}

/** Tokens charged and nodes run on one UTC day. */
export interface UsageDay {
  /** YYYY-MM-DD (UTC). */
  date: string;
  /** Tokens charged. */
  tokens: number;
  /** Tool → nodes run. */
  nodes: Record<string, number>;
}

/** The `output` of a v2 status: a list of URLs, except for the fabric family (one URL, null until produced). */
export type V2Output = string[] | string;

/** The state of a v2 run. */
export type V2State = "in_queue" | "processing" | "completed" | "failed" | "canceled";

/** A v2 status object (`GET /api/v2/{family}/status/{id}`): exactly the fields the family has. */
export interface V2Status {
  /** The run id. */
  id: string;
  /** Its state. */
  status: V2State;
  /** Array of URLs; a single URL string (or null) for fabric. */
  output: V2Output | null;
  /** Why it failed. */
  error: RunError | null;
  /** Try-on: the request as sent (inline images shown as `<base64>`). */
  input?: Record<string, unknown>;
  /** Try-on and try-on pro: the model. */
  model_name?: string;
}

/** `POST /api/v3/workflows/validate`: every problem of a document, and what discovery will show of it (nothing is saved). */
export interface Validation {
  /** Whether the document has no problem. */
  valid: boolean;
  /** Every problem. */
  errors: ValidationProblem[];
  /** What discovery would show of it, when valid. */
  description: WorkflowDescription | null;
  /** The price with every mandatory input at a placeholder (non-image inputs at their first allowed value): where the price starts. When valid. */
  estimate: Estimate | null;
}

/** One problem found by `POST /api/v3/workflows/validate`. */
export interface ValidationProblem {
  /** Node, Node.param, variables.NAME, outputs.NAME, layout.KEY, nodes or name; null when the problem is the whole document. */
  field: string | null;
  /** Why. */
  reason: string;
}

/** What a queued node waits for, beside a worker. */
export type WaitingFor = "engine";

/** One attempt to deliver a webhook. */
export interface WebhookAttempt {
  /** 1 for the first. */
  attempt: number;
  /** When it was made. */
  at: string;
  /** The receiver's HTTP status; null when no answer came. */
  status_code: number | null;
  /** Why it failed. */
  error: string | null;
  /** How long it took. */
  duration_ms: number;
}

/** The body of a batch's webhook delivery (`webhook_url` of `POST /api/v3/batches`), sent each time the batch ends (after a retry, it ends again). */
export interface WebhookBatchEvent {
  /** Always `batch.completed`. */
  type: BatchEventType;
  /** The batch as `GET /api/v3/batches/{id}` answers it when the delivery is made. */
  batch: Batch;
}

/** `GET /api/v3/runs/{id}/webhooks`: a run's webhook deliveries and every attempt. */
export interface WebhookDeliveries {
  /** The run's deliveries. */
  deliveries: WebhookDelivery[];
}

/** A webhook message of a run or a batch, and its attempts. */
export interface WebhookDelivery {
  /** The webhook-id header of every attempt. */
  id: string;
  /** `completed` or `node` (a run's), `batch` (a batch's), `spend` (a spend alert's). */
  event: DeliveryEvent;
  /** The node, for `node` events. */
  node: string | null;
  /** Where it is sent. */
  url: string;
  /** Its state. */
  state: DeliveryState;
  /** When it was queued. */
  created_at: string;
  /** When it is tried next. */
  next_attempt_at: string | null;
  /** Every attempt so far. */
  attempts: WebhookAttempt[];
  /** Extension: how often it was replayed (`POST …/webhooks/{delivery}/replay`); each replay's attempt is in `attempts`. */
  replays: number;
}

/** The account's own webhook endpoint: where its `spend.threshold` events go (`GET`/`PUT`/`DELETE /api/v3/webhooks/endpoint`), and the log of those deliveries. */
export interface WebhookEndpoint {
  /** The endpoint; null when none is set (spend alerts are then not sent). */
  url: string | null;
  /** The events it receives: `spend.threshold`. */
  events: string[];
  /** The latest deliveries to it (at most 50), newest first. */
  deliveries: WebhookDelivery[];
}

/** The body of `PUT /api/v3/webhooks/endpoint`. */
export interface WebhookEndpointRequest {
  /** An absolute http or https URL (at most 2048 bytes, no credentials), checked against the address policy of image URLs. */
  url: string;
}

/** What a run's `webhook_url` receives. */
export type WebhookEventKind = "completed" | "node";

/** The body of a `node` webhook delivery (a `completed` delivery's body is the run's final status). */
export interface WebhookNodeEvent {
  /** Always `node`. */
  type: NodeEventType;
  /** The run. */
  run_id: string;
  /** The node's name. */
  node: string;
  /** The node's generation id. */
  id: string | null;
  /** The state the node reached. */
  status: NodeState;
}

/** The account's webhook signing secret. */
export interface WebhookSecret {
  /** whsec_ and the key in base64: the HMAC-SHA256 key is the decoded bytes. */
  key: string;
  /** Until when the secret rotated out last still signs (deliveries carry a signature per secret). */
  previous_key_expires_at: string | null;
}

/** The body of a spend alert's delivery to the account's endpoint: a key or the account reached 80% or 100% of a daily or monthly limit. Sent once per key or account, period and threshold; 100% is also reached by a submission the limit refused. */
export interface WebhookSpendEvent {
  /** Always `spend.threshold`. */
  type: SpendEventType;
  /** Whose limit: `key` (one API key's own) or `account` (all its keys together). */
  applies_to: "key" | "account";
  /** The key's prefix, for a key's limit. */
  key?: string;
  /** The limit's period, `day` or `month` (UTC calendar periods). */
  period: "day" | "month";
  /** 80 or 100: the percentage of the limit reached. */
  threshold: number;
  /** The limit, in tokens. */
  limit: number;
  /** Tokens reserved in the period when the threshold was reached. */
  used: number;
  /** When the period ends and its usage starts again from zero (UTC, `YYYY-MM-DDTHH:MM:SS.ffffff`). */
  resets_at: string;
  /** When the threshold was reached. */
  created_at: string;
}

/** A workflow document: the body of `PUT /api/v3/workflow/{name}` and the `workflow` of a description. */
export interface Workflow {
  /** The name written in the definition: PUT saves under the path's name whatever this says; `atelier admin workflow import` saves under it when no --name is given. */
  name?: string;
  /** What it does. */
  description?: string;
  /** Input variables: one value a run gives, sent to several parameters. */
  variables?: Record<string, WorkflowVariable>;
  /** The nodes, each a tool run. */
  nodes: WorkflowNode[];
  /** Output name → `Node.output`. */
  outputs?: Record<string, string>;
  /** Extension: where an editor placed each node (`$var:NAME` and `$out:NAME` for variables and outputs): [x, y]. Kept and returned; runs ignore it. */
  layout?: Record<string, [number, number]>;
}

/** `GET /api/v3/workflow/{name}`: the document, a ready run body and its inputs. */
export interface WorkflowDescription {
  /** The name it is saved under. */
  name: string;
  /** The document. */
  workflow: Workflow;
  /** A ready run body with a placeholder (`<image>`) for every mandatory input. */
  sample_payload: RunRequest;
  /** Its inputs. */
  inputs: WorkflowInputs;
  /** Output name → `Node.param`. */
  outputs: Record<string, string>;
}

/** The `inputs` of a workflow description: key → descriptor such as `<type:image , default value : null>` (see [`parse_descriptor`]); `linked` maps a parameter to its source. */
export interface WorkflowInputs {
  /** Inputs a run must give. */
  mandatory: Record<string, string>;
  /** Inputs with a default a run may override. */
  optional: Record<string, string>;
  /** Parameters fed by upstream nodes (a run cannot override them). */
  linked: Record<string, string>;
}

export type WorkflowList = WorkflowSummary[];

/** A node of a workflow: one tool run, its parameters set or linked to other nodes' outputs. */
export interface WorkflowNode {
  /** Its name, unique in the workflow (`Name.param` input keys and `Name.output` links use it). */
  name: string;
  /** The tool it runs. */
  tool: string;
  /** Parameter values it sets; a run's input may override them. */
  params?: Record<string, unknown>;
  /** Parameter → `Upstream.output`: the parameter takes that node's output. */
  links?: Record<string, string>;
  /** Whether it runs. */
  mode: NodeMode;
}

/** An item of `GET /api/v3/workflows`. */
export interface WorkflowSummary {
  /** The workflow's id. */
  id: number;
  /** Its name. */
  name: string;
  /** A system template (shared, read-only). */
  system_workflow: boolean;
  /** When it was saved. */
  created_at: string;
}

/** An input variable of a workflow: a run gives it once, and each target parameter gets it. */
export interface WorkflowVariable {
  /** The type of every target parameter. */
  type: ParamKind;
  /** The `Node.param` keys that receive the value. */
  targets: string[];
}
