//! Timing: medians of repeated runs, single-threaded and two at once.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// How many timed runs a measurement takes.
#[derive(Debug, Clone, Copy)]
pub struct Sampler {
    /// Timed runs after one untimed warm-up.
    pub runs: usize,
    /// A measurement stops early once this much time has passed (keeping at least one run),
    /// so that multi-second operations do not dominate a quick run.
    pub max: Duration,
}

impl Sampler {
    /// Wall-clock seconds of up to `runs` calls of `f`, after a warm-up call; just the
    /// warm-up's when that alone took longer than `max`.
    fn samples<T>(&self, mut f: impl FnMut() -> T) -> Vec<f64> {
        self.samples_of(|| (), |()| f())
    }

    /// [`Self::samples`] of `f` on a fresh argument from `make` each call; only `f` is timed.
    fn samples_of<A, T>(&self, mut make: impl FnMut() -> A, mut f: impl FnMut(A) -> T) -> Vec<f64> {
        let arg = make();
        let start = Instant::now();
        black_box(f(arg));
        if start.elapsed() > self.max {
            return vec![start.elapsed().as_secs_f64()];
        }
        let start = Instant::now();
        let mut out = Vec::with_capacity(self.runs);
        while out.len() < self.runs && (out.is_empty() || start.elapsed() < self.max) {
            let arg = make();
            let t = Instant::now();
            black_box(f(arg));
            out.push(t.elapsed().as_secs_f64());
        }
        out
    }

    /// Median latency of one call, in milliseconds.
    pub fn median_ms<T>(&self, f: impl FnMut() -> T) -> f64 {
        median(self.samples(f)) * 1000.0
    }

    /// Median latency of one call of `f` on an argument `make` returns (not timed), in
    /// milliseconds: for work that takes ownership of its input.
    pub fn median_ms_of<A, T>(&self, make: impl FnMut() -> A, f: impl FnMut(A) -> T) -> f64 {
        median(self.samples_of(make, f)) * 1000.0
    }

    /// Throughput with both cores busy: two independent calls on two threads at once,
    /// in operations per second (2 / median wall time of the pair).
    pub fn pair_ops_per_s<T: Send>(&self, f: impl Fn() -> T + Sync) -> f64 {
        let pair = || {
            std::thread::scope(|s| {
                let other = s.spawn(|| black_box(f()));
                black_box(f());
                drop(other.join());
            })
        };
        2.0 / median(self.samples(pair))
    }
}

/// Median of a sample (the mean of the middle two for an even count; NaN when empty).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}
