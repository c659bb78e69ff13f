//! Tests that run the `atelier` binary itself (see the binary's documentation).

mod config;
mod crash;
mod live;
mod process;
mod run_cmd;
