//! Real photographs with hand-marked subject and background regions (`tests/photos/`), and a
//! scorer for cut-out masks against those marks.
//!
//! Marks are polygons in pixel coordinates (origin at the image's top-left corner, so pixel
//! `(x, y)` has its centre at `(x + 0.5, y + 0.5)`). A pixel is marked by a polygon when its
//! centre is inside it by the even-odd rule; a mark is the union of its polygons. Marks cover
//! only what is surely subject or surely background: a band along the true outline is left
//! unmarked, so edge quality does not enter the score (see `tests/photos/README.md`).

use std::path::{Path, PathBuf};

use atelier_imaging::image::{self, DynamicImage, GrayImage, Luma};

/// One photograph and its marks.
pub struct Photo {
    /// File stem, e.g. `"astronaut"` for `astronaut.jpg`.
    pub name: String,
    pub image: DynamicImage,
    /// Polygons covering what is surely subject.
    pub subject: Vec<Vec<[f32; 2]>>,
    /// Polygons covering what is surely background.
    pub background: Vec<Vec<[f32; 2]>>,
}

/// How well a mask agrees with a photo's marks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Score {
    /// Fraction of subject-marked pixels with alpha >= 128.
    pub subject_kept: f64,
    /// Fraction of background-marked pixels with alpha < 128.
    pub background_removed: f64,
}

/// The folder holding the photographs and `marks.json`.
pub fn photos_dir() -> PathBuf {
    // Beside this file, whichever crate's tests include it (`file!()` is relative to the
    // workspace root, two levels above every crate).
    let here = Path::new(file!()).parent().and_then(Path::parent).expect("tests/common/photos.rs");
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(here).join("photos")
}

/// Every photo named in `marks.json`, in its order, with its image decoded.
///
/// Panics when a file is missing or malformed: the data are part of the test suite.
pub fn photos() -> Vec<Photo> {
    let dir = photos_dir();
    let text = std::fs::read_to_string(dir.join("marks.json")).expect("read tests/photos/marks.json");
    let marks: serde_json::Value = serde_json::from_str(&text).expect("parse tests/photos/marks.json");
    let marks = marks.as_object().expect("marks.json: an object keyed by photo name");
    marks
        .iter()
        .map(|(name, m)| {
            let path = dir.join(format!("{name}.jpg"));
            let image = image::open(&path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
            Photo {
                name: name.clone(),
                image,
                subject: polygons(name, m, "subject"),
                background: polygons(name, m, "background"),
            }
        })
        .collect()
}

fn polygons(name: &str, marks: &serde_json::Value, key: &str) -> Vec<Vec<[f32; 2]>> {
    let bad = |what: &str| -> ! { panic!("marks.json: {name}.{key}: {what}") };
    let Some(list) = marks.get(key).and_then(|v| v.as_array()) else { bad("missing or not a list") };
    list.iter()
        .map(|poly| {
            let Some(points) = poly.as_array() else { bad("a polygon is not a list of points") };
            points
                .iter()
                .map(|p| match p.as_array().map(Vec::as_slice) {
                    Some([x, y]) => match (x.as_f64(), y.as_f64()) {
                        (Some(x), Some(y)) => [x as f32, y as f32],
                        _ => bad("a coordinate is not a number"),
                    },
                    _ => bad("a point is not [x, y]"),
                })
                .collect()
        })
        .collect()
}

/// Rasterises `polygons` at pixel centres: `true` where the centre is inside at least one
/// polygon by the even-odd rule. Row-major, `width * height` entries.
pub fn rasterise(polygons: &[Vec<[f32; 2]>], width: u32, height: u32) -> Vec<bool> {
    let (w, h) = (width as usize, height as usize);
    let mut mask = vec![false; w * h];
    let mut crossings = Vec::new();
    for (y, row) in mask.chunks_exact_mut(w.max(1)).enumerate().take(h) {
        let cy = y as f64 + 0.5;
        for poly in polygons {
            crossings.clear();
            for (i, a) in poly.iter().enumerate() {
                let b = poly[(i + 1) % poly.len()];
                let (x1, y1, x2, y2) = (f64::from(a[0]), f64::from(a[1]), f64::from(b[0]), f64::from(b[1]));
                if (y1 > cy) != (y2 > cy) {
                    crossings.push(x1 + (cy - y1) * (x2 - x1) / (y2 - y1));
                }
            }
            crossings.sort_by(f64::total_cmp);
            // A centre `cx` is inside when an odd number of crossings lie strictly right of it:
            // with the crossings sorted, that is `c[2k] <= cx < c[2k + 1]`.
            for span in crossings.chunks_exact(2) {
                let first = (span[0] - 0.5).ceil().max(0.0) as usize;
                let end = ((span[1] - 0.5).ceil().max(0.0) as usize).min(w);
                for cell in row.iter_mut().take(end).skip(first) {
                    *cell = true;
                }
            }
        }
    }
    mask
}

/// A mask image (255 inside, 0 outside) of `polygons`, the size of `photo`'s image.
pub fn mask_image(polygons: &[Vec<[f32; 2]>], photo: &Photo) -> GrayImage {
    let (w, h) = (photo.image.width(), photo.image.height());
    let inside = rasterise(polygons, w, h);
    GrayImage::from_fn(w, h, |x, y| Luma([if inside[(y * w + x) as usize] { 255 } else { 0 }]))
}

/// Scores `alpha` (255 = subject) against `photo`'s marks.
///
/// Panics when `alpha` is not the size of the photo or a mark covers no pixel.
pub fn score(alpha: &GrayImage, photo: &Photo) -> Score {
    let (w, h) = (photo.image.width(), photo.image.height());
    assert_eq!(alpha.dimensions(), (w, h), "{}: alpha is not the size of the photo", photo.name);
    let fraction = |polygons: &[Vec<[f32; 2]>], keep: bool| {
        let marked = rasterise(polygons, w, h);
        let (mut hits, mut total) = (0u64, 0u64);
        for (&m, a) in marked.iter().zip(alpha.pixels()) {
            if m {
                total += 1;
                hits += u64::from((a[0] >= 128) == keep);
            }
        }
        assert!(total > 0, "{}: a mark covers no pixel", photo.name);
        hits as f64 / total as f64
    };
    Score {
        subject_kept: fraction(&photo.subject, true),
        background_removed: fraction(&photo.background, false),
    }
}
