//! A tiny anti-aliased shape rasteriser (signed distance fields) for the stylised renders.

use image::{Rgb, RgbImage};

use crate::filter::to_u8;
use crate::palette::Colour;

/// Shapes in pixel coordinates.
#[derive(Debug, Clone)]
pub(crate) enum Shape {
    Ellipse { c: [f32; 2], r: [f32; 2] },
    Capsule { a: [f32; 2], b: [f32; 2], r: f32 },
    Polygon(Vec<[f32; 2]>),
}

impl Shape {
    /// Signed distance in pixels (negative inside). Ellipses use a first-order approximation.
    fn sdf(&self, p: [f32; 2]) -> f32 {
        match self {
            Shape::Ellipse { c, r } => {
                let dx = (p[0] - c[0]) / r[0].max(1e-3);
                let dy = (p[1] - c[1]) / r[1].max(1e-3);
                let k = (dx * dx + dy * dy).sqrt();
                if k < 0.5 {
                    return (k - 1.0) * r[0].min(r[1]);
                }
                // Gradient-normalised implicit distance.
                let gx = dx / r[0].max(1e-3);
                let gy = dy / r[1].max(1e-3);
                let g = (gx * gx + gy * gy).sqrt().max(1e-6);
                (k - 1.0) * k / g
            }
            Shape::Capsule { a, b, r } => seg_dist(p, *a, *b) - r,
            Shape::Polygon(pts) => {
                let n = pts.len();
                if n < 3 {
                    return f32::INFINITY;
                }
                let mut d = f32::INFINITY;
                let mut inside = false;
                for i in 0..n {
                    let a = pts[i];
                    let b = pts[(i + 1) % n];
                    d = d.min(seg_dist(p, a, b));
                    if (a[1] > p[1]) != (b[1] > p[1]) {
                        let x = a[0] + (p[1] - a[1]) / (b[1] - a[1]) * (b[0] - a[0]);
                        if p[0] < x {
                            inside = !inside;
                        }
                    }
                }
                if inside {
                    -d
                } else {
                    d
                }
            }
        }
    }

    fn bounds(&self) -> [f32; 4] {
        match self {
            Shape::Ellipse { c, r } => [c[0] - r[0], c[1] - r[1], c[0] + r[0], c[1] + r[1]],
            Shape::Capsule { a, b, r } => {
                [a[0].min(b[0]) - r, a[1].min(b[1]) - r, a[0].max(b[0]) + r, a[1].max(b[1]) + r]
            }
            Shape::Polygon(pts) => pts
                .iter()
                .fold([f32::INFINITY, f32::INFINITY, f32::NEG_INFINITY, f32::NEG_INFINITY], |b, p| {
                    [b[0].min(p[0]), b[1].min(p[1]), b[2].max(p[0]), b[3].max(p[1])]
                }),
        }
    }
}

fn seg_dist(p: [f32; 2], a: [f32; 2], b: [f32; 2]) -> f32 {
    let (pax, pay) = (p[0] - a[0], p[1] - a[1]);
    let (bax, bay) = (b[0] - a[0], b[1] - a[1]);
    let len2 = bax * bax + bay * bay;
    let t = if len2 > 0.0 { ((pax * bax + pay * bay) / len2).clamp(0.0, 1.0) } else { 0.0 };
    let (dx, dy) = (pax - bax * t, pay - bay * t);
    (dx * dx + dy * dy).sqrt()
}

/// Floating-point RGB canvas.
pub(crate) struct Canvas {
    pub(crate) w: u32,
    pub(crate) h: u32,
    pub(crate) px: Vec<Colour>,
}

impl Canvas {
    pub(crate) fn new(w: u32, h: u32, mut f: impl FnMut(u32, u32) -> Colour) -> Canvas {
        let mut px = Vec::with_capacity((w * h) as usize);
        for y in 0..h {
            for x in 0..w {
                px.push(f(x, y));
            }
        }
        Canvas { w, h, px }
    }

    /// Fills a shape; `shade(x, y)` multiplies the colour (for simple lighting).
    pub(crate) fn fill(&mut self, shape: &Shape, colour: Colour, shade: impl Fn(f32, f32) -> f32) {
        self.fill_with(shape, |x, y| {
            let k = shade(x, y);
            [colour[0] * k, colour[1] * k, colour[2] * k]
        });
    }

    /// Fills a shape with a per-pixel colour `paint(x, y)` (for patterns), anti-aliased.
    pub(crate) fn fill_with(&mut self, shape: &Shape, paint: impl Fn(f32, f32) -> Colour) {
        let b = shape.bounds();
        let x0 = (b[0] - 1.0).floor().max(0.0) as u32;
        let y0 = (b[1] - 1.0).floor().max(0.0) as u32;
        let x1 = ((b[2] + 2.0).ceil().max(0.0) as u32).min(self.w);
        let y1 = ((b[3] + 2.0).ceil().max(0.0) as u32).min(self.h);
        for y in y0..y1 {
            for x in x0..x1 {
                let p = [x as f32 + 0.5, y as f32 + 0.5];
                let cov = (0.5 - shape.sdf(p)).clamp(0.0, 1.0);
                if cov <= 0.0 {
                    continue;
                }
                let colour = paint(p[0], p[1]);
                let dst = &mut self.px[(y * self.w + x) as usize];
                for c in 0..3 {
                    dst[c] += (colour[c] - dst[c]) * cov;
                }
            }
        }
    }

    pub(crate) fn into_image(self) -> RgbImage {
        let mut img = RgbImage::new(self.w, self.h);
        for (o, c) in img.pixels_mut().zip(self.px) {
            *o = Rgb([to_u8(c[0]), to_u8(c[1]), to_u8(c[2])]);
        }
        img
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_cover_their_inside() {
        let mut c = Canvas::new(20, 20, |_, _| [0.0; 3]);
        c.fill(&Shape::Ellipse { c: [10.0, 10.0], r: [5.0, 3.0] }, [255.0; 3], |_, _| 1.0);
        c.fill(&Shape::Polygon(vec![[0.0, 0.0], [4.0, 0.0], [4.0, 4.0], [0.0, 4.0]]), [100.0; 3], |_, _| 1.0);
        let img = c.into_image();
        assert_eq!(img.get_pixel(10, 10).0, [255; 3]);
        assert_eq!(img.get_pixel(10, 16).0, [0; 3]);
        assert_eq!(img.get_pixel(2, 2).0, [100; 3]);
        assert_eq!(img.get_pixel(6, 2).0, [0; 3]);
    }

    #[test]
    fn fill_with_paints_per_pixel() {
        let mut c = Canvas::new(20, 10, |_, _| [0.0; 3]);
        let rect = Shape::Polygon(vec![[0.0, 0.0], [20.0, 0.0], [20.0, 10.0], [0.0, 10.0]]);
        c.fill_with(&rect, |x, _| if x < 10.0 { [200.0; 3] } else { [50.0; 3] });
        let img = c.into_image();
        assert_eq!(img.get_pixel(3, 5).0, [200; 3]);
        assert_eq!(img.get_pixel(15, 5).0, [50; 3]);
    }
}
