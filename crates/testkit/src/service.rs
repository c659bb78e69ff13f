//! A test harness that drives Atelier over HTTP, as a client would.
//!
//! Each app runs on the embedded default (SQLite, outputs on local disk) unless
//! `ATELIER_TEST_BACKEND=postgres-s3`, when it runs on a fresh PostgreSQL schema
//! (`ATELIER_TEST_DATABASE_URL`, default `postgres://postgres@127.0.0.1:5432/test`) and a
//! fresh prefix of an S3-compatible bucket: the server at `ATELIER_TEST_S3_ENDPOINT`
//! (bucket `atelier-test`, created if missing), or else moto's server started for the app.
//! The interface suites are the same on both.
//!
//! Tests that start processes of their own, time leases or change the environment take
//! [`exclusive`]; every [`TestApp`] holds a share of the same lock, so those tests run alone.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use atelier_cli::Config;
use atelier_tools::Registry;
use serde_json::{json, Value};

use crate::images::png_base64;
use crate::moto::MotoServer;
use crate::pg::PgSchema;

/// Apps share it; a test that must run alone holds it whole. Readers never wait for a writer
/// that is only waiting (a test may start a second app while a writer waits), so a writer
/// gets it once no app is left.
struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Default)]
struct GateState {
    apps: usize,
    alone: bool,
}

static GATE: Gate = Gate { state: Mutex::new(GateState { apps: 0, alone: false }), changed: Condvar::new() };

impl Gate {
    fn state(&self) -> MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'a>(&self, state: MutexGuard<'a, GateState>) -> MutexGuard<'a, GateState> {
        self.changed.wait(state).unwrap_or_else(PoisonError::into_inner)
    }
}

/// Holds the test binary to this test alone until dropped: waits for running apps to stop,
/// and keeps new ones from starting. For tests that start processes of their own (lease and
/// crash timings), or change this process's environment.
pub fn exclusive() -> Alone {
    let mut state = GATE.state();
    while state.alone || state.apps > 0 {
        state = GATE.wait(state);
    }
    state.alone = true;
    Alone(())
}

/// See [`exclusive`].
pub struct Alone(());

impl Drop for Alone {
    fn drop(&mut self) {
        GATE.state().alone = false;
        GATE.changed.notify_all();
    }
}

/// A share of the gate, held by an app while it lives.
struct Shared(());

fn shared() -> Shared {
    let mut state = GATE.state();
    while state.alone {
        state = GATE.wait(state);
    }
    state.apps += 1;
    Shared(())
}

impl Drop for Shared {
    fn drop(&mut self) {
        let mut state = GATE.state();
        state.apps -= 1;
        if state.apps == 0 {
            GATE.changed.notify_all();
        }
    }
}

pub struct TestApp {
    pub base: String,
    pub key: String,
    pub client: reqwest::Client,
    pub running: Option<atelier_cli::Running>,
    pub dir: tempfile::TempDir,
    /// What the PostgreSQL + S3 backend needs to outlive the app (dropped last).
    _backend: Option<Backend>,
    /// A share of [`exclusive`]'s gate, held while the app lives.
    _shared: Shared,
}

/// A fresh PostgreSQL schema (dropped with the app) and, unless an S3 endpoint was
/// given, the moto server that holds the outputs.
struct Backend {
    _schema: PgSchema,
    _moto: Option<MotoServer>,
}

const S3_BUCKET: &str = "atelier-test";

/// Points `config` at a fresh schema and a fresh bucket prefix when
/// `ATELIER_TEST_BACKEND=postgres-s3`; `None` (the embedded default) otherwise.
fn select_backend(config: &mut Config) -> Option<Backend> {
    match std::env::var("ATELIER_TEST_BACKEND").as_deref() {
        Err(_) | Ok("" | "embedded") => return None,
        Ok("postgres-s3") => {}
        Ok(other) => panic!("ATELIER_TEST_BACKEND={other}: expected embedded or postgres-s3"),
    }
    let schema = PgSchema::create().expect("ATELIER_TEST_BACKEND=postgres-s3 needs PostgreSQL");
    config.database.url = schema.url.clone();

    let (endpoint, moto) = match std::env::var("ATELIER_TEST_S3_ENDPOINT") {
        Ok(endpoint) => {
            // moto accepts an unsigned bucket creation; an existing bucket answers 409.
            let _ = std::process::Command::new("curl")
                .args(["-s", "-o", "/dev/null", "-X", "PUT", &format!("{endpoint}/{S3_BUCKET}")])
                .status();
            (endpoint, None)
        }
        Err(_) => {
            let moto = MotoServer::start(S3_BUCKET)
                .expect("ATELIER_TEST_BACKEND=postgres-s3 needs moto_server or ATELIER_TEST_S3_ENDPOINT");
            (moto.endpoint.clone(), Some(moto))
        }
    };
    config.storage.url = format!("s3://{S3_BUCKET}/{}", schema.name);
    config.storage.s3.endpoint = endpoint;
    config.storage.s3.region = "us-east-1".into();
    config.storage.s3.access_key_id = "test".into();
    config.storage.s3.secret_access_key = "test".into();
    Some(Backend { _schema: schema, _moto: moto })
}

/// A key that signs output URLs in tests (`ATELIER_TEST_OUTPUT_ACCESS=signed`).
pub const TEST_URL_KEY: &str = "test-url-key-0123456789abcdef0123456789";

/// Serves outputs behind signed URLs when `ATELIER_TEST_OUTPUT_ACCESS=signed`, so that any
/// interface suite can run in either mode. The URLs live the longest allowed (7 days), whose
/// expiry moves in steps of an hour: two reads of a status a test compares then give the same
/// URLs unless an hour's boundary falls between them.
fn select_output_access(config: &mut Config) {
    match std::env::var("ATELIER_TEST_OUTPUT_ACCESS").as_deref() {
        Err(_) | Ok("" | "public") => {}
        Ok("signed") => {
            config.outputs.access = atelier_cli::config::OutputAccess::Signed;
            config.outputs.url_keys = vec![TEST_URL_KEY.into()];
            config.outputs.url_secs = 7 * 24 * 3600;
        }
        Ok(other) => panic!("ATELIER_TEST_OUTPUT_ACCESS={other}: expected public or signed"),
    }
}

pub fn test_config(dir: &std::path::Path) -> Config {
    let mut config = Config::default();
    config.storage.data_dir = dir.to_path_buf();
    config.server.listen = "127.0.0.1:0".parse().unwrap();
    config.worker.poll_ms = 20;
    config.worker.retry_backoff_ms = 10;
    config.worker.lease_secs = 5;
    config.worker.heartbeat_secs = 1;
    config.worker.shutdown_grace_secs = 1;
    config
}

impl TestApp {
    pub async fn start() -> Self {
        Self::start_with(|_| {}, None, 1000).await
    }

    pub async fn start_with(tweak: impl FnOnce(&mut Config), tools: Option<Registry>, tokens: i64) -> Self {
        let shared = shared();
        let dir = tempfile::tempdir().unwrap();
        let mut config = test_config(dir.path());
        let backend = select_backend(&mut config);
        select_output_access(&mut config);
        tweak(&mut config);
        let store = atelier_cli::open_store(&config).await.unwrap();
        let (_, key) = store.create_account("test", tokens).await.unwrap();
        let running = atelier_cli::start(&config, store, tools).await.unwrap();
        let base = format!("http://{}", running.addr);
        Self {
            base,
            key,
            client: reqwest::Client::new(),
            running: Some(running),
            dir,
            _backend: backend,
            _shared: shared,
        }
    }

    /// What `/files` answers for a URL that names no output: 404 `FileNotFound`, or with
    /// signed output URLs 403 `FileUrlInvalid` (nothing is looked up without a signature).
    pub fn no_such_file(&self) -> (u16, &'static str) {
        if self.running.as_ref().unwrap().blob.signs_urls() {
            (403, "FileUrlInvalid")
        } else {
            (404, "FileNotFound")
        }
    }

    pub fn store(&self) -> atelier_store::SharedStore {
        self.running.as_ref().unwrap().store.clone()
    }

    /// Signs in to the console with `key`: the session's cookie and CSRF token.
    pub async fn console_session(&self, key: &str) -> (String, String) {
        let response = self
            .client
            .post(format!("{}/console/api/session", self.base))
            .json(&serde_json::json!({"api_key": key}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let cookie =
            response.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_string();
        let body: Value = response.json().await.unwrap();
        (cookie, body["csrf_token"].as_str().unwrap().to_string())
    }

    /// A console request with `session` (cookie, CSRF token and a same-origin browser's
    /// headers) and a raw body: the status and the JSON answer (null when not JSON).
    pub async fn console_call(
        &self,
        session: &(String, String),
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> (u16, Value) {
        let host = self.base.trim_start_matches("http://").to_string();
        let mut request = self
            .client
            .request(method.parse().unwrap(), format!("{}{path}", self.base))
            .header("cookie", session.0.as_str())
            .header("x-csrf-token", session.1.as_str())
            .header("sec-fetch-site", "same-origin")
            .header("origin", self.base.as_str())
            .header("host", host);
        if let Some(body) = body {
            request = request.header("content-type", "application/json").body(body.to_string());
        }
        let response = request.send().await.unwrap();
        let code = response.status().as_u16();
        (code, response.json().await.unwrap_or(Value::Null))
    }

    /// A key for a second account.
    pub async fn other_key(&self, tokens: i64) -> String {
        self.store().create_account("other", tokens).await.unwrap().1
    }

    pub async fn call(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        body: Option<&Value>,
    ) -> (u16, Value) {
        let url = format!("{}{path}", self.base);
        let mut req = self.client.request(method.parse().unwrap(), url);
        if let Some(key) = key {
            req = req.header("X-API-KEY", key);
        }
        if let Some(body) = body {
            req = req.json(body);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, value)
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.call("GET", path, Some(&self.key.clone()), None).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        self.call("POST", path, Some(&self.key.clone()), Some(body)).await
    }

    /// Uploads an image with `key` (`POST /api/v3/uploads`), asserting acceptance; its
    /// `upload:` reference.
    pub async fn upload(&self, key: &str, bytes: Vec<u8>) -> String {
        let response = self
            .client
            .post(format!("{}/api/v3/uploads", self.base))
            .header("X-API-KEY", key)
            .header("content-type", "image/png")
            .body(bytes)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        response.json::<Value>().await.unwrap()["input"].as_str().unwrap().to_string()
    }

    /// Starts a run and returns its id, asserting acceptance.
    pub async fn run(&self, body: &Value) -> String {
        let (status, handle) = self.post("/api/v3/run", body).await;
        assert_eq!(status, 200, "run refused: {handle}");
        assert_eq!(handle["error"], Value::Null);
        handle["id"].as_str().unwrap().to_string()
    }

    /// Polls until the run is terminal; returns its final status.
    pub async fn wait(&self, id: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let (code, status) = self.get(&format!("/api/v3/status/{id}")).await;
            assert_eq!(code, 200, "{status}");
            let state = status["overall_status"].as_str().unwrap_or("").to_string();
            if ["succeeded", "failed", "canceled"].contains(&state.as_str()) {
                return status;
            }
            assert!(Instant::now() < deadline, "run {id} did not finish: {status}");
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    pub async fn fetch(&self, url: &str) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
        let resp = self.client.get(url).send().await.unwrap();
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        (status, headers, resp.bytes().await.unwrap().to_vec())
    }

    pub async fn balance(&self) -> i64 {
        self.get("/api/v2/user/tokens").await.1["tokens"].as_i64().unwrap()
    }
}

/// Fills a sample payload's placeholders with real values.
pub fn fill(sample: &Value) -> Value {
    let mut body = sample.clone();
    let input = body["input"].as_object_mut().unwrap();
    for (key, value) in input.iter_mut() {
        *value = match value.as_str().unwrap() {
            "<image>" => json!(png_base64(96, 128)),
            "<select>" if key.ends_with("gender") => json!("Female"),
            "<select>" => json!("tops"),
            "<number>" => json!(1),
            "<boolean>" => json!(false),
            _ => json!(format!("test {key}")),
        };
    }
    body
}
