//! Peak memory of one task (decode, process, encode) per production tool at 4 MP and 16 MP,
//! each in a fresh child process, from the kernel's high-water mark of resident memory
//! (`VmHWM`).

use std::path::Path;
use std::process::Command;

use atelier_imaging::{self as imaging, Limits};
use image::ImageFormat;

use crate::inputs::{scene, Error, Inputs};
use crate::report;
use crate::tools;

/// Target: the task's peak at most this many times the decoded input.
const TARGET: f64 = 4.0;

/// The input sizes: 4 MP and 16 MP portraits (2:3), as the growth benchmark sends.
const SIZES: [(u32, u32, &str); 2] = [(1632, 2448, "4 MP"), (3264, 4896, "16 MP")];

/// The argument that makes the binary run one task and report its memory.
pub const CHILD_FLAG: &str = "--memory-child";

/// `VmHWM` of this process in KiB.
fn high_water_kib() -> Result<u64, Error> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).ok_or("no VmHWM in /proc/self/status")?;
    Ok(line.trim_start_matches("VmHWM:").trim().trim_end_matches("kB").trim().parse()?)
}

/// Child side: runs `tool` once on the image file `input` as the service's task does (the
/// decoded input freed once processed, then the output encoded) and prints `BEFORE_KIB
/// AFTER_KIB`, the high-water mark with the input file loaded and after the task. Prints
/// `refused` where the service would refuse the task (an upscale over the output limits).
pub fn child(tool: &str, input: &Path) -> Result<(), Error> {
    let tool = tools::production().into_iter().find(|t| t.name == tool).ok_or("unknown tool")?;
    let bytes = std::fs::read(input)?;
    let limits = Limits::default();
    let info = imaging::probe(&bytes, &limits)?;
    if let Some(f) = tool.upscale {
        let (w, h) = (u64::from(info.width) * u64::from(f), u64::from(info.height) * u64::from(f));
        if w * h > limits.max_pixels || w.max(h) > u64::from(limits.max_side) {
            println!("refused");
            return Ok(());
        }
    }
    let before = high_water_kib()?;
    let img = imaging::decode(&bytes, &limits)?;
    let out = (tool.process)(img)?;
    drop(std::hint::black_box(out.encode()?));
    println!("{before} {}", high_water_kib()?);
    Ok(())
}

/// Parent side: writes the inputs, runs one fresh child per tool and size; prints the section.
pub fn run(i: &Inputs) -> Result<(), Error> {
    let exe = std::env::current_exe()?;
    let mut inputs = Vec::new();
    for (w, h, label) in SIZES {
        let path = i.dir.join(format!("scene-{w}x{h}.png"));
        scene(w, h).save_with_format(&path, ImageFormat::Png)?;
        inputs.push((path, f64::from(w) * f64::from(h) * 3.0 / 1024.0, label));
    }
    let mut rows = Vec::new();
    let mut missed = Vec::new();
    for tool in tools::production() {
        let mut row = vec![tool.name.to_string()];
        let mut met = true;
        for (path, decoded_kib, label) in &inputs {
            let out = Command::new(&exe).arg(CHILD_FLAG).arg(tool.name).arg(path).output()?;
            if !out.status.success() {
                return Err(
                    format!("{} at {label}: {}", tool.name, String::from_utf8_lossy(&out.stderr)).into()
                );
            }
            let text = String::from_utf8(out.stdout)?;
            if text.trim() == "refused" {
                row.extend(["refused (output over the limits)".into(), "".into()]);
                continue;
            }
            let kib: Vec<f64> = text.split_whitespace().map(str::parse).collect::<Result<_, _>>()?;
            let [before, after] = kib[..] else {
                return Err(format!("unexpected child output {text:?}").into());
            };
            let ratio = (after - before) / decoded_kib;
            if ratio > TARGET {
                met = false;
                missed.push(format!(
                    "{} at {label}: peak {} × the decoded input (target ≤ {TARGET})",
                    tool.name,
                    report::ratio(ratio)
                ));
            }
            row.extend([format!("{:.1} MiB", (after - before) / 1024.0), report::ratio(ratio)]);
        }
        row.push(report::yes_no(met));
        rows.push(row);
    }
    println!("## Peak memory per task\n");
    println!(
        "One task per fresh process, as the service runs it: decode the PNG, process, drop the \
         decoded input, encode the output. Peak = rise of `VmHWM` (peak resident memory) over the \
         task, from `/proc/self/status` read after the input file is loaded and again after the \
         task. Inputs: the scene at {} ({:.1} MiB decoded, RGB8) and {} ({:.1} MiB). The \
         built-in engine's classical cut-out (no learned model). Target: ≤ {TARGET}× at both \
         sizes.\n",
        SIZES[0].2,
        inputs[0].1 / 1024.0,
        SIZES[1].2,
        inputs[1].1 / 1024.0
    );
    report::table(
        &["tool", "peak, 4 MP", "÷ decoded input", "peak, 16 MP", "÷ decoded input", "target met"],
        &rows,
    );
    report::missed("memory", &missed);
    Ok(())
}
