//! The configuration of model servers and of the tools routed to them: `[engines.NAME]` and
//! `[tools.TOOL]` in `atelier.toml` (documented in `atelier.example.toml` and
//! `docs/ENGINES.md`). [`Routing::validate`] checks what can be checked without the servers;
//! `crate::check` checks the rest against them.

use std::collections::BTreeMap;
use std::path::PathBuf;

use atelier_core::engines::EngineKind;
use atelier_core::params::ParamType;
use atelier_core::tools::ToolId;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The name that routes a tool to the built-in engine (the default).
pub const BUILTIN: &str = "builtin";

/// `[engines.NAME]`: one model server (or one ONNX model).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointSettings {
    pub kind: EngineKind,
    /// `http(s)://host:port` of the server (`comfyui`, `cog`).
    #[serde(default)]
    pub url: String,
    /// Headers sent with every request, for a reverse proxy in front of the server
    /// (`Authorization = "Bearer …"`). Never logged or shown.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Nodes sent to this endpoint at once; more wait in Atelier, not in the server's queue.
    /// ComfyUI runs one prompt at a time per process; a Cog model runs its `concurrency.max`.
    #[serde(default = "defaults::concurrency")]
    pub max_concurrency: usize,
    #[serde(default = "defaults::connect_timeout")]
    pub connect_timeout_secs: u64,
    /// Each HTTP call but the one that waits for a Cog prediction (the node's timeout bounds
    /// that).
    #[serde(default = "defaults::request_timeout")]
    pub request_timeout_secs: u64,
    /// How often the endpoint's health is checked; one that fails is skipped until a check
    /// passes.
    #[serde(default = "defaults::health_interval")]
    pub health_interval_secs: u64,
    /// How long a node waits for a usable endpoint of its tool before it fails with
    /// `EngineUnavailable` (not charged). A tool routed to several endpoints waits for the
    /// longest of theirs.
    #[serde(default = "defaults::wait")]
    pub wait_secs: u64,
    /// `dns`: `url`'s host name is resolved every `discover_interval_secs`, and each address
    /// it gives is an endpoint of its own (named `NAME@ADDRESS`, each with `max_concurrency`
    /// slots): a Kubernetes headless Service, or any name with one record per server. A new
    /// address is used once a health check passes; one that is gone takes no new nodes and
    /// finishes those it runs. `none` (the default): `url` is one endpoint.
    #[serde(default)]
    pub discover: Discover,
    /// How often a `discover = "dns"` name is resolved again.
    #[serde(default = "defaults::discover_interval")]
    pub discover_interval_secs: u64,
    /// `cog`: how progress is read from a prediction's logs: `tqdm` (`12/30`, the default),
    /// `percent` (`40%`), or `none`.
    #[serde(default)]
    pub progress: ProgressFormat,
    /// `onnx`: the model file.
    #[serde(default)]
    pub model: PathBuf,
    /// `onnx`: width and height the model takes (its input is `1x3xHxW` floats).
    #[serde(default)]
    pub input_size: Option<[u32; 2]>,
    /// `onnx`: per-channel mean and standard deviation, applied to values scaled to 0..1
    /// (`(v / 255 - mean) / std`). Default: no normalisation.
    #[serde(default)]
    pub mean: Option<[f32; 3]>,
    #[serde(default)]
    pub std: Option<[f32; 3]>,
    /// `onnx`: what the first output is: `mask` (`1x1xHxW`, the subject's probability; the tool
    /// returns the image cut out with it) or `image` (`1x3xH'xW'`, values 0..1, e.g. an
    /// upscaler's result).
    #[serde(default)]
    pub output: OnnxOutput,
    /// The operator vouches that this engine's outputs are the same for the same parameters,
    /// seed and input images (a fixed model and template, deterministic sampling), so the
    /// result cache may fill a node instead of sending it. Off by default: a model server's
    /// outputs are only cached where someone says they can be.
    #[serde(default)]
    pub cacheable: bool,
}

/// How an `[engines.NAME]` entry finds its servers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Discover {
    /// `url` is the one server.
    #[default]
    None,
    /// Every address `url`'s host name resolves to is a server.
    Dns,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProgressFormat {
    #[default]
    Tqdm,
    Percent,
    None,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnnxOutput {
    #[default]
    Mask,
    Image,
}

/// The longest `wait_secs`: a week.
pub const MAX_WAIT_SECS: u64 = 7 * 24 * 3600;

mod defaults {
    pub fn concurrency() -> usize {
        1
    }
    pub fn connect_timeout() -> u64 {
        5
    }
    pub fn request_timeout() -> u64 {
        30
    }
    pub fn health_interval() -> u64 {
        10
    }
    pub fn wait() -> u64 {
        600
    }
    pub fn discover_interval() -> u64 {
        5
    }
}

/// `[tools.TOOL]`: where a tool runs and how its parameters reach the model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSettings {
    /// `builtin` (the default), one `[engines.NAME]`, or several of one kind (nodes go to the
    /// least busy healthy one).
    #[serde(default)]
    pub engine: EngineChoice,
    /// `comfyui`: the API-format graph (a JSON file; relative paths are read from the
    /// directory Atelier starts in).
    #[serde(default)]
    pub template: PathBuf,
    /// Atelier parameter → where its value goes. `seed` is always available (the node's
    /// seed); image parameters are uploaded (ComfyUI) or sent as data URIs (Cog).
    #[serde(default)]
    pub inputs: BTreeMap<String, InputMapping>,
    /// Constant inputs: `"NODE.input"` (ComfyUI) or an input name (Cog) → value.
    #[serde(default)]
    pub set: BTreeMap<String, Value>,
    #[serde(default)]
    pub outputs: OutputMapping,
}

/// One name or several.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EngineChoice {
    One(String),
    Several(Vec<String>),
}

impl Default for EngineChoice {
    fn default() -> Self {
        Self::One(BUILTIN.to_string())
    }
}

impl EngineChoice {
    pub fn names(&self) -> Vec<&str> {
        match self {
            Self::One(name) => vec![name.as_str()],
            Self::Several(names) => names.iter().map(String::as_str).collect(),
        }
    }

    pub fn is_builtin(&self) -> bool {
        self.names() == [BUILTIN]
    }
}

/// Where one Atelier parameter goes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputMapping {
    /// `comfyui`: the node id in the template, and the input of that node.
    #[serde(default)]
    pub node: Option<String>,
    #[serde(default)]
    pub input: Option<String>,
    /// `cog`: the model's input name.
    #[serde(default)]
    pub name: Option<String>,
    /// Atelier's value → the model's (`upper = "upper_body"`); values not listed pass as
    /// they are.
    #[serde(default)]
    pub map: BTreeMap<String, Value>,
    /// Sent when the request leaves the parameter out and the tool has no default for it.
    #[serde(default)]
    pub default: Option<Value>,
}

/// Where the artifacts come from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputMapping {
    /// `comfyui`: the ids of the nodes (`SaveImage`, `SaveAnimatedWEBP`, …) whose files are
    /// the node's outputs, in order.
    #[serde(default)]
    pub nodes: Vec<String>,
    /// `cog`: where the files are in the prediction's `output`: `output` (a file or a list),
    /// `output[0]`, `output.image`.
    #[serde(default)]
    pub path: Option<String>,
}

/// `[engines]` and `[tools]` together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Routing {
    pub engines: BTreeMap<String, EndpointSettings>,
    pub tools: BTreeMap<String, ToolSettings>,
}

impl Routing {
    /// What can be checked without the servers. Messages name the key to change.
    pub fn validate(&self) -> Result<(), String> {
        for (name, e) in &self.engines {
            let key = format!("engines.{name}");
            if name == BUILTIN {
                return Err(format!("{key}: \"{BUILTIN}\" names the built-in engine; choose another name"));
            }
            if e.max_concurrency == 0 {
                return Err(format!("{key}.max_concurrency must be at least 1"));
            }
            if e.health_interval_secs == 0
                || e.request_timeout_secs == 0
                || e.connect_timeout_secs == 0
                || e.discover_interval_secs == 0
            {
                return Err(format!(
                    "{key}: health_interval_secs, request_timeout_secs, connect_timeout_secs and \
                     discover_interval_secs must be at least 1"
                ));
            }
            if e.wait_secs > MAX_WAIT_SECS {
                return Err(format!("{key}.wait_secs must be at most {MAX_WAIT_SECS} (a week)"));
            }
            match e.kind {
                EngineKind::Comfyui | EngineKind::Cog => {
                    let parsed = url::Url::parse(&e.url).map_err(|err| format!("{key}.url: {err}"))?;
                    if !matches!(parsed.scheme(), "http" | "https") {
                        return Err(format!("{key}.url must start with http:// or https://"));
                    }
                    if e.discover == Discover::Dns && parsed.host_str().is_none_or(str::is_empty) {
                        return Err(format!("{key}.url: discover = \"dns\" needs a host name to resolve"));
                    }
                }
                EngineKind::Onnx => {
                    if e.discover != Discover::None {
                        return Err(format!("{key}.discover: an onnx model runs in this process; remove it"));
                    }
                    if e.model.as_os_str().is_empty() {
                        return Err(format!("{key}.model: the path of the ONNX model file is required"));
                    }
                    match e.input_size {
                        Some([w, h]) if w > 0 && h > 0 && w <= 8192 && h <= 8192 => {}
                        _ => {
                            return Err(format!(
                                "{key}.input_size: [width, height] of the model's input, each 1 to 8192"
                            ))
                        }
                    }
                    if e.std.is_some_and(|s| s.iter().any(|v| *v == 0.0 || !v.is_finite())) {
                        return Err(format!("{key}.std: values must be finite and not 0"));
                    }
                }
                EngineKind::Builtin => {
                    return Err(format!(
                        "{key}.kind: comfyui, cog or onnx (the built-in engine needs no entry)"
                    ))
                }
            }
        }
        for (tool_name, t) in &self.tools {
            let key = format!("tools.{tool_name}");
            let tool: ToolId = tool_name.parse().map_err(|_| {
                let known: Vec<&str> = atelier_core::tools::TOOLS.iter().map(|t| t.name).collect();
                format!("{key}: unknown tool; the tools are {}", known.join(", "))
            })?;
            if t.engine.is_builtin() {
                continue;
            }
            let names = t.engine.names();
            if names.is_empty() {
                return Err(format!("{key}.engine: name at least one [engines.*] entry, or \"{BUILTIN}\""));
            }
            let mut kinds = Vec::new();
            for name in &names {
                let Some(e) = self.engines.get(*name) else {
                    let known: Vec<&str> = self.engines.keys().map(String::as_str).collect();
                    return Err(format!(
                        "{key}.engine: no [engines.{name}] is configured (configured: {})",
                        if known.is_empty() { "none".to_string() } else { known.join(", ") }
                    ));
                };
                kinds.push(e.kind);
            }
            kinds.dedup();
            let [kind] = kinds[..] else {
                return Err(format!("{key}.engine: the endpoints of one tool must all be of one kind"));
            };
            validate_mapping(&key, tool, kind, t)?;
        }
        Ok(())
    }

    /// The endpoints that serve `tool`, or `None` for the built-in engine.
    pub fn route(&self, tool: ToolId) -> Option<(&ToolSettings, Vec<(&str, &EndpointSettings)>)> {
        let t = self.tools.get(tool.spec().name)?;
        if t.engine.is_builtin() {
            return None;
        }
        let endpoints: Vec<_> =
            t.engine.names().into_iter().filter_map(|n| self.engines.get_key_value(n)).collect();
        Some((t, endpoints.into_iter().map(|(n, e)| (n.as_str(), e)).collect()))
    }
}

fn validate_mapping(key: &str, tool: ToolId, kind: EngineKind, t: &ToolSettings) -> Result<(), String> {
    let spec = tool.spec();
    for (param, m) in &t.inputs {
        let known = param == "seed" || spec.params.iter().any(|p| p.name == param);
        if !known {
            let names: Vec<&str> = spec.params.iter().map(|p| p.name).collect();
            return Err(format!(
                "{key}.inputs.{param}: {} has no such parameter (its parameters: seed, {})",
                spec.name,
                names.join(", ")
            ));
        }
        match kind {
            EngineKind::Comfyui if m.node.is_none() || m.input.is_none() => {
                return Err(format!("{key}.inputs.{param}: a ComfyUI mapping names node and input"));
            }
            EngineKind::Cog if m.name.is_none() => {
                return Err(format!("{key}.inputs.{param}: a Cog mapping names the model's input (name)"));
            }
            _ => {}
        }
    }
    match kind {
        EngineKind::Comfyui => {
            if t.template.as_os_str().is_empty() {
                return Err(format!(
                    "{key}.template: the path of the tool's API-format ComfyUI graph is required"
                ));
            }
            if t.outputs.nodes.is_empty() {
                return Err(format!(
                    "{key}.outputs.nodes: the ids of the template's output nodes are required"
                ));
            }
            if let Some(bad) = t.set.keys().find(|k| !k.contains('.')) {
                return Err(format!("{key}.set.{bad}: ComfyUI constants are written \"NODE.input\""));
            }
        }
        EngineKind::Cog => {
            let needs_image = spec.params.iter().any(|p| p.required && p.ty == ParamType::Image);
            let images_mapped = spec
                .params
                .iter()
                .filter(|p| p.required && p.ty == ParamType::Image)
                .all(|p| t.inputs.contains_key(p.name));
            if needs_image && !images_mapped {
                return Err(format!(
                    "{key}.inputs: every required image parameter of {} must be mapped",
                    spec.name
                ));
            }
        }
        EngineKind::Onnx => {
            if !t.inputs.is_empty() || !t.set.is_empty() {
                return Err(format!(
                    "{key}: an onnx engine takes the tool's primary image only; remove inputs and set"
                ));
            }
            if spec.primary_image.is_none() {
                return Err(format!("{key}: {} has no image input for an onnx model", spec.name));
            }
        }
        EngineKind::Builtin => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routing(toml_engines: Value, toml_tools: Value) -> Result<Routing, String> {
        let engines = serde_json::from_value(toml_engines).map_err(|e| e.to_string())?;
        let tools = serde_json::from_value(toml_tools).map_err(|e| e.to_string())?;
        let r = Routing { engines, tools };
        r.validate().map(|_| r)
    }

    fn err(engines: Value, tools: Value) -> String {
        match routing(engines, tools) {
            Ok(_) => panic!("accepted"),
            Err(e) => e,
        }
    }

    #[test]
    fn nothing_configured_is_valid_and_routes_nothing() {
        let r = routing(serde_json::json!({}), serde_json::json!({})).unwrap_or_default();
        assert!(ToolId::ALL.iter().all(|t| r.route(*t).is_none()));
    }

    #[test]
    fn a_cog_route_is_accepted_and_found() {
        let r = routing(
            serde_json::json!({"idm": {"kind": "cog", "url": "http://gpu:5000"}}),
            serde_json::json!({"virtual_tryon": {"engine": "idm", "inputs": {
                "model_image": {"name": "human_img"}, "garment_image": {"name": "garm_img"},
                "category": {"name": "category", "map": {"tops": "upper_body"}}}}}),
        )
        .unwrap();
        let (t, endpoints) = r.route(ToolId::VirtualTryon).unwrap();
        assert_eq!(endpoints.len(), 1);
        assert_eq!(endpoints[0].0, "idm");
        assert_eq!(t.inputs["category"].map["tops"], "upper_body");
        assert!(r.route(ToolId::Upscale).is_none());
    }

    #[test]
    fn every_mistake_names_its_key() {
        let cog = serde_json::json!({"idm": {"kind": "cog", "url": "http://gpu:5000"}});
        for (engines, tools, expected) in [
            (
                cog.clone(),
                serde_json::json!({"virtual_tryon": {"engine": "nope"}}),
                "tools.virtual_tryon.engine: no [engines.nope]",
            ),
            (
                cog.clone(),
                serde_json::json!({"no_such_tool": {"engine": "idm"}}),
                "tools.no_such_tool: unknown tool",
            ),
            (
                cog.clone(),
                serde_json::json!({"upscale": {"engine": "idm", "inputs": {"image": {"name": "img"}, "colour": {"name": "c"}}}}),
                "tools.upscale.inputs.colour: upscale has no such parameter",
            ),
            (
                cog.clone(),
                serde_json::json!({"upscale": {"engine": "idm", "inputs": {"image": {"node": "1"}}}}),
                "a Cog mapping names the model's input",
            ),
            (
                cog.clone(),
                serde_json::json!({"upscale": {"engine": "idm"}}),
                "every required image parameter of upscale must be mapped",
            ),
            (
                serde_json::json!({"idm": {"kind": "cog", "url": "ftp://x"}}),
                serde_json::json!({}),
                "engines.idm.url must start with http",
            ),
            (
                serde_json::json!({"idm": {"kind": "cog", "url": "not a url"}}),
                serde_json::json!({}),
                "engines.idm.url:",
            ),
            (
                serde_json::json!({"idm": {"kind": "cog", "url": "http://x", "max_concurrency": 0}}),
                serde_json::json!({}),
                "engines.idm.max_concurrency",
            ),
            (
                serde_json::json!({"builtin": {"kind": "cog", "url": "http://x"}}),
                serde_json::json!({}),
                "engines.builtin",
            ),
            (serde_json::json!({"m": {"kind": "onnx"}}), serde_json::json!({}), "engines.m.model"),
            (
                serde_json::json!({"m": {"kind": "onnx", "model": "m.onnx", "input_size": [8, 8], "discover": "dns"}}),
                serde_json::json!({}),
                "engines.m.discover",
            ),
            (
                serde_json::json!({"idm": {"kind": "cog", "url": "http://x", "discover": "dns", "discover_interval_secs": 0}}),
                serde_json::json!({}),
                "discover_interval_secs must be at least 1",
            ),
            (
                serde_json::json!({"m": {"kind": "onnx", "model": "m.onnx"}}),
                serde_json::json!({}),
                "engines.m.input_size",
            ),
            (
                serde_json::json!({"m": {"kind": "onnx", "model": "m.onnx", "input_size": [8, 8], "std": [1, 0, 1]}}),
                serde_json::json!({}),
                "engines.m.std",
            ),
            (
                serde_json::json!({"c": {"kind": "comfyui", "url": "http://x"}}),
                serde_json::json!({"upscale": {"engine": "c", "outputs": {"nodes": ["9"]}}}),
                "tools.upscale.template",
            ),
            (
                serde_json::json!({"c": {"kind": "comfyui", "url": "http://x"}}),
                serde_json::json!({"upscale": {"engine": "c", "template": "t.json"}}),
                "tools.upscale.outputs.nodes",
            ),
            (
                serde_json::json!({"c": {"kind": "comfyui", "url": "http://x"}}),
                serde_json::json!({"upscale": {"engine": "c", "template": "t.json", "outputs": {"nodes": ["9"]}, "inputs": {"image": {"name": "x"}}}}),
                "a ComfyUI mapping names node and input",
            ),
            (
                serde_json::json!({"c": {"kind": "comfyui", "url": "http://x"}}),
                serde_json::json!({"upscale": {"engine": "c", "template": "t.json", "outputs": {"nodes": ["9"]}, "set": {"steps": 3}}}),
                "tools.upscale.set.steps",
            ),
            (
                serde_json::json!({"c": {"kind": "comfyui", "url": "http://x"}, "d": {"kind": "cog", "url": "http://y"}}),
                serde_json::json!({"upscale": {"engine": ["c", "d"]}}),
                "all be of one kind",
            ),
            (
                serde_json::json!({"m": {"kind": "onnx", "model": "m.onnx", "input_size": [8, 8]}}),
                serde_json::json!({"virtual_model": {"engine": "m"}}),
                "has no image input",
            ),
        ] {
            let e = err(engines, tools);
            assert!(e.contains(expected), "{e:?} does not say {expected:?}");
        }
    }
}
