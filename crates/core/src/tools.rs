//! The twelve tools as data: parameter schemas, outputs, prices.
//!
//! This table is the single source for validation, discovery descriptors, v2 mapping,
//! pricing and `GET /api/v3/tools`. A tool is a [`ToolId`]; every `match` on it is exhaustive,
//! so a new tool does not compile until its spec ([`ToolId::spec`]: parameters, outputs,
//! price), its cross-field rules ([`ToolSpec::resolve`]), its v2 mapping
//! ([`crate::v2::Family::of`]) and its executor (`atelier-tools`) are decided.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::params::{Default, ParamSpec, ParamType, Params};
use crate::RequestError;

/// A tool, by the name the interface uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolId {
    VirtualTryon,
    VirtualTryonPro,
    VirtualTryonProFit,
    VirtualModel,
    Fabric,
    SketchToDress,
    Upscale,
    Multipose,
    Video,
    BackgroundRemoval,
    Reframe,
    ProductShoot,
}

impl ToolId {
    /// Every tool, in the order the interface lists them.
    pub const ALL: [ToolId; 12] = [
        Self::VirtualTryon,
        Self::VirtualTryonPro,
        Self::VirtualTryonProFit,
        Self::VirtualModel,
        Self::Fabric,
        Self::SketchToDress,
        Self::Upscale,
        Self::Multipose,
        Self::Video,
        Self::BackgroundRemoval,
        Self::Reframe,
        Self::ProductShoot,
    ];

    pub fn as_str(self) -> &'static str {
        self.spec().name
    }

    /// The tool's parameters, outputs and price.
    pub fn spec(self) -> &'static ToolSpec {
        match self {
            Self::VirtualTryon => &VIRTUAL_TRYON,
            Self::VirtualTryonPro => &VIRTUAL_TRYON_PRO,
            Self::VirtualTryonProFit => &VIRTUAL_TRYON_PRO_FIT,
            Self::VirtualModel => &VIRTUAL_MODEL,
            Self::Fabric => &FABRIC,
            Self::SketchToDress => &SKETCH_TO_DRESS,
            Self::Upscale => &UPSCALE,
            Self::Multipose => &MULTIPOSE,
            Self::Video => &VIDEO,
            Self::BackgroundRemoval => &BACKGROUND_REMOVAL,
            Self::Reframe => &REFRAME,
            Self::ProductShoot => &PRODUCT_SHOOT,
        }
    }
}

impl fmt::Display for ToolId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for ToolId {
    fn eq(&self, name: &&str) -> bool {
        self.as_str() == *name
    }
}

impl FromStr for ToolId {
    type Err = RequestError;

    fn from_str(name: &str) -> Result<Self, RequestError> {
        tool(name).map(|t| t.id)
    }
}

/// How faithful the built-in engine's output is for a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Fidelity {
    /// Real processing, usable as is.
    Production,
    /// A deterministic placeholder of the right kind, count and size, for
    /// integration testing; production quality comes from a remote engine.
    Preview,
}

/// What a tool's `output` holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputKind {
    Image,
    Video,
}

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
    fn matches(self, value: Option<&Value>) -> bool {
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
    const fn flat(base: i64) -> Self {
        Self { base, per_output: false, by: None }
    }

    const fn per_output(base: i64) -> Self {
        Self { base, per_output: true, by: None }
    }

    const fn by(base: i64, per_output: bool, param: &'static str, cases: &'static [(Lit, i64)]) -> Self {
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

const fn p(name: &'static str, ty: ParamType, required: bool, default: Default) -> ParamSpec {
    ParamSpec { name, ty, required, default, description: "" }
}

const fn image(name: &'static str, required: bool) -> ParamSpec {
    p(name, ParamType::Image, required, Default::None)
}

const fn text(name: &'static str, required: bool, default: Default) -> ParamSpec {
    p(name, ParamType::String, required, default)
}

const fn select(
    name: &'static str,
    values: &'static [&'static str],
    required: bool,
    default: Default,
) -> ParamSpec {
    p(name, ParamType::Select { values }, required, default)
}

const fn int(name: &'static str, min: f64, max: f64, default: Default) -> ParamSpec {
    p(name, ParamType::Number { min, max, integer: true, values: &[] }, false, default)
}

const SEED: ParamSpec = p(
    "seed",
    ParamType::Number { min: 0.0, max: 4_294_967_295.0, integer: true, values: &[] },
    false,
    Default::None,
);

const TRYON_CATEGORIES: &[&str] = crate::choices::GARMENT_CATEGORIES;
const PRO_CATEGORIES: &[&str] = crate::choices::Category::NAMES;
const PRO_ASPECTS: &[&str] = &["3:4", "match_input_image", "1:1", "2:3", "4:5", "9:16", "16:9"];
const PRO_FIT_ASPECTS: &[&str] = &["match_input_image", "3:4", "1:1", "2:3", "4:5", "9:16", "16:9"];
/// Aspect ratios the reframe tool produces.
pub const REFRAME_ASPECTS: &[&str] = &["1:1", "4:5", "3:4", "2:3", "9:16", "16:9", "4:3", "3:2", "5:4"];
const SHOOT_ASPECTS: &[&str] = &["1:1", "4:5", "3:4", "9:16", "16:9"];

macro_rules! pro_params {
    ($aspects:expr $(, $extra:expr)*) => {
        &[
            image("model_image", true),
            image("garment_image", true),
            select("category", PRO_CATEGORIES, true, Default::Str("tops")),
            select("aspect_ratio", $aspects, false, Default::Str($aspects[0])),
            image("pose_image", false),
            image("style_image", false),
            text("garment_description", false, Default::None),
            $($extra,)*
            SEED,
        ]
    };
}

/// Every tool, in the order the interface lists them.
pub static TOOLS: [&ToolSpec; 12] = [
    &VIRTUAL_TRYON,
    &VIRTUAL_TRYON_PRO,
    &VIRTUAL_TRYON_PRO_FIT,
    &VIRTUAL_MODEL,
    &FABRIC,
    &SKETCH_TO_DRESS,
    &UPSCALE,
    &MULTIPOSE,
    &VIDEO,
    &BACKGROUND_REMOVAL,
    &REFRAME,
    &PRODUCT_SHOOT,
];

static VIRTUAL_TRYON: ToolSpec = ToolSpec {
    id: ToolId::VirtualTryon,
    name: "virtual_tryon",
    description: "Dress the person of model_image in the garment of garment_image.",
    params: &[
        select("model_name", &["Beta", "Turbo"], false, Default::Str("Beta")),
        image("model_image", true),
        image("garment_image", true),
        select("category", TRYON_CATEGORIES, true, Default::Str("tops")),
        text("garment_description", false, Default::None),
        SEED,
    ],
    output: OutputKind::Image,
    primary_image: Some("model_image"),
    fidelity: Fidelity::Preview,
    outputs: Outputs::One,
    price: Price::flat(1),
};

static VIRTUAL_TRYON_PRO: ToolSpec = ToolSpec {
    id: ToolId::VirtualTryonPro,
    name: "virtual_tryon_pro",
    description: "Higher-fidelity try-on with aspect ratio, pose and style references.",
    params: pro_params!(PRO_ASPECTS),
    output: OutputKind::Image,
    primary_image: Some("model_image"),
    fidelity: Fidelity::Preview,
    outputs: Outputs::One,
    price: Price::flat(3),
};

static VIRTUAL_TRYON_PRO_FIT: ToolSpec = ToolSpec {
    id: ToolId::VirtualTryonProFit,
    name: "virtual_tryon_pro_fit",
    description: "Pro try-on with precise garment sizing.",
    params: pro_params!(
        PRO_FIT_ASPECTS,
        select("garment_size", &["M", "S", "L", "XL"], false, Default::Str("M"))
    ),
    output: OutputKind::Image,
    primary_image: Some("model_image"),
    fidelity: Fidelity::Preview,
    outputs: Outputs::One,
    price: Price::flat(4),
};

static VIRTUAL_MODEL: ToolSpec = ToolSpec {
    id: ToolId::VirtualModel,
    name: "virtual_model",
    description: "Generate fashion model images from a text description.",
    params: &[
        select("model_name", &["Standard", "Pro", "Plus"], false, Default::Str("Standard")),
        text("ethnicity", true, Default::None),
        select("gender", &["Female", "Male"], true, Default::None),
        text("dresstype", true, Default::None),
        text("background", true, Default::None),
        text("age", false, Default::Str("Adult")),
        text("improve_prompt", false, Default::None),
        p("closeup", ParamType::Boolean, false, Default::Bool(false)),
        image("face_reference", false),
        int("num_outputs", 1.0, 4.0, Default::Num(1.0)),
        SEED,
    ],
    output: OutputKind::Image,
    primary_image: None,
    fidelity: Fidelity::Preview,
    outputs: Outputs::Param("num_outputs"),
    price: Price::by(1, true, "model_name", &[(Lit::Str("Pro"), 2), (Lit::Str("Plus"), 3)]),
};

static FABRIC: ToolSpec = ToolSpec {
    id: ToolId::Fabric,
    name: "fabric",
    description: "Change the fabric of a garment worn in model_image. Built-in engine: re-textures the category's \
                  band of the person the learned subject model finds; reliable on full-length and three-quarter \
                  shots of one person facing the camera, not on close-ups (a face or hands inside the band are \
                  re-textured too).",
    params: &[
        image("model_image", true),
        select("category", TRYON_CATEGORIES, true, Default::Str("tops")),
        image("fabric_image", false),
        text("fabric_description", false, Default::None),
        p("upscale", ParamType::Boolean, false, Default::Bool(false)),
        SEED,
    ],
    output: OutputKind::Image,
    primary_image: Some("model_image"),
    fidelity: Fidelity::Production,
    outputs: Outputs::One,
    price: Price::by(2, false, "upscale", &[(Lit::Bool(true), 3)]),
};

static SKETCH_TO_DRESS: ToolSpec = ToolSpec {
    id: ToolId::SketchToDress,
    name: "sketch_to_dress",
    description: "Turn a fashion sketch into a rendered dress.",
    params: &[
        image("image", true),
        select("gender", &["female", "male"], false, Default::Str("female")),
        select("mode", &["draw", "upload"], false, Default::Str("draw")),
        text("improve_prompt", false, Default::None),
        SEED,
    ],
    output: OutputKind::Image,
    primary_image: Some("image"),
    fidelity: Fidelity::Preview,
    outputs: Outputs::One,
    price: Price::flat(2),
};

static UPSCALE: ToolSpec = ToolSpec {
    id: ToolId::Upscale,
    name: "upscale",
    description: "Enlarge an image 2x or 4x (Lanczos-3 with detail sharpening).",
    params: &[
        image("image", true),
        p(
            "scale",
            ParamType::Number { min: 2.0, max: 4.0, integer: true, values: &[2.0, 4.0] },
            false,
            Default::Num(2.0),
        ),
        select("output_format", crate::choices::FileFormat::NAMES, false, Default::Str("png")),
        SEED,
    ],
    output: OutputKind::Image,
    primary_image: Some("image"),
    fidelity: Fidelity::Production,
    outputs: Outputs::One,
    price: Price::by(1, false, "scale", &[(Lit::Num(4.0), 2)]),
};

static MULTIPOSE: ToolSpec = ToolSpec {
    id: ToolId::Multipose,
    name: "multipose",
    description: "Variations of a model image in other poses.",
    params: &[
        image("image", true),
        int("num_outputs", 1.0, 8.0, Default::Num(4.0)),
        image("pose_image", false),
        SEED,
    ],
    output: OutputKind::Image,
    primary_image: Some("image"),
    fidelity: Fidelity::Preview,
    outputs: Outputs::Param("num_outputs"),
    price: Price::per_output(1),
};

static VIDEO: ToolSpec = ToolSpec {
    id: ToolId::Video,
    name: "video",
    description: "A short MP4 clip of camera moves over an image.",
    params: &[
        image("image", true),
        p(
            "duration",
            ParamType::Number { min: 2.0, max: 10.0, integer: false, values: &[] },
            false,
            Default::Num(5.0),
        ),
        select(
            "motion",
            &["auto", "zoom_in", "zoom_out", "pan_left", "pan_right"],
            false,
            Default::Str("auto"),
        ),
        text("prompt", false, Default::None),
        SEED,
    ],
    output: OutputKind::Video,
    primary_image: Some("image"),
    fidelity: Fidelity::Production,
    outputs: Outputs::One,
    price: Price::flat(5),
};

static BACKGROUND_REMOVAL: ToolSpec = ToolSpec {
    id: ToolId::BackgroundRemoval,
    name: "background_removal",
    description:
        "Cut the subject out: transparent background, or a solid colour. Built-in engine: a learned \
                  salient-object model (U2-Net-p) fused with a backdrop model and an edge-refined matte. \
                  Not reliable on white products on white backdrops whose outline is only a faint seam.",
    params: &[
        image("image", true),
        text("background_color", false, Default::Str("")),
        select("output_format", crate::choices::TRANSPARENT_FORMATS, false, Default::Str("png")),
        SEED,
    ],
    output: OutputKind::Image,
    primary_image: Some("image"),
    fidelity: Fidelity::Production,
    outputs: Outputs::One,
    price: Price::flat(1),
};

static REFRAME: ToolSpec = ToolSpec {
    id: ToolId::Reframe,
    name: "reframe",
    description: "Change an image's aspect ratio by subject-aware crop or extension.",
    params: &[
        image("image", true),
        select("aspect_ratio", REFRAME_ASPECTS, true, Default::Str("1:1")),
        select("mode", crate::choices::ReframeMode::NAMES, false, Default::Str("auto")),
        SEED,
    ],
    output: OutputKind::Image,
    primary_image: Some("image"),
    fidelity: Fidelity::Production,
    outputs: Outputs::One,
    price: Price::flat(1),
};

static PRODUCT_SHOOT: ToolSpec = ToolSpec {
    id: ToolId::ProductShoot,
    name: "product_shoot",
    description: "Place a product photo in a studio scene.",
    params: &[
        image("product_image", true),
        text("scene", false, Default::Str("white studio")),
        select("aspect_ratio", SHOOT_ASPECTS, false, Default::Str("1:1")),
        int("num_outputs", 1.0, 4.0, Default::Num(1.0)),
        SEED,
    ],
    output: OutputKind::Image,
    primary_image: Some("product_image"),
    fidelity: Fidelity::Production,
    outputs: Outputs::Param("num_outputs"),
    price: Price::per_output(2),
};

/// Looks a tool up by its v3 name.
pub fn tool(name: &str) -> Result<&'static ToolSpec, RequestError> {
    TOOLS.iter().copied().find(|t| t.name == name).ok_or_else(|| RequestError::UnknownTool(name.to_string()))
}

/// The tool names, for error messages.
pub fn tool_names() -> Vec<Value> {
    TOOLS.iter().map(|t| Value::from(t.name)).collect()
}

fn num(params: &Params, key: &str) -> Option<f64> {
    params.get(key).and_then(Value::as_f64)
}

fn text_of<'a>(params: &'a Params, key: &str) -> Option<&'a str> {
    params.get(key).and_then(Value::as_str)
}

impl ToolSpec {
    pub fn param(&self, name: &str) -> Option<&'static ParamSpec> {
        self.params.iter().find(|p| p.name == name)
    }

    /// Fills defaults and checks every value, the cross-field rules included.
    /// `linked` names parameters that an upstream node will feed: they count
    /// as present. Errors name the parameter; callers prefix the node.
    pub fn resolve(&self, given: &Params, linked: &[&str]) -> Result<Params, RequestError> {
        let mut out = Params::new();
        for (key, value) in given {
            let spec = self.param(key).ok_or_else(|| RequestError::InvalidInput {
                field: key.clone(),
                reason: format!("unknown parameter for tool {}", self.name),
                allowed: Some(self.params.iter().map(|p| Value::from(p.name)).collect()),
            })?;
            // An explicit null means "use the default".
            if value.is_null() {
                continue;
            }
            spec.check(value)?;
            out.insert(key.clone(), value.clone());
        }
        let mut missing = Vec::new();
        for spec in self.params {
            if out.contains_key(spec.name) || linked.contains(&spec.name) {
                continue;
            }
            match spec.default.to_value() {
                Some(v) => {
                    out.insert(spec.name.to_string(), v);
                }
                None if spec.required => missing.push(spec.name.to_string()),
                None => {}
            }
        }
        if !missing.is_empty() {
            return Err(RequestError::MissingInputs(missing));
        }
        self.check_rules(&out, linked)?;
        Ok(out)
    }

    /// Rules that involve more than one parameter.
    fn check_rules(&self, params: &Params, linked: &[&str]) -> Result<(), RequestError> {
        match self.id {
            ToolId::Fabric => {
                let has =
                    |k: &str| linked.contains(&k) || text_of(params, k).is_some_and(|s| !s.trim().is_empty());
                if !has("fabric_image") && !has("fabric_description") {
                    return Err(RequestError::invalid(
                        "fabric_image",
                        "fabric_image is required unless fabric_description is given",
                    ));
                }
            }
            ToolId::VirtualModel => {
                let face = params.contains_key("face_reference") || linked.contains(&"face_reference");
                if face && text_of(params, "model_name") == Some("Standard") {
                    return Err(RequestError::invalid(
                        "face_reference",
                        "face_reference is only available on the Pro and Plus models",
                    ));
                }
            }
            ToolId::BackgroundRemoval => {
                let color = text_of(params, "background_color").unwrap_or("");
                if !color.is_empty() && parse_hex_color(color).is_none() {
                    return Err(RequestError::invalid(
                        "background_color",
                        "expected an empty string (transparent) or a colour as #RRGGBB",
                    ));
                }
            }
            ToolId::VirtualTryon
            | ToolId::VirtualTryonPro
            | ToolId::VirtualTryonProFit
            | ToolId::SketchToDress
            | ToolId::Upscale
            | ToolId::Multipose
            | ToolId::Video
            | ToolId::Reframe
            | ToolId::ProductShoot => {}
        }
        Ok(())
    }

    /// How many files one execution produces, from resolved params.
    pub fn outputs_per_run(&self, params: &Params) -> u32 {
        match self.outputs {
            Outputs::One => 1,
            Outputs::Param(name) => num(params, name).map_or(1, |n| n.max(1.0) as u32),
        }
    }

    /// The parameters of one execution, read through the schema: a parameter that is absent
    /// reads as its default, so defaults are written only in the schema.
    pub fn reader<'a>(&'static self, params: &'a Params) -> ParamReader<'a> {
        ParamReader { spec: self, params }
    }

    /// Parameters of image type.
    pub fn image_params(&self) -> impl Iterator<Item = &'static ParamSpec> {
        self.params.iter().filter(|p| p.ty == ParamType::Image)
    }
}

/// Reads parameters of one execution through its tool's schema ([`ToolSpec::reader`]).
#[derive(Debug, Clone, Copy)]
pub struct ParamReader<'a> {
    spec: &'static ToolSpec,
    params: &'a Params,
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

/// The price of every tool: the built-in table, with the numbers `[prices]` in the
/// configuration changes. Built once at start ([`Prices::configured`]) and used for every
/// plan, estimate and `GET /api/v3/tools`.
#[derive(Debug, Clone, PartialEq)]
pub struct Prices {
    /// By `ToolId as usize`: the base price, and the price of each case of `Price::by`.
    tariffs: Vec<(i64, Vec<i64>)>,
}

impl std::default::Default for Prices {
    fn default() -> Self {
        let tariffs = ToolId::ALL
            .iter()
            .map(|id| {
                let price = id.spec().price;
                (
                    price.base,
                    price.by.map(|(_, cases)| cases.iter().map(|c| c.1).collect()).unwrap_or_default(),
                )
            })
            .collect();
        Self { tariffs }
    }
}

/// A tool's price as `[prices]` sets it: one number (the base price), or a table with
/// `base` and one key per priced value of the parameter the price depends on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PriceSetting {
    Base(i64),
    Table(std::collections::BTreeMap<String, i64>),
}

impl Prices {
    /// The built-in table with `settings` (tool name → setting) applied; an error names the
    /// key that is wrong and says what it may be.
    pub fn configured<'a>(
        settings: impl IntoIterator<Item = (&'a String, &'a PriceSetting)>,
    ) -> Result<Self, String> {
        let mut prices = Self::default();
        for (name, setting) in settings {
            let id = ToolId::from_str(name).map_err(|_| {
                let names: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
                format!("prices.{name}: no such tool (tools: {})", names.join(", "))
            })?;
            let spec = id.spec();
            let (base, cases) = &mut prices.tariffs[id as usize];
            let check = |key: &str, tokens: i64| {
                if tokens < 0 {
                    Err(format!("prices.{name}.{key}: a price is a whole number of tokens, 0 or more"))
                } else {
                    Ok(tokens)
                }
            };
            match setting {
                PriceSetting::Base(tokens) => *base = check("base", *tokens)?,
                PriceSetting::Table(table) => {
                    for (key, tokens) in table {
                        let tokens = check(key, *tokens)?;
                        if key == "base" {
                            *base = tokens;
                            continue;
                        }
                        let known = spec.price.by.map(|(_, c)| c).unwrap_or(&[]);
                        let Some(i) = known.iter().position(|(lit, _)| lit.key() == *key) else {
                            let mut keys = vec!["base".to_string()];
                            keys.extend(known.iter().map(|(lit, _)| lit.key()));
                            return Err(format!(
                                "prices.{name}.{key}: not a priced case of {name} (keys: {})",
                                keys.join(", ")
                            ));
                        };
                        cases[i] = tokens;
                    }
                }
            }
        }
        Ok(prices)
    }

    /// Tokens for one execution of `spec` with resolved `params`.
    pub fn unit_price(&self, spec: &ToolSpec, params: &Params) -> i64 {
        let (base, cases) = &self.tariffs[spec.id as usize];
        let matched = spec.price.by.and_then(|(param, lits)| {
            lits.iter().position(|(lit, _)| lit.matches(params.get(param))).map(|i| cases[i])
        });
        let per = matched.unwrap_or(*base);
        if spec.price.per_output {
            per.saturating_mul(i64::from(spec.outputs_per_run(params)))
        } else {
            per
        }
    }

    /// The price as discovery shows it: `1 per run, 2 at scale 4`, `per output: 1 on Standard,
    /// 2 on Pro, 3 on Plus`.
    pub fn rule(&self, spec: &ToolSpec) -> String {
        let (base, cases) = &self.tariffs[spec.id as usize];
        let unit = if spec.price.per_output { "output" } else { "run" };
        let Some((param, lits)) = spec.price.by else { return format!("{base} per {unit}") };
        let phrase = |lit: Lit| match lit {
            Lit::Bool(_) => format!("with {param}"),
            Lit::Num(_) => format!("at {param} {}", lit.key()),
            Lit::Str(s) => format!("on {s}"),
        };
        let mut rule = if spec.price.per_output {
            let default = match spec.param(param).map(|p| p.default) {
                Some(Default::Str(s)) => format!(" on {s}"),
                _ => String::new(),
            };
            format!("per {unit}: {base}{default}")
        } else {
            format!("{base} per {unit}")
        };
        for (lit, tokens) in lits.iter().map(|(lit, _)| *lit).zip(cases) {
            rule.push_str(&format!(", {tokens} {}", phrase(lit)));
        }
        rule
    }
}

/// Parses `#RRGGBB`.
pub fn parse_hex_color(s: &str) -> Option<[u8; 3]> {
    let hex = s.strip_prefix('#')?;
    if hex.len() != 6 || !hex.is_ascii() {
        return None;
    }
    let byte = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).ok();
    Some([byte(0)?, byte(2)?, byte(4)?])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: Value) -> Params {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn twelve_tools_with_unique_names() {
        assert_eq!(TOOLS.len(), 12);
        let mut names: Vec<_> = TOOLS.iter().map(|t| t.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 12);
        for t in TOOLS {
            if let Some(primary) = t.primary_image {
                assert_eq!(t.param(primary).map(|p| &p.ty), Some(&ParamType::Image), "{}", t.name);
            }
            for spec in t.params {
                if let Some(d) = spec.default.to_value() {
                    spec.check(&d).unwrap_or_else(|e| panic!("{}.{}: {e}", t.name, spec.name));
                }
            }
        }
    }

    #[test]
    fn resolve_fills_defaults_and_reports_missing() {
        let t = tool("virtual_tryon").unwrap();
        let ok = t.resolve(&params(json!({"model_image": "u", "garment_image": "v"})), &[]).unwrap();
        assert_eq!(ok["category"], json!("tops"));
        assert_eq!(ok["model_name"], json!("Beta"));
        assert!(!ok.contains_key("seed"));
        let err = t.resolve(&params(json!({"garment_image": "v"})), &[]).unwrap_err();
        assert_eq!(err, RequestError::MissingInputs(vec!["model_image".into()]));
        assert!(t.resolve(&params(json!({"garment_image": "v"})), &["model_image"]).is_ok());
    }

    #[test]
    fn resolve_rejects_unknown_parameters_naming_them() {
        let err =
            tool("upscale").unwrap().resolve(&params(json!({"image": "x", "zoom": 3})), &[]).unwrap_err();
        match err {
            RequestError::InvalidInput { field, allowed, .. } => {
                assert_eq!(field, "zoom");
                assert!(allowed.unwrap().contains(&json!("scale")));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn conditional_rules() {
        let fabric = tool("fabric").unwrap();
        let err = fabric.resolve(&params(json!({"model_image": "m"})), &[]).unwrap_err();
        assert!(matches!(err, RequestError::InvalidInput { ref field, .. } if field == "fabric_image"));
        assert!(fabric
            .resolve(&params(json!({"model_image": "m", "fabric_description": "red silk"})), &[])
            .is_ok());

        let vm = tool("virtual_model").unwrap();
        let base =
            json!({"ethnicity": "any", "gender": "Female", "dresstype": "gown", "background": "beach"});
        let mut with_face = base.clone();
        with_face["face_reference"] = json!("https://example.com/f.png");
        let err = vm.resolve(&params(with_face.clone()), &[]).unwrap_err();
        assert!(matches!(err, RequestError::InvalidInput { ref field, .. } if field == "face_reference"));
        with_face["model_name"] = json!("Plus");
        assert!(vm.resolve(&params(with_face), &[]).is_ok());
        let mut five = base.clone();
        five["num_outputs"] = json!(5);
        assert!(vm.resolve(&params(five), &[]).is_err());

        let bg = tool("background_removal").unwrap();
        assert!(bg.resolve(&params(json!({"image": "i", "background_color": "#00ff00"})), &[]).is_ok());
        assert!(bg.resolve(&params(json!({"image": "i", "background_color": "green"})), &[]).is_err());
    }

    #[test]
    fn prices_follow_the_table() {
        let prices = Prices::default();
        let price = |tool_name: &str, v: Value| {
            let t = tool(tool_name).unwrap();
            prices.unit_price(t, &params(v))
        };
        assert_eq!(price("virtual_tryon", json!({})), 1);
        assert_eq!(price("virtual_tryon_pro_fit", json!({})), 4);
        assert_eq!(price("virtual_model", json!({"model_name": "Plus", "num_outputs": 2})), 6);
        assert_eq!(price("fabric", json!({"upscale": true})), 3);
        assert_eq!(price("upscale", json!({"scale": 4})), 2);
        assert_eq!(price("multipose", json!({"num_outputs": 4})), 4);
        assert_eq!(price("product_shoot", json!({"num_outputs": 3})), 6);
        assert_eq!(price("video", json!({})), 5);
    }

    #[test]
    fn every_tool_id_names_its_own_spec() {
        for (i, id) in ToolId::ALL.into_iter().enumerate() {
            assert_eq!(id.spec().id, id);
            assert_eq!(TOOLS[i].id, id, "TOOLS is in the order of ToolId::ALL");
            assert_eq!(id.as_str().parse::<ToolId>().unwrap(), id);
            assert_eq!(serde_json::to_value(id).unwrap(), json!(id.as_str()));
        }
        assert!("teleport".parse::<ToolId>().is_err());
    }

    #[test]
    fn price_rules_are_written_from_the_table() {
        let prices = Prices::default();
        let rule = |id: ToolId| prices.rule(id.spec());
        assert_eq!(rule(ToolId::VirtualTryon), "1 per run");
        assert_eq!(rule(ToolId::VirtualModel), "per output: 1 on Standard, 2 on Pro, 3 on Plus");
        assert_eq!(rule(ToolId::Fabric), "2 per run, 3 with upscale");
        assert_eq!(rule(ToolId::Upscale), "1 per run, 2 at scale 4");
        assert_eq!(rule(ToolId::Multipose), "1 per output");
        assert_eq!(rule(ToolId::ProductShoot), "2 per output");
    }

    #[test]
    fn configured_prices_change_the_numbers_and_the_rules() {
        let settings: std::collections::BTreeMap<String, PriceSetting> = serde_json::from_value(json!({
            "video": 8,
            "upscale": {"base": 2, "4": 5},
            "virtual_model": {"Plus": 10},
        }))
        .unwrap();
        let prices = Prices::configured(&settings).unwrap();
        assert_eq!(prices.unit_price(ToolId::Video.spec(), &params(json!({}))), 8);
        assert_eq!(prices.unit_price(ToolId::Upscale.spec(), &params(json!({"scale": 2}))), 2);
        assert_eq!(prices.unit_price(ToolId::Upscale.spec(), &params(json!({"scale": 4}))), 5);
        let plus = params(json!({"model_name": "Plus", "num_outputs": 2}));
        assert_eq!(prices.unit_price(ToolId::VirtualModel.spec(), &plus), 20);
        assert_eq!(prices.rule(ToolId::Upscale.spec()), "2 per run, 5 at scale 4");
        assert_eq!(
            prices.rule(ToolId::VirtualModel.spec()),
            "per output: 1 on Standard, 2 on Pro, 10 on Plus"
        );
        assert_eq!(prices.rule(ToolId::Reframe.spec()), "1 per run", "tools not named keep their price");
    }

    #[test]
    fn wrong_price_settings_are_refused_naming_the_key() {
        let configure = |v: Value| {
            let settings: std::collections::BTreeMap<String, PriceSetting> =
                serde_json::from_value(v).unwrap();
            Prices::configured(&settings).unwrap_err()
        };
        assert!(configure(json!({"teleport": 1})).starts_with("prices.teleport: no such tool"));
        assert!(configure(json!({"video": -1})).starts_with("prices.video.base: a price is"));
        let err = configure(json!({"upscale": {"8": 3}}));
        assert_eq!(err, "prices.upscale.8: not a priced case of upscale (keys: base, 4)");
        let err = configure(json!({"video": {"slow": 3}}));
        assert_eq!(err, "prices.video.slow: not a priced case of video (keys: base)");
    }

    #[test]
    fn the_reader_falls_back_to_the_schema_defaults() {
        let given = params(json!({"scale": 4}));
        let upscale = ToolId::Upscale.spec().reader(&given);
        assert_eq!(upscale.number("scale"), 4.0);
        assert_eq!(upscale.text("output_format"), "png");
        let empty = Params::new();
        let video = ToolId::Video.spec().reader(&empty);
        assert_eq!((video.number("duration"), video.text("motion"), video.text("prompt")), (5.0, "auto", ""));
        let fabric = ToolId::Fabric.spec().reader(&empty);
        assert!(!fabric.flag("upscale"));
        assert_eq!(ToolId::ProductShoot.spec().reader(&params(json!({"num_outputs": 3}))).outputs(), 3);
    }

    #[test]
    fn hex_colors() {
        assert_eq!(parse_hex_color("#0a0B0c"), Some([10, 11, 12]));
        assert_eq!(parse_hex_color("0a0b0c"), None);
        assert_eq!(parse_hex_color("#0a0b0"), None);
        assert_eq!(parse_hex_color("#ééé"), None);
    }
}
