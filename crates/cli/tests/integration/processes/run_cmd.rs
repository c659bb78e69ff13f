//! `atelier run` as a user runs it, against `atelier serve` in a temporary directory: the
//! downloaded outputs, `--json`, a workflow, refusals and their exit codes, a failing run,
//! and Ctrl-C.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use atelier_testkit::images::{decode, png_bytes};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_atelier");

/// `atelier serve` in `dir` (private URLs allowed), stopped when dropped.
struct Server {
    child: Child,
    base: String,
    key: String,
}

impl Server {
    fn start(dir: &Path) -> Self {
        let mut child = Command::new(BIN)
            .arg("--data-dir")
            .arg(dir.join("data"))
            .args(["serve", "--listen", "127.0.0.1:0", "--allow-private-urls"])
            .current_dir(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut key = None;
        let base = loop {
            let line = lines.next().expect("serve exited before listening").unwrap();
            if let Some(k) = line.strip_prefix("API key (shown once): ") {
                key = Some(k.trim().to_string());
            }
            if let Some(addr) = line.strip_prefix("Atelier listening on ") {
                break addr.trim().to_string();
            }
        };
        // Keep draining stdout so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Self { child, base, key: key.expect("the first start prints the default account's key") }
    }

    /// `atelier run ARGS` in `cwd`, with the server's address and key in the environment and
    /// no terminal.
    fn run(&self, cwd: &Path, args: &[&str]) -> Output {
        Command::new(BIN)
            .arg("run")
            .args(args)
            .current_dir(cwd)
            .env("ATELIER_URL", &self.base)
            .env("ATELIER_API_KEY", &self.key)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    fn get(&self, path: &str) -> Value {
        let out = Command::new("curl")
            .args(["-s", "-H", &format!("X-API-KEY: {}", self.key), &format!("{}{path}", self.base)])
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The exit code, stdout and stderr of a finished `atelier run`.
fn outcome(out: &Output) -> (Option<i32>, String, String) {
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn run_downloads_outputs_prints_status_json_and_exits_by_outcome() {
    let _alone = atelier_testkit::service::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let image = dir.path().join("shirt.png");
    std::fs::write(&image, png_bytes(20, 14)).unwrap();
    let at_image = format!("image=@{}", image.display());

    // A tool run: priced, followed, its output downloaded under a readable name.
    let out = dir.path().join("out");
    let (code, stdout, stderr) =
        outcome(&server.run(dir.path(), &["upscale", &at_image, "--out", out.to_str().unwrap(), "--yes"]));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("price 1 tokens, balance 1000"), "{stderr}");
    assert!(stderr.contains("node upscale succeeded"), "plain lines off a terminal: {stderr}");
    let paths: Vec<&str> = stdout.lines().collect();
    assert_eq!(paths.len(), 1, "{stdout}");
    let file = Path::new(paths[0]);
    let name = file.file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with("gen_") && name.ends_with("_0.png"), "{name}");
    assert_eq!(file.parent(), Some(out.as_path()));
    let bytes = std::fs::read(file).unwrap();
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
    let upscaled = decode(&bytes);
    assert_eq!((upscaled.width(), upscaled.height()), (40, 28), "the built-in upscale doubles by default");

    // --json: the final status as the status endpoint answers it; `scale=4` sent as a number.
    let (code, stdout, stderr) = outcome(
        &server.run(dir.path(), &["upscale", &at_image, "scale=4", "--json", "--no-download", "--yes"]),
    );
    assert_eq!(code, Some(0), "{stderr}");
    let printed: Value = serde_json::from_str(&stdout).unwrap();
    let id = printed["id"].as_str().unwrap();
    assert_eq!(printed, server.get(&format!("/api/v3/status/{id}")));
    assert_eq!(printed["tokens"], 2, "scale 4 costs 2");
    assert!(!dir.path().join(format!("{id}_0.png")).exists(), "--no-download");

    // A workflow: one file per named output.
    let flows = dir.path().join("flows");
    let (code, stdout, stderr) = outcome(&server.run(
        dir.path(),
        &[
            "--workflow",
            "product-reframes",
            &format!("Shoot.product_image=@{}", image.display()),
            "--out",
            flows.to_str().unwrap(),
            "--yes",
        ],
    ));
    assert_eq!(code, Some(0), "{stderr}");
    let names: Vec<String> =
        stdout.lines().map(|p| Path::new(p).file_name().unwrap().to_str().unwrap().to_string()).collect();
    assert_eq!(names, ["square_0.png", "portrait_0.png", "story_0.png"]);
    let square = decode(&std::fs::read(flows.join("square_0.png")).unwrap());
    assert_eq!(square.width(), square.height());
    for node in ["Shoot", "Square", "Portrait", "Story"] {
        assert!(stderr.contains(&format!("node {node} succeeded")), "{stderr}");
    }

    let balance = server.get("/api/v2/user/tokens")["tokens"].clone();
    // Refused by the server: exit 3 with the error's name and message.
    let (code, _, stderr) = outcome(&server.run(dir.path(), &["upscale", "--yes"]));
    assert_eq!(code, Some(3), "{stderr}");
    assert!(stderr.contains("MissingInputs") && stderr.contains("image"), "{stderr}");
    let (code, _, stderr) = outcome(&server.run(dir.path(), &["upscale", &at_image, "scale=3", "--yes"]));
    assert_eq!(code, Some(3), "{stderr}");
    assert!(stderr.contains("InvalidInput") && stderr.contains("scale"), "{stderr}");
    let (code, _, stderr) = outcome(&server.run(dir.path(), &["--workflow", "no-such-flow", "x=1", "--yes"]));
    assert_eq!(code, Some(3), "{stderr}");
    assert!(stderr.contains("WorkflowNotFound"), "{stderr}");

    // Above --confirm-above without --yes, and no terminal to ask on: exit 2, nothing run.
    let (code, _, stderr) = outcome(&server.run(dir.path(), &["upscale", &at_image, "--confirm-above", "0"]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--yes"), "{stderr}");
    // Usage errors: exit 2.
    let (code, _, stderr) = outcome(&server.run(dir.path(), &["upscale", "image"]));
    assert_eq!(code, Some(2), "{stderr}");
    let (code, _, stderr) = outcome(&server.run(dir.path(), &["upscale", "image=@/no/such/file.png"]));
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(server.get("/api/v2/user/tokens")["tokens"], balance, "nothing was charged");

    // A run that fails (its image URL answers 404): exit 1 with the node's error.
    let missing = format!("image={}/files/outputs/gen_none/upscale/0.png", server.base);
    let (code, _, stderr) =
        outcome(&server.run(dir.path(), &["upscale", &missing, "--yes", "--no-download"]));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("node upscale failed") && stderr.contains("InputFetchFailed"), "{stderr}");
}

#[test]
fn ctrl_c_cancels_the_run_waits_for_its_end_and_exits_130() {
    let _alone = atelier_testkit::service::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    // An image URL that never answers: the node runs (fetching) until it is canceled.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("image=http://{}/slow.png", silent.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in silent.incoming().flatten() {
            held.push(stream);
        }
    });

    let mut child = Command::new(BIN)
        .args(["run", "upscale", &url, "--yes", "--json"])
        .current_dir(dir.path())
        .env("ATELIER_URL", &server.base)
        .env("ATELIER_API_KEY", &server.key)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    // Off a terminal, --json prints no progress: wait for the run to start, then for the
    // node to run (it stays running while its image does not come).
    let run_id = loop {
        let line = stderr.next().expect("atelier run ended early").unwrap();
        seen.push_str(&line);
        seen.push('\n');
        if let Some(id) = line.strip_prefix("run ").and_then(|rest| rest.strip_suffix(" started")) {
            break id.to_string();
        }
        assert!(Instant::now() < deadline, "{seen}");
    };
    while server.get(&format!("/api/v3/status/{run_id}"))["overall_status"] != "running" {
        assert!(Instant::now() < deadline, "the run did not start running");
        std::thread::sleep(Duration::from_millis(50));
    }
    let killed = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let rest: Vec<String> = stderr.map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut stdout).unwrap();
    assert_eq!(status.code(), Some(130), "{seen}{}", rest.join("\n"));
    assert!(rest.iter().any(|l| l == &format!("run {run_id} canceled (0 tokens)")), "{}", rest.join("\n"));
    let printed: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(printed["overall_status"], "canceled");
    assert_eq!(printed, server.get(&format!("/api/v3/status/{run_id}")), "the final status, waited for");
}

impl Server {
    /// `atelier batch ARGS` in `cwd`, as [`Server::run`] runs `atelier run`.
    fn batch(&self, cwd: &Path, args: &[&str]) -> Output {
        Command::new(BIN)
            .arg("batch")
            .args(args)
            .current_dir(cwd)
            .env("ATELIER_URL", &self.base)
            .env("ATELIER_API_KEY", &self.key)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }
}

#[test]
fn batch_runs_a_csv_catalogue_uploads_its_files_once_and_writes_every_output() {
    let _alone = atelier_testkit::service::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    std::fs::write(dir.path().join("shirt.png"), png_bytes(20, 14)).unwrap();
    std::fs::write(dir.path().join("dress.png"), png_bytes(16, 24)).unwrap();
    let csv = "ref,image,scale\nSKU-1,@shirt.png,2\n\"SKU 2, blue\",@dress.png,4\nSKU-3,@shirt.png,\n";
    std::fs::write(dir.path().join("catalogue.csv"), csv).unwrap();
    let out = dir.path().join("out");
    let (code, stdout, stderr) = outcome(
        // SKU-3 is SKU-1's work again: without --no-cache it is a free copy when SKU-1 ended
        // first, and the tokens would depend on the timing.
        &server.batch(
            dir.path(),
            &["upscale", "--items", "catalogue.csv", "--out", out.to_str().unwrap(), "--no-cache"],
        ),
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("uploaded 2 files"), "{stderr}");
    assert!(stderr.contains("3 items, 4 tokens reserved"), "scale 4 costs 2: {stderr}");
    assert!(stderr.contains("3 succeeded, 0 failed, 0 canceled (4 tokens)"), "{stderr}");
    assert_eq!(stdout.trim(), out.join("results.jsonl").display().to_string());
    let lines = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), 3);
    let first = decode(&std::fs::read(out.join("SKU-1/output_0.png")).unwrap());
    assert_eq!((first.width(), first.height()), (40, 28));
    let second = decode(&std::fs::read(out.join("SKU_2__blue/output_0.png")).unwrap());
    assert_eq!((second.width(), second.height()), (64, 96), "scale 4, typed as a number");
    assert!(out.join("SKU-3/output_0.png").exists());

    // JSONL, a shared input, and refusals with their exit codes.
    std::fs::write(
        dir.path().join("items.jsonl"),
        "{\"input\": {\"image\": \"@shirt.png\"}, \"ref\": \"a\"}\n{\"image\": \"@dress.png\"}\n",
    )
    .unwrap();
    let (code, _, stderr) =
        outcome(&server.batch(
            dir.path(),
            &["upscale", "scale=2", "--items", "items.jsonl", "--no-download", "--out", "j"],
        ));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("2 items, 2 tokens reserved"), "{stderr}");
    std::fs::write(dir.path().join("bad.csv"), "ref,scale\nx,9\n").unwrap();
    let (code, _, stderr) =
        outcome(&server.batch(dir.path(), &["upscale", "image=@shirt.png", "--items", "bad.csv"]));
    assert_eq!(code, Some(3), "refused by the server: {stderr}");
    assert!(stderr.contains("items[0].scale"), "{stderr}");
    let (code, _, stderr) = outcome(&server.batch(dir.path(), &["upscale", "--items", "catalogue.txt"]));
    assert_eq!((code, stderr.contains(".jsonl or .csv")), (Some(2), true), "{stderr}");
    let (code, _, _) = outcome(&server.batch(dir.path(), &["--items", "catalogue.csv"]));
    assert_eq!(code, Some(2), "no tool");
}
