//! The built-in subject model: provenance, loading errors, and what its map says.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use atelier_imaging::image::{Rgb, RgbImage};
use atelier_imaging::SubjectModel;
use atelier_saliency::{LoadError, U2Net, INPUT_SIDE, U2NETP_ONNX, U2NETP_SHA256};
use sha2::{Digest, Sha256};

#[test]
fn the_built_in_weights_are_the_documented_file() {
    assert_eq!(U2NETP_ONNX.len(), 4_574_861);
    assert_eq!(hex::encode(Sha256::digest(U2NETP_ONNX)), U2NETP_SHA256);
}

#[test]
fn a_missing_model_file_is_a_clear_error() {
    let err = U2Net::from_file(std::path::Path::new("/nonexistent/u2net.onnx")).unwrap_err();
    assert!(matches!(err, LoadError::Read { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("/nonexistent/u2net.onnx"), "{message}");
}

#[test]
fn a_file_that_is_not_a_model_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("garbage.onnx");
    std::fs::write(&path, b"this is not an ONNX file").unwrap();
    let err = U2Net::from_file(&path).unwrap_err();
    assert!(matches!(err, LoadError::Invalid { .. }), "{err:?}");
    assert!(err.to_string().contains("garbage.onnx"), "{err}");
}

#[test]
fn a_model_file_loads_like_the_built_in_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("u2netp.onnx");
    std::fs::write(&path, U2NETP_ONNX).unwrap();
    let model = U2Net::from_file(&path).unwrap();
    assert_eq!(model.name(), "u2netp");
    assert_eq!(U2Net::embedded().unwrap().name(), "u2netp");
}

/// A dark disc on a light, slightly graded wall: the map is high on the disc and low on the
/// wall, at the network's resolution whatever the input size, and the same on every call.
#[test]
fn the_map_marks_a_plain_object_and_is_deterministic() {
    let (w, h) = (500u32, 380u32);
    let img = RgbImage::from_fn(w, h, |x, y| {
        let (dx, dy) = (x as f32 - 250.0, y as f32 - 190.0);
        if dx * dx + dy * dy < 100.0 * 100.0 {
            Rgb([150, 30, 40])
        } else {
            let v = 235 - (y / 20) as u8;
            Rgb([v, v, v - 5])
        }
    });
    let model = U2Net::embedded().unwrap();
    let map = model.predict(&img).unwrap();
    assert_eq!(map.dimensions(), (INPUT_SIDE, INPUT_SIDE));
    let at =
        |u: f32, v: f32| map.get_pixel((u * INPUT_SIDE as f32) as u32, (v * INPUT_SIDE as f32) as u32)[0];
    assert!(at(0.5, 0.5) > 200, "centre {}", at(0.5, 0.5));
    for (u, v) in [(0.05, 0.05), (0.95, 0.05), (0.05, 0.95), (0.95, 0.95)] {
        assert!(at(u, v) < 30, "corner ({u}, {v}): {}", at(u, v));
    }
    assert_eq!(model.predict(&img).unwrap(), map);
}
