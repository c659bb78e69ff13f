//! Virtual model preview: a stylised, parameter-driven fashion figure.

pub use atelier_core::choices::ModelTier;
use image::{DynamicImage, RgbImage};

use crate::draw::{Canvas, Shape};
use crate::hash::{seed_from, Rng};
use crate::palette::{self, Colour};
use crate::renders::look::Look;

/// Output width of [`virtual_model`].
pub const MODEL_WIDTH: u32 = 768;
/// Output height of [`virtual_model`].
pub const MODEL_HEIGHT: u32 = 1024;

/// Text parameters of a virtual model.
#[derive(Debug, Clone, Copy, Default)]
pub struct ModelDescription<'a> {
    /// e.g. `"female"`, `"male"`; anything else is decided from the garment.
    pub gender: &'a str,
    /// Drives the skin tone (keywords such as `african`, `east asian`, `south asian`,
    /// `latina`, `middle eastern`, `caucasian`; otherwise a stable hash).
    pub ethnicity: &'a str,
    /// Garment type and colour (`"red gown"`, `"navy suit"`, `"jeans and white shirt"`).
    pub dresstype: &'a str,
    /// Backdrop (`"white studio"`, `"beach"`, `"city street"`, `"garden"`, colour words…).
    pub background: &'a str,
    /// Age (`"25"`, `"senior"`, `"child"`…): grey hair for seniors, smaller figure for children.
    pub age: &'a str,
    /// Head-and-shoulders framing instead of full body.
    pub closeup: bool,
    /// Free text; colour words in it are used when `dresstype` names none, pattern words
    /// likewise; `blonde`/`redhead` set the hair.
    pub prompt: &'a str,
    /// Detail level of the drawing.
    pub tier: ModelTier,
}

const SKIN: &[[u8; 3]] = &[
    [246, 214, 190], // 0 very light
    [236, 196, 166], // 1 light
    [224, 180, 140], // 2 light-medium
    [205, 150, 110], // 3 medium
    [176, 122, 86],  // 4 tan
    [140, 92, 62],   // 5 brown
    [108, 68, 45],   // 6 dark brown
    [78, 50, 34],    // 7 deep
];

fn skin_index(ethnicity: &str) -> usize {
    let ws = palette::words(ethnicity);
    let any = |c: &[&str]| palette::has_any(&ws, c);
    if any(&["african", "black", "nigerian", "kenyan", "ethiopian", "ghanaian", "somali"]) {
        if any(&["american", "caribbean", "mixed"]) {
            5
        } else {
            6
        }
    } else if any(&["indian", "south", "pakistani", "bangladeshi", "srilankan", "tamil"]) {
        4
    } else if any(&[
        "latino",
        "latina",
        "latinx",
        "hispanic",
        "mexican",
        "brazilian",
        "filipino",
        "middle",
        "arab",
        "persian",
        "turkish",
        "iranian",
        "egyptian",
        "mediterranean",
    ]) {
        3
    } else if any(&["asian", "chinese", "japanese", "korean", "vietnamese", "thai", "east"]) {
        1
    } else if any(&["caucasian", "white", "european", "scandinavian", "nordic", "irish"]) {
        0
    } else if ws.is_empty() {
        2
    } else {
        (seed_from(&[b"skin", ethnicity.as_bytes()]) % SKIN.len() as u64) as usize
    }
}

fn backdrop(background: &str) -> (Colour, Colour) {
    let ws = palette::words(background);
    let any = |c: &[&str]| palette::has_any(&ws, c);
    if any(&["beach", "sea", "ocean", "seaside"]) {
        ([150.0, 200.0, 235.0], [226.0, 206.0, 160.0])
    } else if any(&["sunset", "dusk", "golden"]) {
        ([250.0, 170.0, 110.0], [120.0, 70.0, 130.0])
    } else if any(&["street", "city", "urban", "downtown", "alley"]) {
        ([150.0, 155.0, 165.0], [80.0, 82.0, 90.0])
    } else if any(&["park", "garden", "nature", "forest", "outdoor", "outdoors", "meadow"]) {
        ([170.0, 205.0, 160.0], [70.0, 110.0, 60.0])
    } else if any(&["night", "club", "dark"]) {
        ([45.0, 40.0, 70.0], [15.0, 15.0, 25.0])
    } else if let Some(c) = palette::colours_in(background).first() {
        (palette::mix(*c, [255.0; 3], 0.3), palette::scale(*c, 0.78))
    } else if ws.is_empty() || any(&["studio", "plain", "white", "seamless", "neutral"]) {
        ([236.0, 236.0, 234.0], [250.0, 250.0, 248.0])
    } else {
        let c = palette::hash_colour(background, (0.2, 0.5), (0.6, 0.9));
        (palette::mix(c, [255.0; 3], 0.3), palette::scale(c, 0.8))
    }
}

fn mean_colour(img: &DynamicImage) -> Option<Colour> {
    let rgb = img.to_rgb8();
    let (w, h) = rgb.dimensions();
    if w == 0 || h == 0 {
        return None;
    }
    let (x0, y0, x1, y1) = (w / 4, h / 4, (w * 3 / 4).max(w / 4 + 1), (h * 3 / 4).max(h / 4 + 1));
    let mut s = [0f64; 3];
    let mut n = 0f64;
    for y in y0..y1.min(h) {
        for x in x0..x1.min(w) {
            let p = rgb.get_pixel(x, y);
            for c in 0..3 {
                s[c] += f64::from(p[c]);
            }
            n += 1.0;
        }
    }
    (n > 0.0).then(|| [(s[0] / n) as f32, (s[1] / n) as f32, (s[2] / n) as f32])
}

/// Virtual model preview: always [`MODEL_WIDTH`]×[`MODEL_HEIGHT`] (3:4).
///
/// A stylised figure (head, hair, neck, torso, arms, legs, feet; a dress silhouette or a top
/// with trousers) on a vertical gradient backdrop. Backdrop colours come from `background`
/// (keywords or colour words, else a hash), skin tone from `ethnicity`, garment colour from
/// colour words in `dresstype`/`prompt` (else a hash of `dresstype`), silhouette from
/// `gender`/`dresstype`, hair from `age`/`prompt`. Pattern words (`striped`, `plaid`, `polka
/// dot`…) in `dresstype` (else `prompt`) pattern the garment, in its second colour word or a
/// contrasting tone. `closeup` frames head and shoulders. `tier` adds detail (see
/// [`ModelTier`]). `index` (and `seed`) vary arm pose, stance and colour slightly. A
/// `face_reference` tints the face toward the mean colour of its central region.
pub fn virtual_model(
    desc: &ModelDescription,
    face_reference: Option<&DynamicImage>,
    seed: u64,
    index: u32,
) -> RgbImage {
    let (w, h) = (MODEL_WIDTH as f32, MODEL_HEIGHT as f32);
    let text_seed = seed_from(&[
        desc.gender.as_bytes(),
        desc.ethnicity.as_bytes(),
        desc.dresstype.as_bytes(),
        desc.background.as_bytes(),
        desc.age.as_bytes(),
        desc.prompt.as_bytes(),
        &[u8::from(desc.closeup)],
    ]);
    let mut rng = Rng::keyed(seed ^ text_seed, "virtual-model", &[&index.to_le_bytes()]);

    let gender_words = palette::words(desc.gender);
    let dress_words = palette::words(desc.dresstype);
    let age_words = palette::words(desc.age);
    let prompt_words = palette::words(desc.prompt);
    let female = if palette::has_any(&gender_words, &["female", "woman", "women", "girl", "f", "lady"]) {
        true
    } else if palette::has_any(&gender_words, &["male", "man", "men", "boy", "m", "gentleman"]) {
        false
    } else {
        palette::has_any(&dress_words, &["dress", "gown", "skirt", "maxi", "midi", "sundress"])
    };
    let wears_dress = palette::has_any(&dress_words, &["dress", "gown", "maxi", "midi", "sundress", "frock"])
        || (female
            && !palette::has_any(
                &dress_words,
                &["suit", "jeans", "trousers", "pants", "shirt", "jacket", "tshirt", "shorts"],
            ));
    let long_dress =
        palette::has_any(&dress_words, &["gown", "maxi", "long", "evening", "bridal", "wedding"]);
    let age_num: Option<u32> = age_words.iter().find_map(|w| w.parse().ok());
    let senior = palette::has_any(&age_words, &["senior", "old", "elderly", "older", "mature"])
        || age_num.is_some_and(|a| a >= 60);
    let child = palette::has_any(&age_words, &["child", "kid", "kids", "toddler", "boy", "girl"])
        || age_num.is_some_and(|a| a < 13);

    // Colours.
    let (bg_top, bg_bottom) = backdrop(desc.background);
    let bg_tilt = rng.range(-6.0, 6.0);
    let (bg_top, bg_bottom) = (palette::hue_shift(bg_top, bg_tilt), palette::hue_shift(bg_bottom, bg_tilt));
    let mut skin = {
        let s = SKIN[skin_index(desc.ethnicity)];
        [f32::from(s[0]), f32::from(s[1]), f32::from(s[2])]
    };
    let garment = palette::colours_in(desc.dresstype)
        .first()
        .or(palette::colours_in(desc.prompt).first())
        .copied()
        .unwrap_or_else(|| palette::hash_colour(desc.dresstype, (0.35, 0.8), (0.35, 0.8)));
    let garment = palette::hue_shift(garment, rng.range(-8.0, 8.0));
    let second = palette::colours_in(desc.dresstype).get(1).copied().unwrap_or_else(|| {
        if palette::lum(garment) > 140.0 {
            [45.0, 55.0, 80.0]
        } else {
            [225.0, 222.0, 215.0]
        }
    });
    // Pattern words of the dresstype win over the prompt's.
    let pattern_text = if palette::motif_in(desc.dresstype).is_some() { desc.dresstype } else { desc.prompt };
    let look = Look { tint: None, ..Look::from_text(pattern_text, seed ^ text_seed) };
    let hair = if senior {
        [200.0, 200.0, 200.0]
    } else if palette::has_any(&prompt_words, &["blonde", "blond"]) {
        [225.0, 195.0, 120.0]
    } else if palette::has_any(&prompt_words, &["redhead", "ginger", "auburn"]) {
        [150.0, 70.0, 35.0]
    } else {
        let options: [[f32; 3]; 4] =
            [[25.0, 20.0, 18.0], [60.0, 40.0, 28.0], [95.0, 65.0, 40.0], [40.0, 30.0, 25.0]];
        options[rng.below(4) as usize]
    };
    let face = match face_reference.and_then(mean_colour) {
        Some(m) => palette::mix(skin, m, 0.5),
        None => skin,
    };
    if face_reference.is_some() {
        skin = palette::mix(skin, face, 0.5);
    }

    // Framing: figure units have y = 0 at the top of the head and y = 1 at the soles.
    let fig_scale = if child { 0.7 } else { 1.0 };
    let (scale, top) = if desc.closeup {
        (h / 0.30, h * 0.06)
    } else {
        (h * 0.86 * fig_scale, h * 0.97 - h * 0.86 * fig_scale)
    };
    let sway = rng.range(-0.015, 0.015);
    let cx = w / 2.0 + rng.range(-0.04, 0.04) * w * if desc.closeup { 0.3 } else { 1.0 };
    let pt = |x: f32, y: f32| [cx + x * scale, top + y * scale];
    let light = move |px: f32, _py: f32| 1.04 - 0.10 * ((px - cx) / (0.12 * scale)).clamp(-1.5, 1.5);

    let mut canvas = Canvas::new(MODEL_WIDTH, MODEL_HEIGHT, |x, y| {
        let t = y as f32 / h;
        let vignette = 1.0 - 0.08 * ((x as f32 / w - 0.5).abs() * 2.0).powi(2);
        palette::scale(palette::mix(bg_top, bg_bottom, t), vignette)
    });

    // Floor shadow.
    if !desc.closeup {
        let shadow_col = palette::scale(bg_bottom, 0.8);
        canvas.fill(
            &Shape::Ellipse { c: pt(0.0, 0.99), r: [0.16 * scale, 0.018 * scale] },
            shadow_col,
            |_, _| 1.0,
        );
    }

    let shoulder = if female { 0.092 } else { 0.11 };
    let hip = if female { 0.088 } else { 0.075 };
    let waist = if female { 0.062 } else { 0.07 };

    // Long hair behind the body.
    if female && !senior {
        canvas.fill(
            &Shape::Polygon(vec![pt(-0.06, 0.05), pt(0.06, 0.05), pt(0.075, 0.24), pt(-0.075, 0.24)]),
            hair,
            light,
        );
    }

    // Legs.
    let leg_col = if wears_dress { skin } else { second };
    let stance = rng.range(0.0, 0.025);
    for side in [-1.0f32, 1.0] {
        let hip_pt = pt(side * 0.042 + sway, 0.5);
        let knee = pt(side * (0.045 + stance * 0.5) + sway * 0.5, 0.74);
        let ankle = pt(side * (0.048 + stance), 0.955);
        canvas.fill(&Shape::Capsule { a: hip_pt, b: knee, r: 0.036 * scale }, leg_col, light);
        canvas.fill(&Shape::Capsule { a: knee, b: ankle, r: 0.027 * scale }, leg_col, light);
        canvas.fill(
            &Shape::Ellipse { c: pt(side * (0.058 + stance), 0.975), r: [0.03 * scale, 0.014 * scale] },
            [40.0, 35.0, 35.0],
            |_, _| 1.0,
        );
    }

    // Arms (drawn before the torso so sleeves read as attached).
    let arm_col = if wears_dress && female { skin } else { garment };
    for side in [-1.0f32, 1.0] {
        let spread = rng.range(0.05, 0.5);
        let bend = rng.range(-0.2, 0.6);
        let sh = [shoulder * side, 0.18];
        let elbow = [sh[0] + side * 0.17 * spread.sin(), sh[1] + 0.17 * spread.cos()];
        let fore = spread + bend;
        let wrist =
            [elbow[0] + side * 0.15 * (spread * 0.6).sin(), elbow[1] + 0.15 * fore.cos().abs().max(0.4)];
        canvas.fill(
            &Shape::Capsule { a: pt(sh[0], sh[1]), b: pt(elbow[0], elbow[1]), r: 0.024 * scale },
            arm_col,
            light,
        );
        canvas.fill(
            &Shape::Capsule { a: pt(elbow[0], elbow[1]), b: pt(wrist[0], wrist[1]), r: 0.02 * scale },
            skin,
            light,
        );
        canvas.fill(
            &Shape::Ellipse { c: pt(wrist[0], wrist[1] + 0.02), r: [0.018 * scale, 0.026 * scale] },
            skin,
            light,
        );
    }

    // Neck.
    canvas.fill(&Shape::Capsule { a: pt(0.0, 0.11), b: pt(0.0, 0.17), r: 0.022 * scale }, face, light);

    // Torso / garment, patterned when the text names a pattern.
    let period = (0.03 * scale).max(3.0);
    let cloth =
        |x: f32, y: f32| palette::scale(look.apply(garment, 1.0, x / period, y / period), light(x, y));
    let torso = if wears_dress {
        let hem = if long_dress { 0.965 } else { 0.72 };
        let flare = if long_dress { 0.2 } else { 0.17 } + rng.range(-0.02, 0.02);
        Shape::Polygon(vec![
            pt(-shoulder * 0.8, 0.165),
            pt(-0.025, 0.17),
            pt(0.0, 0.2),
            pt(0.025, 0.17),
            pt(shoulder * 0.8, 0.165),
            pt(waist + sway, 0.40),
            pt(flare + sway, hem),
            pt(-flare + sway, hem),
            pt(-waist + sway, 0.40),
        ])
    } else {
        Shape::Polygon(vec![
            pt(0.0, 0.2),
            pt(-0.03, 0.16),
            pt(-shoulder, 0.17),
            pt(-waist - 0.005, 0.40),
            pt(-hip - 0.005 + sway, 0.53),
            pt(hip + 0.005 + sway, 0.53),
            pt(waist + 0.005, 0.40),
            pt(shoulder, 0.17),
            pt(0.03, 0.16),
        ])
    };
    canvas.fill_with(&torso, cloth);
    if desc.tier == ModelTier::Plus {
        // Waist seam.
        let (wl, wr) = if wears_dress { (-waist + sway, waist + sway) } else { (-waist, waist) };
        canvas.fill(
            &Shape::Capsule { a: pt(wl + 0.004, 0.40), b: pt(wr - 0.004, 0.40), r: 0.0035 * scale },
            palette::scale(garment, 0.62),
            light,
        );
    }

    // Head and face.
    canvas.fill(&Shape::Ellipse { c: pt(0.0, 0.065), r: [0.047 * scale, 0.062 * scale] }, face, light);
    let hair_top = if female && !senior { 0.03 } else { 0.026 };
    canvas.fill(&Shape::Ellipse { c: pt(0.0, hair_top), r: [0.05 * scale, 0.03 * scale] }, hair, light);
    for side in [-1.0f32, 1.0] {
        canvas.fill(
            &Shape::Ellipse { c: pt(side * 0.017, 0.066), r: [0.0045 * scale, 0.0035 * scale] },
            [35.0, 30.0, 30.0],
            |_, _| 1.0,
        );
    }
    let lips = if female { [170.0, 70.0, 80.0] } else { palette::scale(face, 0.75) };
    canvas.fill(
        &Shape::Capsule { a: pt(-0.01, 0.097), b: pt(0.01, 0.097), r: 0.003 * scale },
        lips,
        |_, _| 1.0,
    );
    if desc.tier != ModelTier::Standard {
        // Eyebrows, nose and a shadow under the chin.
        for side in [-1.0f32, 1.0] {
            canvas.fill(
                &Shape::Capsule { a: pt(side * 0.010, 0.056), b: pt(side * 0.025, 0.054), r: 0.0022 * scale },
                palette::scale(hair, 0.8),
                |_, _| 1.0,
            );
        }
        canvas.fill(
            &Shape::Capsule { a: pt(0.0, 0.072), b: pt(0.003, 0.085), r: 0.0025 * scale },
            palette::scale(face, 0.82),
            |_, _| 1.0,
        );
        canvas.fill(
            &Shape::Ellipse { c: pt(0.0, 0.128), r: [0.02 * scale, 0.006 * scale] },
            palette::scale(face, 0.78),
            light,
        );
    }
    if desc.tier == ModelTier::Plus {
        // Hair highlight.
        canvas.fill(
            &Shape::Ellipse { c: pt(-0.015, hair_top - 0.01), r: [0.02 * scale, 0.007 * scale] },
            palette::mix(hair, [255.0; 3], 0.35),
            |_, _| 1.0,
        );
    }
    canvas.into_image()
}
