//! The cut-out with the learned subject model (U²-Net-p, `atelier-saliency`) fused in, on
//! real photographs with hand-marked regions (`tests/photos/`) and on generated studio scenes.
//!
//! Every test prints its figures (`--nocapture`) and asserts the bounds stated beside them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::OnceLock;

use atelier_imaging::image::{DynamicImage, GrayImage, Luma};
use atelier_imaging::{
    fabric_with, remove_background, remove_background_with, subject_mask_with, FabricSource, GarmentRegion,
    SubjectModel,
};
use atelier_saliency::U2Net;
use common::photos::{photos, rasterise, score, Score};

fn model() -> &'static U2Net {
    static MODEL: OnceLock<U2Net> = OnceLock::new();
    MODEL.get_or_init(common::subject_model)
}

fn alpha_of(img: &DynamicImage, subject: Option<&dyn SubjectModel>) -> GrayImage {
    let cut = remove_background_with(img, subject).unwrap();
    GrayImage::from_fn(cut.width(), cut.height(), |x, y| Luma([cut.get_pixel(x, y)[3]]))
}

/// Per photo: the least fraction of subject-marked pixels kept and of background-marked pixels
/// removed. The table the test prints gives the backdrop model alone beside it.
#[test]
fn real_photographs_keep_the_whole_subject() {
    let mut rows = Vec::new();
    for photo in photos() {
        let alpha = alpha_of(&photo.image, Some(model()));
        // ATELIER_SCENES_OUT=DIR keeps each photo's alpha for inspection.
        if let Ok(dir) = std::env::var("ATELIER_SCENES_OUT") {
            alpha.save(format!("{dir}/{}-alpha.png", photo.name)).unwrap();
        }
        let learned = score(&alpha, &photo);
        let backdrop = score(&alpha_of(&photo.image, None), &photo);
        rows.push((photo.name.clone(), learned, backdrop));
    }
    println!("photo          learned: subject kept, background removed | backdrop model alone");
    for (name, l, b) in &rows {
        println!(
            "{name:<14} {:>6.3} {:>6.3} | {:>6.3} {:>6.3}",
            l.subject_kept, l.background_removed, b.subject_kept, b.background_removed
        );
    }
    let mean = |f: fn(&Score) -> f64| rows.iter().map(|(_, l, _)| f(l)).sum::<f64>() / rows.len() as f64;
    println!("mean           {:>6.3} {:>6.3}", mean(|s| s.subject_kept), mean(|s| s.background_removed));
    for (name, l, _) in &rows {
        assert!(l.subject_kept >= 0.90, "{name}: subject kept {:.3}", l.subject_kept);
        assert!(l.background_removed >= 0.90, "{name}: background removed {:.3}", l.background_removed);
    }
}

/// The subject mask other tools use (`reframe`, `fabric`) agrees with the cut-out.
#[test]
fn the_subject_mask_follows_the_learned_model() {
    for photo in photos().into_iter().take(2) {
        let mask = subject_mask_with(&photo.image, Some(model())).unwrap();
        let s = score(&mask, &photo);
        assert!(s.subject_kept >= 0.9 && s.background_removed >= 0.9, "{}: {s:?}", photo.name);
    }
}

/// A model that fails turns into the cut-out's error, not a panic or a silent fallback.
#[test]
fn a_failing_model_is_an_error() {
    struct Broken;
    impl SubjectModel for Broken {
        fn subject_probability(&self, _: &atelier_imaging::image::RgbImage) -> Result<GrayImage, String> {
            Err("out of memory".into())
        }
        fn name(&self) -> &str {
            "broken"
        }
    }
    let img = photos().remove(0).image;
    let err = remove_background_with(&img, Some(&Broken)).unwrap_err();
    assert_eq!(err.to_string(), "the subject model failed: out of memory");
    // An input that is already cut out does not need the model.
    let cut = DynamicImage::ImageRgba8(remove_background(&img));
    assert!(remove_background_with(&cut, Some(&Broken)).is_ok());
}

/// `fabric` on a real portrait re-textures the person the model finds, not the flag behind
/// them: with the backdrop model alone its "person" was a patch of the flag and uniform.
#[test]
fn fabric_stays_on_the_person_the_model_finds() {
    let photo = photos().into_iter().find(|p| p.name == "grace_hopper").unwrap();
    let (w, h) = (photo.image.width(), photo.image.height());
    let (subject, background) = (rasterise(&photo.subject, w, h), rasterise(&photo.background, w, h));
    let before = photo.image.to_rgb8();
    let changed_in = |subject_model: Option<&dyn SubjectModel>| {
        let source = FabricSource::Description("red and white stripes");
        let after = fabric_with(&photo.image, source, GarmentRegion::Top, 7, subject_model).unwrap();
        let changed: Vec<bool> = before
            .pixels()
            .zip(after.pixels())
            .map(|(a, b)| (0..3).any(|c| a[c].abs_diff(b[c]) > 24))
            .collect();
        let share = |marks: &[bool]| {
            let total = marks.iter().filter(|&&m| m).count() as f64;
            marks.iter().zip(&changed).filter(|(&m, &c)| m && c).count() as f64 / total
        };
        (share(&subject), share(&background))
    };
    let (person, flag) = changed_in(Some(model()));
    let (person_alone, flag_alone) = changed_in(None);
    println!("changed: learned {person:.3} of the person, {flag:.4} of the background; backdrop model alone {person_alone:.3}, {flag_alone:.4}");
    assert!(person > 0.15, "the garment band of the person is re-textured: {person:.3}");
    assert!(flag < 0.01, "the background is left alone: {flag:.4}");
}
