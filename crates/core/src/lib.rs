//! Atelier's domain model, free of I/O.
//!
//! This crate owns what every other layer agrees on: identifiers and API keys
//! ([`ids`]), the twelve tools and their parameter schemas ([`tools`],
//! [`params`]), the saved workflow format with its validation and discovery
//! ([`workflow`]), the compiler that turns a run request into an executable
//! [`plan::Plan`] with its price, the states and kinds the store keeps
//! ([`status`]), time as it is stored and shown ([`time`]) and the
//! request errors that the HTTP layer maps to status codes ([`error`]).
//!
//! Nothing here touches a database, the network or the file system.

pub mod dag;
pub mod engines;
pub mod error;
pub mod ids;
pub mod media;
pub mod params;
pub mod plan;
pub mod status;
pub mod time;
pub mod tools;
pub mod v2;
pub mod webhook;
pub mod workflow;

pub use error::{ErrorName, NodeError, NodeErrorName, RequestError};
