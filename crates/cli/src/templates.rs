//! System templates shipped with the product (the JSON files of the
//! repository's `templates/` folder, compiled in). Installed, replacing
//! earlier versions, on every start and by `atelier migrate`.

use anyhow::Context;
use atelier_core::workflow::WorkflowDef;
use atelier_store::Store;

/// (name, definition) of every shipped template.
pub const TEMPLATES: &[(&str, &str)] = &[
    ("tryon-upscale", include_str!("../../../templates/tryon-upscale.json")),
    ("model-tryon-cutout", include_str!("../../../templates/model-tryon-cutout.json")),
    ("product-reframes", include_str!("../../../templates/product-reframes.json")),
    ("sketch-to-video", include_str!("../../../templates/sketch-to-video.json")),
];

pub async fn install(store: &dyn Store) -> anyhow::Result<()> {
    for (name, text) in TEMPLATES {
        let value: serde_json::Value =
            serde_json::from_str(text).with_context(|| format!("template {name}"))?;
        let def = WorkflowDef::parse(value.clone()).with_context(|| format!("template {name}"))?;
        def.validate().with_context(|| format!("template {name}"))?;
        store.put_workflow(None, name, &value).await?;
    }
    Ok(())
}
