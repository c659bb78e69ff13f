//! The twelve tools as data: parameter schemas, outputs, prices.
//!
//! This table is the single source for validation, discovery descriptors,
//! v2 mapping, pricing and `GET /api/v3/tools`. Executors live elsewhere
//! (`atelier-tools`) and are looked up by [`ToolSpec::name`].

use serde::Serialize;
use serde_json::Value;

use crate::params::{Default, ParamSpec, ParamType, Params};
use crate::RequestError;

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

#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub params: &'static [ParamSpec],
    pub output: OutputKind,
    /// The image input that a bypassed node passes through.
    pub primary_image: Option<&'static str>,
    pub fidelity: Fidelity,
    /// Human-readable price rule, for discovery.
    pub price_rule: &'static str,
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

const TRYON_CATEGORIES: &[&str] = &["tops", "bottoms", "dresses"];
const PRO_CATEGORIES: &[&str] = &["tops", "bottoms", "dresses", "accessories"];
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

/// All tools, in the order the interface lists them.
pub static TOOLS: &[ToolSpec] = &[
    ToolSpec {
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
        price_rule: "1 per run",
    },
    ToolSpec {
        name: "virtual_tryon_pro",
        description: "Higher-fidelity try-on with aspect ratio, pose and style references.",
        params: pro_params!(PRO_ASPECTS),
        output: OutputKind::Image,
        primary_image: Some("model_image"),
        fidelity: Fidelity::Preview,
        price_rule: "3 per run",
    },
    ToolSpec {
        name: "virtual_tryon_pro_fit",
        description: "Pro try-on with precise garment sizing.",
        params: pro_params!(
            PRO_FIT_ASPECTS,
            select("garment_size", &["M", "S", "L", "XL"], false, Default::Str("M"))
        ),
        output: OutputKind::Image,
        primary_image: Some("model_image"),
        fidelity: Fidelity::Preview,
        price_rule: "4 per run",
    },
    ToolSpec {
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
        price_rule: "per output: 1 on Standard, 2 on Pro, 3 on Plus",
    },
    ToolSpec {
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
        price_rule: "2 per run, 3 with upscale",
    },
    ToolSpec {
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
        price_rule: "2 per run",
    },
    ToolSpec {
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
            select("output_format", &["png", "jpeg", "webp"], false, Default::Str("png")),
            SEED,
        ],
        output: OutputKind::Image,
        primary_image: Some("image"),
        fidelity: Fidelity::Production,
        price_rule: "1 per run, 2 at scale 4",
    },
    ToolSpec {
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
        price_rule: "1 per output",
    },
    ToolSpec {
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
        price_rule: "5 per run",
    },
    ToolSpec {
        name: "background_removal",
        description: "Cut the subject out: transparent background, or a solid colour. Built-in engine: a learned \
                      salient-object model (U2-Net-p) fused with a backdrop model and an edge-refined matte. \
                      Not reliable on white products on white backdrops whose outline is only a faint seam.",
        params: &[
            image("image", true),
            text("background_color", false, Default::Str("")),
            select("output_format", &["png", "webp"], false, Default::Str("png")),
            SEED,
        ],
        output: OutputKind::Image,
        primary_image: Some("image"),
        fidelity: Fidelity::Production,
        price_rule: "1 per run",
    },
    ToolSpec {
        name: "reframe",
        description: "Change an image's aspect ratio by subject-aware crop or extension.",
        params: &[
            image("image", true),
            select("aspect_ratio", REFRAME_ASPECTS, true, Default::Str("1:1")),
            select("mode", &["auto", "crop", "extend"], false, Default::Str("auto")),
            SEED,
        ],
        output: OutputKind::Image,
        primary_image: Some("image"),
        fidelity: Fidelity::Production,
        price_rule: "1 per run",
    },
    ToolSpec {
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
        price_rule: "2 per output",
    },
];

/// Looks a tool up by its v3 name.
pub fn tool(name: &str) -> Result<&'static ToolSpec, RequestError> {
    TOOLS.iter().find(|t| t.name == name).ok_or_else(|| RequestError::UnknownTool(name.to_string()))
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
        match self.name {
            "fabric" => {
                let has =
                    |k: &str| linked.contains(&k) || text_of(params, k).is_some_and(|s| !s.trim().is_empty());
                if !has("fabric_image") && !has("fabric_description") {
                    return Err(RequestError::invalid(
                        "fabric_image",
                        "fabric_image is required unless fabric_description is given",
                    ));
                }
            }
            "virtual_model" => {
                let face = params.contains_key("face_reference") || linked.contains(&"face_reference");
                if face && text_of(params, "model_name") == Some("Standard") {
                    return Err(RequestError::invalid(
                        "face_reference",
                        "face_reference is only available on the Pro and Plus models",
                    ));
                }
            }
            "background_removal" => {
                let color = text_of(params, "background_color").unwrap_or("");
                if !color.is_empty() && parse_hex_color(color).is_none() {
                    return Err(RequestError::invalid(
                        "background_color",
                        "expected an empty string (transparent) or a colour as #RRGGBB",
                    ));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// How many files one execution produces, from resolved params.
    pub fn outputs_per_run(&self, params: &Params) -> u32 {
        match self.name {
            "virtual_model" | "multipose" | "product_shoot" => {
                num(params, "num_outputs").map_or(1, |n| n.max(1.0) as u32)
            }
            _ => 1,
        }
    }

    /// Token price of one execution, from resolved params (DESIGN §3.6).
    pub fn unit_price(&self, params: &Params) -> i64 {
        let outputs = i64::from(self.outputs_per_run(params));
        match self.name {
            "virtual_tryon" => 1,
            "virtual_tryon_pro" => 3,
            "virtual_tryon_pro_fit" => 4,
            "virtual_model" => {
                let per = match text_of(params, "model_name") {
                    Some("Pro") => 2,
                    Some("Plus") => 3,
                    _ => 1,
                };
                per * outputs
            }
            "fabric" if params.get("upscale").and_then(Value::as_bool) == Some(true) => 3,
            "fabric" => 2,
            "sketch_to_dress" => 2,
            "upscale" if num(params, "scale") == Some(4.0) => 2,
            "multipose" => outputs,
            "video" => 5,
            "product_shoot" => 2 * outputs,
            _ => 1,
        }
    }

    /// Parameters of image type.
    pub fn image_params(&self) -> impl Iterator<Item = &'static ParamSpec> {
        self.params.iter().filter(|p| p.ty == ParamType::Image)
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
        let price = |tool_name: &str, v: Value| {
            let t = tool(tool_name).unwrap();
            t.unit_price(&params(v))
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
    fn hex_colors() {
        assert_eq!(parse_hex_color("#0a0B0c"), Some([10, 11, 12]));
        assert_eq!(parse_hex_color("0a0b0c"), None);
        assert_eq!(parse_hex_color("#0a0b0"), None);
        assert_eq!(parse_hex_color("#ééé"), None);
    }
}

/// A parameter as `GET /api/v3/tools` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ParamSpecView {
    pub name: &'static str,
    #[serde(rename = "type")]
    pub ty: &'static str,
    pub required: bool,
    pub default: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<Value>,
}

impl From<&ParamSpec> for ParamSpecView {
    fn from(p: &ParamSpec) -> Self {
        use crate::params::number_value;
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
            name: p.name,
            ty: p.ty.name(),
            required: p.is_mandatory(),
            default: p.default.to_value(),
            values,
            min,
            max,
        }
    }
}
