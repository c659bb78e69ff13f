//! The web console's pages: the bundle that `web/` builds into `dist/` (committed, so that
//! building the binary needs no Node), embedded in the binary and served under `/console/`.
//!
//! - `/console/assets/*`: the hashed files of the bundle, cached for a year (`immutable`);
//! - `/console/docs`: the API reference, Scalar's viewer (`/console/vendor/*`, as published
//!   on npm) over `/openapi.json`; its policy also allows inline styles, which the viewer
//!   injects;
//! - any other path under `/console/` that is not the console's API: the page
//!   (`index.html`, never cached), whose script picks the view; with a strict
//!   Content-Security-Policy and the usual hardening headers;
//! - `/` and `/console` redirect to `/console/`.
//!
//! The console's API (`/console/api/*`) is in `atelier-api`; an unknown path under it is a
//! 404 here, never the page.
//!
//! ## What is where
//!
//! The web console's pages: the bundle `web/` builds (TypeScript, React, React Flow; committed
//! in `crates/console/dist`), embedded with `rust-embed` and served under `/console/` with a
//! strict Content-Security-Policy; the test that the bundle was built from the current `web/`.
//!
//! Not here: the console's API (in `api`); Node is never needed to build it.

use axum::body::Body;
use axum::extract::Request;
use axum::http::header::{self, HeaderValue};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use rust_embed::RustEmbed;

#[derive(RustEmbed)]
#[folder = "dist/"]
struct Bundle;

/// Where the pages may load images and videos from besides their own origin: the origins of
/// output URLs when they are served elsewhere (`outputs.cdn_base_url`, `server.public_url`).
#[derive(Debug, Clone, Default)]
pub struct Sources {
    pub media: Vec<String>,
}

/// The console's pages, for any state (they read none).
pub fn router<S: Clone + Send + Sync + 'static>(sources: Sources) -> Router<S> {
    let header = |policy: String| {
        HeaderValue::from_str(&policy).unwrap_or_else(|_| HeaderValue::from_static("default-src 'self'"))
    };
    let policies = Policies {
        pages: header(content_security_policy(&sources)),
        docs: header(
            content_security_policy(&sources).replace("style-src 'self'", "style-src 'self' 'unsafe-inline'"),
        ),
    };
    let page = move |req: Request| {
        let policies = policies.clone();
        async move { serve(req.uri().path(), req.headers(), &policies) }
    };
    Router::new()
        .route("/", get(|| async { Redirect::temporary("/console/") }))
        .route("/console", get(|| async { Redirect::temporary("/console/") }))
        .route("/console/", get(page.clone()))
        .route("/console/{*path}", get(page))
}

#[derive(Clone)]
struct Policies {
    pages: HeaderValue,
    docs: HeaderValue,
}

/// The policy of the pages: everything from this origin, nothing inline, nothing framed.
/// Images and videos may also be data and blob URLs (previews of chosen files, and the outputs
/// of zero-retention runs, which come back as data URLs) and come from the configured media
/// origins.
pub fn content_security_policy(sources: &Sources) -> String {
    let media: String = sources.media.iter().map(|s| format!(" {s}")).collect();
    format!(
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:{media}; \
         media-src 'self' data: blob:{media}; connect-src 'self'; font-src 'self'; object-src 'none'; \
         frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    )
}

fn serve(path: &str, headers: &HeaderMap, policies: &Policies) -> Response {
    let file = path.trim_start_matches("/console/").trim_start_matches('/');
    if file == "api" || file.starts_with("api/") {
        return (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "application/json")],
            r#"{"error":{"name":"NotFound","message":"no such console route"}}"#,
        )
            .into_response();
    }
    let (name, cache, policy) = if file.starts_with("assets/") {
        (file, "public, max-age=31536000, immutable", None)
    } else if file.starts_with("vendor/") {
        (file, "no-cache", None)
    } else if file == "docs" || file == "docs.html" {
        ("docs.html", "no-cache", Some(policies.docs.clone()))
    } else {
        ("index.html", "no-cache", Some(policies.pages.clone()))
    };
    match Bundle::get(name) {
        Some(found) => respond(found, headers, cache, policy),
        None if policy.is_some() => {
            (StatusCode::SERVICE_UNAVAILABLE, "the console's bundle is missing from this build")
                .into_response()
        }
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

fn respond(
    file: rust_embed::EmbeddedFile,
    headers: &HeaderMap,
    cache: &'static str,
    csp: Option<HeaderValue>,
) -> Response {
    let etag = format!("\"{}\"", hex::encode(&file.metadata.sha256_hash()[..16]));
    let mut response = if headers.get(header::IF_NONE_MATCH).is_some_and(|v| v.as_bytes() == etag.as_bytes())
    {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut r = Response::new(Body::from(file.data.into_owned()));
        if let Ok(mime) = HeaderValue::from_str(file.metadata.mimetype()) {
            r.headers_mut().insert(header::CONTENT_TYPE, mime);
        }
        r
    };
    let h = response.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    if let Ok(etag) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, etag);
    }
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    if let Some(csp) = csp {
        h.insert(header::CONTENT_SECURITY_POLICY, csp);
        h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    }
    response
}

#[cfg(test)]
mod tests;
