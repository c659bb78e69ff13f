//! Spend limits over HTTP: a run, a v2 run or a batch whose price would cross a key's or an
//! account's limit is 402 `SpendLimitReached` with the limit, the usage and when it resets,
//! and makes nothing; concurrent submissions stop exactly at the limit; `GET /api/v3/usage`
//! and the console's keys show the limits and the usage; the console sets a key's limits
//! within its own key's.

use atelier_core::spend::Period;
use atelier_store::LimitChange;
use serde_json::{json, Value};

use super::common::{png_base64, TestApp};

/// Without the result cache: a copy of earlier work would give its tokens back.
fn upscale() -> Value {
    json!({"type": "node", "target": "upscale", "input": {"image": png_base64(8, 8)}, "cache": false})
}

async fn price(app: &TestApp) -> i64 {
    let (code, estimate) = app.post("/api/v3/estimate", &upscale()).await;
    assert_eq!(code, 200, "{estimate}");
    estimate["tokens"].as_i64().unwrap()
}

async fn limit_key(app: &TestApp, change: LimitChange) {
    app.store().set_key_limits(&app.key, change).await.unwrap();
}

async fn run_count(app: &TestApp) -> usize {
    app.get("/api/v3/runs?limit=200").await.1["runs"].as_array().unwrap().len()
}

#[tokio::test]
async fn a_price_over_a_keys_limit_is_402_with_the_limit_and_makes_nothing() {
    let app = TestApp::start_with(|_| {}, None, 1000).await;
    let price = price(&app).await;
    limit_key(&app, LimitChange { daily: Some(Some(2 * price)), ..LimitChange::default() }).await;
    for _ in 0..2 {
        let (code, handle) = app.post("/api/v3/run", &upscale()).await;
        assert_eq!(code, 200, "{handle}");
    }
    let (runs, balance) = (run_count(&app).await, app.balance().await);
    let (code, refused) = app.post("/api/v3/run", &upscale()).await;
    assert_eq!(code, 402, "{refused}");
    assert_eq!(refused["id"], Value::Null, "the run-handle shape");
    let error = &refused["error"];
    let resets_at = atelier_store::format_time(Period::Day.end(atelier_store::now_micros()));
    assert_eq!(
        (
            &error["name"],
            &error["applies_to"],
            &error["period"],
            &error["limit"],
            &error["used"],
            &error["required"]
        ),
        (
            &json!("SpendLimitReached"),
            &json!("key"),
            &json!("day"),
            &json!(2 * price),
            &json!(2 * price),
            &json!(price)
        ),
        "{error}"
    );
    assert_eq!(error["resets_at"], json!(resets_at));
    assert!(error["message"].as_str().unwrap().contains("daily spend limit"), "{error}");
    // The same for a v2 run and a batch; nothing was made or reserved.
    let v2 = json!({"model_image": png_base64(8, 8), "garment_image": png_base64(8, 8), "category": "tops"});
    let (code, answer) = app.post("/api/v2/tryon/run", &v2).await;
    assert_eq!((code, &answer["error"]["name"]), (402, &json!("SpendLimitReached")), "{answer}");
    let upload = app.upload(&app.key, super::common::png_bytes(8, 8)).await;
    let batch =
        json!({"type": "node", "target": "upscale", "cache": false, "items": [{"input": {"image": upload}}]});
    let (code, answer) = app.post("/api/v3/batches", &batch).await;
    assert_eq!((code, &answer["error"]["name"]), (402, &json!("SpendLimitReached")), "{answer}");
    assert_eq!(app.get("/api/v3/batches").await.1["batches"], json!([]));
    assert_eq!((run_count(&app).await, app.balance().await), (runs, balance));
    // The estimate still prices it: a limit refuses reservations, not questions.
    assert_eq!(app.post("/api/v3/estimate", &upscale()).await.0, 200);

    let (code, usage) = app.get("/api/v3/usage").await;
    assert_eq!(code, 200, "{usage}");
    assert_eq!(usage["key"]["daily"], json!({"limit": 2 * price, "used": 2 * price, "resets_at": resets_at}));
    assert_eq!(usage["key"]["monthly"]["used"], json!(2 * price));
    assert_eq!(usage["key"]["settings"], json!({"daily": 2 * price, "monthly": null, "running_nodes": null}));
    assert_eq!(
        (&usage["key"]["running_nodes_limit"], &usage["account"]["daily"]["limit"]),
        (&Value::Null, &Value::Null)
    );
    assert!(
        usage["account"].get("running_nodes").is_none(),
        "an account has no cap on running nodes: {usage}"
    );
    assert_eq!(usage["account"]["daily"]["used"], json!(2 * price));
    // Another key of the account has its own (none), and the account's limit holds for all.
    app.store()
        .set_account_limits("test", LimitChange { monthly: Some(Some(3 * price)), ..Default::default() })
        .await
        .unwrap();
    let other = app.store().create_key("test", atelier_core::scopes::Scopes::NEW_KEY).await.unwrap();
    let (code, _) = app.call("POST", "/api/v3/run", Some(&other), Some(&upscale())).await;
    assert_eq!(code, 200);
    let (code, refused) = app.call("POST", "/api/v3/run", Some(&other), Some(&upscale())).await;
    assert_eq!(
        (code, &refused["error"]["applies_to"], &refused["error"]["period"]),
        (402, &json!("account"), &json!("month")),
        "{refused}"
    );
}

#[tokio::test]
async fn fifty_concurrent_submissions_stop_exactly_at_the_limit() {
    let app = TestApp::start_with(|_| {}, None, 10_000).await;
    let price = price(&app).await;
    limit_key(&app, LimitChange { monthly: Some(Some(10 * price)), ..LimitChange::default() }).await;
    let body = upscale();
    let answers = futures::future::join_all((0..50).map(|_| app.post("/api/v3/run", &body))).await;
    let accepted = answers.iter().filter(|(code, _)| *code == 200).count();
    let refused = answers
        .iter()
        .filter(|(code, answer)| *code == 402 && answer["error"]["name"] == "SpendLimitReached")
        .count();
    assert_eq!((accepted, refused), (10, 40));
    assert_eq!(app.balance().await, 10_000 - 10 * price);
    assert_eq!(app.get("/api/v3/usage").await.1["key"]["monthly"]["used"], json!(10 * price));
}

#[tokio::test]
async fn the_console_sets_a_keys_limits_within_its_own_keys() {
    let app = TestApp::start().await;
    let owner = app.console_session(&app.key).await;
    let (code, made) =
        app.console_call(&owner, "POST", "/console/api/keys", Some(r#"{"scopes": ["run", "read"]}"#)).await;
    assert_eq!(code, 200, "{made}");
    let id = made["id"].as_i64().unwrap();
    assert_eq!(made["spend"]["settings"], json!({"daily": null, "monthly": null, "running_nodes": null}));
    let path = format!("/console/api/keys/{id}/limits");
    let (code, key) =
        app.console_call(&owner, "PUT", &path, Some(r#"{"daily": 500, "running_nodes": 2}"#)).await;
    assert_eq!(code, 200, "{key}");
    assert_eq!(key["spend"]["settings"], json!({"daily": 500, "monthly": null, "running_nodes": 2}));
    assert_eq!(
        (&key["spend"]["daily"]["limit"], &key["spend"]["running_nodes_limit"]),
        (&json!(500), &json!(2))
    );
    // A left-out field stays; null returns to the default; -1 is none.
    let (code, key) = app.console_call(&owner, "PUT", &path, Some(r#"{"daily": null, "monthly": -1}"#)).await;
    assert_eq!(code, 200, "{key}");
    assert_eq!(key["spend"]["settings"], json!({"daily": null, "monthly": -1, "running_nodes": 2}));
    let (_, listed) = app.console_call(&owner, "GET", "/console/api/keys", None).await;
    let listed = listed["keys"].as_array().unwrap().iter().find(|k| k["id"] == id).unwrap().clone();
    assert_eq!(listed["spend"], key["spend"]);

    // Malformed bodies and unknown keys change nothing.
    for (body, code, name) in [
        ("[]", 400, "InvalidRequest"),
        ("not json", 400, "InvalidRequest"),
        (r#"{"weekly": 1}"#, 422, "InvalidInput"),
        (r#"{"daily": "lots"}"#, 422, "InvalidInput"),
        (r#"{"daily": 1.5}"#, 422, "InvalidInput"),
        (r#"{"daily": -2}"#, 422, "InvalidInput"),
        (r#"{"running_nodes": 0}"#, 422, "InvalidInput"),
    ] {
        let (got, answer) = app.console_call(&owner, "PUT", &path, Some(body)).await;
        assert_eq!((got, &answer["error"]["name"]), (code, &json!(name)), "{body}: {answer}");
    }
    let (code, answer) =
        app.console_call(&owner, "PUT", "/console/api/keys/999999/limits", Some(r#"{"daily": 1}"#)).await;
    assert_eq!((code, &answer["error"]["name"]), (404, &json!("KeyNotFound")), "{answer}");
    let (code, answer) =
        app.console_call(&owner, "PUT", "/console/api/keys/x/limits", Some(r#"{"daily": 1}"#)).await;
    assert_eq!(code, 422, "{answer}");
    let other = app.other_key(10).await;
    let other_id = app.store().authenticate_key(&other).await.unwrap().unwrap().key_id;
    let (code, _) = app
        .console_call(&owner, "PUT", &format!("/console/api/keys/{other_id}/limits"), Some(r#"{"daily": 1}"#))
        .await;
    assert_eq!(code, 404, "another account's key is not found");
    let (_, listed) = app.console_call(&owner, "GET", "/console/api/keys", None).await;
    let unchanged = listed["keys"].as_array().unwrap().iter().find(|k| k["id"] == id).unwrap().clone();
    assert_eq!(unchanged["spend"]["settings"], json!({"daily": null, "monthly": -1, "running_nodes": 2}));

    // A session whose key is limited gives no key more than that, in force from its next request.
    limit_key(&app, LimitChange { daily: Some(Some(100)), ..LimitChange::default() }).await;
    for body in [r#"{"daily": 101}"#, r#"{"daily": -1}"#, r#"{"daily": null}"#] {
        let (code, answer) = app.console_call(&owner, "PUT", &path, Some(body)).await;
        assert_eq!((code, &answer["error"]["name"]), (403, &json!("Forbidden")), "{body}: {answer}");
        assert!(answer["error"]["message"].as_str().unwrap().contains("limited to 100"), "{answer}");
    }
    let (code, key) = app.console_call(&owner, "PUT", &path, Some(r#"{"daily": 100, "monthly": 7}"#)).await;
    assert_eq!((code, &key["spend"]["settings"]["daily"]), (200, &json!(100)), "{key}");
}
