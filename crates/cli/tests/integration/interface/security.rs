//! The security rows of docs/RELIABILITY.md, driven over HTTP as an attacker would: image
//! URLs aimed at this machine in every spelling, watched by a canary listener that counts
//! connections; inline images that are too big, malformed or not images; decompression and
//! animation bombs and format polyglots; API keys in the query string and in the logs.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::common::{png_base64, png_bytes, TestApp};
use base64::Engine as _;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// TCP listeners on one port that count the connections they accept and answer each with a
/// small PNG, so a connection that should never happen would also make a run succeed.
struct Canary {
    port: u16,
    hits: Arc<AtomicUsize>,
    /// The listening addresses that a self-test connection reached.
    reachable: Vec<String>,
}

impl Canary {
    /// Listens on `0.0.0.0:PORT` (every local IPv4 address: 127.0.0.1, the rest of
    /// 127.0.0.0/8, 0.0.0.0, IPv4-mapped IPv6) and, where the system has IPv6, `[::1]:PORT`
    /// (`[::1]`, `[::]`). `port` 0 picks a free one; `None` when `port` is taken.
    async fn start(port: u16) -> Option<Canary> {
        let v4 = tokio::net::TcpListener::bind((Ipv4Addr::UNSPECIFIED, port)).await.ok()?;
        let port = v4.local_addr().unwrap().port();
        let v6 = tokio::net::TcpListener::bind((Ipv6Addr::LOCALHOST, port)).await.ok();
        let hits = Arc::new(AtomicUsize::new(0));
        for listener in std::iter::once(v4).chain(v6) {
            let hits = hits.clone();
            tokio::spawn(async move {
                let png = png_bytes(8, 8);
                while let Ok((mut socket, _)) = listener.accept().await {
                    hits.fetch_add(1, Ordering::SeqCst);
                    let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", png.len());
                    let png = png.clone();
                    tokio::spawn(async move {
                        // Read the request head first: closing on unread bytes would reset.
                        let mut request = Vec::new();
                        let mut buf = [0u8; 1024];
                        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                            let read = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut buf));
                            match read.await {
                                Ok(Ok(n)) if n > 0 => request.extend_from_slice(&buf[..n]),
                                _ => return,
                            }
                        }
                        let _ = socket.write_all(head.as_bytes()).await;
                        let _ = socket.write_all(&png).await;
                    });
                }
            });
        }
        // Which spellings can reach it at all (a platform may lack 127.0.0.2 or IPv6).
        let mut reachable = Vec::new();
        for ip in [
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)),
            IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            IpAddr::V6(Ipv6Addr::LOCALHOST),
            IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        ] {
            let connect = tokio::net::TcpStream::connect(SocketAddr::new(ip, port));
            if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(2), connect).await {
                reachable.push(ip.to_string());
            }
        }
        // Let the self-test connections be counted, then start from zero.
        tokio::time::sleep(Duration::from_millis(100)).await;
        hits.store(0, Ordering::SeqCst);
        Some(Canary { port, hits, reachable })
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// Host names other than `localhost` that this machine resolves to a loopback address
/// (from /etc/hosts, and its own host name): the "name that resolves to loopback" case.
fn loopback_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_to_string("/etc/hosts")
        .unwrap_or_default()
        .lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let ip: IpAddr = words.next()?.parse().ok()?;
            ip.is_loopback().then(|| words.map(str::to_string).collect::<Vec<_>>())
        })
        .flatten()
        .filter(|n| !n.eq_ignore_ascii_case("localhost") && !n.to_ascii_lowercase().ends_with(".localhost"))
        .collect();
    if let Ok(host) = std::fs::read_to_string("/etc/hostname") {
        let host = host.trim().to_string();
        let resolves_to_loopback = std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), 80))
            .map(|mut addrs| addrs.any(|a| a.ip().is_loopback()))
            .unwrap_or(false);
        if !host.is_empty() && resolves_to_loopback {
            names.push(host);
        }
    }
    names.sort();
    names.dedup();
    names
}

/// Every spelling of "this machine" that an image URL can use, at `port`.
fn spellings(port: u16) -> Vec<String> {
    let p = port;
    let mut urls: Vec<String> = [
        "http://127.0.0.1:{p}/x.png",
        "https://127.0.0.1:{p}/x.png",
        "HTTP://127.0.0.1:{p}/x.png",
        "  http://127.0.0.1:{p}/x.png\n",
        "http://0.0.0.0:{p}/x.png",
        "http://0:{p}/x.png",
        "http://[::]:{p}/x.png",
        "http://[::1]:{p}/x.png",
        "http://[0:0:0:0:0:0:0:1]:{p}/x.png",
        "http://[::ffff:127.0.0.1]:{p}/x.png",
        "http://[::ffff:7f00:1]:{p}/x.png",
        "http://[::127.0.0.1]:{p}/x.png",
        "http://[64:ff9b::127.0.0.1]:{p}/x.png",
        "http://2130706433:{p}/x.png",
        "http://0x7f000001:{p}/x.png",
        "http://0x7f.1:{p}/x.png",
        "http://017700000001:{p}/x.png",
        "http://0177.0.0.1:{p}/x.png",
        "http://127.1:{p}/x.png",
        "http://127.0.1:{p}/x.png",
        "http://127.000.000.001:{p}/x.png",
        "http://127.0.0.1.:{p}/x.png",
        "http://127.0.0.2:{p}/x.png",
        "http://127.255.255.254:{p}/x.png",
        "http://%31%32%37.0.0.1:{p}/x.png",
        "http://\u{2460}\u{2461}\u{2466}.0.0.1:{p}/x.png",
        "http://good@127.0.0.1:{p}/x.png",
        "http://good:secret@127.0.0.1:{p}/x.png",
        "http://8.8.8.8@127.0.0.1:{p}/x.png",
        "http://127.0.0.1:{p}#@8.8.8.8/x.png",
        "http://localhost:{p}/x.png",
        "http://LOCALHOST:{p}/x.png",
        "http://localhost.:{p}/x.png",
        "http://images.localhost:{p}/x.png",
    ]
    .iter()
    .map(|t| t.replace("{p}", &p.to_string()))
    .collect();
    urls.extend(loopback_names().iter().map(|name| format!("http://{name}:{p}/x.png")));
    urls
}

/// The same image value through the three ways in: a v3 node run, a v3 workflow run and a v2
/// run; each answer with the field it should name.
fn submissions(value: &str) -> [(&'static str, Value, &'static str); 3] {
    [
        ("/api/v3/run", json!({"type": "node", "target": "upscale", "input": {"image": value}}), "image"),
        (
            "/api/v3/run",
            json!({"type": "workflow", "target": "product-reframes", "input": {"Shoot.product_image": value}}),
            "Shoot.product_image",
        ),
        (
            "/api/v2/tryon/run",
            json!({"category": "top", "model_image": value, "garment_image": png_base64(8, 8)}),
            "model_image",
        ),
    ]
}

/// Row 1: no spelling of a loopback or unspecified address, no host name that resolves to
/// one, no other scheme and no disallowed port gets a connection out of the service: every
/// request is refused at submission with 422 `InvalidInput` naming the field, nothing is
/// created or charged, and the canary, with workers running, counts zero connections.
#[tokio::test]
async fn ssrf_canary_sees_no_connection_for_any_spelling_of_this_machine() {
    let canary = Canary::start(0).await.expect("a free port");
    let app = TestApp::start().await;
    let started = Instant::now();
    let mut slowest = Duration::ZERO;
    let mut refused = 0;
    let p = canary.port;

    let schemes = [
        "file:///etc/passwd".to_string(),
        format!("file://127.0.0.1:{p}/x.png"),
        format!("ftp://127.0.0.1:{p}/x.png"),
        format!("gopher://127.0.0.1:{p}/_GET%20/x.png"),
        format!("dict://127.0.0.1:{p}/info"),
        format!("ldap://127.0.0.1:{p}/x"),
        format!("sftp://127.0.0.1:{p}/x.png"),
        format!("tftp://127.0.0.1:{p}/x.png"),
        format!("ws://127.0.0.1:{p}/x.png"),
        format!("jar:http://127.0.0.1:{p}/x.jar!/x.png"),
        "javascript:alert(1)".to_string(),
    ];
    let mut cases: Vec<(String, &str)> = spellings(p).into_iter().map(|u| (u, "InvalidInput")).collect();
    cases.extend(schemes.into_iter().map(|u| (u, "InvalidInput")));
    // Not URLs at all (no scheme): not image values either.
    cases.push((format!("//127.0.0.1:{p}/x.png"), "InvalidImage"));
    cases.push((format!("127.0.0.1:{p}/x.png"), "InvalidImage"));

    for (value, name) in &cases {
        for (path, body, field) in submissions(value) {
            let t = Instant::now();
            let (code, answer) = app.post(path, &body).await;
            slowest = slowest.max(t.elapsed());
            assert_eq!(code, 422, "{value:?} via {path}: {answer}");
            assert_eq!(answer["id"], Value::Null);
            assert_eq!(answer["error"]["name"], *name, "{value:?} via {path}: {answer}");
            assert_eq!(answer["error"]["field"], field, "{value:?} via {path}: {answer}");
            refused += 1;
        }
    }

    // A URL saved inside a workflow is checked when the workflow runs.
    let flow = json!({"nodes": [{"name": "Up", "tool": "upscale",
        "params": {"image": format!("http://127.0.0.1:{p}/x.png")}}], "outputs": {"big": "Up.output"}});
    let (code, saved) = app.call("PUT", "/api/v3/workflow/baked-in", Some(&app.key), Some(&flow)).await;
    assert_eq!(code, 200, "{saved}");
    let (code, answer) =
        app.post("/api/v3/run", &json!({"type": "workflow", "target": "baked-in", "input": {}})).await;
    assert_eq!((code, answer["error"]["name"].as_str()), (422, Some("InvalidInput")), "{answer}");
    assert_eq!(answer["error"]["field"], "Up.image");
    refused += 1;

    // Workers are running: had anything been queued, it would have been fetched by now.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        app.store()
            .list_runs(1, &atelier_store::RunQuery { limit: 10, ..Default::default() })
            .await
            .unwrap()
            .is_empty(),
        "nothing was created"
    );
    assert_eq!(app.balance().await, 1000, "nothing was charged");
    assert_eq!(canary.hits(), 0, "connections reached the canary");
    eprintln!(
        "SSRF: {refused} requests ({} values) refused, canary connections {}, slowest answer {slowest:?}, \
         all in {:?}; canary reachable at {:?}; loopback names {:?}",
        cases.len(),
        canary.hits(),
        started.elapsed(),
        canary.reachable,
        loopback_names()
    );
}

/// Row 1, ports: a listener on a port the allow-list refuses gets no connection even when
/// private addresses are allowed; the same service does fetch from the allowed canary port
/// (the control that shows the canary would have counted).
#[tokio::test]
async fn disallowed_ports_are_refused_even_when_private_addresses_are_allowed() {
    let canary = Canary::start(0).await.expect("a free port");
    // A port the Fetch standard calls bad (IRC, X11, SIP, amanda): the first one free here.
    let mut bad = None;
    for port in [6666, 6665, 6667, 6668, 6669, 6697, 10080, 6000, 5060, 4190] {
        if let Some(c) = Canary::start(port).await {
            bad = Some(c);
            break;
        }
    }
    let bad = bad.expect("one of the bad ports is free");
    let strict = TestApp::start().await;
    let lax = TestApp::start_with(|c| c.inputs.allow_private_addresses = true, None, 10).await;
    for app in [&strict, &lax] {
        for value in
            [format!("http://127.0.0.1:{}/x.png", bad.port), format!("http://localhost:{}/x.png", bad.port)]
        {
            for (path, body, field) in submissions(&value) {
                let (code, answer) = app.post(path, &body).await;
                assert_eq!(code, 422, "{value} via {path}: {answer}");
                assert_eq!(answer["error"]["name"], "InvalidInput", "{value}: {answer}");
                assert_eq!(answer["error"]["field"], field);
            }
        }
    }
    let (_, answer) = lax
        .post(
            "/api/v3/run",
            &json!({"type": "node", "target": "upscale", "input": {"image": format!("http://127.0.0.1:{}/x", bad.port)}}),
        )
        .await;
    assert!(answer["error"]["message"].as_str().unwrap().contains(&format!("port {}", bad.port)), "{answer}");

    // Control: the allowed port is fetched when private addresses are allowed.
    let body = json!({"type": "node", "target": "upscale",
        "input": {"image": format!("http://127.0.0.1:{}/x.png", canary.port)}});
    let status = lax.wait(&lax.run(&body).await).await;
    assert_eq!(status["overall_status"], "succeeded", "{status}");
    assert_eq!(bad.hits(), 0, "connections reached the bad-port canary");
    assert!(canary.hits() >= 1, "the control fetch reached the canary");
    eprintln!(
        "ports: bad port {} saw {} connections; control canary saw {}",
        bad.port,
        bad.hits(),
        canary.hits()
    );
}

/// Row 3 (at submission): inline images over `inputs.max_bytes`, malformed base64, data URIs
/// of other media types, and files that are not JPEG, PNG, WebP or GIF (SVG, HTML, PDF, BMP,
/// TIFF) are refused with 422 `InvalidImage` naming the field, quickly, without a 5xx, and
/// nothing is created or charged.
#[tokio::test]
async fn inline_images_too_big_malformed_or_of_another_format_are_refused_at_submission() {
    let max = 4096;
    let app = TestApp::start_with(|c| c.inputs.max_bytes = max, None, 100).await;
    let mut over = b"\x89PNG\r\n\x1a\n".to_vec();
    over.resize(max as usize + 1, 0);
    let mut huge = b"\x89PNG\r\n\x1a\n".to_vec();
    huge.resize(3 * 1024 * 1024, 7);
    let svg =
        br#"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(1)</script></svg>"#;
    let html = b"<!DOCTYPE html><html><body><script>alert(document.domain)</script></body></html>";
    let cases: Vec<(&str, String)> = vec![
        ("1 byte over inputs.max_bytes", b64(&over)),
        ("1 byte over, as a data URI", format!("data:image/png;base64,{}", b64(&over))),
        ("3 MiB", b64(&huge)),
        ("not base64", "!!!!".into()),
        ("base64 with a stray character", format!("{}$", b64(&png_bytes(8, 8)))),
        ("data URI with invalid base64", "data:image/png;base64,!!!".into()),
        ("data URI that is not base64", "data:image/png,rawbytes".into()),
        ("empty data URI", "data:image/png;base64,".into()),
        ("data URI of text/html", format!("data:text/html;base64,{}", b64(html))),
        ("data URI of SVG", format!("data:image/svg+xml;base64,{}", b64(svg))),
        ("SVG as base64", b64(svg)),
        ("HTML as base64", b64(html)),
        ("PDF", b64(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj<<>>endobj\n")),
        ("BMP", b64(b"BM\x46\x00\x00\x00\x00\x00\x00\x00\x36\x00\x00\x00\x28\x00")),
        ("TIFF", b64(b"II*\x00\x08\x00\x00\x00\x00\x00")),
        ("text labelled image/png", format!("data:image/png;base64,{}", b64(b"hello world"))),
    ];
    let mut slowest = Duration::ZERO;
    for (what, value) in &cases {
        for (path, body, field) in submissions(value) {
            let t = Instant::now();
            let (code, answer) = app.post(path, &body).await;
            slowest = slowest.max(t.elapsed());
            assert_eq!(code, 422, "{what} via {path}: {answer}");
            assert_eq!(answer["error"]["name"], "InvalidImage", "{what} via {path}: {answer}");
            assert_eq!(answer["error"]["field"], field, "{what}");
        }
    }
    assert!(slowest < Duration::from_secs(2), "slowest refusal took {slowest:?}");
    assert!(
        app.store()
            .list_runs(1, &atelier_store::RunQuery { limit: 10, ..Default::default() })
            .await
            .unwrap()
            .is_empty(),
        "nothing was created"
    );
    assert_eq!(app.balance().await, 100, "nothing was charged");
    eprintln!("inline: {} values x 3 endpoints refused, slowest {slowest:?}", cases.len());
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xedb8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

fn png_chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut out = (data.len() as u32).to_be_bytes().to_vec();
    let mut body = kind.to_vec();
    body.extend_from_slice(data);
    out.extend_from_slice(&body);
    out.extend_from_slice(&crc32(&body).to_be_bytes());
    out
}

/// A PNG whose header says `w`×`h`, followed by `idat` and `extra` chunks.
fn png_claiming(w: u32, h: u32, extra: &[Vec<u8>]) -> Vec<u8> {
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = w.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    png.extend(png_chunk(b"IHDR", &ihdr));
    for chunk in extra {
        png.extend_from_slice(chunk);
    }
    png.extend(png_chunk(b"IDAT", &[0x78, 0x9c, 0x00]));
    png.extend(png_chunk(b"IEND", &[]));
    png
}

/// A GIF of `frames` 1×1 frames on a `w`×`h` logical screen, written block by block.
fn gif_frames(frames: usize, w: u16, h: u16) -> Vec<u8> {
    let mut gif = b"GIF89a".to_vec();
    gif.extend_from_slice(&w.to_le_bytes());
    gif.extend_from_slice(&h.to_le_bytes());
    gif.extend_from_slice(b"\x80\x00\x00\x00\x00\x00\xff\xff\xff");
    for _ in 0..frames {
        gif.extend_from_slice(b"\x2c\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02\x44\x01\x00");
    }
    gif.push(0x3b);
    gif
}

/// A real, valid 16×16 GIF with an HTML page in a comment extension and after its trailer:
/// an image to a decoder, a page to a careless content sniffer.
fn gif_html_polyglot() -> Vec<u8> {
    let mut gif = Vec::new();
    {
        let mut enc = image::codecs::gif::GifEncoder::new(&mut gif);
        let frame = image::RgbaImage::from_pixel(16, 16, image::Rgba([200, 30, 60, 255]));
        enc.encode_frame(image::Frame::new(frame)).unwrap();
    }
    let html = b"<html><body><script>alert(document.domain)</script></body></html>";
    // Comment extension right after the header and logical screen descriptor (and the
    // global colour table, when there is one).
    let packed = gif[10];
    let table = if packed & 0x80 != 0 { 3 * (1usize << ((packed & 7) + 1)) } else { 0 };
    let at = 13 + table;
    let mut comment = vec![0x21, 0xfe, html.len() as u8];
    comment.extend_from_slice(html);
    comment.push(0);
    gif.splice(at..at, comment);
    gif.extend_from_slice(html);
    gif
}

/// Row 3 (at execution): files that pass the magic-byte check but are bombs or garbage —
/// dimension bombs (PNG, GIF), animation bombs (ten thousand GIF frames, an APNG declaring
/// four billion), a WebP canvas of 16 million pixels a side, and PNG/JPEG/WebP/GIF magic
/// followed by garbage or HTML — are accepted, then fail their node with `InvalidImage`
/// within seconds, cost nothing, and never a 5xx. A valid GIF that is also an HTML page is
/// re-encoded (its bytes never reach an output), and a bypassed node that copies it through
/// serves it as `image/gif` with `X-Content-Type-Options: nosniff`.
#[tokio::test]
async fn bombs_and_polyglots_fail_their_node_quickly_and_are_never_served_as_pages() {
    let app = TestApp::start().await;
    let mut actl = u32::MAX.to_be_bytes().to_vec();
    actl.extend_from_slice(&0u32.to_be_bytes());
    let mut webp = b"RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x00\x00\x00\x00".to_vec();
    webp.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
    let len = (webp.len() - 8) as u32;
    webp[4..8].copy_from_slice(&len.to_le_bytes());
    let garbage: Vec<u8> = (0..4000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let with_magic = |magic: &[u8]| [magic, &garbage].concat();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("PNG declaring 65535x65535", png_claiming(65_535, 65_535, &[])),
        ("PNG declaring 8000x6000 (48 MP)", png_claiming(8000, 6000, &[])),
        ("GIF screen of 60000x60000", gif_frames(1, 60_000, 60_000)),
        ("GIF of 10000 frames", gif_frames(10_000, 1, 1)),
        ("APNG declaring 4294967295 frames", png_claiming(16, 16, &[png_chunk(b"acTL", &actl)])),
        ("WebP canvas of 16777216 a side", webp),
        ("PNG magic, then garbage", with_magic(b"\x89PNG\r\n\x1a\n")),
        ("JPEG magic, then garbage", with_magic(b"\xff\xd8\xff\xe0")),
        ("WebP magic, then garbage", with_magic(b"RIFF\x00\x10\x00\x00WEBPVP8 ")),
        ("GIF magic, then HTML", b"GIF89a<html><script>alert(1)</script></html>".to_vec()),
    ];
    let mut slowest = Duration::ZERO;
    for (what, bytes) in &cases {
        let t = Instant::now();
        let body = json!({"type": "node", "target": "upscale", "input": {"image": b64(bytes)}});
        let (code, answer) = app.post("/api/v3/run", &body).await;
        assert_eq!(code, 200, "{what}: accepted by its magic bytes: {answer}");
        let status = app.wait(answer["id"].as_str().unwrap()).await;
        let took = t.elapsed();
        slowest = slowest.max(took);
        assert_eq!(status["overall_status"], "failed", "{what}: {status}");
        assert_eq!(status["error"]["name"], "InvalidImage", "{what}: {status}");
        assert!(took < Duration::from_secs(10), "{what}: {took:?}");
        eprintln!("  {what}: failed with InvalidImage in {took:?}: {}", status["error"]["message"]);
    }
    assert_eq!(app.balance().await, 1000, "failed nodes cost nothing");

    // A valid GIF that is also a page: the tool reads the image, the output is a new PNG.
    let polyglot = gif_html_polyglot();
    let id = app.run(&json!({"type": "node", "target": "upscale", "input": {"image": b64(&polyglot)}})).await;
    let status = app.wait(&id).await;
    assert_eq!(status["overall_status"], "succeeded", "{status}");
    let (_, headers, bytes) = app.fetch(status["output"][0].as_str().unwrap()).await;
    assert_eq!(headers["content-type"], "image/png");
    assert!(!bytes.windows(7).any(|w| w == b"<script"), "the page did not reach the output");
    assert_eq!(super::common::decode(&bytes).width(), 32);

    // Copied through by a bypassed node, byte for byte: served as a GIF, never sniffed.
    let flow = json!({"nodes": [{"name": "Up", "tool": "upscale", "mode": "bypassed"}],
        "outputs": {"copy": "Up.output"}});
    let (code, saved) = app.call("PUT", "/api/v3/workflow/pass-through", Some(&app.key), Some(&flow)).await;
    assert_eq!(code, 200, "{saved}");
    let id = app
        .run(&json!({"type": "workflow", "target": "pass-through", "input": {"Up.image": b64(&polyglot)}}))
        .await;
    let status = app.wait(&id).await;
    assert_eq!(status["overall_status"], "succeeded", "{status}");
    let url = status["outputs"]["copy"].as_str().unwrap();
    let (code, headers, bytes) = app.fetch(url).await;
    assert_eq!(code, 200);
    assert_eq!(bytes, polyglot);
    assert_eq!(headers["content-type"], "image/gif");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    eprintln!("bombs: {} files failed with InvalidImage, slowest {slowest:?}", cases.len());
}

/// Row 4: an API key in the query string, under any usual name or any name with a value
/// shaped like a key, is refused with 400 `InvalidRequest` telling the caller to use the
/// header — with or without a valid header, before anything else — and never authenticates.
#[tokio::test]
async fn an_api_key_in_the_query_string_is_refused_and_never_authenticates() {
    let app = TestApp::start().await;
    let key = app.key.clone();
    let run = json!({"type": "node", "target": "upscale", "input": {"image": png_base64(8, 8)}});
    let endpoints: [(&str, &str, Option<&Value>); 5] = [
        ("GET", "/api/v2/user/tokens", None),
        ("GET", "/api/v3/workflows", None),
        ("GET", "/api/v3/runs", None),
        ("POST", "/api/v3/run", Some(&run)),
        ("POST", "/api/v2/tryon/run", Some(&run)),
    ];
    let names = [
        "api_key",
        "key",
        "x-api-key",
        "X-API-KEY",
        "apikey",
        "api-key",
        "access_token",
        "token",
        "api%5Fkey",
    ];
    let mut refused = 0;
    for (method, path, body) in endpoints {
        let mut queries: Vec<String> = names.iter().map(|n| format!("{n}={key}")).collect();
        queries.push(format!("limit=5&anything={key}"));
        for query in queries {
            for header in [None, Some(key.as_str()), Some("atl_wrong")] {
                let (code, answer) = app.call(method, &format!("{path}?{query}"), header, body).await;
                assert_eq!(code, 400, "{method} {path}?{query} header {header:?}: {answer}");
                assert_eq!(answer["error"]["name"], "InvalidRequest");
                let message = answer["error"]["message"].as_str().unwrap();
                assert!(message.contains("X-API-KEY header"), "{message}");
                assert!(!message.contains(&key[4..]), "the key is not echoed: {message}");
                refused += 1;
            }
        }
    }
    assert!(
        app.store()
            .list_runs(1, &atelier_store::RunQuery { limit: 10, ..Default::default() })
            .await
            .unwrap()
            .is_empty(),
        "nothing was created"
    );
    assert_eq!(app.balance().await, 1000);
    // Ordinary query parameters are not mistaken for keys.
    let (code, _) = app.get("/api/v3/runs?limit=5").await;
    assert_eq!(code, 200);
    eprintln!("query keys: {refused} requests refused with 400");
}

/// Row 4: `atelier serve` logging everything (`RUST_LOG=trace`) while keys are used in the
/// header, in the query string and in an `Authorization` header, valid and
/// revoked: no key appears anywhere in its output, while the request log lines do.
#[test]
fn api_keys_never_appear_in_the_logs_even_at_trace_level() {
    use std::process::{Command, Stdio};
    const BIN: &str = env!("CARGO_BIN_EXE_atelier");
    let dir = tempfile::tempdir().unwrap();
    let admin = |args: &[&str]| {
        let out = Command::new(BIN).arg("--data-dir").arg(dir.path()).args(args).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let created: Value =
        serde_json::from_str(&admin(&["admin", "account", "create", "logs", "--tokens", "10", "--json"]))
            .unwrap();
    let key = created["api_key"].as_str().unwrap().to_string();
    let revoked = admin(&["admin", "key", "create", "logs"]).trim().to_string();
    admin(&["admin", "key", "revoke", &revoked]);

    let log_path = dir.path().join("serve.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut child = Command::new(BIN)
        .arg("--data-dir")
        .arg(dir.path())
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("RUST_LOG", "trace")
        .env("NO_COLOR", "1")
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let base = loop {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        if let Some(line) = text.lines().find_map(|l| l.strip_prefix("Atelier listening on ")) {
            break line.trim().to_string();
        }
        assert!(
            Instant::now() < deadline && child.try_wait().unwrap().is_none(),
            "serve did not start: {text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let http = reqwest::Client::new();
        let send = |method: &str, path: String, header: Option<(&str, String)>, body: Option<Value>| {
            let mut request = http.request(method.parse().unwrap(), format!("{base}{path}"));
            if let Some((name, value)) = header {
                request = request.header(name, value);
            }
            if let Some(body) = body {
                request = request.json(&body);
            }
            async move {
                let response = request.send().await.unwrap();
                let code = response.status().as_u16();
                (code, response.json::<Value>().await.unwrap_or(Value::Null))
            }
        };
        let header = |k: &str| Some(("X-API-KEY", k.to_string()));
        let run = json!({"type": "node", "target": "upscale", "input": {"image": png_base64(16, 16)}});
        assert_eq!(send("GET", "/api/v2/user/tokens".into(), header(&key), None).await.0, 200);
        let (code, handle) = send("POST", "/api/v3/run".into(), header(&key), Some(run.clone())).await;
        assert_eq!(code, 200, "{handle}");
        let id = handle["id"].as_str().unwrap().to_string();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (_, status) = send("GET", format!("/api/v3/status/{id}"), header(&key), None).await;
            if status["overall_status"] == "succeeded" {
                break;
            }
            assert!(Instant::now() < deadline, "{status}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(send("GET", format!("/api/v2/user/tokens?api_key={key}"), None, None).await.0, 400);
        assert_eq!(send("POST", format!("/api/v3/run?key={key}"), header(&key), Some(run)).await.0, 400);
        assert_eq!(send("GET", "/api/v2/user/tokens".into(), header(&revoked), None).await.0, 401);
        let bearer = Some(("Authorization", format!("Bearer {key}")));
        assert_eq!(send("GET", "/api/v2/user/tokens".into(), bearer, None).await.0, 401);
    });
    child.kill().unwrap();
    child.wait().unwrap();

    let text = std::fs::read_to_string(&log_path).unwrap();
    for (what, secret) in [("the key", &key), ("the revoked key", &revoked)] {
        assert!(!text.contains(secret.as_str()), "{what} is in the log");
        assert!(!text.contains(&secret[4..]), "the secret part of {what} is in the log");
        assert!(!text.contains(&secret[4..20]), "a piece of {what} is in the log");
    }
    // The requests were logged, so the check above looked at something.
    assert!(text.contains("url.path=/api/v2/user/tokens"), "no request spans in the log");
    assert!(text.contains("node finished"), "no worker lines in the log");
    eprintln!("logs: {} lines ({} bytes) at trace level, no key in them", text.lines().count(), text.len());
}

/// Row 4.5: nothing of one account is visible to another through the interface. Its runs
/// (v3 and v2), its saved workflows (describe, run, estimate, delete, list) answer 404 as if
/// they did not exist, never 403, and nothing is charged to either account. Output URLs are
/// capability URLs (docs/decisions/outputs-and-retention.md): the owner's works without a key, and a file path with
/// another run id, or another output's name, is 404.
#[tokio::test]
async fn another_accounts_runs_workflows_and_outputs_are_not_found() {
    let app = TestApp::start().await;
    let flow = json!({
        "variables": {"photo": {"type": "image", "targets": ["Up.image"]}},
        "nodes": [{"name": "Up", "tool": "upscale", "params": {"scale": 2}}],
        "outputs": {"big": "Up.output"}
    });
    let key = app.key.clone();
    let (code, _) = app.call("PUT", "/api/v3/workflow/private-flow", Some(&key), Some(&flow)).await;
    assert_eq!(code, 200);
    let run_body =
        json!({"type": "workflow", "target": "private-flow", "input": {"photo": png_base64(8, 8)}});
    let v3 = app.run(&run_body).await;
    let status = app.wait(&v3).await;
    let output = status["outputs"]["big"].as_str().unwrap().to_string();
    let (_, v2) = app.post("/api/v2/sketchtodress/run", &json!({"image": png_base64(16, 16)})).await;
    let v2 = v2["id"].as_str().unwrap().to_string();
    let balance = app.balance().await;

    let other = app.other_key(50).await;
    let not_found = |answer: (u16, Value), name: &str, what: &str| {
        assert_eq!((answer.0, answer.1["error"]["name"].as_str()), (404, Some(name)), "{what}: {}", answer.1);
    };
    for (method, path) in [("GET", format!("/api/v3/status/{v3}")), ("POST", format!("/api/v3/cancel/{v3}"))]
    {
        not_found(app.call(method, &path, Some(&other), None).await, "RunNotFound", &path);
    }
    let path = format!("/api/v2/sketchtodress/status/{v2}");
    not_found(app.call("GET", &path, Some(&other), None).await, "RunNotFound", &path);
    for (method, path, body) in [
        ("GET", "/api/v3/workflow/private-flow", None),
        ("DELETE", "/api/v3/workflow/private-flow", None),
        ("POST", "/api/v3/run", Some(&run_body)),
        ("POST", "/api/v3/estimate", Some(&run_body)),
    ] {
        not_found(app.call(method, path, Some(&other), body).await, "WorkflowNotFound", path);
    }
    let (_, list) = app.call("GET", "/api/v3/workflows", Some(&other), None).await;
    assert!(list.as_array().unwrap().iter().all(|w| w["name"] != "private-flow"), "{list}");

    // The owner's output answers without a key; other paths under /files/ do not.
    let (code, _, bytes) = app.fetch(&output).await;
    assert_eq!(code, 200);
    assert!(!bytes.is_empty());
    let other_run = output.replacen(&v3, "gen_0000000000000000", 1);
    assert_ne!(other_run, output, "the output URL names its run: {output}");
    let other_name = format!("{}/other.png", &output[..output.rfind('/').unwrap()]);
    for url in [other_run, other_name] {
        let (code, _, body) = app.fetch(&url).await;
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!((code, body["error"]["name"].as_str().unwrap()), app.no_such_file(), "{url}");
    }

    // Still there for its owner, and nobody was charged for the other account's attempts.
    assert_eq!(app.get(&format!("/api/v3/status/{v3}")).await.0, 200);
    assert_eq!(app.get("/api/v3/workflow/private-flow").await.0, 200);
    assert_eq!(app.balance().await, balance);
    let (_, tokens) = app.call("GET", "/api/v2/user/tokens", Some(&other), None).await;
    assert_eq!(tokens["tokens"], 50, "{tokens}");
}
