//! `atelier`: one binary, one subcommand per role.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{anyhow, bail, Context};
use atelier_cli::{open_store, templates, Config};
use atelier_core::workflow::{valid_identifier, validate_workflow_name, WorkflowDef};
use clap::{Args, Parser, Subcommand};
use serde_json::json;

#[derive(Parser)]
#[command(name = "atelier", version, about = "Self-hostable fashion image generation service")]
struct Cli {
    /// Configuration file (default: ./atelier.toml if it exists).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// Directory of the database and the stored outputs.
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
    /// Where outputs are stored: file:///path or s3://bucket/prefix (default: DATA_DIR/objects).
    #[arg(long, global = true)]
    storage_url: Option<String>,
    /// The database: sqlite:///path/atelier.db or postgres://… (default: DATA_DIR/atelier.db).
    #[arg(long, global = true)]
    database_url: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP API with in-process workers.
    Serve(ServeArgs),
    /// Run workers only (no HTTP), sharing the database and storage with `serve`.
    Worker(WorkerArgs),
    /// Create or upgrade the database schema and install system templates.
    Migrate,
    /// Manage accounts, keys, tokens and workflows (works while `serve` runs).
    #[command(subcommand)]
    Admin(Admin),
    /// Model servers behind the tools ([engines] and [tools] in the configuration).
    #[command(subcommand)]
    Engines(EnginesCmd),
    /// Run a tool or a saved workflow on a server, follow it and download its outputs.
    Run(atelier_cli::run_cmd::RunArgs),
    /// Run a tool or a saved workflow once per item of a JSONL or CSV file on a server
    /// (POST /api/v3/batches), with a progress bar; writes results.jsonl and the outputs.
    Batch(atelier_cli::batch_cmd::BatchArgs),
}

#[derive(Subcommand)]
enum EnginesCmd {
    /// Check every routed tool against its live server: templates, mapped inputs, model
    /// names and choices. Exits 1 when a tool's configuration is wrong or its server does not
    /// answer.
    Check {
        /// Print the findings as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
struct ServeArgs {
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// Nodes run at once (0 = API only).
    #[arg(long, conflicts_with = "no_workers")]
    workers: Option<usize>,
    /// API only: accept and queue runs, leave executing them to `atelier worker` processes.
    #[arg(long)]
    no_workers: bool,
    /// Accept image URLs on loopback and private addresses (for tests).
    #[arg(long)]
    allow_private_urls: bool,
}

#[derive(Args)]
struct WorkerArgs {
    /// Nodes run at once (default: worker.workers).
    #[arg(long)]
    workers: Option<usize>,
    /// A pull worker: lease tasks from the API at this URL (https://atelier.example) instead
    /// of the database, with --token; no database or storage settings are needed.
    #[arg(long, requires = "token", value_name = "URL")]
    server: Option<String>,
    /// The worker token (atw_…, `atelier admin worker-token create`); also ATELIER_WORKER_TOKEN.
    #[arg(long, env = "ATELIER_WORKER_TOKEN", requires = "server", hide_env_values = true)]
    token: Option<String>,
    /// Accept image URLs on loopback and private addresses (for tests).
    #[arg(long)]
    allow_private_urls: bool,
}

#[derive(Subcommand)]
enum Admin {
    #[command(flatten)]
    Store(StoreAdmin),
    /// Copy an embedded installation to PostgreSQL and object storage, verified.
    ///
    /// Copies accounts, keys, the ledger, workflows, runs and outputs from --from-data-dir to
    /// the database and storage this configuration names (--database-url, --storage-url, or
    /// their settings), then checks row counts, balances, ledger sums and every object's size.
    /// Stop the embedded server first; the target database must be empty.
    MigrateData(MigrateDataArgs),
}

/// The admin commands that work on the configured database.
#[derive(Subcommand)]
enum StoreAdmin {
    #[command(subcommand)]
    Account(AccountCmd),
    #[command(subcommand)]
    Key(KeyCmd),
    #[command(subcommand)]
    Tokens(TokensCmd),
    #[command(subcommand)]
    Workflow(WorkflowCmd),
    /// Tokens of pull workers (`atelier worker --server URL --token T`).
    #[command(subcommand)]
    WorkerToken(WorkerTokenCmd),
    /// Delete an account's runs and batches created before a time, as DELETE
    /// /api/v3/runs/{id} and /api/v3/batches/{id} do: their outputs and stored inline images
    /// now, their content cleared, their ledger lines kept. Unfinished runs and running
    /// batches are left (and counted); running it again finishes an interrupted purge.
    Purge(PurgeArgs),
    /// The audit log: list entries (every account's, newest first), export them all as
    /// JSON Lines, or verify the chain.
    #[command(subcommand)]
    Audit(AuditCmd),
}

#[derive(Subcommand)]
enum AuditCmd {
    /// Entries, newest first.
    List {
        /// Only this account's.
        #[arg(long)]
        account: Option<String>,
        /// Only actions starting with this (`key.`, `session.sign_in_failed`).
        #[arg(long)]
        action: Option<String>,
        /// Only entries at or after this time (RFC 3339, or a date).
        #[arg(long, value_name = "TIME")]
        since: Option<String>,
        #[arg(long, default_value_t = 50)]
        limit: i64,
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// Every entry, oldest first, one JSON object per line, with its hashes: `atelier admin
    /// audit verify --file` checks such a file without the database.
    Export {
        /// Write to this file instead of standard output.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Check the chain: exit 0 when every entry follows from the one before it, 1 with the
    /// first entry that does not.
    Verify {
        /// Check an exported file instead of the database.
        #[arg(long, value_name = "FILE")]
        file: Option<PathBuf>,
    },
}

#[derive(Args)]
struct PurgeArgs {
    /// The account's name.
    #[arg(long)]
    account: String,
    /// Runs and batches created before this time: 2026-11-01T00:00:00Z (RFC 3339), the
    /// service's own form without an offset (UTC), or a date (its midnight, UTC).
    #[arg(long, value_name = "TIME")]
    before: String,
    /// Print {"account", "before", "runs", "batches", "objects", "unfinished", "left"}.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
enum WorkerTokenCmd {
    /// Create a token that may lease the tasks of the tools named, and nothing else; the
    /// token is printed once.
    Create {
        /// Tool names, comma-separated (virtual_tryon,upscale).
        #[arg(long, value_delimiter = ',', required = true)]
        tools: Vec<String>,
        /// Print {"token": T, "prefix": P, "tools": [...]}.
        #[arg(long)]
        json: bool,
    },
    /// List every worker token (prefix, tools, last use, revoked).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Revoke a worker token, given in full or by its prefix (atw_xxxx); its workers'
    /// next requests are refused.
    Revoke { token: String },
}

#[derive(Args)]
struct MigrateDataArgs {
    /// The embedded installation's data directory (holding atelier.db and objects/).
    #[arg(long, value_name = "DIR")]
    from_data_dir: PathBuf,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
enum AccountCmd {
    /// Create an account and print its first API key.
    Create {
        name: String,
        #[arg(long, default_value_t = 0)]
        tokens: i64,
        /// Print {"account": NAME, "api_key": KEY}.
        #[arg(long)]
        json: bool,
    },
    /// Set an account's spend limits, all its keys together (only those named change), and
    /// print its limits and what it used this UTC day and month.
    Limit {
        account: String,
        #[command(flatten)]
        limits: TokenLimitArgs,
        /// Print the limits and usage as JSON (the shape of GET /api/v3/usage's `account`).
        #[arg(long)]
        json: bool,
    },
}

/// Tokens per UTC day and month: a number, `none` (no limit, whatever the configured
/// default) or `default` (follow `[limits]`).
#[derive(Args, Debug, Clone, Copy)]
struct TokenLimitArgs {
    /// Tokens per UTC day.
    #[arg(long, value_name = "N|none|default", allow_negative_numbers = true)]
    daily: Option<atelier_core::spend::LimitArg>,
    /// Tokens per UTC month.
    #[arg(long, value_name = "N|none|default", allow_negative_numbers = true)]
    monthly: Option<atelier_core::spend::LimitArg>,
}

#[derive(Subcommand)]
enum KeyCmd {
    /// Create another API key for an account.
    Create {
        account: String,
        /// The lane of the runs made with this key that name none: interactive, normal
        /// (the default) or bulk.
        #[arg(long)]
        priority: Option<atelier_core::status::Priority>,
        /// How long the outputs of the runs made with this key are kept, in seconds, within
        /// [outputs] min_retention_secs to max_retention_secs; 0 is zero retention.
        #[arg(long, value_name = "SECS")]
        retention_secs: Option<u64>,
        /// What the key may do, comma-separated: run, read, workflows, webhooks, keys
        /// (default: run,read).
        #[arg(long, value_name = "SCOPES", default_value = "run,read")]
        scopes: atelier_core::scopes::Scopes,
        /// Print {"account": NAME, "api_key": KEY, "scopes": [...]}.
        #[arg(long)]
        json: bool,
    },
    /// Set what a key (given in full or by its prefix) may do, comma-separated: run, read,
    /// workflows, webhooks, keys. From its next request on, console sessions included.
    Scopes { key: String, scopes: atelier_core::scopes::Scopes },
    /// Set how long the outputs of the runs made with a key (given in full or by its prefix)
    /// are kept, in seconds (0: zero retention, outputs handed back inline and never stored),
    /// or `default` for the operator's; a run's own retention_secs still wins.
    Retention { key: String, secs: RetentionArg },
    /// Set the lane of the runs made with a key (given in full or by its prefix) that name
    /// none: interactive, normal or bulk.
    Priority { key: String, priority: atelier_core::status::Priority },
    /// Revoke a key, given in full or by its prefix (atl_xxxx).
    Revoke { key: String },
    /// Set a key's spend limits and its cap on running nodes (given in full or by its
    /// prefix; only those named change), and print its limits and what it used this UTC day
    /// and month.
    Limit {
        key: String,
        #[command(flatten)]
        limits: TokenLimitArgs,
        /// Nodes of the key running at once (1 or more), `none` or `default`.
        #[arg(long, value_name = "N|none|default", allow_negative_numbers = true)]
        concurrency: Option<atelier_core::spend::LimitArg>,
        /// Print the limits and usage as JSON (the shape of GET /api/v3/usage's `key`).
        #[arg(long)]
        json: bool,
    },
}

/// Prints a key's or an account's limits and usage.
fn print_spend(what: &str, spend: &atelier_store::SpendUse, json: bool) {
    if json {
        println!("{}", serde_json::to_string(&atelier_api::spend::view(spend)).unwrap_or_default());
        return;
    }
    println!("{what}:");
    for period in [&spend.day, &spend.month] {
        let limit = period.limit.map_or("no limit".to_string(), |n| format!("limit {n}"));
        println!(
            "  {:<5}  {} used, {limit}; resets at {}",
            period.period.as_str(),
            period.used,
            atelier_store::format_time(period.resets_at)
        );
    }
    if let Some(running) = spend.running {
        let cap = spend.concurrency.map_or("no cap".to_string(), |n| format!("cap {n}"));
        println!("  nodes  {running} running, {cap}");
    }
}

/// A setting as the store takes it.
fn setting(arg: Option<atelier_core::spend::LimitArg>) -> Option<atelier_core::spend::Setting> {
    arg.map(|a| a.0)
}

/// `atelier admin key retention KEY SECS|default`.
#[derive(Debug, Clone, Copy)]
enum RetentionArg {
    Secs(u64),
    Default,
}

impl std::str::FromStr for RetentionArg {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "default" => Ok(Self::Default),
            _ => s.parse().map(Self::Secs).map_err(|_| "a whole number of seconds, or 'default'".to_string()),
        }
    }
}

#[derive(Subcommand)]
enum TokensCmd {
    /// Add tokens to an account.
    Grant { account: String, tokens: i64 },
}

#[derive(Subcommand)]
enum WorkflowCmd {
    /// Save a workflow file (the saved representation) to an account or as a system template.
    ///
    /// The name saved under is --name, else the file's "name" field, else the file name
    /// without .json; the command prints which. A workflow name is 1 to 100 characters with
    /// no '/', no control or invisible formatting character, and no white space at either end.
    Import {
        file: PathBuf,
        /// Name to save under (default: the file's "name" field, else the file name without .json).
        #[arg(long)]
        name: Option<String>,
        #[arg(long, conflicts_with = "system")]
        account: Option<String>,
        #[arg(long)]
        system: bool,
    },
    /// Print a saved workflow (an account's with --account, else the system template).
    Export {
        name: String,
        #[arg(long)]
        account: Option<String>,
    },
}

fn main() {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: starting the async runtime: {e}");
            std::process::exit(1);
        }
    };
    let result = runtime.block_on(run(cli));
    // After shutdown, a tool may still be computing on a blocking thread for a node that
    // was given back to the queue: its result would be discarded, so the process does not
    // wait for it.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    // A client of a server: no configuration of this one is read.
    if let Command::Run(args) = cli.command {
        std::process::exit(atelier_cli::run_cmd::main(args).await);
    }
    if let Command::Batch(args) = cli.command {
        std::process::exit(atelier_cli::batch_cmd::main(args).await);
    }
    let mut config = Config::load(cli.config.as_deref()).map_err(anyhow::Error::msg)?;
    if let Some(dir) = cli.data_dir {
        config.storage.data_dir = dir;
    }
    if let Some(url) = cli.storage_url {
        config.storage.url = url;
    }
    if let Some(url) = cli.database_url {
        config.database.url = url;
    }
    config.validate().map_err(anyhow::Error::msg)?;
    match cli.command {
        Command::Serve(args) => serve(config, args).await,
        Command::Worker(args) => worker(config, args).await,
        Command::Migrate => {
            let store = open_store(&config).await?;
            templates::install(store.as_ref()).await?;
            println!("database ready in {}", config.storage.data_dir.display());
            Ok(())
        }
        Command::Admin(Admin::MigrateData(args)) => {
            let migration = atelier_cli::migrate_data::migrate_data(&config, &args.from_data_dir).await?;
            if args.json {
                println!("{}", migration.to_json());
            } else {
                print!("{}", migration.to_text());
            }
            Ok(())
        }
        Command::Admin(Admin::Store(admin)) => self::admin(config, admin).await,
        Command::Engines(EnginesCmd::Check { json }) => engines_check(config, json).await,
        // Handled before the configuration is read.
        Command::Run(_) | Command::Batch(_) => Ok(()),
    }
}

/// Logs to standard output and, with `[traces] endpoint`, spans to the collector; the
/// exporter is to be shut down at exit so that the last spans are sent.
fn init_logging(config: &Config, process: &str) -> anyhow::Result<Option<atelier_telemetry::traces::Traces>> {
    use std::io::IsTerminal as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::Layer as _;
    let traces = match &config.traces.endpoint {
        Some(endpoint) => {
            let instance = format!("{process}-{}", std::process::id());
            let settings = atelier_telemetry::traces::Settings {
                endpoint,
                service_name: &config.traces.service_name,
                process,
                instance: &instance,
                sample_ratio: config.traces.sample_ratio,
            };
            Some(atelier_telemetry::traces::Traces::start(&settings).context("[traces]")?)
        }
        None => None,
    };
    let logs = tracing_subscriber::fmt::layer()
        // Colours for a terminal only, not for log files and collectors.
        .with_ansi(std::io::stdout().is_terminal())
        .with_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| atelier_telemetry::traces::LOG_FILTER.into()),
        );
    tracing_subscriber::registry().with(logs).with(traces.as_ref().map(|t| t.layer())).init();
    if let Some(endpoint) = &config.traces.endpoint {
        tracing::info!(%endpoint, "exporting traces");
    }
    Ok(traces)
}

async fn serve(mut config: Config, args: ServeArgs) -> anyhow::Result<()> {
    let traces = init_logging(&config, "serve")?;
    if let Some(listen) = args.listen {
        config.server.listen = listen;
    }
    if let Some(workers) = args.workers {
        config.worker.workers = workers;
    }
    if args.no_workers {
        config.worker.workers = 0;
    }
    if args.allow_private_urls {
        config.inputs.allow_private_addresses = true;
    }
    // The tools first: a subject model that cannot be loaded stops the start before anything
    // is written.
    let tools = if config.worker.workers > 0 { Some(atelier_cli::builtin_tools(&config)?) } else { None };
    let store = open_store(&config).await?;
    if store.account_count().await? == 0 {
        // API processes starting together on an empty shared database race here: one
        // creates `default` and prints its key, the others find it taken and go on.
        match store.create_account("default", config.server.default_tokens).await {
            Ok((_, key)) => {
                println!("Created account 'default' with {} tokens.", config.server.default_tokens);
                println!("API key (shown once): {key}");
            }
            Err(atelier_store::StoreError::Conflict(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    record_configuration(store.as_ref(), &config).await?;
    let running = atelier_cli::start(&config, store, tools).await?;
    println!("Atelier listening on http://{}", running.addr);
    if let Some(addr) = running.metrics_addr {
        println!("Metrics on http://{addr}/metrics");
    }
    stop_on_signal(running.token()).await;
    running.shutdown().await;
    if let Some(traces) = traces {
        traces.shutdown().await;
    }
    Ok(())
}

/// An audit entry for the configuration an API process starts with: what decides prices
/// and where work runs, as digests (SHA-256 of its JSON; an engine's headers may hold
/// credentials) and the names of the engines and of the routed tools.
async fn record_configuration(store: &dyn atelier_store::Store, config: &Config) -> anyhow::Result<()> {
    fn digest<T: serde::Serialize>(value: &T) -> String {
        let json = serde_json::to_string(value).unwrap_or_default();
        atelier_core::ids::key_digest(&json).iter().map(|b| format!("{b:02x}")).collect()
    }
    let summary = json!({
        "version": env!("CARGO_PKG_VERSION"),
        "prices_sha256": digest(&config.prices),
        "engines_sha256": digest(&config.engines),
        "tools_sha256": digest(&config.tools),
        "engines": config.engines.keys().collect::<Vec<_>>(),
        "tools": config.tools.keys().collect::<Vec<_>>(),
        "limits_sha256": digest(&config.limits),
    });
    let entry = atelier_store::NewAuditEntry {
        account_id: None,
        actor: "system".into(),
        address: None,
        action: "config.loaded".into(),
        target: None,
        summary,
    };
    store.record_audit(entry).await.context("writing the configuration's audit entry")?;
    Ok(())
}

async fn worker(mut config: Config, args: WorkerArgs) -> anyhow::Result<()> {
    let traces = init_logging(&config, "worker")?;
    if let Some(workers) = args.workers {
        config.worker.workers = workers;
    }
    if args.allow_private_urls {
        config.inputs.allow_private_addresses = true;
    }
    if config.worker.workers == 0 {
        bail!("a worker needs at least one slot (--workers N, worker.workers)");
    }
    let tools = atelier_cli::builtin_tools(&config)?;
    let running = match (&args.server, &args.token) {
        (Some(server), Some(token)) => {
            let running = atelier_cli::start_pull_worker(&config, server, token, Some(tools)).await?;
            println!(
                "Atelier pull worker running with {} slots, leasing from {server}",
                config.worker.workers
            );
            running
        }
        _ => {
            let store = open_store(&config).await?;
            let running = atelier_cli::start_worker(&config, store, Some(tools)).await?;
            println!("Atelier worker running with {} slots", config.worker.workers);
            running
        }
    };
    if let Some(addr) = running.metrics_addr {
        println!("Metrics on http://{addr}/metrics");
    }
    stop_on_signal(running.token()).await;
    running.shutdown().await;
    if let Some(traces) = traces {
        traces.shutdown().await;
    }
    Ok(())
}

async fn engines_check(config: Config, json: bool) -> anyhow::Result<()> {
    use atelier_engines::check::Outcome;
    let engines = atelier_engines::Engines::new(config.routing()).map_err(|e| anyhow!(e))?;
    let findings = atelier_engines::check::check(&engines).await;
    let failed = findings.iter().any(|f| f.outcome != Outcome::Valid);
    if json {
        let report: Vec<_> = findings
            .iter()
            .map(|f| {
                let (status, problems) = match &f.outcome {
                    Outcome::Valid => ("valid", vec![]),
                    Outcome::Unreachable(why) => ("unreachable", vec![why.clone()]),
                    Outcome::Invalid(p) => ("invalid", p.clone()),
                };
                json!({"tool": f.tool, "engine": f.endpoint, "status": status, "problems": problems})
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else if findings.is_empty() {
        println!("no tool is routed to a model server: every tool runs on the built-in engine");
    } else {
        for f in &findings {
            match &f.outcome {
                Outcome::Valid => println!("ok       {} on {}", f.tool, f.endpoint),
                Outcome::Unreachable(why) => println!("DOWN     {} on {}: {why}", f.tool, f.endpoint),
                Outcome::Invalid(problems) => {
                    println!("INVALID  {} on {}", f.tool, f.endpoint);
                    for p in problems {
                        println!("         {p}");
                    }
                }
            }
        }
    }
    if failed {
        bail!("the engine check failed");
    }
    Ok(())
}

/// Returns once the process is to stop: on SIGINT or SIGTERM (which cancels `token`), or
/// when something else cancelled it.
async fn stop_on_signal(token: tokio_util::sync::CancellationToken) {
    tokio::select! {
        () = shutdown_signal() => {
            tracing::info!("shutting down");
            token.cancel();
        }
        () = token.cancelled() => {}
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}

async fn worker_tokens(store: &dyn atelier_store::Store, command: WorkerTokenCmd) -> anyhow::Result<()> {
    let view = |t: &atelier_store::WorkerTokenRecord| {
        json!({"prefix": t.prefix, "tools": t.tools, "created_at": atelier_store::format_time(t.created_at),
               "last_used": t.last_used.map(atelier_store::format_time),
               "revoked_at": t.revoked_at.map(atelier_store::format_time)})
    };
    match command {
        WorkerTokenCmd::Create { tools, json } => {
            let mut names = Vec::new();
            for tool in tools.iter().map(|t| t.trim()).filter(|t| !t.is_empty()) {
                let id: atelier_core::tools::ToolId = tool.parse().map_err(|_| {
                    let known: Vec<&str> = atelier_core::tools::TOOLS.iter().map(|t| t.name).collect();
                    anyhow::anyhow!("unknown tool '{tool}'; the tools are {}", known.join(", "))
                })?;
                if !names.contains(&id.spec().name.to_string()) {
                    names.push(id.spec().name.to_string());
                }
            }
            if names.is_empty() {
                bail!("name at least one tool: --tools virtual_tryon,upscale");
            }
            let (record, token) = store.create_worker_token(&names).await?;
            let summary = json!({"tools": record.tools});
            audit_operator(store, None, "worker_token.created", Some(&record.prefix), summary).await?;
            if json {
                println!("{}", json!({"token": token, "prefix": record.prefix, "tools": record.tools}));
            } else {
                println!("Worker token for {} (shown once): {token}", record.tools.join(", "));
            }
        }
        WorkerTokenCmd::List { json } => {
            let tokens = store.list_worker_tokens().await?;
            if json {
                println!("{}", serde_json::Value::Array(tokens.iter().map(view).collect()));
            } else {
                for t in &tokens {
                    let state = match t.revoked_at {
                        Some(at) => format!("revoked {}", atelier_store::format_time(at)),
                        None => format!(
                            "last used {}",
                            t.last_used.map_or("never".into(), atelier_store::format_time)
                        ),
                    };
                    println!("{}…  {}  ({state})", t.prefix, t.tools.join(","));
                }
            }
        }
        WorkerTokenCmd::Revoke { token } => {
            let revoked =
                store.revoke_worker_token(&token).await.context("no active worker token matches")?;
            audit_operator(store, None, "worker_token.revoked", Some(&revoked.prefix), json!(null)).await?;
            println!("Revoked worker token {}… ({}).", revoked.prefix, revoked.tools.join(", "));
        }
    }
    Ok(())
}

/// `atelier admin audit …`.
async fn audit(store: &dyn atelier_store::Store, command: AuditCmd) -> anyhow::Result<()> {
    use std::io::Write;
    match command {
        AuditCmd::List { account, action, since, limit, json } => {
            let account_id = match &account {
                Some(name) => {
                    Some(store.account(name).await.with_context(|| format!("account '{name}'"))?.id)
                }
                None => None,
            };
            let since = match since {
                Some(text) => Some(atelier_core::time::parse_time(&text).with_context(|| {
                    format!("--since {text:?}: give a time such as 2026-11-01T00:00:00Z")
                })?),
                None => None,
            };
            let query = atelier_store::AuditQuery {
                account_id,
                action: action.as_deref(),
                since,
                before_id: None,
                limit: limit.clamp(1, 1000),
            };
            for entry in store.audit_entries(&query).await? {
                if json {
                    println!("{}", serde_json::to_string(&entry)?);
                } else {
                    println!(
                        "{:>6}  {}  {:<22}  {:<20}  {}  {}{}",
                        entry.id,
                        atelier_store::format_time(entry.at),
                        entry.action,
                        entry.actor,
                        entry.target.as_deref().unwrap_or("-"),
                        entry.summary,
                        entry.address.map(|a| format!("  from {a}")).unwrap_or_default()
                    );
                }
            }
        }
        AuditCmd::Export { out } => {
            let (entries, _) = store.audit_chain().await?;
            let mut sink: Box<dyn Write> = match &out {
                Some(path) => Box::new(std::io::BufWriter::new(
                    std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
                )),
                None => Box::new(std::io::stdout().lock()),
            };
            for entry in &entries {
                serde_json::to_writer(&mut sink, entry)?;
                sink.write_all(b"\n")?;
            }
            sink.flush()?;
            if let Some(path) = out {
                eprintln!("Wrote {} audit entries to {}.", entries.len(), path.display());
            }
        }
        AuditCmd::Verify { file } => {
            let (checked, broken) = match file {
                Some(path) => {
                    let text = std::fs::read_to_string(&path)
                        .with_context(|| format!("reading {}", path.display()))?;
                    let entries = text
                        .lines()
                        .filter(|l| !l.trim().is_empty())
                        .enumerate()
                        .map(|(n, line)| {
                            serde_json::from_str::<atelier_core::audit::Entry>(line).with_context(|| {
                                format!("{} line {}: not an audit entry", path.display(), n + 1)
                            })
                        })
                        .collect::<anyhow::Result<Vec<_>>>()?;
                    match atelier_core::audit::verify(&entries, None) {
                        Ok(n) => (n, None),
                        Err(b) => (entries.len(), Some(b)),
                    }
                }
                None => {
                    let check = store.verify_audit().await?;
                    (check.entries, check.broken)
                }
            };
            match broken {
                None => println!("The audit log holds {checked} entries and its chain is whole."),
                Some(b) => {
                    eprintln!("The audit log's chain breaks at entry {}: {}.", b.id, b.reason);
                    std::process::exit(1);
                }
            }
        }
    }
    Ok(())
}

/// Records a change made with the CLI: the operator, no address.
async fn audit_operator(
    store: &dyn atelier_store::Store,
    account: Option<&str>,
    action: &str,
    target: Option<&str>,
    summary: serde_json::Value,
) -> anyhow::Result<()> {
    let account_id = match account {
        Some(name) => Some(store.account(name).await?.id),
        None => None,
    };
    let entry = atelier_store::NewAuditEntry {
        account_id,
        actor: "operator".into(),
        address: None,
        action: action.into(),
        target: target.map(str::to_owned),
        summary,
    };
    store.record_audit(entry).await.context("writing the audit entry (the change itself was made)")?;
    Ok(())
}

async fn admin(config: Config, admin: StoreAdmin) -> anyhow::Result<()> {
    let store = open_store(&config).await?;
    match admin {
        StoreAdmin::Account(AccountCmd::Create { name, tokens, json }) => {
            if !valid_identifier(&name) {
                bail!("account names are 1-64 characters of A-Z a-z 0-9 _ -");
            }
            let (account, key) = store.create_account(&name, tokens).await?;
            let (summary, prefix) = (json!({"tokens": tokens}), atelier_core::ids::key_prefix(&key));
            audit_operator(store.as_ref(), Some(&name), "account.created", Some(&prefix), summary).await?;
            if json {
                println!("{}", json!({"account": account.name, "api_key": key}));
            } else {
                println!(
                    "Created account '{}' with {tokens} tokens.\nAPI key (shown once): {key}",
                    account.name
                );
            }
        }
        StoreAdmin::Key(KeyCmd::Create { account, priority, retention_secs, scopes, json }) => {
            if let Some(secs) = retention_secs {
                config.retention_policy().check(secs).map_err(|e| anyhow::anyhow!("--retention-secs {e}"))?;
            }
            if scopes.is_empty() {
                bail!("--scopes: name at least one of run, read, workflows, webhooks, keys");
            }
            let key =
                store.create_key(&account, scopes).await.with_context(|| format!("account '{account}'"))?;
            if priority.is_some() {
                store.set_key_priority(&key, priority).await.context("setting the key's priority")?;
            }
            if retention_secs.is_some() {
                store.set_key_retention(&key, retention_secs).await.context("setting the key's retention")?;
            }
            let summary = json!({"scopes": scopes.to_string(), "priority": priority.map(|p| p.as_str()), "retention_secs": retention_secs});
            let prefix = atelier_core::ids::key_prefix(&key);
            audit_operator(store.as_ref(), Some(&account), "key.created", Some(&prefix), summary).await?;
            if json {
                println!("{}", json!({"account": account, "api_key": key, "scopes": scopes}));
            } else {
                println!("{key}");
            }
        }
        StoreAdmin::Key(KeyCmd::Scopes { key, scopes }) => {
            if scopes.is_empty() {
                bail!("name at least one scope of run, read, workflows, webhooks, keys");
            }
            let info = store.set_key_scopes(&key, scopes).await.context("no active key matches")?;
            let summary = json!({"scopes": scopes.to_string()});
            audit_operator(
                store.as_ref(),
                Some(&info.account),
                "key.scopes_set",
                Some(&info.prefix),
                summary,
            )
            .await?;
            println!("Key {}… of account '{}' may now: {}.", info.prefix, info.account, info.scopes);
        }
        StoreAdmin::Key(KeyCmd::Retention { key, secs }) => {
            let secs = match secs {
                RetentionArg::Secs(secs) => Some(
                    config.retention_policy().check(secs).map_err(|e| anyhow::anyhow!("retention {e}"))?,
                ),
                RetentionArg::Default => None,
            };
            let info = store.set_key_retention(&key, secs).await.context("no active key matches")?;
            let summary = json!({"retention_secs": secs});
            audit_operator(
                store.as_ref(),
                Some(&info.account),
                "key.retention_set",
                Some(&info.prefix),
                summary,
            )
            .await?;
            let kept = match secs {
                None => "for the operator's default retention".to_string(),
                Some(0) => "not at all (zero retention: handed back inline, never stored)".to_string(),
                Some(secs) => format!("for {secs} s"),
            };
            println!(
                "Outputs of runs made with key {}… of account '{}' are now kept {kept}.",
                info.prefix, info.account
            );
        }
        StoreAdmin::Key(KeyCmd::Priority { key, priority }) => {
            let info = store.set_key_priority(&key, Some(priority)).await.context("no active key matches")?;
            let summary = json!({"priority": priority.as_str()});
            audit_operator(
                store.as_ref(),
                Some(&info.account),
                "key.priority_set",
                Some(&info.prefix),
                summary,
            )
            .await?;
            println!(
                "Runs made with key {}… of account '{}' now queue as {priority}.",
                info.prefix, info.account
            );
        }
        StoreAdmin::Key(KeyCmd::Limit { key, limits, concurrency, json }) => {
            if concurrency.is_some_and(|c| c.0 == Some(0)) {
                bail!("--concurrency: a key's cap on running nodes is 1 or more (or none, or default)");
            }
            let change = atelier_store::LimitChange {
                daily: setting(limits.daily),
                monthly: setting(limits.monthly),
                concurrency: setting(concurrency),
            };
            let (info, spend) = store.set_key_limits(&key, change).await.context("no active key matches")?;
            let summary = json!({"daily": change.daily, "monthly": change.monthly, "running_nodes": change.concurrency});
            audit_operator(
                store.as_ref(),
                Some(&info.account),
                "key.limits_set",
                Some(&info.prefix),
                summary,
            )
            .await?;
            print_spend(&format!("Key {}… of account '{}'", info.prefix, info.account), &spend, json);
        }
        StoreAdmin::Account(AccountCmd::Limit { account, limits, json }) => {
            let change = atelier_store::LimitChange {
                daily: setting(limits.daily),
                monthly: setting(limits.monthly),
                concurrency: None,
            };
            let spend = store
                .set_account_limits(&account, change)
                .await
                .with_context(|| format!("account '{account}'"))?;
            let summary = json!({"daily": change.daily, "monthly": change.monthly});
            audit_operator(store.as_ref(), Some(&account), "account.limits_set", None, summary).await?;
            print_spend(&format!("Account '{account}' (all its keys together)"), &spend, json);
        }
        StoreAdmin::Key(KeyCmd::Revoke { key }) => {
            let info = store.revoke_key(&key).await.context("no active key matches")?;
            audit_operator(
                store.as_ref(),
                Some(&info.account),
                "key.revoked",
                Some(&info.prefix),
                json!(null),
            )
            .await?;
            println!("Revoked key {}… of account '{}'.", info.prefix, info.account);
        }
        StoreAdmin::WorkerToken(command) => worker_tokens(store.as_ref(), command).await?,
        StoreAdmin::Audit(command) => audit(store.as_ref(), command).await?,
        StoreAdmin::Purge(PurgeArgs { account, before, json }) => {
            let Some(at) = atelier_core::time::parse_time(&before) else {
                bail!("--before {before:?}: give a time such as 2026-11-01T00:00:00Z or a date such as 2026-11-01");
            };
            let found = store.account(&account).await.with_context(|| format!("account '{account}'"))?;
            let blob = atelier_cli::open_blob(&config)?;
            let purged = atelier_cli::purge::purge(store.as_ref(), &blob, found.id, at).await?;
            let summary = json!({"before": atelier_store::format_time(at), "runs": purged.runs, "batches": purged.batches});
            audit_operator(store.as_ref(), Some(&account), "account.purged", None, summary).await?;
            let before = atelier_store::format_time(at);
            if json {
                let mut out = serde_json::to_value(&purged)?;
                out["account"] = json!(account);
                out["before"] = json!(before);
                println!("{out}");
            } else {
                println!(
                    "Deleted {} runs and {} batches of '{account}' created before {before} ({} stored files); {} unfinished runs left.",
                    purged.runs, purged.batches, purged.objects, purged.unfinished
                );
                if !purged.left.is_empty() {
                    println!("Not finished now (run it again later): {}", purged.left.join(", "));
                }
            }
        }
        StoreAdmin::Tokens(TokensCmd::Grant { account, tokens }) => {
            let balance =
                store.grant(&account, tokens).await.with_context(|| format!("account '{account}'"))?;
            let summary = json!({"tokens": tokens, "balance": balance});
            audit_operator(store.as_ref(), Some(&account), "tokens.granted", None, summary).await?;
            println!("Granted {tokens} tokens to '{account}'; balance {balance}.");
        }
        StoreAdmin::Workflow(WorkflowCmd::Import { file, name, account, system }) => {
            if account.is_none() && !system {
                bail!("say where to save it: --account NAME or --system");
            }
            let text =
                std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
            let value: serde_json::Value = serde_json::from_str(&text).context("the file is not JSON")?;
            let def = WorkflowDef::parse(value)?;
            def.validate()?;
            let (name, source) = import_name(name.as_deref(), def.name.as_deref(), &file)?;
            if let (ImportNameSource::Flag, Some(written)) = (source, def.name.as_deref()) {
                if validate_workflow_name(written).ok().as_deref() != Some(name.as_str()) {
                    eprintln!(
                        "note: the file names the workflow {written:?}; it is saved as {name:?} (--name)"
                    );
                }
            }
            let owner = match &account {
                Some(a) => Some(store.account(a).await.with_context(|| format!("account '{a}'"))?.id),
                None => None,
            };
            store.put_workflow(owner, &name, &serde_json::to_value(&def)?).await?;
            let summary = json!({"nodes": def.nodes.len(), "system": account.is_none()});
            audit_operator(store.as_ref(), account.as_deref(), "workflow.saved", Some(&name), summary)
                .await?;
            println!(
                "Saved workflow '{name}'{} (the name from {}).",
                account.map_or(" as a system template".to_string(), |a| format!(" to account '{a}'")),
                source.describe()
            );
        }
        StoreAdmin::Workflow(WorkflowCmd::Export { name, account }) => {
            let name = validate_workflow_name(&name)
                .map_err(|reason| anyhow!("invalid workflow name {name:?}: {reason}"))?;
            let owner = match &account {
                Some(a) => Some(store.account(a).await.with_context(|| format!("account '{a}'"))?.id),
                None => None,
            };
            let row = store
                .find_workflow(owner, &name)
                .await?
                .with_context(|| format!("workflow '{name}' not found"))?;
            println!("{}", serde_json::to_string_pretty(&row.definition)?);
        }
    }
    Ok(())
}

/// Where `admin workflow import` took the workflow's name from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ImportNameSource {
    Flag,
    Field,
    FileName,
}

impl ImportNameSource {
    fn describe(self) -> &'static str {
        match self {
            Self::Flag => "--name",
            Self::Field => "the file's \"name\" field",
            Self::FileName => "the file name",
        }
    }
}

/// The name `admin workflow import` saves under: `--name`, else the `name` written in the file,
/// else the file name without `.json`; checked and normalised (NFC) as the API does.
fn import_name(
    flag: Option<&str>,
    field: Option<&str>,
    file: &std::path::Path,
) -> anyhow::Result<(String, ImportNameSource)> {
    let (raw, source) = match (flag, field) {
        (Some(name), _) => (name, ImportNameSource::Flag),
        (None, Some(name)) => (name, ImportNameSource::Field),
        (None, None) => {
            let file_name = file.file_name().and_then(|n| n.to_str()).with_context(|| {
                format!("{} has no UTF-8 file name to name the workflow after; use --name", file.display())
            })?;
            (file_name.strip_suffix(".json").unwrap_or(file_name), ImportNameSource::FileName)
        }
    };
    let name = validate_workflow_name(raw).map_err(|reason| {
        let hint = if source == ImportNameSource::Flag { "" } else { "; choose another with --name" };
        anyhow!("invalid workflow name {raw:?} (from {}): {reason}{hint}", source.describe())
    })?;
    Ok((name, source))
}
