//! Every integration test of the program, as one binary with a module per suite
//! (`cargo test -p atelier-cli --test integration`):
//! - `interface::…`: the HTTP interface suites, each test on an app of its own
//!   (`atelier_testkit::service::TestApp`). `.ci/run` runs them a second time on PostgreSQL and
//!   S3-compatible storage (`ATELIER_TEST_BACKEND=postgres-s3 … -- interface::`).
//! - `engines::…`: tools routed to real model servers (Cog, ComfyUI) and to ONNX models.
//! - `processes::…`: tests that run the `atelier` binary itself: configuration, processes,
//!   crash recovery. Those that time leases or change the environment hold
//!   `atelier_testkit::service::exclusive()`, so they run alone.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod engines;
mod interface;
mod processes;
