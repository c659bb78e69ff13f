//! The production tools' own processing, as the built-in engine runs it, at 1024x1536.

use std::hint::black_box;

use atelier_imaging::{self as imaging, FabricSource, GarmentRegion, Limits, OutputFormat, ReframeMode};
use image::DynamicImage;

use crate::inputs::{Error, Inputs};
use crate::measure::Sampler;
use crate::report;

/// Processing-time target: at most this many times a decode + encode PNG of the same image.
const TARGET: f64 = 5.0;

/// What a tool's processing produced, before the engine stores it.
pub enum Output {
    /// An image the engine then encodes as PNG.
    Image(DynamicImage),
    /// A file the tool encoded itself (video: H.264 in MP4).
    File(Vec<u8>),
}

impl Output {
    /// The bytes the engine stores.
    pub fn encode(self) -> Result<Vec<u8>, Error> {
        match self {
            Output::Image(img) => Ok(imaging::encode(&img, OutputFormat::Png)?),
            Output::File(bytes) => Ok(bytes),
        }
    }
}

/// One production tool's processing with the parameters named.
pub struct Tool {
    pub name: &'static str,
    /// Takes the decoded input as the service's task does, so that it is freed where the
    /// task frees it (before the output is encoded, or sooner).
    pub process: fn(DynamicImage) -> Result<Output, Error>,
    /// The factor of an upscale, whose output size the service checks against its limits.
    pub upscale: Option<u32>,
}

/// The production tools, as `crates/tools` runs them on the built-in engine (without a
/// learned subject model).
pub fn production() -> Vec<Tool> {
    fn image(img: impl Into<DynamicImage>) -> Result<Output, Error> {
        Ok(Output::Image(img.into()))
    }
    vec![
        Tool {
            name: "background_removal",
            process: |img| image(imaging::remove_background(&img)),
            upscale: None,
        },
        Tool {
            name: "reframe crop 1:1",
            process: |img| image(imaging::reframe_with(img, (1, 1), ReframeMode::Crop, None)?),
            upscale: None,
        },
        Tool {
            name: "reframe extend 16:9",
            process: |img| image(imaging::reframe_with(img, (16, 9), ReframeMode::Extend, None)?),
            upscale: None,
        },
        Tool {
            name: "product_shoot 1:1",
            // As the service: the cut-out trimmed, the photograph freed, then the shot.
            process: |img| {
                let cut = imaging::trim_cutout(&imaging::remove_background(&img));
                drop(img);
                image(imaging::product_shoot_of_cutout(&cut, "white studio", (1, 1), 0, 1))
            },
            upscale: None,
        },
        Tool {
            name: "fabric (described pattern)",
            process: |img| {
                image(imaging::fabric(&img, FabricSource::Description("navy stripes"), GarmentRegion::Top, 1))
            },
            upscale: None,
        },
        Tool { name: "upscale x2", process: |img| image(imaging::upscale(&img, 2)), upscale: Some(2) },
        Tool {
            name: "video 5 s (includes its H.264/MP4 encode)",
            process: |img| {
                let spec = atelier_video::VideoSpec::default();
                Ok(Output::File(atelier_video::render(&img.into_rgb8(), &spec)?))
            },
            upscale: None,
        },
    ]
}

/// Measures and prints the production-tools section.
pub fn run(i: &Inputs, sampler: &Sampler) -> Result<(), Error> {
    let limits = Limits::default();
    let decode_encode = sampler.median_ms(|| -> Result<Vec<u8>, Error> {
        Ok(imaging::encode(&imaging::decode(&i.scene_png, &limits)?, OutputFormat::Png)?)
    });
    let mut rows = Vec::new();
    let mut missed = Vec::new();
    for tool in production() {
        let ms = sampler.median_ms_of(|| i.scene.clone(), |img| black_box((tool.process)(img).map(drop)));
        let ratio = ms / decode_encode;
        if ratio > TARGET {
            missed.push(format!(
                "{}: {} × decode + encode (target ≤ {TARGET})",
                tool.name,
                report::ratio(ratio)
            ));
        }
        rows.push(vec![
            tool.name.into(),
            report::ms(ms),
            report::ratio(ratio),
            report::yes_no(ratio <= TARGET),
        ]);
    }
    println!("## Production tools: processing vs decode + encode\n");
    println!(
        "Processing only (the input already decoded, the output not encoded; video's own \
         H.264/MP4 encode is part of its processing), 1024x1536 input, median latency on one \
         thread. Reference: decode + encode PNG of the same image, {}. Target: ≤ {TARGET}×.\n",
        report::ms(decode_encode)
    );
    report::table(&["tool", "processing", "÷ (decode + encode)", "target met"], &rows);
    report::missed("tool-processing", &missed);
    Ok(())
}
