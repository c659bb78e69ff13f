//! What the service tells its operators beside its logs: OpenTelemetry traces ([`traces`]:
//! one trace per run, across the API and worker processes) and the Prometheus metrics
//! recorder ([`metrics`]: installed once per process; the series are recorded where things
//! happen, through the `metrics` facade, and served by the API's `/metrics`).

pub mod metrics;
pub mod traces;
