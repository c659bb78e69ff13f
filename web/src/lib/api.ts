// The console's client of the service. Every call goes to /console/api (the session cookie
// authorizes it); changes carry the session's CSRF token. The API key is never kept here:
// it is sent once, to sign in.

import type * as wire from './wire';

/** The error object of an error answer, or `HttpError` for an answer without one. */
export type ApiErrorBody = Omit<wire.Error, 'name'> & { name: wire.Error['name'] | 'HttpError' };

export class ApiError extends Error {
  readonly status: number;
  readonly body: ApiErrorBody;
  constructor(status: number, body: ApiErrorBody) {
    super(body.message);
    this.status = status;
    this.body = body;
  }
}

let csrfToken = '';

/** Called with the token of the session: at sign-in and when the session is read. */
export function setCsrfToken(token: string) {
  csrfToken = token;
}

/** Where the signed-out page goes; set by the app. */
let onSignedOut: () => void = () => {};
export function whenSignedOut(handler: () => void) {
  onSignedOut = handler;
}

export async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET') headers['x-csrf-token'] = csrfToken;
  const response = await fetch(`/console/api${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
  });
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  if (!response.ok) {
    const error = (parsed as { error?: ApiErrorBody } | null)?.error ?? {
      name: 'HttpError',
      message: `${response.status} ${response.statusText}`,
    };
    if (response.status === 401 && error.name === 'SessionRequired') onSignedOut();
    throw new ApiError(response.status, error);
  }
  return parsed as T;
}

export const get = <T>(path: string) => call<T>('GET', path);
export const post = <T>(path: string, body?: unknown) => call<T>('POST', path, body ?? {});
export const put = <T>(path: string, body: unknown) => call<T>('PUT', path, body);
export const del = <T>(path: string) => call<T>('DELETE', path);

/** A workflow name as one path segment. */
export const segment = (name: string) => encodeURIComponent(name);

/** An error in plain words, with what the caller can do about it. */
export function explain(error: unknown): string {
  if (!(error instanceof ApiError)) return error instanceof Error ? error.message : String(error);
  const b = error.body;
  switch (b.name) {
    case 'InsufficientTokens':
      return `Not enough tokens: this run needs ${b.required}, the balance is ${b.balance}. Nothing was run or charged.`;
    case 'SpendLimitReached':
      return `The ${b.applies_to === 'account' ? "account's" : "key's"} ${b.period === 'month' ? 'monthly' : 'daily'} spend limit of ${b.limit} tokens would be crossed (${b.used} used, this costs ${b.required}). It resets at ${b.resets_at} UTC. Nothing was run or charged.`;
    case 'MissingInputs':
      return `Missing inputs: ${(b.missing ?? []).join(', ')}.`;
    case 'InvalidInput':
    case 'InvalidImage':
      return b.field ? `${b.field}: ${b.reason ?? b.message}` : b.message;
    case 'RateLimited':
      return `Too many requests: try again in ${b.retry_after ?? 1} s.`;
    case 'SessionRequired':
      return 'The session ended: sign in again.';
    default:
      return b.message;
  }
}

// Shapes the pages read: the service's own types, generated from its OpenAPI schemas
// (./wire.ts), under the names the pages use.

export type Session = wire.Session;
export type Scope = wire.Scope;
export type Spend = wire.Spend;
export type AuditEntry = wire.AuditEntry;
export type ParamType = wire.ParamKind;
export type ParamSpec = wire.ToolParam;
export type Tool = wire.Tool;
export type NodeResult = wire.NodeResult;
export type RunStatus = wire.RunStatus;
export type RunDetail = wire.RunDetail;
export type Estimate = wire.Estimate;
export type RunList = wire.RunList;
export type RunSummary = wire.RunSummary;
export type WorkflowSummary = wire.WorkflowSummary;
export type WorkflowDescription = wire.WorkflowDescription;
/** A workflow document as the editor writes it: the service's, with each node's `mode`
 * optional (`active` when left out), as the service reads it. */
export type WorkflowDocument = Omit<wire.Workflow, 'nodes'> & {
  nodes: (Omit<wire.WorkflowNode, 'mode'> & { mode?: wire.NodeMode })[];
};
export type WorkflowValidation = wire.Validation;
export type Key = wire.Key;
export type LedgerEntry = wire.LedgerEntry;
export type UsageDay = wire.UsageDay;
export type Batch = wire.Batch;
export type BatchList = wire.BatchList;
export type BatchItem = wire.BatchItem;
export type BatchItemList = wire.BatchItemList;
export type WebhookDelivery = wire.WebhookDelivery;
export type WebhookEndpoint = wire.WebhookEndpoint;

export const TERMINAL = ['succeeded', 'failed', 'canceled'];
