//! `atelier run`: one run of a tool or a saved workflow on a server, from the command line,
//! over the Rust client (`atelier-client`).
//!
//! The steps: read the inputs (`key=value`, `key=@file`, `key:=json`), typed by the tool's
//! parameters (`GET /api/v3/tools`) or the workflow's inputs (`GET /api/v3/workflow/{name}`);
//! price the run (`POST /api/v3/estimate`) and ask before spending more than
//! `--confirm-above`; start it; follow its events with a line per node; download its outputs.
//!
//! Exit codes: 0 the run succeeded; 1 it failed or was canceled (or its outputs could not be
//! downloaded); 2 a usage or configuration error, or the server could not be reached; 3 the
//! server refused a request (its error name and message are printed); 130 interrupted (the
//! run was canceled).

use std::collections::HashMap;
use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use atelier_client::{
    Client, Error, NodeEvent, NodeState, ParamKind, RunEvent, RunOptions, RunState, RunStatus,
};
use clap::Args;
use futures::StreamExt as _;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{Map, Value};

/// `atelier run`'s arguments.
#[derive(Debug, Args)]
#[command(
    after_help = "Inputs:\n  key=value    a string, or a number or boolean where the parameter is one\n  \
key=@path    a local image file, sent as base64\n  key:=json    a JSON value as written\n\n\
Exit codes: 0 succeeded, 1 the run failed or was canceled, 2 usage or configuration error,\n\
3 the server refused the request, 130 interrupted (the run was canceled)"
)]
pub struct RunArgs {
    /// The tool, then its inputs as KEY=VALUE (with --workflow, the inputs only; keys are
    /// node.param or the workflow's variable names).
    #[arg(value_name = "TOOL KEY=VALUE")]
    pub args: Vec<String>,
    /// Run this saved workflow (an account's, or a system template) instead of a tool.
    #[arg(long, value_name = "NAME")]
    pub workflow: Option<String>,
    /// The server.
    #[arg(long, env = "ATELIER_URL", default_value = "http://127.0.0.1:8080")]
    pub url: String,
    /// The account's API key.
    #[arg(long, env = "ATELIER_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Ask before running when the price is above this many tokens.
    #[arg(long, value_name = "TOKENS", default_value_t = 10)]
    pub confirm_above: i64,
    /// Run without asking, whatever the price.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Where to download the outputs.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub out: PathBuf,
    /// Print the final status as JSON on stdout instead of the downloaded paths.
    #[arg(long)]
    pub json: bool,
    /// Do not download the outputs.
    #[arg(long)]
    pub no_download: bool,
}

/// How the command ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    Succeeded = 0,
    RunFailed = 1,
    Usage = 2,
    Refused = 3,
    Interrupted = 130,
}

/// Why the command stops early: the exit code and what to print.
#[derive(Debug)]
pub(crate) struct Stop {
    pub(crate) exit: Exit,
    pub(crate) message: String,
}

impl Stop {
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self { exit: Exit::Usage, message: message.into() }
    }

    /// A failed call: the server's refusal (exit 3), or a failure to reach it (exit 2).
    pub(crate) fn call(what: &str, e: Error) -> Self {
        match &e {
            Error::InsufficientTokens { required, balance, .. } => Self {
                exit: Exit::Refused,
                message: format!(
                    "{what}: InsufficientTokens: the run needs {required} tokens, the balance is {balance}"
                ),
            },
            e if e.is_refusal() => Self { exit: Exit::Refused, message: format!("{what}: {e}") },
            e => Self { exit: Exit::Usage, message: format!("{what}: {e}") },
        }
    }
}

/// Runs the command; the process's exit code.
pub async fn main(args: RunArgs) -> i32 {
    exit_code(run(args).await)
}

/// The process's exit code for how a client command ended, its error printed.
pub(crate) fn exit_code(ended: Result<Exit, Stop>) -> i32 {
    let code = match ended {
        Ok(exit) => exit,
        Err(stop) => {
            eprintln!("error: {}", stop.message);
            stop.exit
        }
    };
    let _ = std::io::stdout().flush();
    code as i32
}

/// The target of a client command (`TOOL KEY=VALUE…`, or `--workflow NAME KEY=VALUE…`) and
/// its inputs; `usage` says how to name one.
pub(crate) fn target_of<'a>(
    workflow: &Option<String>,
    args: &'a [String],
    usage: &str,
) -> Result<(Target, &'a [String]), Stop> {
    match (workflow, args.split_first()) {
        (Some(name), _) => Ok((Target::Workflow(name.clone()), args)),
        (None, Some((tool, rest))) if !tool.contains('=') => Ok((Target::Tool(tool.clone()), rest)),
        (None, _) => Err(Stop::usage(usage)),
    }
}

/// A client of the server at `url` with the key given (`--api-key` or `ATELIER_API_KEY`).
pub(crate) fn connect(url: &str, api_key: Option<&str>) -> Result<Client, Stop> {
    let key = api_key
        .filter(|k| !k.trim().is_empty())
        .ok_or_else(|| Stop::usage("no API key: pass --api-key or set ATELIER_API_KEY"))?;
    Client::new(url, key).map_err(|e| Stop::usage(e.to_string()))
}

/// What to run.
pub(crate) enum Target {
    Tool(String),
    Workflow(String),
}

async fn run(args: RunArgs) -> Result<Exit, Stop> {
    let usage = "say which tool to run (atelier run TOOL key=value…) or --workflow NAME";
    let (target, pairs) = target_of(&args.workflow, &args.args, usage)?;
    let client = connect(&args.url, args.api_key.as_deref())?;

    let kinds = input_kinds(&client, &target).await?;
    let input = Value::Object(parse_inputs(pairs, &kinds)?);

    let estimate = match &target {
        Target::Tool(tool) => client.estimate(tool, input.clone()).await,
        Target::Workflow(name) => client.estimate_workflow(name, input.clone()).await,
    }
    .map_err(|e| Stop::call("pricing the run", e))?;
    match estimate.balance {
        Some(balance) => eprintln!("price {} tokens, balance {balance}", estimate.tokens),
        None => eprintln!("price {} tokens", estimate.tokens),
    }
    if estimate.tokens > args.confirm_above && !args.yes {
        confirm(estimate.tokens, args.confirm_above)?;
    }

    // From here a Ctrl-C asks to cancel the run instead of ending the program (before, there
    // is nothing to cancel).
    let mut interrupts = Interrupts::new();
    let handle = match &target {
        Target::Tool(tool) => client.run(tool, input, RunOptions::default()).await,
        Target::Workflow(name) => client.run_workflow(name, input, RunOptions::default()).await,
    }
    .map_err(|e| Stop::call("starting the run", e))?;
    for warning in &handle.warnings {
        eprintln!("warning: {warning}");
    }
    let terminal = std::io::stderr().is_terminal();
    let mut display = Display::new(terminal, args.json, estimate.nodes.keys());
    display.line(format!("run {} started", handle.id));
    let (status, interrupted) = follow(&client, &handle.id, &mut display, &mut interrupts).await?;
    display.finish(&status);

    if args.json {
        println!("{}", serde_json::to_string_pretty(&status.raw).unwrap_or_else(|_| status.raw.to_string()));
    }
    let tokens = format!(" ({} tokens)", status.tokens);
    if interrupted {
        match status.overall_status {
            RunState::Canceled => eprintln!("run {} canceled{tokens}", status.run_id()),
            state => eprintln!("run {} {state} before the cancel took effect{tokens}", status.run_id()),
        }
        return Ok(Exit::Interrupted);
    }
    if !status.succeeded() {
        eprintln!("run {} {}{tokens}", status.run_id(), status.overall_status);
        let failure = status
            .failed_node()
            .map(|(node, e)| (Some(node.to_string()), e))
            .or_else(|| status.error.as_ref().map(|e| (e.node.clone(), e)));
        if let Some((node, e)) = failure {
            let node = node.map(|n| format!("node {n}: ")).unwrap_or_default();
            eprintln!("{node}{}: {}", e.name, e.message);
        }
        return Ok(Exit::RunFailed);
    }
    eprintln!("run {} succeeded{tokens}", status.run_id());
    if args.no_download {
        return Ok(Exit::Succeeded);
    }
    std::fs::create_dir_all(&args.out).map_err(|e| Stop {
        exit: Exit::RunFailed,
        message: format!("creating {}: {e}", args.out.display()),
    })?;
    for (url, name) in output_files(&status) {
        let path = args.out.join(name);
        client
            .download(&url, &path)
            .await
            .map_err(|e| Stop { exit: Exit::RunFailed, message: format!("downloading {url}: {e}") })?;
        if !args.json {
            println!("{}", path.display());
        }
    }
    Ok(Exit::Succeeded)
}

/// The types of a target's inputs, so that `scale=4` is sent as a number where the tool
/// wants one.
pub(crate) async fn input_kinds(
    client: &Client,
    target: &Target,
) -> Result<HashMap<String, ParamKind>, Stop> {
    Ok(match target {
        Target::Tool(tool) => {
            let tools = client.tools().await.map_err(|e| Stop::call("reading the tools", e))?;
            let tool = tools.iter().find(|t| &t.name == tool);
            tool.map(|t| t.params.iter().map(|p| (p.name.clone(), p.kind)).collect()).unwrap_or_default()
        }
        Target::Workflow(name) => {
            let description =
                client.workflow(name).await.map_err(|e| Stop::call(&format!("workflow {name:?}"), e))?;
            let inputs = &description.inputs;
            inputs
                .mandatory
                .keys()
                .chain(inputs.optional.keys())
                .filter_map(|k| Some((k.clone(), inputs.kind(k)?)))
                .collect()
        }
    })
}

/// Asks on a terminal whether to spend `tokens`; not on a terminal, refuses (exit 2).
fn confirm(tokens: i64, above: i64) -> Result<(), Stop> {
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Err(Stop::usage(format!(
            "the run costs {tokens} tokens, more than --confirm-above {above}: pass --yes to run it without asking"
        )));
    }
    eprint!("run it for {tokens} tokens? [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    if matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
        Ok(())
    } else {
        Err(Stop::usage("not run"))
    }
}

/// Reads `key=value`, `key=@path` and `key:=json` into the run's input; values are typed by
/// `kinds` (a number or boolean parameter gets a JSON number or boolean, anything else a
/// string).
fn parse_inputs(pairs: &[String], kinds: &HashMap<String, ParamKind>) -> Result<Map<String, Value>, Stop> {
    let mut input = Map::new();
    for pair in pairs {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(Stop::usage(format!("{pair:?}: inputs are KEY=VALUE, KEY=@FILE or KEY:=JSON")));
        };
        let (key, value) = match key.strip_suffix(':') {
            Some(key) => {
                let json = serde_json::from_str(value)
                    .map_err(|e| Stop::usage(format!("{key}: {value:?} is not JSON ({e})")))?;
                (key, json)
            }
            None => match value.strip_prefix('@') {
                Some(path) => (key, Value::String(read_image(Path::new(path))?)),
                None => (key, typed(value, kinds.get(key).copied())),
            },
        };
        if key.is_empty() {
            return Err(Stop::usage(format!("{pair:?}: the key is empty")));
        }
        input.insert(key.to_string(), value);
    }
    Ok(input)
}

/// A command-line value as the parameter's type wants it; as a string when it does not
/// parse (the server then says what is wrong with it).
pub(crate) fn typed(value: &str, kind: Option<ParamKind>) -> Value {
    match kind {
        Some(ParamKind::Number) => {
            if let Ok(n) = value.parse::<i64>() {
                return Value::from(n);
            }
            match value.parse::<f64>().ok().and_then(serde_json::Number::from_f64) {
                Some(n) => Value::Number(n),
                None => Value::String(value.to_string()),
            }
        }
        Some(ParamKind::Boolean) => match value {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => Value::String(value.to_string()),
        },
        _ => Value::String(value.to_string()),
    }
}

fn read_image(path: &Path) -> Result<String, Stop> {
    let bytes = std::fs::read(path).map_err(|e| Stop::usage(format!("reading {}: {e}", path.display())))?;
    Ok(atelier_client::image_base64(&bytes))
}

/// Follows the run to its end: the final status, and whether it was interrupted (and so
/// canceled). Events drive the display; when the stream cannot be had, the status is polled.
async fn follow(
    client: &Client,
    run_id: &str,
    display: &mut Display,
    interrupts: &mut Interrupts,
) -> Result<(RunStatus, bool), Stop> {
    let mut events = client.events(run_id, None);
    let mut interrupted = false;
    let mut polling = false;
    loop {
        let next = if polling {
            tokio::select! {
                status = poll_once(client, run_id) => Some(Ok(RunEvent::Status(status?))),
                () = interrupts.next() => None,
            }
        } else {
            tokio::select! {
                event = events.next() => Some(event.unwrap_or_else(|| Err(Error::EventStream("the stream ended".into())))),
                () = interrupts.next() => None,
            }
        };
        match next {
            None if interrupted => {
                return Err(Stop {
                    exit: Exit::Interrupted,
                    message: format!(
                        "interrupted again: run {run_id} was asked to cancel; not waiting for its end"
                    ),
                });
            }
            None => {
                if display.ask_cancel(interrupts).await {
                    interrupted = true;
                    display.line(format!("canceling run {run_id}"));
                    client.cancel(run_id).await.map_err(|e| Stop::call("canceling the run", e))?;
                }
            }
            Some(Ok(RunEvent::Node(event))) => display.node(&event),
            Some(Ok(RunEvent::Status(status))) if status.is_done() => return Ok((status, interrupted)),
            Some(Ok(RunEvent::Status(status))) => {
                display.status(&status);
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Some(Err(
                e @ (Error::EventStream(_) | Error::Transport(_) | Error::Timeout(_) | Error::Decode { .. }),
            )) => {
                if !polling {
                    display.line(format!("following by polling ({e})"));
                    polling = true;
                }
            }
            Some(Err(e)) => return Err(Stop::call("following the run", e)),
        }
    }
}

/// One status read for the polling fallback (a rate limit is waited out).
async fn poll_once(client: &Client, run_id: &str) -> Result<RunStatus, Stop> {
    loop {
        match client.status(run_id).await {
            Ok(status) => return Ok(status),
            Err(e) => match e.retry_after() {
                Some(secs) => tokio::time::sleep(Duration::from_secs(secs)).await,
                None => return Err(Stop::call("polling the run", e)),
            },
        }
    }
}

/// Ctrl-C presses, as a stream of wake-ups. While one of these lives, Ctrl-C does not end
/// the program.
struct Interrupts {
    #[cfg(unix)]
    signal: Option<tokio::signal::unix::Signal>,
}

impl Interrupts {
    fn new() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Self { signal: signal(SignalKind::interrupt()).ok() }
        }
        #[cfg(not(unix))]
        Self {}
    }

    async fn next(&mut self) {
        #[cfg(unix)]
        match self.signal.as_mut() {
            Some(signal) => {
                if signal.recv().await.is_none() {
                    std::future::pending::<()>().await;
                }
            }
            None => std::future::pending::<()>().await,
        }
        #[cfg(not(unix))]
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// The live view of a run's nodes: bars on a terminal, a line per change otherwise (none
/// with `--json` off a terminal).
struct Display {
    bars: Option<(MultiProgress, Vec<(String, ProgressBar)>)>,
    lines: bool,
    /// What was last shown of each node (state and percent).
    shown: HashMap<String, (NodeState, Option<u64>)>,
    terminal: bool,
}

impl Display {
    fn new<'a>(terminal: bool, json: bool, nodes: impl Iterator<Item = &'a String>) -> Self {
        let bars = terminal.then(|| {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
            let bars = nodes.map(|name| (name.clone(), Self::bar(&multi, name))).collect();
            (multi, bars)
        });
        Self { bars, lines: !terminal && !json, shown: HashMap::new(), terminal }
    }

    fn bar(multi: &MultiProgress, name: &str) -> ProgressBar {
        let style = ProgressStyle::with_template("{prefix:<16} [{bar:30}] {percent:>3}% {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        let bar = multi.add(ProgressBar::new(100).with_style(style).with_prefix(name.to_string()));
        bar.set_message("pending");
        bar
    }

    /// A message beside the nodes.
    fn line(&self, text: String) {
        match &self.bars {
            Some((multi, _)) => {
                let _ = multi.println(text);
            }
            None => eprintln!("{text}"),
        }
    }

    fn show(&mut self, node: &str, state: NodeState, progress: Option<f32>) {
        let percent = (state == NodeState::Running)
            .then(|| (progress.unwrap_or(0.0).clamp(0.0, 1.0) * 100.0).round() as u64);
        if self.shown.get(node) == Some(&(state, percent)) {
            return;
        }
        self.shown.insert(node.to_string(), (state, percent));
        if let Some((multi, bars)) = &mut self.bars {
            let bar = match bars.iter().find(|(name, _)| name == node) {
                Some((_, bar)) => bar.clone(),
                None => {
                    let bar = Self::bar(multi, node);
                    bars.push((node.to_string(), bar.clone()));
                    bar
                }
            };
            bar.set_message(state.as_str());
            match state {
                NodeState::Succeeded => bar.finish_with_message("succeeded"),
                s if s.is_terminal() => bar.abandon_with_message(s.as_str()),
                _ => bar.set_position(percent.unwrap_or(0)),
            }
        }
        if self.lines {
            match percent {
                Some(p) => eprintln!("node {node} {state} {p}%"),
                None => eprintln!("node {node} {state}"),
            }
        }
    }

    fn node(&mut self, event: &NodeEvent) {
        self.show(&event.node, event.status, event.progress);
    }

    /// Every node of a polled status.
    fn status(&mut self, status: &RunStatus) {
        if status.is_workflow() {
            for (name, node) in status.node_results() {
                self.show(name, node.status, node.progress);
            }
        } else if let Some(tool) = &status.model_name {
            let state = match status.overall_status {
                RunState::Queued => NodeState::Queued,
                RunState::Running => NodeState::Running,
                RunState::Succeeded => NodeState::Succeeded,
                RunState::Failed => NodeState::Failed,
                RunState::Canceled => NodeState::Canceled,
                RunState::Pending => NodeState::Pending,
                RunState::Skipped => NodeState::Skipped,
                RunState::Unknown => NodeState::Unknown,
            };
            self.show(tool, state, status.progress);
        }
    }

    /// The final status on every bar, then the bars are put away.
    fn finish(&mut self, status: &RunStatus) {
        self.status(status);
        if let Some((multi, bars)) = self.bars.take() {
            for (_, bar) in &bars {
                if !bar.is_finished() {
                    bar.abandon();
                }
            }
            let _ = multi.clear();
            for (name, _) in &bars {
                if let Some((state, _)) = self.shown.get(name) {
                    eprintln!("node {name} {state}");
                }
            }
        }
    }

    /// After a Ctrl-C: on a terminal, whether the user wants the run canceled (a second
    /// Ctrl-C says yes); off a terminal, yes.
    async fn ask_cancel(&mut self, interrupts: &mut Interrupts) -> bool {
        if !self.terminal || !std::io::stdin().is_terminal() {
            return true;
        }
        // The bars would draw over the question.
        let multi = self.bars.as_ref().map(|(multi, _)| multi.clone());
        if let Some(multi) = &multi {
            multi.set_draw_target(ProgressDrawTarget::hidden());
        }
        let answer = tokio::task::spawn_blocking(|| {
            eprint!("\ncancel the run? [y/N] ");
            let _ = std::io::stderr().flush();
            let mut answer = String::new();
            let _ = std::io::stdin().lock().read_line(&mut answer);
            matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
        });
        let yes = tokio::select! {
            answer = answer => answer.unwrap_or(false),
            () = interrupts.next() => {
                eprintln!();
                true
            }
        };
        if let Some(multi) = multi {
            multi.set_draw_target(ProgressDrawTarget::stderr());
        }
        if let Some((_, bars)) = &self.bars {
            bars.iter().for_each(|(_, bar)| bar.tick());
        }
        yes
    }
}

/// The files to download: `(url, file name)` for each output. A node run's outputs are named
/// after the run (`gen_…_0.png`); a workflow's after its output names (`square_0.png`), and
/// when it names none, after the run and each node (`wr_…_Upscale_0.png`). The extension is
/// the URL's.
fn output_files(status: &RunStatus) -> Vec<(String, String)> {
    let name = |stem: &str, i: usize, url: &str| format!("{}_{i}.{}", safe(stem), extension(url));
    if !status.is_workflow() {
        return status
            .output_urls()
            .iter()
            .enumerate()
            .map(|(i, url)| (url.clone(), name(status.run_id(), i, url)))
            .collect();
    }
    let named = status.named_outputs();
    if !named.is_empty() {
        return named
            .iter()
            .flat_map(|(output, urls)| {
                urls.iter().enumerate().map(move |(i, url)| (url.clone(), name(output, i, url)))
            })
            .collect();
    }
    status
        .node_results()
        .flat_map(|(node, result)| {
            let stem = format!("{}_{node}", status.run_id());
            result
                .output
                .iter()
                .enumerate()
                .map(move |(i, url)| (url.clone(), name(&stem, i, url)))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A file name part: letters, digits, `-` and `_` kept, anything else `_`.
fn safe(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}

/// The extension of a URL's last path segment (`bin` when it has none).
pub(crate) fn extension(url: &str) -> String {
    let path = url.split(['?', '#']).next().unwrap_or_default();
    let last = path.rsplit('/').next().unwrap_or_default();
    match last.rsplit_once('.') {
        Some((stem, ext))
            if !stem.is_empty()
                && !ext.is_empty()
                && ext.len() <= 8
                && ext.chars().all(|c| c.is_ascii_alphanumeric()) =>
        {
            ext.to_ascii_lowercase()
        }
        _ => "bin".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kinds() -> HashMap<String, ParamKind> {
        [("scale", ParamKind::Number), ("upscale", ParamKind::Boolean), ("category", ParamKind::Select)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    }

    fn parse(pairs: &[&str]) -> Result<Value, Stop> {
        let pairs: Vec<String> = pairs.iter().map(|p| p.to_string()).collect();
        parse_inputs(&pairs, &kinds()).map(Value::Object)
    }

    #[test]
    fn values_take_the_type_of_their_parameter() {
        let input =
            parse(&["scale=4", "upscale=true", "category=4", "seed=7", "ratio=1.5", "scale2=x"]).unwrap();
        assert_eq!(
            input,
            json!({"scale": 4, "upscale": true, "category": "4", "seed": "7", "ratio": "1.5", "scale2": "x"})
        );
        assert_eq!(parse(&["scale=2.5"]).unwrap(), json!({"scale": 2.5}));
        assert_eq!(parse(&["scale=big", "upscale=yes"]).unwrap(), json!({"scale": "big", "upscale": "yes"}));
        assert_eq!(
            parse(&["scene=a=b", "Shoot.num_outputs:=2", "x:=[1,\"a\"]"]).unwrap(),
            json!({"scene": "a=b", "Shoot.num_outputs": 2, "x": [1, "a"]})
        );
    }

    #[test]
    fn files_are_read_as_base64_and_bad_inputs_are_usage_errors() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.png");
        std::fs::write(&file, b"\x89PNG").unwrap();
        let input = parse(&[&format!("image=@{}", file.display())]).unwrap();
        assert_eq!(input, json!({"image": "iVBORw=="}));
        for bad in [&["image"][..], &["=x"], &["x:={"], &["image=@/no/such/file"]] {
            let stop = parse(bad).unwrap_err();
            assert_eq!(stop.exit, Exit::Usage, "{bad:?}: {}", stop.message);
        }
    }

    #[test]
    fn outputs_are_named_after_the_run_or_their_output_name() {
        let node: RunStatus = serde_json::from_value(json!({"id": "gen_ab", "overall_status": "succeeded",
            "output": ["http://h/files/outputs/gen_ab/upscale/0.png", "http://h/f/1.webp?x=1"]}))
        .unwrap();
        assert_eq!(
            output_files(&node),
            vec![
                ("http://h/files/outputs/gen_ab/upscale/0.png".to_string(), "gen_ab_0.png".to_string()),
                ("http://h/f/1.webp?x=1".to_string(), "gen_ab_1.webp".to_string()),
            ]
        );
        let flow: RunStatus = serde_json::from_value(json!({"workflow_run_id": "wr_x", "overall_status": "succeeded",
            "outputs": {"square": "http://h/a/0.png", "all poses": ["http://h/b/0.jpeg", "http://h/b/1.mp4"]},
            "nodes": {"A": {"id": "gen_1", "status": "succeeded", "output": ["http://h/a/0.png"], "model_name": "reframe"}}}))
        .unwrap();
        let names: Vec<String> = output_files(&flow).into_iter().map(|(_, n)| n).collect();
        assert_eq!(names, ["square_0.png", "all_poses_0.jpeg", "all_poses_1.mp4"]);
        let unnamed: RunStatus = serde_json::from_value(json!({"workflow_run_id": "wr_x", "overall_status": "succeeded",
            "outputs": {}, "nodes": {"Up": {"id": "gen_1", "status": "succeeded", "output": ["http://h/a/0"], "model_name": "upscale"}}}))
        .unwrap();
        assert_eq!(output_files(&unnamed), vec![("http://h/a/0".to_string(), "wr_x_Up_0.bin".to_string())]);
    }
}
