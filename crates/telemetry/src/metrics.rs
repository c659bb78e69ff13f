//! The process's Prometheus recorder. Counters and histograms are recorded where things
//! happen, through the `metrics` facade (docs/OPERATIONS.md lists every series); this installs
//! the recorder that keeps them and drains its histograms. Serving them is the API's
//! (`/metrics`, `crates/api/src/metrics.rs`).

/// What renders the recorded series (the API serves it at `/metrics`).
pub use metrics_exporter_prometheus::PrometheusHandle;

/// Buckets of every duration histogram, in seconds: from half a millisecond (a poll) to five
/// minutes (a node on a model server).
pub const DURATION_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
    300.0,
];

/// Installs this process's recorder, once (a second call, as in tests that start several
/// services in one process, gets the same handle), and records the build's version. Starts
/// nothing: call [`PrometheusHandle::run_upkeep`] now and then ([`upkeep`]).
pub fn install() -> Result<PrometheusHandle, String> {
    static HANDLE: std::sync::OnceLock<Result<PrometheusHandle, String>> = std::sync::OnceLock::new();
    let handle = HANDLE.get_or_init(|| {
        let builder = metrics_exporter_prometheus::PrometheusBuilder::new()
            .set_buckets(DURATION_BUCKETS)
            .map_err(|e| e.to_string())?;
        let handle = builder.install_recorder().map_err(|e| e.to_string())?;
        metrics::gauge!("atelier_build_info", "version" => env!("CARGO_PKG_VERSION")).set(1.0);
        Ok(handle)
    });
    handle.clone()
}

/// Keeps the recorder's histograms drained, every few seconds, until `stop` resolves.
pub async fn upkeep(handle: PrometheusHandle, stop: impl std::future::Future<Output = ()>) {
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => return,
            () = tokio::time::sleep(std::time::Duration::from_secs(5)) => handle.run_upkeep(),
        }
    }
}
