//! Files made from the interface and committed, so that readers and the console's build have
//! them without running the service: `docs/openapi.json` (the OpenAPI document) and
//! `web/src/lib/wire.ts` (the wire types as TypeScript, from the same schemas). Each must be
//! what the code makes now; `ATELIER_BLESS=1 cargo test -p atelier-api --test generated`
//! writes them anew (then rebuild the console: `npm --prefix web run build`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Compares `made` with the committed file at `path` (from the repository's root), or writes
/// it when blessing.
fn check(path: &str, made: &str) {
    let file = root().join(path);
    if std::env::var_os("ATELIER_BLESS").is_some() {
        std::fs::write(&file, made).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(
        committed == made,
        "{path} is not what the code makes now: run `ATELIER_BLESS=1 cargo test -p atelier-api --test generated` \
         (then `npm --prefix web run build` for the console) and commit the result"
    );
}

#[test]
fn the_committed_openapi_document_is_the_served_one() {
    let document = atelier_api::openapi::document();
    check("docs/openapi.json", &format!("{}\n", serde_json::to_string_pretty(&document).unwrap()));
}

#[test]
fn the_console_s_wire_types_are_written_from_the_document_s_schemas() {
    let document = atelier_api::openapi::document();
    let schemas = document["components"]["schemas"].as_object().unwrap();
    let wire: serde_json::Map<String, serde_json::Value> =
        atelier_wire::schema::components().keys().map(|name| (name.clone(), schemas[name].clone())).collect();
    check("web/src/lib/wire.ts", &atelier_wire::typescript::module(&wire));
}
