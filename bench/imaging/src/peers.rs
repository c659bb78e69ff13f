//! Pillow and libvips, timed by `peers.py` on the files the harness wrote.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::inputs::Error;
use crate::measure::Sampler;

/// The peers' figures of one run: `one` with libvips on one thread (and Pillow), `two` with
/// libvips on two.
pub struct Peers {
    one: Value,
    two: Value,
}

fn script(dir: &Path, sampler: &Sampler, mode: &str, vips_threads: u32) -> Result<Value, Error> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("peers.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(dir)
        .arg(sampler.runs.to_string())
        .arg(sampler.max.as_secs_f64().to_string())
        .arg(mode)
        .env("VIPS_CONCURRENCY", vips_threads.to_string())
        .output()?;
    if !out.status.success() {
        return Err(format!("peers.py failed: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(serde_json::from_slice(&out.stdout)?)
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

impl Peers {
    pub fn measure(dir: &Path, sampler: &Sampler) -> Result<Peers, Error> {
        Ok(Peers { one: script(dir, sampler, "one", 1)?, two: script(dir, sampler, "two", 2)? })
    }

    /// Pillow, one operation at a time: median ms.
    pub fn pillow_ms(&self, op: &str) -> f64 {
        num(&self.one["pillow"][op])
    }

    /// Pillow, two independent operations on two threads: ops/s.
    pub fn pillow_pair(&self, op: &str) -> f64 {
        num(&self.one["pillow_pair"][op])
    }

    /// libvips with `threads` worker threads (1 or 2), one operation at a time: median ms.
    pub fn libvips_ms(&self, op: &str, threads: u32) -> f64 {
        let run = if threads == 1 { &self.one } else { &self.two };
        num(&run["libvips"][op])
    }

    /// Size in bytes of the 2048x3072 scene encoded by `peer` ("pillow" or "libvips") in
    /// `format` ("PNG", "JPEG" or "WebP").
    pub fn size(&self, peer: &str, format: &str) -> f64 {
        num(&self.one["sizes"][peer][format])
    }

    pub fn versions(&self) -> String {
        let v = &self.one["versions"];
        let s = |k: &str| v[k].as_str().unwrap_or("?").to_string();
        format!(
            "Pillow {}, libvips {} (pyvips {}), Python {}",
            s("pillow"),
            s("libvips"),
            s("pyvips"),
            s("python")
        )
    }
}
