//! The operators' probes, `/healthz` and `/readyz`: outside the public interface and its
//! document, read by load balancers and orchestrators.

use atelier_core::engines::EndpointHealth;
use serde::Serialize;

/// `/healthz`: the process answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Health {
    /// Always `ok`.
    pub status: &'static str,
}

impl Health {
    /// The answer of a live process.
    pub fn ok() -> Self {
        Self { status: "ok" }
    }
}

/// `/readyz`: whether the database answers, and how the model servers are.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Readiness {
    /// `ready` or `unavailable` (answered with 503).
    pub status: Ready,
    /// Each configured model-server endpoint; absent when none is configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engines: Option<Vec<EndpointHealth>>,
    /// The tools whose nodes wait for a model server now (none of their endpoints is
    /// healthy); absent when no model server is configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_for_engine: Option<Vec<&'static str>>,
    /// How outputs are signed.
    pub provenance: Provenance,
}

/// How this process signs its outputs' Content Credentials (`[provenance]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Provenance {
    /// Whose certificate signs.
    pub signing: Signing,
    /// What a user of the outputs sees, when it is not simply "trusted as far as the
    /// operator's certificate is".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Whose certificate signs the outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Signing {
    /// The operator's certificate (files or a signing service).
    Configured,
    /// A certificate Atelier generated: validators show the signer as unknown.
    Generated,
    /// Outputs carry no credentials (`[provenance] enabled = false`).
    Off,
}

impl Provenance {
    /// Provenance turned off.
    pub fn off() -> Self {
        Provenance {
            signing: Signing::Off,
            note: Some("outputs carry no Content Credentials ([provenance] enabled = false)".into()),
        }
    }
}

/// Whether the service can take work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Ready {
    /// The database answers.
    Ready,
    /// The database does not answer.
    Unavailable,
}
