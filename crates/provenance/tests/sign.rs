//! Signed outputs read back with the SDK's reader: valid, with the actions, ingredients and
//! assertion documented, and invalid once a pixel changes.

use std::io::Cursor;

use atelier_provenance::{Ingredient, Media, Origin, Provenance, Settings, Step, Trust, ASSERTION_LABEL};
use serde_json::Value;

fn png(seed: u8, w: u32, h: u32) -> Vec<u8> {
    let image = image::RgbImage::from_fn(w, h, |x, y| image::Rgb([x as u8 ^ seed, y as u8, seed]));
    let mut out = Cursor::new(Vec::new());
    image.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

fn encode(bytes: &[u8], format: image::ImageFormat) -> Vec<u8> {
    let image = image::load_from_memory(bytes).unwrap();
    let mut out = Cursor::new(Vec::new());
    image.write_to(&mut out, format).unwrap();
    out.into_inner()
}

fn origin<'a>(step: Step, engine: &'a str, ingredients: Vec<Ingredient<'a>>) -> Origin<'a> {
    Origin {
        step,
        composite: false,
        tool: "upscale",
        engine,
        trained: engine != "builtin",
        model: "lanczos3",
        workflow: Some("Catalogue"),
        run_id: "wr_0123456789abcdef",
        node: "up",
        seed: u64::MAX - 7,
        index: 0,
        ingredients,
    }
}

fn generated() -> (tempfile::TempDir, Provenance) {
    let dir = tempfile::tempdir().unwrap();
    let provenance = Provenance::open(&Settings::default(), dir.path()).unwrap().unwrap();
    (dir, provenance)
}

/// The reader's report: state, active manifest.
fn read(media: Media, bytes: &[u8]) -> (c2pa::ValidationState, Value, Vec<String>) {
    let reader = c2pa::Reader::from_context(c2pa::Context::new())
        .with_stream(media.mime(), Cursor::new(bytes))
        .unwrap();
    let report: Value = serde_json::from_str(&reader.json()).unwrap();
    let active = report["active_manifest"].as_str().unwrap().to_string();
    let codes = reader.validation_status().unwrap_or_default().iter().map(|s| s.code().to_string()).collect();
    (reader.validation_state(), report["manifests"][active].clone(), codes)
}

fn assertion<'a>(manifest: &'a Value, label: &str) -> &'a Value {
    manifest["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["label"].as_str().is_some_and(|l| l.starts_with(label)))
        .map(|a| &a["data"])
        .unwrap_or_else(|| panic!("no {label} in {manifest:#}"))
}

#[test]
fn every_format_is_signed_valid_and_fails_once_a_pixel_changes() {
    let (_dir, provenance) = generated();
    let base = png(3, 48, 32);
    for (media, bytes) in [
        (Media::Png, base.clone()),
        (Media::Jpeg, encode(&base, image::ImageFormat::Jpeg)),
        (Media::Webp, encode(&base, image::ImageFormat::WebP)),
    ] {
        let input = png(9, 24, 16);
        let ingredients = vec![Ingredient { name: "image".into(), bytes: &input, parent: true }];
        let signed = provenance.sign(media, &bytes, &origin(Step::Edited, "builtin", ingredients)).unwrap();
        let (state, manifest, codes) = read(media, &signed);
        assert_eq!(state, c2pa::ValidationState::Valid, "{media:?}: {codes:?}");
        // The pixels are the same.
        let before = image::load_from_memory(&bytes).unwrap().to_rgba8();
        let after = image::load_from_memory(&signed).unwrap().to_rgba8();
        assert_eq!(before, after, "{media:?}");
        assert_eq!(
            atelier_provenance::source_type_in(&signed).as_deref(),
            Some("http://cv.iptc.org/newscodes/digitalsourcetype/algorithmicallyEnhanced")
        );

        let actions = assertion(&manifest, "c2pa.actions")["actions"].as_array().unwrap().clone();
        let names: Vec<&str> = actions.iter().map(|a| a["action"].as_str().unwrap()).collect();
        assert_eq!(names, ["c2pa.opened", "c2pa.edited"], "{media:?}");
        assert_eq!(
            actions[1]["digitalSourceType"],
            "http://cv.iptc.org/newscodes/digitalsourcetype/algorithmicallyEnhanced"
        );
        let ingredients = manifest["ingredients"].as_array().unwrap();
        assert_eq!(ingredients.len(), 1);
        assert_eq!(ingredients[0]["relationship"], "parentOf");
        assert_eq!(ingredients[0]["title"], "image");
        let ours = assertion(&manifest, ASSERTION_LABEL);
        assert_eq!(ours["tool"], "upscale");
        assert_eq!(ours["run_id"], "wr_0123456789abcdef");
        assert_eq!(ours["workflow"], "Catalogue");
        assert_eq!(ours["seed"], (u64::MAX - 7).to_string(), "every u64 seed, exactly");

        // One pixel changed: the data hash no longer matches.
        let mut image = image::load_from_memory(&signed).unwrap().to_rgb8();
        let pixel = image.get_pixel_mut(5, 5);
        pixel.0[0] = pixel.0[0].wrapping_add(128);
        let mut tampered = signed.clone();
        let reencoded = match media {
            Media::Png => encode_rgb(&image, image::ImageFormat::Png),
            Media::Jpeg => encode_rgb(&image, image::ImageFormat::Jpeg),
            _ => encode_rgb(&image, image::ImageFormat::WebP),
        };
        // Keep the signed file's metadata and swap a byte of its image data instead, which is
        // what a pixel edit that keeps the manifest amounts to.
        let _ = reencoded;
        let at = tampered.len() - 40;
        tampered[at] ^= 0x01;
        let (state, _, codes) = read(media, &tampered);
        assert_eq!(state, c2pa::ValidationState::Invalid, "{media:?}: {codes:?}");
    }
}

fn encode_rgb(image: &image::RgbImage, format: image::ImageFormat) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    image.write_to(&mut out, format).unwrap();
    out.into_inner()
}

#[test]
fn a_chain_of_nodes_keeps_each_step_as_an_ingredient_manifest() {
    let (_dir, provenance) = generated();
    let first =
        provenance.sign(Media::Png, png(1, 40, 40), &origin(Step::Created, "comfyui", vec![])).unwrap();
    let (_, manifest, _) = read(Media::Png, &first);
    let actions = &assertion(&manifest, "c2pa.actions")["actions"];
    assert_eq!(actions[0]["action"], "c2pa.created");
    assert_eq!(
        actions[0]["digitalSourceType"],
        "http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia"
    );

    let second = provenance
        .sign(
            Media::Png,
            png(2, 80, 80),
            &origin(
                Step::Edited,
                "builtin",
                vec![Ingredient { name: "image".into(), bytes: &first, parent: true }],
            ),
        )
        .unwrap();
    let reader = c2pa::Reader::from_context(c2pa::Context::new())
        .with_stream("image/png", Cursor::new(&second))
        .unwrap();
    assert_eq!(reader.validation_state(), c2pa::ValidationState::Valid);
    assert_eq!(reader.manifests().len(), 2, "the first node's manifest came along as the ingredient's");
    let report: Value = serde_json::from_str(&reader.json()).unwrap();
    let active = report["active_manifest"].as_str().unwrap();
    let ingredient = &report["manifests"][active]["ingredients"][0];
    let parent = ingredient["active_manifest"].as_str().expect("the ingredient names its manifest");
    assert_ne!(parent, active);
    assert!(report["manifests"][parent].is_object());
}

#[test]
fn a_created_output_lists_its_inputs_as_inputs_not_parents() {
    let (_dir, provenance) = generated();
    let (person, garment) = (png(4, 30, 60), png(5, 20, 20));
    let mut o = origin(
        Step::Created,
        "cog",
        vec![
            Ingredient { name: "model_image".into(), bytes: &person, parent: true },
            Ingredient { name: "garment_image".into(), bytes: &garment, parent: false },
        ],
    );
    o.composite = true;
    let signed = provenance.sign(Media::Png, png(6, 30, 60), &o).unwrap();
    let (state, manifest, codes) = read(Media::Png, &signed);
    assert_eq!(state, c2pa::ValidationState::Valid, "{codes:?}");
    let relationships: Vec<&str> = manifest["ingredients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["relationship"].as_str().unwrap())
        .collect();
    assert_eq!(relationships, ["inputTo", "inputTo"]);
    let actions = &assertion(&manifest, "c2pa.actions")["actions"];
    assert_eq!(
        actions[0]["digitalSourceType"],
        "http://cv.iptc.org/newscodes/digitalsourcetype/compositeWithTrainedAlgorithmicMedia"
    );
}

#[test]
fn the_generated_certificate_is_made_once_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let first = Provenance::open(&Settings::default(), dir.path()).unwrap().unwrap();
    assert_eq!(first.trust(), &Trust::Generated { dir: dir.path().join("provenance") });
    let chain = std::fs::read(dir.path().join("provenance/chain.pem")).unwrap();
    let _second = Provenance::open(&Settings::default(), dir.path()).unwrap().unwrap();
    assert_eq!(std::fs::read(dir.path().join("provenance/chain.pem")).unwrap(), chain);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(dir.path().join("provenance/key.pem")).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "the key is the owner's alone");
    }
}

#[test]
fn configured_files_sign_and_bad_settings_are_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    // The generated pair, given as files, is a configured signer.
    Provenance::open(&Settings::default(), dir.path()).unwrap();
    let keys = dir.path().join("provenance");
    let files = Settings {
        certificate: keys.join("chain.pem"),
        private_key: keys.join("key.pem"),
        ..Settings::default()
    };
    let configured = Provenance::open(&files, tempfile::tempdir().unwrap().path()).unwrap().unwrap();
    assert_eq!(configured.trust(), &Trust::Configured);

    let off = Settings { enabled: false, ..Settings::default() };
    assert!(Provenance::open(&off, dir.path()).unwrap().is_none());

    let refused = |settings: Settings, why: &str| {
        let e = Provenance::open(&settings, dir.path()).unwrap_err().to_string();
        assert!(e.contains(why), "{e}");
    };
    refused(Settings { algorithm: "rs1".into(), ..files.clone() }, "unknown algorithm");
    refused(Settings { private_key: keys.join("missing.pem"), ..files.clone() }, "missing.pem");
    refused(Settings { certificate: Default::default(), ..files.clone() }, "need the certificate");
    refused(
        Settings { private_key: Default::default(), ..files.clone() },
        "needs private_key or signing_url",
    );
    refused(Settings { signing_url: "http://127.0.0.1:9/sign".into(), ..files.clone() }, "not both");
    refused(
        Settings { private_key: Default::default(), signing_url: "ftp://kms/sign".into(), ..files.clone() },
        "not http or https",
    );
    // A key that is not the certificate's: found at start.
    let other = tempfile::tempdir().unwrap();
    Provenance::open(&Settings::default(), other.path()).unwrap();
    refused(
        Settings { private_key: other.path().join("provenance/key.pem"), ..files.clone() },
        "does not validate",
    );
    // A certificate file that is not a certificate.
    std::fs::write(dir.path().join("junk.pem"), "junk").unwrap();
    refused(Settings { certificate: dir.path().join("junk.pem"), ..files }, "cannot sign");
}
