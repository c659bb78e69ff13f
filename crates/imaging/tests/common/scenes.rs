//! Adversarial studio product photos with known ground truth, for cut-out quality tests.
//!
//! Every scene is a product shot on a studio backdrop (gradient, vignette, soft contact
//! shadows, sensor noise, optional lens blur and JPEG round trip), drawn with 4×4
//! supersampled coverage at the product outlines; the truth is coverage ≥ ½. Scenes are
//! grouped in [`FAMILIES`], each stressing one difficulty, with every parameter drawn from a
//! seeded PRNG: [`family_scene`]`(family, seed)` always returns the same image.
//!
//! Any cut-out path can be evaluated on the same scenes (`mask = alpha ≥ 128` against the
//! truth).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::needless_range_loop)]

use std::io::Cursor;

use atelier_imaging::image::codecs::jpeg::JpegEncoder;
use atelier_imaging::image::{GrayImage, ImageFormat, Luma, Rgb, RgbImage};

/// Scenes per family that the adversarial suite evaluates (seeds `0..SCENES_PER_FAMILY`).
pub const SCENES_PER_FAMILY: u64 = 50;

/// A group of scenes sharing one difficulty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// One band of the product (stripe, midsole, belt, label, ribbon, waistband) within
    /// 15–45 luminance levels of the backdrop, across the whole product: it splits it in two.
    SplitBand,
    /// Several separate objects: a pair of shoes, a set of earrings, a top and its hanger,
    /// a few products side by side.
    Sets,
    /// Openings that show the backdrop: bag handles, mug handles, hoops, a hanger's
    /// triangle, the gaps between arms and body and between legs.
    Openings,
    /// White products on white backdrops: the body is 5–16 levels from the backdrop; the
    /// outline is a faint seam and a contact shadow.
    WhiteOnWhite,
    /// Dark and saturated coloured backdrops.
    DarkColoured,
    /// Strong vignettes (corners 30–60 % darker) and steep vertical or diagonal gradients.
    Vignette,
    /// Products cut by one or two image edges.
    EdgeTouching,
    /// Any of the above saved as JPEG at quality 70–95.
    Jpeg,
}

/// Every family, in report order.
pub const FAMILIES: &[Family] = &[
    Family::SplitBand,
    Family::Sets,
    Family::Openings,
    Family::WhiteOnWhite,
    Family::DarkColoured,
    Family::Vignette,
    Family::EdgeTouching,
    Family::Jpeg,
];

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::SplitBand => "split-band",
            Family::Sets => "sets",
            Family::Openings => "openings",
            Family::WhiteOnWhite => "white-on-white",
            Family::DarkColoured => "dark-coloured",
            Family::Vignette => "vignette-gradient",
            Family::EdgeTouching => "edge-touching",
            Family::Jpeg => "jpeg",
        }
    }

    fn index(self) -> u64 {
        FAMILIES.iter().position(|&f| f == self).unwrap() as u64
    }
}

// ---------------------------------------------------------------------------------------------
// PRNG
// ---------------------------------------------------------------------------------------------

/// splitmix64 with a few conveniences.
pub struct Prng(u64);

impl Prng {
    pub fn new(seed: u64) -> Prng {
        Prng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
    /// Uniform in `[a, b)`.
    pub fn range(&mut self, a: f32, b: f32) -> f32 {
        a + (b - a) * self.unit()
    }
    /// Uniform integer in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn chance(&mut self, p: f32) -> bool {
        self.unit() < p
    }
    /// Approximately standard normal (Irwin–Hall of four uniforms, unit variance).
    pub fn gauss(&mut self) -> f32 {
        let s: f32 = (0..4).map(|_| self.unit()).sum();
        (s - 2.0) * 3f32.sqrt()
    }
}

// ---------------------------------------------------------------------------------------------
// Colours
// ---------------------------------------------------------------------------------------------

type Colour = [f32; 3];

fn luma(c: Colour) -> f32 {
    0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2]
}

fn scale(c: Colour, k: f32) -> Colour {
    c.map(|v| (v * k).clamp(0.0, 255.0))
}

fn add(c: Colour, d: f32) -> Colour {
    c.map(|v| (v + d).clamp(0.0, 255.0))
}

fn hsv(h: f32, s: f32, v: f32) -> Colour {
    let h = (h.rem_euclid(1.0)) * 6.0;
    let i = h.floor();
    let f = h - i;
    let (p, q, t) = (v * (1.0 - s), v * (1.0 - s * f), v * (1.0 - s * (1.0 - f)));
    let (r, g, b) = match i as u32 {
        0 => (v, t, p),
        1 => (q, v, p),
        2 => (p, v, t),
        3 => (p, q, v),
        4 => (t, p, v),
        _ => (v, p, q),
    };
    [r * 255.0, g * 255.0, b * 255.0]
}

fn dist(a: Colour, b: Colour) -> f32 {
    (0..3).map(|k| (a[k] - b[k]).powi(2)).sum::<f32>().sqrt()
}

/// A product colour at least `min_dist` (Euclidean, 8-bit levels) from every colour in `avoid`.
fn product_colour(rng: &mut Prng, avoid: &[Colour], min_dist: f32) -> Colour {
    let mut best = [0.0; 3];
    let mut best_d = -1.0;
    for _ in 0..64 {
        let c = match rng.below(4) {
            // Saturated colours.
            0 | 1 => hsv(rng.unit(), rng.range(0.35, 0.95), rng.range(0.25, 0.95)),
            // Muted / neutral tones (leather, denim, greys).
            2 => hsv(rng.unit(), rng.range(0.05, 0.35), rng.range(0.12, 0.8)),
            // Very dark.
            _ => hsv(rng.unit(), rng.range(0.0, 0.5), rng.range(0.05, 0.25)),
        };
        let d = avoid.iter().map(|&a| dist(a, c)).fold(f32::INFINITY, f32::min);
        if d >= min_dist {
            return c;
        }
        if d > best_d {
            best_d = d;
            best = c;
        }
    }
    best
}

// ---------------------------------------------------------------------------------------------
// Backdrop
// ---------------------------------------------------------------------------------------------

/// Soft elliptical darkening: centre, radii, strength (fraction removed at the centre).
#[derive(Clone, Copy)]
struct Shadow {
    cx: f32,
    cy: f32,
    rx: f32,
    ry: f32,
    k: f32,
}

#[derive(Clone)]
struct Backdrop {
    w: f32,
    h: f32,
    /// Colours at the two ends of the gradient.
    a: Colour,
    b: Colour,
    /// Gradient direction (unit vector) in normalised coordinates.
    dir: (f32, f32),
    /// Corners darker by this fraction (radial, quadratic fall-off).
    vignette: f32,
    shadows: Vec<Shadow>,
}

impl Backdrop {
    fn plain_colour(&self, x: f32, y: f32) -> Colour {
        let (u, v) = (x / self.w - 0.5, y / self.h - 0.5);
        let t = (u * self.dir.0 + v * self.dir.1 + 0.5).clamp(0.0, 1.0);
        let mut c = [0, 1, 2].map(|k| self.a[k] + (self.b[k] - self.a[k]) * t);
        if self.vignette > 0.0 {
            let r2 = (u * u + v * v) * 2.0;
            c = scale(c, 1.0 - self.vignette * r2);
        }
        c
    }

    fn colour(&self, x: f32, y: f32) -> Colour {
        let mut c = self.plain_colour(x, y);
        for s in &self.shadows {
            let d = ((x - s.cx) / s.rx).powi(2) + ((y - s.cy) / s.ry).powi(2);
            if d < 9.0 {
                c = scale(c, 1.0 - s.k * (-d * 2.0).exp());
            }
        }
        c
    }
}

// ---------------------------------------------------------------------------------------------
// Products
// ---------------------------------------------------------------------------------------------

/// Colour at a point in local coordinates `(u, v)` in `[0, 1]²` of the item's box, if inside.
type LocalFn = Box<dyn Fn(f32, f32) -> Option<Colour> + Send + Sync>;

/// A drawn object: a local shape placed in a pixel rectangle.
struct Item {
    x0: f32,
    y0: f32,
    w: f32,
    h: f32,
    f: LocalFn,
}

impl Item {
    fn at(&self, x: f32, y: f32) -> Option<Colour> {
        let (u, v) = ((x - self.x0) / self.w, (y - self.y0) / self.h);
        if !(0.0..1.0).contains(&u) || !(0.0..1.0).contains(&v) {
            return None;
        }
        (self.f)(u, v)
    }
}

/// A horizontal band of the product, in local `v`, with its own colour.
#[derive(Clone, Copy)]
struct Band {
    v0: f32,
    v1: f32,
    c: Colour,
}

impl Band {
    fn has(b: &Option<Band>, v: f32) -> Option<Colour> {
        b.and_then(|b| (v >= b.v0 && v < b.v1).then_some(b.c))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Bag,
    Shoe,
    Dress,
    Bottle,
    Boxes,
    Person,
}

const KINDS: [Kind; 6] = [Kind::Bag, Kind::Shoe, Kind::Dress, Kind::Bottle, Kind::Boxes, Kind::Person];

/// Width / height of a product's box.
fn aspect(kind: Kind, rng: &mut Prng) -> f32 {
    match kind {
        Kind::Bag => rng.range(0.8, 1.2),
        Kind::Shoe => rng.range(1.9, 2.6),
        Kind::Dress => rng.range(0.6, 0.8),
        Kind::Bottle => rng.range(0.35, 0.5),
        Kind::Boxes => rng.range(0.8, 1.5),
        Kind::Person => rng.range(0.42, 0.5),
    }
}

/// Where a split band sits by default (local `v` range of its centre).
fn band_centre_range(kind: Kind) -> (f32, f32) {
    match kind {
        Kind::Bag => (0.5, 0.85),
        Kind::Shoe => (0.84, 0.84),
        Kind::Dress => (0.3, 0.8),
        Kind::Bottle => (0.45, 0.85),
        Kind::Boxes => (0.4, 0.8),
        Kind::Person => (0.4, 0.55),
    }
}

/// Paint parameters of one product.
#[derive(Clone, Copy)]
struct Paint {
    main: Colour,
    second: Colour,
    band: Option<Band>,
    flip: bool,
    /// Shape variation in `[0, 1)`.
    var: f32,
    /// Opening size variation in `[0, 1)`.
    open: f32,
}

fn shape(kind: Kind, p: Paint, aspect: f32) -> LocalFn {
    match kind {
        Kind::Bag => bag(p, aspect),
        Kind::Shoe => shoe(p),
        Kind::Dress => dress(p),
        Kind::Bottle => bottle(p),
        Kind::Boxes => boxed(p),
        Kind::Person => person(p, aspect),
    }
}

/// Bag: trapezoid body with rounded bottom corners and a handle loop above (an opening).
fn bag(p: Paint, aspect: f32) -> LocalFn {
    let body_top = 0.3 + 0.15 * p.var;
    let w_top = 0.3 + 0.1 * p.var;
    let hrx = 0.16 + 0.14 * p.open;
    let thick = 0.035 + 0.03 * (1.0 - p.open);
    Box::new(move |u, v| {
        let dx = u - 0.5;
        if v >= body_top {
            let t = (v - body_top) / (1.0 - body_top);
            let hw = w_top + (0.5 - w_top) * t;
            // Rounded bottom corners.
            let r = 0.08;
            let inside = if v > 1.0 - r && dx.abs() > hw - r {
                let (cx, cy) = (hw - r, 1.0 - r);
                ((dx.abs() - cx) / r).powi(2) + ((v - cy) / (r * aspect)).powi(2) <= 1.0
            } else {
                dx.abs() < hw
            };
            if !inside {
                return None;
            }
            if let Some(c) = Band::has(&p.band, v) {
                return Some(c);
            }
            let k = 0.86 + 0.14 * (1.0 - t) - 0.06 * (dx / hw).powi(2);
            return Some(scale(p.main, k));
        }
        // Handle: an elliptical ring standing on the body.
        let ry = body_top - 0.01;
        let (ox, oy) = (dx / hrx, (v - body_top) / ry);
        let tv = thick * aspect;
        let (ix, iy) = (dx / (hrx - thick), (v - body_top) / (ry - tv));
        if ox * ox + oy * oy <= 1.0 && ix * ix + iy * iy > 1.0 {
            return Some(scale(p.second, 0.9));
        }
        None
    })
}

/// Shoe in side view: upper, midsole (the usual band) and outsole.
fn shoe(p: Paint) -> LocalFn {
    Box::new(move |u, v| {
        let u = if p.flip { 1.0 - u } else { u };
        let (mid0, out0) = (0.76, 0.9);
        // Sole: rounded toe and heel.
        if v >= mid0 {
            let inside = if u > 0.9 {
                ((u - 0.9) / 0.09).powi(2) + ((v - 0.86) / 0.14).powi(2) <= 1.0
            } else if u < 0.05 {
                ((u - 0.05) / 0.05).powi(2) + ((v - 0.86) / 0.14).powi(2) <= 1.0
            } else {
                true
            };
            if !inside {
                return None;
            }
            if v >= out0 {
                return Some(p.second);
            }
            return Some(p.band.map_or(scale(p.main, 1.15), |b| b.c));
        }
        // Upper: heel counter and collar at the back, vamp sloping down to the toe.
        let toe_top = 0.42 + 0.18 * p.var;
        let top = if u < 0.3 {
            0.04 + 0.05 * u / 0.3
        } else if u < 0.42 {
            0.09 + 0.2 * (u - 0.3) / 0.12
        } else {
            0.29 + (toe_top - 0.29) * ((u - 0.42) / 0.58).powf(0.6)
        };
        let top = top.min(0.7);
        if u < 0.03 || v < top {
            return None;
        }
        if u > 0.86 {
            // Toe box: rounded.
            let e = ((u - 0.86) / 0.13).powi(2) + ((v - mid0) / (mid0 - top).max(0.05)).powi(2);
            if e > 1.0 {
                return None;
            }
        }
        let k = 0.85 + 0.2 * (v - top) - 0.05 * ((u * 14.0).sin() * 0.5 + 0.5);
        Some(scale(p.main, k))
    })
}

/// Dress: bodice with a scoop neck and short sleeves, a belt at the waist (the usual band),
/// a flared skirt with a curved hem.
fn dress(p: Paint) -> LocalFn {
    let waist = 0.3 + 0.1 * p.var;
    let belt = 0.06;
    Box::new(move |u, v| {
        let dx = u - 0.5;
        if v < 0.02 {
            return None;
        }
        let c = if v < waist {
            let t = (v - 0.02) / (waist - 0.02);
            let hw = 0.24 - 0.08 * t;
            // Scoop neck.
            if (dx / 0.11).powi(2) + ((v - 0.02) / 0.12).powi(2) < 1.0 {
                return None;
            }
            // Sleeves: short, slanted.
            let sleeve = v < 0.2 && dx.abs() >= hw && dx.abs() < hw + 0.12 - 0.4 * (v - 0.05).max(0.0);
            if dx.abs() >= hw && !sleeve {
                return None;
            }
            scale(p.main, 0.95 + 0.05 * (dx * 25.0).sin())
        } else if v < waist + belt {
            if dx.abs() >= 0.165 {
                return None;
            }
            p.second
        } else {
            let t = (v - waist - belt) / (1.0 - waist - belt);
            let hw = 0.17 + 0.31 * t.powf(0.9);
            let hem = 0.97 + 0.025 * (dx * 9.0).cos();
            if dx.abs() >= hw || v > hem {
                return None;
            }
            scale(p.main, 0.9 + 0.1 * (dx * 30.0 + t * 3.0).sin())
        };
        Some(Band::has(&p.band, v).unwrap_or(c))
    })
}

/// Bottle: cap, neck, shoulders and a cylindrical body with a label (the usual band).
fn bottle(p: Paint) -> LocalFn {
    let neck = 0.16 + 0.1 * p.var;
    Box::new(move |u, v| {
        let dx = (u - 0.5).abs();
        let inside = if v < 0.07 {
            dx < 0.16
        } else if v < neck {
            dx < 0.13
        } else if v < neck + 0.15 {
            dx < 0.13 + 0.36 * ((v - neck) / 0.15).powf(0.7)
        } else if v > 0.96 {
            dx < 0.49 - (v - 0.96) * 4.0
        } else {
            dx < 0.49
        };
        if !inside {
            return None;
        }
        if v < 0.07 {
            return Some(p.second);
        }
        if let Some(c) = Band::has(&p.band, v) {
            return Some(c);
        }
        let k = 0.7 + 0.3 * (1.0 - (dx / 0.49).powi(2)).max(0.0).sqrt();
        Some(scale(p.main, k))
    })
}

/// A box seen from above the front: top face, front face and a darker side face, with an
/// optional ribbon (the band) around it.
fn boxed(p: Paint) -> LocalFn {
    let top = 0.15 + 0.15 * p.var;
    let front = 0.6 + 0.2 * p.open;
    Box::new(move |u, v| {
        let u = if p.flip { 1.0 - u } else { u };
        let depth = 1.0 - front;
        // Top face: parallelogram (0, top) (front, top) (1, 0) (depth, 0).
        if v < top {
            let s = (top - v) / top * depth;
            if u >= s && u <= front + s {
                return Some(scale(p.main, 1.1));
            }
        }
        // Side face: parallelogram (front, top) (1, 0) (1, 1 - top) (front, 1).
        if u >= front {
            let rise = (u - front) / depth * top;
            if v < top - rise || v > 1.0 - rise {
                return None;
            }
            let c = Band::has(&p.band, v + rise).unwrap_or(p.main);
            return Some(scale(c, 0.72));
        }
        if v < top {
            return None;
        }
        if let Some(c) = Band::has(&p.band, v) {
            return Some(c);
        }
        Some(scale(p.main, 0.95 + 0.05 * v))
    })
}

/// Person silhouette: head and hair, neck, torso, arms apart from the torso (openings), legs
/// apart (an opening), a waistband (the band).
fn person(p: Paint, aspect: f32) -> LocalFn {
    let skin = p.second;
    let gap = 0.025 + 0.045 * p.open;
    let leg_gap = 0.02 + 0.05 * p.open;
    Box::new(move |u, v| {
        let dx = u - 0.5;
        // Everything below scales with the box width relative to a 0.45 aspect.
        let sx = 0.45 / aspect;
        let x = dx * sx.recip() * 0.45;
        let head_r = 0.065;
        let hy = (v - 0.075) / head_r;
        let hx = x / (head_r * 0.8 / 0.45);
        if hx * hx + hy * hy < 1.0 {
            return Some(if v < 0.05 { scale(p.main, 0.3) } else { skin });
        }
        if (0.13..0.17).contains(&v) && x.abs() < 0.03 {
            return Some(skin);
        }
        let half_torso = 0.11 * (1.0 - 0.2 * ((v - 0.17) / 0.33).clamp(0.0, 1.0));
        let shoulder = 0.17;
        if v >= shoulder && v < 0.52 && x.abs() < half_torso {
            return Some(Band::has(&p.band, v).unwrap_or(scale(p.main, 0.92 + 0.08 * (x * 40.0).cos())));
        }
        // Shoulders joining arms to the torso.
        let arm_in = 0.11 + gap;
        let arm_out = arm_in + 0.045;
        if (shoulder..shoulder + 0.04).contains(&v) && x.abs() < arm_out {
            return Some(scale(p.main, 0.95));
        }
        if v >= shoulder && v < 0.5 && x.abs() >= arm_in && x.abs() < arm_out {
            return Some(if v < 0.28 { scale(p.main, 0.9) } else { skin });
        }
        // Legs (trousers), then shoes.
        if (0.52..0.98).contains(&v) && x.abs() >= leg_gap / 2.0 && x.abs() < 0.085 - 0.01 * (v - 0.52) {
            return Some(if v > 0.95 { [30.0, 28.0, 26.0] } else { scale(p.main, 0.55) });
        }
        None
    })
}

/// Earring: a hoop (ring) or a drop (stud, hook and pendant).
fn earring(c: Colour, hoop: bool, thick: f32) -> LocalFn {
    Box::new(move |u, v| {
        let (dx, dy) = (u - 0.5, v - 0.5);
        if hoop {
            let r = (dx * dx + dy * dy).sqrt();
            return (r < 0.48 && r > 0.48 - thick).then(|| scale(c, 0.85 + 0.3 * (dx + 0.5)));
        }
        // Stud at the top, thin link, pendant disc below.
        let stud = dx * dx + (v - 0.1).powi(2) < 0.09f32.powi(2);
        let link = dx.abs() < 0.035 && (0.1..0.45).contains(&v);
        let drop = (dx / 0.36).powi(2) + ((v - 0.7) / 0.28).powi(2) < 1.0;
        (stud || link || drop).then(|| scale(c, 0.8 + 0.3 * (0.5 - dy)))
    })
}

/// Mug with a handle loop on one side (an opening).
fn mug(p: Paint) -> LocalFn {
    let t = 0.05 + 0.04 * p.var;
    Box::new(move |u, v| {
        let u = if p.flip { 1.0 - u } else { u };
        if u < 0.72 {
            let inside = if v > 0.93 { u > (v - 0.93) * 0.8 && u < 0.72 - (v - 0.93) * 0.8 } else { true };
            return inside.then(|| scale(p.main, 0.75 + 0.3 * (1.0 - ((u - 0.36) / 0.36).powi(2)).max(0.0)));
        }
        let (dx, dy) = ((u - 0.72) / 0.26, (v - 0.48) / 0.3);
        let (ix, iy) = ((u - 0.72) / (0.26 - t), (v - 0.48) / (0.3 - t * 1.2));
        (dx * dx + dy * dy <= 1.0 && ix * ix + iy * iy > 1.0).then(|| scale(p.main, 0.8))
    })
}

/// Wire hanger: hook on top and a triangle (an opening) whose base carries the garment.
fn hanger(c: Colour, t: f32) -> LocalFn {
    Box::new(move |u, v| {
        let dx = u - 0.5;
        // Hook: three quarters of a ring at the top, then a stem.
        let (hx, hy) = (dx - 0.05, v - 0.12);
        let r = (hx * hx * 16.0 + hy * hy).sqrt();
        if v < 0.2 && (r - 0.08).abs() < t && !(hx < 0.0 && hy > 0.0) {
            return Some(c);
        }
        if (0.12..0.32).contains(&v) && (dx + 0.0).abs() < t * 0.25 {
            return Some(c);
        }
        // Triangle: two slanted sides from (0.5, 0.3) to the corners (0, 0.95) and (1, 0.95),
        // base along v = 0.95.
        if (0.3..=1.0).contains(&v) {
            let s = (v - 0.3) / 0.65 * 0.5;
            let side = (dx.abs() - s).abs() < t * 0.5 && v <= 0.97;
            let base = v > 0.95 - t * 1.2 && v < 0.97 && dx.abs() < 0.5;
            if side || base {
                return Some(c);
            }
        }
        None
    })
}

/// T-shirt hanging from a hanger: shoulders at the top.
fn top_garment(p: Paint) -> LocalFn {
    Box::new(move |u, v| {
        let dx = (u - 0.5).abs();
        let neck = (dx / 0.12).powi(2) + (v / 0.08).powi(2) < 1.0;
        if neck {
            return None;
        }
        let body = dx < 0.3 + 0.02 * v;
        let sleeve = v < 0.35 && dx < 0.5 - 0.6 * v.max(0.0) + 0.1 && v > 0.02 + dx * 0.15;
        (body || sleeve).then(|| Band::has(&p.band, v).unwrap_or(scale(p.main, 0.9 + 0.1 * (u * 20.0).sin())))
    })
}

// ---------------------------------------------------------------------------------------------
// Scene assembly
// ---------------------------------------------------------------------------------------------

struct Scene {
    w: u32,
    h: u32,
    bg: Backdrop,
    items: Vec<Item>,
    noise: f32,
    blur: f32,
    jpeg: Option<u8>,
}

fn scene_size(rng: &mut Prng) -> (u32, u32) {
    let long = rng.range(480.0, 800.0);
    let aspect = [0.75, 0.8, 2.0 / 3.0, 1.0, 0.5625][rng.below(5)];
    let short = long * aspect;
    if rng.chance(0.7) {
        (short as u32, long as u32)
    } else {
        (long as u32, short as u32)
    }
}

fn light_backdrop(rng: &mut Prng, w: u32, h: u32) -> Backdrop {
    let base = rng.range(205.0, 248.0);
    let tint = [rng.range(-4.0, 4.0), rng.range(-4.0, 4.0), rng.range(-6.0, 6.0)];
    let a = [0, 1, 2].map(|k| (base + tint[k]).min(252.0));
    let drop = rng.range(0.0, 30.0);
    let b = a.map(|v| v - drop);
    Backdrop {
        w: w as f32,
        h: h as f32,
        a,
        b,
        dir: (0.0, 1.0),
        vignette: rng.range(0.0, 0.25),
        shadows: Vec::new(),
    }
}

/// Adds a soft contact shadow under an item's bottom edge.
fn contact_shadow(rng: &mut Prng, bg: &mut Backdrop, it: &Item, k: (f32, f32)) {
    bg.shadows.push(Shadow {
        cx: it.x0 + it.w * rng.range(0.45, 0.6),
        cy: it.y0 + it.h * rng.range(0.96, 1.0),
        rx: it.w * rng.range(0.45, 0.65),
        // Soft: at least 8 px (a falloff of σ ≥ 4 px); a thinner one has a hard edge.
        ry: (it.h * rng.range(0.03, 0.07)).max(8.0),
        k: rng.range(k.0, k.1),
    });
}

/// A band colour `levels` of luminance away from the backdrop around the band's row
/// (darker or lighter, whichever fits in 0..=255; a small tint), checked against the backdrop
/// at both ends of the band and at its centre.
fn band_colour(rng: &mut Prng, bg: &Backdrop, y: f32, xs: [f32; 3], levels: f32) -> Colour {
    let refs: Vec<Colour> = xs.iter().map(|&x| bg.colour(x, y)).collect();
    let mean = [0, 1, 2].map(|k| refs.iter().map(|c| c[k]).sum::<f32>() / refs.len() as f32);
    let lm = luma(mean);
    let up_room = 255.0 - refs.iter().map(|&c| c.iter().copied().fold(0.0, f32::max)).fold(0.0, f32::max);
    let down_room = refs.iter().map(|&c| c.iter().copied().fold(255.0, f32::min)).fold(255.0, f32::min);
    let up = if up_room < levels + 4.0 {
        false
    } else if down_room < levels + 4.0 {
        true
    } else {
        rng.chance(if lm > 200.0 { 0.3 } else { 0.5 })
    };
    let tint = [rng.range(-3.0, 3.0), rng.range(-3.0, 3.0), rng.range(-3.0, 3.0)];
    // The offset is the margin over the extreme end, so every reference differs by ≥ levels.
    let extreme = if up {
        refs.iter().map(|&c| luma(c)).fold(0.0, f32::max)
    } else {
        refs.iter().map(|&c| luma(c)).fold(255.0, f32::min)
    };
    let d = if up { extreme + levels - lm } else { extreme - levels - lm };
    [0, 1, 2].map(|k| (mean[k] + d + tint[k]).clamp(0.0, 255.0))
}

/// Places a product of `kind` with its long side about `size` of the frame, fully inside the
/// frame (with a margin) unless `edges` asks for cuts: bit 0 the bottom edge, bit 1 the left
/// or right edge. A product touches at most the edges asked for (the others keep the margin).
fn place(rng: &mut Prng, kind: Kind, w: u32, h: u32, size: f32, edges: u8) -> (f32, f32, f32, f32) {
    let (wf, hf) = (w as f32, h as f32);
    let a = aspect(kind, rng);
    let (mut bw, mut bh) = if a * hf > wf { (wf * size, wf * size / a) } else { (hf * size * a, hf * size) };
    if edges != 0 {
        bw *= 1.1;
        bh *= 1.1;
    }
    let margin = 0.04 * wf.min(hf);
    // Visible fractions across and down when cut by a side or the bottom.
    let shown_x = if edges & 2 != 0 { rng.range(0.7, 0.9) } else { 1.0 };
    let shown_y = if edges & 1 != 0 { rng.range(0.7, 0.9) } else { 1.0 };
    let room_x = if edges & 2 != 0 { wf - margin } else { wf - 2.0 * margin };
    let room_y = if edges & 1 != 0 { hf - margin } else { hf - 2.0 * margin };
    let fit = (room_x / (bw * shown_x)).min(room_y / (bh * shown_y)).min(1.0);
    bw *= fit;
    bh *= fit;
    let mut x0 = rng.range(margin, (wf - bw - margin).max(margin + 1e-3));
    let mut y0 = rng.range(margin, (hf - bh - margin).max(margin + 1e-3));
    if edges & 1 != 0 {
        y0 = hf - bh * shown_y;
    }
    if edges & 2 != 0 {
        let cut = bw * (1.0 - shown_x);
        x0 = if rng.chance(0.5) { -cut } else { wf - bw + cut };
    }
    (x0, y0, bw, bh)
}

fn make_item(
    rng: &mut Prng,
    kind: Kind,
    rect: (f32, f32, f32, f32),
    bg: &Backdrop,
    band: Option<f32>,
    main_avoid: f32,
) -> Item {
    let (x0, y0, w, h) = rect;
    let bgc = bg.colour(x0 + w / 2.0, y0 + h / 2.0);
    let main = product_colour(rng, &[bgc], main_avoid);
    let second = match kind {
        Kind::Person => [[224.0, 180.0, 150.0], [150.0, 100.0, 70.0], [90.0, 60.0, 45.0]][rng.below(3)],
        Kind::Shoe => {
            if rng.chance(0.5) {
                [40.0, 36.0, 34.0]
            } else {
                [150.0, 95.0, 55.0]
            }
        }
        _ => product_colour(rng, &[bgc, main], 40.0),
    };
    let band = band.map(|levels| {
        let (c0, c1) = band_centre_range(kind);
        let centre = rng.range(c0, c1.max(c0 + 1e-3));
        let half = if kind == Kind::Shoe { 0.07 } else { rng.range(0.025, 0.09) };
        let (v0, v1) = (centre - half, centre + half);
        let yc = y0 + h * centre;
        let xs = [x0 - 0.02 * w, x0 + w * 0.5, x0 + w * 1.02];
        Band { v0, v1, c: band_colour(rng, bg, yc, xs, levels) }
    });
    let paint = Paint { main, second, band, flip: rng.chance(0.5), var: rng.unit(), open: rng.unit() };
    Item { x0, y0, w, h, f: shape(kind, paint, w / h) }
}

/// Renders a scene: coverage-weighted colours at the outlines (4×4 samples), optional lens
/// blur, sensor noise, optional JPEG round trip. Returns the image and the truth.
fn render(s: &Scene, rng: &mut Prng) -> (RgbImage, GrayImage) {
    let (w, h) = (s.w as usize, s.h as usize);
    // Topmost item at each pixel centre (u8::MAX = backdrop).
    let label_at = |x: f32, y: f32| -> (u8, Colour) {
        for (i, it) in s.items.iter().enumerate().rev() {
            if let Some(c) = it.at(x, y) {
                return (i as u8, c);
            }
        }
        (u8::MAX, s.bg.colour(x, y))
    };
    let mut labels = vec![0u8; w * h];
    let mut colours = vec![[0f32; 3]; w * h];
    for y in 0..h {
        for x in 0..w {
            let (l, c) = label_at(x as f32 + 0.5, y as f32 + 0.5);
            labels[y * w + x] = l;
            colours[y * w + x] = c;
        }
    }
    let mut truth = GrayImage::new(s.w, s.h);
    let mut lin = vec![[0f32; 3]; w * h];
    for y in 0..h {
        for x in 0..w {
            let l = labels[y * w + x];
            let mut uniform = true;
            'n: for dy in -1i32..=1 {
                for dx in -1i32..=1 {
                    let (nx, ny) = (x as i32 + dx, y as i32 + dy);
                    if nx >= 0
                        && ny >= 0
                        && (nx as usize) < w
                        && (ny as usize) < h
                        && labels[ny as usize * w + nx as usize] != l
                    {
                        uniform = false;
                        break 'n;
                    }
                }
            }
            let (c, cover) = if uniform {
                (colours[y * w + x], if l == u8::MAX { 0 } else { 16 })
            } else {
                let mut acc = [0f32; 3];
                let mut cover = 0;
                for sy in 0..4 {
                    for sx in 0..4 {
                        let (fx, fy) =
                            (x as f32 + (sx as f32 + 0.5) / 4.0, y as f32 + (sy as f32 + 0.5) / 4.0);
                        let (l, c) = label_at(fx, fy);
                        if l != u8::MAX {
                            cover += 1;
                        }
                        for k in 0..3 {
                            acc[k] += c[k] / 16.0;
                        }
                    }
                }
                (acc, cover)
            };
            lin[y * w + x] = c;
            truth.put_pixel(x as u32, y as u32, Luma([if cover >= 8 { 255 } else { 0 }]));
        }
    }
    if s.blur > 0.05 {
        lin = blur(&lin, w, h, s.blur);
    }
    let mut img = RgbImage::new(s.w, s.h);
    for (i, p) in img.pixels_mut().enumerate() {
        let c = lin[i];
        *p = Rgb(c.map(|v| (v + s.noise * rng.gauss()).round().clamp(0.0, 255.0) as u8));
    }
    if let Some(q) = s.jpeg {
        let mut buf = Vec::new();
        JpegEncoder::new_with_quality(Cursor::new(&mut buf), q).encode_image(&img).unwrap();
        img =
            atelier_imaging::image::load_from_memory_with_format(&buf, ImageFormat::Jpeg).unwrap().to_rgb8();
    }
    (img, truth)
}

fn blur(src: &[Colour], w: usize, h: usize, sigma: f32) -> Vec<Colour> {
    let r = (3.0 * sigma).ceil() as i32;
    let mut k: Vec<f32> = (-r..=r).map(|i| (-(i * i) as f32 / (2.0 * sigma * sigma)).exp()).collect();
    let s: f32 = k.iter().sum();
    k.iter_mut().for_each(|v| *v /= s);
    let mut tmp = vec![[0f32; 3]; w * h];
    for y in 0..h {
        for x in 0..w {
            let mut acc = [0f32; 3];
            for (j, &kv) in k.iter().enumerate() {
                let sx = (x as i32 + j as i32 - r).clamp(0, w as i32 - 1) as usize;
                for c in 0..3 {
                    acc[c] += src[y * w + sx][c] * kv;
                }
            }
            tmp[y * w + x] = acc;
        }
    }
    let mut out = vec![[0f32; 3]; w * h];
    for y in 0..h {
        for x in 0..w {
            let mut acc = [0f32; 3];
            for (j, &kv) in k.iter().enumerate() {
                let sy = (y as i32 + j as i32 - r).clamp(0, h as i32 - 1) as usize;
                for c in 0..3 {
                    acc[c] += tmp[sy * w + x][c] * kv;
                }
            }
            out[y * w + x] = acc;
        }
    }
    out
}

/// One product, optionally with a split band of `levels`, with a contact shadow.
fn single_product(rng: &mut Prng, s: &mut Scene, kind: Kind, size: f32, edges: u8, band: Option<f32>) {
    let rect = place(rng, kind, s.w, s.h, size, edges);
    let probe = Item { x0: rect.0, y0: rect.1, w: rect.2, h: rect.3, f: Box::new(|_, _| None) };
    contact_shadow(rng, &mut s.bg, &probe, (0.15, 0.45));
    let it = make_item(rng, kind, rect, &s.bg, band, 60.0);
    s.items.push(it);
}

fn base_scene(rng: &mut Prng) -> Scene {
    let (w, h) = scene_size(rng);
    let bg = light_backdrop(rng, w, h);
    Scene {
        w,
        h,
        bg,
        items: Vec::new(),
        noise: rng.range(1.0, 5.0),
        blur: if rng.chance(0.5) { rng.range(0.3, 0.8) } else { 0.0 },
        jpeg: rng.chance(0.5).then(|| rng.range(85.0, 96.0) as u8),
    }
}

fn random_kind(rng: &mut Prng) -> Kind {
    KINDS[rng.below(KINDS.len())]
}

fn maybe_band(rng: &mut Prng, p: f32) -> Option<f32> {
    rng.chance(p).then(|| rng.range(20.0, 45.0))
}

fn split_band(rng: &mut Prng) -> Scene {
    let mut s = base_scene(rng);
    // As in the user report: JPEG q92-ish on light backdrops.
    s.jpeg = Some(rng.range(88.0, 96.0) as u8);
    let kind = random_kind(rng);
    let levels = rng.range(15.0, 45.0);
    let size = rng.range(0.5, 0.85);
    single_product(rng, &mut s, kind, size, 0, Some(levels));
    s
}

fn sets(rng: &mut Prng) -> Scene {
    let mut s = base_scene(rng);
    let (wf, hf) = (s.w as f32, s.h as f32);
    match rng.below(4) {
        0 => {
            // Pair of shoes side by side or staggered.
            let sw = wf * rng.range(0.36, 0.45);
            let sh = sw / aspect(Kind::Shoe, rng);
            let gap = sw * rng.range(0.04, 0.25);
            let x0 = (wf - 2.0 * sw - gap) / 2.0;
            let y0 = hf * rng.range(0.3, 0.6);
            let stagger = sh * rng.range(-0.3, 0.3);
            let band = maybe_band(rng, 0.3);
            let main = product_colour(rng, &[s.bg.colour(wf / 2.0, y0)], 60.0);
            let flip = rng.chance(0.5);
            let var = rng.unit();
            for (i, dy) in [(0, 0.0), (1, stagger)] {
                let rect = (x0 + i as f32 * (sw + gap), y0 + dy, sw, sh);
                let probe = Item { x0: rect.0, y0: rect.1, w: sw, h: sh, f: Box::new(|_, _| None) };
                contact_shadow(rng, &mut s.bg, &probe, (0.15, 0.4));
                let b = band.map(|l| {
                    let yc = rect.1 + sh * 0.83;
                    Band {
                        v0: 0.76,
                        v1: 0.9,
                        c: band_colour(
                            rng,
                            &s.bg,
                            yc,
                            [rect.0 - 4.0, rect.0 + sw / 2.0, rect.0 + sw + 4.0],
                            l,
                        ),
                    }
                });
                let p = Paint { main, second: [40.0, 36.0, 34.0], band: b, flip, var, open: 0.5 };
                s.items.push(Item { x0: rect.0, y0: rect.1, w: sw, h: sh, f: shoe(p) });
            }
        }
        1 => {
            // Earrings: 2–4 hoops or drops, spread over the frame.
            let n = 2 + rng.below(3);
            let size = wf.min(hf) * rng.range(0.12, 0.22);
            let colour =
                [[205.0, 165.0, 70.0], [185.0, 185.0, 190.0], [25.0, 25.0, 28.0], hsv(rng.unit(), 0.8, 0.7)]
                    [rng.below(4)];
            let colour = if dist(colour, s.bg.colour(wf / 2.0, hf / 2.0)) < 40.0 {
                [25.0, 25.0, 28.0]
            } else {
                colour
            };
            let hoop = rng.chance(0.5);
            let thick = rng.range(0.08, 0.18);
            let cols = n.min(2);
            let rows = n.div_ceil(cols);
            for i in 0..n {
                let (cx, cy) = ((i % cols) as f32 + 0.5, (i / cols) as f32 + 0.5);
                let x = wf * (0.15 + 0.7 * cx / cols as f32) + rng.range(-0.05, 0.05) * wf - size / 2.0;
                let y = hf * (0.15 + 0.7 * cy / rows as f32) + rng.range(-0.05, 0.05) * hf - size / 2.0;
                let ih = if hoop { size } else { size * 1.5 };
                s.items.push(Item { x0: x, y0: y, w: size, h: ih, f: earring(colour, hoop, thick) });
            }
        }
        2 => {
            // A top on its hanger.
            let tw = wf * rng.range(0.5, 0.75);
            let th = (tw * rng.range(0.9, 1.2)).min(hf * 0.7);
            let x0 = (wf - tw) / 2.0 + rng.range(-0.05, 0.05) * wf;
            let hy = hf * rng.range(0.05, 0.12);
            let hh = tw * 0.4;
            let t = (3.5 / hh).max(rng.range(0.015, 0.03));
            let wire = if rng.chance(0.5) { [35.0, 35.0, 38.0] } else { [160.0, 120.0, 80.0] };
            let top_y = hy + hh * 0.9;
            let band = maybe_band(rng, 0.4);
            let rect = (x0, top_y, tw, th);
            let probe = Item { x0, y0: top_y, w: tw, h: th, f: Box::new(|_, _| None) };
            if rng.chance(0.5) {
                contact_shadow(rng, &mut s.bg, &probe, (0.1, 0.25));
            }
            let mut it = make_item(rng, Kind::Dress, rect, &s.bg, None, 60.0);
            let main = product_colour(rng, &[s.bg.colour(wf / 2.0, top_y + th / 2.0)], 60.0);
            let b = band.map(|l| {
                let centre = rng.range(0.3, 0.85);
                let yc = top_y + th * centre;
                Band {
                    v0: centre - 0.05,
                    v1: centre + 0.05,
                    c: band_colour(rng, &s.bg, yc, [x0 + tw * 0.18, x0 + tw / 2.0, x0 + tw * 0.82], l),
                }
            });
            it.f = top_garment(Paint { main, second: main, band: b, flip: false, var: 0.5, open: 0.5 });
            s.items.push(it);
            s.items.push(Item { x0: x0 + tw * 0.1, y0: hy, w: tw * 0.8, h: hh, f: hanger(wire, t) });
        }
        _ => {
            // Two or three products side by side.
            let n = 2 + rng.below(2);
            let slot = wf / n as f32;
            for i in 0..n {
                let kind = [Kind::Bottle, Kind::Boxes, Kind::Bag, Kind::Shoe][rng.below(4)];
                let a = aspect(kind, rng);
                let bw = (slot * rng.range(0.55, 0.85)).min(hf * 0.7 * a);
                let bh = bw / a;
                let x0 = slot * i as f32 + (slot - bw) / 2.0;
                let y0 = hf * rng.range(0.2, 0.9) - bh / 2.0;
                let y0 = y0.clamp(hf * 0.04, hf * 0.96 - bh);
                let rect = (x0, y0, bw, bh);
                let probe = Item { x0, y0, w: bw, h: bh, f: Box::new(|_, _| None) };
                contact_shadow(rng, &mut s.bg, &probe, (0.15, 0.4));
                let band = maybe_band(rng, 0.3);
                let it = make_item(rng, kind, rect, &s.bg, band, 60.0);
                s.items.push(it);
            }
        }
    }
    s
}

fn openings(rng: &mut Prng) -> Scene {
    let mut s = base_scene(rng);
    let (wf, hf) = (s.w as f32, s.h as f32);
    match rng.below(5) {
        0 => {
            let (size, band) = (rng.range(0.5, 0.85), maybe_band(rng, 0.3));
            single_product(rng, &mut s, Kind::Bag, size, 0, band);
        }
        1 => {
            let (size, band) = (rng.range(0.7, 0.92), maybe_band(rng, 0.3));
            single_product(rng, &mut s, Kind::Person, size, 0, band);
        }
        2 => {
            let size = rng.range(0.4, 0.7);
            let bw = wf.min(hf * 1.1) * size;
            let bh = bw * rng.range(0.7, 0.9);
            let (x0, y0) = ((wf - bw) * rng.range(0.3, 0.7), (hf - bh) * rng.range(0.3, 0.7));
            let probe = Item { x0, y0, w: bw, h: bh, f: Box::new(|_, _| None) };
            contact_shadow(rng, &mut s.bg, &probe, (0.15, 0.4));
            let main = product_colour(rng, &[s.bg.colour(wf / 2.0, hf / 2.0)], 60.0);
            let p =
                Paint { main, second: main, band: None, flip: rng.chance(0.5), var: rng.unit(), open: 0.5 };
            s.items.push(Item { x0, y0, w: bw, h: bh, f: mug(p) });
        }
        3 => {
            // A hanger alone, or with a short top leaving the triangle open.
            let hw = wf * rng.range(0.5, 0.8);
            let hh = hw * 0.45;
            let (x0, y0) = ((wf - hw) / 2.0, hf * rng.range(0.1, 0.4));
            let t = (3.5 / hh).max(rng.range(0.02, 0.04));
            let wire = product_colour(rng, &[s.bg.colour(wf / 2.0, hf / 2.0)], 70.0);
            s.items.push(Item { x0, y0, w: hw, h: hh, f: hanger(wire, t) });
        }
        _ => {
            // Bracelets / hoops, large.
            let n = 1 + rng.below(2);
            let size = wf.min(hf) * rng.range(0.3, 0.45);
            let colour = product_colour(rng, &[s.bg.colour(wf / 2.0, hf / 2.0)], 60.0);
            let thick = rng.range(0.05, 0.15);
            for i in 0..n {
                let x = if n == 1 { (wf - size) / 2.0 } else { wf * (0.27 + 0.46 * i as f32) - size / 2.0 };
                let y = (hf - size) * rng.range(0.3, 0.7);
                s.items.push(Item { x0: x, y0: y, w: size, h: size, f: earring(colour, true, thick) });
            }
        }
    }
    s
}

fn white_on_white(rng: &mut Prng) -> Scene {
    let mut s = base_scene(rng);
    s.noise = rng.range(1.0, 3.0);
    s.jpeg = rng.chance(0.5).then(|| rng.range(88.0, 96.0) as u8);
    let base = rng.range(228.0, 246.0);
    s.bg.a = [base, base, base - rng.range(0.0, 4.0)];
    s.bg.b = s.bg.a.map(|v| v - rng.range(0.0, 15.0));
    s.bg.vignette = rng.range(0.0, 0.12);
    let kind = [Kind::Bag, Kind::Shoe, Kind::Dress, Kind::Bottle, Kind::Boxes][rng.below(5)];
    let size = rng.range(0.5, 0.8);
    let rect = place(rng, kind, s.w, s.h, size, 0);
    let probe = Item { x0: rect.0, y0: rect.1, w: rect.2, h: rect.3, f: Box::new(|_, _| None) };
    contact_shadow(rng, &mut s.bg, &probe, (0.25, 0.5));
    let local = s.bg.colour(rect.0 + rect.2 / 2.0, rect.1 + rect.3 / 2.0);
    // White body: 5–16 levels lighter or darker than the backdrop behind it.
    let off =
        if rng.chance(0.5) && luma(local) < 240.0 { rng.range(5.0, 12.0) } else { -rng.range(6.0, 16.0) };
    let main = add(local, off).map(|v| v.min(254.0));
    let seam = rng.chance(0.6).then(|| rng.range(12.0, 30.0));
    let second = add(local, -rng.range(12.0, 30.0));
    let paint = Paint { main, second, band: None, flip: rng.chance(0.5), var: rng.unit(), open: rng.unit() };
    // White products show little shading: a third of the usual amplitude.
    let shaded = shape(kind, paint, rect.2 / rect.3);
    let inner: LocalFn = Box::new(move |u, v| {
        let c = shaded(u, v)?;
        Some([0, 1, 2].map(|k| main[k] + (c[k] - main[k]) * 0.35))
    });
    let f: LocalFn = match seam {
        None => inner,
        Some(d) => {
            // A faint darker seam along the outline, about 2 px wide.
            let (du, dv) = (2.0 / rect.2, 2.0 / rect.3);
            Box::new(move |u, v| {
                let c = inner(u, v)?;
                let edge = inner(u - du, v).is_none()
                    || inner(u + du, v).is_none()
                    || inner(u, v - dv).is_none()
                    || inner(u, v + dv).is_none();
                Some(if edge { add(c, -d) } else { c })
            })
        }
    };
    s.items.push(Item { x0: rect.0, y0: rect.1, w: rect.2, h: rect.3, f });
    s
}

fn dark_coloured(rng: &mut Prng) -> Scene {
    let mut s = base_scene(rng);
    let c = if rng.chance(0.4) {
        hsv(rng.unit(), rng.range(0.0, 0.4), rng.range(0.06, 0.25))
    } else {
        hsv(rng.unit(), rng.range(0.3, 0.85), rng.range(0.35, 0.9))
    };
    let drop = rng.range(0.0, 0.25);
    s.bg.a = c;
    s.bg.b = scale(c, 1.0 - drop);
    s.bg.vignette = rng.range(0.0, 0.3);
    let kind = random_kind(rng);
    let band = maybe_band(rng, 0.4);
    let size = rng.range(0.5, 0.85);
    single_product(rng, &mut s, kind, size, 0, band);
    s
}

fn vignette(rng: &mut Prng) -> Scene {
    let mut s = base_scene(rng);
    s.bg.vignette = rng.range(0.3, 0.6);
    let spread = rng.range(40.0, 90.0);
    let top = rng.range(150.0, 250.0);
    s.bg.a = [top, top - rng.range(0.0, 6.0), top - rng.range(0.0, 10.0)];
    s.bg.b = s.bg.a.map(|v| (v - spread).max(10.0));
    if rng.chance(0.5) {
        let ang = rng.range(0.2, 1.2) * if rng.chance(0.5) { 1.0 } else { -1.0 };
        s.bg.dir = (ang.sin(), ang.cos());
    }
    let kind = random_kind(rng);
    let band = maybe_band(rng, 0.4);
    let size = rng.range(0.45, 0.8);
    single_product(rng, &mut s, kind, size, 0, band);
    s
}

fn edge_touching(rng: &mut Prng) -> Scene {
    let mut s = base_scene(rng);
    let kind = random_kind(rng);
    let edges = 1 + rng.below(3) as u8;
    let band = maybe_band(rng, 0.4);
    let size = rng.range(0.6, 0.95);
    single_product(rng, &mut s, kind, size, edges, band);
    s
}

fn jpeg(rng: &mut Prng) -> Scene {
    let mut s = match rng.below(6) {
        0 => split_band(rng),
        1 => sets(rng),
        2 => openings(rng),
        3 => dark_coloured(rng),
        4 => vignette(rng),
        _ => edge_touching(rng),
    };
    s.jpeg = Some(rng.range(70.0, 96.0) as u8);
    s
}

/// Scene `seed` of `family`: the image and its truth (255 where the products cover at least
/// half of the pixel).
pub fn family_scene(family: Family, seed: u64) -> (RgbImage, GrayImage) {
    let mut rng = Prng::new(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ (family.index() << 56));
    let s = match family {
        Family::SplitBand => split_band(&mut rng),
        Family::Sets => sets(&mut rng),
        Family::Openings => openings(&mut rng),
        Family::WhiteOnWhite => white_on_white(&mut rng),
        Family::DarkColoured => dark_coloured(&mut rng),
        Family::Vignette => vignette(&mut rng),
        Family::EdgeTouching => edge_touching(&mut rng),
        Family::Jpeg => jpeg(&mut rng),
    };
    render(&s, &mut rng)
}
