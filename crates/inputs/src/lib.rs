//! Turning user-supplied image values into bytes, safely.
//!
//! Image values in Atelier requests are one of:
//!
//! * an `https://` or `http://` URL,
//! * a data URI (`data:image/png;base64,...`),
//! * raw standard base64 (padding optional, whitespace and newlines ignored).
//!
//! [`parse`] classifies a value into an [`ImageSource`]. [`classify_url`]
//! is the network-free part of the URL policy, [`check_url`] a cheap
//! pre-check run when a request is accepted (it also resolves host names),
//! and [`Fetcher::load`] turns a source into bytes.
//!
//! # SSRF protection
//!
//! Unless [`InputPolicy::allow_private_addresses`] is set, URLs may only
//! reach publicly routable addresses (see [`is_forbidden_ip`]):
//!
//! * IP-literal hosts (including the decimal/octal/hex IPv4 spellings that
//!   the `url` crate normalises, and bracketed IPv6) are checked directly;
//! * host names are resolved by a custom DNS resolver inside the HTTP client
//!   that drops forbidden addresses, so a connection is only ever made to an
//!   address that was checked (no DNS-rebinding window between check and
//!   connect);
//! * every redirect target is checked again (scheme, port and IP literal in
//!   the redirect policy, host names through the resolver), and the number
//!   of redirects is limited;
//! * proxies from the environment are ignored.
//!
//! Whatever the address policy, a URL may only name port 80, 443 or an
//! unprivileged port (1024–65535) that browsers do not block
//! ([`is_allowed_port`]), so the fetcher cannot be used to speak HTTP to
//! mail, SSH, IRC or similar services.
//!
//! Downloads are bounded in time ([`InputPolicy::timeout`], for the whole
//! transfer) and size ([`InputPolicy::max_bytes`], enforced while
//! streaming).
//!
//! ## What is where
//!
//! Turning image values into bytes: URL / data URI / base64 parsing, the SSRF-safe fetcher
//! (checked resolver, port allow-list, re-checked redirects, size and time limits); `Sender`,
//! requests the service sends on its own (webhook deliveries) under the same address policy,
//! redirects not followed.
//!
//! Not here: decoding, HTTP serving.

use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine as _;
use bytes::Bytes;
use url::{Host, Url};

#[cfg(feature = "fetch")]
mod fetch;
mod ip;

#[cfg(feature = "fetch")]
pub use fetch::{Answer, Fetcher, Sender};
pub use ip::{is_allowed_port, is_forbidden_ip};

/// How image values may be fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputPolicy {
    /// Allow URLs that point at loopback, private, link-local and other
    /// non-public addresses. Off by default; only for trusted, single-user
    /// deployments that load images from the local network.
    pub allow_private_addresses: bool,
    /// Maximum size of an image, fetched or inline, in bytes.
    pub max_bytes: u64,
    /// Total time allowed for fetching one URL (connect, redirects, body).
    pub timeout: Duration,
    /// Maximum number of redirects followed.
    pub max_redirects: usize,
}

impl InputPolicy {
    /// Default [`InputPolicy::max_bytes`]: 20 MiB.
    pub const DEFAULT_MAX_BYTES: u64 = 20 * 1024 * 1024;
    /// Default [`InputPolicy::timeout`]: 20 seconds.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(20);
    /// Default [`InputPolicy::max_redirects`].
    pub const DEFAULT_MAX_REDIRECTS: usize = 3;
}

impl Default for InputPolicy {
    fn default() -> Self {
        Self {
            allow_private_addresses: false,
            max_bytes: Self::DEFAULT_MAX_BYTES,
            timeout: Self::DEFAULT_TIMEOUT,
            max_redirects: Self::DEFAULT_MAX_REDIRECTS,
        }
    }
}

/// Where an image value's bytes come from.
#[derive(Clone, PartialEq, Eq)]
pub enum ImageSource {
    /// An `http` or `https` URL to fetch.
    Url(Url),
    /// Bytes decoded from a data URI or raw base64.
    Inline(Bytes),
}

impl fmt::Debug for ImageSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImageSource::Url(url) => f.debug_tuple("Url").field(&url.as_str()).finish(),
            ImageSource::Inline(bytes) => write!(f, "Inline({} bytes)", bytes.len()),
        }
    }
}

/// Why an image value could not be turned into bytes.
///
/// `Display` texts are safe to show to end users: they name the offending
/// host or HTTP status, never internal addresses or error chains.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// Neither a URL, nor a data URI, nor valid base64.
    #[error("not an image value: {0}")]
    NotAnImageValue(String),
    /// A URL with a scheme other than `http`/`https` (payload: the scheme).
    #[error("unsupported URL scheme '{0}': only http and https URLs are accepted")]
    UnsupportedScheme(String),
    /// The URL's host is, or resolves to, a non-public address (payload:
    /// the host as written in the URL).
    #[error("refusing to fetch from '{0}': it is not a public internet address")]
    ForbiddenAddress(String),
    /// The URL names a port outside [`is_allowed_port`] (payload: the port).
    #[error(
        "refusing to fetch from port {0}: image URLs may use ports 80, 443 and 1024-65535 \
         (except ports that browsers block)"
    )]
    ForbiddenPort(u16),
    /// The image is larger than the policy allows.
    #[error("image is larger than the limit of {limit} bytes")]
    TooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
    /// Fetching took longer than the policy allows.
    #[error("timed out while fetching the image")]
    Timeout,
    /// The fetch failed: `HTTP <status>` for a non-2xx response, otherwise a
    /// short description of the network failure.
    #[error("could not fetch the image: {0}")]
    Fetch(String),
    /// More redirects than the policy allows.
    #[error("too many redirects while fetching the image")]
    TooManyRedirects,
}

impl InputError {
    /// Whether trying again later might succeed: network failures, timeouts,
    /// HTTP 5xx (and 408/429) are retryable; HTTP 4xx, refused addresses,
    /// oversized images and malformed values are not.
    pub fn is_retryable(&self) -> bool {
        match self {
            InputError::Timeout => true,
            InputError::Fetch(message) => match http_status(message) {
                Some(status) => status >= 500 || status == 408 || status == 429,
                None => true,
            },
            InputError::NotAnImageValue(_)
            | InputError::UnsupportedScheme(_)
            | InputError::ForbiddenAddress(_)
            | InputError::ForbiddenPort(_)
            | InputError::TooLarge { .. }
            | InputError::TooManyRedirects => false,
        }
    }
}

/// Extracts `NNN` from a `Fetch` message of the form `HTTP NNN...`.
fn http_status(message: &str) -> Option<u16> {
    let rest = message.strip_prefix("HTTP ")?;
    let digits = rest.get(..3)?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Standard alphabet, padding optional, non-zero trailing bits tolerated.
const LENIENT_STANDARD: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

/// URL-safe alphabet, same leniency (some clients send it by mistake).
const LENIENT_URL_SAFE: GeneralPurpose = GeneralPurpose::new(
    &alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

const NOT_AN_IMAGE_HINT: &str =
    "expected an http(s) URL, a data:image/...;base64 URI or base64-encoded image data";

/// Classifies an image value.
///
/// * `http(s)://...` → [`ImageSource::Url`];
/// * `data:<mime>;base64,<data>` → [`ImageSource::Inline`] (the media type
///   must be empty, `image/*` or `application/octet-stream`);
/// * otherwise standard base64 (padding optional, ASCII whitespace ignored;
///   the URL-safe alphabet is accepted too) → [`ImageSource::Inline`].
///
/// Other URL schemes (`file:`, `ftp:`, `gopher:`, ...) give
/// [`InputError::UnsupportedScheme`]; empty or undecodable values give
/// [`InputError::NotAnImageValue`]. The size of inline data is not checked
/// here; see [`Fetcher::check_inline`].
pub fn parse(value: &str) -> Result<ImageSource, InputError> {
    let value = value.trim();
    if value.is_empty() {
        return Err(InputError::NotAnImageValue("the value is empty".into()));
    }
    // ':' never occurs in base64, so anything containing one is a URI.
    if let Some((scheme, rest)) = value.split_once(':') {
        if scheme.eq_ignore_ascii_case("data") {
            return parse_data_uri(rest).map(ImageSource::Inline);
        }
        return parse_url(value, scheme).map(ImageSource::Url);
    }
    decode_base64(value)
        .map(ImageSource::Inline)
        .ok_or_else(|| InputError::NotAnImageValue(NOT_AN_IMAGE_HINT.into()))
}

fn parse_url(value: &str, scheme_text: &str) -> Result<Url, InputError> {
    let looks_like_scheme = scheme_text.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && scheme_text.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !looks_like_scheme {
        return Err(InputError::NotAnImageValue(NOT_AN_IMAGE_HINT.into()));
    }
    let scheme = scheme_text.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return Err(InputError::UnsupportedScheme(truncate(&scheme, 32)));
    }
    match Url::parse(value) {
        Ok(url) if url.host().is_some() => Ok(url),
        _ => Err(InputError::NotAnImageValue("invalid URL".into())),
    }
}

fn parse_data_uri(rest: &str) -> Result<Bytes, InputError> {
    decode_base64(data_uri_payload(rest)?)
        .ok_or_else(|| InputError::NotAnImageValue("data URI does not contain valid base64".into()))
}

/// The base64 part of a data URI (after `data:`), its header checked.
fn data_uri_payload(rest: &str) -> Result<&str, InputError> {
    let Some((header, data)) = rest.split_once(',') else {
        return Err(InputError::NotAnImageValue("data URI has no ',' separator".into()));
    };
    let mime = header.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let is_base64 = header.rsplit(';').next().is_some_and(|p| p.trim().eq_ignore_ascii_case("base64"));
    if !is_base64 {
        return Err(InputError::NotAnImageValue(
            "data URI must be base64-encoded (data:image/...;base64,...)".into(),
        ));
    }
    if !(mime.is_empty()
        || mime == "base64"
        || mime.starts_with("image/")
        || mime == "application/octet-stream")
    {
        return Err(InputError::NotAnImageValue(format!(
            "data URI media type '{}' is not an image type",
            truncate(&mime, 64)
        )));
    }
    Ok(data)
}

/// What [`probe_inline`] learns of inline image data without keeping it decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlineProbe {
    /// The decoded length in bytes.
    pub len: usize,
    /// The first decoded bytes (up to [`InlineProbe::HEAD`]), enough to tell the format.
    pub head: Vec<u8>,
}

impl InlineProbe {
    pub const HEAD: usize = 64;
}

/// For a value [`parse`] reads as inline data (`ImageSource::Inline`), its decoded length
/// and first bytes; `None` for anything else. The same checks as [`parse`], decoding a few
/// KiB at a time: the memory it takes does not grow with the image (a request's inline
/// image is checked this way before it is stored as sent).
pub fn probe_inline(value: &str) -> Option<InlineProbe> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    let data = match value.split_once(':') {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("data") => data_uri_payload(rest).ok()?,
        Some(_) => return None,
        None => value,
    };
    probe_base64(data, &LENIENT_STANDARD).or_else(|| probe_base64(data, &LENIENT_URL_SAFE))
}

/// [`decode_base64`] with `engine` alone, by chunks of whole quads: every chunk but the
/// last must hold no padding (as a whole decode refuses `=` before the end), and the last
/// is decoded by the engine's rules for an end (padding, a partial quad, trailing bits).
fn probe_base64(text: &str, engine: &GeneralPurpose) -> Option<InlineProbe> {
    const CHUNK: usize = 4096;
    let total = text.bytes().filter(|b| !b.is_ascii_whitespace()).count();
    if total == 0 {
        return None;
    }
    let mut compact = text.bytes().filter(|b| !b.is_ascii_whitespace());
    let mut input = Vec::with_capacity(CHUNK.min(total));
    let mut output = vec![0u8; CHUNK / 4 * 3];
    let mut probe = InlineProbe { len: 0, head: Vec::with_capacity(InlineProbe::HEAD) };
    let mut left = total;
    while left > 0 {
        input.clear();
        input.extend(compact.by_ref().take(CHUNK.min(left)));
        left -= input.len();
        if left > 0 && input.contains(&b'=') {
            return None;
        }
        let n = engine.decode_slice(&input, &mut output).ok()?;
        let room = InlineProbe::HEAD - probe.head.len();
        probe.head.extend_from_slice(&output[..n.min(room)]);
        probe.len += n;
    }
    (probe.len > 0).then_some(probe)
}

/// Lenient base64 decoding; `None` when invalid or empty.
fn decode_base64(text: &str) -> Option<Bytes> {
    let compact: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if compact.is_empty() {
        return None;
    }
    let decoded = LENIENT_STANDARD.decode(&compact).or_else(|_| LENIENT_URL_SAFE.decode(&compact)).ok()?;
    if decoded.is_empty() {
        None
    } else {
        Some(Bytes::from(decoded))
    }
}

fn truncate(s: &str, max_chars: usize) -> String {
    s.chars().take(max_chars).collect()
}

/// Predicate deciding whether an address is off limits.
pub(crate) type Forbid = fn(IpAddr) -> bool;

/// Predicate used when private addresses are allowed.
pub(crate) fn forbid_nothing(_: IpAddr) -> bool {
    false
}

/// How long [`check_url`] waits for DNS at most.
#[cfg(feature = "fetch")]
const CHECK_DNS_TIMEOUT: Duration = Duration::from_secs(5);

/// Where a URL that passed [`classify_url`] points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlHost {
    /// An IP-literal host, already checked against the policy: nothing is
    /// resolved, and the HTTP client connects to exactly this address.
    Ip(IpAddr),
    /// A host name (lower case, as the URL spells it). Its addresses are
    /// only known after resolution, and each must be checked then.
    Domain(String),
}

/// The checks of [`check_url`] that need no network: the scheme
/// (`http`/`https`), a host present, an IP-literal host against
/// [`is_forbidden_ip`], the port against [`is_allowed_port`] (whatever the
/// policy), and `localhost` / `*.localhost` refused by name (the address
/// checks unless `policy.allow_private_addresses`).
///
/// `Ok(UrlHost::Ip(ip))` means `ip` may be contacted; `Ok(UrlHost::Domain)`
/// means the name still has to be resolved and every address checked.
pub fn classify_url(url: &Url, policy: &InputPolicy) -> Result<UrlHost, InputError> {
    if policy.allow_private_addresses {
        classify_with(url, forbid_nothing, false)
    } else {
        classify_with(url, is_forbidden_ip, true)
    }
}

pub(crate) fn classify_with(
    url: &Url,
    forbid: Forbid,
    refuse_localhost_names: bool,
) -> Result<UrlHost, InputError> {
    check_scheme(url)?;
    let host = check_ip_literal(url, forbid)?;
    check_port(url)?;
    let domain = match host {
        UrlHost::Ip(ip) => return Ok(UrlHost::Ip(ip)),
        UrlHost::Domain(domain) => domain,
    };
    let name = domain.trim_end_matches('.').to_ascii_lowercase();
    if refuse_localhost_names && (name == "localhost" || name.ends_with(".localhost")) {
        return Err(InputError::ForbiddenAddress(domain));
    }
    Ok(UrlHost::Domain(domain))
}

/// Cheap pre-check of a URL, meant for request acceptance.
///
/// [`classify_url`], then, unless `policy.allow_private_addresses` is set,
/// any host name is resolved and refused if *any* of its addresses is
/// forbidden. Resolution failures are reported as [`InputError::Fetch`]
/// (retryable), a slow resolver as [`InputError::Timeout`].
///
/// This does not replace the checks [`Fetcher::load`] performs at connect
/// time; DNS answers can change between the two.
#[cfg(feature = "fetch")]
pub async fn check_url(url: &Url, policy: &InputPolicy) -> Result<(), InputError> {
    if policy.allow_private_addresses {
        classify_url(url, policy)?;
        return Ok(());
    }
    check_url_with(url, is_forbidden_ip, true, policy.timeout).await
}

#[cfg(feature = "fetch")]
pub(crate) async fn check_url_with(
    url: &Url,
    forbid: Forbid,
    refuse_localhost_names: bool,
    timeout: Duration,
) -> Result<(), InputError> {
    let UrlHost::Domain(domain) = classify_with(url, forbid, refuse_localhost_names)? else {
        return Ok(());
    };
    let name = domain.trim_end_matches('.').to_ascii_lowercase();
    let port = url.port_or_known_default().unwrap_or(80);
    let lookup = tokio::net::lookup_host((name.as_str(), port));
    let addrs = match tokio::time::timeout(timeout.min(CHECK_DNS_TIMEOUT), lookup).await {
        Err(_) => return Err(InputError::Timeout),
        Ok(Err(e)) => {
            tracing::debug!(host = %domain, error = %e, "DNS lookup failed");
            return Err(InputError::Fetch(format!("could not resolve host '{domain}'")));
        }
        Ok(Ok(addrs)) => addrs.collect::<Vec<_>>(),
    };
    if addrs.is_empty() {
        return Err(InputError::Fetch(format!("could not resolve host '{domain}'")));
    }
    if addrs.iter().any(|a| forbid(a.ip())) {
        return Err(InputError::ForbiddenAddress(domain));
    }
    Ok(())
}

/// Refuses anything but `http`/`https`.
pub(crate) fn check_scheme(url: &Url) -> Result<(), InputError> {
    match url.scheme() {
        "http" | "https" => Ok(()),
        other => Err(InputError::UnsupportedScheme(truncate(other, 32))),
    }
}

/// Refuses a port outside [`is_allowed_port`] (the scheme's default port
/// when the URL names none).
pub(crate) fn check_port(url: &Url) -> Result<(), InputError> {
    match url.port_or_known_default() {
        Some(port) if is_allowed_port(port) => Ok(()),
        Some(port) => Err(InputError::ForbiddenPort(port)),
        None => Err(InputError::NotAnImageValue("the URL has no port".into())),
    }
}

/// Checks an IP-literal host against `forbid`. A domain is returned
/// unchecked (the caller must resolve it and check its addresses).
pub(crate) fn check_ip_literal(url: &Url, forbid: Forbid) -> Result<UrlHost, InputError> {
    match url.host() {
        None => Err(InputError::NotAnImageValue("the URL has no host".into())),
        Some(Host::Ipv4(v4)) => {
            if forbid(v4.into()) {
                Err(InputError::ForbiddenAddress(v4.to_string()))
            } else {
                Ok(UrlHost::Ip(v4.into()))
            }
        }
        Some(Host::Ipv6(v6)) => {
            if forbid(v6.into()) {
                Err(InputError::ForbiddenAddress(format!("[{v6}]")))
            } else {
                Ok(UrlHost::Ip(v6.into()))
            }
        }
        Some(Host::Domain(domain)) => Ok(UrlHost::Domain(domain.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inline(value: &str) -> Bytes {
        match parse(value) {
            Ok(ImageSource::Inline(bytes)) => bytes,
            other => panic!("{value:?} parsed as {other:?}"),
        }
    }

    /// What `probe_inline` must say of `value`: what `parse` decodes, measured.
    fn expected_probe(value: &str) -> Option<InlineProbe> {
        match parse(value) {
            Ok(ImageSource::Inline(bytes)) => Some(InlineProbe {
                len: bytes.len(),
                head: bytes[..bytes.len().min(InlineProbe::HEAD)].to_vec(),
            }),
            _ => None,
        }
    }

    #[test]
    fn probing_inline_data_agrees_with_parsing_it() {
        // Generated values chosen to break a chunked decode: lengths around the chunk size,
        // padding and whitespace anywhere, both alphabets, stray characters, data URIs.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let sizes = [1, 2, 3, 11, 12, 13, 3071, 3072, 3073, 6144, 6145, 9000];
        let mut agreed = 0;
        for case in 0..600 {
            let len = sizes[next(sizes.len())];
            let data: Vec<u8> = (0..len).map(|_| next(256) as u8).collect();
            let engine = if next(4) == 0 {
                &base64::engine::general_purpose::URL_SAFE
            } else {
                &base64::engine::general_purpose::STANDARD
            };
            let mut text = engine.encode(&data);
            match next(8) {
                0 => text = text.trim_end_matches('=').to_string(),
                1 => {
                    let at = next(text.len());
                    text.insert(at, '=');
                }
                2 => {
                    let at = next(text.len());
                    text.insert(at, ['\n', ' ', '\t', '\r'][next(4)]);
                }
                3 => {
                    let at = next(text.len());
                    text.insert(at, ['!', '-', '+', '.', ':'][next(5)]);
                }
                4 => text.truncate(next(text.len()) + 1),
                5 => text = format!("data:image/png;base64,{text}"),
                6 => {
                    text = format!(
                        "  {}\n",
                        text.as_bytes()
                            .chunks(76)
                            .map(|c| std::str::from_utf8(c).unwrap())
                            .collect::<Vec<_>>()
                            .join("\n")
                    )
                }
                _ => {}
            }
            assert_eq!(probe_inline(&text), expected_probe(&text), "case {case}: {} chars", text.len());
            agreed += usize::from(expected_probe(&text).is_some());
        }
        assert!(agreed > 300, "most generated cases are valid data ({agreed} of 600)");
        for other in [
            "",
            "   ",
            "https://example.com/a.png",
            "data:text/plain;base64,aGk=",
            "data:image/png,abc",
            "=",
            "====",
        ] {
            assert_eq!(probe_inline(other), None, "{other:?}");
            assert_eq!(expected_probe(other), None, "{other:?}");
        }
    }

    #[test]
    fn parse_urls() {
        match parse("https://example.com/a.png?x=1").unwrap() {
            ImageSource::Url(url) => assert_eq!(url.as_str(), "https://example.com/a.png?x=1"),
            other => panic!("{other:?}"),
        }
        match parse("  http://example.com:8080/img  ").unwrap() {
            ImageSource::Url(url) => {
                assert_eq!(url.scheme(), "http");
                assert_eq!(url.port(), Some(8080));
            }
            other => panic!("{other:?}"),
        }
        match parse("HTTPS://EXAMPLE.com/x").unwrap() {
            ImageSource::Url(url) => assert_eq!(url.as_str(), "https://example.com/x"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(parse("https://"), Err(InputError::NotAnImageValue(_))));
    }

    #[test]
    fn parse_data_uris() {
        // 1x1 PNG signature prefix
        let png = [0x89u8, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];
        let b64 = base64::engine::general_purpose::STANDARD.encode(png);
        assert_eq!(inline(&format!("data:image/png;base64,{b64}")), &png[..]);
        assert_eq!(inline(&format!("DATA:IMAGE/PNG;BASE64,{b64}")), &png[..]);
        assert_eq!(inline(&format!("data:image/png;name=a.png;base64,{b64}")), &png[..]);
        assert_eq!(inline(&format!("data:;base64,{b64}")), &png[..]);
        assert_eq!(inline(&format!("data:application/octet-stream;base64,{b64}")), &png[..]);
        assert_eq!(inline(&format!("data:image/png;base64,{}", b64.trim_end_matches('='))), &png[..]);
        for bad in [
            "data:image/png,rawbytes",
            "data:image/png;base64",
            "data:image/png;base64,",
            "data:image/png;base64,!!!",
            "data:text/html;base64,PGgxPg==",
        ] {
            assert!(matches!(parse(bad), Err(InputError::NotAnImageValue(_))), "{bad}");
        }
    }

    #[test]
    fn parse_raw_base64() {
        let data = b"some image bytes!";
        let padded = base64::engine::general_purpose::STANDARD.encode(data);
        assert!(padded.ends_with('='));
        assert_eq!(inline(&padded), &data[..]);
        assert_eq!(inline(padded.trim_end_matches('=')), &data[..]);
        let wrapped: String = padded
            .as_bytes()
            .chunks(4)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect::<Vec<_>>()
            .join("\r\n");
        assert_eq!(inline(&format!("{wrapped}\n")), &data[..]);
        assert_eq!(inline(&format!(" \t{padded}\n ")), &data[..]);
        // URL-safe alphabet is tolerated.
        let url_safe = base64::engine::general_purpose::URL_SAFE.encode([0xfbu8, 0xff, 0xfe]);
        assert_eq!(inline(&url_safe), &[0xfbu8, 0xff, 0xfe][..]);
    }

    #[test]
    fn parse_rejects_non_values() {
        for bad in ["", "   ", "\n", "not base64!!", "a", "example.com/img.png", "::"] {
            assert!(matches!(parse(bad), Err(InputError::NotAnImageValue(_))), "{bad:?} -> {:?}", parse(bad));
        }
    }

    #[test]
    fn parse_rejects_other_schemes() {
        for (value, scheme) in [
            ("ftp://x/y", "ftp"),
            ("file:///etc/passwd", "file"),
            ("gopher://x:70/_", "gopher"),
            ("javascript:alert(1)", "javascript"),
            ("FILE:///etc/passwd", "file"),
        ] {
            assert_eq!(parse(value), Err(InputError::UnsupportedScheme(scheme.into())), "{value}");
        }
    }

    #[test]
    fn retryability() {
        assert!(InputError::Timeout.is_retryable());
        assert!(InputError::Fetch("HTTP 503".into()).is_retryable());
        assert!(InputError::Fetch("HTTP 500".into()).is_retryable());
        assert!(InputError::Fetch("HTTP 429".into()).is_retryable());
        assert!(InputError::Fetch("HTTP 408".into()).is_retryable());
        assert!(InputError::Fetch("connection failed".into()).is_retryable());
        assert!(!InputError::Fetch("HTTP 404".into()).is_retryable());
        assert!(!InputError::Fetch("HTTP 403".into()).is_retryable());
        assert!(!InputError::ForbiddenAddress("x".into()).is_retryable());
        assert!(!InputError::TooLarge { limit: 1 }.is_retryable());
        assert!(!InputError::TooManyRedirects.is_retryable());
        assert!(!InputError::NotAnImageValue("x".into()).is_retryable());
        assert!(!InputError::UnsupportedScheme("ftp".into()).is_retryable());
    }

    #[test]
    fn error_messages_are_user_facing() {
        assert_eq!(InputError::Fetch("HTTP 404".into()).to_string(), "could not fetch the image: HTTP 404");
        assert_eq!(
            InputError::TooLarge { limit: 1000 }.to_string(),
            "image is larger than the limit of 1000 bytes"
        );
        assert!(InputError::ForbiddenAddress("localhost".into()).to_string().contains("'localhost'"));
    }

    #[test]
    fn default_policy() {
        let p = InputPolicy::default();
        assert!(!p.allow_private_addresses);
        assert_eq!(p.max_bytes, 20 * 1024 * 1024);
        assert_eq!(p.timeout, Duration::from_secs(20));
        assert_eq!(p.max_redirects, 3);
    }

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn classify_url_needs_no_network() {
        let strict = InputPolicy::default();
        let lax = InputPolicy { allow_private_addresses: true, ..InputPolicy::default() };
        let classify = |u: &str, policy: &InputPolicy| classify_url(&url(u), policy);
        assert_eq!(classify("http://8.8.8.8/x", &strict), Ok(UrlHost::Ip([8, 8, 8, 8].into())));
        assert_eq!(classify("https://Example.COM./x", &strict), Ok(UrlHost::Domain("example.com.".into())));
        assert_eq!(
            classify("http://0x7f.1/", &strict),
            Err(InputError::ForbiddenAddress("127.0.0.1".into()))
        );
        assert_eq!(classify("http://0x7f.1/", &lax), Ok(UrlHost::Ip([127, 0, 0, 1].into())));
        assert_eq!(
            classify("http://a.localhost/", &strict),
            Err(InputError::ForbiddenAddress("a.localhost".into()))
        );
        assert_eq!(classify("http://a.localhost/", &lax), Ok(UrlHost::Domain("a.localhost".into())));
        assert_eq!(classify("http://example.com:25/", &lax), Err(InputError::ForbiddenPort(25)));
        assert_eq!(classify("ftp://8.8.8.8/", &lax), Err(InputError::UnsupportedScheme("ftp".into())));
    }

    #[cfg(feature = "fetch")]
    #[tokio::test]
    async fn check_url_refuses_private_targets() {
        let strict = InputPolicy::default();
        let lax = InputPolicy { allow_private_addresses: true, ..InputPolicy::default() };
        for (u, host) in [
            ("http://127.0.0.1:8081/x", "127.0.0.1"),
            ("http://localhost/x", "localhost"),
            ("http://LOCALHOST./x", "localhost."),
            ("http://a.b.localhost/x", "a.b.localhost"),
            ("http://[::1]/x", "[::1]"),
            ("http://2130706433/", "127.0.0.1"),
            ("http://0x7f.1/", "127.0.0.1"),
            ("http://0177.0.0.1/", "127.0.0.1"),
            ("http://[::ffff:169.254.169.254]/", "[::ffff:169.254.169.254]"),
            ("https://10.0.0.1/", "10.0.0.1"),
        ] {
            let parsed = url(u);
            assert_eq!(
                check_url(&parsed, &strict).await,
                Err(InputError::ForbiddenAddress(host.into())),
                "{u}"
            );
            assert_eq!(check_url(&parsed, &lax).await, Ok(()), "{u}");
        }
    }

    #[cfg(feature = "fetch")]
    #[tokio::test]
    async fn check_url_refuses_ports_outside_the_allow_list_under_every_policy() {
        let strict = InputPolicy::default();
        let lax = InputPolicy { allow_private_addresses: true, ..InputPolicy::default() };
        let port = InputError::ForbiddenPort;
        let address = |host: &str| InputError::ForbiddenAddress(host.into());
        // (URL, strict answer, lax answer)
        for (u, under_strict, under_lax) in [
            ("http://8.8.8.8:25/x", port(25), port(25)),
            ("http://8.8.8.8:22/x", port(22), port(22)),
            ("https://8.8.8.8:0/x", port(0), port(0)),
            ("http://8.8.8.8:1023/x", port(1023), port(1023)),
            ("http://8.8.8.8:6667/x", port(6667), port(6667)),
            ("http://8.8.8.8:10080/x", port(10080), port(10080)),
            // An IP literal's address is judged first; a name's port before any lookup.
            ("http://127.0.0.1:25/x", address("127.0.0.1"), port(25)),
            ("http://localhost:25/x", port(25), port(25)),
            ("http://no-such-host.invalid:25/x", port(25), port(25)),
        ] {
            let parsed = url(u);
            assert_eq!(check_url(&parsed, &strict).await, Err(under_strict), "{u}");
            assert_eq!(check_url(&parsed, &lax).await, Err(under_lax), "{u}");
        }
        assert!(!InputError::ForbiddenPort(25).is_retryable());
        for u in [
            "http://8.8.8.8/x",
            "https://8.8.8.8/x",
            "http://8.8.8.8:443/x",
            "http://8.8.8.8:8080/x",
            "https://8.8.8.8:8443/x",
            "http://8.8.8.8:1024/x",
            "http://8.8.8.8:65535/x",
        ] {
            assert_eq!(check_url(&url(u), &strict).await, Ok(()), "{u}");
        }
        assert_eq!(check_url(&url("http://127.0.0.1:6379/x"), &lax).await, Ok(()), "6379 is unprivileged");
    }

    #[cfg(feature = "fetch")]
    #[tokio::test]
    async fn check_url_accepts_public_literals_and_rejects_schemes() {
        let strict = InputPolicy::default();
        // IP literals are not resolved, so nothing is contacted.
        assert_eq!(check_url(&url("http://8.8.8.8/x"), &strict).await, Ok(()));
        assert_eq!(check_url(&url("https://[2606:4700::1111]/x"), &strict).await, Ok(()));
        assert_eq!(
            check_url(&url("ftp://8.8.8.8/x"), &strict).await,
            Err(InputError::UnsupportedScheme("ftp".into()))
        );
        assert_eq!(
            check_url(&url("file:///etc/passwd"), &strict).await,
            Err(InputError::UnsupportedScheme("file".into()))
        );
    }

    #[cfg(feature = "fetch")]
    #[tokio::test]
    async fn check_url_resolves_host_names() {
        fn loopback(ip: std::net::IpAddr) -> bool {
            ip.is_loopback()
        }
        fn only_127_0_0_2(ip: std::net::IpAddr) -> bool {
            ip == std::net::IpAddr::from([127, 0, 0, 2])
        }
        // Bypass the by-name rule so that "localhost" goes through DNS.
        let u = url("http://localhost:8081/x");
        assert_eq!(
            check_url_with(&u, loopback, false, Duration::from_secs(5)).await,
            Err(InputError::ForbiddenAddress("localhost".into()))
        );
        assert_eq!(check_url_with(&u, only_127_0_0_2, false, Duration::from_secs(5)).await, Ok(()));
    }
}
