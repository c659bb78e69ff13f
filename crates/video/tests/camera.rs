//! Properties of the camera-move frames.

use atelier_video::{frames, Motion, VideoSpec};
use image::{Rgb, RgbImage};

const RED: Rgb<u8> = Rgb([230, 20, 20]);
const BLUE: Rgb<u8> = Rgb([20, 20, 230]);

fn spec(motion: Motion, duration_s: f32, fps: u32) -> VideoSpec {
    VideoSpec { duration_s, fps, motion, seed: 0, max_side: 512 }
}

/// 128×96: grey gradient, a 16×16 red square in the centre, an 8-pixel blue
/// frame along the border.
fn target_image() -> RgbImage {
    let (w, h) = (128u32, 96u32);
    RgbImage::from_fn(w, h, |x, y| {
        if x < 8 || y < 8 || x >= w - 8 || y >= h - 8 {
            BLUE
        } else if (56..72).contains(&x) && (40..56).contains(&y) {
            RED
        } else {
            let v = (60 + x / 2 + y / 2) as u8;
            Rgb([v, v, v])
        }
    })
}

/// Smooth, non-periodic horizontal texture (constant down each column).
fn texture_image(w: u32, h: u32) -> RgbImage {
    RgbImage::from_fn(w, h, |x, _| {
        let xf = x as f32;
        let v = 128.0 + 60.0 * (xf * 0.23).sin() + 40.0 * (xf * 0.071 + 1.0).sin();
        let v = v.clamp(0.0, 255.0) as u8;
        Rgb([v, 255 - v, 128])
    })
}

fn is_close(p: &Rgb<u8>, q: Rgb<u8>) -> bool {
    p.0.iter().zip(q.0).all(|(a, b)| (i32::from(*a) - i32::from(b)).abs() <= 30)
}

fn count_close(img: &RgbImage, colour: Rgb<u8>) -> usize {
    img.pixels().filter(|p| is_close(p, colour)).count()
}

fn edge_pixels(img: &RgbImage) -> Vec<Rgb<u8>> {
    let (w, h) = img.dimensions();
    let mut v = Vec::new();
    for x in 0..w {
        v.push(*img.get_pixel(x, 0));
        v.push(*img.get_pixel(x, h - 1));
    }
    for y in 0..h {
        v.push(*img.get_pixel(0, y));
        v.push(*img.get_pixel(w - 1, y));
    }
    v
}

/// Best integer `d` such that `b[x] ≈ a[x - d]` (content moved by `d` pixels
/// to the right from `a` to `b`), by mean absolute difference of one channel.
fn column_shift(a: &RgbImage, b: &RgbImage, max_shift: i64) -> i64 {
    let y = a.height() / 2;
    let w = i64::from(a.width());
    let mut best = (f64::MAX, 0);
    for d in -max_shift..=max_shift {
        let (mut sum, mut n) = (0.0, 0);
        for x in 0..w {
            let xs = x - d;
            if (0..w).contains(&xs) {
                let pa = a.get_pixel(xs as u32, y).0[0];
                let pb = b.get_pixel(x as u32, y).0[0];
                sum += (f64::from(pa) - f64::from(pb)).abs();
                n += 1;
            }
        }
        let mad = sum / f64::from(n);
        if mad < best.0 {
            best = (mad, d);
        }
    }
    best.1
}

#[test]
fn frame_count_is_rounded_duration_times_fps() {
    let img = target_image();
    for (duration, fps, expected) in [(2.0, 12, 24), (2.5, 7, 18), (3.3, 10, 33), (10.0, 1, 10)] {
        let f = frames(&img, &spec(Motion::ZoomIn, duration, fps));
        assert_eq!(f.len(), expected, "duration {duration} fps {fps}");
        assert_eq!(expected, (duration * fps as f32).round() as usize, "test table is consistent");
    }
}

#[test]
fn dimensions_are_multiples_of_16_within_max_side() {
    for (w, h, max_side) in [(128, 96, 512), (100, 70, 512), (300, 120, 64), (120, 300, 100), (77, 77, 48)] {
        let img = RgbImage::from_pixel(w, h, Rgb([1, 2, 3]));
        let s = VideoSpec { max_side, ..spec(Motion::PanRight, 2.0, 2) };
        let f = frames(&img, &s);
        assert_eq!(f.len(), 4);
        let (ow, oh) = f[0].dimensions();
        assert_eq!((ow, oh), atelier_video::output_size(w, h, max_side), "{w}x{h}");
        assert!(ow % 16 == 0 && oh % 16 == 0, "{ow}x{oh} from {w}x{h}");
        assert!(ow <= max_side && oh <= max_side, "{ow}x{oh} > {max_side}");
        assert!(f.iter().all(|fr| fr.dimensions() == (ow, oh)));
        // Each side is the fitted size rounded to the nearest multiple of 16.
        let scale = (f64::from(max_side) / f64::from(w.max(h))).min(1.0);
        for (out, inp) in [(ow, w), (oh, h)] {
            let fitted = f64::from(inp) * scale;
            assert!((f64::from(out) - fitted).abs() <= 8.0, "{out} vs {fitted}");
        }
    }
}

#[test]
fn zoom_in_magnifies_the_centre() {
    let img = target_image();
    let f = frames(&img, &spec(Motion::ZoomIn, 2.0, 6));
    let (first, last) = (&f[0], &f[f.len() - 1]);
    assert_eq!(first.dimensions(), (128, 96));
    let centre = |im: &RgbImage| *im.get_pixel(im.width() / 2, im.height() / 2);
    assert!(is_close(&centre(first), RED));
    assert!(is_close(&centre(last), RED));

    // The first frame shows the whole picture, blue border included; the
    // last one has zoomed past it.
    let blue_edges = |im: &RgbImage| {
        edge_pixels(im).iter().filter(|p| is_close(p, BLUE)).count() as f64 / edge_pixels(im).len() as f64
    };
    assert!(blue_edges(first) > 0.95, "first frame edges not blue");
    assert!(blue_edges(last) < 0.05, "last frame still shows the border");

    // The red square grows by the zoom factor (1.3) along each axis.
    let ratio = count_close(last, RED) as f64 / count_close(first, RED) as f64;
    assert!((1.4..2.0).contains(&ratio), "area ratio {ratio}");

    // Zoom-out is the reverse move.
    let g = frames(&img, &spec(Motion::ZoomOut, 2.0, 6));
    assert_eq!(g[0], f[f.len() - 1]);
    assert_eq!(g[g.len() - 1], f[0]);
}

#[test]
fn pans_move_content_the_right_way() {
    let img = texture_image(128, 64);
    let left = frames(&img, &spec(Motion::PanLeft, 2.0, 6));
    let right = frames(&img, &spec(Motion::PanRight, 2.0, 6));
    // The viewport is 1/1.2 of the width and travels the remaining 1/6 of the
    // 128-px image: 21.3 source px = 25.6 output px.
    let d_left = column_shift(&left[0], &left[left.len() - 1], 40);
    let d_right = column_shift(&right[0], &right[right.len() - 1], 40);
    assert!((22..=29).contains(&d_left), "pan left shifted by {d_left}");
    assert!((-29..=-22).contains(&d_right), "pan right shifted by {d_right}");

    // Monotonic: each step moves the same way (or not at all at the ends,
    // where the move eases in and out).
    for w in left.windows(2) {
        assert!(column_shift(&w[0], &w[1], 40) >= 0);
    }
    for w in right.windows(2) {
        assert!(column_shift(&w[0], &w[1], 40) <= 0);
    }
}

#[test]
fn frames_are_deterministic_and_auto_follows_the_seed() {
    let img = target_image();
    for seed in [0u64, 1, 2, 3, 42, u64::MAX] {
        let s = VideoSpec { seed, ..spec(Motion::Auto, 2.0, 4) };
        let a = frames(&img, &s);
        let b = frames(&img, &s);
        assert_eq!(a, b);
        let concrete = VideoSpec { motion: Motion::Auto.resolve(seed), ..s.clone() };
        assert_eq!(a, frames(&img, &concrete), "seed {seed}");
    }
}

#[test]
fn large_sources_are_downscaled_smoothly() {
    // A 1-px black/white checkerboard averages to mid-grey when shrunk 4x;
    // plain point sampling would give black or white.
    let img =
        RgbImage::from_fn(
            512,
            384,
            |x, y| {
                if (x + y) % 2 == 0 {
                    Rgb([255, 255, 255])
                } else {
                    Rgb([0, 0, 0])
                }
            },
        );
    let s = VideoSpec { max_side: 128, ..spec(Motion::ZoomOut, 2.0, 2) };
    let f = frames(&img, &s);
    assert_eq!(f[0].dimensions(), (128, 96));
    let last = &f[f.len() - 1];
    let mean = last.pixels().map(|p| f64::from(p.0[0])).sum::<f64>() / (128.0 * 96.0);
    assert!((100.0..156.0).contains(&mean), "mean {mean}");
}
