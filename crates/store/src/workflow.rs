//! Saved workflows as callers see them: an account's own, and system templates (no account).

use atelier_core::time::Micros;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowRow {
    pub id: i64,
    pub name: String,
    pub system: bool,
    pub definition: Value,
    pub created_at: Micros,
}
