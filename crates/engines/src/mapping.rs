//! From an execution's parameters to a model's inputs (the `[tools.TOOL.inputs]` table), and
//! from the files a model returns to artifacts. Shared by the adapters; each decides where a
//! value goes (a graph node's input, a Cog input) and how an image travels.

use atelier_core::params::ParamType;
use atelier_tools::{Artifact, Execution};
use bytes::Bytes;
use serde_json::Value;

use crate::settings::{InputMapping, ToolSettings};

/// One mapped input's value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Mapped {
    Value(Value),
    /// An image parameter: its bytes, and the parameter's name.
    Image {
        param: String,
        bytes: Bytes,
    },
}

/// Every mapped parameter that has a value, with its mapping: the value given (or resolved
/// from the tool's defaults at submission), else the mapping's own `default`; `seed` is the
/// execution's seed. Strings listed in the mapping's `map` are translated. Parameters with no
/// value (an optional image left out) are left out.
pub(crate) fn inputs<'a>(execution: &Execution, route: &'a ToolSettings) -> Vec<(&'a InputMapping, Mapped)> {
    let spec = execution.tool.spec();
    route
        .inputs
        .iter()
        .filter_map(|(param, mapping)| {
            let value = if param == "seed" && spec.param("seed").is_none() {
                Some(Value::from(execution.seed))
            } else if spec.param(param).is_some_and(|p| p.ty == ParamType::Image) {
                let bytes = execution.images.get(param)?.clone();
                return Some((mapping, Mapped::Image { param: param.clone(), bytes }));
            } else if param == "seed" {
                // A tool with a seed parameter: the node's seed is what it resolved to.
                Some(Value::from(execution.seed))
            } else {
                execution
                    .params
                    .get(param)
                    .filter(|v| !v.is_null())
                    .cloned()
                    .or_else(|| spec.param(param).and_then(|p| p.default.to_value()))
                    .or_else(|| mapping.default.clone())
            }?;
            Some((mapping, Mapped::Value(translate(mapping, value))))
        })
        .collect()
}

/// `map`'s translation of a string value; any other value as it is.
fn translate(mapping: &InputMapping, value: Value) -> Value {
    match value.as_str().and_then(|s| mapping.map.get(s)) {
        Some(mapped) => mapped.clone(),
        None => value,
    }
}

/// An artifact from a file's bytes: the extension from the bytes themselves, else from
/// the content type or file name the server gave.
pub(crate) fn artifact(bytes: Bytes, hint: &str) -> Artifact {
    let ext = sniff(&bytes).unwrap_or_else(|| from_hint(hint));
    Artifact { bytes, ext }
}

fn sniff(bytes: &[u8]) -> Option<&'static str> {
    Some(match bytes {
        [0x89, b'P', b'N', b'G', ..] => "png",
        [0xFF, 0xD8, 0xFF, ..] => "jpg",
        [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'E', b'B', b'P', ..] => "webp",
        [b'G', b'I', b'F', ..] => "gif",
        [_, _, _, _, b'f', b't', b'y', b'p', ..] => "mp4",
        _ => return None,
    })
}

fn from_hint(hint: &str) -> &'static str {
    let hint = hint.to_ascii_lowercase();
    for (needle, ext) in [
        ("png", "png"),
        ("jpeg", "jpg"),
        ("jpg", "jpg"),
        ("webp", "webp"),
        ("gif", "gif"),
        ("mp4", "mp4"),
        ("webm", "webm"),
    ] {
        if hint.ends_with(needle) || hint.contains(&format!("/{needle}")) {
            return ext;
        }
    }
    "bin"
}

/// The MIME type of an image's bytes, for data URIs and uploads.
pub(crate) fn mime(bytes: &[u8]) -> &'static str {
    match sniff(bytes) {
        Some("png") => "image/png",
        Some("jpg") => "image/jpeg",
        Some("webp") => "image/webp",
        Some("gif") => "image/gif",
        Some("mp4") => "video/mp4",
        _ => "application/octet-stream",
    }
}

/// Fraction done from a prediction's logs: the last `N/M` (tqdm) or `N%` in them.
pub(crate) fn progress_in_logs(logs: &str, format: crate::settings::ProgressFormat) -> Option<f32> {
    use crate::settings::ProgressFormat;
    match format {
        ProgressFormat::None => None,
        ProgressFormat::Tqdm => last_fraction(logs),
        ProgressFormat::Percent => last_percent(logs),
    }
}

/// The last `digits/digits` with a non-zero total, as a fraction.
fn last_fraction(logs: &str) -> Option<f32> {
    let bytes = logs.as_bytes();
    let mut found = None;
    for (i, &b) in bytes.iter().enumerate() {
        if b != b'/' {
            continue;
        }
        let start = bytes[..i].iter().rposition(|c| !c.is_ascii_digit()).map_or(0, |p| p + 1);
        let end = bytes[i + 1..].iter().position(|c| !c.is_ascii_digit()).map_or(bytes.len(), |p| i + 1 + p);
        let (done, total) = (&logs[start..i], &logs[i + 1..end]);
        if let (Ok(done), Ok(total)) = (done.parse::<u64>(), total.parse::<u64>()) {
            if total > 0 && done <= total {
                found = Some(done as f32 / total as f32);
            }
        }
    }
    found
}

fn last_percent(logs: &str) -> Option<f32> {
    let bytes = logs.as_bytes();
    let mut found = None;
    for (i, &b) in bytes.iter().enumerate() {
        if b != b'%' {
            continue;
        }
        let start = bytes[..i].iter().rposition(|c| !c.is_ascii_digit() && *c != b'.').map_or(0, |p| p + 1);
        if let Ok(p) = logs[start..i].parse::<f32>() {
            if (0.0..=100.0).contains(&p) {
                found = Some(p / 100.0);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use atelier_core::tools::ToolId;
    use serde_json::json;

    use super::*;
    use crate::settings::ProgressFormat;

    fn route(inputs: Value) -> ToolSettings {
        serde_json::from_value(json!({"engine": "x", "inputs": inputs})).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn parameters_are_mapped_translated_and_defaulted() {
        let execution = Execution {
            context: Default::default(),
            tool: ToolId::VirtualTryon,
            params: json!({"category": "dresses", "model_image": "x"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            images: HashMap::from([("model_image".to_string(), Bytes::from_static(b"\x89PNG...."))]),
            seed: 42,
            index: 0,
        };
        let route = route(json!({
            "model_image": {"name": "human_img"},
            "garment_image": {"name": "garm_img"},
            "category": {"name": "category", "map": {"dresses": "dresses_full", "tops": "upper_body"}},
            "seed": {"name": "seed"},
            "garment_description": {"name": "garment_des", "default": "a garment"},
        }));
        let got: HashMap<String, Mapped> = inputs(&execution, &route)
            .into_iter()
            .map(|(m, v)| (m.name.clone().unwrap_or_default(), v))
            .collect();
        assert_eq!(got["category"], Mapped::Value(json!("dresses_full")));
        assert_eq!(got["seed"], Mapped::Value(json!(42)));
        assert!(matches!(&got["human_img"], Mapped::Image { param, .. } if param == "model_image"));
        // An optional image left out is left out; a parameter without a value takes the
        // mapping's default.
        assert!(!got.contains_key("garm_img"));
        assert_eq!(got["garment_des"], Mapped::Value(json!("a garment")));
    }

    #[test]
    fn progress_is_read_from_the_last_report_in_the_logs() {
        let tqdm = " 16%|#         | 1/6\n 33%|###       | 2/6\n 50%|#####     | 3/6\n";
        assert_eq!(progress_in_logs(tqdm, ProgressFormat::Tqdm), Some(0.5));
        assert_eq!(progress_in_logs(tqdm, ProgressFormat::Percent), Some(0.5));
        assert_eq!(progress_in_logs(tqdm, ProgressFormat::None), None);
        assert_eq!(progress_in_logs("loading weights\n", ProgressFormat::Tqdm), None);
        // Dates and impossible fractions are not progress.
        assert_eq!(progress_in_logs("2026/11 step 7/0 and 9/4\n", ProgressFormat::Tqdm), None);
        assert_eq!(progress_in_logs("step 12/30", ProgressFormat::Tqdm), Some(0.4));
        assert_eq!(progress_in_logs("done 99.5%", ProgressFormat::Percent), Some(0.995));
    }

    #[test]
    fn artifacts_take_their_extension_from_the_bytes_first() {
        assert_eq!(artifact(Bytes::from_static(b"\x89PNG\r\n"), "x.jpg").ext, "png");
        assert_eq!(artifact(Bytes::from_static(b"\0\0\0\x18ftypisom"), "").ext, "mp4");
        assert_eq!(artifact(Bytes::from_static(b"????"), "image/webp").ext, "webp");
        assert_eq!(artifact(Bytes::from_static(b"????"), "out.JPEG").ext, "jpg");
        assert_eq!(artifact(Bytes::from_static(b"????"), "").ext, "bin");
        assert_eq!(mime(b"\xFF\xD8\xFF\xE0"), "image/jpeg");
    }
}
