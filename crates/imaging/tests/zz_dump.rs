mod common;
use atelier_imaging::image::{imageops, DynamicImage, GrayImage, Luma, RgbImage};
use atelier_imaging::*;
use common::*;

fn montage(imgs: &[RgbImage], path: &str) {
    let h = imgs.iter().map(|i| i.height()).max().unwrap();
    let w: u32 = imgs.iter().map(|i| i.width() + 4).sum();
    let mut out = RgbImage::from_pixel(w, h, atelier_imaging::image::Rgb([255, 0, 255]));
    let mut x = 0;
    for i in imgs {
        imageops::replace(&mut out, i, x, 0);
        x += i64::from(i.width()) + 4;
    }
    let out = imageops::resize(&out, w * 2, h * 2, imageops::FilterType::Nearest);
    out.save(path).unwrap();
}
fn g2rgb(g: &GrayImage) -> RgbImage {
    DynamicImage::ImageLuma8(g.clone()).to_rgb8()
}

#[test]
#[ignore]
fn dump() {
    std::fs::create_dir_all("/tmp/dump").unwrap();
    let truth = person_truth(128, 192, 64.0);
    let img = compose(&truth, [200, 120, 40], gradient(192));
    let d = DynamicImage::ImageRgb8(img.clone());
    let cut = remove_background(&d);
    let alpha = GrayImage::from_fn(128, 192, |x, y| Luma([cut.get_pixel(x, y)[3]]));
    montage(
        &[img, g2rgb(&truth), g2rgb(&subject_mask(&d)), g2rgb(&alpha), flatten(&cut, [0, 0, 0])],
        "/tmp/dump/grad.png",
    );
}

#[test]
#[ignore]
fn dump_real() {
    use atelier_imaging::image::Rgb;
    std::fs::create_dir_all("/tmp/dump").unwrap();
    let (w, h) = (900u32, 1200u32);
    // Soft-edged person with stripes of a near-background colour and thin "hair" strands.
    let ss = 3;
    let big = person_truth(w * ss, h * ss, (w * ss) as f32 / 2.0);
    let truth = imageops::resize(&big, w, h, imageops::FilterType::Triangle);
    let img = RgbImage::from_fn(w, h, |x, y| {
        let a = f32::from(truth.get_pixel(x, y)[0]) / 255.0;
        let n = (((x * 7919 + y * 104_729) % 17) as f32 - 8.0) * 0.6;
        let t = y as f32 / h as f32;
        let bg = [200.0 + 30.0 * t + n, 205.0 + 25.0 * t + n, 215.0 + 20.0 * t + n];
        let stripe = (y / 40) % 2 == 0;
        let fg = if stripe { [225.0 + n, 228.0 + n, 232.0 + n] } else { [40.0 + n, 50.0 + n, 90.0 + n] };
        let mut c = [0.0; 3];
        for k in 0..3 {
            c[k] = fg[k] * a + bg[k] * (1.0 - a);
        }
        // hair strands
        let hx = x as f32 - w as f32 / 2.0;
        let hy = y as f32 - 0.17 * h as f32;
        let r = (hx * hx + hy * hy).sqrt();
        if r > 0.08 * h as f32 && r < 0.11 * h as f32 && hy < 0.0 && (hx.atan2(hy) * 40.0).sin() > 0.9 {
            c = [60.0, 40.0, 30.0];
        }
        Rgb(c.map(|v| v.clamp(0.0, 255.0) as u8))
    });
    let d = DynamicImage::ImageRgb8(img.clone());
    let t0 = std::time::Instant::now();
    let cut = remove_background(&d);
    eprintln!("remove_background {:?}", t0.elapsed());
    let alpha = GrayImage::from_fn(w, h, |x, y| Luma([cut.get_pixel(x, y)[3]]));
    eprintln!("iou {}", iou(&alpha, &truth));
    let small = |i: &RgbImage| imageops::resize(i, w / 3, h / 3, imageops::FilterType::Triangle);
    montage(
        &[small(&img), small(&g2rgb(&alpha)), small(&flatten(&cut, [200, 30, 30]))],
        "/tmp/dump/real.png",
    );
    // crop near the head at full res
    let crop = |i: &RgbImage| imageops::crop_imm(i, w / 2 - 120, 60, 240, 200).to_image();
    montage(
        &[crop(&img), crop(&g2rgb(&alpha)), crop(&flatten(&cut, [200, 30, 30]))],
        "/tmp/dump/real_crop.png",
    );
}

#[test]
#[ignore]
fn dump_previews() {
    use atelier_imaging::image::Rgb;
    std::fs::create_dir_all("/tmp/dump").unwrap();
    let (model, _) = person_image(192, 256);
    let garment = garment_image(96, 96);
    let t = tryon(&model, &garment, GarmentRegion::Top, 1.0, 1);
    let b = tryon(&model, &garment, GarmentRegion::Bottom, 1.0, 1);
    let d = tryon(&model, &garment, GarmentRegion::Dress, 1.2, 1);
    let a = tryon(&model, &garment, GarmentRegion::Accessory, 1.0, 1);
    montage(&[model.to_rgb8(), t, b, d, a], "/tmp/dump/tryon.png");
    let f1 = fabric(&model, FabricSource::Description("navy and white stripes"), GarmentRegion::Top, 3);
    let f2 = fabric(&model, FabricSource::Description("red gingham check"), GarmentRegion::Dress, 3);
    let f3 = fabric(&model, FabricSource::Description("polka dots beige"), GarmentRegion::Bottom, 3);
    let f4 = fabric(&model, FabricSource::Description("floral summer"), GarmentRegion::Dress, 3);
    let f5 = fabric(&model, FabricSource::Image(&garment), GarmentRegion::Dress, 3);
    montage(&[f1, f2, f3, f4, f5], "/tmp/dump/fabric.png");
    // sketch: dress outline
    let sketch = RgbImage::from_fn(192, 256, |x, y| {
        let (fx, fy) = (x as f32, y as f32);
        let cx = 96.0;
        // bodice trapezoid + skirt triangle outline
        let half = if fy < 120.0 { 25.0 + (fy - 40.0) * 0.05 } else { 29.0 + (fy - 120.0) * 0.5 };
        let inside_y = fy > 40.0 && fy < 230.0;
        let edge = inside_y && ((fx - cx).abs() - half).abs() < 1.5;
        let top = (fy - 40.0).abs() < 1.5 && (fx - cx).abs() <= half + 1.0;
        let bottom = (fy - 230.0).abs() < 1.5 && (fx - cx).abs() <= 29.0 + 110.0 * 0.5 + 1.0;
        let waist = (fy - 120.0).abs() < 1.0 && (fx - cx).abs() <= half;
        if edge || top || bottom || waist {
            Rgb([30, 30, 30])
        } else {
            Rgb([250, 248, 245])
        }
    });
    let s1 = sketch_to_dress(&DynamicImage::ImageRgb8(sketch.clone()), true, 1, "");
    let s2 = sketch_to_dress(&DynamicImage::ImageRgb8(sketch.clone()), false, 2, "");
    let s3 = sketch_to_dress(&DynamicImage::ImageRgb8(sketch.clone()), true, 3, "emerald silk gown");
    montage(&[sketch, s1, s2, s3], "/tmp/dump/sketch.png");
    let small = |i: RgbImage| imageops::resize(&i, 192, 256, imageops::FilterType::Triangle);
    let desc = ModelDescription {
        gender: "female",
        ethnicity: "east asian",
        dresstype: "red evening gown",
        background: "white studio",
        age: "25",
        closeup: false,
        prompt: "",
    };
    let m1 = small(virtual_model(&desc, None, 1, 0));
    let m2 = small(virtual_model(&desc, None, 1, 1));
    let desc2 = ModelDescription {
        gender: "male",
        ethnicity: "african",
        dresstype: "navy suit",
        background: "city street",
        age: "40",
        closeup: false,
        prompt: "",
    };
    let m3 = small(virtual_model(&desc2, None, 5, 0));
    let desc3 = ModelDescription { closeup: true, background: "beach", ..desc };
    let m4 = small(virtual_model(&desc3, None, 5, 0));
    let desc4 = ModelDescription {
        gender: "",
        ethnicity: "",
        dresstype: "summer dress",
        background: "garden",
        age: "senior",
        closeup: false,
        prompt: "floral",
    };
    let m5 = small(virtual_model(&desc4, Some(&garment), 9, 2));
    montage(&[m1, m2, m3, m4, m5], "/tmp/dump/model.png");
    let mp: Vec<RgbImage> = (0..4).map(|i| multipose(&model, None, i, 7)).collect();
    montage(&mp, "/tmp/dump/multipose.png");
    let prod = garment_image(96, 128);
    let p1 = small(product_shoot(&prod, "white studio", (3, 4), 0, 1));
    let p2 = product_shoot(&prod, "pastel pink", (16, 9), 1, 1);
    let p3 = small(product_shoot(&prod, "wooden table", (1, 1), 2, 1));
    let p2 = imageops::resize(&p2, 455, 256, imageops::FilterType::Triangle);
    montage(&[p1, p2, p3], "/tmp/dump/product.png");
    let ex = |a| reframe(&model, a, ReframeMode::Extend).to_rgb8();
    montage(
        &[ex((16, 9)), ex((1, 1)), reframe(&model, (1, 1), ReframeMode::Crop).to_rgb8()],
        "/tmp/dump/reframe.png",
    );
}

#[test]
#[ignore]
fn dump_extend() {
    use atelier_imaging::image::Rgb;
    let img = RgbImage::from_fn(160, 120, |x, y| {
        let (fx, fy) = (x as f32, y as f32);
        let checker = ((x / 20 + y / 20) % 2) as f32 * 40.0;
        Rgb([
            (100.0 + 80.0 * (fx / 17.0).sin() + checker) as u8,
            (90.0 + 60.0 * (fy / 23.0).cos()) as u8,
            (60.0 + checker + fx * 0.5) as u8,
        ])
    });
    let d = DynamicImage::ImageRgb8(img);
    let a = reframe(&d, (9, 16), ReframeMode::Extend).to_rgb8();
    let b = reframe(&d, (21, 9), ReframeMode::Extend).to_rgb8();
    montage(&[a, b], "/tmp/dump/extend.png");
}
