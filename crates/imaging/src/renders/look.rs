//! A garment's look from a text: colour words tint it, pattern words pattern it.

use crate::hash::Rng;
use crate::palette::{self, Colour, Motif};

/// Colour and pattern read from a description such as `"navy and white stripes"`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Look {
    /// The first colour word: the garment's new ground colour.
    pub(crate) tint: Option<Colour>,
    /// The second colour word: the pattern colour.
    pub(crate) second: Option<Colour>,
    /// The pattern word, if any.
    pub(crate) motif: Option<Motif>,
    /// Pattern phase in periods (from the seed), so equal seeds give equal patterns.
    pub(crate) phase: [f32; 2],
}

impl Look {
    pub(crate) fn from_text(text: &str, seed: u64) -> Look {
        let colours = palette::colours_in(text);
        let mut rng = Rng::keyed(seed, "look", &[text.as_bytes()]);
        Look {
            tint: colours.first().copied(),
            second: colours.get(1).copied(),
            motif: palette::motif_in(text),
            phase: [rng.unit(), rng.unit()],
        }
    }

    /// The garment colour `c` restyled at pattern coordinates `(u, v)` (in pattern periods).
    ///
    /// `rel` is the pixel's luminance relative to the garment's mean luminance: a tint keeps
    /// it, so the garment's own folds and print stay visible under the new colour (15 % of the
    /// original colour is kept as well). The pattern mixes in the second colour word, or, when
    /// there is none, a darker (light grounds) or lighter (dark grounds) tone of the ground.
    pub(crate) fn apply(&self, c: Colour, rel: f32, u: f32, v: f32) -> Colour {
        let ground = match self.tint {
            Some(t) => palette::mix(palette::scale(t, rel), c, 0.15),
            None => c,
        };
        match self.motif {
            Some(m) => {
                let k = m.weight(u + self.phase[0], v + self.phase[1]);
                let second = match self.second {
                    Some(s) => palette::scale(s, rel),
                    None if palette::lum(ground) > 110.0 => palette::scale(ground, 0.45),
                    None => palette::mix(ground, [250.0, 248.0, 240.0], 0.65),
                };
                palette::mix(ground, second, k)
            }
            None => ground,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_and_pattern_words_restyle() {
        let plain = Look::from_text("a lovely garment", 1);
        assert!(plain.tint.is_none() && plain.motif.is_none());
        assert_eq!(plain.apply([10.0, 20.0, 30.0], 1.0, 0.3, 0.7), [10.0, 20.0, 30.0]);
        let red = Look::from_text("red", 1);
        let c = red.apply([200.0, 200.0, 200.0], 1.0, 0.0, 0.0);
        assert!(c[0] > c[1] + 100.0, "{c:?}");
        let stripes = Look::from_text("navy and white stripes", 1);
        let samples: Vec<Colour> =
            (0..20).map(|i| stripes.apply([128.0; 3], 1.0, i as f32 / 10.0, 0.0)).collect();
        assert!(samples.iter().any(|c| c[0] > 150.0) && samples.iter().any(|c| c[0] < 60.0));
        assert_ne!(Look::from_text("red dots", 1).phase, Look::from_text("red dots", 2).phase);
    }
}
