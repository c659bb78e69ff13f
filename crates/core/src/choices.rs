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
    }
}
