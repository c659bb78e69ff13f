//! Writes the subject model's map of an image, resized to the image, as a greyscale PNG:
//! `cargo run -p atelier-saliency --example saliency_map -- IN.jpg OUT.png`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use atelier_imaging::image::{self, imageops::FilterType};
use atelier_saliency::U2Net;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, input, output] = &args[..] else {
        eprintln!("usage: saliency_map IN OUT.png");
        std::process::exit(2);
    };
    let t = std::time::Instant::now();
    let model = U2Net::embedded().expect("model");
    let load = t.elapsed();
    let img = image::open(input).expect("open").to_rgb8();
    let t = std::time::Instant::now();
    let map = model.predict(&img).expect("predict");
    let run = t.elapsed();
    image::imageops::resize(&map, img.width(), img.height(), FilterType::Triangle)
        .save(output)
        .expect("save");
    eprintln!("load {load:?}, predict {run:?}");
}
