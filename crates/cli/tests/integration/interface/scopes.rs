//! Scoped keys, as a matrix generated from the OpenAPI document: every keyed operation
//! (its `x-atelier-scope`) × every scope. A key lacking the operation's scope is refused
//! 403 `Forbidden` naming it, with the header and through a console session (also under
//! `/console/api/v3`), and the account is unchanged after all of them; a key holding only
//! that scope is never refused for it. Then the rules around keys: what a key may make, and
//! a change of scopes seen at the next request.

use atelier_core::scopes::{Scope, Scopes};
use serde_json::{json, Value};

use super::common::{png_base64, png_bytes, TestApp};

/// An operation of the document: method, path (v2 families spelt out) and the scope it names.
struct Operation {
    method: String,
    path: String,
    scope: Scope,
}

fn operations(document: &Value) -> Vec<Operation> {
    let mut found = Vec::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            if let Some(scope) = operation["x-atelier-scope"].as_str() {
                let scope = scope.parse().unwrap();
                found.push(Operation { method: method.to_ascii_uppercase(), path: path.clone(), scope });
            }
        }
    }
    // Deletions last, so that the allowed pass deletes what the others read only at the end.
    found.sort_by_key(|o| o.method == "DELETE");
    found
}

/// What the operations' paths name: a finished run, a finished batch, a saved workflow, an
/// upload.
struct Fixtures {
    run: String,
    batch: String,
    workflow: &'static str,
    upload: String,
}

async fn fixtures(app: &TestApp) -> Fixtures {
    let run =
        app.run(&json!({"type": "node", "target": "upscale", "input": {"image": png_base64(8, 8)}})).await;
    app.wait(&run).await;
    let workflow = "scoped";
    let flow = json!({
        "nodes": [{"name": "Up", "tool": "upscale", "params": {"scale": 2}}],
        "outputs": {"final_image": "Up.output"}
    });
    let (code, answer) =
        app.call("PUT", &format!("/api/v3/workflow/{workflow}"), Some(&app.key), Some(&flow)).await;
    assert_eq!(code, 200, "{answer}");
    let upload = app.upload(&app.key, png_bytes(16, 16)).await;
    let body = json!({"type": "node", "target": "upscale", "items": [{"input": {"image": upload}}]});
    let (code, batch) = app.post("/api/v3/batches", &body).await;
    assert_eq!(code, 200, "{batch}");
    let batch = batch["id"].as_str().unwrap().to_string();
    for _ in 0..600 {
        if app.get(&format!("/api/v3/batches/{batch}")).await.1["status"] != "running" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let upload = upload.strip_prefix("upload:").unwrap().to_string();
    Fixtures { run, batch, workflow, upload }
}

impl Fixtures {
    fn fill(&self, path: &str) -> String {
        path.replace("{run_id}", &self.run)
            .replace("{batch_id}", &self.batch)
            .replace("{name}", self.workflow)
            // An upload's id, a direct upload's (none such: 404), a key's (none such: 404).
            .replace("/uploads/direct/{id}", "/uploads/direct/up_nosuchdirectupload")
            .replace("/uploads/{id}", &format!("/uploads/{}", self.upload))
            .replace("{id}", "999999")
    }
}

/// The body an operation is sent: an empty object for those that take one. A new key asks
/// for the one scope under test, which the key making it holds.
fn body(op: &Operation) -> Option<Value> {
    match (op.method.as_str(), op.path.as_str()) {
        ("POST", "/console/api/keys") => Some(json!({"scopes": [op.scope.as_str()]})),
        ("POST" | "PUT", _) => Some(json!({})),
        _ => None,
    }
}

/// A request with a key, or through a console session; the status and, unless it is an
/// event stream (which stays open), the body.
async fn send(app: &TestApp, via: &Via, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let mut request = app.client.request(method.parse().unwrap(), format!("{}{path}", app.base));
    match via {
        Via::Key(key) => request = request.header("X-API-KEY", key.as_str()),
        Via::Session { cookie, csrf } => {
            let host = app.base.trim_start_matches("http://").to_string();
            request = request
                .header("cookie", cookie.as_str())
                .header("x-csrf-token", csrf.as_str())
                .header("sec-fetch-site", "same-origin")
                .header("origin", app.base.as_str())
                .header("host", host);
        }
    }
    if let Some(body) = body {
        request = request.json(body);
    }
    let response = request.send().await.unwrap();
    let code = response.status().as_u16();
    let stream = response
        .headers()
        .get("content-type")
        .is_some_and(|t| t.as_bytes().starts_with(b"text/event-stream"));
    if stream {
        return (code, Value::Null);
    }
    let bytes = response.bytes().await.unwrap();
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

#[derive(Clone)]
enum Via {
    Key(String),
    Session { cookie: String, csrf: String },
}

async fn session(app: &TestApp, key: &str) -> Via {
    let response = app
        .client
        .post(format!("{}/console/api/session", app.base))
        .json(&json!({"api_key": key}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let cookie = response.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_string();
    let body: Value = response.json().await.unwrap();
    Via::Session { cookie, csrf: body["csrf_token"].as_str().unwrap().to_string() }
}

/// What the account holds, read with its owner's key: balance, runs, workflows, batches,
/// webhook secret and endpoint, keys.
async fn snapshot(app: &TestApp) -> Value {
    let account = app.store().account("test").await.unwrap();
    let keys: Vec<(i64, bool, String)> = app
        .store()
        .list_keys(account.id)
        .await
        .unwrap()
        .into_iter()
        .map(|k| (k.id, k.revoked_at.is_some(), k.scopes.to_string()))
        .collect();
    json!({
        "balance": app.balance().await,
        "runs": app.get("/api/v3/runs?limit=200").await.1["runs"],
        "workflows": app.get("/api/v3/workflows").await.1,
        "batches": app.get("/api/v3/batches").await.1["batches"],
        "secret": app.get("/api/v3/webhooks/secret").await.1,
        "endpoint": app.get("/api/v3/webhooks/endpoint").await.1,
        "keys": keys,
    })
}

#[tokio::test]
async fn every_operation_refuses_a_key_without_its_scope_and_allows_one_with_only_it() {
    let app = TestApp::start().await;
    let store = app.store();
    let (_, document) = app.call("GET", "/openapi.json", None, None).await;
    let ops = operations(&document);
    assert!(ops.len() > 40, "{} operations", ops.len());
    for scope in Scope::ALL {
        assert!(ops.iter().any(|o| o.scope == *scope), "no operation needs {scope}");
    }
    let fx = fixtures(&app).await;
    let before = snapshot(&app).await;

    // Refused: every scope but the one the operation needs, by header and by session.
    let mut refused = 0;
    for scope in Scope::ALL {
        let lacking: Scopes = Scope::ALL.iter().copied().filter(|s| s != scope).collect();
        let key = store.create_key("test", lacking).await.unwrap();
        let by_session = session(&app, &key).await;
        for op in ops.iter().filter(|o| o.scope == *scope) {
            let path = fx.fill(&op.path);
            let mut tries = Vec::new();
            if path.starts_with("/console/") {
                tries.push((by_session.clone(), path));
            } else {
                if let Some(rest) = path.strip_prefix("/api/v3/") {
                    tries.push((by_session.clone(), format!("/console/api/v3/{rest}")));
                }
                tries.push((Via::Key(key.clone()), path));
            }
            for (via, path) in tries {
                let (code, answer) = send(&app, &via, &op.method, &path, body(op).as_ref()).await;
                let message = answer["error"]["message"].as_str().unwrap_or_default();
                assert_eq!(
                    (code, answer["error"]["name"].as_str()),
                    (403, Some("Forbidden")),
                    "{} {path} with {lacking}: {answer}",
                    op.method
                );
                assert!(message.contains(&format!("'{scope}' scope")), "{} {path}: {message}", op.method);
                refused += 1;
            }
        }
    }
    assert!(refused > 70, "{refused} refusals");
    let mut after = snapshot(&app).await;
    // The keys made for the test are the only change.
    after["keys"] = before["keys"].clone();
    assert_eq!(after, before, "a refused request changed nothing");

    // Allowed: a key with only the operation's scope is never refused for it.
    let mut allowed = 0;
    for scope in Scope::ALL {
        let only: Scopes = [*scope].into_iter().collect();
        let key = store.create_key("test", only).await.unwrap();
        let by_session = session(&app, &key).await;
        for op in ops.iter().filter(|o| o.scope == *scope) {
            let path = fx.fill(&op.path);
            let via = if path.starts_with("/console/") { by_session.clone() } else { Via::Key(key.clone()) };
            let (code, answer) = send(&app, &via, &op.method, &path, body(op).as_ref()).await;
            assert!(code != 401 && code != 403, "{} {path} with only {scope}: {code} {answer}", op.method);
            allowed += 1;
        }
    }
    println!("{} operations: {refused} requests refused, {allowed} allowed", ops.len());
}

#[tokio::test]
async fn keys_are_made_with_run_and_read_and_never_beyond_their_makers_scopes() {
    let app = TestApp::start().await;
    let store = app.store();
    let keeper = store.create_key("test", "read,keys".parse().unwrap()).await.unwrap();
    let browser = session(&app, &keeper).await;
    let (code, session_view) = send(&app, &browser, "GET", "/console/api/session", None).await;
    assert_eq!((code, &session_view["scopes"]), (200, &json!(["read", "keys"])));

    // Beyond its own: refused, and no key made.
    let account = store.account("test").await.unwrap();
    let count = store.list_keys(account.id).await.unwrap().len();
    for asked in [json!({}), json!({"scopes": ["read", "run"]}), json!({"scopes": ["keys", "workflows"]})] {
        let (code, answer) = send(&app, &browser, "POST", "/console/api/keys", Some(&asked)).await;
        assert_eq!((code, answer["error"]["name"].as_str()), (403, Some("Forbidden")), "{asked}: {answer}");
    }
    assert_eq!(store.list_keys(account.id).await.unwrap().len(), count);
    // Within: made with those scopes, and listed with them.
    let (code, made) =
        send(&app, &browser, "POST", "/console/api/keys", Some(&json!({"scopes": ["read"]}))).await;
    assert_eq!((code, &made["scopes"]), (200, &json!(["read"])), "{made}");
    let made_key = made["key"].as_str().unwrap();
    assert_eq!(store.authenticate(made_key).await.unwrap().unwrap().scopes.to_string(), "read");
    let (_, list) = send(&app, &browser, "GET", "/console/api/keys", None).await;
    let listed = list["keys"].as_array().unwrap().iter().find(|k| k["id"] == made["id"]).unwrap().clone();
    assert_eq!(listed["scopes"], json!(["read"]));
    // Bad bodies: 422 naming the field, or 400.
    for (asked, code) in [
        (json!({"scopes": ["admin"]}), 422),
        (json!({"scopes": []}), 422),
        (json!({"scopes": "read"}), 422),
        (json!({"scope": ["read"]}), 422),
        (json!([]), 400),
    ] {
        let (got, answer) = send(&app, &browser, "POST", "/console/api/keys", Some(&asked)).await;
        assert_eq!(got, code, "{asked}: {answer}");
    }

    // The account's first key makes a key with no body: run and read.
    let owner = session(&app, &app.key).await;
    let (code, made) = send(&app, &owner, "POST", "/console/api/keys", None).await;
    assert_eq!((code, &made["scopes"]), (200, &json!(["run", "read"])), "{made}");
}

#[tokio::test]
async fn a_change_of_scopes_holds_from_the_next_request_on_keys_and_sessions() {
    let app = TestApp::start().await;
    let store = app.store();
    let key = store.create_key("test", Scopes::NEW_KEY).await.unwrap();
    let browser = session(&app, &key).await;
    let flow = json!({"nodes": [{"name": "Up", "tool": "upscale"}], "outputs": {"out": "Up.output"}});
    let put = |via| {
        let app = &app;
        let flow = flow.clone();
        async move { send(app, via, "PUT", "/console/api/v3/workflow/later", Some(&flow)).await.0 }
    };
    assert_eq!(put(&browser).await, 403);
    let (code, _) = app.call("PUT", "/api/v3/workflow/later", Some(&key), Some(&flow)).await;
    assert_eq!(code, 403);

    store.set_key_scopes(&key, "run,read,workflows".parse().unwrap()).await.unwrap();
    assert_eq!(put(&browser).await, 200, "the session sees its key's new scopes");
    let (code, _) = app.call("DELETE", "/api/v3/workflow/later", Some(&key), None).await;
    assert_eq!(code, 200);

    store.set_key_scopes(&key, "read".parse().unwrap()).await.unwrap();
    let run = json!({"type": "node", "target": "upscale", "input": {"image": png_base64(8, 8)}});
    let (code, answer) = app.call("POST", "/api/v3/run", Some(&key), Some(&run)).await;
    assert_eq!((code, answer["error"]["name"].as_str()), (403, Some("Forbidden")), "{answer}");
    assert_eq!(app.get("/api/v3/runs").await.1["runs"], json!([]), "nothing was started");
}
