//! Reading one execution's parameters through its tool's schema ([`ParamReader`]).

use serde_json::Value;

use super::spec::ToolSpec;
use crate::params::{Default, Params};

/// Reads parameters of one execution through its tool's schema ([`ToolSpec::reader`]).
#[derive(Debug, Clone, Copy)]
pub struct ParamReader<'a> {
    pub(super) spec: &'static ToolSpec,
    pub(super) params: &'a Params,
}

impl<'a> ParamReader<'a> {
    /// The value given, else the schema's default.
    fn get(&self, name: &str) -> Option<Value> {
        match self.params.get(name) {
            Some(v) if !v.is_null() => Some(v.clone()),
            _ => {
                let spec = self.spec.param(name);
                debug_assert!(spec.is_some(), "{} has no parameter {name}", self.spec.name);
                spec.and_then(|p| p.default.to_value())
            }
        }
    }

    /// A string or select parameter; empty when absent without a default.
    pub fn text(&self, name: &str) -> &'a str {
        match self.params.get(name).and_then(Value::as_str) {
            Some(s) => s,
            None => match self.spec.param(name).map(|p| p.default) {
                Some(Default::Str(s)) => s,
                _ => "",
            },
        }
    }

    /// A select parameter as its enum ([`crate::choices`]): the value given, or the default.
    /// An error names a value the enum does not know, which the schema does not let through.
    pub fn choice<T: std::str::FromStr>(&self, name: &str) -> Result<T, String> {
        let text = self.text(name);
        text.parse().map_err(|_| format!("{name}: {text:?} is not one of its values"))
    }

    /// [`Self::choice`] of a parameter the tool may not have (a mapping shared by tools whose
    /// schemas differ): `None` when its schema has no such parameter.
    pub fn choice_if_any<T: std::str::FromStr>(&self, name: &str) -> Result<Option<T>, String> {
        match self.spec.param(name) {
            Some(_) => self.choice(name).map(Some),
            None => Ok(None),
        }
    }

    /// A number parameter; 0 when absent without a default.
    pub fn number(&self, name: &str) -> f64 {
        self.get(name).and_then(|v| v.as_f64()).unwrap_or(0.0)
    }

    /// A boolean parameter; false when absent without a default.
    pub fn flag(&self, name: &str) -> bool {
        self.get(name).and_then(|v| v.as_bool()).unwrap_or(false)
    }

    /// How many files to make: the tool's output count for these parameters.
    pub fn outputs(&self) -> u32 {
        self.spec.outputs_per_run(self.params)
    }
}
