//! Which scope each keyed operation needs: one table that the check ([`check`], made by the
//! `Caller` and `SignedIn` extractors) and the OpenAPI document (`x-atelier-scope` and the
//! security requirement's scopes) both read, so what is documented is what is enforced. The
//! console's `/console/api/v3/*` routes are the `/api/v3/*` ones.
//!
//! A route missing from the table is refused (403) whatever the key holds: a new route needs
//! its line here, and the interface tests fail until it has one.

use atelier_core::scopes::{Scope, Scopes};
use axum::http::Method;

use crate::error::ApiError;

/// What an operation asks of the caller's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    Scope(Scope),
    /// Any session: reading and ending the console's own session (signing in takes a key, of
    /// any scopes, in its body).
    AnyKey,
}

use Needs::{AnyKey, Scope as S};
use Scope::{Keys, Read, Run, Webhooks, Workflows};

/// (method, route as routed, what it needs). The v2 routes are written with `{family}` for
/// the family's path segment.
pub const OPERATIONS: &[(&str, &str, Needs)] = &[
    ("POST", "/api/v3/run", S(Run)),
    ("GET", "/api/v3/status/{run_id}", S(Read)),
    ("GET", "/api/v3/status/{run_id}/events", S(Read)),
    ("POST", "/api/v3/cancel/{run_id}", S(Run)),
    ("GET", "/api/v3/runs", S(Read)),
    ("DELETE", "/api/v3/runs/{run_id}", S(Run)),
    ("GET", "/api/v3/runs/{run_id}/webhooks", S(Webhooks)),
    ("POST", "/api/v3/runs/{run_id}/webhooks/{delivery}/replay", S(Webhooks)),
    ("GET", "/api/v3/workflow/{name}", S(Read)),
    ("PUT", "/api/v3/workflow/{name}", S(Workflows)),
    ("DELETE", "/api/v3/workflow/{name}", S(Workflows)),
    ("GET", "/api/v3/workflows", S(Read)),
    ("POST", "/api/v3/workflows/validate", S(Read)),
    ("GET", "/api/v3/tools", S(Read)),
    ("POST", "/api/v3/estimate", S(Read)),
    ("POST", "/api/v3/uploads", S(Run)),
    ("POST", "/api/v3/uploads/direct", S(Run)),
    ("POST", "/api/v3/uploads/direct/{id}", S(Run)),
    ("GET", "/api/v3/uploads/{id}", S(Read)),
    ("GET", "/api/v3/usage", S(Read)),
    ("GET", "/api/v3/audit", S(Keys)),
    ("GET", "/api/v3/webhooks/secret", S(Webhooks)),
    ("POST", "/api/v3/webhooks/secret/rotate", S(Webhooks)),
    ("GET", "/api/v3/webhooks/endpoint", S(Webhooks)),
    ("PUT", "/api/v3/webhooks/endpoint", S(Webhooks)),
    ("DELETE", "/api/v3/webhooks/endpoint", S(Webhooks)),
    ("POST", "/api/v3/batches", S(Run)),
    ("GET", "/api/v3/batches", S(Read)),
    ("GET", "/api/v3/batches/{batch_id}", S(Read)),
    ("DELETE", "/api/v3/batches/{batch_id}", S(Run)),
    ("GET", "/api/v3/batches/{batch_id}/items", S(Read)),
    ("POST", "/api/v3/batches/{batch_id}/cancel", S(Run)),
    ("POST", "/api/v3/batches/{batch_id}/retry", S(Run)),
    ("GET", "/api/v3/batches/{batch_id}/results.jsonl", S(Read)),
    ("GET", "/api/v3/batches/{batch_id}/results.zip", S(Read)),
    ("GET", "/api/v3/batches/{batch_id}/events", S(Read)),
    ("GET", "/api/v3/batches/{batch_id}/webhooks", S(Webhooks)),
    ("POST", "/api/v2/{family}/run", S(Run)),
    ("GET", "/api/v2/{family}/status/{run_id}", S(Read)),
    ("GET", "/api/v2/user/tokens", S(Read)),
    ("GET", "/console/api/session", AnyKey),
    ("DELETE", "/console/api/session", AnyKey),
    ("GET", "/console/api/keys", S(Keys)),
    ("POST", "/console/api/keys", S(Keys)),
    ("DELETE", "/console/api/keys/{id}", S(Keys)),
    ("PUT", "/console/api/keys/{id}/limits", S(Keys)),
    ("GET", "/console/api/ledger", S(Read)),
    ("GET", "/console/api/usage", S(Read)),
    ("GET", "/console/api/runs/{run_id}", S(Read)),
    ("POST", "/console/api/runs/{run_id}/rerun", S(Run)),
];

/// What the operation `method route` needs; `None` when the table has no line for it. `route`
/// is the route as documented or as routed (`/console/api/v3/…` is read as `/api/v3/…`, a
/// v2 family's path as `{family}`).
pub fn needs(method: &str, route: &str) -> Option<Needs> {
    let route = route.strip_prefix("/console").filter(|r| r.starts_with("/api/v3/")).unwrap_or(route);
    // A family's path may hold a slash (`tryon/pro`): the longest that fits.
    let family = atelier_core::v2::Family::ALL
        .iter()
        .filter_map(|f| route.strip_prefix("/api/v2/")?.strip_prefix(f.path())?.strip_prefix('/'))
        .min_by_key(|rest| rest.len());
    let family_route;
    let route = match family {
        Some(rest) => {
            family_route = format!("/api/v2/{{family}}/{rest}");
            family_route.as_str()
        }
        None => route,
    };
    OPERATIONS.iter().find(|(m, r, _)| *m == method && *r == route).map(|&(.., needs)| needs)
}

/// Whether a key holding `held` may call `method route`: 403 `Forbidden` naming the scope it
/// lacks (or saying the route declares none) when not.
pub fn check(method: &Method, route: &str, held: Scopes) -> Result<(), ApiError> {
    match needs(method.as_str(), route) {
        Some(AnyKey) => Ok(()),
        Some(S(scope)) if held.contains(scope) => Ok(()),
        Some(S(scope)) => Err(ApiError::Forbidden(format!(
            "this key does not hold the '{scope}' scope, which {method} {route} needs ({}); it holds: {}",
            scope.describe(),
            if held.is_empty() { "none".to_string() } else { held.to_string() }
        ))),
        None => {
            Err(ApiError::Forbidden(format!("{method} {route} declares no scope, so no key may call it")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_and_v2_routes_are_read_as_the_tables_lines() {
        assert_eq!(needs("POST", "/console/api/v3/run"), Some(S(Run)));
        assert_eq!(needs("GET", "/api/v2/tryon/status/{run_id}"), Some(S(Read)));
        assert_eq!(needs("POST", "/api/v2/tryon/pro/run"), Some(S(Run)));
        assert_eq!(needs("GET", "/api/v2/tryon/pro/status/{run_id}"), Some(S(Read)));
        assert_eq!(needs("GET", "/api/v2/nosuch/status/{run_id}"), None);
        assert_eq!(needs("GET", "/api/v2/user/tokens"), Some(S(Read)));
        assert_eq!(needs("GET", "/console/api/keys"), Some(S(Keys)));
        assert_eq!(needs("PATCH", "/api/v3/run"), None);
        assert_eq!(needs("GET", "/console/api/session"), Some(AnyKey));
    }

    #[test]
    fn a_key_without_the_scope_is_refused_with_what_it_lacks() {
        let read: Scopes = "read".parse().unwrap();
        assert!(check(&Method::GET, "/api/v3/status/{run_id}", read).is_ok());
        let refused = check(&Method::POST, "/api/v3/run", read).unwrap_err();
        let ApiError::Forbidden(message) = refused else { panic!("not Forbidden: {refused:?}") };
        assert!(message.contains("'run' scope"), "{message}");
        assert!(message.contains("it holds: read"), "{message}");
        assert!(check(&Method::GET, "/api/v3/nowhere", Scopes::ALL).is_err());
        assert!(check(&Method::DELETE, "/console/api/session", Scopes::NONE).is_ok());
    }

    #[test]
    fn every_keyed_operation_documented_has_a_line_and_every_line_is_documented() {
        let document = crate::openapi::document();
        let paths = document["paths"].as_object().unwrap();
        for (path, item) in paths {
            for (method, operation) in item.as_object().unwrap() {
                let keyed = operation["security"].as_array().is_some_and(|s| !s.is_empty());
                let needs = needs(&method.to_ascii_uppercase(), path);
                assert_eq!(keyed, needs.is_some(), "{method} {path}: keyed {keyed}, table {needs:?}");
                if let Some(S(scope)) = needs {
                    assert_eq!(operation["x-atelier-scope"], scope.as_str(), "{method} {path}");
                    assert!(operation["responses"]["403"].is_object(), "{method} {path} documents no 403");
                }
            }
        }
        for (method, route, _) in OPERATIONS {
            let family = atelier_core::v2::Family::ALL[0].path();
            let route = route.replace("{family}", family);
            assert!(
                paths[&route][method.to_ascii_lowercase()].is_object(),
                "{method} {route} is not documented"
            );
        }
    }
}
