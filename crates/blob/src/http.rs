//! Helpers for serving stored objects over HTTP.
//!
//! These are framework independent (plain `&str` header values in, plain
//! values out) so the crate needs no web framework dependency.

use std::ops::Range;

/// The outcome of interpreting a `Range` request header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RangeRequest {
    /// Serve the whole representation (`200 OK`). Used when there is no
    /// `Range` header, and for headers that are ignored (multiple ranges,
    /// other units, syntax errors), which RFC 9110 §14.2 permits.
    Full,
    /// Serve these bytes (`206 Partial Content`); the range is non-empty and
    /// lies within the representation (`end <= len`).
    Partial(Range<u64>),
    /// Answer `416 Range Not Satisfiable` with `Content-Range: bytes */{len}`.
    Unsatisfiable,
}

/// Interprets a `Range` header for a representation of `len` bytes.
///
/// Supported: a single `bytes=a-b`, `bytes=a-` or `bytes=-n` (the unit is
/// case-insensitive, surrounding whitespace is tolerated).
///
/// * `b` beyond the end is clamped to `len - 1`; an `a` at or beyond `len`
///   is [`RangeRequest::Unsatisfiable`].
/// * `bytes=-n` selects the last `n` bytes (the whole object if `n >= len`);
///   `bytes=-0` is unsatisfiable. On an empty object a non-zero suffix
///   range is answered with [`RangeRequest::Full`], since a 206 response
///   cannot describe an empty range.
/// * `a > b`, multiple ranges, other units and anything malformed yield
///   [`RangeRequest::Full`].
pub fn parse_range(header: Option<&str>, len: u64) -> RangeRequest {
    let Some(header) = header else {
        return RangeRequest::Full;
    };
    let header = header.trim();
    let Some((unit, spec)) = header.split_once('=') else {
        return RangeRequest::Full;
    };
    if !unit.trim().eq_ignore_ascii_case("bytes") {
        return RangeRequest::Full;
    }
    let spec = spec.trim();
    if spec.contains(',') {
        return RangeRequest::Full;
    }
    let Some((first, last)) = spec.split_once('-') else {
        return RangeRequest::Full;
    };
    let (first, last) = (first.trim(), last.trim());

    if first.is_empty() {
        // Suffix range: the last `n` bytes.
        let Some(n) = parse_pos(last) else {
            return RangeRequest::Full;
        };
        if n == 0 {
            return RangeRequest::Unsatisfiable;
        }
        if len == 0 {
            return RangeRequest::Full;
        }
        return RangeRequest::Partial(len.saturating_sub(n)..len);
    }

    let Some(start) = parse_pos(first) else {
        return RangeRequest::Full;
    };
    let end_inclusive = if last.is_empty() {
        None
    } else {
        match parse_pos(last) {
            Some(end) if end < start => return RangeRequest::Full,
            Some(end) => Some(end),
            None => return RangeRequest::Full,
        }
    };
    if start >= len {
        return RangeRequest::Unsatisfiable;
    }
    let end = match end_inclusive {
        Some(end) => end.min(len - 1) + 1,
        None => len,
    };
    RangeRequest::Partial(start..end)
}

/// Parses a non-empty run of ASCII digits; values beyond `u64::MAX`
/// saturate (they are "beyond any length" either way).
fn parse_pos(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(s.parse::<u64>().unwrap_or(u64::MAX))
}

/// The `Content-Type` for a key, guessed from its extension
/// (case-insensitive).
pub fn content_type_for(key: &str) -> &'static str {
    let name = key.rsplit('/').next().unwrap_or(key);
    let ext = match name.rsplit_once('.') {
        Some((_, ext)) => ext.to_ascii_lowercase(),
        None => return "application/octet-stream",
    };
    match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "webp" => "image/webp",
        "gif" => "image/gif",
        "mp4" => "video/mp4",
        "json" => "application/json",
        _ => "application/octet-stream",
    }
}

/// Whether an `If-None-Match` header matches `etag` (so a `304 Not Modified`
/// may be sent).
///
/// Handles `*`, comma-separated lists and weak validators (`W/"..."`), using
/// the weak comparison RFC 9110 §13.1.2 prescribes for `If-None-Match`.
/// `etag` may itself be weak or strong. Unquoted entries sent by sloppy
/// clients are compared as if they were quoted.
pub fn etag_matches(if_none_match: Option<&str>, etag: &str) -> bool {
    let Some(header) = if_none_match else {
        return false;
    };
    if header.trim() == "*" {
        return true;
    }
    let ours = opaque_tag(etag.trim());
    if ours.is_empty() {
        return false;
    }
    list_entries(header).any(|candidate| opaque_tag(candidate) == ours)
}

/// Strips an optional `W/` prefix and the surrounding quotes.
fn opaque_tag(tag: &str) -> &str {
    let tag = tag.strip_prefix("W/").unwrap_or(tag);
    let tag = tag.strip_prefix('"').unwrap_or(tag);
    tag.strip_suffix('"').unwrap_or(tag)
}

/// Splits an entity-tag list, respecting quotes (an etag may contain ',').
fn list_entries(header: &str) -> impl Iterator<Item = &str> {
    let mut rest = header;
    std::iter::from_fn(move || loop {
        rest = rest.trim_start_matches(|c: char| c == ',' || c.is_ascii_whitespace());
        if rest.is_empty() {
            return None;
        }
        let body_start = if rest.starts_with("W/") { 2 } else { 0 };
        let end = if rest[body_start..].starts_with('"') {
            // Up to and including the closing quote.
            match rest[body_start + 1..].find('"') {
                Some(i) => body_start + 1 + i + 1,
                None => rest.len(),
            }
        } else {
            rest.find(',').unwrap_or(rest.len())
        };
        let (entry, tail) = rest.split_at(end);
        rest = tail;
        let entry = entry.trim();
        if !entry.is_empty() {
            return Some(entry);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use RangeRequest::{Full, Partial, Unsatisfiable};

    #[test]
    fn parse_range_table() {
        let cases: &[(Option<&str>, u64, RangeRequest)] = &[
            (None, 100, Full),
            (Some("bytes=0-9"), 100, Partial(0..10)),
            (Some("bytes=10-19"), 100, Partial(10..20)),
            (Some("bytes=99-99"), 100, Partial(99..100)),
            (Some("bytes=5-5"), 100, Partial(5..6)),
            (Some("bytes=50-"), 100, Partial(50..100)),
            (Some("bytes=0-"), 100, Partial(0..100)),
            (Some("bytes=-10"), 100, Partial(90..100)),
            (Some("bytes=-100"), 100, Partial(0..100)),
            (Some("bytes=-500"), 100, Partial(0..100)),
            // end beyond len clamps
            (Some("bytes=90-1000"), 100, Partial(90..100)),
            (Some("bytes=0-99999999999999999999999999"), 100, Partial(0..100)),
            // start at/after len
            (Some("bytes=100-"), 100, Unsatisfiable),
            (Some("bytes=100-200"), 100, Unsatisfiable),
            (Some("bytes=99999999999999999999999-"), 100, Unsatisfiable),
            // zero suffix
            (Some("bytes=-0"), 100, Unsatisfiable),
            // reversed range is invalid -> ignore
            (Some("bytes=5-2"), 100, Full),
            // multi-range -> ignore
            (Some("bytes=0-1,5-6"), 100, Full),
            (Some("bytes=0-1, 5-6"), 100, Full),
            // malformed
            (Some(""), 100, Full),
            (Some("bytes"), 100, Full),
            (Some("bytes="), 100, Full),
            (Some("bytes=-"), 100, Full),
            (Some("bytes=abc"), 100, Full),
            (Some("bytes=a-b"), 100, Full),
            (Some("bytes=+1-2"), 100, Full),
            (Some("bytes=1-+2"), 100, Full),
            (Some("bytes=--1"), 100, Full),
            (Some("bytes=1--2"), 100, Full),
            (Some("items=0-1"), 100, Full),
            (Some("0-1"), 100, Full),
            // lenient on case and whitespace
            (Some("Bytes=0-1"), 100, Partial(0..2)),
            (Some(" bytes = 0 - 1 "), 100, Partial(0..2)),
            // empty representation
            (Some("bytes=0-"), 0, Unsatisfiable),
            (Some("bytes=0-0"), 0, Unsatisfiable),
            (Some("bytes=-5"), 0, Full),
            (Some("bytes=-0"), 0, Unsatisfiable),
            (None, 0, Full),
            // one-byte representation
            (Some("bytes=0-0"), 1, Partial(0..1)),
            (Some("bytes=-1"), 1, Partial(0..1)),
            (Some("bytes=1-"), 1, Unsatisfiable),
        ];
        for (header, len, expected) in cases {
            assert_eq!(&parse_range(*header, *len), expected, "header {header:?}, len {len}");
        }
    }

    #[test]
    fn content_types() {
        let cases = [
            ("a/b/c.png", "image/png"),
            ("x.PNG", "image/png"),
            ("x.jpg", "image/jpeg"),
            ("x.jpeg", "image/jpeg"),
            ("x.JPEG", "image/jpeg"),
            ("x.webp", "image/webp"),
            ("x.gif", "image/gif"),
            ("x.mp4", "video/mp4"),
            ("x.json", "application/json"),
            ("x.txt", "application/octet-stream"),
            ("noext", "application/octet-stream"),
            ("dir.png/noext", "application/octet-stream"),
            ("", "application/octet-stream"),
        ];
        for (key, expected) in cases {
            assert_eq!(content_type_for(key), expected, "{key}");
        }
    }

    #[test]
    fn etag_matching() {
        let etag = "\"abc-123\"";
        assert!(!etag_matches(None, etag));
        assert!(etag_matches(Some("*"), etag));
        assert!(etag_matches(Some(" * "), etag));
        assert!(etag_matches(Some("\"abc-123\""), etag));
        assert!(etag_matches(Some("W/\"abc-123\""), etag));
        assert!(etag_matches(Some("W/\"abc-123\""), "W/\"abc-123\""));
        assert!(etag_matches(Some("\"abc-123\""), "W/\"abc-123\""));
        assert!(etag_matches(Some("\"x\", \"abc-123\""), etag));
        assert!(etag_matches(Some("\"x\",W/\"abc-123\",\"y\""), etag));
        assert!(etag_matches(Some("abc-123"), etag));
        assert!(!etag_matches(Some("\"abc-124\""), etag));
        assert!(!etag_matches(Some("\"x\", \"y\""), etag));
        assert!(!etag_matches(Some(""), etag));
        assert!(!etag_matches(Some("\"abc\""), etag));
        // commas inside quoted tags
        assert!(etag_matches(Some("\"a,b\", \"c\""), "\"a,b\""));
        assert!(!etag_matches(Some("\"a,b\""), "\"a\""));
        // empty etag never matches a list
        assert!(!etag_matches(Some("\"\""), "\"\""));
    }
}
