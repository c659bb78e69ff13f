//! RGB → YUV 4:2:0 (I420) conversion, BT.709 matrix, limited ("TV") range,
//! integer arithmetic only. The encoder signals the same colour description in
//! the SPS VUI so browsers convert back correctly.

use image::RgbImage;

fn luma(r: i32, g: i32, b: i32) -> u8 {
    (((47 * r + 157 * g + 16 * b + 128) >> 8) + 16).clamp(16, 235) as u8
}

fn chroma(r: i32, g: i32, b: i32) -> (u8, u8) {
    let u = ((-26 * r - 86 * g + 112 * b + 128) >> 8) + 128;
    let v = ((112 * r - 102 * g - 10 * b + 128) >> 8) + 128;
    (u.clamp(16, 240) as u8, v.clamp(16, 240) as u8)
}

/// Converts an image with even width and height into one contiguous I420
/// buffer (Y plane, then U, then V; chroma from the 2×2 RGB average).
pub(crate) fn rgb_to_i420(img: &RgbImage) -> Vec<u8> {
    let (w, h) = (img.width() as usize, img.height() as usize);
    let (cw, ch) = (w / 2, h / 2);
    let raw = img.as_raw();
    let mut out = vec![0u8; w * h + 2 * cw * ch];
    let (y_plane, uv) = out.split_at_mut(w * h);
    let (u_plane, v_plane) = uv.split_at_mut(cw * ch);

    for (dst, src) in y_plane.iter_mut().zip(raw.chunks_exact(3)) {
        *dst = luma(i32::from(src[0]), i32::from(src[1]), i32::from(src[2]));
    }
    for cy in 0..ch {
        let row0 = &raw[(2 * cy) * w * 3..(2 * cy + 1) * w * 3];
        let row1 = &raw[(2 * cy + 1) * w * 3..(2 * cy + 2) * w * 3];
        for cx in 0..cw {
            let mut sum = [0i32; 3];
            for row in [row0, row1] {
                for px in row[cx * 6..cx * 6 + 6].chunks_exact(3) {
                    for c in 0..3 {
                        sum[c] += i32::from(px[c]);
                    }
                }
            }
            let (u, v) = chroma((sum[0] + 2) >> 2, (sum[1] + 2) >> 2, (sum[2] + 2) >> 2);
            u_plane[cy * cw + cx] = u;
            v_plane[cy * cw + cx] = v;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_colours() {
        assert_eq!(luma(0, 0, 0), 16);
        assert_eq!(luma(255, 255, 255), 235);
        assert_eq!(chroma(255, 255, 255), (128, 128));
        assert_eq!(chroma(0, 0, 0), (128, 128));
        let (u, v) = chroma(255, 0, 0);
        assert!(u < 128 && v > 200);
        let img = RgbImage::from_pixel(4, 2, image::Rgb([255, 255, 255]));
        let yuv = rgb_to_i420(&img);
        assert_eq!(yuv.len(), 8 + 2 + 2);
        assert!(yuv[..8].iter().all(|&y| y == 235));
        assert!(yuv[8..].iter().all(|&c| c == 128));
    }
}
