//! The console's API over HTTP: sign-in and sessions, CSRF and origin checks, keys, the
//! ledger, usage, run details and re-runs, and the checks an editor calls
//! (`/api/v3/workflows/validate`, layouts, filtered run listings).

use reqwest::header::HeaderMap;
use serde_json::{json, Value};

use super::common::{png_base64, TestApp};

/// A signed-in browser: its cookie and CSRF token.
struct Browser<'a> {
    app: &'a TestApp,
    cookie: String,
    csrf: String,
}

struct Answer {
    code: u16,
    headers: HeaderMap,
    body: Value,
}

async fn send(
    app: &TestApp,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Answer {
    let mut req = app.client.request(method.parse().unwrap(), format!("{}{path}", app.base));
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    if let Some(body) = body {
        req = req.json(body);
    }
    let resp = req.send().await.unwrap();
    let code = resp.status().as_u16();
    let headers = resp.headers().clone();
    let text = resp.text().await.unwrap();
    Answer { code, headers, body: serde_json::from_str(&text).unwrap_or(Value::String(text)) }
}

async fn sign_in_with<'a>(app: &'a TestApp, key: &str) -> Browser<'a> {
    let answer = send(app, "POST", "/console/api/session", &[], Some(&json!({"api_key": key}))).await;
    assert_eq!(answer.code, 200, "{}", answer.body);
    let set = answer.headers["set-cookie"].to_str().unwrap();
    let cookie = set.split(';').next().unwrap().to_string();
    Browser { app, cookie, csrf: answer.body["csrf_token"].as_str().unwrap().to_string() }
}

impl Browser<'_> {
    /// A request as the console's page sends it: cookie, CSRF token, same origin.
    async fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Answer {
        let host = self.app.base.trim_start_matches("http://").to_string();
        let origin = self.app.base.clone();
        let headers = [
            ("cookie", self.cookie.as_str()),
            ("x-csrf-token", self.csrf.as_str()),
            ("sec-fetch-site", "same-origin"),
            ("origin", origin.as_str()),
            ("host", host.as_str()),
        ];
        send(self.app, method, path, &headers, body).await
    }

    async fn get(&self, path: &str) -> Value {
        let answer = self.call("GET", path, None).await;
        assert_eq!(answer.code, 200, "GET {path}: {}", answer.body);
        answer.body
    }
}

#[tokio::test]
async fn signing_in_exchanges_the_key_for_an_http_only_strict_cookie() {
    let app = TestApp::start().await;
    let answer = send(&app, "POST", "/console/api/session", &[], Some(&json!({"api_key": app.key}))).await;
    assert_eq!(answer.code, 200, "{}", answer.body);
    let cookie = answer.headers["set-cookie"].to_str().unwrap();
    assert!(cookie.starts_with("atelier_session="), "{cookie}");
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=604800"] {
        assert!(cookie.split("; ").any(|f| f == flag), "{flag} in {cookie}");
    }
    assert!(!cookie.contains("Secure"), "plain HTTP: {cookie}");
    assert_eq!(answer.body["account"], "test");
    assert_eq!(answer.body["balance"], 1000);
    assert_eq!(answer.body["csrf_token"].as_str().unwrap().len(), 32);
    assert!(!answer.body.to_string().contains(&app.key), "the key is not echoed");
    assert_eq!(answer.headers["cache-control"], "no-store");

    // Behind a TLS proxy: the __Host- name, Secure.
    let https = [("x-forwarded-proto", "https")];
    let answer = send(&app, "POST", "/console/api/session", &https, Some(&json!({"api_key": app.key}))).await;
    let cookie = answer.headers["set-cookie"].to_str().unwrap();
    assert!(cookie.starts_with("__Host-atelier_session=") && cookie.contains("; Secure"), "{cookie}");
    let browser =
        Browser { app: &app, cookie: cookie.split(';').next().unwrap().into(), csrf: String::new() };
    assert_eq!(browser.get("/console/api/session").await["account"], "test");

    // Refused sign-ins.
    for (body, code, name) in [
        (json!({"api_key": "atl_wrong"}), 401, "Unauthorized"),
        (json!({"api_key": 5}), 422, "InvalidInput"),
        (json!({}), 422, "InvalidInput"),
        (json!({"api_key": "   "}), 422, "InvalidInput"),
    ] {
        let answer = send(&app, "POST", "/console/api/session", &[], Some(&body)).await;
        assert_eq!((answer.code, answer.body["error"]["name"].as_str()), (code, Some(name)), "{body}");
        assert!(answer.headers.get("set-cookie").is_none());
    }
    let from_elsewhere = [("origin", "http://evil.example"), ("host", "127.0.0.1")];
    let answer =
        send(&app, "POST", "/console/api/session", &from_elsewhere, Some(&json!({"api_key": app.key}))).await;
    assert_eq!((answer.code, answer.body["error"]["name"].as_str()), (403, Some("Forbidden")));
}

#[tokio::test]
async fn the_cookie_opens_the_console_api_and_never_the_public_one() {
    let app = TestApp::start().await;
    let browser = sign_in_with(&app, &app.key).await;
    let cookie_only = [("cookie", browser.cookie.as_str())];
    for path in ["/api/v3/tools", "/api/v2/user/tokens", "/api/v3/runs"] {
        let answer = send(&app, "GET", path, &cookie_only, None).await;
        assert_eq!(
            (answer.code, answer.body["error"]["name"].as_str()),
            (401, Some("Unauthorized")),
            "{path}"
        );
    }
    let tools = browser.get("/console/api/v3/tools").await;
    assert_eq!(tools.as_array().unwrap().len(), 12);
    // Without a session: 401 SessionRequired, on every console route.
    for (method, path) in [
        ("GET", "/console/api/session"),
        ("GET", "/console/api/keys"),
        ("GET", "/console/api/ledger"),
        ("GET", "/console/api/usage"),
        ("GET", "/console/api/runs/gen_aaaaaaaaaaaaaaaa"),
        ("GET", "/console/api/v3/tools"),
        ("GET", "/console/api/v3/runs"),
        ("GET", "/console/api/v3/webhooks/secret"),
        ("GET", "/console/api/v3/status/gen_aaaaaaaaaaaaaaaa/events"),
    ] {
        for headers in
            [vec![], vec![("cookie", "atelier_session=forged")], vec![("x-api-key", app.key.as_str())]]
        {
            let answer = send(&app, method, path, &headers, None).await;
            assert_eq!(answer.code, 401, "{method} {path} {headers:?}: {}", answer.body);
            assert_eq!(answer.body["error"]["name"], "SessionRequired");
        }
    }
}

#[tokio::test]
async fn changes_need_the_csrf_token_and_the_same_origin() {
    let app = TestApp::start().await;
    let browser = sign_in_with(&app, &app.key).await;
    let host = app.base.trim_start_matches("http://").to_string();
    let refused: [Vec<(&str, &str)>; 5] = [
        vec![("cookie", &browser.cookie)],
        vec![("cookie", &browser.cookie), ("x-csrf-token", "wrong")],
        vec![("cookie", &browser.cookie), ("x-csrf-token", &browser.csrf), ("sec-fetch-site", "cross-site")],
        vec![
            ("cookie", &browser.cookie),
            ("x-csrf-token", &browser.csrf),
            ("origin", "http://evil.example"),
            ("host", &host),
        ],
        vec![("cookie", &browser.cookie), ("x-csrf-token", &browser.csrf), ("sec-fetch-site", "same-site")],
    ];
    let run = json!({"type": "node", "target": "upscale", "input": {"image": png_base64(8, 8)}});
    for headers in &refused {
        for (method, path, body) in [
            ("POST", "/console/api/keys", None),
            ("DELETE", "/console/api/session", None),
            ("POST", "/console/api/v3/run", Some(&run)),
        ] {
            let answer = send(&app, method, path, headers, body).await;
            assert_eq!(answer.code, 403, "{method} {path} {headers:?}: {}", answer.body);
            assert_eq!(answer.body["error"]["name"], "Forbidden");
        }
    }
    assert_eq!(app.store().list_keys(1).await.unwrap().len(), 1, "no key was made");
    assert_eq!(app.balance().await, 1000, "nothing ran");
    // The same change with the token, from the page: accepted.
    let answer = browser.call("POST", "/console/api/v3/run", Some(&run)).await;
    assert_eq!(answer.code, 200, "{}", answer.body);
    let id = answer.body["id"].as_str().unwrap().to_string();
    assert_eq!(app.wait(&id).await["overall_status"], "succeeded");
    // The page follows a run's events with its cookie (an EventSource sends no other header).
    let events = app
        .client
        .get(format!("{}/console/api/v3/status/{id}/events", app.base))
        .header("cookie", &browser.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(events.status(), 200);
    assert!(events.text().await.unwrap().contains("event: status"));
    assert!(browser.get("/console/api/v3/webhooks/secret").await["key"]
        .as_str()
        .unwrap()
        .starts_with("whsec_"));
}

#[tokio::test]
async fn keys_are_shown_once_listed_by_prefix_and_revoked() {
    let app = TestApp::start().await;
    let browser = sign_in_with(&app, &app.key).await;
    let made = browser.call("POST", "/console/api/keys", None).await;
    assert_eq!(made.code, 200, "{}", made.body);
    let key = made.body["key"].as_str().unwrap().to_string();
    assert!(key.starts_with("atl_") && key.len() == 44);
    assert_eq!(made.body["prefix"], key[..8]);
    assert_eq!(made.body["current"], false);
    assert_eq!(app.call("GET", "/api/v2/user/tokens", Some(&key), None).await.0, 200, "the new key works");

    let listed = browser.get("/console/api/keys").await;
    let keys = listed["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 2);
    assert!(!listed.to_string().contains(&key), "never shown again");
    assert_eq!(keys[0]["prefix"], key[..8]);
    assert!(keys[0]["last_used"].is_string(), "used once: {}", keys[0]);
    assert_eq!((keys[1]["prefix"].as_str(), keys[1]["current"].as_bool()), (Some(&app.key[..8]), Some(true)));
    assert!(keys.iter().all(|k| k.get("key").is_none() && k["revoked_at"].is_null()));

    let id = keys[0]["id"].as_i64().unwrap();
    let revoked = browser.call("DELETE", &format!("/console/api/keys/{id}"), None).await;
    assert_eq!(revoked.code, 200, "{}", revoked.body);
    assert!(revoked.body["revoked_at"].is_string());
    assert!(revoked.headers.get("set-cookie").is_none(), "another key: the session goes on");
    assert_eq!(app.call("GET", "/api/v2/user/tokens", Some(&key), None).await.0, 401, "the revoked key");
    let again = browser.call("DELETE", &format!("/console/api/keys/{id}"), None).await;
    assert_eq!((again.code, again.body["error"]["name"].as_str()), (409, Some("Conflict")));
    for (path, code, name) in
        [("/console/api/keys/999999", 404, "KeyNotFound"), ("/console/api/keys/abc", 422, "InvalidInput")]
    {
        let answer = browser.call("DELETE", path, None).await;
        assert_eq!((answer.code, answer.body["error"]["name"].as_str()), (code, Some(name)), "{path}");
    }
    // Another account's key is not found, and stays valid.
    let other = app.other_key(0).await;
    let other_id = app.store().authenticate_key(&other).await.unwrap().unwrap().key_id;
    let answer = browser.call("DELETE", &format!("/console/api/keys/{other_id}"), None).await;
    assert_eq!(answer.code, 404);
    assert_eq!(app.call("GET", "/api/v2/user/tokens", Some(&other), None).await.0, 200);

    // Revoking the key this session signed in with ends the session.
    let own = keys[1]["id"].as_i64().unwrap();
    let answer = browser.call("DELETE", &format!("/console/api/keys/{own}"), None).await;
    assert_eq!(answer.code, 200);
    assert!(answer.headers["set-cookie"].to_str().unwrap().contains("Max-Age=0"));
    assert_eq!(browser.call("GET", "/console/api/session", None).await.code, 401);
}

#[tokio::test]
async fn signing_out_ends_the_session_and_other_sessions_go_on() {
    let app = TestApp::start().await;
    let first = sign_in_with(&app, &app.key).await;
    let second = sign_in_with(&app, &app.key).await;
    let answer = first.call("DELETE", "/console/api/session", None).await;
    assert_eq!(answer.code, 204);
    assert!(answer.headers["set-cookie"].to_str().unwrap().contains("Max-Age=0"));
    assert_eq!(first.call("GET", "/console/api/session", None).await.code, 401);
    assert_eq!(second.get("/console/api/session").await["account"], "test");
}

#[tokio::test]
async fn failed_sign_ins_are_limited_per_address_before_the_key_is_read() {
    let app = TestApp::start_with(|c| c.console.sign_in_failures_per_minute = 3, None, 10).await;
    for _ in 0..3 {
        let answer =
            send(&app, "POST", "/console/api/session", &[], Some(&json!({"api_key": "atl_guess"}))).await;
        assert_eq!(answer.code, 401);
    }
    for key in ["atl_guess", app.key.as_str()] {
        let answer = send(&app, "POST", "/console/api/session", &[], Some(&json!({"api_key": key}))).await;
        assert_eq!((answer.code, answer.body["error"]["name"].as_str()), (429, Some("RateLimited")));
        let retry: u64 = answer.headers["retry-after"].to_str().unwrap().parse().unwrap();
        assert!((1..=20).contains(&retry), "{retry}");
    }
    // Signed-in use is not limited by it, and successes are not counted.
    let app = TestApp::start_with(|c| c.console.sign_in_failures_per_minute = 1, None, 10).await;
    for _ in 0..5 {
        sign_in_with(&app, &app.key).await;
    }
}

#[tokio::test]
async fn the_ledger_and_usage_match_the_runs_and_the_balance() {
    // A private address, allowed, that refuses the connection: the node fails when it runs.
    let app = TestApp::start_with(|c| c.inputs.allow_private_addresses = true, None, 1000).await;
    let browser = sign_in_with(&app, &app.key).await;
    let ok = app
        .run(&json!({"type": "node", "target": "upscale", "input": {"image": png_base64(8, 8), "scale": 4}}))
        .await;
    app.wait(&ok).await;
    let nobody = format!("http://127.0.0.1:{}/x.png", atelier_testkit::servers::free_port());
    let refused = json!({"type": "node", "target": "upscale", "input": {"image": nobody}});
    let failed = app.run(&refused).await;
    assert_eq!(app.wait(&failed).await["overall_status"], "failed");

    let ledger = browser.get("/console/api/ledger").await;
    let lines: Vec<(String, String, i64)> = ledger["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["run_id"].as_str().unwrap_or("-").to_string(),
                e["kind"].as_str().unwrap().to_string(),
                e["amount"].as_i64().unwrap(),
            )
        })
        .collect();
    let line = |run: &str, kind: &str, n: i64| (run.to_string(), kind.to_string(), n);
    assert_eq!(
        lines,
        [
            line(&failed, "release", 1),
            line(&failed, "charge", 0),
            line(&failed, "reserve", 1),
            line(&ok, "release", 0),
            line(&ok, "charge", 2),
            line(&ok, "reserve", 2),
            line("-", "grant", 1000),
        ]
    );
    assert_eq!(ledger["entries"][0]["target"], "upscale");
    assert!(ledger["next_before"].is_null());
    let charges: i64 = lines.iter().filter(|l| l.1 == "charge").map(|l| l.2).sum();
    assert_eq!(1000 - charges, app.balance().await);
    assert_eq!(browser.get("/console/api/session").await["balance"], app.balance().await);

    let page = browser.get("/console/api/ledger?limit=2").await;
    assert_eq!(page["entries"].as_array().unwrap().len(), 2);
    let next = page["next_before"].as_i64().unwrap();
    let rest = browser.get(&format!("/console/api/ledger?limit=10&before={next}")).await;
    assert_eq!(rest["entries"].as_array().unwrap().len(), 5);
    let charges = browser.get("/console/api/ledger?kind=charge").await;
    assert_eq!(charges["entries"].as_array().unwrap().len(), 2);
    let of_run = browser.get(&format!("/console/api/ledger?run_id={ok}")).await;
    assert_eq!(of_run["entries"].as_array().unwrap().len(), 3);
    for bad in ["/console/api/ledger?kind=refund", "/console/api/ledger?limit=x", "/console/api/usage?days=0"]
    {
        let answer = browser.call("GET", bad, None).await;
        assert!(answer.code == 422 || answer.code == 400, "{bad}: {}", answer.body);
    }

    let usage = browser.get("/console/api/usage?days=7").await;
    let days = usage["days"].as_array().unwrap();
    assert_eq!(days.len(), 7);
    let today = &days[6];
    assert_eq!(today["date"].as_str().unwrap().len(), 10);
    assert_eq!(today["tokens"], 2);
    assert_eq!(today["nodes"], json!({"upscale": 2}));
    assert!(days[..6].iter().all(|d| d["tokens"] == 0 && d["nodes"] == json!({})));
}

#[tokio::test]
async fn a_run_shows_its_graph_and_runs_again_with_the_same_input() {
    let app = TestApp::start().await;
    let browser = sign_in_with(&app, &app.key).await;
    let image = png_base64(48, 32);
    let input = json!({"garment": image, "Tryon.model_image": png_base64(40, 60)});
    let first = app.run(&json!({"type": "workflow", "target": "tryon-upscale", "input": input})).await;
    let status = app.wait(&first).await;
    assert_eq!(status["overall_status"], "succeeded", "{status}");

    let detail = browser.get(&format!("/console/api/runs/{first}")).await;
    assert_eq!(
        (detail["type"].as_str(), detail["target"].as_str()),
        (Some("workflow"), Some("tryon-upscale"))
    );
    assert_eq!(detail["rerun"], true);
    assert_eq!(detail["status"]["overall_status"], "succeeded");
    let nodes = detail["nodes"].as_array().unwrap();
    let names: Vec<&str> = nodes.iter().map(|n| n["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), status["nodes"].as_object().unwrap().len());
    assert!(nodes.iter().any(|n| n["links"].as_object().is_some_and(|l| !l.is_empty())), "{detail}");

    let again = browser.call("POST", &format!("/console/api/runs/{first}/rerun"), None).await;
    assert_eq!(again.code, 200, "{}", again.body);
    let second = again.body["id"].as_str().unwrap().to_string();
    assert_ne!(second, first);
    let rerun = app.wait(&second).await;
    assert_eq!(rerun["overall_status"], "succeeded");
    // The same input: the same work, filled from the result cache (the built-in engine is
    // deterministic), so the same images at no charge.
    assert_eq!(rerun["tokens"], 0, "{rerun}");
    for node in rerun["nodes"].as_object().unwrap().values() {
        assert_eq!(node["cached_from"].as_str(), Some(first.as_str()), "{rerun}");
    }
    for (name, url) in status["outputs"].as_object().unwrap() {
        let a = app.fetch(url.as_str().unwrap()).await.2;
        let b = app.fetch(rerun["outputs"][name].as_str().unwrap()).await.2;
        assert_eq!(a, b, "output {name}");
    }

    // A v2 run keeps no copy of its images: it cannot be run again.
    let (code, v2) = app
        .post(
            "/api/v2/fabric/run",
            &json!({"category": "dress", "model_image": png_base64(48, 64), "fabric_description": "linen"}),
        )
        .await;
    assert_eq!(code, 200, "{v2}");
    let v2 = v2["id"].as_str().unwrap();
    assert_eq!(browser.get(&format!("/console/api/runs/{v2}")).await["rerun"], false);
    let answer = browser.call("POST", &format!("/console/api/runs/{v2}/rerun"), None).await;
    assert_eq!((answer.code, answer.body["error"]["name"].as_str()), (409, Some("Conflict")));
    // Another account's run is not found.
    let other = app.other_key(10).await;
    let theirs = app
        .call(
            "POST",
            "/api/v3/run",
            Some(&other),
            Some(&json!({"type": "node", "target": "upscale", "input": {"image": image}})),
        )
        .await
        .1["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(browser.call("GET", &format!("/console/api/runs/{theirs}"), None).await.code, 404);
    assert_eq!(browser.call("POST", &format!("/console/api/runs/{theirs}/rerun"), None).await.code, 404);
}

#[tokio::test]
async fn validation_lists_every_problem_and_what_discovery_will_show() {
    let app = TestApp::start().await;
    let doc = json!({
        "variables": {"garment": {"type": "image", "targets": ["Tryon.garment_image", "Ghost.image"]}},
        "nodes": [
            {"name": "Tryon", "tool": "virtual_tryon", "params": {"category": "hats"}},
            {"name": "Up", "tool": "upscale", "params": {"scale": 3}, "links": {"image": "Nope.output"}}
        ],
        "outputs": {"hero": "Up.output", "lost": "Gone.output"}
    });
    let (code, answer) = app.post("/api/v3/workflows/validate", &doc).await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!(answer["valid"], false);
    let fields: Vec<&str> =
        answer["errors"].as_array().unwrap().iter().map(|e| e["field"].as_str().unwrap()).collect();
    assert_eq!(fields, ["Tryon.category", "Up.scale", "Up.image", "variables.garment", "outputs.lost"]);
    assert!(answer["errors"].as_array().unwrap().iter().all(|e| !e["reason"].as_str().unwrap().is_empty()));
    assert!(answer["description"].is_null());
    assert!(answer["estimate"].is_null());

    let good = json!({
        "variables": {"garment": {"type": "image", "targets": ["Tryon.garment_image"]}},
        "nodes": [
            {"name": "Tryon", "tool": "virtual_tryon"},
            {"name": "Up", "tool": "upscale", "links": {"image": "Tryon.output"}}
        ],
        "outputs": {"hero": "Up.output"},
        "layout": {"Tryon": [0, 0], "Up": [320, 40.5], "$var:garment": [-240, 0]}
    });
    let (_, answer) = app.post("/api/v3/workflows/validate?name=Summer%20look", &good).await;
    assert_eq!((answer["valid"].as_bool(), answer["errors"].clone()), (Some(true), json!([])));
    assert_eq!(answer["description"]["name"], "Summer look");
    assert_eq!(answer["description"]["outputs"], json!({"hero": "Up.output"}));
    assert!(answer["description"]["inputs"]["mandatory"]["garment"].is_string());
    assert_eq!(answer["estimate"], json!({"tokens": 2, "nodes": {"Tryon": 1, "Up": 1}}));
    let mut pricey = good.clone();
    pricey["nodes"][1]["params"] = json!({"scale": 4});
    pricey["nodes"][0]["mode"] = json!("bypassed");
    let (_, answer) = app.post("/api/v3/workflows/validate", &pricey).await;
    assert_eq!(
        answer["estimate"],
        json!({"tokens": 2, "nodes": {"Tryon": 0, "Up": 2}}),
        "a bypassed node is free"
    );
    assert!(app.get("/api/v3/workflow/Summer%20look").await.0 == 404, "nothing was saved");
    let (_, bad_name) = app.post("/api/v3/workflows/validate?name=a%2Fb", &good).await;
    assert_eq!(bad_name["errors"][0]["field"], "name");
    let (code, _) = app.post("/api/v3/workflows/validate", &json!({"nodes": "no"})).await;
    assert_eq!(code, 400);

    // The layout is kept with the saved workflow and returned by discovery; runs ignore it.
    let (code, saved) = app.call("PUT", "/api/v3/workflow/Summer%20look", Some(&app.key), Some(&good)).await;
    assert_eq!(code, 200, "{saved}");
    let (_, described) = app.get("/api/v3/workflow/Summer%20look").await;
    assert_eq!(
        described["workflow"]["layout"],
        json!({"Tryon": [0.0, 0.0], "Up": [320.0, 40.5], "$var:garment": [-240.0, 0.0]})
    );
    let input = json!({"garment": png_base64(16, 16), "Tryon.model_image": png_base64(16, 24)});
    let id = app.run(&json!({"type": "workflow", "target": "Summer look", "input": input})).await;
    assert_eq!(app.wait(&id).await["overall_status"], "succeeded");
}

#[tokio::test]
async fn run_listings_filter_by_status_and_target() {
    let app = TestApp::start().await;
    let up =
        app.run(&json!({"type": "node", "target": "upscale", "input": {"image": png_base64(8, 8)}})).await;
    app.wait(&up).await;
    let cutout =
        json!({"type": "node", "target": "background_removal", "input": {"image": png_base64(8, 8)}});
    let bg = app.run(&cutout).await;
    app.wait(&bg).await;
    let ids = |v: &Value| {
        v["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&app.get("/api/v3/runs").await.1), [bg.clone(), up.clone()]);
    assert_eq!(ids(&app.get("/api/v3/runs?target=upscale").await.1), std::slice::from_ref(&up));
    assert_eq!(ids(&app.get("/api/v3/runs?status=succeeded&target=background_removal").await.1), [bg]);
    assert!(ids(&app.get("/api/v3/runs?status=failed").await.1).is_empty());
    let (code, body) = app.get("/api/v3/runs?status=done").await;
    assert_eq!((code, body["error"]["field"].as_str()), (422, Some("status")));
}

#[tokio::test]
async fn the_console_interface_is_held_to_the_key_request_rate() {
    let app = TestApp::start_with(
        |c| {
            c.limits.requests_per_second = 0.5;
            c.limits.burst = 2;
        },
        None,
        10,
    )
    .await;
    let browser = sign_in_with(&app, &app.key).await;
    for _ in 0..2 {
        assert_eq!(browser.call("GET", "/console/api/v3/tools", None).await.code, 200);
    }
    let limited = browser.call("GET", "/console/api/v3/tools", None).await;
    assert_eq!((limited.code, limited.body["error"]["name"].as_str()), (429, Some("RateLimited")));
    assert_eq!(limited.headers["ratelimit-limit"], "2");
    assert!(limited.headers["retry-after"].to_str().unwrap().parse::<u64>().unwrap() >= 1);
    let run = json!({"type": "node", "target": "upscale", "input": {"image": png_base64(8, 8)}});
    let refused = browser.call("POST", "/console/api/v3/run", Some(&run)).await;
    assert_eq!(
        (refused.code, refused.body["id"].clone()),
        (429, Value::Null),
        "a run answers in the handle shape"
    );
    // The dashboard's own routes are not counted.
    assert_eq!(browser.call("GET", "/console/api/keys", None).await.code, 200);
}
