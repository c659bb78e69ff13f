//! An ONNX network over one RGB image, run on the CPU through `tract`: the one runner of the
//! built-in subject model ([`crate::U2Net`]) and of the operators' `onnx` engines
//! (`atelier-engines`). It loads and optimises a network for a fixed 1×3×H×W float input,
//! turns an image into that input (scaled, then normalised per channel) and returns the
//! first output's values.

use std::sync::Arc;

use atelier_imaging::image::{GrayImage, RgbImage};
use tract_onnx::prelude::*;

/// A network loaded for one input size. Cheap to share: [`ImageNetwork::run`] takes `&self`
/// and keeps no state between calls.
pub struct ImageNetwork {
    plan: Arc<TypedRunnableModel>,
    width: u32,
    height: u32,
    output_shape: Vec<usize>,
}

impl ImageNetwork {
    /// Loads `bytes` (ONNX) for a `width`×`height` RGB input; its first output must have a
    /// fixed shape. The error says what tract found wrong.
    pub fn load(bytes: &[u8], width: u32, height: u32) -> Result<Self, String> {
        let (w, h) = (width as usize, height as usize);
        let model = tract_onnx::onnx()
            .model_for_read(&mut std::io::Cursor::new(bytes))
            .map_err(|e| format!("{e:#}"))?
            .with_input_fact(0, f32::fact([1, 3, h, w]).into())
            .map_err(|e| format!("{e:#}"))?;
        let plan = optimisation_settings()
            .enter(|| model.into_optimized())
            .map_err(|e| format!("{e:#}"))?
            .into_runnable()
            .map_err(|e| format!("{e:#}"))?;
        let fact = plan.model().output_fact(0).map_err(|e| format!("{e:#}"))?;
        let output_shape = fact
            .shape
            .as_concrete()
            .map(<[usize]>::to_vec)
            .ok_or_else(|| format!("its first output has no fixed shape ({:?})", fact.shape))?;
        Ok(Self { plan, width, height, output_shape })
    }

    /// The shape of the first output.
    pub fn output_shape(&self) -> &[usize] {
        &self.output_shape
    }

    /// Runs on `img` (already `width`×`height`): each channel value divided by `divisor`,
    /// then `(v - mean) / std`, planes in RGB order. The first output's values.
    pub fn run(
        &self,
        img: &RgbImage,
        divisor: f32,
        mean: [f32; 3],
        std: [f32; 3],
    ) -> Result<Vec<f32>, String> {
        let (w, h) = (self.width as usize, self.height as usize);
        if img.dimensions() != (self.width, self.height) {
            return Err(format!("the network takes {w}x{h} images, not {}x{}", img.width(), img.height()));
        }
        let mut data = vec![0f32; 3 * w * h];
        for (i, px) in img.pixels().enumerate() {
            for c in 0..3 {
                data[c * w * h + i] = (f32::from(px[c]) / divisor - mean[c]) / std[c];
            }
        }
        let input = Tensor::from_shape(&[1, 3, h, w], &data).map_err(|e| format!("{e:#}"))?;
        let outputs = self.plan.run(tvec!(input.into())).map_err(|e| format!("{e:#}"))?;
        let view = outputs[0].to_plain_array_view::<f32>().map_err(|e| format!("{e:#}"))?;
        Ok(view.iter().copied().collect())
    }
}

/// A `width`×`height` map of `values` min-max normalised to 0..=255 (non-finite values left
/// out of the range); `None` when there are not `width`×`height` values.
pub fn normalised_map(values: &[f32], width: u32, height: u32) -> Option<GrayImage> {
    let (lo, hi) = values
        .iter()
        .filter(|v| v.is_finite())
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let span = if hi > lo { hi - lo } else { 1.0 };
    let map = values.iter().map(|&v| (((v - lo) / span) * 255.0).round().clamp(0.0, 255.0) as u8).collect();
    GrayImage::from_raw(width, height, map)
}

/// The settings this runner optimises a network with, beside tract's defaults: convolutions
/// as im2col and a matrix product, never tract's "direct spatial" convolution. On x86-64
/// that one took about half of the built-in subject model's time; without it the model's
/// tests use 29% less CPU (`learned`: 31.8 s → 22.7 s).
const SETTINGS: [(&str, &str); 1] = [("TRACT_DISABLE_DIRECT_SPATIAL", "true")];

/// [`SETTINGS`] for [`KnobScope::enter`]; tract's defaults should a later tract not know
/// them (the test below fails then).
///
/// [`KnobScope::enter`]: tract_onnx::tract_core::knobs::KnobScope::enter
fn optimisation_settings() -> tract_onnx::tract_core::knobs::KnobScope {
    tract_onnx::tract_core::knobs::KnobScope::new(SETTINGS).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn tract_knows_every_setting() {
        if let Err(e) = tract_onnx::tract_core::knobs::KnobScope::new(super::SETTINGS) {
            panic!("{e:#}");
        }
    }
}
