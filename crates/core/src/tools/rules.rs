//! Checking a node's parameters against its tool: defaults filled, every value checked, and
//! the rules across fields ([`ToolSpec::resolve`]).

use serde_json::Value;

use super::id::ToolId;
use super::reader::ParamReader;
use super::spec::{text_of, ToolSpec};
use crate::params::Params;
use crate::RequestError;

impl ToolSpec {
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

    /// The parameters of one execution, read through the schema: a parameter that is absent
    /// reads as its default, so defaults are written only in the schema.
    pub fn reader<'a>(&'static self, params: &'a Params) -> ParamReader<'a> {
        ParamReader { spec: self, params }
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
