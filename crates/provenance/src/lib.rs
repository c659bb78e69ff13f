//! Content Credentials on Atelier's outputs: a signed C2PA manifest embedded in every image
//! and video a node makes, saying how it was made, and the same fact as IPTC metadata in its
//! XMP packet for readers that do not read C2PA.
//!
//! A manifest ([`Origin`]) holds:
//! - a `c2pa.actions` assertion: `c2pa.created` for an output a tool generated, or
//!   `c2pa.opened` of the photo it edited and then `c2pa.edited`, each with the IPTC digital
//!   source type that fits the tool and its engine ([`SourceType::of`]);
//! - an ingredient per input image, with its hash: the edited photo is the `parentOf`
//!   ingredient, the others are `inputTo`. An input that carries credentials of its own (the
//!   output of the node before, in a workflow) brings its manifest along, so the chain from the
//!   first node to the last survives in the last output;
//! - an `atelier.generation` assertion: the tool, engine, model or template, workflow, run,
//!   node and seed. No input values but the ingredients' hashes.
//!
//! The manifest is signed with the operator's certificate chain and key, by a remote signing
//! service holding the key, or by a certificate Atelier generates at first start, which
//! validators show as untrusted ([`Trust`]).

mod keys;
mod manifest;
mod remote;
mod xmp;

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use c2pa::ValidationState;
pub use manifest::{Ingredient, Origin, Step, ASSERTION_LABEL};
pub use xmp::source_type_in;

/// The `[provenance]` settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Sign every image and video output (default on).
    pub enabled: bool,
    /// The certificate chain (PEM, the signing certificate first). Empty: a certificate
    /// Atelier generates in its data directory at first start, untrusted by validators.
    pub certificate: PathBuf,
    /// The signing key (PKCS#8 PEM), with `certificate`; not needed with `signing_url`.
    pub private_key: PathBuf,
    /// `es256` (default), `es384`, `es512`, `ps256`, `ps384`, `ps512` or `ed25519`: the
    /// algorithm of the key.
    pub algorithm: String,
    /// A signing service that holds the key (a KMS or HSM in front of an HTTP endpoint): each
    /// signature is `POST`ed there ([`remote`]). With `certificate`, instead of `private_key`.
    pub signing_url: String,
    /// A timestamp authority (RFC 3161) that countersigns each manifest's signature, so the
    /// credentials stay valid after the certificate expires.
    pub timestamp_url: String,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            enabled: true,
            certificate: PathBuf::new(),
            private_key: PathBuf::new(),
            algorithm: "es256".into(),
            signing_url: String::new(),
            timestamp_url: String::new(),
        }
    }
}

/// Why provenance could not be set up or an output not signed.
#[derive(Debug, thiserror::Error)]
pub enum ProvenanceError {
    #[error("provenance settings: {0}")]
    Settings(String),
    #[error("provenance key files: {0}")]
    Keys(String),
    #[error("signing the output's credentials: {0}")]
    Sign(String),
}

impl From<c2pa::Error> for ProvenanceError {
    fn from(e: c2pa::Error) -> Self {
        ProvenanceError::Sign(e.to_string())
    }
}

/// Whose certificate signs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trust {
    /// The operator's (files or a signing service): validators trust it as far as they trust
    /// its issuer.
    Configured,
    /// One Atelier generated (kept under `dir`): the credentials validate, but validators
    /// show the signer as unknown.
    Generated { dir: PathBuf },
}

/// The formats that carry credentials, by an output's file extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Media {
    Png,
    Jpeg,
    Webp,
    Mp4,
}

impl Media {
    /// The format of an output with this extension; `None` for one that carries no credentials.
    pub fn from_ext(ext: &str) -> Option<Media> {
        match ext {
            "png" => Some(Media::Png),
            "jpg" | "jpeg" => Some(Media::Jpeg),
            "webp" => Some(Media::Webp),
            "mp4" => Some(Media::Mp4),
            _ => None,
        }
    }

    pub fn mime(self) -> &'static str {
        match self {
            Media::Png => "image/png",
            Media::Jpeg => "image/jpeg",
            Media::Webp => "image/webp",
            Media::Mp4 => "video/mp4",
        }
    }
}

/// Signs outputs. Cheap to share; signing is CPU work (hashing the file), to be run off the
/// async threads.
pub struct Provenance {
    signer: c2pa::BoxedSigner,
    trust: Trust,
    /// The SDK's settings, default ones.
    context: Arc<c2pa::Context>,
}

impl std::fmt::Debug for Provenance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provenance").field("trust", &self.trust).finish_non_exhaustive()
    }
}

impl Provenance {
    /// The signer `settings` name: files, a signing service, or (neither given) the
    /// certificate generated under `state_dir`, made now if it is not there yet. `None` when
    /// provenance is off.
    pub fn open(settings: &Settings, state_dir: &Path) -> Result<Option<Provenance>, ProvenanceError> {
        if !settings.enabled {
            return Ok(None);
        }
        let alg = keys::algorithm(&settings.algorithm)?;
        let tsa = Some(settings.timestamp_url.clone()).filter(|u| !u.is_empty());
        let configured = !settings.certificate.as_os_str().is_empty();
        if !configured && (!settings.private_key.as_os_str().is_empty() || !settings.signing_url.is_empty()) {
            return Err(ProvenanceError::Settings(
                "private_key and signing_url need the certificate chain they sign for (certificate)".into(),
            ));
        }
        let (signer, trust): (c2pa::BoxedSigner, Trust) = if !configured {
            let dir = state_dir.join("provenance");
            let pair = keys::generated(&dir)?;
            (keys::local_signer(&pair, c2pa::SigningAlg::Es256, tsa)?, Trust::Generated { dir })
        } else if !settings.signing_url.is_empty() {
            if !settings.private_key.as_os_str().is_empty() {
                return Err(ProvenanceError::Settings("give private_key or signing_url, not both".into()));
            }
            let chain = keys::read(&settings.certificate)?;
            (Box::new(remote::RemoteSigner::new(&settings.signing_url, alg, &chain, tsa)?), Trust::Configured)
        } else {
            if settings.private_key.as_os_str().is_empty() {
                return Err(ProvenanceError::Settings("certificate needs private_key or signing_url".into()));
            }
            let pair = keys::KeyPair {
                chain: keys::read(&settings.certificate)?,
                key: keys::read(&settings.private_key)?,
            };
            (keys::local_signer(&pair, alg, tsa)?, Trust::Configured)
        };
        let provenance = Provenance { signer, trust, context: Arc::new(c2pa::Context::new()) };
        provenance.check()?;
        Ok(Some(provenance))
    }

    pub fn trust(&self) -> &Trust {
        &self.trust
    }

    /// Signs a tiny image once, so that a key that does not match its certificate, or a
    /// signing service that cannot be reached, is found at start and not on the first run.
    fn check(&self) -> Result<(), ProvenanceError> {
        let probe = manifest::probe_png();
        let origin = Origin::probe();
        let signed = self
            .sign(Media::Png, &probe, &origin)
            .map_err(|e| ProvenanceError::Keys(format!("the certificate and key cannot sign: {e}")))?;
        let reader = c2pa::Reader::from_shared_context(&self.context)
            .with_stream(Media::Png.mime(), Cursor::new(&signed))
            .map_err(|e| ProvenanceError::Keys(format!("a signed probe does not read back: {e}")))?;
        if reader.validation_state() == c2pa::ValidationState::Invalid {
            let why: Vec<String> =
                reader.validation_status().unwrap_or_default().iter().map(|s| s.code().to_string()).collect();
            return Err(ProvenanceError::Keys(format!(
                "a probe signed with these keys does not validate ({}); does the key match the certificate?",
                why.join(", ")
            )));
        }
        Ok(())
    }

    /// `bytes` (a `media` file) with the IPTC source type in its XMP and a signed manifest
    /// saying how `origin` made it embedded. Takes the file so that at most two copies of it
    /// are held at once: the file is dropped once its XMP copy is made, and that copy once
    /// it is signed.
    pub fn sign(
        &self,
        media: Media,
        bytes: impl AsRef<[u8]>,
        origin: &Origin,
    ) -> Result<Vec<u8>, ProvenanceError> {
        let source_type = origin.source_type();
        let marked = xmp::embed(media, bytes.as_ref(), &xmp::packet(&source_type.uri()))
            .map_err(|e| ProvenanceError::Sign(format!("writing the XMP packet: {e}")))?;
        drop(bytes);
        let mut builder = manifest::builder(&self.context, origin)?;
        let mut source = Cursor::new(&marked[..]);
        let mut signed = Cursor::new(Vec::with_capacity(marked.len() + 32 * 1024));
        builder.sign(&*self.signer, media.mime(), &mut source, &mut signed)?;
        Ok(signed.into_inner())
    }
}

/// What a file's Content Credentials say, as the C2PA SDK reads them ([`read`]).
#[derive(Debug, Clone)]
pub struct Credentials {
    /// `Valid` (signed and unchanged, by a signer the reader does not know), `Trusted` or
    /// `Invalid`.
    pub state: c2pa::ValidationState,
    /// The validation codes that are not plain successes (`signingCredential.untrusted`,
    /// `assertion.dataHash.mismatch`…).
    pub codes: Vec<String>,
    /// The active manifest, as the SDK's report shows it.
    pub manifest: serde_json::Value,
    /// How many manifests the file carries (its own and its ingredients').
    pub manifests: usize,
}

/// Reads `bytes`' credentials; an error when it carries none or cannot be read.
pub fn read(media: Media, bytes: &[u8]) -> Result<Credentials, ProvenanceError> {
    let reader = c2pa::Reader::from_context(c2pa::Context::new())
        .with_stream(media.mime(), Cursor::new(bytes))
        .map_err(|e| ProvenanceError::Sign(format!("reading the credentials: {e}")))?;
    let report: serde_json::Value = serde_json::from_str(&reader.json())
        .map_err(|e| ProvenanceError::Sign(format!("reading the credentials: {e}")))?;
    let active = report["active_manifest"].as_str().unwrap_or_default();
    Ok(Credentials {
        state: reader.validation_state(),
        codes: reader.validation_status().unwrap_or_default().iter().map(|s| s.code().to_string()).collect(),
        manifest: report["manifests"][active].clone(),
        manifests: reader.manifests().len(),
    })
}

/// The IPTC digital source type of an output (<https://cv.iptc.org/newscodes/digitalsourcetype/>).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceType {
    /// Made by a trained model.
    TrainedAlgorithmicMedia,
    /// A real photo a trained model changed part of.
    CompositeWithTrainedAlgorithmicMedia,
    /// Made by an algorithm with no trained model (the built-in renderers).
    AlgorithmicMedia,
    /// Real photos put together with made parts by an algorithm (the built-in try-on and
    /// product shot).
    CompositeSynthetic,
    /// A real photo corrected or enhanced by a classical algorithm (the built-in edits).
    AlgorithmicallyEnhanced,
}

impl SourceType {
    pub fn name(self) -> &'static str {
        match self {
            SourceType::TrainedAlgorithmicMedia => "trainedAlgorithmicMedia",
            SourceType::CompositeWithTrainedAlgorithmicMedia => "compositeWithTrainedAlgorithmicMedia",
            SourceType::AlgorithmicMedia => "algorithmicMedia",
            SourceType::CompositeSynthetic => "compositeSynthetic",
            SourceType::AlgorithmicallyEnhanced => "algorithmicallyEnhanced",
        }
    }

    pub fn uri(self) -> String {
        format!("http://cv.iptc.org/newscodes/digitalsourcetype/{}", self.name())
    }

    /// The type of what a tool's step makes: `trained` when a trained model takes part (every
    /// model server; the built-in engine where it uses its learned subject model), algorithmic
    /// otherwise. `composite`: the tool keeps part of a real photo (a try-on's person, a
    /// product shot's product).
    pub fn of(step: Step, composite: bool, trained: bool) -> SourceType {
        match (step, trained) {
            (Step::Created, true) if composite => SourceType::CompositeWithTrainedAlgorithmicMedia,
            (Step::Created, true) => SourceType::TrainedAlgorithmicMedia,
            (Step::Edited, true) => SourceType::CompositeWithTrainedAlgorithmicMedia,
            (Step::Created, false) if composite => SourceType::CompositeSynthetic,
            (Step::Created, false) => SourceType::AlgorithmicMedia,
            (Step::Edited, false) => SourceType::AlgorithmicallyEnhanced,
        }
    }
}
