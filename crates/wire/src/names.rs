//! The schemas of the error names: the names are core's lists, which the types keep as
//! strings (a name a reader does not know stays readable).

use schemars::{json_schema, Schema, SchemaGenerator};

/// The schema of a run or node error's `name`: one of core's node error names.
pub(crate) fn node_error_name(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "enum": atelier_core::NodeErrorName::NAMES})
}

/// The schema of an error answer's `name`: one of core's error names.
pub(crate) fn error_name(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "enum": atelier_core::ErrorName::NAMES})
}

/// The schema of a spend limit's holder: `key` or `account`.
pub(crate) fn spend_holder(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "enum": atelier_core::spend::Holder::NAMES})
}

/// The schema of a spend limit's period: `day` or `month`.
pub(crate) fn spend_period(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "enum": atelier_core::spend::Period::NAMES})
}
