//! The signing keys: the operator's files, or a certificate Atelier makes for itself.
//!
//! The generated one is a local certificate authority and a signing certificate it issued
//! (C2PA validators refuse a self-signed signing certificate), written once under
//! `{data_dir}/provenance/`: `chain.pem` (signing certificate, then the authority),
//! `key.pem` (the signing key, mode 0600) and `ca.pem`. Every process sharing the data
//! directory signs with the same one; a second process starting at the same moment reads the
//! first's files instead of writing its own.

use std::fs;
use std::io::Write as _;
use std::path::Path;

use c2pa::SigningAlg;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair as RcKey,
    KeyUsagePurpose,
};

use crate::ProvenanceError;

/// A certificate chain and its signing key, PEM.
pub(crate) struct KeyPair {
    pub chain: Vec<u8>,
    pub key: Vec<u8>,
}

pub(crate) fn algorithm(name: &str) -> Result<SigningAlg, ProvenanceError> {
    Ok(match name.to_ascii_lowercase().as_str() {
        "es256" => SigningAlg::Es256,
        "es384" => SigningAlg::Es384,
        "es512" => SigningAlg::Es512,
        "ps256" => SigningAlg::Ps256,
        "ps384" => SigningAlg::Ps384,
        "ps512" => SigningAlg::Ps512,
        "ed25519" => SigningAlg::Ed25519,
        other => {
            return Err(ProvenanceError::Settings(format!(
                "unknown algorithm '{other}' (es256, es384, es512, ps256, ps384, ps512, ed25519)"
            )))
        }
    })
}

pub(crate) fn read(path: &Path) -> Result<Vec<u8>, ProvenanceError> {
    fs::read(path).map_err(|e| ProvenanceError::Keys(format!("{}: {e}", path.display())))
}

pub(crate) fn local_signer(
    pair: &KeyPair,
    alg: SigningAlg,
    tsa: Option<String>,
) -> Result<c2pa::BoxedSigner, ProvenanceError> {
    let signer = c2pa::create_signer::from_keys(&pair.chain, &pair.key, alg, tsa)
        .map_err(|e| ProvenanceError::Keys(format!("the certificate and key do not make a signer: {e}")))?;
    Ok(signer)
}

/// The generated certificate under `dir`, made now if it is not there.
pub(crate) fn generated(dir: &Path) -> Result<KeyPair, ProvenanceError> {
    let chain_path = dir.join("chain.pem");
    let key_path = dir.join("key.pem");
    if !chain_path.exists() {
        let made = generate()?;
        fs::create_dir_all(dir).map_err(|e| ProvenanceError::Keys(format!("{}: {e}", dir.display())))?;
        // Written under temporary names and linked into place: a process that starts at the
        // same moment either finds no chain (and makes its own, which loses the race) or
        // the whole pair.
        let unique =
            format!("{}.{}", std::process::id(), chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0));
        let tmp_key = dir.join(format!(".key.{unique}"));
        let tmp_chain = dir.join(format!(".chain.{unique}"));
        write_private(&tmp_key, made.key.as_bytes())?;
        write(&tmp_chain, made.chain.as_bytes())?;
        write(&dir.join("ca.pem"), made.ca.as_bytes())?;
        // The key goes in first; the chain's arrival says both are there.
        let linked = fs::hard_link(&tmp_key, &key_path).and_then(|()| fs::hard_link(&tmp_chain, &chain_path));
        let _ = fs::remove_file(&tmp_key);
        let _ = fs::remove_file(&tmp_chain);
        match linked {
            Ok(()) => tracing::info!(dir = %dir.display(), "generated a local provenance certificate"),
            // Another process got there first: use its pair, once its chain is in.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
                while !chain_path.exists() {
                    if std::time::Instant::now() > until {
                        return Err(ProvenanceError::Keys(format!(
                            "{} has a key but no chain.pem (a start interrupted while writing them); \
                             remove key.pem to generate a new pair",
                            dir.display()
                        )));
                    }
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
            }
            Err(e) => return Err(ProvenanceError::Keys(format!("{}: {e}", dir.display()))),
        }
    }
    Ok(KeyPair { chain: read(&chain_path)?, key: read(&key_path)? })
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), ProvenanceError> {
    fs::write(path, bytes).map_err(|e| ProvenanceError::Keys(format!("{}: {e}", path.display())))
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), ProvenanceError> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file =
        options.open(path).map_err(|e| ProvenanceError::Keys(format!("{}: {e}", path.display())))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| ProvenanceError::Keys(format!("{}: {e}", path.display())))
}

/// A made certificate authority and signing certificate, PEM.
struct Made {
    chain: String,
    key: String,
    ca: String,
}

/// A P-256 authority valid for 20 years and a signing certificate it issued, valid for 10,
/// with what C2PA asks of a signing certificate: not an authority, `digitalSignature`, the
/// `emailProtection` purpose, and the authority's key identifier.
fn generate() -> Result<Made, ProvenanceError> {
    let fail = |e: rcgen::Error| ProvenanceError::Keys(format!("generating a certificate: {e}"));
    let today = chrono::Utc::now().date_naive();
    let (year, month, day) = {
        use chrono::Datelike;
        (today.year(), today.month() as u8, today.day() as u8)
    };
    let host = hostname();

    let ca_key = RcKey::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).map_err(fail)?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(fail)?;
    ca.distinguished_name.push(DnType::CommonName, format!("Atelier local provenance authority ({host})"));
    ca.distinguished_name.push(DnType::OrganizationName, "Atelier (self-hosted, unverified)");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages =
        vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    ca.not_before = rcgen::date_time_ymd(year - 1, month, day.min(28));
    ca.not_after = rcgen::date_time_ymd(year + 20, month, day.min(28));
    let ca_cert = ca.self_signed(&ca_key).map_err(fail)?;

    let key = RcKey::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).map_err(fail)?;
    let mut leaf = CertificateParams::new(Vec::<String>::new()).map_err(fail)?;
    leaf.distinguished_name.push(DnType::CommonName, format!("Atelier output signing ({host})"));
    leaf.distinguished_name.push(DnType::OrganizationName, "Atelier (self-hosted, unverified)");
    leaf.is_ca = IsCa::ExplicitNoCa;
    leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::EmailProtection];
    leaf.use_authority_key_identifier_extension = true;
    leaf.not_before = rcgen::date_time_ymd(year - 1, month, day.min(28));
    leaf.not_after = rcgen::date_time_ymd(year + 10, month, day.min(28));
    let issuer = Issuer::new(ca, ca_key);
    let leaf_cert = leaf.signed_by(&key, &issuer).map_err(fail)?;

    Ok(Made {
        chain: format!("{}{}", leaf_cert.pem(), ca_cert.pem()),
        key: key.serialize_pem(),
        ca: ca_cert.pem(),
    })
}

fn hostname() -> String {
    fs::read_to_string("/etc/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}
