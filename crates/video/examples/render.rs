//! Renders a clip and reports size and timing.
//!
//! ```text
//! cargo run --release -p atelier-video --example render -- [IN_IMAGE|-] [OUT.mp4] [MOTION] [SECONDS] [FPS] [MAX_SIDE]
//! ```
//! Without an input image (or with `-`) a synthetic 768×1024 test picture is used.

use std::time::Instant;

use atelier_video::{Motion, VideoSpec};

fn synthetic(w: u32, h: u32) -> image::RgbImage {
    image::RgbImage::from_fn(w, h, |x, y| {
        let checker = ((x / 32 + y / 32) % 2) as u8 * 60;
        let (cx, cy) = (x as i64 - w as i64 / 2, y as i64 - h as i64 / 2);
        let ring = if (cx * cx + cy * cy) % 4000 < 2000 { 80 } else { 0 };
        image::Rgb([
            (x * 255 / w) as u8 / 2 + checker,
            (y * 255 / h) as u8 / 2 + ring,
            ((x ^ y) & 0xff) as u8 / 3 + 40,
        ])
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let img = match args.first().map(String::as_str) {
        None | Some("-") => synthetic(768, 1024),
        Some(path) => image::open(path)?.to_rgb8(),
    };
    let out = args.get(1).cloned().unwrap_or_else(|| "out.mp4".into());
    let mut spec = VideoSpec::default();
    if let Some(m) = args.get(2) {
        spec.motion = m.parse::<Motion>()?;
    }
    if let Some(d) = args.get(3) {
        spec.duration_s = d.parse()?;
    }
    if let Some(f) = args.get(4) {
        spec.fps = f.parse()?;
    }
    if let Some(s) = args.get(5) {
        spec.max_side = s.parse()?;
    }

    let t0 = Instant::now();
    let frames = atelier_video::frames(&img, &spec);
    let t1 = Instant::now();
    let mp4 = atelier_video::encode_mp4(&frames, spec.fps)?;
    let t2 = Instant::now();
    std::fs::write(&out, &mp4)?;
    println!(
        "{}x{} -> {} frames {}x{} motion={} : {} bytes; frames {:.3}s, encode+mux {:.3}s, total {:.3}s -> {out}",
        img.width(),
        img.height(),
        frames.len(),
        frames.first().map_or(0, |f| f.width()),
        frames.first().map_or(0, |f| f.height()),
        spec.motion.resolve(spec.seed),
        mp4.len(),
        (t1 - t0).as_secs_f64(),
        (t2 - t1).as_secs_f64(),
        (t2 - t0).as_secs_f64(),
    );
    Ok(())
}
