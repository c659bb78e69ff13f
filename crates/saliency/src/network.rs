//! An ONNX network over one RGB image, run on the CPU: the one runner of the built-in subject
//! model ([`crate::U2Net`]) and of the operators' `onnx` engines (`atelier-engines`). It loads
//! and prepares a network for a fixed 1×3×H×W float input, turns an image into that input
//! (scaled, then normalised per channel) and returns the first output's values.
//!
//! Two runtimes run it ([`Runtime`]): `tract` (pure Rust, built in, the default) and ONNX
//! Runtime, loaded at run time from a library the operator names (`worker.onnxruntime`).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use atelier_imaging::image::{GrayImage, RgbImage};
use tract_onnx::prelude::*;

/// What runs the networks: `tract` (built in) or ONNX Runtime from a library loaded once per
/// process. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub enum Runtime {
    /// `tract`, pure Rust, single-threaded: nothing to install.
    #[default]
    Tract,
    /// ONNX Runtime's CPU provider.
    OnnxRuntime(OnnxRuntime),
}

impl Runtime {
    /// A short name for logs and errors: `tract` or `onnxruntime`.
    pub fn name(&self) -> &'static str {
        match self {
            Runtime::Tract => "tract",
            Runtime::OnnxRuntime(_) => "onnxruntime",
        }
    }

    /// `model` as outputs' provenance and the result cache's keys name it on this runtime:
    /// unchanged on tract (the identities made before ONNX Runtime hold), `"{model} on
    /// onnxruntime"` otherwise, since two runtimes round differently.
    pub fn qualify(&self, model: &str) -> String {
        match self {
            Runtime::Tract => model.to_string(),
            other => format!("{model} on {}", other.name()),
        }
    }
}

/// ONNX Runtime loaded from a shared library (`libonnxruntime.so`, 1.17 or newer; the PyPI
/// package `onnxruntime` ships one in `onnxruntime/capi/`), with the threads each forward
/// pass may use.
#[derive(Clone)]
pub struct OnnxRuntime {
    env: ort::environment::Environment,
    library: PathBuf,
    threads: usize,
}

impl std::fmt::Debug for OnnxRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnnxRuntime")
            .field("library", &self.library)
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

/// The library this process loaded, and its environment: ONNX Runtime is loaded once per
/// process, so every [`OnnxRuntime::load`] after the first shares it.
static LOADED: Mutex<Option<(PathBuf, ort::environment::Environment)>> = Mutex::new(None);

impl OnnxRuntime {
    /// Loads the library at `library` (once per process; later calls with the same path share
    /// it); each forward pass then uses `threads` threads (at least 1). A process loads one
    /// library: another path than the loaded one is an error.
    pub fn load(library: &Path, threads: usize) -> Result<Self, String> {
        let mut loaded = LOADED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let env = match loaded.as_ref() {
            Some((path, env)) if path == library => env.clone(),
            Some((path, _)) => {
                return Err(format!(
                    "cannot load ONNX Runtime from {}: this process already runs ONNX Runtime from {}",
                    library.display(),
                    path.display()
                ))
            }
            None => {
                let builder = ort::init_from(library).map_err(|e| {
                    format!(
                        "cannot load ONNX Runtime from {} (1.17 or newer is needed): {e}",
                        library.display()
                    )
                })?;
                let env = builder
                    .with_name("atelier")
                    .build()
                    .map_err(|e| format!("ONNX Runtime from {} did not start: {e}", library.display()))?;
                *loaded = Some((library.to_path_buf(), env.clone()));
                env
            }
        };
        Ok(Self { env, library: library.to_path_buf(), threads: threads.max(1) })
    }

    /// The library's path, as configured.
    pub fn library(&self) -> &Path {
        &self.library
    }

    /// Threads per forward pass.
    pub fn threads(&self) -> usize {
        self.threads
    }

    fn session(&self, bytes: &[u8]) -> Result<ort::session::Session, String> {
        ort::session::Session::builder(&self.env)
            .and_then(|b| Ok(b.with_intra_threads(self.threads)?))
            .and_then(|b| Ok(b.with_inter_threads(1)?))
            .and_then(|mut b| b.commit_from_memory(bytes))
            .map_err(|e| format!("{e}"))
    }
}

/// A network loaded for one input size. Cheap to share: [`ImageNetwork::run`] takes `&self`
/// and keeps no state between calls.
pub struct ImageNetwork {
    plan: Plan,
    width: u32,
    height: u32,
    output_shape: Vec<usize>,
}

enum Plan {
    Tract(Arc<TypedRunnableModel>),
    /// ONNX Runtime runs a session on one thread at a time: one session per concurrent caller,
    /// made when none is free and kept for the next. `model` is kept to make them (a copy of
    /// the model's bytes beside the weights each session holds).
    OnnxRuntime {
        runtime: OnnxRuntime,
        model: Vec<u8>,
        idle: Mutex<Vec<ort::session::Session>>,
    },
}

impl ImageNetwork {
    /// Loads `bytes` (ONNX) on `runtime` for a `width`×`height` RGB input; its first output must
    /// have a fixed shape for that input. tract works the shapes out as it optimises; on ONNX
    /// Runtime one pass over zeros checks that the network takes that input and measures its
    /// output (and warms the session). The error says what the runtime found wrong.
    pub fn load(runtime: &Runtime, bytes: &[u8], width: u32, height: u32) -> Result<Self, String> {
        match runtime {
            Runtime::Tract => Self::load_tract(bytes, width, height),
            Runtime::OnnxRuntime(ort) => Self::load_onnxruntime(ort, bytes, width, height),
        }
    }

    fn load_tract(bytes: &[u8], width: u32, height: u32) -> Result<Self, String> {
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
        Ok(Self { plan: Plan::Tract(plan), width, height, output_shape })
    }

    fn load_onnxruntime(
        runtime: &OnnxRuntime,
        bytes: &[u8],
        width: u32,
        height: u32,
    ) -> Result<Self, String> {
        let session = runtime.session(bytes)?;
        let mut net = Self {
            plan: Plan::OnnxRuntime {
                runtime: runtime.clone(),
                model: bytes.to_vec(),
                idle: Mutex::new(vec![session]),
            },
            width,
            height,
            output_shape: Vec::new(),
        };
        net.output_shape = net.forward(vec![0f32; 3 * width as usize * height as usize])?.1;
        Ok(net)
    }

    /// The shape of the first output.
    pub fn output_shape(&self) -> &[usize] {
        &self.output_shape
    }

    /// The runtime that runs this network.
    pub fn runtime_name(&self) -> &'static str {
        match self.plan {
            Plan::Tract(_) => "tract",
            Plan::OnnxRuntime { .. } => "onnxruntime",
        }
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
        Ok(self.forward(data)?.0)
    }

    /// One pass over `data` (1×3×H×W): the first output's values and shape.
    fn forward(&self, data: Vec<f32>) -> Result<(Vec<f32>, Vec<usize>), String> {
        let (w, h) = (self.width as usize, self.height as usize);
        match &self.plan {
            Plan::Tract(plan) => {
                let input = Tensor::from_shape(&[1, 3, h, w], &data).map_err(|e| format!("{e:#}"))?;
                let outputs = plan.run(tvec!(input.into())).map_err(|e| format!("{e:#}"))?;
                let view = outputs[0].to_plain_array_view::<f32>().map_err(|e| format!("{e:#}"))?;
                Ok((view.iter().copied().collect(), view.shape().to_vec()))
            }
            Plan::OnnxRuntime { runtime, model, idle } => {
                let taken = idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner).pop();
                let mut session = match taken {
                    Some(session) => session,
                    None => runtime.session(model)?,
                };
                let result = run_session(&mut session, data, [1, 3, h, w]);
                idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(session);
                result
            }
        }
    }
}

fn run_session(
    session: &mut ort::session::Session,
    data: Vec<f32>,
    shape: [usize; 4],
) -> Result<(Vec<f32>, Vec<usize>), String> {
    let input = ort::value::Tensor::from_array((shape, data)).map_err(|e| format!("{e}"))?;
    let outputs = session.run(ort::inputs![input]).map_err(|e| format!("{e}"))?;
    let first = outputs.values().next().ok_or("the network returned no output")?;
    let (shape, values) = first.try_extract_tensor::<f32>().map_err(|e| format!("{e}"))?;
    let shape = shape.iter().map(|&d| usize::try_from(d).unwrap_or(0)).collect();
    Ok((values.to_vec(), shape))
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

/// The settings this runner optimises a network with on tract, beside tract's defaults:
/// convolutions as im2col and a matrix product, never tract's "direct spatial" convolution. On
/// x86-64 that one took about half of the built-in subject model's time; without it the model's
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
