//! Values of the select parameters the tools' code branches on, as enums: each enum's names
//! are the select's allowed values in `tools.rs`, so the schema that checks a request and
//! the code that acts on it read one list, and a tool matches on every value (no fallback arm
//! standing in for a value the schema let through). Read with
//! [`crate::tools::ParamReader::choice`].

use crate::status::string_enum;

/// A garment's category (`category` of the try-ons and fabric); the try-ons without
/// accessories take the first three.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Category {
    Tops,
    Bottoms,
    Dresses,
    Accessories,
}

string_enum!(Category { Tops => "tops", Bottoms => "bottoms", Dresses => "dresses", Accessories => "accessories" });

/// How `reframe` reaches another aspect ratio (`mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReframeMode {
    /// Crop when the subject fits, extend otherwise.
    Auto,
    Crop,
    Extend,
}

string_enum!(ReframeMode { Auto => "auto", Crop => "crop", Extend => "extend" });

/// The file format of an output (`output_format`); a tool may offer only some.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileFormat {
    Png,
    Jpeg,
    Webp,
}

string_enum!(FileFormat { Png => "png", Jpeg => "jpeg", Webp => "webp" });

/// How a garment is sized on the person (`garment_size` of `virtual_tryon_pro_fit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum GarmentSize {
    #[default]
    M,
    S,
    L,
    XL,
}

string_enum!(GarmentSize { M => "M", S => "S", L => "L", XL => "XL" });

/// The variant of the basic try-on (`model_name` of `virtual_tryon`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TryOnModel {
    #[default]
    Beta,
    Turbo,
}

string_enum!(TryOnModel { Beta => "Beta", Turbo => "Turbo" });

/// The detail of a virtual model (`model_name` of `virtual_model`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ModelTier {
    #[default]
    Standard,
    Pro,
    Plus,
}

string_enum!(ModelTier { Standard => "Standard", Pro => "Pro", Plus => "Plus" });

/// How a sketch was made (`mode` of `sketch_to_dress`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SketchMode {
    /// A clean digital drawing.
    #[default]
    Draw,
    /// A photographed or scanned drawing.
    Upload,
}

string_enum!(SketchMode { Draw => "draw", Upload => "upload" });

/// The palette a sketch is coloured in when its prompt names no colour (`gender` of
/// `sketch_to_dress`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SketchGender {
    Female,
    Male,
}

string_enum!(SketchGender { Female => "female", Male => "male" });

/// The camera move of a video (`motion` of `video`); `auto` takes one from the prompt, or
/// from the seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Motion {
    Auto,
    ZoomIn,
    ZoomOut,
    PanLeft,
    PanRight,
}

string_enum!(Motion {
    Auto => "auto",
    ZoomIn => "zoom_in",
    ZoomOut => "zoom_out",
    PanLeft => "pan_left",
    PanRight => "pan_right",
});

/// The categories of the try-ons without accessories.
pub const GARMENT_CATEGORIES: &[&str] = Category::NAMES.split_at(3).0;

/// The formats of a cut-out: PNG or WebP, both with transparency.
pub const TRANSPARENT_FORMATS: &[&str] = &[FileFormat::NAMES[0], FileFormat::NAMES[2]];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lists_are_the_enums_names() {
        assert_eq!(GARMENT_CATEGORIES, ["tops", "bottoms", "dresses"]);
        assert_eq!(TRANSPARENT_FORMATS, ["png", "webp"]);
        assert_eq!("extend".parse::<ReframeMode>(), Ok(ReframeMode::Extend));
        assert!("stretch".parse::<ReframeMode>().is_err());
        assert_eq!("XL".parse::<GarmentSize>(), Ok(GarmentSize::XL));
        assert!("xl".parse::<GarmentSize>().is_err(), "as the schema checks: case and all");
        assert_eq!(Motion::NAMES, ["auto", "zoom_in", "zoom_out", "pan_left", "pan_right"]);
    }
}
