//! The twelve tools' specs, one `static` each, and [`TOOLS`], in the interface's order;
//! [`ToolId::spec`] and the names.

use std::fmt;
use std::str::FromStr;

use super::id::ToolId;
use super::spec::{Fidelity, Lit, OutputKind, Outputs, Price, ToolSpec};
use crate::choices::{GarmentSize, ModelTier, Motion, SketchGender, SketchMode, TryOnModel};
use crate::params::{Default, ParamSpec, ParamType};
use crate::RequestError;

impl ToolId {
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
        super::tool(name).map(|t| t.id)
    }
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
        select("model_name", TryOnModel::NAMES, false, Default::Str("Beta")),
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
        select("garment_size", GarmentSize::NAMES, false, Default::Str("M"))
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
        select("model_name", ModelTier::NAMES, false, Default::Str("Standard")),
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
        select("gender", SketchGender::NAMES, false, Default::Str("female")),
        select("mode", SketchMode::NAMES, false, Default::Str("draw")),
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
        select("motion", Motion::NAMES, false, Default::Str("auto")),
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
