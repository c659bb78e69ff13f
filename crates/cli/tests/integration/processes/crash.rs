//! Crash tests with real processes: two API processes (`atelier serve --no-workers`) and
//! `atelier worker` processes on PostgreSQL and S3-compatible storage (moto), killed with
//! SIGKILL, stopped with SIGSTOP past their lease, stopped with SIGTERM, and restarted with
//! hundreds of runs queued. After each scenario the books are checked from the database and
//! the bucket, not from what the processes say: every run succeeded, every node succeeded
//! once with its outputs, the ledger charged exactly the succeeded nodes once per run, the
//! balance is the grant less the charges, and the bucket holds exactly the recorded outputs.
//!
//! The tests take turns (one cluster at a time): on a two-core machine, clusters running
//! side by side would starve each other's heartbeats and make lease timing noise.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use atelier_testkit::moto::MotoServer;
use futures::StreamExt as _;
use serde_json::{json, Value};

use atelier_testkit::pg::PgSchema;

const BIN: &str = env!("CARGO_BIN_EXE_atelier");
const BUCKET: &str = "atelier-crash";
/// The bucket prefix of the cluster's storage URL (`s3://BUCKET/PREFIX`).
const PREFIX: &str = "o";
/// Tokens of the test account: far more than any test spends.
const GRANT: i64 = 1_000_000;

/// One `atelier` process.
struct Proc {
    name: String,
    child: Child,
    /// Its stdout and stderr: the tracing log (on stdout) and start-up lines.
    log: PathBuf,
    /// `http://127.0.0.1:PORT` of an API process.
    addr: Option<String>,
    exited: Option<ExitStatus>,
}

impl Proc {
    fn alive(&mut self) -> bool {
        if self.exited.is_none() {
            self.exited = self.child.try_wait().unwrap();
        }
        self.exited.is_none()
    }

    fn log_text(&self) -> String {
        strip_ansi(&std::fs::read_to_string(&self.log).unwrap_or_default())
    }
}

/// A process of a [`Cluster`], by its index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ProcId(usize);

/// A fresh PostgreSQL schema, a moto server with one bucket, one account, and the `atelier`
/// processes started on them. Dropping it kills every process (stopped ones too) and drops
/// the schema.
struct Cluster {
    dir: tempfile::TempDir,
    /// Dropped after the processes are killed (fields drop after `Drop::drop`).
    schema: PgSchema,
    env: Vec<(String, String)>,
    procs: Vec<Proc>,
    /// The API processes to submit through and read from, alternately.
    apis: Vec<ProcId>,
    key: String,
    rt: tokio::runtime::Runtime,
    http: reqwest::Client,
    moto: MotoServer,
    _turn: atelier_testkit::service::Alone,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for proc in &mut self.procs {
            if proc.alive() {
                let _ = Command::new("kill").args(["-CONT", &proc.child.id().to_string()]).status();
                let _ = proc.child.kill();
                let _ = proc.child.wait();
            }
        }
    }
}

/// Worker leases shared by every process of a cluster.
struct Leases {
    lease_secs: u64,
    heartbeat_secs: u64,
}

impl Cluster {
    /// A cluster with no process yet and an account with [`GRANT`] tokens, or `None` (after
    /// saying why) when PostgreSQL or moto is missing and not required.
    fn start(worker: Leases) -> Option<Cluster> {
        // Alone: lease timings need the machine's cores, and only one cluster at a time.
        let turn = atelier_testkit::service::exclusive();
        let moto = MotoServer::start(BUCKET)?;
        let schema = PgSchema::create()?;
        let settings = [
            ("ATELIER__STORAGE__S3__ENDPOINT", moto.endpoint.as_str()),
            ("ATELIER__STORAGE__S3__REGION", "us-east-1"),
            ("ATELIER__STORAGE__S3__ACCESS_KEY_ID", "test"),
            ("ATELIER__STORAGE__S3__SECRET_ACCESS_KEY", "test"),
            ("ATELIER__WORKER__POLL_MS", "100"),
            ("ATELIER__WORKER__LEASE_SECS", &worker.lease_secs.to_string()),
            ("ATELIER__WORKER__HEARTBEAT_SECS", &worker.heartbeat_secs.to_string()),
            // Rescues caused by a starved heartbeat on a busy CI machine are legitimate;
            // they must not fail a node.
            ("ATELIER__WORKER__MAX_ATTEMPTS", "5"),
            // These tests are about the queue, not the imagery: hundreds of cut-outs through
            // the learned subject model (seconds each on a shared 2-core machine) would only
            // stretch them past their deadlines. The model has its own tests.
            ("ATELIER__WORKER__SUBJECT_MODEL", "none"),
            // Their loads repeat the same work, and they count each node's execution and
            // charge: the result cache would fill the repeats (it has its own tests).
            ("ATELIER__CACHE__ENABLED", "false"),
            ("RUST_LOG", "info,tower_http=warn,sqlx=warn"),
            ("NO_COLOR", "1"),
        ];
        let mut cluster = Cluster {
            dir: tempfile::tempdir().unwrap(),
            schema,
            env: settings.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            procs: Vec::new(),
            apis: Vec::new(),
            key: String::new(),
            rt: tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap(),
            http: reqwest::Client::new(),
            moto,
            _turn: turn,
        };
        let out = cluster
            .command("admin")
            .args(["admin", "account", "create", "crash", "--tokens", &GRANT.to_string(), "--json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let created: Value = serde_json::from_slice(&out.stdout).unwrap();
        cluster.key = created["api_key"].as_str().unwrap().to_string();
        Some(cluster)
    }

    /// `atelier` on the cluster's database and bucket; `name` becomes the PostgreSQL
    /// `application_name` of its connections.
    fn command(&self, name: &str) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.arg("--data-dir")
            .arg(self.dir.path())
            .arg("--database-url")
            .arg(format!("{}&application_name={name}", self.schema.url))
            .arg("--storage-url")
            .arg(format!("s3://{BUCKET}/{PREFIX}"))
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    /// Spawns a process with its stdout and stderr in one file of the temp dir, without
    /// waiting for it to be ready.
    fn launch(&mut self, name: &str, args: &[&str], env: &[(&str, &str)]) -> ProcId {
        let name = format!("{name}-{}", self.procs.len());
        let mut command = self.command(&name);
        command.args(args).envs(env.iter().copied());
        self.run_logged(name, command)
    }

    /// Spawns `command` as process `name`, its stdout and stderr in one file of the temp dir.
    fn run_logged(&mut self, name: String, mut command: Command) -> ProcId {
        let log = self.dir.path().join(format!("{name}.log"));
        let file = File::create(&log).unwrap();
        let child = command.stderr(file.try_clone().unwrap()).stdout(file).spawn().unwrap();
        let id = ProcId(self.procs.len());
        self.procs.push(Proc { name, child, log, addr: None, exited: None });
        id
    }

    /// [`Cluster::launch`], then waits for the line that starts with `ready` (returned).
    fn spawn(&mut self, name: &str, args: &[&str], env: &[(&str, &str)], ready: &str) -> (ProcId, String) {
        let id = self.launch(name, args, env);
        (id, self.wait_ready(id, ready))
    }

    /// Waits for process `id`'s first log line that starts with `ready`, and returns it.
    fn wait_ready(&mut self, id: ProcId, ready: &str) -> String {
        let (name, log) = (self.procs[id.0].name.clone(), self.procs[id.0].log.clone());
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if let Some(line) = text.lines().find(|l| l.starts_with(ready)) {
                return line.to_string();
            }
            if !self.procs[id.0].alive() || Instant::now() > deadline {
                self.fail(&format!("{name} did not start ({ready:?} never printed)"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Starts an API-only process (`serve --no-workers`) and adds it to the APIs in use.
    fn start_api(&mut self) -> ProcId {
        let args = ["serve", "--no-workers", "--listen", "127.0.0.1:0"];
        let (id, line) = self.spawn("api", &args, &[], "Atelier listening on ");
        self.procs[id.0].addr = Some(line["Atelier listening on ".len()..].to_string());
        self.apis.push(id);
        id
    }

    /// Starts `atelier worker --workers SLOTS` with extra environment.
    fn start_worker(&mut self, name: &str, slots: usize, env: &[(&str, &str)]) -> ProcId {
        let slots = slots.to_string();
        self.spawn(name, &["worker", "--workers", &slots], env, "Atelier worker running").0
    }

    /// Starts `atelier worker --server API --token TOKEN --workers SLOTS`: a pull worker, with
    /// no database or storage settings (it reaches both through the API at `api`).
    fn start_pull_worker(
        &mut self,
        name: &str,
        slots: usize,
        api: ProcId,
        token: &str,
        env: &[(&str, &str)],
    ) -> ProcId {
        let name = format!("{name}-{}", self.procs.len());
        let server = self.procs[api.0].addr.clone().unwrap();
        let slots = slots.to_string();
        let own = self.env.iter().filter(|(k, _)| !k.starts_with("ATELIER__STORAGE__"));
        let mut command = Command::new(BIN);
        command
            .arg("--data-dir")
            .arg(self.dir.path().join(&name))
            .args(["worker", "--workers", &slots, "--server", &server, "--token", token])
            .envs(own.map(|(k, v)| (k, v)))
            .envs(env.iter().copied());
        let id = self.run_logged(name, command);
        self.wait_ready(id, "Atelier pull worker running");
        id
    }

    /// A worker token for `tools` (comma-separated).
    fn worker_token(&self, tools: &str) -> String {
        let out = self
            .command("admin")
            .args(["admin", "worker-token", "create", "--tools", tools, "--json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let made: Value = serde_json::from_slice(&out.stdout).unwrap();
        made["token"].as_str().unwrap().to_string()
    }

    /// Sets an environment variable of every process started from now on.
    fn set_env(&mut self, key: &str, value: &str) {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_string(), value.to_string()));
    }

    fn pid(&self, id: ProcId) -> u32 {
        self.procs[id.0].child.id()
    }

    /// Sends `signal` (`STOP`, `CONT`, `TERM`) to a process.
    fn signal(&self, id: ProcId, signal: &str) {
        let sent = Command::new("kill").args([&format!("-{signal}"), &self.pid(id).to_string()]).status();
        assert!(sent.unwrap().success(), "kill -{signal} {}", self.procs[id.0].name);
    }

    /// SIGKILL, and forget it as an API.
    fn kill(&mut self, id: ProcId) {
        let proc = &mut self.procs[id.0];
        proc.child.kill().unwrap();
        proc.exited = Some(proc.child.wait().unwrap());
        self.apis.retain(|a| *a != id);
    }

    /// Waits for a process to exit by itself; returns its status and how long that took.
    fn wait_exit(&mut self, id: ProcId, timeout: Duration) -> (ExitStatus, Duration) {
        let started = Instant::now();
        let deadline = started + timeout;
        while self.procs[id.0].alive() {
            if Instant::now() > deadline {
                self.fail(&format!("{} did not exit within {timeout:?}", self.procs[id.0].name));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.apis.retain(|a| *a != id);
        (self.procs[id.0].exited.unwrap(), started.elapsed())
    }

    fn log(&self, id: ProcId) -> String {
        self.procs[id.0].log_text()
    }

    /// Panics with `msg` and the end of every process's log.
    fn fail(&self, msg: &str) -> ! {
        let mut text = format!("{msg}\n");
        for proc in &self.procs {
            let log = proc.log_text();
            let lines: Vec<&str> = log.lines().collect();
            let tail = &lines[lines.len().saturating_sub(25)..];
            text.push_str(&format!(
                "---- {} (pid {}, {:?}): last {} of {} log lines\n{}\n",
                proc.name,
                proc.child.id(),
                proc.exited,
                tail.len(),
                lines.len(),
                tail.join("\n")
            ));
        }
        panic!("{text}");
    }

    fn wait_until(&self, what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + timeout;
        while !done() {
            if Instant::now() > deadline {
                let tasks = self.sql("SELECT state, count(*) FROM tasks GROUP BY state ORDER BY state");
                self.fail(&format!("timed out after {timeout:?} waiting until {what}; tasks: {tasks:?}"));
            }
            // Each check is a psql process: often enough to keep the tests short, rarely
            // enough not to compete with the cluster for the CPU.
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Rows of a query on the cluster's schema, columns split.
    fn sql(&self, query: &str) -> Vec<Vec<String>> {
        let out = Command::new("psql")
            .args([
                self.schema.url.as_str(),
                "-v",
                "ON_ERROR_STOP=1",
                "-X",
                "-A",
                "-t",
                "-F",
                "\x1f",
                "-c",
                query,
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{query}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .filter(|l| !l.is_empty())
            .map(|l| l.split('\x1f').map(str::to_string).collect())
            .collect()
    }

    /// The one number a query answers.
    fn number(&self, query: &str) -> i64 {
        let rows = self.sql(query);
        rows[0][0].parse().unwrap_or_else(|_| panic!("{query}: {rows:?}"))
    }

    /// Waits until the maintenance lead (the rescuer) is held, and returns the
    /// `application_name` of the process that holds it.
    /// Starts the two API processes and waits until one of them leads maintenance (the
    /// rescuer runs there, so a worker a test stops or kills never holds the lead); returns
    /// the leader's name.
    fn start_apis_leading_maintenance(&mut self) -> String {
        self.start_api();
        self.start_api();
        let leader = self.wait_maintenance_leader();
        assert!(leader.starts_with("api"), "maintenance is led by {leader}");
        leader
    }

    fn wait_maintenance_leader(&self) -> String {
        // pg_try_advisory_lock(bigint) shows as classid = high and objid = low 32 bits.
        let query = "WITH k AS (SELECT hashtext(current_schema() || ':atelier-maintenance')::BIGINT AS h)
             SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid, k
             WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
               AND l.classid = ((k.h >> 32) & 4294967295)::OID AND l.objid = (k.h & 4294967295)::OID";
        let mut leader = String::new();
        self.wait_until("a process leads maintenance", Duration::from_secs(20), || {
            leader = self.sql(query).first().map(|r| r[0].clone()).unwrap_or_default();
            !leader.is_empty()
        });
        leader
    }

    /// Submits every run, alternating between the APIs in use (4 requests at a time);
    /// returns the run ids in order.
    fn submit(&self, runs: &[Submission]) -> Vec<String> {
        let apis: Vec<String> = self.apis.iter().map(|id| self.procs[id.0].addr.clone().unwrap()).collect();
        assert!(!apis.is_empty(), "no API to submit to");
        let requests = runs.iter().enumerate().map(|(i, run)| {
            let url = format!("{}{}", apis[i % apis.len()], run.path);
            let request = self.http.post(url).header("X-API-KEY", &self.key).json(&run.body);
            async move {
                let answer: Value = match request.send().await {
                    Ok(response) => response.json().await.unwrap_or(Value::Null),
                    Err(e) => json!({"transport error": e.to_string()}),
                };
                answer["id"].as_str().map(str::to_string).ok_or(format!("run {i}: {answer}"))
            }
        });
        let ids: Vec<Result<String, String>> =
            self.rt.block_on(futures::stream::iter(requests).buffered(4).collect());
        ids.into_iter()
            .map(|r| r.unwrap_or_else(|e| self.fail(&format!("submission refused: {e}"))))
            .collect()
    }

    /// `GET /api/v3/status/{id}` from the `i`-th API in use (modulo their number).
    fn status(&self, i: usize, id: &str) -> Value {
        let api = self.procs[self.apis[i % self.apis.len()].0].addr.clone().unwrap();
        let request = self.http.get(format!("{api}/api/v3/status/{id}")).header("X-API-KEY", &self.key);
        self.rt.block_on(async { request.send().await.unwrap().json().await.unwrap() })
    }

    fn get_bytes(&self, url: &str) -> Vec<u8> {
        self.rt.block_on(async { self.http.get(url).send().await.unwrap().bytes().await.unwrap().to_vec() })
    }

    fn finished_runs(&self) -> i64 {
        self.number("SELECT count(*) FROM runs WHERE status NOT IN ('queued', 'running')")
    }

    fn wait_all_finished(&self, timeout: Duration) {
        self.wait_until("every run finished", timeout, || {
            self.number("SELECT count(*) FROM runs WHERE status IN ('queued', 'running')") == 0
        });
    }

    /// Every object in the cluster's bucket prefix: key (as recorded, without the prefix) →
    /// "ETag size". Read through moto's S3 interface (ListObjectsV2, paged).
    fn bucket_objects(&self) -> BTreeMap<String, String> {
        let mut objects = BTreeMap::new();
        let mut token: Option<String> = None;
        loop {
            let mut query = vec![("list-type", "2".to_string()), ("prefix", format!("{PREFIX}/"))];
            if let Some(t) = &token {
                query.push(("continuation-token", t.clone()));
            }
            let request = self.http.get(format!("{}/{BUCKET}", self.moto.endpoint)).query(&query);
            let xml = self.rt.block_on(async { request.send().await.unwrap().text().await.unwrap() });
            for entry in xml.split("<Contents>").skip(1) {
                let key = tag(entry, "Key").unwrap_or_else(|| panic!("listing: {xml}"));
                let key = key.strip_prefix(&format!("{PREFIX}/")).unwrap().to_string();
                let meta =
                    format!("{} {}", tag(entry, "ETag").unwrap_or(""), tag(entry, "Size").unwrap_or(""));
                objects.insert(key, meta);
            }
            token = tag(&xml, "NextContinuationToken").map(str::to_string);
            if tag(&xml, "IsTruncated") != Some("true") || token.is_none() {
                return objects;
            }
        }
    }

    /// `(run, node)` of every "node finished" line in the logs of `procs`, with duplicates.
    fn finished_lines(&self, procs: &[ProcId]) -> Vec<(String, String)> {
        procs
            .iter()
            .flat_map(|id| {
                let log = self.log(*id);
                log.lines()
                    .filter(|l| l.contains("node finished"))
                    .map(|l| (field(l, "run").unwrap().to_string(), field(l, "node").unwrap().to_string()))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    fn workers(&self) -> Vec<ProcId> {
        (0..self.procs.len()).map(ProcId).filter(|id| self.procs[id.0].addr.is_none()).collect()
    }

    /// Checks the books once every run has finished: `runs` runs, all succeeded; every node
    /// succeeded once with its outputs and a completed task; per run one reservation, one
    /// charge equal to the succeeded nodes' prices and one release of the rest; the balance is
    /// the grant less the charges, which total `charge`; the bucket holds exactly the
    /// recorded output keys; and no worker log reports a node finished twice. `lost_slots`:
    /// how many completions killed workers may have committed without living to log them.
    fn assert_books(&self, runs: usize, charge: i64, lost_slots: usize) {
        let statuses = self.sql("SELECT status, count(*) FROM runs GROUP BY status");
        assert_eq!(statuses, vec![vec!["succeeded".to_string(), runs.to_string()]], "runs by status");
        let bad_nodes = self.sql(
            "SELECT n.run_id, n.name, n.status, n.outputs, t.state FROM nodes n
             LEFT JOIN tasks t ON t.run_id = n.run_id AND t.node = n.name
             WHERE n.status <> 'succeeded' OR n.outputs IS NULL OR n.outputs = '[]'
                OR t.state IS DISTINCT FROM 'completed' OR t.lease_owner IS NOT NULL",
        );
        assert!(bad_nodes.is_empty(), "nodes not succeeded once with outputs: {bad_nodes:?}");
        let tasks = self.number("SELECT count(*) FROM tasks");
        let nodes = self.number("SELECT count(*) FROM nodes");
        assert_eq!(tasks, nodes, "one task per node");

        let bad_ledger = self.sql(
            "WITH l AS (
                 SELECT run_id,
                     count(*) FILTER (WHERE kind = 'reserve') AS reserves,
                     count(*) FILTER (WHERE kind = 'charge') AS charges,
                     count(*) FILTER (WHERE kind = 'release') AS releases,
                     sum(amount) FILTER (WHERE kind = 'reserve') AS reserved,
                     sum(amount) FILTER (WHERE kind = 'charge') AS charged,
                     sum(amount) FILTER (WHERE kind = 'release') AS released
                 FROM ledger WHERE run_id IS NOT NULL GROUP BY run_id),
             n AS (SELECT run_id, sum(price) AS price FROM nodes WHERE status = 'succeeded' GROUP BY run_id)
             SELECT r.id, l.reserves, l.charges, l.releases, l.reserved, l.charged, l.released, n.price,
                 r.reserved, r.charged
             FROM runs r LEFT JOIN l ON l.run_id = r.id LEFT JOIN n ON n.run_id = r.id
             WHERE (l.reserves = 1 AND l.charges = 1 AND l.releases = 1 AND l.charged = n.price
                    AND l.reserved = r.reserved AND l.charged = r.charged
                    AND l.reserved = l.charged + l.released) IS NOT TRUE",
        );
        assert!(
            bad_ledger.is_empty(),
            "runs whose ledger does not match their succeeded nodes: {bad_ledger:?}"
        );
        let stray = self.number(
            "SELECT count(*) FROM ledger WHERE kind <> 'grant' AND run_id NOT IN (SELECT id FROM runs)",
        );
        assert_eq!(stray, 0, "ledger entries of no run");
        let charged = self.number("SELECT COALESCE(sum(amount), 0) FROM ledger WHERE kind = 'charge'");
        assert_eq!(charged, charge, "total charge");
        let balance = self.number("SELECT balance FROM accounts WHERE name = 'crash'");
        assert_eq!(balance, GRANT - charge, "balance = grant - charges");
        let grants = self.number("SELECT sum(amount) FROM ledger WHERE kind = 'grant'");
        assert_eq!(grants, GRANT, "one grant");

        let mut recorded: BTreeSet<String> = self
            .sql("SELECT outputs FROM nodes")
            .iter()
            .flat_map(|row| serde_json::from_str::<Vec<String>>(&row[0]).unwrap())
            .collect();
        // Inline images are kept as stored inputs (`inputs/<account>/<id>-<digest>`).
        recorded.extend(
            self.sql("SELECT 'inputs/' || account_id || '/' || id || '-' || digest FROM inputs")
                .into_iter()
                .map(|row| row[0].clone()),
        );
        let stored: BTreeSet<String> = self.bucket_objects().into_keys().collect();
        let extra: Vec<_> = stored.difference(&recorded).collect();
        let missing: Vec<_> = recorded.difference(&stored).collect();
        assert!(
            extra.is_empty() && missing.is_empty(),
            "bucket vs recorded: extra {extra:?}, missing {missing:?}"
        );

        let lines = self.finished_lines(&self.workers());
        let mut seen = BTreeSet::new();
        let twice: Vec<_> = lines.iter().filter(|l| !seen.insert(*l)).collect();
        assert!(twice.is_empty(), "nodes reported finished twice: {twice:?}");
        let unlogged = usize::try_from(nodes).unwrap() - seen.len();
        assert!(unlogged <= lost_slots, "{unlogged} completions no worker logged (at most {lost_slots})");
    }
}

/// The text of the first `<name>…</name>` element.
fn tag<'a>(xml: &'a str, name: &str) -> Option<&'a str> {
    let start = xml.find(&format!("<{name}>"))? + name.len() + 2;
    let len = xml[start..].find(&format!("</{name}>"))?;
    Some(&xml[start..start + len])
}

/// The value of ` name=value` in a tracing line, unquoted.
fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let start = line.find(&format!(" {name}="))? + name.len() + 2;
    let rest = &line[start..];
    Some(rest[..rest.find(' ').unwrap_or(rest.len())].trim_matches('"'))
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A `w`×`h` gradient PNG as base64.
fn png_base64(w: u32, h: u32, k: [u32; 3]) -> String {
    use base64::Engine as _;
    let img =
        image::RgbImage::from_fn(w, h, |x, y| image::Rgb([(x * k[0]) as u8, (y * k[1]) as u8, k[2] as u8]));
    let mut png = std::io::Cursor::new(Vec::new());
    img.write_to(&mut png, image::ImageFormat::Png).unwrap();
    base64::engine::general_purpose::STANDARD.encode(png.into_inner())
}

/// A run to submit: endpoint, body, its price in tokens and its number of nodes.
struct Submission {
    path: &'static str,
    body: Value,
    price: i64,
    nodes: usize,
}

fn upscale(image: &str) -> Submission {
    let body = json!({"type": "node", "target": "upscale", "input": {"image": image, "scale": 2}});
    Submission { path: "/api/v3/run", body, price: 1, nodes: 1 }
}

/// The system workflow: a product shoot, then three reframes of it in parallel. Its reframes
/// of the shoot's full-size output are the slowest nodes here (about 1 s each in a debug
/// build), so loads use it sparingly.
fn product_reframes(image: &str) -> Submission {
    let body =
        json!({"type": "workflow", "target": "product-reframes", "input": {"Shoot.product_image": image}});
    Submission { path: "/api/v3/run", body, price: 5, nodes: 4 }
}

/// `n` runs of a mixed load on a 24×32 image: every `workflow_every`-th is the
/// `product-reframes` workflow, the others cycle through `upscale`, `background_removal`,
/// `reframe` (v3 node runs) and a v2 try-on.
fn load(n: usize, workflow_every: usize) -> Vec<Submission> {
    let image = png_base64(24, 32, [9, 7, 60]);
    let single = |body: Value| Submission { path: "/api/v3/run", body, price: 1, nodes: 1 };
    (0..n)
        .map(|i| match (i % workflow_every == workflow_every - 1, i % 4) {
            (true, _) => product_reframes(&image),
            (false, 0) => upscale(&image),
            (false, 1) => single(json!({"type": "node", "target": "background_removal", "input": {"image": image}})),
            (false, 2) => single(
                json!({"type": "node", "target": "reframe", "input": {"image": image, "aspect_ratio": "1:1"}}),
            ),
            (false, _) => Submission {
                path: "/api/v2/tryon/run",
                body: json!({"category": "top", "model_image": image, "garment_image": image, "seed": i}),
                price: 1,
                nodes: 1,
            },
        })
        .collect()
}

/// One task row: state, attempt, lease epoch, lease owner, errors.
fn task(c: &Cluster, run: &str, node: &str) -> Vec<String> {
    let rows = c.sql(&format!(
        "SELECT state, attempt, lease_epoch, COALESCE(lease_owner, ''), errors FROM tasks
         WHERE run_id = '{run}' AND node = '{node}'"
    ));
    rows.into_iter().next().unwrap_or_default()
}

/// (a) 200 mixed runs (four tools, the `product-reframes` workflow, v2 try-on) submitted
/// through both APIs alternately all succeed, read back through the other API; each node ran
/// once (attempt 1, no error, one "node finished" line), and the books balance.
#[test]
fn two_apis_and_two_workers_complete_200_mixed_runs_once() {
    let Some(mut c) = Cluster::start(Leases { lease_secs: 10, heartbeat_secs: 2 }) else { return };
    let started = Instant::now();
    c.start_api();
    c.start_api();
    c.start_worker("w", 2, &[]);
    c.start_worker("w", 2, &[]);
    let runs = load(200, 8);
    let ids = c.submit(&runs);
    c.wait_all_finished(Duration::from_secs(120));

    // Every run succeeded, read through the API that did not accept it.
    for (i, id) in ids.iter().enumerate() {
        let status = c.status(i + 1, id);
        assert_eq!(status["overall_status"], "succeeded", "{id}: {status}");
    }
    // One output by measurable property: the upscale doubled 24×32.
    let status = c.status(1, &ids[0]);
    let png = c.get_bytes(status["output"][0].as_str().unwrap());
    let decoded = image::load_from_memory(&png).unwrap();
    assert_eq!((decoded.width(), decoded.height()), (48, 64));

    c.assert_books(200, runs.iter().map(|r| r.price).sum(), 0);
    // Nothing was rescued or retried: no lease ran out, no node ran twice.
    let retried =
        c.sql("SELECT run_id, node, attempt, errors FROM tasks WHERE attempt <> 1 OR errors <> '[]'");
    assert!(retried.is_empty(), "{retried:?}");
    let nodes: usize = runs.iter().map(|r| r.nodes).sum();
    assert_eq!(c.finished_lines(&c.workers()).len(), nodes, "one 'node finished' per node");
    eprintln!("200 runs: {:?}", started.elapsed());
}

/// (b) SIGKILL of a worker holding tasks: an API process (the maintenance leader) rescues
/// them, the other worker runs them again (attempt 2, `WorkerLost` recorded, new epoch), every
/// run succeeds and the books balance.
#[test]
fn kill_9_of_a_worker_mid_load_loses_no_run_and_charges_each_node_once() {
    let Some(mut c) = Cluster::start(Leases { lease_secs: 2, heartbeat_secs: 1 }) else { return };
    let started = Instant::now();
    let leader = c.start_apis_leading_maintenance();
    let slow = [("ATELIER__WORKER__SIMULATED_LATENCY_MS", "150")];
    let victim = c.start_worker("victim", 2, &slow);
    c.start_worker("survivor", 2, &slow);
    let runs = load(80, 8);
    c.submit(&runs);

    // In the middle: some runs done, and the victim holds tasks.
    let owner = format!("{}-%", c.pid(victim));
    let held = format!("SELECT count(*) FROM tasks WHERE state = 'running' AND lease_owner LIKE '{owner}'");
    c.wait_until("some runs are done and the victim holds a task", Duration::from_secs(60), || {
        c.finished_runs() >= 10 && c.number(&held) > 0
    });
    // Frozen first, so what it holds cannot change while it is read.
    c.signal(victim, "STOP");
    std::thread::sleep(Duration::from_millis(100));
    let in_flight = c.sql(&format!(
        "SELECT run_id, node, lease_epoch FROM tasks WHERE state = 'running' AND lease_owner LIKE '{owner}'"
    ));
    c.kill(victim);
    assert!(!in_flight.is_empty(), "the victim held no task when killed");

    c.wait_all_finished(Duration::from_secs(90));
    c.assert_books(80, runs.iter().map(|r| r.price).sum(), 2);
    for row in &in_flight {
        let (run, node, epoch) = (&row[0], &row[1], row[2].parse::<i64>().unwrap());
        let t = task(&c, run, node);
        assert_eq!(t[0], "completed", "{run}/{node}: {t:?}");
        assert!(t[1].parse::<i64>().unwrap() >= 2, "{run}/{node} ran again after the kill: {t:?}");
        assert!(t[2].parse::<i64>().unwrap() > epoch, "{run}/{node} was claimed again: {t:?}");
        assert!(t[4].contains("WorkerLost"), "{run}/{node}: the lost attempt is recorded: {t:?}");
    }
    let leader_log = c.log(c.procs.iter().position(|p| p.name == leader).map(ProcId).unwrap());
    assert!(
        leader.starts_with("api") && leader_log.contains("rescued tasks with expired leases"),
        "{leader}"
    );
    eprintln!("kill -9 ({} tasks in flight): {:?}", in_flight.len(), started.elapsed());
}

/// (e) Pull workers: an API pair, one database worker and two pull workers (no database or
/// bucket settings; they lease over HTTP with a worker token) share 80 runs. One pull worker
/// is killed (-9) while it holds tasks: its leases expire, the rescuer re-queues them, the
/// others run them again (a new epoch; `WorkerLost` recorded), and the books balance exactly,
/// outputs and all.
#[test]
fn kill_9_of_a_pull_worker_mid_load_loses_no_run_and_charges_each_node_once() {
    let Some(mut c) = Cluster::start(Leases { lease_secs: 2, heartbeat_secs: 1 }) else { return };
    let started = Instant::now();
    c.start_apis_leading_maintenance();
    let token = c.worker_token("upscale,background_removal,reframe,virtual_tryon");
    let slow = [("ATELIER__WORKER__SIMULATED_LATENCY_MS", "150")];
    let (first_api, second_api) = (c.apis[0], c.apis[1]);
    c.start_worker("db", 2, &slow);
    let victim = c.start_pull_worker("pull", 2, first_api, &token, &slow);
    let survivor = c.start_pull_worker("pull", 2, second_api, &token, &slow);
    let runs = load(80, 8);
    c.submit(&runs);

    let owner = format!("atw_%/{}-%", c.pid(victim));
    let held = format!("SELECT count(*) FROM tasks WHERE state = 'running' AND lease_owner LIKE '{owner}'");
    c.wait_until("some runs are done and the pull worker holds a task", Duration::from_secs(60), || {
        c.finished_runs() >= 10 && c.number(&held) > 0
    });
    c.signal(victim, "STOP");
    std::thread::sleep(Duration::from_millis(100));
    let in_flight = c.sql(&format!(
        "SELECT run_id, node, lease_epoch FROM tasks WHERE state = 'running' AND lease_owner LIKE '{owner}'"
    ));
    c.kill(victim);
    assert!(!in_flight.is_empty(), "the pull worker held no task when killed");

    c.wait_all_finished(Duration::from_secs(90));
    c.assert_books(80, runs.iter().map(|r| r.price).sum(), 2);
    for row in &in_flight {
        let (run, node, epoch) = (&row[0], &row[1], row[2].parse::<i64>().unwrap());
        let t = task(&c, run, node);
        assert_eq!(t[0], "completed", "{run}/{node}: {t:?}");
        assert!(t[2].parse::<i64>().unwrap() > epoch, "{run}/{node} was claimed again: {t:?}");
        assert!(t[4].contains("WorkerLost"), "{run}/{node}: the lost attempt is recorded: {t:?}");
    }
    let by_survivor = c.finished_lines(&[survivor]).len();
    assert!(by_survivor > 0, "the surviving pull worker ran nodes too");
    eprintln!(
        "pull worker kill -9 ({} tasks in flight; the other pull worker finished {by_survivor} nodes): {:?}",
        in_flight.len(),
        started.elapsed()
    );
}

/// Everything the database and the bucket say about one run.
fn snapshot(c: &Cluster, run: &str) -> (Vec<Vec<String>>, BTreeMap<String, String>) {
    let mut rows = c.sql(&format!(
        "SELECT 'run', status, charged, finished_at, COALESCE(error, '') FROM runs WHERE id = '{run}'"
    ));
    rows.extend(c.sql(&format!(
        "SELECT 'node', name, status, outputs, finished_at FROM nodes WHERE run_id = '{run}' ORDER BY name"
    )));
    rows.extend(c.sql(&format!(
        "SELECT 'task', node, state, attempt, lease_epoch, errors, finalized_at FROM tasks
         WHERE run_id = '{run}' ORDER BY node"
    )));
    rows.extend(c.sql("SELECT 'ledger', id, kind, amount, COALESCE(run_id, '') FROM ledger ORDER BY id"));
    rows.extend(c.sql("SELECT 'account', balance FROM accounts"));
    (rows, c.bucket_objects())
}

/// (c) A worker stopped (SIGSTOP) inside a node for longer than its lease: the rescuer
/// re-queues the node, another worker completes the run, and when the stopped worker resumes
/// (SIGCONT) it finds its claim gone and changes nothing in the database or the bucket.
///
/// On resume its heartbeat tick is overdue, so in practice the heartbeat finds the epoch
/// changed ("lease lost") before the node can reach its fenced completion ("completion fenced
/// off"); either is accepted. The fenced completion itself is covered by the store's suite.
#[test]
fn a_worker_stopped_past_its_lease_is_rescued_and_its_late_completion_changes_nothing() {
    let Some(mut c) = Cluster::start(Leases { lease_secs: 2, heartbeat_secs: 1 }) else { return };
    let started = Instant::now();
    c.start_apis_leading_maintenance();
    let stale = c.start_worker("stale", 1, &[("ATELIER__WORKER__SIMULATED_LATENCY_MS", "3000")]);
    let image = png_base64(24, 32, [3, 5, 200]);
    let run = c.submit(&[product_reframes(&image)]).remove(0);

    // Caught in flight: the stale worker claimed Shoot and is inside the tool (3 s).
    let owner = format!("{}-", c.pid(stale));
    c.wait_until("the worker runs Shoot", Duration::from_secs(20), || {
        let t = task(&c, &run, "Shoot");
        t.first().is_some_and(|s| s == "running") && t[3].starts_with(&owner)
    });
    c.signal(stale, "STOP");
    let claimed = task(&c, &run, "Shoot");
    let rescuer = c.start_worker("rescuer", 3, &[]);
    c.wait_all_finished(Duration::from_secs(30));

    let shoot = task(&c, &run, "Shoot");
    assert_eq!(shoot[0], "completed");
    assert_eq!(shoot[1], "2", "the rescue counted the lost attempt: {shoot:?}");
    assert!(shoot[2].parse::<i64>().unwrap() >= claimed[2].parse::<i64>().unwrap() + 2, "{shoot:?}");
    assert!(shoot[4].contains("WorkerLost"), "{shoot:?}");
    let rescuer_log = c.log(rescuer);
    assert!(
        rescuer_log.lines().any(|l| l.contains("node finished")
            && field(l, "run") == Some(run.as_str())
            && field(l, "node") == Some("Shoot")
            && field(l, "attempt") == Some("2")),
        "{rescuer_log}"
    );
    let before = snapshot(&c, &run);

    // Resumed: its heartbeat or its completion finds the claim gone, and it writes nothing.
    c.signal(stale, "CONT");
    let mut gave_up = String::new();
    c.wait_until("the resumed worker gives up its claim", Duration::from_secs(20), || {
        let log = c.log(stale);
        gave_up = log
            .lines()
            .find(|l| {
                (l.contains("completion fenced off: the claim was lost") || l.contains("lease lost"))
                    && field(l, "run") == Some(run.as_str())
            })
            .unwrap_or_default()
            .to_string();
        !gave_up.is_empty()
    });
    // A stale completion would have committed before that line; give a straggler a moment.
    std::thread::sleep(Duration::from_millis(500));
    let after = snapshot(&c, &run);
    assert_eq!(before.0, after.0, "database rows changed after the stale worker resumed ({gave_up})");
    assert_eq!(before.1, after.1, "bucket objects changed after the stale worker resumed ({gave_up})");
    assert!(c.procs[stale.0].alive(), "the resumed worker keeps running");
    assert!(c.finished_lines(&[stale]).is_empty(), "the stale worker finished nothing");
    c.assert_books(1, 5, 0);
    eprintln!("SIGSTOP: resumed worker said {:?}; {:?}", gave_up.split(": ").last(), started.elapsed());
}

/// (d) 500 runs queued with no worker, the APIs killed; fresh APIs and workers start, and are
/// all killed again a third of the way through; a third set completes every run once and the
/// books balance.
#[test]
fn a_full_restart_with_500_runs_queued_completes_each_once() {
    let Some(mut c) = Cluster::start(Leases { lease_secs: 2, heartbeat_secs: 1 }) else { return };
    let started = Instant::now();
    let first = [c.start_api(), c.start_api()];
    let runs = load(500, 25);
    let ids = c.submit(&runs);
    let queued = c.number("SELECT count(*) FROM runs WHERE status = 'queued'");
    assert_eq!(queued, 500, "no worker yet: everything waits");
    let touched = c.number("SELECT count(*) FROM tasks WHERE state <> 'available' OR attempt <> 0");
    assert_eq!(touched, 0, "no task claimed");
    let reserved: i64 = runs.iter().map(|r| r.price).sum();
    assert_eq!(c.number("SELECT balance FROM accounts"), GRANT - reserved, "all reserved");
    for api in first {
        c.kill(api);
    }
    eprintln!("500 queued: {:?}", started.elapsed());

    // Fresh processes pick the queue up; kill everything again while they are at it.
    let second = [c.start_api(), c.start_api(), c.start_worker("w", 2, &[]), c.start_worker("w", 2, &[])];
    c.wait_until("a third of the runs are done", Duration::from_secs(60), || c.finished_runs() >= 170);
    let in_flight = c.number("SELECT count(*) FROM tasks WHERE state = 'running'");
    for id in second {
        c.kill(id);
    }
    eprintln!("killed everything with {in_flight} tasks running: {:?}", started.elapsed());

    c.start_api();
    c.start_api();
    c.start_worker("w", 2, &[]);
    c.start_worker("w", 2, &[]);
    c.wait_all_finished(Duration::from_secs(120));
    c.assert_books(500, reserved, 4);
    for (i, id) in ids.iter().enumerate().step_by(25) {
        let status = c.status(i, id);
        assert_eq!(status["overall_status"], "succeeded", "{id}: {status}");
    }
    eprintln!("500 runs after two restarts: {:?}", started.elapsed());
}

/// (e) SIGTERM: a node shorter than the grace finishes on its one claim and the worker exits
/// cleanly without claiming more; a node longer than the grace is given back after the grace
/// (available, attempt not counted, epoch bumped) and completes on another worker as attempt 1.
#[test]
fn sigterm_lets_a_short_node_finish_and_gives_a_long_one_back_without_an_attempt() {
    let Some(mut c) = Cluster::start(Leases { lease_secs: 3, heartbeat_secs: 1 }) else { return };
    let started = Instant::now();
    c.start_apis_leading_maintenance();
    let image = png_base64(24, 32, [4, 6, 10]);

    // A short node (1.5 s) and a long grace (20 s): the node finishes, then the worker exits.
    let patient = c.start_worker(
        "patient",
        1,
        &[("ATELIER__WORKER__SIMULATED_LATENCY_MS", "1500"), ("ATELIER__WORKER__SHUTDOWN_GRACE_SECS", "20")],
    );
    let short = c.submit(&[upscale(&image)]).remove(0);
    let owner = format!("{}-", c.pid(patient));
    c.wait_until("the patient worker runs the node", Duration::from_secs(20), || {
        let t = task(&c, &short, "upscale");
        t.first().is_some_and(|s| s == "running") && t[3].starts_with(&owner)
    });
    c.signal(patient, "TERM");
    // Submitted after SIGTERM: the stopping worker must not take it.
    let long = c.submit(&[upscale(&image)]).remove(0);
    let (code, took) = c.wait_exit(patient, Duration::from_secs(20));
    assert!(code.success(), "{code:?}");
    assert!(took < Duration::from_secs(15), "exited {took:?} after SIGTERM");
    assert_eq!(task(&c, &short, "upscale")[..3], ["completed", "1", "1"], "finished on its one claim");
    assert_eq!(c.status(0, &short)["overall_status"], "succeeded");
    assert_eq!(task(&c, &long, "upscale")[..4], ["available", "0", "0", ""], "not claimed after SIGTERM");

    // A long node (20 s) and a short grace (1 s): the task goes back without an attempt.
    let hasty = c.start_worker(
        "hasty",
        1,
        &[("ATELIER__WORKER__SIMULATED_LATENCY_MS", "20000"), ("ATELIER__WORKER__SHUTDOWN_GRACE_SECS", "1")],
    );
    let owner = format!("{}-", c.pid(hasty));
    c.wait_until("the hasty worker runs the node", Duration::from_secs(20), || {
        let t = task(&c, &long, "upscale");
        t.first().is_some_and(|s| s == "running") && t[3].starts_with(&owner)
    });
    assert_eq!(task(&c, &long, "upscale")[1..3], ["1", "1"]);
    c.signal(hasty, "TERM");
    let (code, took) = c.wait_exit(hasty, Duration::from_secs(15));
    assert!(code.success(), "{code:?}");
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(10),
        "exited {took:?} after SIGTERM: after the 1 s grace, long before the 20 s node"
    );
    // Released: available again, the attempt not counted, the claim fenced off (epoch 2).
    assert_eq!(task(&c, &long, "upscale"), ["available", "0", "2", "", "[]"]);
    assert!(c.finished_lines(&[hasty]).is_empty());
    assert_eq!(c.status(1, &long)["overall_status"], "running", "states only move forward");

    let fresh = c.start_worker("fresh", 1, &[]);
    c.wait_all_finished(Duration::from_secs(20));
    assert_eq!(task(&c, &long, "upscale"), ["completed", "1", "3", "", "[]"], "completed on attempt 1");
    assert_eq!(c.finished_lines(&[fresh]), vec![(long.clone(), "upscale".to_string())]);
    c.assert_books(2, 2, 0);
    eprintln!("SIGTERM: {:?}", started.elapsed());
}

/// How a process ended: `Some(6)` for SIGABRT.
fn signal_of(status: ExitStatus) -> Option<i32> {
    std::os::unix::process::ExitStatusExt::signal(&status)
}

/// (f) A worker aborts (the `after_publish` failpoint, `std::process::abort`) after writing a
/// node's outputs to the bucket and before committing its completion. The objects are there
/// while the task is still running under the dead worker's claim; the rescuer re-queues it,
/// a fresh worker runs it again (attempt 2, `WorkerLost` recorded) and overwrites the same
/// keys; the run succeeds, the bucket holds exactly the recorded outputs
/// and each node is charged once.
#[test]
fn a_worker_dying_between_publishing_outputs_and_committing_is_rescued_and_publishes_once() {
    let Some(mut c) = Cluster::start(Leases { lease_secs: 2, heartbeat_secs: 1 }) else { return };
    let started = Instant::now();
    c.start_apis_leading_maintenance();
    let doomed = c.start_worker("doomed", 1, &[("ATELIER_FAILPOINT", "after_publish")]);
    let image = png_base64(24, 32, [6, 3, 150]);
    let run = c.submit(&[product_reframes(&image)]).remove(0);

    let (status, _) = c.wait_exit(doomed, Duration::from_secs(30));
    assert_eq!(signal_of(status), Some(6), "the worker aborted: {status:?}");
    let died_at = started.elapsed();
    let log = c.log(doomed);
    assert!(log.contains("failpoint reached") && log.contains("after_publish"), "{log}");
    // What the crash left: Shoot's outputs published, its task still held by the dead worker,
    // nothing recorded or charged.
    let left: BTreeMap<String, String> =
        c.bucket_objects().into_iter().filter(|(key, _)| key.starts_with("outputs/")).collect();
    assert!(!left.is_empty(), "the outputs were put before the abort");
    assert!(left.keys().all(|k| k.starts_with(&format!("outputs/{run}/Shoot/"))), "{left:?}");
    let t = task(&c, &run, "Shoot");
    assert_eq!(t[..2], ["running", "1"], "not completed: {t:?}");
    assert!(t[3].starts_with(&format!("{}-", c.pid(doomed))), "still the dead worker's claim: {t:?}");
    let outputs = c.sql(&format!(
        "SELECT COALESCE(outputs, 'none') FROM nodes WHERE run_id = '{run}' AND name = 'Shoot'"
    ));
    assert!(matches!(outputs[0][0].as_str(), "none" | "[]"), "no outputs recorded: {outputs:?}");
    let kinds = c.sql(&format!("SELECT kind FROM ledger WHERE run_id = '{run}' ORDER BY id"));
    assert_eq!(kinds, vec![vec!["reserve".to_string()]], "reserved, nothing charged yet");

    let rescuer = c.start_worker("rescuer", 2, &[]);
    c.wait_all_finished(Duration::from_secs(30));
    let shoot = task(&c, &run, "Shoot");
    assert_eq!(shoot[..2], ["completed", "2"], "{shoot:?}");
    assert!(shoot[4].contains("WorkerLost"), "the lost attempt is recorded: {shoot:?}");
    // Published once: the same keys, overwritten (the same pixels; the bytes differ by the
    // credentials each attempt signed), and no other object of the node.
    let after: Vec<String> =
        c.bucket_objects().into_keys().filter(|k| k.starts_with(&format!("outputs/{run}/Shoot/"))).collect();
    assert_eq!(after, left.keys().cloned().collect::<Vec<_>>(), "the same objects after the rerun");
    assert_eq!(c.finished_lines(&[rescuer]).len(), 4, "the rescuer finished the four nodes");
    assert_eq!(c.status(0, &run)["overall_status"], "succeeded");
    c.assert_books(1, 5, 0);
    eprintln!(
        "after_publish: worker aborted {died_at:?} in with {} objects published; run succeeded once in {:?}",
        left.len(),
        started.elapsed()
    );
}

/// (g) A poison node: every worker that starts a `video` node aborts (the
/// `abort_on_tool:video` failpoint), and a supervisor loop restarts whichever worker died.
/// The video run fails with `WorkerLost` after `max_attempts` (3) attempts, one crash each,
/// costing nothing; the runs submitted with it all succeed on their first attempt (one slot
/// per worker, so a crash loses no bystander), charged once.
#[test]
fn a_poison_node_that_kills_every_worker_fails_after_max_attempts_while_other_runs_succeed() {
    let Some(mut c) = Cluster::start(Leases { lease_secs: 2, heartbeat_secs: 1 }) else { return };
    let started = Instant::now();
    c.set_env("ATELIER__WORKER__MAX_ATTEMPTS", "3");
    c.start_apis_leading_maintenance();
    let poison_env = [("ATELIER_FAILPOINT", "abort_on_tool:video")];
    let args = ["worker", "--workers", "1"];
    let mut workers = [c.launch("w", &args, &poison_env), c.launch("w", &args, &poison_env)];

    let image = png_base64(24, 32, [8, 2, 90]);
    let video = Submission {
        path: "/api/v3/run",
        body: json!({"type": "node", "target": "video", "input": {"image": image}}),
        price: 5,
        nodes: 1,
    };
    let mut runs = vec![video];
    runs.extend(load(24, 12));
    let ids = c.submit(&runs);
    let poison = ids[0].clone();

    // The supervisor: restart any worker that died, until every run has finished.
    let mut crashes = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        for slot in workers.iter_mut() {
            if !c.procs[slot.0].alive() {
                crashes.push((c.procs[slot.0].name.clone(), c.procs[slot.0].exited.unwrap()));
                *slot = c.launch("w", &args, &poison_env);
            }
        }
        if c.number("SELECT count(*) FROM runs WHERE status IN ('queued', 'running')") == 0 {
            break;
        }
        if Instant::now() > deadline {
            c.fail(&format!("runs did not finish; crashes so far: {crashes:?}"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }

    let status = c.status(0, &poison);
    assert_eq!(status["overall_status"], "failed", "{status}");
    assert_eq!(status["error"]["name"], "WorkerLost", "{status}");
    let t = task(&c, &poison, "video");
    assert_eq!(t[..2], ["failed", "3"], "{t:?}");
    assert_eq!(t[4].matches("WorkerLost").count(), 3, "one lost worker per attempt: {t:?}");
    assert_eq!(crashes.len(), 3, "one crash per attempt: {crashes:?}");
    assert!(crashes.iter().all(|(_, s)| signal_of(*s) == Some(6)), "{crashes:?}");
    for (name, _) in &crashes {
        let id = c.procs.iter().position(|p| &p.name == name).map(ProcId).unwrap();
        assert!(c.log(id).contains("failpoint reached"), "{name} died at the failpoint");
    }

    // Everything else succeeded on its first attempt, untouched by the crashes.
    for (i, id) in ids.iter().enumerate().skip(1) {
        assert_eq!(c.status(i, id)["overall_status"], "succeeded", "{id}");
    }
    let bystanders = c.sql(&format!(
        "SELECT run_id, node, attempt, errors FROM tasks WHERE run_id <> '{poison}' AND (attempt <> 1 OR errors <> '[]')"
    ));
    assert!(bystanders.is_empty(), "{bystanders:?}");
    let charged: i64 = runs.iter().skip(1).map(|r| r.price).sum();
    let poison_ledger =
        c.sql(&format!("SELECT kind, amount FROM ledger WHERE run_id = '{poison}' ORDER BY id"));
    let charged_poison: i64 =
        poison_ledger.iter().filter(|r| r[0] == "charge").map(|r| r[1].parse::<i64>().unwrap()).sum();
    assert_eq!(charged_poison, 0, "the poison run costs nothing: {poison_ledger:?}");
    assert_eq!(c.number("SELECT COALESCE(sum(amount), 0) FROM ledger WHERE kind = 'charge'"), charged);
    assert_eq!(c.number("SELECT balance FROM accounts WHERE name = 'crash'"), GRANT - charged);
    assert!(
        c.bucket_objects().keys().all(|k| !k.starts_with(&format!("outputs/{poison}/"))),
        "the poison run published nothing"
    );
    eprintln!(
        "poison: {} crashes, video failed WorkerLost after 3 attempts; {} other runs succeeded; {:?}",
        crashes.len(),
        ids.len() - 1,
        started.elapsed()
    );
}

/// (i) A batch of 300 items (the feeder on the API leading maintenance), every process killed
/// with SIGKILL a third of the way through and started again: every item ends with exactly one
/// run, each run is reserved, charged and released once, the batch's reservation went to its
/// runs and nothing else, and the balance is the grant less one token per item.
#[test]
fn kill_9_of_everything_mid_batch_loses_no_item_and_charges_none_twice() {
    use base64::Engine as _;
    let Some(mut c) = Cluster::start(Leases { lease_secs: 2, heartbeat_secs: 1 }) else { return };
    c.set_env("ATELIER__BATCHES__IN_FLIGHT", "8");
    let started = Instant::now();
    let first = [c.start_api(), c.start_api(), c.start_worker("w", 2, &[]), c.start_worker("w", 2, &[])];
    let api = c.procs[c.apis[0].0].addr.clone().unwrap();
    let image = base64::engine::general_purpose::STANDARD.decode(png_base64(24, 32, [4, 8, 120])).unwrap();
    let upload: Value = c.rt.block_on(async {
        let request = c.http.post(format!("{api}/api/v3/uploads")).header("X-API-KEY", &c.key).body(image);
        request.send().await.unwrap().json().await.unwrap()
    });
    let items: Vec<Value> =
        (0..300).map(|i| json!({"input": {"seed": i}, "ref": format!("SKU-{i:03}")})).collect();
    let body = json!({"type": "node", "target": "upscale", "input": {"image": upload["input"], "scale": 2},
        "items": items});
    let batch: Value = c.rt.block_on(async {
        let request = c.http.post(format!("{api}/api/v3/batches")).header("X-API-KEY", &c.key).json(&body);
        request.send().await.unwrap().json().await.unwrap()
    });
    let batch_id =
        batch["id"].as_str().unwrap_or_else(|| c.fail(&format!("batch refused: {batch}"))).to_string();
    assert_eq!(c.number("SELECT balance FROM accounts WHERE name = 'crash'"), GRANT - 300, "all reserved");
    c.wait_until("a third of the items are done", Duration::from_secs(60), || c.finished_runs() >= 100);
    for id in first {
        c.kill(id);
    }
    eprintln!(
        "killed everything with {} items started: {:?}",
        c.number("SELECT count(*) FROM runs"),
        started.elapsed()
    );

    c.start_api();
    c.start_api();
    c.start_worker("w", 2, &[]);
    c.start_worker("w", 2, &[]);
    c.wait_until("the batch finished", Duration::from_secs(180), || {
        c.sql(&format!("SELECT status FROM batches WHERE id = '{batch_id}'"))[0][0] == "finished"
    });
    // Every item has exactly one run, which succeeded; no run is left without its item.
    let items = c.sql(&format!(
        "SELECT count(*), count(DISTINCT i.run_id), count(*) FILTER (WHERE r.status = 'succeeded'),
                count(*) FILTER (WHERE i.history IS NOT NULL)
         FROM batch_items i LEFT JOIN runs r ON r.id = i.run_id WHERE i.batch_id = '{batch_id}'"
    ));
    let unsucceeded = c.sql(&format!(
        "SELECT r.id, r.status, COALESCE(r.error, ''), (SELECT string_agg(t.state || ':' || t.attempt || ':' || t.errors, ' ')
                                                     FROM tasks t WHERE t.run_id = r.id)
         FROM batch_items i JOIN runs r ON r.id = i.run_id WHERE i.batch_id = '{batch_id}' AND r.status <> 'succeeded'"
    ));
    if items != vec![vec!["300", "300", "300", "0"]] {
        c.fail(&format!("items, their runs, succeeded, retried: {items:?}; not succeeded: {unsucceeded:?}"));
    }
    assert_eq!(c.number("SELECT count(*) FROM runs"), 300, "one run per item, no orphan");
    // Per run: one reservation, one charge of its price, one release of nothing.
    let bad = c.sql(
        "SELECT r.id FROM runs r WHERE (SELECT count(*) FROM ledger l WHERE l.run_id = r.id AND l.kind = 'reserve') <> 1
            OR (SELECT count(*) FROM ledger l WHERE l.run_id = r.id AND l.kind = 'charge' AND l.amount = 1) <> 1
            OR (SELECT count(*) FROM ledger l WHERE l.run_id = r.id AND l.kind = 'release' AND l.amount = 0) <> 1",
    );
    assert!(bad.is_empty(), "runs whose ledger is not reserve, charge 1, release 0: {bad:?}");
    // The batch reserved 300 once and handed all of it to its runs.
    let lines = c.sql(&format!(
        "SELECT kind, sum(amount) FROM ledger WHERE run_id = '{batch_id}' GROUP BY kind ORDER BY kind"
    ));
    assert_eq!(lines, vec![vec!["release", "300"], vec!["reserve", "300"]], "the batch's own lines");
    assert_eq!(c.number("SELECT balance FROM accounts WHERE name = 'crash'"), GRANT - 300);
    assert_eq!(c.number("SELECT sum(amount) FROM ledger WHERE kind = 'charge'"), 300);
    eprintln!("300 items after a kill -9 of everything: {:?}", started.elapsed());
}
