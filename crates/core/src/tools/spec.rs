//! What a tool is, as data: its parameters, what it outputs, its price rule and the fidelity
//! of the built-in engine's output ([`ToolSpec`]).

use serde_json::Value;

use super::id::ToolId;
use crate::params::{ParamSpec, ParamType, Params};
use crate::status::string_enum;

/// How faithful the built-in engine's output is for a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fidelity {
    /// Real processing, usable as is.
    Production,
    /// A deterministic placeholder of the right kind, count and size, for
    /// integration testing; production quality comes from a remote engine.
    Preview,
}

string_enum!(Fidelity { Production => "production", Preview => "preview" });

/// What a tool's `output` holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutputKind {
    Image,
    Video,
}

string_enum!(OutputKind { Image => "image", Video => "video" });

/// Every tool has one output, `output`: a list of URLs.
pub const OUTPUT: &str = "output";

/// How many files one execution of a tool produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outputs {
    One,
    /// As many as this integer parameter says (at least one).
    Param(&'static str),
}

/// What one execution of a tool costs, in tokens. The price of a node is this times its
/// fan-out; a bypassed node costs nothing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    /// Tokens per execution, or per output file when `per_output`, unless `by` says otherwise.
    pub base: i64,
    pub per_output: bool,
    /// A parameter whose value changes the price: `(value, tokens)` replace `base` when the
    /// parameter has that value.
    pub by: Option<(&'static str, &'static [(Lit, i64)])>,
}

/// A parameter value spelled statically, in a price table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Lit {
    Str(&'static str),
    Num(f64),
    Bool(bool),
}

impl Lit {
    pub(super) fn matches(self, value: Option<&Value>) -> bool {
        match self {
            Self::Str(s) => value.and_then(Value::as_str) == Some(s),
            Self::Num(n) => value.and_then(Value::as_f64) == Some(n),
            Self::Bool(b) => value.and_then(Value::as_bool) == Some(b),
        }
    }

    /// As a key of `[prices.TOOL]` and in rule texts: `Pro`, `4`, `true`.
    pub fn key(self) -> String {
        match self {
            Self::Str(s) => s.to_string(),
            Self::Num(n) => crate::params::number_value(n).to_string(),
            Self::Bool(b) => b.to_string(),
        }
    }
}

impl Price {
    pub(super) const fn flat(base: i64) -> Self {
        Self { base, per_output: false, by: None }
    }

    pub(super) const fn per_output(base: i64) -> Self {
        Self { base, per_output: true, by: None }
    }

    pub(super) const fn by(
        base: i64,
        per_output: bool,
        param: &'static str,
        cases: &'static [(Lit, i64)],
    ) -> Self {
        Self { base, per_output, by: Some((param, cases)) }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub id: ToolId,
    /// The interface's name of the tool.
    pub name: &'static str,
    pub description: &'static str,
    pub params: &'static [ParamSpec],
    pub output: OutputKind,
    /// The image input that a bypassed node passes through.
    pub primary_image: Option<&'static str>,
    pub fidelity: Fidelity,
    pub outputs: Outputs,
    /// The built-in price; `[prices]` in the configuration may change its numbers ([`Prices`]).
    pub price: Price,
}

impl ToolSpec {
    pub fn param(&self, name: &str) -> Option<&'static ParamSpec> {
        self.params.iter().find(|p| p.name == name)
    }

    /// How many files one execution produces, from resolved params.
    pub fn outputs_per_run(&self, params: &Params) -> u32 {
        match self.outputs {
            Outputs::One => 1,
            Outputs::Param(name) => num(params, name).map_or(1, |n| n.max(1.0) as u32),
        }
    }

    /// Parameters of image type.
    pub fn image_params(&self) -> impl Iterator<Item = &'static ParamSpec> {
        self.params.iter().filter(|p| p.ty == ParamType::Image)
    }
}

pub(super) fn num(params: &Params, key: &str) -> Option<f64> {
    params.get(key).and_then(Value::as_f64)
}

pub(super) fn text_of<'a>(params: &'a Params, key: &str) -> Option<&'a str> {
    params.get(key).and_then(Value::as_str)
}
