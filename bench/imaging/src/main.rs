//! `bench/imaging.sh` (`target/release/imaging-bench`, built with `atelier`): Atelier's imaging operations
//! beside Pillow and libvips (through `peers.py`) on the same images in the same run, the
//! production tools' processing time, every tool through the service, and peak memory per
//! task. Prints a Markdown report for BENCHMARKS.md.

mod inputs;
mod measure;
mod memory;
mod peers;
mod report;
mod service;
mod shared;
mod tools;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use clap::Parser;

use inputs::{Error, Inputs};
use measure::Sampler;

const SECTIONS: [&str; 4] = ["shared", "tools", "service", "memory"];

#[derive(Parser)]
#[command(about = "Atelier's imaging benchmark; prints Markdown")]
struct Args {
    /// Timed runs per measurement (median reported, after one warm-up).
    #[arg(default_value_t = 7)]
    runs: usize,
    /// Few runs, each measurement cut short after 1.5 s: finishes in about two minutes.
    #[arg(long)]
    quick: bool,
    /// Sections to run, comma-separated: shared, tools, service, memory (default: all).
    #[arg(long, value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(SECTIONS))]
    only: Vec<String>,
    /// The `atelier` binary for the service section (default: beside this one).
    #[arg(long)]
    atelier: Option<PathBuf>,
    /// Service section: the server's workers and the concurrent clients (default: cores).
    #[arg(long)]
    workers: Option<usize>,
    /// Internal: run one task of TOOL on the image FILE and print its memory high-water marks.
    #[arg(long, num_args = 2, value_names = ["TOOL", "FILE"], hide = true)]
    memory_child: Vec<String>,
}

fn command_output(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn cpu_model() -> String {
    command_output("lscpu", &[])
        .and_then(|text| {
            text.lines().find_map(|l| l.strip_prefix("Model name:").map(|m| m.trim().to_string()))
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

fn main() -> Result<(), Error> {
    let args = Args::parse();
    if let [tool, file] = &args.memory_child[..] {
        return memory::child(tool, file.as_ref());
    }
    let sampler = if args.quick {
        Sampler { runs: 3, max: Duration::from_millis(1500) }
    } else {
        Sampler { runs: args.runs.max(1), max: Duration::from_secs(3600) }
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let run = |s: &str| args.only.is_empty() || args.only.iter().any(|o| o == s);

    let command = std::env::var("ATELIER_BENCH_COMMAND").unwrap_or_else(|_| {
        let argv: Vec<String> = std::env::args().skip(1).collect();
        format!("target/release/imaging-bench {}", argv.join(" "))
    });
    println!("# Imaging benchmark\n");
    println!("- Date: {}", command_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]).unwrap_or_default());
    println!("- Command: `{}`", command.trim());
    println!("- Machine: {}, {cores} logical cores (lscpu, available parallelism)", cpu_model());
    println!(
        "- Figures: median of {} timed runs after one warm-up{}.\n",
        sampler.runs,
        if args.quick {
            "; --quick: a measurement stops after 1.5 s with fewer runs (at least one), and an \
             operation whose warm-up alone took longer is timed by that one call"
        } else {
            ""
        }
    );

    let dir = std::env::temp_dir().join(format!("atelier-bench-{}", std::process::id()));
    let inputs = Inputs::create(&dir)?;
    let result = (|| -> Result<(), Error> {
        if run("shared") {
            shared::run(&inputs, &sampler)?;
        }
        if run("tools") {
            tools::run(&inputs, &sampler)?;
        }
        if run("service") {
            let atelier = match &args.atelier {
                Some(path) => path.clone(),
                None => std::env::current_exe()?.with_file_name("atelier"),
            };
            service::run(&inputs, &sampler, &atelier, args.workers.unwrap_or(cores))?;
        }
        if run("memory") {
            memory::run(&inputs)?;
        }
        Ok(())
    })();
    std::fs::remove_dir_all(&dir)?;
    result
}
