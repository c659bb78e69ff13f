//! Peak memory of one task (decode, process, encode) per production tool, each in a fresh
//! child process, from the kernel's high-water mark of resident memory (`VmHWM`).

use std::path::Path;
use std::process::Command;

use atelier_imaging::{self as imaging, Limits};

use crate::inputs::{Error, Inputs};
use crate::report;
use crate::tools;

/// Target: the task's peak at most this many times the decoded input.
const TARGET: f64 = 4.0;

/// The argument that makes the binary run one task and report its memory.
pub const CHILD_FLAG: &str = "--memory-child";

/// `VmHWM` of this process in KiB.
fn high_water_kib() -> Result<u64, Error> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).ok_or("no VmHWM in /proc/self/status")?;
    Ok(line.trim_start_matches("VmHWM:").trim().trim_end_matches("kB").trim().parse()?)
}

/// Child side: runs `tool` once on the image file `input` and prints
/// `BEFORE_KIB AFTER_KIB`, the high-water mark with the input bytes loaded and after the task.
pub fn child(tool: &str, input: &Path) -> Result<(), Error> {
    let tool = tools::production().into_iter().find(|t| t.name == tool).ok_or("unknown tool")?;
    let bytes = std::fs::read(input)?;
    let before = high_water_kib()?;
    let img = imaging::decode(&bytes, &Limits::default())?;
    let out = (tool.process)(&img)?.encode()?;
    drop(std::hint::black_box(out));
    println!("{before} {}", high_water_kib()?);
    Ok(())
}

/// Parent side: one fresh child per tool; prints the memory section.
pub fn run(i: &Inputs) -> Result<(), Error> {
    let exe = std::env::current_exe()?;
    let input = i.dir.join("scene.png");
    let decoded_kib = (i.scene.width() * i.scene.height() * 3) as f64 / 1024.0;
    let mut rows = Vec::new();
    let mut missed = Vec::new();
    for tool in tools::production() {
        let out = Command::new(&exe).arg(CHILD_FLAG).arg(tool.name).arg(&input).output()?;
        if !out.status.success() {
            return Err(format!("{}: {}", tool.name, String::from_utf8_lossy(&out.stderr)).into());
        }
        let text = String::from_utf8(out.stdout)?;
        let kib: Vec<f64> = text.split_whitespace().map(str::parse).collect::<Result<_, _>>()?;
        let [before, after] = kib[..] else { return Err(format!("unexpected child output {text:?}").into()) };
        let peak = after - before;
        let ratio = peak / decoded_kib;
        if ratio > TARGET {
            missed.push(format!(
                "{}: peak {} × the decoded input (target ≤ {TARGET})",
                tool.name,
                report::ratio(ratio)
            ));
        }
        rows.push(vec![
            tool.name.into(),
            format!("{:.1} MiB", peak / 1024.0),
            report::ratio(ratio),
            report::yes_no(ratio <= TARGET),
        ]);
    }
    println!("## Peak memory per task\n");
    println!(
        "One task per fresh process: decode the 1024x1536 PNG, process, encode the output. Peak = \
         rise of `VmHWM` (peak resident memory) over the task, from `/proc/self/status` read \
         after the input file is loaded and again after the task. Decoded input: {:.1} MiB \
         (RGB8). Target: ≤ {TARGET}×.\n",
        decoded_kib / 1024.0
    );
    report::table(&["tool", "peak during task", "÷ decoded input", "target met"], &rows);
    report::missed("memory", &missed);
    Ok(())
}
