//! What the service tells its operators beside its logs: OpenTelemetry traces ([`traces`]:
//! one trace per run, across the API and worker processes) and the Prometheus metrics
//! recorder ([`metrics`]: installed once per process; the series are recorded where things
//! happen, through the `metrics` facade, and served by the API's `/metrics`).
//!
//! ## What is where
//!
//! What operators get beside logs (docs/OPERATIONS.md): OpenTelemetry traces (`traces.rs`: the
//! OTLP/HTTP exporter and the `tracing` layer that turns spans of the target `atelier::trace`
//! into OpenTelemetry spans; a span's `traceparent`, and a span made the child of a stored or
//! received one) and the Prometheus recorder (`metrics.rs`: installed once per process, its
//! histograms' buckets, its upkeep).
//!
//! Not here: which spans and series exist (their owners make them: `api` the request and
//! delivery spans and the HTTP series, `engine` the node spans); serving `/metrics` (`api`'s
//! `metrics.rs`).

pub mod metrics;
pub mod traces;
