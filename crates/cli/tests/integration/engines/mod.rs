//! Tools routed to real model servers (`atelier_engines`): Cog's HTTP prediction server and
//! ComfyUI, started from the environments `tests/engines/testenv.sh` installs (skipped where
//! they are missing, unless `ATELIER_REQUIRE_ENGINES=1`), and ONNX models in-process.

mod bundles;
mod cog;
mod comfyui;
mod onnx;

use std::time::{Duration, Instant};

use atelier_testkit::service::TestApp;
use serde_json::{json, Value};

/// A person-like figure on a light backdrop, as a data URI.
pub fn person() -> String {
    data_uri(&atelier_testkit::images::png_bytes(64, 96))
}

/// A blue square garment, as a data URI.
pub fn garment() -> String {
    let img = image::RgbImage::from_pixel(32, 32, image::Rgb([20, 40, 200]));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    data_uri(&out.into_inner())
}

pub fn data_uri(png: &[u8]) -> String {
    use base64::Engine as _;
    format!("data:image/png;base64,{}", base64::engine::general_purpose::STANDARD.encode(png))
}

/// `[engines.NAME]` from JSON.
pub fn endpoint(settings: Value) -> atelier_engines::EndpointSettings {
    serde_json::from_value(settings).unwrap()
}

/// `[tools.TOOL]` from JSON.
pub fn tool(settings: Value) -> atelier_engines::ToolSettings {
    serde_json::from_value(settings).unwrap()
}

/// Polls a run's status until `done` says so; every status seen, in order.
pub async fn watch(app: &TestApp, id: &str, done: impl Fn(&Value) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    loop {
        let (code, status) = app.get(&format!("/api/v3/status/{id}")).await;
        assert_eq!(code, 200, "{status}");
        let stop = done(&status);
        seen.push(status);
        if stop {
            return seen;
        }
        assert!(Instant::now() < deadline, "run {id}: {:?}", seen.last());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub fn terminal(status: &Value) -> bool {
    ["succeeded", "failed", "canceled"].contains(&status["overall_status"].as_str().unwrap_or(""))
}

/// A single-tool run body.
pub fn node_run(target: &str, input: Value) -> Value {
    json!({"type": "node", "target": target, "input": input})
}

/// The executor of `virtual_tryon` with one endpoint `name` routed as `route`, as the engine
/// calls it (no service around it).
pub fn tryon_executor(
    name: &str,
    endpoint_settings: atelier_engines::EndpointSettings,
    route: atelier_engines::ToolSettings,
) -> std::sync::Arc<dyn atelier_tools::Executor> {
    let mut routing = atelier_engines::Routing::default();
    routing.engines.insert(name.into(), endpoint_settings);
    routing.tools.insert("virtual_tryon".into(), route);
    let engines = atelier_engines::Engines::new(routing).unwrap();
    let mut registry = atelier_tools::Registry::builtin(Default::default());
    let fetcher = std::sync::Arc::new(atelier_inputs::Fetcher::new(Default::default()).unwrap());
    engines.install(&mut registry, fetcher, None).unwrap();
    registry.get(atelier_core::tools::ToolId::VirtualTryon).unwrap()
}

/// One `virtual_tryon` execution of [`person`] and [`garment`] under `attempt_key`.
pub fn tryon_execution(attempt_key: &str, seed: u64) -> atelier_tools::Execution {
    let bytes = |uri: String| {
        use base64::Engine as _;
        bytes::Bytes::from(
            base64::engine::general_purpose::STANDARD.decode(uri.split_once(',').unwrap().1).unwrap(),
        )
    };
    atelier_tools::Execution {
        context: atelier_tools::Context { attempt_key: attempt_key.into(), ..Default::default() },
        tool: atelier_core::tools::ToolId::VirtualTryon,
        params: json!({"category": "tops", "seed": seed}).as_object().cloned().unwrap(),
        images: std::collections::HashMap::from([
            ("model_image".to_string(), bytes(person())),
            ("garment_image".to_string(), bytes(garment())),
        ]),
        seed,
        index: 0,
    }
}
