//! The events stream against a scripted server (a few lines of HTTP over a local socket):
//! a connection that drops before the final status is resumed with `Last-Event-ID`, and
//! `wait` falls back to polling when the stream keeps dropping or is not offered.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use atelier_client::{Client, Error, NodeState, RunEvent, WaitOptions};
use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// What the server answers to the `n`th request (from 0) for `path`: the whole raw answer.
type Script = Arc<dyn Fn(usize, &str) -> String + Send + Sync>;

/// A server that answers each request as `script` says and records the requests' heads.
async fn serve(script: Script) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    tokio::spawn(async move {
        let mut count = 0;
        loop {
            let Ok((mut socket, _)) = listener.accept().await else { return };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                if socket.read(&mut byte).await.unwrap_or(0) == 0 {
                    break;
                }
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head).to_lowercase();
            let path = head.split_whitespace().nth(1).unwrap_or_default().to_string();
            log.lock().unwrap().push(head);
            let answer = script(count, &path);
            count += 1;
            let _ = socket.write_all(answer.as_bytes()).await;
            let _ = socket.shutdown().await;
        }
    });
    (base, seen)
}

fn stream_answer(body: &str) -> String {
    format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{body}")
}

fn json_answer(status: u16, body: &str) -> String {
    format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

const RUNNING: &str =
    r#"{"run_id":"gen_1","node":"upscale","id":"gen_1","status":"running","progress":0.5,"error":null}"#;
const DONE: &str = r#"{"run_id":"gen_1","node":"upscale","id":"gen_1","status":"succeeded","output":["http://x/0.png"],"error":null}"#;
const STATUS: &str = r#"{"id":"gen_1","overall_status":"succeeded","status":"succeeded","model_name":"upscale","output":["http://x/0.png"],"error":null}"#;

#[tokio::test]
async fn a_dropped_stream_is_resumed_after_the_last_event_id() {
    let script: Script = Arc::new(|n, _| {
        match n {
        // An event, a comment, then half an event and the connection drops.
        0 => stream_answer(&format!("retry: 10\n\nevent: node\nid: r500\ndata: {RUNNING}\n\n: keep-alive\n\nevent: node\ndata: {{\"half")),
        _ => stream_answer(&format!("event: node\nid: s\ndata: {DONE}\n\nevent: status\nid: end\ndata: {STATUS}\n\n")),
    }
    });
    let (base, seen) = serve(script).await;
    let client = Client::new(&base, "atl_test").unwrap();
    let events: Vec<RunEvent> = client.events("gen_1", None).map(|e| e.unwrap()).collect().await;
    match events.as_slice() {
        [RunEvent::Node(running), RunEvent::Node(done), RunEvent::Status(status)] => {
            assert_eq!((running.status, running.event_id.as_deref()), (NodeState::Running, Some("r500")));
            assert_eq!((done.status, done.event_id.as_deref()), (NodeState::Succeeded, Some("s")));
            assert!(status.succeeded());
        }
        other => panic!("{other:?}"),
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert!(seen[0].starts_with("get /api/v3/status/gen_1/events ") && !seen[0].contains("last-event-id"));
    assert!(seen[0].contains("x-api-key: atl_test") && seen[0].contains("accept: text/event-stream"));
    assert!(seen[1].contains("last-event-id: r500"), "{}", seen[1]);
}

#[tokio::test]
async fn wait_polls_when_the_stream_keeps_dropping_or_is_not_offered() {
    // Every stream closes at once without an event: the stream gives up after a few tries
    // (`retry: 10` keeps them quick) and `wait` polls the status.
    let script: Script = Arc::new(|_, path| {
        if path.ends_with("/events") {
            stream_answer("retry: 10\n\n")
        } else {
            json_answer(200, STATUS)
        }
    });
    let (base, seen) = serve(script).await;
    let client = Client::new(&base, "atl_test").unwrap();
    let status = client.wait("gen_1", WaitOptions::default()).await.unwrap();
    assert!(status.succeeded());
    {
        let seen = seen.lock().unwrap();
        let streams = seen.iter().filter(|h| h.contains("/events ")).count();
        assert!(streams > 1, "it reconnected before giving up: {streams}");
        assert!(seen.last().unwrap().starts_with("get /api/v3/status/gen_1 "));
    }

    // A server without the events endpoint (a 404 that is not RunNotFound).
    let script: Script =
        Arc::new(
            |_, path| {
                if path.ends_with("/events") {
                    json_answer(404, "")
                } else {
                    json_answer(200, STATUS)
                }
            },
        );
    let (base, _) = serve(script).await;
    let client = Client::new(&base, "atl_test").unwrap();
    let first = client.events("gen_1", None).next().await.unwrap();
    assert!(matches!(first, Err(Error::EventStream(_))), "{first:?}");
    assert!(client.wait("gen_1", WaitOptions::default()).await.unwrap().succeeded());

    // A run that is not there is the caller's error, not a reason to poll.
    let script: Script = Arc::new(|_, _| {
        json_answer(404, r#"{"error":{"name":"RunNotFound","message":"run 'gen_1' not found"}}"#)
    });
    let (base, _) = serve(script).await;
    let client = Client::new(&base, "atl_test").unwrap();
    let e = client.wait("gen_1", WaitOptions::default()).await.unwrap_err();
    assert!(matches!(e, Error::RunNotFound { .. }), "{e:?}");
}

#[tokio::test]
async fn wait_gives_up_at_its_timeout_with_the_last_status_seen() {
    let running = r#"{"id":"gen_1","overall_status":"running","status":"running","model_name":"upscale","output":[],"error":null}"#;
    let script: Script = Arc::new(move |_, _| json_answer(200, running));
    let (base, _) = serve(script).await;
    let client = Client::new(&base, "atl_test").unwrap();
    let options = WaitOptions {
        timeout: Some(Duration::from_millis(300)),
        poll_interval: Duration::from_millis(50),
        use_events: false,
    };
    match client.wait("gen_1", options).await {
        Err(Error::WaitTimeout { run_id, last: Some(last) }) => {
            assert_eq!((run_id.as_str(), last.is_done()), ("gen_1", false));
        }
        other => panic!("{other:?}"),
    }
}
