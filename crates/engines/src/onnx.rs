//! The `onnx` engine kind: an operator's ONNX model run in this process on the CPU, through
//! the runtime of the built-in engine's learned cut-out (`tract`, or ONNX Runtime where
//! `worker.onnxruntime` names its library), for tools whose work is one image in and a mask or
//! an image out.
//!
//! The model takes `1x3xHxW` floats (`input_size = [W, H]`): the tool's primary image,
//! resized to that size (Lanczos-3), scaled to 0..1 and normalised per channel with `mean` and
//! `std` when given. Its first output is read as:
//!
//! - `mask` (`1x1xHxW`): min-max normalised, resized to the image's size and used as the
//!   alpha of the image (a cut-out, as `background_removal` returns; BiRefNet, IS-Net,
//!   U²-Net exports);
//! - `image` (`1x3xH'xW'`, values 0..1): the result, resized to the image's size times
//!   `W'/W` (an upscaler's factor; Real-ESRGAN exports).
//!
//! The model is loaded and checked at start: a missing file, or one whose shapes do not fit
//! the configuration, stops the start with a message that says which.

use std::sync::Arc;

use atelier_imaging::image::{DynamicImage, Rgb32FImage, RgbImage, RgbaImage};
use atelier_imaging::OutputFormat;
use atelier_saliency::{normalised_map, ImageNetwork, Runtime};
use atelier_tools::{Artifact, Execution, Executor, ToolError};
use bytes::Bytes;

use crate::settings::{EndpointSettings, OnnxOutput};

/// A loaded model; cheap to share (`run` takes `&self`, keeps no state between calls).
pub struct Onnx(Arc<Model>);

struct Model {
    name: String,
    net: ImageNetwork,
    width: u32,
    height: u32,
    mean: [f32; 3],
    std: [f32; 3],
    output: OnnxOutput,
    /// Output side ÷ input side (`image` outputs).
    scale: f32,
    limits: atelier_imaging::Limits,
}

impl std::fmt::Debug for Onnx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Onnx").field("name", &self.0.name).finish_non_exhaustive()
    }
}

impl Onnx {
    /// Loads and checks the model `[engines.NAME]` names, for `runtime`.
    pub fn load(name: &str, settings: &EndpointSettings, runtime: &Runtime) -> Result<Self, String> {
        Model::load(name, settings, runtime).map(|m| Self(Arc::new(m)))
    }
}

impl Model {
    fn load(name: &str, settings: &EndpointSettings, runtime: &Runtime) -> Result<Self, String> {
        let path = &settings.model;
        let bytes =
            std::fs::read(path).map_err(|e| format!("cannot read the model {}: {e}", path.display()))?;
        let [width, height] = settings.input_size.ok_or("input_size is required")?;
        let invalid = |detail: String| {
            format!(
                "{} is not a usable model for input_size [{width}, {height}] and output \"{}\": {detail}",
                path.display(),
                match settings.output {
                    OnnxOutput::Mask => "mask",
                    OnnxOutput::Image => "image",
                }
            )
        };
        let net = ImageNetwork::load(runtime, &bytes, width, height).map_err(invalid)?;
        let shape = net.output_shape().to_vec();
        let scale = match (settings.output, shape.as_slice()) {
            (OnnxOutput::Mask, [1, 1, h, w] | [1, h, w]) if *h == height as usize && *w == width as usize => {
                1.0
            }
            (OnnxOutput::Image, [1, 3, h, w]) if *w * height as usize == *h * width as usize => {
                *w as f32 / width as f32
            }
            _ => return Err(invalid(format!("its first output has shape {shape:?}"))),
        };
        Ok(Self {
            name: name.to_string(),
            net,
            width,
            height,
            mean: settings.mean.unwrap_or([0.0; 3]),
            std: settings.std.unwrap_or([1.0; 3]),
            output: settings.output,
            scale,
            limits: atelier_imaging::Limits::default(),
        })
    }

    fn infer(&self, img: &DynamicImage) -> Result<Artifact, ToolError> {
        let (w, h) = (self.width as usize, self.height as usize);
        let small = atelier_imaging::resize(img, self.width, self.height).to_rgb8();
        let values = self
            .net
            .run(&small, 255.0, self.mean, self.std)
            .map_err(|e| ToolError::Failed(format!("the model {} failed: {e}", self.name)))?;
        let rgb = img.to_rgb8();
        match self.output {
            OnnxOutput::Mask => {
                let mask = normalised_map(&values, self.width, self.height)
                    .ok_or_else(|| ToolError::Failed("the model's mask has the wrong size".into()))?;
                let mask =
                    atelier_imaging::resize(&DynamicImage::ImageLuma8(mask), rgb.width(), rgb.height())
                        .to_luma8();
                let cut = RgbaImage::from_fn(rgb.width(), rgb.height(), |x, y| {
                    let p = rgb.get_pixel(x, y);
                    atelier_imaging::image::Rgba([p[0], p[1], p[2], mask.get_pixel(x, y)[0]])
                });
                encode(&DynamicImage::ImageRgba8(cut))
            }
            OnnxOutput::Image => {
                let (ow, oh) =
                    ((w as f32 * self.scale).round() as u32, (h as f32 * self.scale).round() as u32);
                let plane = (ow * oh) as usize;
                let out = Rgb32FImage::from_fn(ow, oh, |x, y| {
                    let i = (y * ow + x) as usize;
                    atelier_imaging::image::Rgb([values[i], values[plane + i], values[2 * plane + i]])
                });
                let out = RgbImage::from_fn(ow, oh, |x, y| {
                    let p = out.get_pixel(x, y);
                    atelier_imaging::image::Rgb(p.0.map(|v| (v.clamp(0.0, 1.0) * 255.0).round() as u8))
                });
                let target = (
                    ((rgb.width() as f32) * self.scale).round().max(1.0) as u32,
                    ((rgb.height() as f32) * self.scale).round().max(1.0) as u32,
                );
                let out = DynamicImage::ImageRgb8(out);
                let out =
                    if (ow, oh) == target { out } else { atelier_imaging::resize(&out, target.0, target.1) };
                encode(&out)
            }
        }
    }
}

fn encode(img: &DynamicImage) -> Result<Artifact, ToolError> {
    let bytes =
        atelier_imaging::encode(img, OutputFormat::Png).map_err(|e| ToolError::Failed(e.to_string()))?;
    Ok(Artifact { bytes: Bytes::from(bytes), ext: "png" })
}

#[async_trait::async_trait]
impl Executor for Onnx {
    async fn run(&self, execution: Execution) -> Result<Vec<Artifact>, ToolError> {
        let primary = execution.tool.spec().primary_image.unwrap_or("image");
        let bytes = execution
            .images
            .get(primary)
            .cloned()
            .ok_or_else(|| ToolError::Failed(format!("{primary} is missing")))?;
        let model = self.0.clone();
        tokio::task::spawn_blocking(move || {
            let img = atelier_imaging::decode(&bytes, &model.limits)
                .map_err(|e| ToolError::InvalidImage(format!("{primary}: {e}")))?;
            if model.output == OnnxOutput::Image {
                let (w, h) =
                    ((img.width() as f32 * model.scale) as u64, (img.height() as f32 * model.scale) as u64);
                if w * h > model.limits.max_pixels {
                    return Err(ToolError::InvalidImage(format!(
                        "{primary}: scaled by {} it would exceed the output limits",
                        model.scale
                    )));
                }
            }
            model.infer(&img).map(|a| vec![a])
        })
        .await
        .map_err(|e| ToolError::Failed(format!("the model stopped unexpectedly: {e}")))?
    }

    fn engine(&self) -> &'static str {
        "onnx"
    }
}
