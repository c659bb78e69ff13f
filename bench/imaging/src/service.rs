//! Every tool through the service: `atelier serve` in a temporary data directory, runs
//! submitted with `POST /api/v3/run` and polled with `GET /api/v3/status/{id}`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use bytes::Bytes;
use serde_json::{json, Value};

use crate::inputs::{Error, Inputs};
use crate::measure::{median, Sampler};
use crate::report;

/// Interval between two status requests of one run.
const POLL: Duration = Duration::from_millis(10);
/// A run that takes longer than this fails the benchmark.
const RUN_DEADLINE: Duration = Duration::from_secs(300);

/// A running `atelier serve` with its own data directory, stopped and removed on drop.
struct Server {
    child: Child,
    dir: PathBuf,
    url: String,
    key: String,
}

impl Server {
    fn start(bin: &Path, workers: usize) -> Result<Server, Error> {
        let dir = std::env::temp_dir().join(format!("atelier-bench-service-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        // Run in the data directory so that no ./atelier.toml of the caller is picked up.
        let atelier = || {
            let mut cmd = Command::new(bin);
            cmd.current_dir(&dir).arg("--data-dir").arg(&dir);
            cmd
        };
        let out = atelier()
            .args(["admin", "account", "create", "bench", "--tokens", "1000000000", "--json"])
            .output()?;
        if !out.status.success() {
            return Err(format!("admin account create: {}", String::from_utf8_lossy(&out.stderr)).into());
        }
        let created: Value = serde_json::from_slice(&out.stdout)?;
        let key = created["api_key"].as_str().ok_or("admin account create printed no api_key")?.to_string();
        let mut child = atelier()
            .args(["serve", "--listen", "127.0.0.1:0", "--workers", &workers.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
        let url = loop {
            match lines.next() {
                Some(line) => {
                    if let Some(url) = line?.strip_prefix("Atelier listening on ") {
                        break url.to_string();
                    }
                }
                None => return Err("atelier serve exited before listening".into()),
            }
        };
        // Keep draining stdout so that the server never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Ok(Server { child, dir, url, key })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The request of each tool (all twelve) on the 1024x1536 scene as raw base64, and a short
/// description of its parameters.
fn requests(image: &str) -> Vec<(&'static str, &'static str, Value)> {
    let tryon = json!({"model_image": image, "garment_image": image, "category": "tops"});
    vec![
        ("virtual_tryon", "tops", tryon.clone()),
        ("virtual_tryon_pro", "tops, 3:4", tryon.clone()),
        ("virtual_tryon_pro_fit", "tops, match input", tryon),
        (
            "virtual_model",
            "text only, 1 output",
            json!({"ethnicity": "any", "gender": "Female", "dresstype": "summer dress", "background": "studio"}),
        ),
        ("fabric", "described pattern", json!({"model_image": image, "fabric_description": "navy stripes"})),
        ("sketch_to_dress", "defaults", json!({"image": image})),
        ("upscale", "x2, PNG", json!({"image": image, "scale": 2})),
        ("multipose", "1 output", json!({"image": image, "num_outputs": 1})),
        ("video", "5 s, auto motion", json!({"image": image})),
        ("background_removal", "transparent PNG", json!({"image": image})),
        ("reframe", "1:1, auto", json!({"image": image, "aspect_ratio": "1:1"})),
        ("product_shoot", "white studio 1:1, 1 output", json!({"product_image": image})),
    ]
}

/// Submits one run and polls it until it succeeded; returns submit → succeeded.
async fn run_once(client: &reqwest::Client, server: (&str, &str), body: Bytes) -> Result<Duration, Error> {
    let (url, key) = server;
    let start = Instant::now();
    let handle: Value = client
        .post(format!("{url}/api/v3/run"))
        .header("X-API-KEY", key)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body)
        .send()
        .await?
        .json()
        .await?;
    let id = handle["id"].as_str().ok_or_else(|| format!("no run id in {handle}"))?;
    loop {
        let status: Value = client
            .get(format!("{url}/api/v3/status/{id}"))
            .header("X-API-KEY", key)
            .send()
            .await?
            .json()
            .await?;
        match status["overall_status"].as_str() {
            Some("succeeded") => return Ok(start.elapsed()),
            Some("failed" | "canceled") => return Err(format!("run {id} did not succeed: {status}").into()),
            _ if start.elapsed() > RUN_DEADLINE => {
                return Err(format!("run {id} still not done: {status}").into())
            }
            _ => tokio::time::sleep(POLL).await,
        }
    }
}

/// `clients` clients submitting `per_client` runs each, back to back: runs per second.
async fn throughput(
    client: &reqwest::Client,
    server: (&str, &str),
    body: &Bytes,
    clients: usize,
    per_client: usize,
) -> Result<f64, Error> {
    let start = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let (client, body) = (client.clone(), body.clone());
            let (url, key) = (server.0.to_string(), server.1.to_string());
            tokio::spawn(async move {
                for _ in 0..per_client {
                    run_once(&client, (&url, &key), body.clone()).await?;
                }
                Ok::<(), Error>(())
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    Ok((clients * per_client) as f64 / start.elapsed().as_secs_f64())
}

/// Measures and prints the service section: `atelier` is the binary, `workers` the server's
/// `--workers` and the number of concurrent clients for throughput.
pub fn run(i: &Inputs, sampler: &Sampler, atelier: &Path, workers: usize) -> Result<(), Error> {
    let server = Server::start(atelier, workers)?;
    let image = base64::engine::general_purpose::STANDARD.encode(&i.scene_png);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let client = reqwest::Client::new();
    let target = (server.url.as_str(), server.key.as_str());
    let mut rows = Vec::new();
    for (tool, input, params) in requests(&image) {
        let body =
            Bytes::from(serde_json::to_vec(&json!({"type": "node", "target": tool, "input": params}))?);
        let (p50, per_s) = rt.block_on(async {
            run_once(&client, target, body.clone()).await?; // warm-up
            let mut latencies = Vec::new();
            for _ in 0..sampler.runs {
                latencies.push(run_once(&client, target, body.clone()).await?.as_secs_f64() * 1000.0);
            }
            let per_s = throughput(&client, target, &body, workers, sampler.runs).await?;
            Ok::<_, Error>((median(latencies), per_s))
        })?;
        rows.push(vec![tool.into(), input.into(), report::ms(p50), report::per_s(per_s)]);
    }
    println!("## Tools through the service\n");
    println!(
        "`atelier serve --workers {workers}` on a fresh data directory (SQLite), on the same \
         machine as the client. Each run: `POST /api/v3/run` with `{{\"type\": \"node\", …}}`, the \
         1024x1536 scene as a raw base64 PNG ({:.0} KiB before base64) in every image parameter, \
         then `GET /api/v3/status/{{id}}` every {} ms until `overall_status` is `succeeded`.\n\n\
         - **p50 latency**: submit → succeeded, one client, median of {} runs after a warm-up.\n\
         - **throughput**: {workers} clients at once (= workers), {} runs each, back to back; \
         runs completed per second of wall time.\n",
        i.scene_png.len() as f64 / 1024.0,
        POLL.as_millis(),
        sampler.runs,
        sampler.runs
    );
    report::table(
        &["tool", "input", "p50 latency (1 client)", &format!("throughput ({workers} clients)")],
        &rows,
    );
    Ok(())
}
