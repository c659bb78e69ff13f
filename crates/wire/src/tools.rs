//! Tools as `GET /api/v3/tools` describes them.

use atelier_core::params::{ParamSpec, ParamType};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::enums::wire_enum;

/// The kind of engine that runs a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// The built-in CPU engine.
    Builtin,
    /// A ComfyUI server.
    Comfyui,
    /// A Cog prediction server.
    Cog,
    /// An ONNX model run by the service itself.
    Onnx,
    /// An engine this version does not know.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

wire_enum!(EngineKind { Builtin => "builtin", Comfyui => "comfyui", Cog => "cog", Onnx => "onnx" });

impl From<atelier_core::engines::EngineKind> for EngineKind {
    fn from(kind: atelier_core::engines::EngineKind) -> Self {
        use atelier_core::engines::EngineKind as Core;
        match kind {
            Core::Builtin => Self::Builtin,
            Core::Comfyui => Self::Comfyui,
            Core::Cog => Self::Cog,
            Core::Onnx => Self::Onnx,
        }
    }
}

/// How faithful a tool's output is on the engine that runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Fidelity {
    /// What the tool's name promises, backed by tests on real photographs.
    Production,
    /// An approximation: right in kind and size, not in quality.
    Preview,
    /// A fidelity this version does not know.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

wire_enum!(Fidelity { Production => "production", Preview => "preview" });

impl From<atelier_core::tools::Fidelity> for Fidelity {
    fn from(fidelity: atelier_core::tools::Fidelity) -> Self {
        use atelier_core::tools::Fidelity as Core;
        match fidelity {
            Core::Production => Self::Production,
            Core::Preview => Self::Preview,
        }
    }
}

/// What a tool's `output` holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OutputKind {
    /// Image files.
    Image,
    /// MP4 videos.
    Video,
    /// A kind this version does not know.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

wire_enum!(OutputKind { Image => "image", Video => "video" });

impl From<atelier_core::tools::OutputKind> for OutputKind {
    fn from(kind: atelier_core::tools::OutputKind) -> Self {
        use atelier_core::tools::OutputKind as Core;
        match kind {
            Core::Image => Self::Image,
            Core::Video => Self::Video,
        }
    }
}

/// The type of a tool parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ParamKind {
    /// A public URL, data URI or base64 string.
    Image,
    /// One of `values`.
    Select,
    /// A JSON number between `min` and `max`.
    Number,
    /// Text.
    String,
    /// `true` or `false`.
    Boolean,
    /// A type this version does not know.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

impl ParamKind {
    /// The type as descriptors spell it (`<type:number , …>`).
    pub fn parse(name: &str) -> Self {
        match name {
            "image" => Self::Image,
            "select" => Self::Select,
            "number" => Self::Number,
            "string" => Self::String,
            "boolean" => Self::Boolean,
            _ => Self::Unknown,
        }
    }
}

impl From<&ParamType> for ParamKind {
    fn from(ty: &ParamType) -> Self {
        match ty {
            ParamType::Image => Self::Image,
            ParamType::Select { .. } => Self::Select,
            ParamType::Number { .. } => Self::Number,
            ParamType::String => Self::String,
            ParamType::Boolean => Self::Boolean,
        }
    }
}

/// A parameter of a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolParam {
    /// The parameter's name (the `input` key).
    pub name: String,
    /// Its type.
    #[serde(rename = "type")]
    pub kind: ParamKind,
    /// Whether a run must give it.
    #[serde(default)]
    pub required: bool,
    /// The value used when it is not given.
    #[serde(default)]
    pub default: Option<Value>,
    /// The allowed values of a select (or of a number with fixed values).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<Value>>,
    /// A number's least value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<f64>")]
    pub min: Option<Value>,
    /// A number's greatest value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<f64>")]
    pub max: Option<Value>,
}

impl From<&ParamSpec> for ToolParam {
    fn from(p: &ParamSpec) -> Self {
        use atelier_core::params::number_value;
        let (values, min, max) = match &p.ty {
            ParamType::Select { values } => {
                (Some(values.iter().map(|v| Value::from(*v)).collect()), None, None)
            }
            ParamType::Number { min, max, values, .. } => (
                (!values.is_empty()).then(|| values.iter().map(|v| number_value(*v)).collect()),
                Some(number_value(*min)),
                Some(number_value(*max)),
            ),
            ParamType::Image | ParamType::String | ParamType::Boolean => (None, None, None),
        };
        Self {
            name: p.name.to_string(),
            kind: ParamKind::from(&p.ty),
            required: p.is_mandatory(),
            default: p.default.to_value(),
            values,
            min,
            max,
        }
    }
}

/// A tool: its parameters, price rule and engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Tool {
    /// The tool's name (a node run's `target`).
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// The kind of engine that runs it.
    pub engine: EngineKind,
    /// How faithful its output is on that engine.
    pub fidelity: Fidelity,
    /// What its `output` holds.
    pub output: OutputKind,
    /// The price rule in words (`1 per run, 2 at scale 4`).
    #[serde(default)]
    pub price: String,
    /// The parameter a bypassed node passes through.
    #[serde(default)]
    pub primary_image: Option<String>,
    /// Its parameters.
    #[serde(default)]
    pub params: Vec<ToolParam>,
    /// The item as it came (kept by a reader; never written).
    #[serde(skip)]
    #[schemars(skip)]
    pub raw: Value,
}

impl Tool {
    /// The parameter of that name.
    pub fn param(&self, name: &str) -> Option<&ToolParam> {
        self.params.iter().find(|p| p.name == name)
    }
}
