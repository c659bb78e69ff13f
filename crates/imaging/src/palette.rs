//! Colour vocabulary and colour maths for the preview renders.

use crate::hash::seed_from;

/// Linear RGB-ish colour with channels in `0..=255` (sRGB values, mixed linearly).
pub(crate) type Colour = [f32; 3];

const NAMED: &[(&str, [u8; 3])] = &[
    ("red", [196, 30, 45]),
    ("crimson", [170, 20, 50]),
    ("scarlet", [220, 40, 30]),
    ("burgundy", [110, 20, 40]),
    ("maroon", [110, 25, 35]),
    ("wine", [120, 30, 55]),
    ("pink", [236, 150, 180]),
    ("rose", [220, 120, 140]),
    ("blush", [238, 190, 190]),
    ("fuchsia", [210, 40, 150]),
    ("magenta", [200, 30, 140]),
    ("coral", [240, 120, 95]),
    ("salmon", [245, 140, 115]),
    ("peach", [250, 190, 150]),
    ("orange", [240, 130, 30]),
    ("rust", [170, 70, 35]),
    ("terracotta", [190, 95, 65]),
    ("yellow", [245, 210, 50]),
    ("mustard", [205, 160, 40]),
    ("gold", [212, 175, 55]),
    ("golden", [212, 175, 55]),
    ("lemon", [250, 235, 110]),
    ("beige", [222, 200, 165]),
    ("cream", [245, 235, 210]),
    ("ivory", [248, 244, 228]),
    ("nude", [225, 190, 165]),
    ("tan", [205, 165, 120]),
    ("khaki", [190, 175, 125]),
    ("camel", [193, 154, 107]),
    ("sand", [220, 200, 160]),
    ("brown", [120, 75, 45]),
    ("chocolate", [90, 50, 30]),
    ("coffee", [110, 75, 55]),
    ("olive", [110, 115, 50]),
    ("green", [40, 140, 70]),
    ("emerald", [20, 130, 90]),
    ("forest", [35, 85, 45]),
    ("mint", [170, 225, 195]),
    ("sage", [160, 175, 140]),
    ("lime", [170, 210, 60]),
    ("teal", [20, 120, 125]),
    ("turquoise", [60, 200, 200]),
    ("aqua", [90, 210, 215]),
    ("cyan", [40, 190, 220]),
    ("blue", [40, 80, 190]),
    ("navy", [25, 35, 80]),
    ("cobalt", [30, 70, 170]),
    ("royal", [50, 70, 180]),
    ("sky", [135, 190, 235]),
    ("denim", [70, 100, 145]),
    ("indigo", [60, 40, 120]),
    ("purple", [110, 50, 140]),
    ("violet", [140, 80, 190]),
    ("lavender", [190, 170, 225]),
    ("lilac", [200, 165, 215]),
    ("plum", [110, 50, 90]),
    ("mauve", [180, 130, 160]),
    ("white", [246, 246, 244]),
    ("black", [22, 22, 24]),
    ("grey", [128, 128, 130]),
    ("gray", [128, 128, 130]),
    ("charcoal", [55, 57, 62]),
    ("silver", [192, 192, 198]),
    ("slate", [100, 112, 128]),
    ("taupe", [140, 125, 110]),
];

/// Lower-case alphanumeric words of a text.
pub(crate) fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// The colour named by a single word, if any.
pub(crate) fn named(word: &str) -> Option<Colour> {
    NAMED.iter().find(|(n, _)| *n == word).map(|(_, c)| [f32::from(c[0]), f32::from(c[1]), f32::from(c[2])])
}

/// All colours named in a text, in order, with "light"/"dark"/"pale"/"deep" modifiers applied.
pub(crate) fn colours_in(text: &str) -> Vec<Colour> {
    let ws = words(text);
    let mut out = Vec::new();
    for (i, w) in ws.iter().enumerate() {
        if let Some(c) = named(w) {
            let modifier = if i > 0 { ws[i - 1].as_str() } else { "" };
            let c = match modifier {
                "light" | "pale" | "pastel" | "soft" => mix(c, [255.0; 3], 0.45),
                "dark" | "deep" => scale(c, 0.6),
                "bright" | "vivid" => saturate(c, 1.3),
                _ => c,
            };
            out.push(c);
        }
    }
    out
}

/// A repeating garment pattern named in a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Motif {
    /// `stripe(s)`, `striped`, `pinstripe`, `breton`: vertical stripes.
    Stripes,
    /// `check(s)`, `checked`, `checkered`, `plaid`, `gingham`, `tartan`, `houndstooth`.
    Checks,
    /// `dot(s)`, `dotted`, `polka`, `spotted`, `spots`.
    Dots,
}

/// The first pattern word of a text, if any (stripes win over checks, checks over dots).
pub(crate) fn motif_in(text: &str) -> Option<Motif> {
    let ws = words(text);
    if has_any(&ws, &["stripe", "stripes", "striped", "pinstripe", "breton"]) {
        Some(Motif::Stripes)
    } else if has_any(
        &ws,
        &["check", "checks", "checked", "checkered", "plaid", "gingham", "tartan", "houndstooth"],
    ) {
        Some(Motif::Checks)
    } else if has_any(&ws, &["dot", "dots", "dotted", "polka", "spotted", "spots"]) {
        Some(Motif::Dots)
    } else {
        None
    }
}

impl Motif {
    /// Weight of the second colour at pattern coordinates `(u, v)`, measured in pattern
    /// periods (one stripe pair, check or dot cell per unit), soft-edged, in `0..=1`.
    pub(crate) fn weight(self, u: f32, v: f32) -> f32 {
        let band = |t: f32| {
            let c = 0.5 + 0.5 * (std::f32::consts::TAU * t).cos();
            (c - 0.25).clamp(0.0, 0.2) / 0.2
        };
        match self {
            Motif::Stripes => band(u),
            Motif::Checks => 0.5 * (band(u) + band(v)),
            Motif::Dots => {
                // Dots on a half-drop grid.
                let row = v.floor();
                let uu = u + 0.5 * row.rem_euclid(2.0);
                let (fx, fy) = (uu - uu.floor() - 0.5, v - row - 0.5);
                let d = (fx * fx + fy * fy).sqrt();
                (1.0 - (d - 0.22) / 0.06).clamp(0.0, 1.0)
            }
        }
    }
}

/// Whether any of the words appears in the text.
pub(crate) fn has_any(words_of_text: &[String], candidates: &[&str]) -> bool {
    words_of_text.iter().any(|w| candidates.contains(&w.as_str()))
}

/// HSV (h in degrees, s and v in `0..=1`) to a `0..=255` colour.
pub(crate) fn hsv(h: f32, s: f32, v: f32) -> Colour {
    let h = h.rem_euclid(360.0) / 60.0;
    let c = v * s;
    let x = c * (1.0 - (h % 2.0 - 1.0).abs());
    let (r, g, b) = match h as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = v - c;
    [(r + m) * 255.0, (g + m) * 255.0, (b + m) * 255.0]
}

/// A pleasant colour derived from a hash of `text` (stable), within the given saturation and
/// value ranges.
pub(crate) fn hash_colour(text: &str, s: (f32, f32), v: (f32, f32)) -> Colour {
    let h = seed_from(&[b"colour", text.as_bytes()]);
    let hue = (h % 360) as f32;
    let sat = s.0 + (s.1 - s.0) * ((h >> 16) % 1000) as f32 / 999.0;
    let val = v.0 + (v.1 - v.0) * ((h >> 32) % 1000) as f32 / 999.0;
    hsv(hue, sat, val)
}

pub(crate) fn mix(a: Colour, b: Colour, t: f32) -> Colour {
    [a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t, a[2] + (b[2] - a[2]) * t]
}

pub(crate) fn scale(a: Colour, k: f32) -> Colour {
    [a[0] * k, a[1] * k, a[2] * k]
}

pub(crate) fn saturate(a: Colour, k: f32) -> Colour {
    let l = lum(a);
    [
        (l + (a[0] - l) * k).clamp(0.0, 255.0),
        (l + (a[1] - l) * k).clamp(0.0, 255.0),
        (l + (a[2] - l) * k).clamp(0.0, 255.0),
    ]
}

/// Luminance in `0..=255`.
pub(crate) fn lum(a: Colour) -> f32 {
    0.299 * a[0] + 0.587 * a[1] + 0.114 * a[2]
}

/// Shifts a colour's hue slightly by rotating around the grey axis (`deg` degrees).
pub(crate) fn hue_shift(a: Colour, deg: f32) -> Colour {
    let (s, c) = deg.to_radians().sin_cos();
    let k: f32 = 1.0 / 3.0;
    let sq = k.sqrt();
    // Rodrigues rotation about (1,1,1)/sqrt(3).
    let m = [
        [c + (1.0 - c) * k, k * (1.0 - c) - sq * s, k * (1.0 - c) + sq * s],
        [k * (1.0 - c) + sq * s, c + k * (1.0 - c), k * (1.0 - c) - sq * s],
        [k * (1.0 - c) - sq * s, k * (1.0 - c) + sq * s, c + k * (1.0 - c)],
    ];
    let mut out = [0.0; 3];
    for i in 0..3 {
        out[i] = (m[i][0] * a[0] + m[i][1] * a[1] + m[i][2] * a[2]).clamp(0.0, 255.0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_words_are_found_with_modifiers() {
        let cs = colours_in("A light Navy dress with red-stripes");
        assert_eq!(cs.len(), 2);
        assert!(cs[0][2] > 80.0 && cs[0][0] > 25.0, "light navy is lighter than navy");
        assert_eq!(cs[1], [196.0, 30.0, 45.0]);
        assert!(colours_in("nothing here").is_empty());
        let h1 = hash_colour("zebra", (0.4, 0.7), (0.5, 0.8));
        let h2 = hash_colour("zebra", (0.4, 0.7), (0.5, 0.8));
        assert_eq!(h1, h2);
        assert_ne!(h1, hash_colour("zebras", (0.4, 0.7), (0.5, 0.8)));
    }

    #[test]
    fn motif_words_and_weights() {
        assert_eq!(motif_in("navy pinstripe suit"), Some(Motif::Stripes));
        assert_eq!(motif_in("red gingham"), Some(Motif::Checks));
        assert_eq!(motif_in("white polka dots"), Some(Motif::Dots));
        assert_eq!(motif_in("plain red gown"), None);
        for m in [Motif::Stripes, Motif::Checks, Motif::Dots] {
            let ws: Vec<f32> = (0..40).map(|i| m.weight(i as f32 / 20.0, i as f32 / 13.0)).collect();
            assert!(ws.iter().all(|w| (0.0..=1.0).contains(w)), "{m:?}");
            assert!(ws.iter().any(|&w| w > 0.9) && ws.iter().any(|&w| w < 0.1), "{m:?} has no contrast");
        }
    }

    #[test]
    fn hue_shift_zero_is_identity() {
        let c = [200.0, 40.0, 90.0];
        let s = hue_shift(c, 0.0);
        for i in 0..3 {
            assert!((s[i] - c[i]).abs() < 0.01);
        }
    }
}
