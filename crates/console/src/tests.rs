#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use sha2::{Digest, Sha256};
use tower::ServiceExt;

use super::*;

fn web() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web")
}

/// The digest `web/scripts/source-hash.mjs` writes: SHA-256 over, for each source file in
/// path order, "<path>\n<SHA-256 of the file, hex>\n".
fn source_digest(web: &Path) -> String {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.push(path);
            }
        }
    }
    let mut files: Vec<PathBuf> =
        ["docs.html", "index.html", "package-lock.json", "package.json", "tsconfig.json", "vite.config.ts"]
            .iter()
            .map(|f| web.join(f))
            .collect();
    walk(&web.join("src"), &mut files);
    let mut names: Vec<(String, PathBuf)> = files
        .into_iter()
        .map(|f| (f.strip_prefix(web).unwrap().to_string_lossy().replace('\\', "/"), f))
        .collect();
    names.sort();
    let mut outer = Sha256::new();
    for (name, path) in names {
        let inner = hex::encode(Sha256::digest(std::fs::read(&path).unwrap()));
        outer.update(format!("{name}\n{inner}\n"));
    }
    hex::encode(outer.finalize())
}

#[test]
fn the_committed_bundle_was_built_from_the_sources() {
    let web = web();
    if !web.join("src").is_dir() {
        return; // Built outside the repository: nothing to compare with.
    }
    let built = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("dist/SOURCE_SHA256"))
        .expect("dist/SOURCE_SHA256: build the console (npm --prefix web ci && npm --prefix web run build)");
    assert_eq!(
        built.trim(),
        source_digest(&web),
        "web/ changed since crates/console/dist was built: run `npm --prefix web ci && npm --prefix web run build` \
         and commit crates/console/dist"
    );
}

async fn get(path: &str, headers: &[(&str, &str)]) -> axum::response::Response {
    let app: Router = router(Sources { media: vec!["https://cdn.example".into()] });
    let mut req = Request::get(path);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    app.oneshot(req.body(Body::empty()).unwrap()).await.unwrap()
}

#[tokio::test]
async fn pages_are_the_app_under_a_strict_policy() {
    for path in
        ["/console/", "/console/runs", "/console/editor/Summer%20look", "/console/runs/wr_x?status=failed"]
    {
        let r = get(path, &[]).await;
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        let h = r.headers();
        assert_eq!(h["content-type"], "text/html");
        assert_eq!(h["cache-control"], "no-cache");
        let csp = h["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("script-src 'self';") && csp.contains("style-src 'self';"), "{csp}");
        assert!(!csp.contains("unsafe"), "{csp}");
        assert!(csp.contains("img-src 'self' data: blob: https://cdn.example;"), "{csp}");
        assert!(csp.contains("media-src 'self' data: blob: https://cdn.example;"), "{csp}");
        assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
        assert_eq!(h["x-frame-options"], "DENY");
        assert_eq!(h["x-content-type-options"], "nosniff");
    }
}

#[tokio::test]
async fn assets_are_cached_for_good_and_revalidated_by_etag() {
    let index = String::from_utf8(Bundle::get("index.html").unwrap().data.into_owned()).unwrap();
    let script = index.split("src=\"/console/").nth(1).unwrap().split('"').next().unwrap();
    let r = get(&format!("/console/{script}"), &[]).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["cache-control"], "public, max-age=31536000, immutable");
    assert!(r.headers()["content-type"].to_str().unwrap().contains("javascript"));
    assert!(r.headers().get("content-security-policy").is_none());
    let etag = r.headers()["etag"].to_str().unwrap().to_string();
    let again = get(&format!("/console/{script}"), &[("if-none-match", &etag)]).await;
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(get("/console/assets/nothing.js", &[]).await.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_api_reference_is_its_own_page_with_the_viewer_from_the_bundle() {
    let r = get("/console/docs", &[]).await;
    assert_eq!(r.status(), StatusCode::OK);
    let csp = r.headers()["content-security-policy"].to_str().unwrap().to_string();
    assert!(csp.contains("style-src 'self' 'unsafe-inline';") && csp.contains("script-src 'self';"), "{csp}");
    let body = axum::body::to_bytes(r.into_body(), usize::MAX).await.unwrap();
    assert!(String::from_utf8_lossy(&body).contains("/console/vendor/scalar-api-reference.js"));
    let viewer = get("/console/vendor/scalar-api-reference.js", &[]).await;
    assert_eq!(viewer.status(), StatusCode::OK);
    assert!(viewer.headers()["content-type"].to_str().unwrap().contains("javascript"));
    assert_eq!(get("/console/vendor/nothing.js", &[]).await.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_root_redirects_and_api_paths_are_never_the_page() {
    for path in ["/", "/console"] {
        let r = get(path, &[]).await;
        assert_eq!(r.status(), StatusCode::TEMPORARY_REDIRECT, "{path}");
        assert_eq!(r.headers()["location"], "/console/");
    }
    for path in ["/console/api", "/console/api/nothing", "/console/api/v3/nope"] {
        let r = get(path, &[]).await;
        assert_eq!(r.status(), StatusCode::NOT_FOUND, "{path}");
        assert_eq!(r.headers()["content-type"], "application/json");
    }
}
