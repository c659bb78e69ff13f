//! Webhook signatures as the Standard Webhooks specification defines them
//! (<https://www.standardwebhooks.com>): a message is signed with HMAC-SHA256 over
//! `"{id}.{timestamp}.{body}"`, keyed with the bytes of an account's secret
//! (`whsec_` + base64), and sent as `webhook-signature: v1,<base64>`; several signatures,
//! separated by spaces, while a rotated-out secret is still valid.
//!
//! Signing happens in the service; [`verify`] is what a receiver runs (the Rust client
//! re-exports it).

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;

/// The prefix of a secret as shown to accounts.
pub const SECRET_PREFIX: &str = "whsec_";

/// Random bytes in a new secret.
const SECRET_BYTES: usize = 32;

/// How far a message's timestamp may be from the receiver's clock by default, in seconds.
pub const DEFAULT_TOLERANCE_SECS: i64 = 300;

/// Why a message failed verification.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("the secret is not whsec_ followed by base64")]
    BadSecret,
    #[error("the webhook-timestamp header is not a number of seconds")]
    BadTimestamp,
    #[error("the message timestamp is more than {0} seconds from now")]
    TimestampOutOfRange(i64),
    #[error("no signature matches")]
    NoMatch,
}

/// A new secret: `whsec_` and 32 random bytes in base64.
pub fn new_secret() -> String {
    let mut bytes = [0u8; SECRET_BYTES];
    rand::thread_rng().fill_bytes(&mut bytes);
    format!("{SECRET_PREFIX}{}", STANDARD.encode(bytes))
}

/// The key bytes of a secret (with or without its `whsec_` prefix).
fn key(secret: &str) -> Result<Vec<u8>, VerifyError> {
    let encoded = secret.strip_prefix(SECRET_PREFIX).unwrap_or(secret);
    STANDARD.decode(encoded).map_err(|_| VerifyError::BadSecret)
}

fn mac(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> Hmac<Sha256> {
    // HMAC takes a key of any length.
    #[allow(clippy::expect_used)]
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC accepts keys of any length");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// The `webhook-signature` value for a message: one `v1,<base64>` per secret, separated by
/// spaces. Secrets that are not valid base64 are skipped.
pub fn sign(secrets: &[&str], id: &str, timestamp: i64, body: &[u8]) -> String {
    secrets
        .iter()
        .filter_map(|secret| key(secret).ok())
        .map(|key| format!("v1,{}", STANDARD.encode(mac(&key, id, timestamp, body).finalize().into_bytes())))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Checks a received message: `timestamp` (the `webhook-timestamp` header) within
/// `tolerance_secs` of `now` (Unix seconds), and one of the signatures in `signatures` (the
/// `webhook-signature` header) made with `secret` over `id`, `timestamp` and `body` as
/// received. The comparison takes the same time whatever the signatures hold.
pub fn verify(
    secret: &str,
    id: &str,
    timestamp: &str,
    signatures: &str,
    body: &[u8],
    now: i64,
    tolerance_secs: i64,
) -> Result<(), VerifyError> {
    let key = key(secret)?;
    let timestamp: i64 = timestamp.trim().parse().map_err(|_| VerifyError::BadTimestamp)?;
    if (now - timestamp).abs() > tolerance_secs {
        return Err(VerifyError::TimestampOutOfRange(tolerance_secs));
    }
    let expected = mac(&key, id, timestamp, body);
    let matched = signatures
        .split_whitespace()
        .filter_map(|entry| entry.strip_prefix("v1,"))
        .filter_map(|encoded| STANDARD.decode(encoded).ok())
        .any(|signature| expected.clone().verify_slice(&signature).is_ok());
    if matched {
        Ok(())
    } else {
        Err(VerifyError::NoMatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The example of the Standard Webhooks specification.
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TIMESTAMP: i64 = 1_614_265_330;
    const BODY: &[u8] = br#"{"test": 2432232314}"#;
    const SIGNATURE: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    #[test]
    fn signs_the_specification_example() {
        assert_eq!(sign(&[SECRET], ID, TIMESTAMP, BODY), SIGNATURE);
    }

    #[test]
    fn verifies_a_signed_message_and_refuses_any_change() {
        let ts = TIMESTAMP.to_string();
        assert_eq!(verify(SECRET, ID, &ts, SIGNATURE, BODY, TIMESTAMP, 300), Ok(()));
        let other = b"{\"test\": 2432232315}";
        assert_eq!(verify(SECRET, ID, &ts, SIGNATURE, other, TIMESTAMP, 300), Err(VerifyError::NoMatch));
        assert_eq!(
            verify(SECRET, "msg_other", &ts, SIGNATURE, BODY, TIMESTAMP, 300),
            Err(VerifyError::NoMatch)
        );
        let later = (TIMESTAMP + 1).to_string();
        assert_eq!(verify(SECRET, ID, &later, SIGNATURE, BODY, TIMESTAMP, 300), Err(VerifyError::NoMatch));
        let wrong = new_secret();
        assert_eq!(verify(&wrong, ID, &ts, SIGNATURE, BODY, TIMESTAMP, 300), Err(VerifyError::NoMatch));
    }

    #[test]
    fn refuses_old_and_future_timestamps_and_bad_headers() {
        let ts = TIMESTAMP.to_string();
        assert_eq!(
            verify(SECRET, ID, &ts, SIGNATURE, BODY, TIMESTAMP + 301, 300),
            Err(VerifyError::TimestampOutOfRange(300))
        );
        assert_eq!(
            verify(SECRET, ID, &ts, SIGNATURE, BODY, TIMESTAMP - 301, 300),
            Err(VerifyError::TimestampOutOfRange(300))
        );
        assert_eq!(
            verify(SECRET, ID, "soon", SIGNATURE, BODY, TIMESTAMP, 300),
            Err(VerifyError::BadTimestamp)
        );
        assert_eq!(
            verify("whsec_***", ID, &ts, SIGNATURE, BODY, TIMESTAMP, 300),
            Err(VerifyError::BadSecret)
        );
        for garbage in ["", "v1,", "v1,***", "v2,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="] {
            assert_eq!(verify(SECRET, ID, &ts, garbage, BODY, TIMESTAMP, 300), Err(VerifyError::NoMatch));
        }
    }

    #[test]
    fn any_one_of_several_signatures_is_enough() {
        let previous = new_secret();
        let current = new_secret();
        assert!(current.starts_with(SECRET_PREFIX) && current != previous);
        let header = sign(&[&current, &previous], ID, TIMESTAMP, BODY);
        assert_eq!(header.split(' ').count(), 2);
        let ts = TIMESTAMP.to_string();
        for secret in [&current, &previous] {
            assert_eq!(verify(secret, ID, &ts, &header, BODY, TIMESTAMP, 300), Ok(()));
        }
        assert_eq!(verify(SECRET, ID, &ts, &header, BODY, TIMESTAMP, 300), Err(VerifyError::NoMatch));
    }
}
