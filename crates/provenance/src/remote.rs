//! Signing by a service that holds the key (`[provenance] signing_url`): a KMS or HSM behind
//! an HTTP endpoint, so the key never reaches Atelier's machines.
//!
//! Each signature is one request: `POST {signing_url}` with the bytes to sign as the body
//! (`Content-Type: application/octet-stream`) and the algorithm in `X-Atelier-Signing-Algorithm`
//! (`es256`…). The answer is `200` with the signature as its body: for ECDSA either the raw
//! `r‖s` pair COSE uses or the DER `SEQUENCE` most KMSes return (turned into `r‖s` here), for
//! RSA-PSS and Ed25519 the signature bytes. Any other answer fails the signing, and with it
//! the node (retried as any failed node is).

use std::time::Duration;

use base64::Engine as _;
use c2pa::SigningAlg;

use crate::ProvenanceError;

/// How long one signing request may take.
const TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) struct RemoteSigner {
    url: String,
    alg: SigningAlg,
    /// The chain, DER, signing certificate first.
    certs: Vec<Vec<u8>>,
    tsa: Option<String>,
}

impl RemoteSigner {
    pub(crate) fn new(
        url: &str,
        alg: SigningAlg,
        chain_pem: &[u8],
        tsa: Option<String>,
    ) -> Result<Self, ProvenanceError> {
        let parsed = reqwest::Url::parse(url)
            .map_err(|e| ProvenanceError::Settings(format!("signing_url '{url}': {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ProvenanceError::Settings(format!("signing_url '{url}' is not http or https")));
        }
        let certs = pem_certificates(chain_pem)?;
        Ok(RemoteSigner { url: url.to_string(), alg, certs, tsa })
    }

    fn request(&self, data: &[u8]) -> Result<Vec<u8>, String> {
        let url = self.url.clone();
        let body = data.to_vec();
        let alg = self.alg.to_string();
        // Its own thread and runtime: the SDK calls this synchronously, from whichever thread
        // signs, async runtime or not.
        std::thread::scope(|scope| {
            scope
                .spawn(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|e| e.to_string())?;
                    runtime.block_on(async move {
                        let client =
                            reqwest::Client::builder().timeout(TIMEOUT).build().map_err(|e| e.to_string())?;
                        let answer = client
                            .post(&url)
                            .header("Content-Type", "application/octet-stream")
                            .header("X-Atelier-Signing-Algorithm", alg)
                            .body(body)
                            .send()
                            .await
                            .map_err(|e| format!("the signing service: {e}"))?;
                        let status = answer.status();
                        let bytes = answer.bytes().await.map_err(|e| format!("the signing service: {e}"))?;
                        if !status.is_success() {
                            let text = String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned();
                            return Err(format!("the signing service answered {status}: {text}"));
                        }
                        Ok(bytes.to_vec())
                    })
                })
                .join()
                .map_err(|_| "the signing request's thread panicked".to_string())?
        })
    }
}

impl c2pa::Signer for RemoteSigner {
    fn sign(&self, data: &[u8]) -> c2pa::Result<Vec<u8>> {
        let signature = self.request(data).map_err(c2pa::Error::BadParam)?;
        match ecdsa_width(self.alg) {
            Some(width) if signature.first() == Some(&0x30) && signature.len() != 2 * width => {
                der_to_raw(&signature, width).map_err(c2pa::Error::BadParam)
            }
            _ => Ok(signature),
        }
    }

    fn alg(&self) -> SigningAlg {
        self.alg
    }

    fn certs(&self) -> c2pa::Result<Vec<Vec<u8>>> {
        Ok(self.certs.clone())
    }

    fn reserve_size(&self) -> usize {
        10_000 + self.certs.iter().map(Vec::len).sum::<usize>()
    }

    fn time_authority_url(&self) -> Option<String> {
        self.tsa.clone()
    }
}

/// The width of one of an ECDSA signature's two numbers, in bytes.
fn ecdsa_width(alg: SigningAlg) -> Option<usize> {
    match alg {
        SigningAlg::Es256 => Some(32),
        SigningAlg::Es384 => Some(48),
        SigningAlg::Es512 => Some(66),
        _ => None,
    }
}

/// An ECDSA signature as DER (`SEQUENCE { INTEGER r, INTEGER s }`) as the raw `r‖s` COSE
/// uses, each number left-padded to `width` bytes.
pub(crate) fn der_to_raw(der: &[u8], width: usize) -> Result<Vec<u8>, String> {
    let bad = || "the signing service's ECDSA signature is neither r‖s nor DER".to_string();
    let (body, rest) = der_item(der, 0x30).ok_or_else(bad)?;
    if !rest.is_empty() {
        return Err(bad());
    }
    let (r, body) = der_item(body, 0x02).ok_or_else(bad)?;
    let (s, body) = der_item(body, 0x02).ok_or_else(bad)?;
    if !body.is_empty() {
        return Err(bad());
    }
    let mut raw = Vec::with_capacity(2 * width);
    for number in [r, s] {
        let trimmed: &[u8] = &number[number.iter().take_while(|&&b| b == 0).count()..];
        if trimmed.len() > width {
            return Err(bad());
        }
        raw.resize(raw.len() + width - trimmed.len(), 0);
        raw.extend_from_slice(trimmed);
    }
    Ok(raw)
}

/// One DER item of type `tag`: its contents and what follows it.
fn der_item(bytes: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (&first, rest) = bytes.split_first()?;
    if first != tag {
        return None;
    }
    let (&len, rest) = rest.split_first()?;
    let (len, rest) = match len {
        0..=0x7F => (len as usize, rest),
        0x81 => (*rest.first()? as usize, &rest[1..]),
        0x82 => (u16::from_be_bytes([*rest.first()?, *rest.get(1)?]) as usize, rest.get(2..)?),
        _ => return None,
    };
    (rest.len() >= len).then(|| rest.split_at(len))
}

/// The certificates of a PEM chain, DER, in order.
pub(crate) fn pem_certificates(pem: &[u8]) -> Result<Vec<Vec<u8>>, ProvenanceError> {
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";
    let text = std::str::from_utf8(pem)
        .map_err(|_| ProvenanceError::Keys("the certificate chain is not PEM".into()))?;
    let mut certs = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(BEGIN) {
        let after = &rest[start + BEGIN.len()..];
        let end = after
            .find(END)
            .ok_or_else(|| ProvenanceError::Keys("a certificate in the chain is not closed".into()))?;
        let b64: String = after[..end].chars().filter(|c| !c.is_whitespace()).collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| ProvenanceError::Keys(format!("a certificate in the chain is not base64: {e}")))?;
        certs.push(der);
        rest = &after[end + END.len()..];
    }
    if certs.is_empty() {
        return Err(ProvenanceError::Keys("the certificate chain holds no certificate".into()));
    }
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_signatures_become_fixed_width_pairs() {
        // r has a leading zero (its top bit is set), s is short.
        let mut der = vec![0x30, 0x00, 0x02, 33, 0x00];
        der.extend([0x80; 32]);
        der.extend([0x02, 2, 0x01, 0x02]);
        der[1] = (der.len() - 2) as u8;
        let raw = der_to_raw(&der, 32).unwrap();
        assert_eq!(raw.len(), 64);
        assert_eq!(&raw[..32], &[0x80; 32]);
        assert_eq!(&raw[32..62], &[0; 30]);
        assert_eq!(&raw[62..], &[1, 2]);
    }

    #[test]
    fn malformed_der_is_refused() {
        assert!(der_to_raw(&[0x30, 0x03, 0x02, 0x01], 32).is_err());
        assert!(der_to_raw(&[0x31, 0x00], 32).is_err());
        let mut long = vec![0x30, 37, 0x02, 33];
        long.extend([0x7F; 33]);
        long.extend([0x02, 0x00]);
        assert!(der_to_raw(&long, 32).is_err(), "a number wider than the curve");
    }

    #[test]
    fn pem_chains_are_read_in_order_and_empty_ones_refused() {
        let pem = b"-----BEGIN CERTIFICATE-----\nAAEC\n-----END CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\nAwQF\n-----END CERTIFICATE-----\n";
        assert_eq!(pem_certificates(pem).unwrap(), vec![vec![0, 1, 2], vec![3, 4, 5]]);
        assert!(pem_certificates(b"nothing here").is_err());
        assert!(pem_certificates(b"-----BEGIN CERTIFICATE-----\nAAEC\n").is_err());
        assert!(pem_certificates(b"-----BEGIN CERTIFICATE-----\n!!\n-----END CERTIFICATE-----").is_err());
    }
}
