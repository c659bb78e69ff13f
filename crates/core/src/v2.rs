//! The v2 interface's per-tool endpoints, mapped onto v3 tools.

use serde_json::{Map, Value};

use crate::params::Params;
use crate::tools::ToolId;
use crate::RequestError;

/// A v2 tool family: one run/status endpoint pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Tryon,
    TryonPro,
    VirtualModel,
    Fabric,
    SketchToDress,
}

impl Family {
    pub const ALL: [Family; 5] =
        [Self::Tryon, Self::TryonPro, Self::VirtualModel, Self::Fabric, Self::SketchToDress];

    /// The path segment(s) after `/api/v2/`.
    pub fn path(self) -> &'static str {
        match self {
            Self::Tryon => "tryon",
            Self::TryonPro => "tryon/pro",
            Self::VirtualModel => "virtualmodel",
            Self::Fabric => "fabric",
            Self::SketchToDress => "sketchtodress",
        }
    }

    /// Stored with each run so that a status endpoint answers only its own family.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tryon => "tryon",
            Self::TryonPro => "tryon_pro",
            Self::VirtualModel => "virtualmodel",
            Self::Fabric => "fabric",
            Self::SketchToDress => "sketchtodress",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == s)
    }

    /// The family whose endpoints run `tool`; `None` for tools the v2 interface does not
    /// offer.
    pub fn of(tool: ToolId) -> Option<Family> {
        match tool {
            ToolId::VirtualTryon => Some(Self::Tryon),
            ToolId::VirtualTryonPro | ToolId::VirtualTryonProFit => Some(Self::TryonPro),
            ToolId::VirtualModel => Some(Self::VirtualModel),
            ToolId::Fabric => Some(Self::Fabric),
            ToolId::SketchToDress => Some(Self::SketchToDress),
            ToolId::Upscale
            | ToolId::Multipose
            | ToolId::Video
            | ToolId::BackgroundRemoval
            | ToolId::Reframe
            | ToolId::ProductShoot => None,
        }
    }

    /// Translates a v2 request body into a v3 tool and its parameters.
    pub fn to_v3(self, body: &Map<String, Value>) -> Result<(ToolId, Params), RequestError> {
        self.into_v3(body.clone())
    }

    /// [`Family::to_v3`], taking the body (its images are moved, not copied).
    pub fn into_v3(self, body: Map<String, Value>) -> Result<(ToolId, Params), RequestError> {
        let mut params = body;
        // Fields the v2 endpoints document but the tools do not take.
        params.remove("webhook_url");
        let tool = match self {
            Self::Tryon => {
                map_category(&mut params, &[("top", "tops"), ("bottom", "bottoms"), ("dress", "dresses")])?;
                ToolId::VirtualTryon
            }
            Self::TryonPro => {
                let model = params.remove("model_name");
                let tool = match model.as_ref().map(|v| v.as_str().map(str::trim)) {
                    None | Some(Some("" | "Pro")) => ToolId::VirtualTryonPro,
                    Some(Some("Pro Fit")) => ToolId::VirtualTryonProFit,
                    Some(_) => {
                        return Err(RequestError::InvalidInput {
                            field: "model_name".into(),
                            reason: "expected Pro or Pro Fit".into(),
                            allowed: Some(vec![Value::from("Pro"), Value::from("Pro Fit")]),
                        })
                    }
                };
                if tool == ToolId::VirtualTryonPro {
                    // garment_size is used only by 'Pro Fit' (spec 4.2).
                    params.remove("garment_size");
                }
                map_category(
                    &mut params,
                    &[
                        ("top", "tops"),
                        ("bottom", "bottoms"),
                        ("dress", "dresses"),
                        ("accessory", "accessories"),
                    ],
                )?;
                tool
            }
            Self::VirtualModel => ToolId::VirtualModel,
            Self::Fabric => {
                map_category(&mut params, &[("top", "tops"), ("bottom", "bottoms"), ("dress", "dresses")])?;
                ToolId::Fabric
            }
            Self::SketchToDress => ToolId::SketchToDress,
        };
        Ok((tool, params))
    }
}

fn map_category(params: &mut Params, table: &[(&str, &str)]) -> Result<(), RequestError> {
    if let Some(Value::String(category)) = params.get_mut("category") {
        if let Some((_, v3)) = table.iter().find(|(v2, _)| v2 == category) {
            *category = (*v3).to_string();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn pro_fit_selects_the_precise_sizing_tool() {
        let (tool, p) = Family::TryonPro
            .to_v3(&body(json!({"model_name": "Pro Fit", "category": "dress", "garment_size": "L"})))
            .unwrap();
        assert_eq!(tool, "virtual_tryon_pro_fit");
        assert_eq!(p["category"], json!("dresses"));
        assert_eq!(p["garment_size"], json!("L"));
        assert!(!p.contains_key("model_name"));
        let (tool, p) =
            Family::TryonPro.to_v3(&body(json!({"model_name": "", "garment_size": "L"}))).unwrap();
        assert_eq!(tool, "virtual_tryon_pro");
        assert!(!p.contains_key("garment_size"));
        assert!(Family::TryonPro.to_v3(&body(json!({"model_name": "Ultra"}))).is_err());
    }

    #[test]
    fn every_family_runs_tools_that_map_back_to_it() {
        for family in Family::ALL {
            let (tool, _) = family.to_v3(&body(json!({}))).unwrap();
            assert_eq!(Family::of(tool), Some(family), "{tool}");
        }
        assert_eq!(Family::of(ToolId::VirtualTryonProFit), Some(Family::TryonPro));
        assert_eq!(Family::of(ToolId::Upscale), None);
    }

    #[test]
    fn categories_accept_both_spellings() {
        for (given, expected) in
            [("top", "tops"), ("tops", "tops"), ("bottom", "bottoms"), ("dresses", "dresses")]
        {
            let (_, p) = Family::Tryon.to_v3(&body(json!({"category": given}))).unwrap();
            assert_eq!(p["category"], json!(expected));
        }
    }
}
