//! A signing service (`[provenance] signing_url`): a tiny HTTP server here holds the key and
//! answers each signature, as DER the way KMSes do, or fails.

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use atelier_provenance::{Media, Origin, Provenance, Settings, Step, Trust, ValidationState};

/// How the service answers.
#[derive(Clone, Copy)]
enum Answer {
    Der,
    Raw,
    Error,
}

/// Serves signatures made with `key` until the test ends; its URL and a count of requests.
fn signing_service(chain: Vec<u8>, key: Vec<u8>, answer: Answer) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/sign", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    let signer = c2pa::create_signer::from_keys(&chain, &key, c2pa::SigningAlg::Es256, None).unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            // Headers, then Content-Length bytes of body.
            let (head_end, length) = loop {
                let n = stream.read(&mut buf).unwrap();
                request.extend_from_slice(&buf[..n]);
                if let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&request[..end]).to_ascii_lowercase();
                    assert!(head.contains("x-atelier-signing-algorithm: es256"), "{head}");
                    let length = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length: "))
                        .map(|v| v.trim().parse::<usize>().unwrap())
                        .unwrap();
                    break (end + 4, length);
                }
            };
            while request.len() < head_end + length {
                let n = stream.read(&mut buf).unwrap();
                request.extend_from_slice(&buf[..n]);
            }
            seen.fetch_add(1, Ordering::SeqCst);
            let raw = signer.sign(&request[head_end..head_end + length]).unwrap();
            let (status, body) = match answer {
                Answer::Der => ("200 OK", der(&raw)),
                Answer::Raw => ("200 OK", raw),
                Answer::Error => ("503 Service Unavailable", b"the HSM is asleep".to_vec()),
            };
            let head =
                format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
            stream.write_all(head.as_bytes()).unwrap();
            stream.write_all(&body).unwrap();
        }
    });
    (url, count)
}

/// An ECDSA `r‖s` signature as DER.
fn der(raw: &[u8]) -> Vec<u8> {
    let int = |n: &[u8]| {
        let trimmed: Vec<u8> = n.iter().copied().skip_while(|&b| b == 0).collect();
        let mut body = if trimmed.first().is_some_and(|&b| b >= 0x80) { vec![0] } else { Vec::new() };
        body.extend(trimmed);
        let mut out = vec![0x02, body.len() as u8];
        out.extend(body);
        out
    };
    let mut seq = int(&raw[..32]);
    seq.extend(int(&raw[32..]));
    let mut out = vec![0x30, seq.len() as u8];
    out.extend(seq);
    out
}

fn keys() -> (tempfile::TempDir, Vec<u8>, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    Provenance::open(&Settings::default(), dir.path()).unwrap();
    let chain = std::fs::read(dir.path().join("provenance/chain.pem")).unwrap();
    let key = std::fs::read(dir.path().join("provenance/key.pem")).unwrap();
    (dir, chain, key)
}

fn png() -> Vec<u8> {
    let image = image::RgbImage::from_fn(20, 10, |x, y| image::Rgb([x as u8 * 10, y as u8 * 20, 7]));
    let mut out = std::io::Cursor::new(Vec::new());
    image.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

#[test]
fn a_signing_service_signs_with_der_or_raw_answers() {
    let (dir, chain, key) = keys();
    for answer in [Answer::Der, Answer::Raw] {
        let (url, count) = signing_service(chain.clone(), key.clone(), answer);
        let settings = Settings {
            certificate: dir.path().join("provenance/chain.pem"),
            signing_url: url,
            ..Settings::default()
        };
        let provenance = Provenance::open(&settings, dir.path()).unwrap().unwrap();
        assert_eq!(provenance.trust(), &Trust::Configured);
        let origin = Origin {
            step: Step::Created,
            composite: false,
            tool: "virtual_model",
            engine: "builtin",
            trained: false,
            model: "test",
            workflow: None,
            run_id: "gen_remote",
            node: "virtual_model",
            seed: 1,
            index: 0,
            ingredients: Vec::new(),
        };
        let signed = provenance.sign(Media::Png, png(), &origin).unwrap();
        let read = atelier_provenance::read(Media::Png, &signed).unwrap();
        assert_eq!(read.state, ValidationState::Valid, "{:?}", read.codes);
        assert_eq!(count.load(Ordering::SeqCst), 2, "the probe at start and the output");
    }
}

#[test]
fn a_signing_service_that_fails_stops_the_start_with_its_answer() {
    let (dir, chain, key) = keys();
    let (url, _) = signing_service(chain, key, Answer::Error);
    let settings = Settings {
        certificate: dir.path().join("provenance/chain.pem"),
        signing_url: url,
        ..Settings::default()
    };
    let e = Provenance::open(&settings, dir.path()).unwrap_err().to_string();
    assert!(e.contains("503") && e.contains("the HSM is asleep"), "{e}");
    // Nothing listening at all.
    let settings = Settings { signing_url: "http://127.0.0.1:9/sign".into(), ..settings };
    let e = Provenance::open(&settings, dir.path()).unwrap_err().to_string();
    assert!(e.contains("the signing service"), "{e}");
}
