//! The built-in CPU engine: every tool, deterministic for a given seed.
//! Image work runs on the blocking pool, never on the async runtime.

use atelier_core::params::Params;
use atelier_imaging::{
    self as imaging, FabricSource, GarmentRegion, ModelDescription, OutputFormat, ReframeMode,
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
        let limits = self.options.limits;
        tokio::task::spawn_blocking(move || execute(&job, &limits))
            .await
            .map_err(|e| ToolError::Failed(format!("the tool stopped unexpectedly: {e}")))?
    }
}

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

fn execute(job: &Job, limits: &imaging::Limits) -> Result<Vec<Artifact>, ToolError> {
    let p = &job.params;
    let seed = job.seed;
    match job.tool.as_str() {
        "virtual_tryon" | "virtual_tryon_pro" | "virtual_tryon_pro_fit" => {
            let model = required(job, "model_image", limits)?;
            let garment = required(job, "garment_image", limits)?;
            let fit = match text(p, "garment_size") {
                "S" => 0.92,
                "L" => 1.08,
                "XL" => 1.15,
                _ => 1.0,
            };
            let out = DynamicImage::ImageRgb8(imaging::tryon(
                &model,
                &garment,
                region(text(p, "category")),
                fit,
                seed,
            ));
            let out = match aspect(text(p, "aspect_ratio")) {
                Some(a) => imaging::reframe(&out, a, ReframeMode::Auto),
                None => out,
            };
            Ok(vec![encode(&out, OutputFormat::Png)?])
        }
        "virtual_model" => {
            let face = image_of(job, "face_reference", limits)?;
            let desc = ModelDescription {
                gender: text(p, "gender"),
                ethnicity: text(p, "ethnicity"),
                dresstype: text(p, "dresstype"),
                background: text(p, "background"),
                age: text(p, "age"),
                closeup: p.get("closeup").and_then(Value::as_bool).unwrap_or(false),
                prompt: text(p, "improve_prompt"),
            };
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
            let out =
                DynamicImage::ImageRgb8(imaging::fabric(&model, source, region(text(p, "category")), seed));
            let out = if p.get("upscale").and_then(Value::as_bool) == Some(true) {
                imaging::upscale(&out, 2)
            } else {
                out
            };
            Ok(vec![encode(&out, OutputFormat::Png)?])
        }
        "sketch_to_dress" => {
            let sketch = required(job, "image", limits)?;
            png(imaging::sketch_to_dress(
                &sketch,
                text(p, "gender") != "male",
                seed,
                text(p, "improve_prompt"),
            ))
            .map(|a| vec![a])
        }
        "upscale" => {
            let img = required(job, "image", limits)?;
            let factor = number(p, "scale", 2.0) as u32;
            let (w, h) =
                (u64::from(img.width()) * u64::from(factor), u64::from(img.height()) * u64::from(factor));
            if w * h > limits.max_pixels || w.max(h) > u64::from(limits.max_side) {
                return Err(ToolError::InvalidImage(format!(
                    "image: upscaled to {w}x{h} it would exceed the output limits ({} px a side, {} pixels)",
                    limits.max_side, limits.max_pixels
                )));
            }
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
            let motion = text(p, "motion").parse::<Motion>().unwrap_or(Motion::Auto);
            let spec = VideoSpec {
                duration_s: number(p, "duration", 5.0) as f32,
                motion,
                seed,
                ..VideoSpec::default()
            };
            let mp4 = atelier_video::render(&img, &spec).map_err(|e| ToolError::Failed(e.to_string()))?;
            Ok(vec![Artifact { bytes: Bytes::from(mp4), ext: "mp4" }])
        }
        "background_removal" => {
            let img = required(job, "image", limits)?;
            let cut = imaging::remove_background(&img);
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
            Ok(vec![encode(&imaging::reframe(&img, target, mode), OutputFormat::Png)?])
        }
        "product_shoot" => {
            let product = required(job, "product_image", limits)?;
            let target = aspect(text(p, "aspect_ratio")).unwrap_or((1, 1));
            (0..count(p, "num_outputs"))
                .map(|i| png(imaging::product_shoot(&product, text(p, "scene"), target, i, seed)))
                .collect()
        }
        other => Err(ToolError::Failed(format!("the built-in engine has no tool '{other}'"))),
    }
}
