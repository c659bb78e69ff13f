//! `atelier batch`: a catalogue through a tool or a saved workflow, from a JSONL or CSV file of
//! items, over the Rust client.
//!
//! The steps: read the items (JSONL: one object a line, `{"input": {...}, "ref": "..."}` or the
//! inputs themselves with an optional `ref`; CSV: a header of input names, `ref` for the
//! reference, one row per item), typed by the tool's parameters or the workflow's inputs;
//! upload every local file named `@path` once (`POST /api/v3/uploads`); start the batch
//! (`POST /api/v3/batches`, the whole price reserved); follow it with a progress bar; then
//! write `results.jsonl` and download each succeeded item's outputs to `<out>/<ref>/`.
//!
//! Exit codes as `atelier run`: 0 every item succeeded; 1 some failed or were canceled (or
//! outputs could not be downloaded); 2 a usage or configuration error, or the server could not
//! be reached; 3 the server refused a request. Interrupted (Ctrl-C), the command stops and the
//! batch goes on; `POST /api/v3/batches/{id}/cancel` stops it.

use std::collections::HashMap;
use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use atelier_client::{
    Batch, BatchItem, BatchItemRequest, BatchRequest, BatchState, Client, Priority, RunKind,
};
use atelier_core::catalogue::ItemsFormat;
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{Map, Value};

use crate::run_cmd::{connect, exit_code, extension, input_kinds, target_of, typed, Exit, Stop, Target};

/// `atelier batch`'s arguments.
#[derive(Debug, Args)]
#[command(
    after_help = "Items file (--items):\n  .jsonl  one item a line: {\"input\": {...}, \"ref\": \"SKU-1\"}, or the inputs themselves with \"ref\"\n  \
.csv    a header of input names (ref: the item's reference), then one row per item\n\
A value @path is a local image file, uploaded once and named by every item that uses it.\n\n\
Exit codes: 0 every item succeeded, 1 some failed or were canceled, 2 usage or configuration error,\n\
3 the server refused the request"
)]
pub struct BatchArgs {
    /// The tool, then inputs every item shares as KEY=VALUE (with --workflow, the inputs only).
    #[arg(value_name = "TOOL KEY=VALUE")]
    pub args: Vec<String>,
    /// The items: a .jsonl or .csv file.
    #[arg(long, value_name = "FILE")]
    pub items: PathBuf,
    /// Run this saved workflow instead of a tool.
    #[arg(long, value_name = "NAME")]
    pub workflow: Option<String>,
    /// The server.
    #[arg(long, env = "ATELIER_URL", default_value = "http://127.0.0.1:8080")]
    pub url: String,
    /// The account's API key.
    #[arg(long, env = "ATELIER_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Where to write results.jsonl and the outputs (one folder per item).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub out: PathBuf,
    /// The items' lane: interactive, normal or bulk (the default).
    #[arg(long)]
    pub priority: Option<String>,
    /// Run every node afresh instead of filling it from the result cache.
    #[arg(long)]
    pub no_cache: bool,
    /// How long each item's outputs are kept, in seconds (the server's range; not 0).
    #[arg(long, value_name = "SECS")]
    pub retention_secs: Option<u64>,
    /// Sent as Idempotency-Key: the same batch started again with it is the first one.
    #[arg(long, value_name = "KEY")]
    pub idempotency_key: Option<String>,
    /// Do not download the outputs (results.jsonl is still written).
    #[arg(long)]
    pub no_download: bool,
    /// Where the server POSTs `batch.completed` when the batch ends.
    #[arg(long, value_name = "URL")]
    pub webhook: Option<String>,
}

/// Runs the command; the process's exit code.
pub async fn main(args: BatchArgs) -> i32 {
    exit_code(run(args).await)
}

async fn run(args: BatchArgs) -> Result<Exit, Stop> {
    let usage = "say which tool to run (atelier batch TOOL --items FILE) or --workflow NAME";
    let (target, pairs) = target_of(&args.workflow, &args.args, usage)?;
    let client = connect(&args.url, args.api_key.as_deref())?;
    let priority = match args.priority.as_deref() {
        None => None,
        Some(p) => Some(
            serde_json::from_value::<Priority>(Value::String(p.to_string()))
                .ok()
                .filter(|p| !matches!(p, Priority::Unknown))
                .ok_or_else(|| Stop::usage(format!("--priority {p:?}: interactive, normal or bulk")))?,
        ),
    };
    let csv = match args.items.extension().and_then(|e| e.to_str()) {
        Some("csv") => true,
        Some("jsonl" | "ndjson") => false,
        _ => return Err(Stop::usage(format!("{}: the items file is .jsonl or .csv", args.items.display()))),
    };
    let text = std::fs::read_to_string(&args.items)
        .map_err(|e| Stop::usage(format!("reading {}: {e}", args.items.display())))?;
    let kinds = input_kinds(&client, &target).await?;
    let format = if csv { ItemsFormat::Csv } else { ItemsFormat::Jsonl };
    let mut items: Vec<BatchItemRequest> = format
        .parse(&text, |name, cell| typed(cell, kinds.get(name).copied()))
        .map_err(|e| Stop::usage(format!("{}: {e}", args.items.display())))?
        .into_iter()
        .map(|item| BatchItemRequest { input: item.input, reference: item.reference })
        .collect();
    if items.is_empty() {
        return Err(Stop::usage(format!("{}: no items", args.items.display())));
    }
    let mut shared = Map::new();
    for pair in pairs {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| Stop::usage(format!("{pair:?}: shared inputs are KEY=VALUE or KEY=@FILE")))?;
        shared.insert(key.to_string(), typed(value, kinds.get(key).copied()));
    }

    // Local files, uploaded once each, named as `upload:<id>`.
    let mut uploads: HashMap<String, String> = HashMap::new();
    let base = args.items.parent().unwrap_or(Path::new("."));
    for input in std::iter::once(&mut shared).chain(items.iter_mut().map(|i| &mut i.input)) {
        for value in input.values_mut() {
            let Some(path) = value.as_str().and_then(|v| v.strip_prefix('@')).map(str::to_owned) else {
                continue;
            };
            if !uploads.contains_key(&path) {
                let file =
                    if Path::new(&path).is_absolute() { PathBuf::from(&path) } else { base.join(&path) };
                let upload = client
                    .upload_file(&file)
                    .await
                    .map_err(|e| Stop::call(&format!("uploading {}", file.display()), e))?;
                uploads.insert(path.clone(), upload.input);
            }
            *value = Value::String(uploads[&path].clone());
        }
    }
    if !uploads.is_empty() {
        eprintln!("uploaded {} files", uploads.len());
    }

    let (kind, name) = match &target {
        Target::Tool(tool) => (RunKind::Node, tool.clone()),
        Target::Workflow(name) => (RunKind::Workflow, name.clone()),
    };
    let request = BatchRequest {
        kind,
        target: name,
        input: shared,
        items,
        items_file: None,
        priority,
        cache: args.no_cache.then_some(false),
        webhook_url: args.webhook.clone(),
        retention_secs: args.retention_secs,
    };
    let batch = client
        .create_batch(&request, args.idempotency_key.as_deref())
        .await
        .map_err(|e| Stop::call("starting the batch", e))?;
    eprintln!(
        "batch {} started: {} items, {} tokens reserved",
        batch.id, batch.items.total, batch.tokens.price
    );
    let batch = follow(&client, batch).await?;
    let (succeeded, failed, canceled) = (batch.items.succeeded, batch.items.failed, batch.items.canceled);
    eprintln!(
        "batch {} {}: {succeeded} succeeded, {failed} failed, {canceled} canceled ({} tokens)",
        batch.id,
        if batch.status == BatchState::Canceled { "canceled" } else { "finished" },
        batch.tokens.charged
    );

    std::fs::create_dir_all(&args.out).map_err(|e| Stop {
        exit: Exit::RunFailed,
        message: format!("creating {}: {e}", args.out.display()),
    })?;
    let results = args.out.join("results.jsonl");
    client
        .download_batch_results(&batch.id, &results)
        .await
        .map_err(|e| Stop { exit: Exit::RunFailed, message: format!("downloading the results: {e}") })?;
    println!("{}", results.display());
    if !args.no_download {
        download_outputs(&client, &results, &args.out).await?;
    }
    Ok(if succeeded == batch.items.total { Exit::Succeeded } else { Exit::RunFailed })
}

/// Polls the batch until it is no longer running, with a progress bar on a terminal and a
/// line every 10% elsewhere.
async fn follow(client: &Client, mut batch: Batch) -> Result<Batch, Stop> {
    let terminal = std::io::stderr().is_terminal();
    let total = u64::try_from(batch.items.total).unwrap_or(0);
    let bar = ProgressBar::with_draw_target(
        Some(total),
        if terminal { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() },
    );
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} items {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    let mut reported = 0;
    loop {
        let c = &batch.items;
        let ended = u64::try_from(c.succeeded + c.failed + c.canceled).unwrap_or(0);
        bar.set_position(ended);
        bar.set_message(format!("({} running, {} failed)", c.running + c.queued, c.failed));
        let tenth = (ended * 10).checked_div(total).unwrap_or(10);
        if !terminal && tenth > reported {
            reported = tenth;
            eprintln!("{ended}/{total} items ended ({} failed)", c.failed);
        }
        if batch.status != BatchState::Running {
            bar.finish_and_clear();
            return Ok(batch);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        batch = client.batch(&batch.id).await.map_err(|e| Stop::call("reading the batch", e))?;
    }
}

/// Downloads each succeeded item's outputs (as `results.jsonl` lists them) to
/// `<out>/<ref or item-N>/<output>_<n>.<ext>`.
async fn download_outputs(client: &Client, results: &Path, out: &Path) -> Result<(), Stop> {
    let text = std::fs::read_to_string(results).map_err(|e| Stop {
        exit: Exit::RunFailed,
        message: format!("reading {}: {e}", results.display()),
    })?;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let item: BatchItem = serde_json::from_str(line)
            .map_err(|e| Stop { exit: Exit::RunFailed, message: format!("a line of results.jsonl: {e}") })?;
        let folder = out.join(match &item.reference {
            Some(r) => safe(r),
            None => format!("item-{}", item.index),
        });
        let mut files: Vec<(String, String)> = Vec::new();
        for (n, url) in item.output.iter().flatten().enumerate() {
            files.push((format!("output_{n}.{}", extension(url)), url.clone()));
        }
        for (name, output) in item.outputs.iter().flatten() {
            let urls: Vec<String> = match output {
                Some(atelier_client::NamedOutput::One(url)) => vec![url.clone()],
                Some(atelier_client::NamedOutput::Many(urls)) => urls.clone(),
                _ => Vec::new(),
            };
            for (n, url) in urls.iter().enumerate() {
                files.push((format!("{}_{n}.{}", safe(name), extension(url)), url.clone()));
            }
        }
        if files.is_empty() {
            continue;
        }
        std::fs::create_dir_all(&folder).map_err(|e| Stop {
            exit: Exit::RunFailed,
            message: format!("creating {}: {e}", folder.display()),
        })?;
        for (name, url) in files {
            let path = folder.join(name);
            client
                .download(&url, &path)
                .await
                .map_err(|e| Stop { exit: Exit::RunFailed, message: format!("downloading {url}: {e}") })?;
        }
    }
    Ok(())
}

/// A folder name: letters, digits, `-`, `_` and `.` kept (not leading), anything else `_`.
fn safe(text: &str) -> String {
    let name: String = text
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' })
        .collect();
    let name = name.trim_start_matches('.').to_string();
    if name.is_empty() {
        "_".to_string()
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_stay_inside_the_output_folder() {
        assert_eq!(safe("../../etc"), "_.._etc");
        assert_eq!(safe("SKU 1/a"), "SKU_1_a");
        assert_eq!(safe(".."), "_");
    }
}
