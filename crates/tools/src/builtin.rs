//! The built-in CPU engine: every tool, deterministic for a given seed.
//! Image work runs on the blocking pool, never on the async runtime.

use atelier_core::params::Params;
use atelier_imaging::{
    self as imaging, FabricSource, GarmentRegion, GarmentSize, ModelDescription, ModelTier, OutputFormat,
    ReframeMode, SketchMode, SketchOptions, TryOn, TryOnModel,
};
use atelier_video::{Motion, VideoSpec};
use bytes::Bytes;
use image::DynamicImage;
use serde_json::Value;

use crate::{Artifact, BuiltinOptions, Executor, Job, ToolError};

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
    async fn run(&self, job: Job) -> Result<Vec<Artifact>, ToolError> {
        if !self.options.simulated_latency.is_zero() {
            tokio::time::sleep(self.options.simulated_latency).await;
        }
        if self.options.noop {
            return Ok(vec![Artifact { bytes: Bytes::from_static(NOOP_PNG), ext: "png" }]);
        }
        let limits = self.options.limits;
        let subject = self.options.subject.clone();
        tokio::task::spawn_blocking(move || execute(&job, &limits, subject.as_deref()))
            .await
            .map_err(|e| ToolError::Failed(format!("the tool stopped unexpectedly: {e}")))?
    }
}

/// The output of every execution when [`BuiltinOptions::noop`] is on: a 1x1 PNG.
const NOOP_PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00,
    0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90, 0x77, 0x53, 0xde, 0x00,
    0x00, 0x00, 0x0c, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x78, 0xfd, 0xfa, 0x35, 0x00, 0x05, 0x86,
    0x02, 0xc2, 0xaf, 0xb1, 0x08, 0x24, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60,
    0x82,
];

fn text<'a>(params: &'a Params, key: &str) -> &'a str {
    params.get(key).and_then(Value::as_str).unwrap_or("")
}

fn number(params: &Params, key: &str, default: f64) -> f64 {
    params.get(key).and_then(Value::as_f64).unwrap_or(default)
}

fn count(params: &Params, key: &str) -> u32 {
    number(params, key, 1.0).clamp(1.0, 64.0) as u32
}

fn image_of(job: &Job, key: &str, limits: &imaging::Limits) -> Result<Option<DynamicImage>, ToolError> {
    job.images
        .get(key)
        .map(|bytes| {
            imaging::decode(bytes, limits).map_err(|e| ToolError::InvalidImage(format!("{key}: {e}")))
        })
        .transpose()
}

fn required(job: &Job, key: &str, limits: &imaging::Limits) -> Result<DynamicImage, ToolError> {
    image_of(job, key, limits)?.ok_or_else(|| ToolError::Failed(format!("{key} is missing")))
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

fn region(category: &str) -> GarmentRegion {
    match category {
        "bottoms" => GarmentRegion::Bottom,
        "dresses" => GarmentRegion::Dress,
        "accessories" => GarmentRegion::Accessory,
        _ => GarmentRegion::Top,
    }
}

/// The try-on parameters. The three try-on tools share this mapping; each tool's schema decides
/// which parameters can be present (`garment_size` only on `virtual_tryon_pro_fit`,
/// `model_name` only on `virtual_tryon`, …), and an absent one takes its default.
fn tryon_options<'a>(
    p: &'a Params,
    pose: Option<&'a DynamicImage>,
    style: Option<&'a DynamicImage>,
) -> TryOn<'a> {
    TryOn {
        region: region(text(p, "category")),
        size: GarmentSize::from_name(text(p, "garment_size")).unwrap_or_default(),
        model: TryOnModel::from_name(text(p, "model_name")).unwrap_or_default(),
        description: text(p, "garment_description"),
        pose,
        style,
        aspect: aspect(text(p, "aspect_ratio")),
    }
}

fn model_description(p: &Params) -> ModelDescription<'_> {
    ModelDescription {
        gender: text(p, "gender"),
        ethnicity: text(p, "ethnicity"),
        dresstype: text(p, "dresstype"),
        background: text(p, "background"),
        age: text(p, "age"),
        closeup: p.get("closeup").and_then(Value::as_bool).unwrap_or(false),
        prompt: text(p, "improve_prompt"),
        tier: ModelTier::from_name(text(p, "model_name")).unwrap_or_default(),
    }
}

fn sketch_options(p: &Params) -> SketchOptions<'_> {
    SketchOptions {
        female: !text(p, "gender").eq_ignore_ascii_case("male"),
        mode: SketchMode::from_name(text(p, "mode")).unwrap_or_default(),
        prompt: text(p, "improve_prompt"),
    }
}

/// The video's move: `motion`, or for `auto` the first move the prompt names (`zoom in` /
/// `push in`, `zoom out` / `pull back`, `pan left`, `pan right`), else `auto`.
fn video_motion(p: &Params) -> Motion {
    let motion = text(p, "motion").parse::<Motion>().unwrap_or(Motion::Auto);
    if motion != Motion::Auto {
        return motion;
    }
    let words: Vec<String> = text(p, "prompt")
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    // The earliest two-word phrase wins.
    for pair in words.windows(2) {
        return match (pair[0].as_str(), pair[1].as_str()) {
            ("zoom" | "push", "in") => Motion::ZoomIn,
            ("zoom" | "pull", "out" | "back") => Motion::ZoomOut,
            ("pan", "left") => Motion::PanLeft,
            ("pan", "right") => Motion::PanRight,
            _ => continue,
        };
    }
    Motion::Auto
}

fn execute(
    job: &Job,
    limits: &imaging::Limits,
    subject: Option<&dyn imaging::SubjectModel>,
) -> Result<Vec<Artifact>, ToolError> {
    let p = &job.params;
    let seed = job.seed;
    match job.tool.as_str() {
        "virtual_tryon" | "virtual_tryon_pro" | "virtual_tryon_pro_fit" => {
            let model = required(job, "model_image", limits)?;
            let garment = required(job, "garment_image", limits)?;
            let pose = image_of(job, "pose_image", limits)?;
            let style = image_of(job, "style_image", limits)?;
            let opts = tryon_options(p, pose.as_ref(), style.as_ref());
            png(imaging::tryon(&model, &garment, &opts, seed)).map(|a| vec![a])
        }
        "virtual_model" => {
            let face = image_of(job, "face_reference", limits)?;
            let desc = model_description(p);
            (0..count(p, "num_outputs"))
                .map(|i| png(imaging::virtual_model(&desc, face.as_ref(), seed, i)))
                .collect()
        }
        "fabric" => {
            let model = required(job, "model_image", limits)?;
            let fabric_image = image_of(job, "fabric_image", limits)?;
            let source = match &fabric_image {
                Some(img) => FabricSource::Image(img),
                None => FabricSource::Description(text(p, "fabric_description")),
            };
            let out = imaging::fabric_with(&model, source, region(text(p, "category")), seed, subject)
                .map_err(model_failed)?;
            let out = DynamicImage::ImageRgb8(out);
            let out = if p.get("upscale").and_then(Value::as_bool) == Some(true) {
                imaging::upscale(&out, 2)
            } else {
                out
            };
            Ok(vec![encode(&out, OutputFormat::Png)?])
        }
        "sketch_to_dress" => {
            let sketch = required(job, "image", limits)?;
            png(imaging::sketch_to_dress(&sketch, &sketch_options(p), seed)).map(|a| vec![a])
        }
        "upscale" => {
            let factor = number(p, "scale", 2.0) as u32;
            // The output size follows from the header (an EXIF rotation swaps the sides, which
            // changes neither the pixel count nor the longest side), so an input too large to
            // upscale is refused before its pixels are decoded.
            let bytes =
                job.images.get("image").ok_or_else(|| ToolError::Failed("image is missing".into()))?;
            let info =
                imaging::probe(bytes, limits).map_err(|e| ToolError::InvalidImage(format!("image: {e}")))?;
            let (w, h) =
                (u64::from(info.width) * u64::from(factor), u64::from(info.height) * u64::from(factor));
            if w * h > limits.max_pixels || w.max(h) > u64::from(limits.max_side) {
                return Err(ToolError::InvalidImage(format!(
                    "image: upscaled to {w}x{h} it would exceed the output limits ({} px a side, {} pixels)",
                    limits.max_side, limits.max_pixels
                )));
            }
            let img = required(job, "image", limits)?;
            let format = match text(p, "output_format") {
                "jpeg" => OutputFormat::Jpeg,
                "webp" => OutputFormat::Webp,
                _ => OutputFormat::Png,
            };
            Ok(vec![encode(&imaging::upscale(&img, factor), format)?])
        }
        "multipose" => {
            let img = required(job, "image", limits)?;
            let pose = image_of(job, "pose_image", limits)?;
            (0..count(p, "num_outputs"))
                .map(|i| png(imaging::multipose(&img, pose.as_ref(), i, seed)))
                .collect()
        }
        "video" => {
            let img = required(job, "image", limits)?.to_rgb8();
            let spec = VideoSpec {
                duration_s: number(p, "duration", 5.0) as f32,
                motion: video_motion(p),
                seed,
                ..VideoSpec::default()
            };
            let mp4 = atelier_video::render(&img, &spec).map_err(|e| ToolError::Failed(e.to_string()))?;
            Ok(vec![Artifact { bytes: Bytes::from(mp4), ext: "mp4" }])
        }
        "background_removal" => {
            let img = required(job, "image", limits)?;
            let cut = imaging::remove_background_with(&img, subject).map_err(model_failed)?;
            let format =
                if text(p, "output_format") == "webp" { OutputFormat::Webp } else { OutputFormat::Png };
            let out = match atelier_core::tools::parse_hex_color(text(p, "background_color")) {
                Some(color) => DynamicImage::ImageRgb8(imaging::flatten(&cut, color)),
                None => DynamicImage::ImageRgba8(cut),
            };
            Ok(vec![encode(&out, format)?])
        }
        "reframe" => {
            let img = required(job, "image", limits)?;
            let target = aspect(text(p, "aspect_ratio")).unwrap_or((1, 1));
            let mode = match text(p, "mode") {
                "crop" => ReframeMode::Crop,
                "extend" => ReframeMode::Extend,
                _ => ReframeMode::Auto,
            };
            let out = imaging::reframe_with(&img, target, mode, subject).map_err(model_failed)?;
            Ok(vec![encode(&out, OutputFormat::Png)?])
        }
        "product_shoot" => {
            let product = required(job, "product_image", limits)?;
            let target = aspect(text(p, "aspect_ratio")).unwrap_or((1, 1));
            // One cut-out for every shot of the product.
            let cut = imaging::remove_background_with(&product, subject).map_err(model_failed)?;
            (0..count(p, "num_outputs"))
                .map(|i| png(imaging::product_shoot_of_cutout(&cut, text(p, "scene"), target, i, seed)))
                .collect()
        }
        other => Err(ToolError::Failed(format!("the built-in engine has no tool '{other}'"))),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use image::{Rgb, RgbImage};
    use serde_json::json;

    use super::*;

    fn params(v: Value) -> Params {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn tryon_params_reach_the_imaging_call() {
        let p = params(json!({
            "category": "bottoms",
            "garment_size": "XL",
            "model_name": "Turbo",
            "garment_description": "navy stripes",
            "aspect_ratio": "16:9",
        }));
        let pose = DynamicImage::new_rgb8(4, 4);
        let o = tryon_options(&p, Some(&pose), None);
        assert_eq!(o.region, GarmentRegion::Bottom);
        assert_eq!(o.size, GarmentSize::XL);
        assert_eq!(o.model, TryOnModel::Turbo);
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
        let job = Job { tool: tool.to_string(), params: p, images, seed: 7, index: 0 };
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
        let job =
            Job { tool: "upscale".into(), params: params(json!({"scale": 2})), images, seed: 7, index: 0 };
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
        let job =
            Job { tool: "upscale".into(), params: params(json!({"scale": 4})), images, seed: 1, index: 0 };
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
            let job =
                Job { tool: "sketch_to_dress".into(), params: params(p), images: imgs, seed: 7, index: 0 };
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
