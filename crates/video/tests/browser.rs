//! The MP4 plays in a browser: headless Chromium loads it in a `<video>`
//! element and reports its duration and size.
//!
//! `.ci/run` installs Debian's `chromium`. Elsewhere the test is skipped with
//! a note when no Chromium is installed; under CI (`CI` set) a missing
//! browser is a failure.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use atelier_video::{render, Motion, VideoSpec};

const PAGE: &str = r#"<!doctype html><html><body>
<video id="v" src="clip.mp4" muted preload="auto"></video><pre id="out">pending</pre>
<script>
const v = document.getElementById('v'), out = document.getElementById('out');
v.addEventListener('loadeddata', () => { out.textContent = JSON.stringify(
  {duration: v.duration, width: v.videoWidth, height: v.videoHeight, ready: v.readyState}); });
v.addEventListener('error', () => { out.textContent = JSON.stringify({error: v.error && v.error.code}); });
</script></body></html>"#;

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| Command::new(b).arg("--version").output().is_ok_and(|o| o.status.success()))
}

/// Loads `dir/index.html` and returns what the page wrote into `#out`.
fn probe(browser: &str, dir: &Path) -> String {
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--allow-file-access-from-files",
            "--virtual-time-budget=10000",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", dir.join("index.html").display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom.find("<pre id=\"out\">").map(|i| i + "<pre id=\"out\">".len()).unwrap_or(0);
    dom[start..].split('<').next().unwrap_or("").to_string()
}

#[test]
fn chromium_plays_the_clip_with_the_right_duration_and_size() {
    let Some(browser) = chromium() else {
        assert!(std::env::var_os("CI").is_none(), "CI must install chromium (see .ci/run)");
        eprintln!("note: no chromium installed; skipping the browser playback test");
        return;
    };
    let img = image::RgbImage::from_fn(300, 400, |x, y| image::Rgb([(x % 256) as u8, (y % 256) as u8, 120]));
    let spec = VideoSpec { duration_s: 3.0, motion: Motion::ZoomIn, ..VideoSpec::default() };
    let mp4 = render(&img, &spec).unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("clip.mp4"), mp4).unwrap();
    std::fs::write(dir.path().join("index.html"), PAGE).unwrap();

    let report = probe(browser, dir.path());
    let seen: serde_json::Value =
        serde_json::from_str(&report).unwrap_or_else(|_| panic!("page said: {report}"));
    assert!(seen.get("error").is_none(), "Chromium could not play the clip: {seen}");
    let (w, h) = atelier_video::output_size(300, 400, spec.max_side);
    assert_eq!((seen["width"].as_u64(), seen["height"].as_u64()), (Some(u64::from(w)), Some(u64::from(h))));
    let duration = seen["duration"].as_f64().unwrap();
    assert!((duration - 3.0).abs() < 0.1, "duration {duration}");
}
