//! The built-in CPU engine: every tool, deterministic for a given seed, one file per tool
//! (the three try-ons share `tryon.rs`). Image work runs on the blocking pool, never on the
//! async runtime. Parameters are read through the tool's schema ([`ParamReader`]), so a
//! parameter left out reads as the schema's default.
//!
//! A decoded input lives only as long as the processing that reads it (a temporary, or a
//! block of its own): the production tools' peak memory is the input and the output at
//! processing time, then the output and its encoding, never all three at once.

mod background_removal;
mod fabric;
mod multipose;
mod product_shoot;
mod reframe;
mod sketch_to_dress;
mod tryon;
mod upscale;
mod video;
mod virtual_model;

use atelier_core::choices::{Category, FileFormat};
use atelier_core::tools::{ParamReader, ToolId};
use atelier_imaging::{self as imaging, GarmentRegion, OutputFormat};
use bytes::Bytes;
use image::DynamicImage;

use crate::{Artifact, BuiltinOptions, Execution, Executor, Maker, ToolError, BUILTIN_MAKER};

pub struct Builtin {
    options: BuiltinOptions,
}

impl Builtin {
    pub fn new(options: BuiltinOptions) -> Self {
        Self { options }
    }
}

#[async_trait::async_trait]
impl Executor for Builtin {
    async fn run(&self, execution: Execution) -> Result<Vec<Artifact>, ToolError> {
        if !self.options.simulated_latency.is_zero() {
            tokio::time::sleep(self.options.simulated_latency).await;
        }
        if self.options.noop {
            return Ok(vec![Artifact { bytes: Bytes::from_static(NOOP_PNG), ext: "png" }]);
        }
        let limits = self.options.limits;
        let subject = self.options.subject.clone();
        tokio::task::spawn_blocking(move || execute(&execution, &limits, subject.as_deref()))
            .await
            .map_err(|e| ToolError::Failed(format!("the tool stopped unexpectedly: {e}")))?
    }

    /// Deterministic for a given seed: the package's version and [`OUTPUTS_REVISION`], the
    /// learned subject model, and whether tools are no-ops. The limits only refuse inputs.
    fn cache_identity(&self) -> Option<String> {
        let subject = self.options.subject.as_ref().map_or("none", |model| model.name());
        Some(format!(
            "builtin/{}/r{OUTPUTS_REVISION}/subject={subject}{}",
            env!("CARGO_PKG_VERSION"),
            if self.options.noop { "/noop" } else { "" }
        ))
    }

    /// The built-in engine, with its learned subject model for the tools that use it.
    fn maker(&self, tool: ToolId) -> Maker {
        let uses_subject = matches!(
            tool,
            ToolId::BackgroundRemoval | ToolId::ProductShoot | ToolId::Reframe | ToolId::Fabric
        );
        match &self.options.subject {
            Some(model) if uses_subject => {
                Maker { model: format!("{BUILTIN_MAKER} with {}", model.name()), trained: true }
            }
            _ => Maker { model: BUILTIN_MAKER.to_string(), trained: false },
        }
    }
}

/// Raised with any change that makes a built-in tool's output differ for the same inputs and
/// seed (an algorithm, an encoder setting), so that the result cache never serves an output
/// this version would not make. 2: PNG written in 64 KiB `IDAT` chunks (the same pixels).
pub const OUTPUTS_REVISION: u32 = 2;

/// The output of every execution when [`BuiltinOptions::noop`] is on: a 1x1 PNG.
const NOOP_PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00,
    0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90, 0x77, 0x53, 0xde, 0x00,
    0x00, 0x00, 0x0c, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x78, 0xfd, 0xfa, 0x35, 0x00, 0x05, 0x86,
    0x02, 0xc2, 0xaf, 0xb1, 0x08, 0x24, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60,
    0x82,
];

/// What an executor of the built-in engine is given.
struct Input<'a> {
    execution: &'a Execution,
    params: ParamReader<'a>,
    limits: &'a imaging::Limits,
    /// The learned subject model, where one is configured.
    subject: Option<&'a dyn imaging::SubjectModel>,
}

impl Input<'_> {
    fn seed(&self) -> u64 {
        self.execution.seed
    }

    /// An optional image input, decoded.
    fn image(&self, key: &str) -> Result<Option<DynamicImage>, ToolError> {
        self.execution
            .images
            .get(key)
            .map(|bytes| {
                imaging::decode(bytes, self.limits)
                    .map_err(|e| ToolError::InvalidImage(format!("{key}: {e}")))
            })
            .transpose()
    }

    /// A mandatory image input, decoded.
    fn required(&self, key: &str) -> Result<DynamicImage, ToolError> {
        self.image(key)?.ok_or_else(|| ToolError::Failed(format!("{key} is missing")))
    }
}

/// Runs one execution on the built-in engine.
fn execute(
    execution: &Execution,
    limits: &imaging::Limits,
    subject: Option<&dyn imaging::SubjectModel>,
) -> Result<Vec<Artifact>, ToolError> {
    let params = execution.tool.spec().reader(&execution.params);
    let input = Input { execution, params, limits, subject };
    match execution.tool {
        ToolId::VirtualTryon | ToolId::VirtualTryonPro | ToolId::VirtualTryonProFit => tryon::run(&input),
        ToolId::VirtualModel => virtual_model::run(&input),
        ToolId::Fabric => fabric::run(&input),
        ToolId::SketchToDress => sketch_to_dress::run(&input),
        ToolId::Upscale => upscale::run(&input),
        ToolId::Multipose => multipose::run(&input),
        ToolId::Video => video::run(&input),
        ToolId::BackgroundRemoval => background_removal::run(&input),
        ToolId::Reframe => reframe::run(&input),
        ToolId::ProductShoot => product_shoot::run(&input),
    }
}

fn encode(img: &DynamicImage, format: OutputFormat) -> Result<Artifact, ToolError> {
    let bytes = imaging::encode(img, format).map_err(|e| ToolError::Failed(e.to_string()))?;
    Ok(Artifact { bytes: Bytes::from(bytes), ext: format.extension() })
}

/// A failure of the learned subject model on this input.
fn model_failed(e: imaging::ImagingError) -> ToolError {
    ToolError::Failed(e.to_string())
}

fn png(img: image::RgbImage) -> Result<Artifact, ToolError> {
    encode(&DynamicImage::ImageRgb8(img), OutputFormat::Png)
}

/// `"4:5"` → `(4, 5)`; `None` for `match_input_image`.
fn aspect(text: &str) -> Option<(u32, u32)> {
    let (w, h) = text.split_once(':')?;
    Some((w.parse().ok()?, h.parse().ok()?))
}

/// A select parameter as its enum ([`atelier_core::choices`]); a value the enum does not know
/// (which the schema does not let through) fails the node.
fn choice<T: std::str::FromStr>(p: &ParamReader<'_>, name: &str) -> Result<T, ToolError> {
    p.choice(name).map_err(ToolError::Failed)
}

/// The band of the person a garment's category covers.
fn region(category: Category) -> GarmentRegion {
    match category {
        Category::Tops => GarmentRegion::Top,
        Category::Bottoms => GarmentRegion::Bottom,
        Category::Dresses => GarmentRegion::Dress,
        Category::Accessories => GarmentRegion::Accessory,
    }
}

/// The encoder of an `output_format`.
fn output_format(format: FileFormat) -> OutputFormat {
    match format {
        FileFormat::Png => OutputFormat::Png,
        FileFormat::Jpeg => OutputFormat::Jpeg,
        FileFormat::Webp => OutputFormat::Webp,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use atelier_core::params::Params;
    use atelier_imaging::{GarmentSize, ModelTier, SketchMode, TryOnModel};
    use atelier_video::Motion;
    use image::{Rgb, RgbImage};
    use serde_json::{json, Value};

    use super::*;

    fn params(v: Value) -> Params {
        v.as_object().cloned().unwrap_or_default()
    }

    /// `p` read as `tool`'s parameters.
    fn read(tool: ToolId, p: &Params) -> ParamReader<'_> {
        tool.spec().reader(p)
    }

    fn tryon_options<'a>(
        p: &'a Params,
        pose: Option<&'a DynamicImage>,
        style: Option<&'a DynamicImage>,
    ) -> imaging::TryOn<'a> {
        tryon::options(&read(ToolId::VirtualTryonProFit, p), pose, style).unwrap()
    }

    fn model_description(p: &Params) -> imaging::ModelDescription<'_> {
        virtual_model::description(&read(ToolId::VirtualModel, p)).unwrap()
    }

    fn sketch_options(p: &Params) -> imaging::SketchOptions<'_> {
        sketch_to_dress::options(&read(ToolId::SketchToDress, p)).unwrap()
    }

    fn video_motion(p: &Params) -> Motion {
        video::motion(&read(ToolId::Video, p)).unwrap()
    }

    #[test]
    fn a_select_value_outside_its_enum_fails_the_node_instead_of_falling_back() {
        let bad = params(json!({"category": "hats", "mode": "stretch", "output_format": "tiff"}));
        let category = choice::<Category>(&read(ToolId::Fabric, &bad), "category");
        assert!(matches!(category, Err(ToolError::Failed(m)) if m.contains("hats")));
        assert!(choice::<FileFormat>(&read(ToolId::Upscale, &bad), "output_format").is_err());
        let defaults = params(json!({}));
        assert!(matches!(choice(&read(ToolId::Upscale, &defaults), "output_format"), Ok(FileFormat::Png)));
        assert!(matches!(
            choice(&read(ToolId::Reframe, &defaults), "mode"),
            Ok(atelier_core::choices::ReframeMode::Auto)
        ));
        // The renders' own selects: read through their enums, never a fallback.
        let odd = params(
            json!({"garment_size": "xl", "model_name": "Ultra", "mode": "paint", "gender": "other", "motion": "spin"}),
        );
        assert!(tryon::options(&read(ToolId::VirtualTryonProFit, &odd), None, None).is_err());
        assert!(virtual_model::description(&read(ToolId::VirtualModel, &odd)).is_err());
        assert!(sketch_to_dress::options(&read(ToolId::SketchToDress, &odd)).is_err());
        assert!(
            matches!(video::motion(&read(ToolId::Video, &odd)), Err(ToolError::Failed(m)) if m.contains("spin"))
        );
    }

    #[test]
    fn tryon_params_reach_the_imaging_call() {
        let p = params(json!({
            "category": "bottoms",
            "garment_size": "XL",
            "garment_description": "navy stripes",
            "aspect_ratio": "16:9",
        }));
        let pose = DynamicImage::new_rgb8(4, 4);
        let o = tryon_options(&p, Some(&pose), None);
        assert_eq!(o.region, GarmentRegion::Bottom);
        assert_eq!(o.size, GarmentSize::XL);
        assert_eq!(o.model, TryOnModel::Beta, "the Pro Fit has no model_name");
        let basic = params(json!({"model_name": "Turbo"}));
        let basic = tryon::options(&read(ToolId::VirtualTryon, &basic), None, None).unwrap();
        assert_eq!(
            (basic.model, basic.size),
            (TryOnModel::Turbo, GarmentSize::M),
            "nor the first a garment_size"
        );
        assert_eq!(o.description, "navy stripes");
        assert_eq!(o.aspect, Some((16, 9)));
        assert!(o.pose.is_some() && o.style.is_none());

        let match_input = params(json!({"aspect_ratio": "match_input_image"}));
        let defaults = tryon_options(&match_input, None, None);
        assert_eq!(defaults.region, GarmentRegion::Top);
        assert_eq!(defaults.size, GarmentSize::M);
        assert_eq!(defaults.model, TryOnModel::Beta);
        assert_eq!(defaults.aspect, None);
        for (category, region) in [
            ("tops", GarmentRegion::Top),
            ("dresses", GarmentRegion::Dress),
            ("accessories", GarmentRegion::Accessory),
        ] {
            assert_eq!(tryon_options(&params(json!({"category": category})), None, None).region, region);
        }
    }

    #[test]
    fn model_sketch_and_video_params_are_wired() {
        let full = params(json!({
            "model_name": "Plus", "gender": "Male", "ethnicity": "nordic", "dresstype": "grey suit",
            "background": "beach", "age": "senior", "improve_prompt": "striped", "closeup": true,
        }));
        let d = model_description(&full);
        assert_eq!(d.tier, ModelTier::Plus);
        assert_eq!((d.gender, d.ethnicity, d.dresstype), ("Male", "nordic", "grey suit"));
        assert_eq!((d.background, d.age, d.prompt, d.closeup), ("beach", "senior", "striped", true));
        assert_eq!(model_description(&Params::new()).tier, ModelTier::Standard);

        let male_upload = params(json!({"gender": "male", "mode": "upload", "improve_prompt": "red"}));
        let s = sketch_options(&male_upload);
        assert!(!s.female);
        assert_eq!((s.mode, s.prompt), (SketchMode::Upload, "red"));
        let empty = params(json!({}));
        let s = sketch_options(&empty);
        assert!(s.female);
        assert_eq!(s.mode, SketchMode::Draw);

        let motion = |v: Value| video_motion(&params(v));
        assert_eq!(motion(json!({"motion": "pan_left", "prompt": "zoom in"})), Motion::PanLeft);
        assert_eq!(
            motion(json!({"motion": "auto", "prompt": "Slowly ZOOM in on the dress"})),
            Motion::ZoomIn
        );
        assert_eq!(motion(json!({"prompt": "pull back to reveal"})), Motion::ZoomOut);
        assert_eq!(motion(json!({"prompt": "pan right, then pan left"})), Motion::PanRight);
        assert_eq!(motion(json!({"prompt": "a calm mood"})), Motion::Auto);
    }

    fn png_bytes(img: RgbImage) -> Bytes {
        let encoded = imaging::encode(&DynamicImage::ImageRgb8(img), OutputFormat::Png);
        Bytes::from(encoded.unwrap_or_default())
    }

    /// A person-like block on a light backdrop, and a red garment on white.
    fn inputs() -> HashMap<String, Bytes> {
        let person = RgbImage::from_fn(60, 90, |x, y| {
            let body = (22..38).contains(&x) && (12..84).contains(&y);
            if body {
                Rgb([150, 110, 90])
            } else {
                Rgb([236, 236, 232])
            }
        });
        let garment = RgbImage::from_fn(32, 32, |x, y| {
            if (6..26).contains(&x) && (5..27).contains(&y) {
                Rgb([200, 30, 40])
            } else {
                Rgb([250, 250, 250])
            }
        });
        // A broader, shorter figure than the person, clear of the borders so that it is
        // segmented as the subject.
        let pose = RgbImage::from_fn(60, 90, |x, y| {
            let head = (26..34).contains(&x) && (10..20).contains(&y);
            let body = (16..44).contains(&x) && (20..70).contains(&y);
            if head || body {
                Rgb([20, 20, 20])
            } else {
                Rgb([255, 255, 255])
            }
        });
        // Line art: a closed outline, so the region inside is filled.
        let sketch = RgbImage::from_fn(48, 64, |x, y| {
            let inside = (8..40).contains(&x) && (8..56).contains(&y);
            let interior = (10..38).contains(&x) && (10..54).contains(&y);
            if inside && !interior {
                Rgb([10, 10, 10])
            } else {
                Rgb([255, 255, 255])
            }
        });
        let style = RgbImage::from_pixel(8, 8, Rgb([20, 90, 160]));
        [
            ("model_image", person),
            ("garment_image", garment),
            ("pose_image", pose),
            ("style_image", style),
            ("image", sketch),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), png_bytes(v)))
        .collect()
    }

    fn run(tool: &str, p: Value, images: &HashMap<String, Bytes>) -> Vec<Artifact> {
        let p = params(p);
        let images =
            images.iter().filter(|(k, _)| p.contains_key(*k)).map(|(k, v)| (k.clone(), v.clone())).collect();
        let job = Execution {
            context: Default::default(),
            tool: tool.parse().unwrap(),
            params: p,
            images,
            seed: 7,
            index: 0,
        };
        match execute(&job, &imaging::Limits::default(), None) {
            Ok(a) => a,
            Err(e) => panic!("{tool}: {e}"),
        }
    }

    #[test]
    fn upscale_over_the_output_limits_is_refused_from_the_header() {
        // A 60x90 PNG whose pixel data is garbled: decoding it fails, so the refusal shows the
        // limit was checked from the header before any decoding.
        let mut bytes = png_bytes(RgbImage::new(60, 90)).to_vec();
        let idat = bytes.windows(4).position(|w| w == b"IDAT").expect("an IDAT chunk");
        let end = bytes.len() - 12; // IEND
        bytes[idat + 4..end].iter_mut().for_each(|b| *b ^= 0x5a);
        let limits = imaging::Limits { max_pixels: 60 * 90 * 2, ..imaging::Limits::default() };
        let images = HashMap::from([("image".to_string(), Bytes::from(bytes))]);
        let job = Execution {
            context: Default::default(),
            tool: ToolId::Upscale,
            params: params(json!({"scale": 2})),
            images,
            seed: 7,
            index: 0,
        };
        match execute(&job, &limits, None) {
            Err(ToolError::InvalidImage(msg)) => {
                assert!(msg.contains("upscaled to 120x180 it would exceed the output limits"), "{msg}")
            }
            other => panic!("expected the output limit, got {other:?}"),
        }
        // Within the limits, the same header goes on to be decoded, which fails.
        let ok_limits = imaging::Limits::default();
        assert!(
            matches!(execute(&job, &ok_limits, None), Err(ToolError::InvalidImage(m)) if !m.contains("output limits"))
        );
    }

    #[tokio::test]
    async fn noop_returns_one_tiny_png_without_reading_inputs() {
        let engine = Builtin::new(BuiltinOptions { noop: true, ..BuiltinOptions::default() });
        // Not an image: the no-op engine never decodes it.
        let images = HashMap::from([("image".to_string(), Bytes::from_static(b"not an image"))]);
        let job = Execution {
            context: Default::default(),
            tool: ToolId::Upscale,
            params: params(json!({"scale": 4})),
            images,
            seed: 1,
            index: 0,
        };
        let out = engine.run(job).await.unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].ext, "png");
        let img = image::load_from_memory(&out[0].bytes).unwrap();
        assert_eq!((img.width(), img.height()), (1, 1));
    }

    #[test]
    fn every_tryon_parameter_changes_the_file() {
        let images = inputs();
        let base = json!({"model_image": "m", "garment_image": "g", "category": "tops",
            "aspect_ratio": "match_input_image", "garment_size": "M"});
        let a = run("virtual_tryon_pro_fit", base.clone(), &images);
        assert_eq!(a, run("virtual_tryon_pro_fit", base.clone(), &images), "not deterministic");
        for (key, value) in [
            ("category", json!("dresses")),
            ("garment_size", json!("XL")),
            ("garment_description", json!("navy")),
            ("pose_image", json!("p")),
            ("style_image", json!("s")),
            ("aspect_ratio", json!("1:1")),
        ] {
            let mut changed = base.clone();
            changed[key] = value;
            assert_ne!(a, run("virtual_tryon_pro_fit", changed, &images), "{key} is ignored");
        }
        let plain = json!({"model_image": "m", "garment_image": "g", "category": "tops"});
        let beta = run("virtual_tryon", plain.clone(), &images);
        let mut turbo = plain;
        turbo["model_name"] = json!("Turbo");
        assert_ne!(beta, run("virtual_tryon", turbo, &images), "model_name is ignored");

        // The aspect ratio sets the canvas exactly.
        let mut wide = base;
        wide["aspect_ratio"] = json!("16:9");
        let out = run("virtual_tryon_pro_fit", wide, &images);
        let img = imaging::decode(&out[0].bytes, &imaging::Limits::default()).map_err(|e| e.to_string());
        let (w, h) = img.map(|i| (i.width(), i.height())).unwrap_or((0, 0));
        assert_eq!(w * 9, h * 16, "{w}x{h}");
    }

    #[test]
    fn sketch_model_and_video_parameters_change_the_file() {
        let images = inputs();
        let sketch = |p: Value| {
            let mut p = p;
            p["image"] = json!("i");
            let mut imgs = HashMap::new();
            imgs.insert("image".to_string(), images["image"].clone());
            let job = Execution {
                context: Default::default(),
                tool: ToolId::SketchToDress,
                params: params(p),
                images: imgs,
                seed: 7,
                index: 0,
            };
            execute(&job, &imaging::Limits::default(), None).map_err(|e| e.to_string())
        };
        let a = sketch(json!({}));
        assert!(a.is_ok());
        assert_ne!(a, sketch(json!({"mode": "upload"})), "mode is ignored");
        assert_ne!(
            a,
            sketch(json!({"improve_prompt": "blue and white checks"})),
            "improve_prompt is ignored"
        );
        assert_ne!(a, sketch(json!({"gender": "male"})), "gender is ignored");

        let model = |p: Value| {
            let mut p = p;
            for (k, v) in
                [("ethnicity", "any"), ("gender", "Female"), ("dresstype", "gown"), ("background", "beach")]
            {
                if p.get(k).is_none() {
                    p[k] = json!(v);
                }
            }
            run("virtual_model", p, &images)
        };
        let a = model(json!({}));
        assert_ne!(a, model(json!({"model_name": "Pro"})), "model_name is ignored");
        assert_ne!(a, model(json!({"improve_prompt": "polka dots"})), "improve_prompt is ignored");
        assert_eq!(model(json!({"num_outputs": 3})).len(), 3);
    }
}
