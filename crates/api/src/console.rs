//! The web console's API, under `/console/api`: sessions, keys, the ledger, usage, run
//! details and re-runs, and the whole v3 interface again under `/console/api/v3/*`.
//!
//! A browser signs in once with an API key (`POST /console/api/session`) and gets a session
//! cookie (`HttpOnly; SameSite=Strict; Path=/`, and `Secure` with the `__Host-` name when the
//! request came over HTTPS, as `X-Forwarded-Proto` says). The key is never kept by the page.
//! Every console request is authorized by that cookie, and every change (any method but GET
//! and HEAD) also needs:
//! - the session's CSRF token in `X-CSRF-Token` (returned at sign-in and by
//!   `GET /console/api/session`);
//! - a same-origin request: `Sec-Fetch-Site` `same-origin` or `none` when the browser sends
//!   it, and an `Origin`, when sent, whose host is the request's `Host`.
//!
//! `/api/*` never reads the cookie: a console session cannot be used from another origin
//! against the public interface, and the public interface gains no CSRF surface. Failed
//! sign-ins are limited per client address (`ConsoleConfig::sign_in`); the limit is read
//! before the key is, so guessing stops at the limit.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use atelier_core::params::stored_input_key;
use atelier_core::scopes::{Scope, Scopes};
use atelier_core::status::LedgerKind;
use atelier_core::time::now_micros;
use atelier_core::RequestError;
use atelier_store::{format_time, LedgerQuery, Session, StoreError};
use atelier_wire::console as wire;
use axum::extract::{ConnectInfo, FromRequestParts, Path, Query, Request, State};
use axum::http::header::{self, HeaderValue};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::error::{ApiError, RunError};
use crate::extract::{Authenticated, JsonObject, RunId};
use crate::limits::{ceil_secs, count, RateLimiter};
use crate::ops::{self, RunRequest, Submission};
use crate::state::AppState;
use crate::{render, v3};

/// The cookie's name over plain HTTP.
pub const COOKIE: &str = "atelier_session";
/// The cookie's name over HTTPS: the prefix makes browsers refuse it unless `Secure`, with
/// `Path=/` and no `Domain`.
pub const SECURE_COOKIE: &str = "__Host-atelier_session";
/// The header that carries the session's CSRF token on changes.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// Failed sign-ins, per client address.
#[derive(Clone)]
struct SignIns(Option<Arc<RateLimiter>>);

pub(crate) fn routes(state: &AppState) -> Router<AppState> {
    let sign_ins = SignIns(RateLimiter::new(state.config.console.sign_in).map(Arc::new));
    // The v3 interface again, for the console's pages: the same handlers, with the account
    // the session holds.
    let limits = SessionLimiter {
        state: state.clone(),
        limiter: RateLimiter::new(state.config.rate_limit).map(Arc::new),
    };
    let v3 = Router::new()
        .nest(
            "/console",
            v3::routes()
                .merge(crate::batches::routes())
                .merge(crate::events::routes())
                .merge(crate::webhooks::routes())
                .merge(crate::spend::routes())
                .merge(crate::audit::routes()),
        )
        .route_layer(axum::middleware::from_fn_with_state(limits, session_account));
    Router::new()
        .route("/console/api/session", post(sign_in).get(current).delete(sign_out))
        .route("/console/api/keys", get(list_keys).post(create_key))
        .route("/console/api/keys/{id}", delete(revoke_key))
        .route("/console/api/keys/{id}/limits", axum::routing::put(set_key_limits))
        .route("/console/api/ledger", get(ledger))
        .route("/console/api/usage", get(usage))
        .route("/console/api/runs/{run_id}", get(run_detail))
        .route("/console/api/runs/{run_id}/rerun", post(rerun))
        .merge(v3)
        .layer(Extension(sign_ins))
        .layer(axum::middleware::map_response(no_store))
}

/// Nothing the console's API answers is cached.
async fn no_store(mut response: Response) -> Response {
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The session a console request carries, checked as the module says.
pub(crate) struct SignedIn(pub Session);

impl FromRequestParts<AppState> for SignedIn {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let session = match parts.extensions.get::<Session>() {
            Some(session) => session.clone(),
            None => {
                let session = authorize(&parts.method, &parts.headers, state).await?;
                parts.extensions.insert(session.clone());
                session
            }
        };
        crate::scopes::check(&parts.method, crate::extract::route(parts), session.account.scopes)?;
        Ok(Self(session))
    }
}

async fn authorize(method: &Method, headers: &HeaderMap, state: &AppState) -> Result<Session, ApiError> {
    let changes = !matches!(*method, Method::GET | Method::HEAD);
    if changes {
        same_origin(headers)?;
    }
    let token = session_cookie(headers).ok_or(ApiError::SessionRequired)?;
    let session =
        state.store.session(token, state.config.console.sessions).await?.ok_or(ApiError::SessionRequired)?;
    if changes {
        let sent = headers.get(CSRF_HEADER).map(HeaderValue::as_bytes).unwrap_or_default();
        if !atelier_core::ids::constant_time_eq(sent, session.csrf_token.as_bytes()) {
            return Err(ApiError::Forbidden(
                "this change needs the session's CSRF token in the X-CSRF-Token header".into(),
            ));
        }
    }
    Ok(session)
}

/// The per-key request rate (`[limits]`) for `/console/api/v3/*`, counted per session key in
/// buckets of their own (apart from the key's requests to `/api`).
#[derive(Clone)]
struct SessionLimiter {
    state: AppState,
    limiter: Option<Arc<RateLimiter>>,
}

/// Authorizes `/console/api/v3/*` by session, counts the request against the session's key,
/// and hands the account to the v3 handlers.
async fn session_account(State(limits): State<SessionLimiter>, mut req: Request, next: Next) -> Response {
    let session = match authorize(req.method(), req.headers(), &limits.state).await {
        Ok(session) => session,
        Err(error) => return error.into_response(),
    };
    req.extensions_mut().insert(Authenticated(session.account.clone()));
    let bucket: [u8; 32] = Sha256::digest(format!("console-key:{}", session.key_id).as_bytes()).into();
    req.extensions_mut().insert(session);
    match &limits.limiter {
        Some(limiter) => count(limiter, bucket, req, next).await,
        None => next.run(req).await,
    }
}

/// Refuses a request another site made: by `Sec-Fetch-Site` where the browser sends it, and
/// by `Origin` against `Host` (or `X-Forwarded-Host`) where an origin is sent.
fn same_origin(headers: &HeaderMap) -> Result<(), ApiError> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = text("sec-fetch-site") {
        if site != "same-origin" && site != "none" {
            return Err(ApiError::Forbidden(format!(
                "a console change cannot come from another site ({site})"
            )));
        }
    }
    if let Some(origin) = text("origin") {
        let authority = origin.split_once("://").map_or("", |(_, rest)| rest);
        let hosts = [text("host"), text("x-forwarded-host")];
        if !hosts.into_iter().flatten().any(|host| host.eq_ignore_ascii_case(authority)) {
            return Err(ApiError::Forbidden("a console change cannot come from another origin".into()));
        }
    }
    Ok(())
}

fn session_cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, value)| (*name == COOKIE || *name == SECURE_COOKIE) && !value.is_empty())
        .map(|(_, value)| value)
}

/// Whether the request reached the proxy in front over HTTPS.
fn over_https(headers: &HeaderMap) -> bool {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default();
    text("x-forwarded-proto").eq_ignore_ascii_case("https")
        || text("forwarded").to_ascii_lowercase().split([';', ',']).any(|p| p.trim() == "proto=https")
}

fn set_cookie(headers: &HeaderMap, value: &str, max_age: i64) -> HeaderValue {
    let cookie = if over_https(headers) {
        format!("{SECURE_COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict; Secure; Max-Age={max_age}")
    } else {
        format!("{COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}")
    };
    HeaderValue::from_str(&cookie).unwrap_or_else(|_| HeaderValue::from_static("atelier_session=; Max-Age=0"))
}

fn session_view(
    account: &atelier_store::Account,
    csrf_token: &str,
    expires_at: i64,
    balance: i64,
) -> wire::Session {
    wire::Session {
        account: account.name.clone(),
        csrf_token: csrf_token.to_string(),
        expires_at: format_time(expires_at),
        balance,
        scopes: wire::Scope::list(account.scopes),
    }
}

/// The client's address, for counting failed sign-ins (behind a proxy, the proxy's).
fn client_key(parts_ext: Option<&ConnectInfo<SocketAddr>>) -> [u8; 32] {
    let ip = parts_ext.map_or_else(|| "unknown".to_string(), |ConnectInfo(addr)| addr.ip().to_string());
    Sha256::digest(ip.as_bytes()).into()
}

async fn sign_in(
    State(state): State<AppState>,
    Extension(SignIns(limiter)): Extension<SignIns>,
    origin: crate::audit::Origin,
    connect: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
    JsonObject(body): JsonObject,
) -> Result<Response, ApiError> {
    same_origin(&headers)?;
    let client = client_key(connect.as_ref().map(|Extension(c)| c));
    if let Some(limiter) = &limiter {
        if let Some(wait) = limiter.wait(client, Instant::now()) {
            return Err(ApiError::SignInLimited { retry_after: ceil_secs(wait).max(1) });
        }
    }
    let key = match body.get("api_key") {
        Some(Value::String(key)) if !key.trim().is_empty() && key.len() <= 128 => key.trim(),
        _ => return Err(RequestError::invalid("api_key", "the API key to sign in with, as a string").into()),
    };
    let Some(holder) = state.store.authenticate_key(key).await? else {
        if let Some(limiter) = &limiter {
            limiter.check(client, Instant::now());
        }
        // Nothing of what was sent is kept: it may be a key mistyped by one character.
        let entry = atelier_store::NewAuditEntry {
            account_id: None,
            actor: "anonymous".into(),
            address: origin.address.clone(),
            action: "session.sign_in_failed".into(),
            target: None,
            summary: Value::Null,
        };
        crate::audit::write(&state, entry).await;
        return Err(ApiError::Unauthorized);
    };
    let limits = state.config.console.sessions;
    let made = state.store.create_session(&holder, limits).await?;
    let summary = serde_json::json!({"expires_at": format_time(made.expires_at)});
    crate::audit::record(&state, &holder.account, &origin, "session.signed_in", None, summary).await;
    let balance = state.store.balance(holder.account.id).await?;
    let max_age = i64::try_from(limits.absolute.as_secs()).unwrap_or(i64::MAX);
    let view = session_view(&holder.account, &made.csrf_token, made.expires_at, balance);
    let mut response = Json(view).into_response();
    response.headers_mut().insert(header::SET_COOKIE, set_cookie(&headers, &made.token, max_age));
    Ok(response)
}

async fn current(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
) -> Result<Json<wire::Session>, ApiError> {
    let balance = state.store.balance(session.account.id).await?;
    Ok(Json(session_view(&session.account, &session.csrf_token, session.expires_at, balance)))
}

async fn sign_out(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    origin: crate::audit::Origin,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    if let Some(token) = session_cookie(&headers) {
        if state.store.end_session(token).await? {
            crate::audit::record(&state, &session.account, &origin, "session.signed_out", None, Value::Null)
                .await;
        }
    }
    let mut response = StatusCode::NO_CONTENT.into_response();
    response.headers_mut().insert(header::SET_COOKIE, set_cookie(&headers, "", 0));
    Ok(response)
}

fn key_view(key: &atelier_store::KeyRecord, current: i64) -> wire::Key {
    wire::Key {
        id: key.id,
        prefix: key.prefix.clone(),
        created_at: format_time(key.created_at),
        last_used: key.last_used.map(format_time),
        revoked_at: key.revoked_at.map(format_time),
        current: key.id == current,
        scopes: wire::Scope::list(key.scopes),
        spend: crate::spend::view(&key.spend),
    }
}

async fn list_keys(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
) -> Result<Json<wire::KeyList>, ApiError> {
    let keys = state.store.list_keys(session.account.id).await?;
    Ok(Json(wire::KeyList { keys: keys.iter().map(|k| key_view(k, session.key_id)).collect() }))
}

/// A new key with the scopes the body names (`run` and `read` without a body), none beyond
/// the session's own.
async fn create_key(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    origin: crate::audit::Origin,
    request: Request,
) -> Result<Json<wire::NewKey>, ApiError> {
    let body = crate::extract::body_bytes(request, &state).await?;
    let scopes =
        if body.iter().all(u8::is_ascii_whitespace) { Scopes::NEW_KEY } else { new_key_scopes(&body)? };
    let beyond = scopes.beyond(session.account.scopes);
    if !beyond.is_empty() {
        return Err(ApiError::Forbidden(format!(
            "a key cannot make a key with scopes it does not hold itself ({beyond})"
        )));
    }
    let (record, key) = state.store.add_key(session.account.id, scopes).await?;
    let summary = serde_json::json!({"scopes": scopes.to_string()});
    crate::audit::record(&state, &session.account, &origin, "key.created", Some(&record.prefix), summary)
        .await;
    Ok(Json(wire::NewKey { view: key_view(&record, session.key_id), key }))
}

/// The scopes of a `POST /console/api/keys` body: `{"scopes": ["run", "read"]}`.
fn new_key_scopes(body: &[u8]) -> Result<Scopes, ApiError> {
    let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(body) else {
        return Err(RequestError::InvalidRequest("the body must be a JSON object".into()).into());
    };
    if let Some(name) = body.keys().find(|k| *k != "scopes") {
        return Err(RequestError::invalid(name.as_str(), "unknown field (the body takes scopes)").into());
    }
    let invalid = || {
        let allowed = Scope::NAMES.iter().map(|n| Value::from(*n)).collect();
        RequestError::InvalidInput {
            field: "scopes".into(),
            reason: "a list of one or more scope names".into(),
            allowed: Some(allowed),
        }
    };
    match body.get("scopes") {
        None | Some(Value::Null) => Ok(Scopes::NEW_KEY),
        Some(Value::Array(names)) if !names.is_empty() => names
            .iter()
            .map(|name| name.as_str().and_then(|n| n.parse::<Scope>().ok()).ok_or_else(invalid))
            .collect::<Result<Scopes, _>>()
            .map_err(Into::into),
        Some(_) => Err(invalid().into()),
    }
}

async fn revoke_key(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    origin: crate::audit::Origin,
    headers: HeaderMap,
    id: Result<Path<i64>, axum::extract::rejection::PathRejection>,
) -> Result<Response, ApiError> {
    let Ok(Path(id)) = id else { return Err(RequestError::invalid("id", "a key id is a number").into()) };
    let record = match state.store.revoke_account_key(session.account.id, id).await {
        Ok(record) => record,
        Err(StoreError::NotFound) => return Err(ApiError::KeyNotFound(id)),
        Err(StoreError::Conflict(reason)) => return Err(ApiError::Conflict(reason)),
        Err(e) => return Err(e.into()),
    };
    crate::audit::record(&state, &session.account, &origin, "key.revoked", Some(&record.prefix), Value::Null)
        .await;
    let mut response = Json(key_view(&record, session.key_id)).into_response();
    // Revoking the key this session signed in with ends the session.
    if record.id == session.key_id {
        response.headers_mut().insert(header::SET_COOKIE, set_cookie(&headers, "", 0));
    }
    Ok(response)
}

/// Sets a key's spend limits (`PUT /console/api/keys/{id}/limits`, body `LimitsRequest`):
/// never beyond the session's own key's ([`crate::spend::change`]).
async fn set_key_limits(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    origin: crate::audit::Origin,
    id: Result<Path<i64>, axum::extract::rejection::PathRejection>,
    request: Request,
) -> Result<Json<wire::Key>, ApiError> {
    let Ok(Path(id)) = id else { return Err(RequestError::invalid("id", "a key id is a number").into()) };
    let body = crate::extract::body_bytes(request, &state).await?;
    let request = limits_request(&body)?;
    let (_, own) = state.store.spend(session.account.id, Some(session.key_id)).await?;
    let own = own.ok_or(ApiError::SessionRequired)?;
    let change = crate::spend::change(&request, &own)?;
    match state.store.set_account_key_limits(session.account.id, id, change).await {
        Ok(record) => {
            let summary = serde_json::to_value(request).unwrap_or_default();
            let (account, prefix) = (&session.account, Some(record.prefix.as_str()));
            crate::audit::record(&state, account, &origin, "key.limits_set", prefix, summary).await;
            Ok(Json(key_view(&record, session.key_id)))
        }
        Err(StoreError::NotFound) => Err(ApiError::KeyNotFound(id)),
        Err(e) => Err(e.into()),
    }
}

/// A `LimitsRequest` body: a JSON object of `daily`, `monthly` and `running_nodes`, each an
/// integer or null.
fn limits_request(body: &[u8]) -> Result<atelier_wire::LimitsRequest, ApiError> {
    let Ok(Value::Object(fields)) = serde_json::from_slice::<Value>(body) else {
        return Err(RequestError::InvalidRequest("the body must be a JSON object".into()).into());
    };
    for (name, value) in &fields {
        if !["daily", "monthly", "running_nodes"].contains(&name.as_str()) {
            return Err(RequestError::invalid(
                name.as_str(),
                "unknown field (the body takes daily, monthly and running_nodes)",
            )
            .into());
        }
        if !(value.is_null() || value.is_i64()) {
            return Err(RequestError::invalid(
                name.as_str(),
                "a whole number (-1: no limit) or null (the default)",
            )
            .into());
        }
    }
    serde_json::from_value(Value::Object(fields))
        .map_err(|e| RequestError::InvalidRequest(format!("the body is not a limits request: {e}")).into())
}

#[derive(Deserialize)]
struct LedgerPage {
    kind: Option<String>,
    run_id: Option<String>,
    before: Option<i64>,
    limit: Option<i64>,
}

async fn ledger(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    page: Result<Query<LedgerPage>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<wire::Ledger>, ApiError> {
    let Query(page) = page.map_err(|e| RequestError::InvalidRequest(e.body_text()))?;
    let kind = page.kind.as_deref().filter(|k| !k.is_empty());
    if let Some(kind) = kind {
        if kind.parse::<LedgerKind>().is_err() {
            let reason = format!("one of {}", LedgerKind::NAMES.join(", "));
            return Err(RequestError::invalid("kind", reason).into());
        }
    }
    let limit = page.limit.unwrap_or(50).clamp(1, 200);
    let query = LedgerQuery {
        kind,
        run_id: page.run_id.as_deref().filter(|r| !r.is_empty()),
        before_id: page.before,
        limit,
    };
    let entries = state.store.ledger(session.account.id, &query).await?;
    let next = (entries.len() as i64 == limit).then(|| entries.last().map(|e| e.id)).flatten();
    let entries = entries
        .iter()
        .map(|e| wire::LedgerEntry {
            id: e.id,
            run_id: e.run_id.clone(),
            target: e.target.clone(),
            kind: e.kind.parse::<LedgerKind>().map_or(wire::LedgerKind::Unknown, wire::LedgerKind::from),
            amount: e.amount,
            created_at: format_time(e.created_at),
            source_run: e.source_run.clone(),
        })
        .collect();
    Ok(Json(wire::Ledger { entries, next_before: next }))
}

#[derive(Deserialize)]
struct UsageWindow {
    days: Option<i64>,
}

/// Tokens charged and nodes run per UTC day, over the last `days` (1 to 366, 30 by default),
/// every day listed, quiet ones with zeros.
async fn usage(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    window: Result<Query<UsageWindow>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<wire::Usage>, ApiError> {
    const DAY: i64 = 86_400_000_000;
    let Query(window) = window.map_err(|e| RequestError::InvalidRequest(e.body_text()))?;
    let days = window.days.unwrap_or(30);
    if !(1..=366).contains(&days) {
        return Err(RequestError::invalid("days", "from 1 to 366").into());
    }
    let today = now_micros() / DAY * DAY;
    let since = today - (days - 1) * DAY;
    let usage = state.store.usage(session.account.id, since).await?;
    let days = (0..days)
        .map(|i| {
            let day = since + i * DAY;
            let tokens = usage.tokens.iter().find(|(d, _)| *d == day).map_or(0, |(_, n)| *n);
            let nodes = usage
                .nodes
                .iter()
                .filter(|(d, ..)| *d == day)
                .map(|(_, tool, n)| (tool.clone(), *n))
                .collect();
            wire::UsageDay { date: format_time(day)[..10].to_string(), tokens, nodes }
        })
        .collect();
    Ok(Json(wire::Usage { days }))
}

/// A run as the console shows it: its status, the graph it ran (each node's tool, links and
/// whether it was bypassed) and whether it can be run again with the same input.
async fn run_detail(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    RunId(id): RunId,
) -> Result<Json<wire::RunDetail>, ApiError> {
    let run = state.store.get_run(session.account.id, &id).await.map_err(ApiError::run_lookup(&id))?;
    let nodes = run
        .nodes
        .iter()
        .map(|n| wire::RunDetailNode {
            name: n.name.clone(),
            gen_id: n.gen_id.clone(),
            tool: n.tool.clone(),
            links: n.links.clone(),
            bypassed: n.bypassed,
            price: n.price,
        })
        .collect();
    let mut status = render::v3_status(&state.blob, &run, None);
    let engines = &state.config.engines.0;
    render::add_waiting(&mut status, &run, |tool| {
        tool.parse::<atelier_core::tools::ToolId>().is_ok_and(|t| engines.waiting_for_engine(t))
    });
    Ok(Json(wire::RunDetail {
        id: run.id.clone(),
        kind: run.kind.into(),
        target: run.target.clone(),
        status,
        nodes,
        rerun: rerun_input(&run).is_some(),
    }))
}

/// The input a v3 run was accepted with (inline images as stored references), which a
/// re-run sends again; v2 runs keep their images redacted, so they cannot be re-run.
fn rerun_input(run: &atelier_store::RunRecord) -> Option<&Map<String, Value>> {
    match (&run.family, &run.echo) {
        (None, Some(Value::Object(input))) => Some(input),
        _ => None,
    }
}

/// Runs a run's target again with the same input: a new run, priced as any; its nodes whose
/// work's outputs are still kept are filled from the result cache and charged nothing.
async fn rerun(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    RunId(id): RunId,
) -> Result<Response, RunError> {
    let run = state.store.get_run(session.account.id, &id).await.map_err(ApiError::run_lookup(&id))?;
    let Some(input) = rerun_input(&run) else {
        return Err(ApiError::Conflict(
            "this run cannot be run again: it was made through the v2 interface, which \
                                       keeps no copy of its images"
                .into(),
        )
        .into());
    };
    let mut input = input.clone();
    for value in input.values_mut() {
        let Some(key) = value.as_str().and_then(stored_input_key).map(str::to_owned) else { continue };
        // Stored as sent, so the run stores it under the same digest again.
        let bytes = state.blob.get(&key).await.map_err(|e| match e {
            atelier_blob::BlobError::NotFound => {
                ApiError::Conflict("this run's input images expired with it; send them again".into())
            }
            other => ApiError::Internal(format!("reading a stored input: {other}")),
        })?;
        *value = Value::String(String::from_utf8_lossy(&bytes).into_owned());
    }
    let request = RunRequest {
        kind: run.kind,
        target: run.target.clone(),
        input,
        slices: Default::default(),
        webhook: None,
        // Again in the lane it ran in.
        priority: Some(run.priority),
        // Someone waits on the console's page: no deadline to start.
        start_within: None,
        cache: true,
        // Kept as long as the run it repeats.
        retention_secs: run.retention_secs,
    };
    let accepted = ops::submit(&state, &session.account, Submission::new(request, None, None), None).await?;
    Ok(Json(accepted.handle()).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    #[test]
    fn changes_from_other_sites_are_refused() {
        for ok in [
            vec![],
            vec![("sec-fetch-site", "same-origin")],
            vec![("sec-fetch-site", "none")],
            vec![("host", "127.0.0.1:8080"), ("origin", "http://127.0.0.1:8080")],
            vec![
                ("host", "internal:80"),
                ("x-forwarded-host", "atelier.example"),
                ("origin", "https://atelier.example"),
            ],
        ] {
            assert!(same_origin(&headers(&ok)).is_ok(), "{ok:?}");
        }
        for refused in [
            vec![("sec-fetch-site", "cross-site")],
            vec![("sec-fetch-site", "same-site")],
            vec![("host", "127.0.0.1:8080"), ("origin", "http://evil.example")],
            vec![("host", "127.0.0.1:8080"), ("origin", "null")],
            vec![("sec-fetch-site", "same-origin"), ("host", "a:1"), ("origin", "http://b:1")],
        ] {
            assert!(matches!(same_origin(&headers(&refused)), Err(ApiError::Forbidden(_))), "{refused:?}");
        }
    }

    #[test]
    fn the_session_cookie_is_found_among_others() {
        assert_eq!(session_cookie(&headers(&[("cookie", "a=1; atelier_session=tok; b=2")])), Some("tok"));
        assert_eq!(session_cookie(&headers(&[("cookie", "__Host-atelier_session=sec")])), Some("sec"));
        assert_eq!(
            session_cookie(&headers(&[("cookie", "a=1"), ("cookie", "atelier_session=x")])),
            Some("x")
        );
        assert_eq!(session_cookie(&headers(&[("cookie", "atelier_session=")])), None);
        assert_eq!(session_cookie(&headers(&[("cookie", "xatelier_session=1")])), None);
        assert_eq!(session_cookie(&headers(&[])), None);
    }

    #[test]
    fn cookies_are_secure_behind_https() {
        let plain = set_cookie(&headers(&[]), "t", 60);
        assert_eq!(plain, "atelier_session=t; Path=/; HttpOnly; SameSite=Strict; Max-Age=60");
        for https in [vec![("x-forwarded-proto", "https")], vec![("forwarded", "for=1.2.3.4;proto=https")]] {
            let cookie = set_cookie(&headers(&https), "t", 60);
            assert_eq!(
                cookie,
                "__Host-atelier_session=t; Path=/; HttpOnly; SameSite=Strict; Secure; Max-Age=60"
            );
        }
    }
}
