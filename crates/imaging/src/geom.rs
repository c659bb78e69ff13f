//! Integer rectangles and mask statistics.

use image::GrayImage;

/// Half-open pixel rectangle `[x0, x1) × [y0, y1)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rect {
    pub(crate) x0: u32,
    pub(crate) y0: u32,
    pub(crate) x1: u32,
    pub(crate) y1: u32,
}

impl Rect {
    pub(crate) fn width(&self) -> u32 {
        self.x1.saturating_sub(self.x0)
    }

    pub(crate) fn height(&self) -> u32 {
        self.y1.saturating_sub(self.y0)
    }

    /// Whether pixel `(x, y)` lies inside.
    pub(crate) fn contains(&self, x: u32, y: u32) -> bool {
        (self.x0..self.x1).contains(&x) && (self.y0..self.y1).contains(&y)
    }

    pub(crate) fn contains_rect(&self, other: &Rect) -> bool {
        other.x0 >= self.x0 && other.y0 >= self.y0 && other.x1 <= self.x1 && other.y1 <= self.y1
    }
}

/// Bounding box of pixels `>= threshold` in a grey mask, or `None` if there are none.
pub(crate) fn mask_bbox(mask: &GrayImage, threshold: u8) -> Option<Rect> {
    let (w, h) = mask.dimensions();
    let mut r = Rect { x0: u32::MAX, y0: u32::MAX, x1: 0, y1: 0 };
    let raw = mask.as_raw();
    for y in 0..h {
        let row = &raw[(y * w) as usize..((y + 1) * w) as usize];
        for (x, &v) in row.iter().enumerate() {
            if v >= threshold {
                let x = x as u32;
                r.x0 = r.x0.min(x);
                r.x1 = r.x1.max(x + 1);
                r.y0 = r.y0.min(y);
                r.y1 = r.y1.max(y + 1);
            }
        }
    }
    (r.x1 > r.x0).then_some(r)
}
