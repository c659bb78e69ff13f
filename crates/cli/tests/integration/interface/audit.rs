//! The audit log over HTTP: changes made with a key or through a console session are
//! recorded with who made them and from where; `GET /api/v3/audit` (the `keys` scope)
//! answers the caller's account's entries only, newest first, filtered and paged; the
//! chain verifies afterwards.

use serde_json::json;

use super::common::{png_base64, TestApp};

#[tokio::test]
async fn changes_are_recorded_with_their_actor_and_address_and_read_by_their_account_only() {
    let app = TestApp::start().await;
    let prefix = &app.key[..8];
    // With the key: a workflow saved and deleted, the webhook secret rotated, a run deleted.
    let flow = json!({"nodes": [{"name": "Up", "tool": "upscale"}], "outputs": {"final_image": "Up.output"}});
    assert_eq!(app.call("PUT", "/api/v3/workflow/audited", Some(&app.key), Some(&flow)).await.0, 200);
    assert_eq!(app.call("DELETE", "/api/v3/workflow/audited", Some(&app.key), None).await.0, 200);
    assert_eq!(app.post("/api/v3/webhooks/secret/rotate", &json!({})).await.0, 200);
    let endpoint = json!({"url": "https://93.184.215.14/atelier"});
    assert_eq!(app.call("PUT", "/api/v3/webhooks/endpoint", Some(&app.key), Some(&endpoint)).await.0, 200);
    assert_eq!(app.call("DELETE", "/api/v3/webhooks/endpoint", Some(&app.key), None).await.0, 200);
    let run =
        app.run(&json!({"type": "node", "target": "upscale", "input": {"image": png_base64(8, 8)}})).await;
    app.wait(&run).await;
    assert_eq!(app.call("DELETE", &format!("/api/v3/runs/{run}"), Some(&app.key), None).await.0, 200);
    // Through the console: a failed sign-in, a sign-in, a key made, limited and revoked, a sign-out.
    let failed = app
        .client
        .post(format!("{}/console/api/session", app.base))
        .json(&json!({"api_key": "atl_wrongwrongwrongwrongwrongwrongwrongwrong"}))
        .send()
        .await
        .unwrap();
    assert_eq!(failed.status(), 401);
    let owner = app.console_session(&app.key).await;
    let (_, made) =
        app.console_call(&owner, "POST", "/console/api/keys", Some(r#"{"scopes": ["read"]}"#)).await;
    let (made_id, made_prefix) = (made["id"].as_i64().unwrap(), made["prefix"].as_str().unwrap().to_string());
    let limits = format!("/console/api/keys/{made_id}/limits");
    assert_eq!(app.console_call(&owner, "PUT", &limits, Some(r#"{"daily": 5}"#)).await.0, 200);
    assert_eq!(
        app.console_call(&owner, "DELETE", &format!("/console/api/keys/{made_id}"), None).await.0,
        200
    );
    assert_eq!(app.console_call(&owner, "DELETE", "/console/api/session", None).await.0, 204);

    let (code, page) = app.get("/api/v3/audit?limit=100").await;
    assert_eq!(code, 200, "{page}");
    let entries = page["entries"].as_array().unwrap();
    let find = |action: &str| {
        entries.iter().find(|e| e["action"] == action).unwrap_or_else(|| panic!("{action}: {page}"))
    };
    let by_key = format!("key:{prefix}");
    let by_session = format!("session:{prefix}");
    for (action, actor, target) in [
        ("workflow.saved", &by_key, Some("audited")),
        ("workflow.deleted", &by_key, Some("audited")),
        ("webhook_secret.rotated", &by_key, None),
        ("webhook_endpoint.set", &by_key, None),
        ("webhook_endpoint.removed", &by_key, None),
        ("run.deleted", &by_key, Some(run.as_str())),
        ("session.signed_in", &by_session, None),
        ("key.created", &by_session, Some(made_prefix.as_str())),
        ("key.limits_set", &by_session, Some(made_prefix.as_str())),
        ("key.revoked", &by_session, Some(made_prefix.as_str())),
        ("session.signed_out", &by_session, None),
    ] {
        let entry = find(action);
        assert_eq!((&entry["actor"], &entry["target"]), (&json!(actor), &json!(target)), "{entry}");
        assert_eq!(entry["address"], "127.0.0.1", "{entry}");
        assert_eq!(entry["hash"].as_str().unwrap().len(), 64);
    }
    assert_eq!(find("key.created")["summary"], json!({"scopes": "read"}));
    assert_eq!(find("key.limits_set")["summary"], json!({"daily": 5}));
    assert_eq!(find("webhook_endpoint.set")["summary"], json!({"url": "https://93.184.215.14/atelier"}));
    assert_eq!(find("workflow.saved")["summary"], json!({"nodes": 1, "tools": ["upscale"]}));
    // Newest first; the failed sign-in belongs to no account, so it is not this account's.
    let ids: Vec<i64> = entries.iter().map(|e| e["id"].as_i64().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "{ids:?}");
    assert!(entries.iter().all(|e| e["action"] != "session.sign_in_failed"));
    let failed = app
        .store()
        .audit_entries(&atelier_store::AuditQuery {
            action: Some("session.sign_in_failed"),
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!((failed.len(), failed[0].actor.as_str(), failed[0].target.as_deref()), (1, "anonymous", None));
    assert!(!page.to_string().contains("atl_wrong"), "nothing of a failed key is kept");

    // Filters and pages.
    let (_, keys) = app.get("/api/v3/audit?action=key.").await;
    let actions: Vec<&str> =
        keys["entries"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["key.revoked", "key.limits_set", "key.created"]);
    let (_, first) = app.get("/api/v3/audit?limit=2").await;
    let before = first["next_before"].as_i64().unwrap();
    let (_, second) = app.get(&format!("/api/v3/audit?limit=2&before={before}")).await;
    assert!(second["entries"][0]["id"].as_i64().unwrap() < before);
    assert_eq!(app.get("/api/v3/audit?since=2999-01-01").await.1["entries"], json!([]));
    for bad in [
        "/api/v3/audit?limit=0",
        "/api/v3/audit?limit=501",
        "/api/v3/audit?since=yesterday",
        "/api/v3/audit?before=x",
    ] {
        let (code, answer) = app.get(bad).await;
        assert!([400, 422].contains(&code), "{bad}: {code} {answer}");
    }
    // Another account sees only its own.
    let other = app.other_key(0).await;
    let (code, theirs) = app.call("GET", "/api/v3/audit", Some(&other), None).await;
    assert_eq!((code, &theirs["entries"]), (200, &json!([])), "{theirs}");
    // And the chain holds.
    let check = app.store().verify_audit().await.unwrap();
    assert_eq!(check.broken, None);
}
