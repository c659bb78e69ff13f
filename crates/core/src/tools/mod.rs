//! The twelve tools as data: parameter schemas, outputs, prices.
//!
//! This table is the single source for validation, discovery descriptors, v2 mapping,
//! pricing and `GET /api/v3/tools`. A tool is a [`ToolId`]; every `match` on it is exhaustive,
//! so a new tool does not compile until its spec ([`ToolId::spec`]: parameters, outputs,
//! price), its cross-field rules ([`ToolSpec::resolve`]), its v2 mapping
//! ([`crate::v2::Family::of`]) and its executor (`atelier-tools`) are decided.
//!
//! Rooms: [`ToolId`] (`id.rs`), what a tool is (`spec.rs`), the twelve specs (`table.rs`), the
//! checks of a node's parameters (`rules.rs`), reading them in an executor (`reader.rs`), and
//! prices (`prices.rs`).

mod id;
mod prices;
mod reader;
mod rules;
mod spec;
mod table;

use serde_json::Value;

pub use id::ToolId;
pub use prices::{PriceSetting, Prices};
pub use reader::ParamReader;
pub use rules::parse_hex_color;
pub use spec::{Fidelity, Lit, OutputKind, Outputs, Price, ToolSpec, OUTPUT};
pub use table::{REFRAME_ASPECTS, TOOLS};

use crate::RequestError;

/// Looks a tool up by its v3 name.
pub fn tool(name: &str) -> Result<&'static ToolSpec, RequestError> {
    TOOLS.iter().copied().find(|t| t.name == name).ok_or_else(|| RequestError::UnknownTool(name.to_string()))
}

/// The tool names, for error messages.
pub fn tool_names() -> Vec<Value> {
    TOOLS.iter().map(|t| Value::from(t.name)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{ParamType, Params};
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
