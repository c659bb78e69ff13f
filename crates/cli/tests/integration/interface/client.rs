//! The Rust client (`atelier-client`) against the whole service: every kind of call, the
//! typed errors of refusals, live events with a resumption, `Prefer: wait`, downloads.

use std::sync::Arc;
use std::time::Duration;

use atelier_client::{
    BatchEvent, Client, Error, NodeState, ParamKind, Priority, RunEvent, RunKind, RunOptions, RunQuery,
    RunState, V2Family, V2State, WaitOptions, WorkflowDefinition,
};
use atelier_core::tools::ToolId;
use atelier_tools::{Artifact, Execution, Executor, Registry, ToolError};
use bytes::Bytes;
use futures::StreamExt;
use serde_json::json;

use super::common::{decode, png_base64, png_bytes, TestApp};

fn client(app: &TestApp) -> Client {
    Client::new(&app.base, &app.key).unwrap()
}

/// Every event of a run's stream, to its end.
async fn all_events(client: &Client, id: &str, last_event_id: Option<&str>) -> Vec<RunEvent> {
    let stream = client.events(id, last_event_id);
    let events = tokio::time::timeout(Duration::from_secs(60), stream.collect::<Vec<_>>()).await.unwrap();
    events.into_iter().map(|e| e.unwrap()).collect()
}

#[tokio::test]
async fn a_node_run_is_followed_by_its_events_downloaded_listed_and_canceled_once_done() {
    let app = TestApp::start().await;
    let client = client(&app);
    let estimate = client.estimate("upscale", json!({"image": png_base64(16, 12)})).await.unwrap();
    assert_eq!((estimate.tokens, estimate.balance), (1, Some(1000)));
    assert_eq!(estimate.nodes.values().copied().collect::<Vec<_>>(), [1]);

    let bulk = RunOptions { priority: Some(Priority::Bulk), ..RunOptions::default() };
    let handle = client.run("upscale", json!({"image": png_base64(16, 12)}), bulk).await.unwrap();
    assert!(handle.id.starts_with("gen_") && handle.error.is_none() && !handle.replayed);
    let events = all_events(&client, &handle.id, None).await;
    let (last, nodes) = events.split_last().unwrap();
    let RunEvent::Status(final_status) = last else { panic!("the stream ends with the status: {last:?}") };
    assert!(final_status.succeeded(), "{final_status:?}");
    assert!(
        !nodes.is_empty() && nodes.iter().all(|e| matches!(e, RunEvent::Node(n) if n.run_id == handle.id))
    );
    let RunEvent::Node(done) = &nodes[nodes.len() - 1] else { unreachable!() };
    assert_eq!(done.status, NodeState::Succeeded);
    assert_eq!(done.output.as_deref(), Some(final_status.output_urls()));

    // The status endpoint, the stream's last event and `wait` agree, to the raw JSON.
    let status = client.status(&handle.id).await.unwrap();
    assert_eq!(status.raw, final_status.raw);
    assert_eq!(status.raw, app.get(&format!("/api/v3/status/{}", handle.id)).await.1);
    let waited = client.wait(&handle.id, WaitOptions::default()).await.unwrap();
    assert_eq!(waited.raw, status.raw);
    let polled =
        client.wait(&handle.id, WaitOptions { use_events: false, ..WaitOptions::default() }).await.unwrap();
    assert_eq!(polled.raw, status.raw);
    assert_eq!(
        (status.run_id(), status.model_name.as_deref(), status.tokens, status.priority),
        (handle.id.as_str(), Some("upscale"), 1, Some(Priority::Bulk))
    );

    // The output, downloaded: the upscale doubles.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.png");
    let written = client.download(&status.output_urls()[0], &path).await.unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(written, bytes.len() as u64);
    let image = decode(&bytes);
    assert_eq!((image.width(), image.height()), (32, 24));
    assert!(!dir.path().join("out.png.part").exists());
    let missing =
        client.download(&format!("{}/files/outputs/nope/0.png", app.base), &path).await.unwrap_err();
    assert_eq!(missing.error_name().unwrap().as_str(), app.no_such_file().1, "{missing:?}");

    // Listed, filtered; a finished run's cancel leaves it as it is.
    let list =
        client.runs(&RunQuery { target: Some("upscale".into()), ..RunQuery::default() }).await.unwrap();
    assert_eq!(list.runs.len(), 1);
    assert_eq!(
        (list.runs[0].id.as_str(), list.runs[0].kind, list.runs[0].overall_status, list.runs[0].priority),
        (handle.id.as_str(), RunKind::Node, RunState::Succeeded, Some(Priority::Bulk))
    );
    let live = app.get("/api/v3/runs").await.1;
    let keys: Vec<&str> = live["runs"][0].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["id", "type", "target", "overall_status", "created_at", "priority"], "a run list item");
    let none =
        client.runs(&RunQuery { status: Some(RunState::Failed), ..RunQuery::default() }).await.unwrap();
    assert!(none.runs.is_empty() && none.next_before.is_none());
    let canceled = client.cancel(&handle.id).await.unwrap();
    assert_eq!(canceled.overall_status, RunState::Succeeded);

    // Discovery.
    let tools = client.tools().await.unwrap();
    let upscale = tools.iter().find(|t| t.name == "upscale").unwrap();
    let scale = upscale.param("scale").unwrap();
    assert_eq!((scale.kind, scale.default.clone()), (ParamKind::Number, Some(json!(2))));
    assert_eq!(upscale.raw["name"], "upscale");
    assert_eq!(client.balance().await.unwrap(), 999);
    assert!(client.webhook_deliveries(&handle.id).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_workflow_run_gives_its_named_outputs_and_its_nodes_by_generation_id() {
    let app = TestApp::start().await;
    let client = client(&app);
    let description = client.workflow("product-reframes").await.unwrap();
    assert_eq!(description.sample_payload.kind, RunKind::Workflow);
    assert_eq!(description.inputs.kind("Shoot.product_image"), Some(ParamKind::Image));
    assert_eq!(description.outputs.keys().collect::<Vec<_>>(), ["square", "portrait", "story"]);
    assert!(client
        .workflows()
        .await
        .unwrap()
        .iter()
        .any(|w| w.name == "product-reframes" && w.system_workflow));

    let input = json!({"Shoot.product_image": png_base64(64, 80)});
    let estimate = client.estimate_workflow("product-reframes", input.clone()).await.unwrap();
    assert_eq!(estimate.nodes.keys().collect::<Vec<_>>(), ["Shoot", "Square", "Portrait", "Story"]);
    let handle = client.run_workflow("product-reframes", input, RunOptions::default()).await.unwrap();
    assert!(handle.id.starts_with("wr_"));
    let status = client
        .wait(&handle.id, WaitOptions { timeout: Some(Duration::from_secs(60)), ..Default::default() })
        .await
        .unwrap();
    assert!(status.succeeded() && status.is_workflow(), "{status:?}");
    assert_eq!(status.tokens, estimate.tokens);
    let outputs = status.named_outputs();
    assert_eq!(outputs.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["square", "portrait", "story"]);
    assert!(outputs.iter().all(|(_, urls)| urls.len() == 1));
    let dir = tempfile::tempdir().unwrap();
    let square = dir.path().join("square.png");
    client.download(&outputs[0].1[0], &square).await.unwrap();
    let image = decode(&std::fs::read(&square).unwrap());
    assert_eq!(image.width(), image.height(), "1:1");

    // One node of the run, by its generation id.
    let node = &status.nodes.as_ref().unwrap()["Story"];
    let by_gen = client.status(&node.id).await.unwrap();
    assert_eq!(
        (by_gen.id.as_deref(), by_gen.workflow_run_id.as_deref()),
        (Some(node.id.as_str()), Some(handle.id.as_str()))
    );
    assert_eq!(by_gen.output_urls(), node.output);
    assert!(!by_gen.is_workflow());
}

#[tokio::test]
async fn refusals_are_typed_errors_with_their_fields() {
    let app = TestApp::start_with(|_| {}, None, 0).await;
    let client = client(&app);
    let image = png_base64(16, 16);
    match client.run("upscale", json!({"image": image}), RunOptions::default()).await {
        Err(Error::InsufficientTokens { required, balance, .. }) => assert_eq!((required, balance), (1, 0)),
        other => panic!("{other:?}"),
    }
    match client.run("upscale", json!({"image": image, "scale": 3}), RunOptions::default()).await {
        Err(e @ Error::InvalidInput { .. }) => {
            let Error::InvalidInput { field, allowed, .. } = &e else { unreachable!() };
            assert_eq!((field.as_str(), allowed.is_some()), ("scale", true), "{e}");
            assert_eq!((e.name(), e.status()), (Some("InvalidInput"), Some(422)));
        }
        other => panic!("{other:?}"),
    }
    match client.run("upscale", json!({}), RunOptions::default()).await {
        Err(Error::MissingInputs { missing, .. }) => assert_eq!(missing, ["image"]),
        other => panic!("{other:?}"),
    }
    match client.run("upscale", json!({"image": "not an image at all"}), RunOptions::default()).await {
        Err(Error::InvalidImage { field, .. }) => assert_eq!(field, "image"),
        other => panic!("{other:?}"),
    }
    let e = client.run("nope", json!({}), RunOptions::default()).await.unwrap_err();
    assert!(matches!(e, Error::UnknownTool { .. }), "{e:?}");
    let e = client.run_workflow("no such flow", json!({}), RunOptions::default()).await.unwrap_err();
    assert!(matches!(e, Error::WorkflowNotFound { .. }), "{e:?}");
    let e = client.status("gen_nope").await.unwrap_err();
    assert!(matches!(e, Error::RunNotFound { .. }), "{e:?}");
    let e = client.events("gen_nope", None).next().await.unwrap().unwrap_err();
    assert!(matches!(e, Error::RunNotFound { .. }), "the stream's refusal: {e:?}");
    let e = client.delete_workflow("product-reframes").await.unwrap_err();
    assert!(matches!(e, Error::ReadOnlyTemplate { .. }), "{e:?}");
    let e = client
        .v2_run(
            V2Family::Tryon,
            json!({"category": "top"}),
            RunOptions { wait: Some(5), ..RunOptions::default() },
        )
        .await;
    assert!(matches!(e, Err(Error::InvalidArgument(_))), "nothing is sent: {e:?}");
    let e = client
        .run("upscale", json!({"image": image}), RunOptions { wait: Some(61), ..Default::default() })
        .await;
    assert!(matches!(e, Err(Error::InvalidArgument(_))), "{e:?}");
    let stranger = Client::new(&app.base, "atl_not_a_key").unwrap();
    let e = stranger.balance().await.unwrap_err();
    assert!(matches!(e, Error::Unauthorized { .. }), "{e:?}");
    // A key without the scope: Forbidden, its message naming the scope.
    let reader_key = app.store().create_key("test", "read".parse().unwrap()).await.unwrap();
    let reader = Client::new(&app.base, &reader_key).unwrap();
    assert_eq!(reader.balance().await.unwrap(), 0);
    match reader.run("upscale", json!({"image": png_base64(8, 8)}), RunOptions::default()).await {
        Err(e @ Error::Forbidden { .. }) => {
            assert_eq!((e.name(), e.status()), (Some("Forbidden"), Some(403)));
            assert!(e.to_string().contains("'run' scope"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    let e = Client::new("ftp://example.com", "k").unwrap_err();
    assert!(matches!(e, Error::Config(_)), "{e:?}");
    match client.upload(Bytes::from_static(b"not an image")).await {
        Err(Error::InvalidImage { field, .. }) => assert_eq!(field, "file"),
        other => panic!("{other:?}"),
    }
    let e = client.get_upload(&"0".repeat(64)).await.unwrap_err();
    assert!(matches!(e, Error::UploadNotFound { field: None, .. }), "{e:?}");
    match client
        .run("upscale", json!({"image": format!("upload:{}", "0".repeat(64))}), RunOptions::default())
        .await
    {
        Err(e @ Error::UploadNotFound { .. }) => {
            assert_eq!((e.name(), e.status()), (Some("UploadNotFound"), Some(404)));
            assert!(matches!(&e, Error::UploadNotFound { field: Some(f), .. } if f == "image"), "{e:?}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_uploaded_file_is_named_in_a_run() {
    let app = TestApp::start().await;
    let client = client(&app);
    let path = app.dir.path().join("garment.png");
    std::fs::write(&path, png_bytes(96, 64)).unwrap();
    let upload = client.upload_file(&path).await.unwrap();
    assert_eq!((upload.width, upload.height, upload.format.as_str()), (96, 64, "png"));
    assert_eq!(client.get_upload(&upload.id).await.unwrap(), upload);
    let handle = client
        .run("upscale", json!({"image": upload.input, "scale": 2}), RunOptions::default())
        .await
        .unwrap();
    let status = client.wait(&handle.id, WaitOptions::default()).await.unwrap();
    assert_eq!(status.overall_status, RunState::Succeeded, "{:?}", status.raw);
    // The same work again comes from the result cache, unless the options say otherwise.
    let input = json!({"image": upload.input, "scale": 2});
    let again = client.run("upscale", input.clone(), RunOptions::default()).await.unwrap();
    let again = client.wait(&again.id, WaitOptions::default()).await.unwrap();
    assert_eq!((again.cached_from.as_deref(), again.tokens), (Some(handle.id.as_str()), 0));
    let options = RunOptions { cache: Some(false), ..RunOptions::default() };
    let fresh = client.run("upscale", input, options).await.unwrap();
    let fresh = client.wait(&fresh.id, WaitOptions::default()).await.unwrap();
    assert_eq!((fresh.cached_from, fresh.tokens), (None, 1));
    let e = client.upload_file(&app.dir.path().join("missing.png")).await.unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e:?}");
}

#[tokio::test]
async fn workflows_are_validated_saved_described_listed_and_deleted() {
    let app = TestApp::start().await;
    let client = client(&app);
    let definition: WorkflowDefinition = serde_json::from_value(json!({
        "variables": {"photo": {"type": "image", "targets": ["Up.image"]}},
        "nodes": [{"name": "Up", "tool": "upscale", "params": {"scale": 2}},
                  {"name": "Square", "tool": "reframe", "params": {"aspect_ratio": "1:1"}, "links": {"image": "Up.output"}}],
        "outputs": {"big": "Up.output", "square": "Square.output"},
    }))
    .unwrap();
    let validation = client.validate_workflow(&definition, Some("Été 2027 + more")).await.unwrap();
    assert!(validation.valid && validation.errors.is_empty(), "{validation:?}");
    assert_eq!(validation.description.as_ref().unwrap().name, "Été 2027 + more");
    assert_eq!(validation.estimate.as_ref().unwrap().tokens, 2);
    let mut broken = definition.clone();
    broken.nodes[1].links.insert("image".into(), "Nope.output".into());
    let validation = client.validate_workflow(&broken, None).await.unwrap();
    assert!(!validation.valid && validation.description.is_none());
    assert!(validation.errors.iter().any(|p| p.field.as_deref() == Some("Square.image")), "{validation:?}");

    // A name that needs percent-encoding, both ways.
    let name = "Été 2027 + more";
    let saved = client.save_workflow(name, &definition).await.unwrap();
    assert_eq!(saved.name, name);
    assert_eq!(saved.inputs.kind("photo"), Some(ParamKind::Image));
    let described = client.workflow(name).await.unwrap();
    assert_eq!(described, saved);
    let listed = client.workflows().await.unwrap();
    assert!(listed.iter().any(|w| w.name == name && !w.system_workflow));
    let handle =
        client.run_workflow(name, json!({"photo": png_base64(20, 10)}), RunOptions::default()).await.unwrap();
    let status = client.wait(&handle.id, WaitOptions::default()).await.unwrap();
    assert_eq!(status.named_outputs().len(), 2);
    let deleted = client.delete_workflow(name).await.unwrap();
    assert!(deleted.deleted && deleted.name == name);
    let e = client.workflow(name).await.unwrap_err();
    assert!(matches!(e, Error::WorkflowNotFound { .. }), "{e:?}");
}

#[tokio::test]
async fn v2_runs_have_their_family_s_status_and_the_balance_follows() {
    let app = TestApp::start().await;
    let client = client(&app);
    let img = png_base64(48, 64);
    let body = json!({"category": "top", "model_image": img, "garment_image": img, "model_name": "Turbo"});
    let handle = client.v2_run(V2Family::Tryon, body, RunOptions::default()).await.unwrap();
    assert!(handle.id.starts_with("gen_"));
    let status = loop {
        let status = client.v2_status(V2Family::Tryon, &handle.id).await.unwrap();
        if status.status.is_terminal() {
            break status;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    assert_eq!(status.status, V2State::Completed);
    assert_eq!((status.urls().len(), status.model_name.as_deref()), (1, Some("Turbo")));
    assert_eq!(status.input.as_ref().unwrap()["model_image"], "<base64>");
    assert_eq!(status.raw, app.get(&format!("/api/v2/tryon/status/{}", handle.id)).await.1);
    let e = client.v2_status(V2Family::Fabric, &handle.id).await.unwrap_err();
    assert!(matches!(e, Error::RunNotFound { .. }), "another family's run: {e:?}");
    let spent = 1000 - client.balance().await.unwrap();
    assert!(spent > 0);
    assert_eq!(client.status(&handle.id).await.unwrap().tokens, spent);
}

#[tokio::test]
async fn a_waiting_request_answers_the_final_status_and_a_key_replays_the_first_answer() {
    let app = TestApp::start().await;
    let client = client(&app);
    let options =
        RunOptions { wait: Some(30), idempotency_key: Some("job-42".into()), ..RunOptions::default() };
    let handle = client.run("upscale", json!({"image": png_base64(16, 16)}), options.clone()).await.unwrap();
    assert_eq!(handle.preference_applied.as_deref(), Some("wait=30"));
    let status = handle.status.expect("the final status in the answer");
    assert!(status.succeeded());
    assert_eq!(status.raw, app.get(&format!("/api/v3/status/{}", handle.id)).await.1);
    let again = client.run("upscale", json!({"image": png_base64(16, 16)}), options).await.unwrap();
    assert!(again.replayed);
    assert_eq!(again.id, handle.id);
    let e = client
        .run(
            "upscale",
            json!({"image": png_base64(8, 8)}),
            RunOptions { idempotency_key: Some("job-42".into()), ..Default::default() },
        )
        .await
        .unwrap_err();
    assert!(matches!(e, Error::IdempotencyKeyReused { .. }), "{e:?}");
    assert_eq!(client.balance().await.unwrap(), 999, "one key, one charge");
}

#[tokio::test]
async fn the_webhook_secret_rotates_and_signs_as_the_client_verifies() {
    let app = TestApp::start().await;
    let client = client(&app);
    let first = client.webhook_secret().await.unwrap();
    assert!(first.key.starts_with("whsec_") && first.previous_key_expires_at.is_none());
    assert_eq!(client.webhook_secret().await.unwrap(), first, "made once");
    let rotated = client.rotate_webhook_secret().await.unwrap();
    assert_ne!(rotated.key, first.key);
    assert!(rotated.previous_key_expires_at.is_some());

    // A delivery as the server signs it (with both secrets during the grace period).
    let body = br#"{"type":"node","run_id":"wr_1","node":"A","id":"gen_1","status":"succeeded"}"#;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let signature = atelier_client::webhook::sign(&[&rotated.key, &first.key], "msg_1", now, body);
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("webhook-id", "msg_1".parse().unwrap());
    headers.insert("webhook-timestamp", now.to_string().parse().unwrap());
    headers.insert("webhook-signature", signature.parse().unwrap());
    for secret in [&rotated.key, &first.key] {
        assert_eq!(atelier_client::verify_webhook(secret, &headers, body), Ok(()));
    }
    assert!(atelier_client::verify_webhook(&rotated.key, &headers, b"{}").is_err());
    assert!(matches!(
        atelier_client::parse_webhook(body).unwrap(),
        atelier_client::WebhookPayload::Node(event) if event.status == NodeState::Succeeded
    ));
}

#[tokio::test]
async fn the_accounts_endpoint_is_set_read_and_removed_and_its_alerts_parse() {
    let app = TestApp::start().await;
    let client = client(&app);
    let empty = client.webhook_endpoint().await.unwrap();
    assert_eq!((empty.url, empty.events), (None, vec!["spend.threshold".to_string()]));
    let url = "https://93.184.215.14/atelier";
    assert_eq!(client.set_webhook_endpoint(url).await.unwrap().url.as_deref(), Some(url));
    assert_eq!(client.webhook_endpoint().await.unwrap().url.as_deref(), Some(url));
    match client.set_webhook_endpoint("ftp://example.com/x").await {
        Err(Error::InvalidInput { field, .. }) => assert_eq!(field, "url"),
        other => panic!("{other:?}"),
    }
    assert_eq!(client.remove_webhook_endpoint().await.unwrap().url, None);
    let body = br#"{"type":"spend.threshold","applies_to":"key","key":"atl_abcd","period":"day","threshold":80,
        "limit":100,"used":80,"resets_at":"2026-11-30T00:00:00.000000","created_at":"2026-11-29T10:00:00.000000"}"#;
    match atelier_client::parse_webhook(body).unwrap() {
        atelier_client::WebhookPayload::SpendThreshold(event) => {
            assert_eq!((event.threshold, event.used, event.key.as_deref()), (80, 80, Some("atl_abcd")));
        }
        other => panic!("{other:?}"),
    }
}

/// An upscale that reports progress in steps, `pause` apart.
struct Steps {
    pause: Duration,
}

#[async_trait::async_trait]
impl Executor for Steps {
    async fn run(&self, execution: Execution) -> Result<Vec<Artifact>, ToolError> {
        for step in 1..=3 {
            tokio::time::sleep(self.pause).await;
            execution.context.progress.report(step as f32 / 4.0);
        }
        tokio::time::sleep(self.pause).await;
        Ok(vec![Artifact { bytes: Bytes::from(png_bytes(8, 8)), ext: "png" }])
    }
}

#[tokio::test]
async fn events_resume_after_the_last_event_seen() {
    let mut tools = Registry::builtin(Default::default());
    tools.set(ToolId::Upscale, Arc::new(Steps { pause: Duration::from_millis(600) }));
    let app = TestApp::start_with(|_| {}, Some(tools), 1000).await;
    let client = client(&app);
    let handle =
        client.run("upscale", json!({"image": png_base64(16, 16)}), RunOptions::default()).await.unwrap();

    // Read up to the first progress report, then drop the connection.
    let mut stream = client.events(&handle.id, None);
    let seen = loop {
        match tokio::time::timeout(Duration::from_secs(30), stream.next()).await.unwrap().unwrap().unwrap() {
            RunEvent::Node(event) if event.progress.is_some_and(|p| p > 0.0) => break event,
            RunEvent::Node(_) => {}
            RunEvent::Status(status) => panic!("ended before any progress: {status:?}"),
        }
    };
    drop(stream);
    let resume = seen.event_id.clone().unwrap();
    let rest = all_events(&client, &handle.id, Some(&resume)).await;
    let RunEvent::Status(status) = rest.last().unwrap() else { panic!("{rest:?}") };
    assert!(status.succeeded());
    let nodes: Vec<_> = rest
        .iter()
        .filter_map(|e| match e {
            RunEvent::Node(n) => Some(n),
            RunEvent::Status(_) => None,
        })
        .collect();
    assert!(!nodes.is_empty(), "what changed after the resumption point is sent");
    for node in &nodes {
        assert_ne!(node.event_id.as_deref(), Some(resume.as_str()), "nothing seen before is sent again");
        assert!(
            node.status != NodeState::Running || node.progress > seen.progress,
            "{node:?} after {seen:?}"
        );
    }
    // Resuming after the end: the final status alone.
    let after_end = all_events(&client, &handle.id, Some("end")).await;
    assert!(matches!(after_end.as_slice(), [RunEvent::Status(s)] if s.raw == status.raw), "{after_end:?}");
    // Once done, `wait` answers at once from either path.
    let waited = client
        .wait(&handle.id, WaitOptions { timeout: Some(Duration::from_secs(5)), ..Default::default() })
        .await;
    assert!(waited.unwrap().succeeded());
}

#[tokio::test]
async fn a_batch_is_made_followed_and_downloaded() {
    use atelier_client::{BatchItemRequest, BatchRequest, BatchState, ItemState};
    let app = TestApp::start().await;
    let client = client(&app);
    let upload = client.upload(Bytes::from(png_bytes(40, 24))).await.unwrap();
    let item = |r: &str| BatchItemRequest {
        input: json!({"image": upload.input}).as_object().unwrap().clone(),
        reference: Some(r.to_string()),
    };
    let request = BatchRequest {
        kind: RunKind::Node,
        target: "upscale".into(),
        input: json!({"scale": 2}).as_object().unwrap().clone(),
        items: vec![item("a"), item("b")],
        items_file: None,
        priority: None,
        cache: Some(false),
        webhook_url: None,
        retention_secs: Some(3600),
    };
    let batch = client.create_batch(&request, Some("rust-batch")).await.unwrap();
    assert_eq!((batch.items.total, batch.tokens.price, batch.priority), (2, 2, Priority::Bulk));
    assert_eq!(client.create_batch(&request, Some("rust-batch")).await.unwrap().id, batch.id, "replayed");
    // Followed to its end by its events: progress, then the final state.
    let mut events = client.batch_events(&batch.id, None);
    let mut last = None;
    while let Some(event) = tokio::time::timeout(Duration::from_secs(60), events.next()).await.unwrap() {
        match event.unwrap() {
            BatchEvent::Progress(b) => assert_eq!(b.status, BatchState::Running),
            BatchEvent::Status(b) => last = Some(b),
        }
    }
    let batch = client.batch(&batch.id).await.unwrap();
    assert_eq!(last.as_ref(), Some(&batch), "the stream ends with the batch's final state");
    assert!(client.batch_webhook_deliveries(&batch.id).await.unwrap().is_empty(), "no webhook_url");
    assert_eq!((batch.status, batch.items.succeeded, batch.tokens.charged), (BatchState::Finished, 2, 2));
    let items = client.batch_items(&batch.id, Some(ItemState::Succeeded), None, None).await.unwrap();
    assert_eq!(items.items.iter().map(|i| i.reference.clone().unwrap()).collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(client.batches(None, None).await.unwrap().batches[0].id, batch.id);
    assert_eq!(client.retry_batch(&batch.id).await.unwrap().retried, Some(0));
    assert_eq!(client.cancel_batch(&batch.id).await.unwrap().status, BatchState::Finished);
    let lines = app.dir.path().join("results.jsonl");
    client.download_batch_results(&batch.id, &lines).await.unwrap();
    assert_eq!(std::fs::read_to_string(&lines).unwrap().lines().count(), 2);
    let zip = app.dir.path().join("results.zip");
    assert!(client.download_batch_zip(&batch.id, &zip).await.unwrap() > 0);
    let csv = app.dir.path().join("items.csv");
    std::fs::write(&csv, format!("ref,image\nc,{}\n", upload.input)).unwrap();
    let file = client.upload_items_file(&csv).await.unwrap();
    assert_eq!(file.format, "csv");
    let from_file = BatchRequest { items: vec![], items_file: Some(file.input), ..request.clone() };
    assert_eq!(client.create_batch(&from_file, None).await.unwrap().items.total, 1);
    match client.batch("bat_0000000000000000").await {
        Err(Error::BatchNotFound { .. }) => {}
        other => panic!("{other:?}"),
    }
    match client.batch_events("bat_0000000000000000", None).next().await {
        Some(Err(Error::BatchNotFound { .. })) => {}
        other => panic!("{other:?}"),
    }
}
