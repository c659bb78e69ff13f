//! Test support shared by the crates' test suites (a development dependency only):
//! - [`moto`]: moto's S3-compatible server on a free port;
//! - [`pg`]: a fresh PostgreSQL schema per test;
//! - [`images`]: image fixtures;
//! - [`otlp`] (feature `otlp`): an OTLP/HTTP trace collector;
//! - [`servers`] (feature `service`): real Cog and ComfyUI servers for the engine tests;
//! - [`service`] (feature `service`): the whole program on either backend, driven over HTTP
//!   as a client would ([`service::TestApp`]), and the lock that keeps tests which start their
//!   own processes or change the environment apart from the others ([`service::exclusive`]).
//!
//! Skips and failures: a test that needs PostgreSQL or moto says "skipped: …" and passes
//! when it is missing, unless `ATELIER_REQUIRE_POSTGRES=1` / `ATELIER_REQUIRE_S3=1` (CI),
//! where that is a failure.
//!
//! ## What is where
//!
//! Test support shared by the suites: moto's S3-compatible server (`moto.rs`), a fresh
//! PostgreSQL schema per test (`pg.rs`), image fixtures (`images.rs`), with the `otlp` feature
//! an OTLP/HTTP trace collector (`otlp.rs`), and, with the `service` feature, real Cog and
//! ComfyUI servers for the engine tests (`servers.rs`), and the whole program driven over HTTP
//! on either backend (`service.rs`, `TestApp`).
//!
//! Not here: anything the program runs.

#![allow(clippy::unwrap_used)]

pub mod images;
pub mod moto;
#[cfg(feature = "otlp")]
pub mod otlp;
pub mod pg;
#[cfg(feature = "service")]
pub mod servers;
#[cfg(feature = "service")]
pub mod service;
