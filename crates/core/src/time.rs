//! Time as the service stores and shows it: microseconds since the Unix epoch (UTC), shown
//! as `YYYY-MM-DDTHH:MM:SS.ffffff` without an offset (DESIGN 3.1).

use std::time::Duration;

/// Microseconds since the Unix epoch, UTC.
pub type Micros = i64;

/// The current time.
pub fn now_micros() -> Micros {
    chrono::Utc::now().timestamp_micros()
}

/// A duration in microseconds, saturating at `i64::MAX`.
pub fn micros(d: Duration) -> Micros {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

/// `t` plus `d`, saturating.
pub fn after(t: Micros, d: Duration) -> Micros {
    t.saturating_add(micros(d))
}

/// `YYYY-MM-DDTHH:MM:SS.ffffff`, UTC, without an offset; empty for a time out of range.
pub fn format_time(t: Micros) -> String {
    chrono::DateTime::from_timestamp_micros(t)
        .map(|d| d.naive_utc().format("%Y-%m-%dT%H:%M:%S%.6f").to_string())
        .unwrap_or_default()
}

/// A time as an operator writes it: RFC 3339 with an offset (`2026-11-01T09:00:00+01:00`),
/// the service's own form without one (UTC, fractions allowed), or a date (its midnight, UTC).
pub fn parse_time(text: &str) -> Option<Micros> {
    let text = text.trim();
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(text) {
        return Some(t.timestamp_micros());
    }
    if let Ok(t) = chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f") {
        return Some(t.and_utc().timestamp_micros());
    }
    let day = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()?;
    Some(day.and_hms_opt(0, 0, 0)?.and_utc().timestamp_micros())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_read_with_an_offset_without_one_or_as_a_day() {
        let noon = 1_700_000_000_000_000 - 22 * 3600 * 1_000_000 - 13 * 60 * 1_000_000 - 20 * 1_000_000
            + 12 * 3600 * 1_000_000;
        assert_eq!(parse_time("2023-11-14T12:00:00Z"), Some(noon));
        assert_eq!(parse_time("2023-11-14T13:00:00+01:00"), Some(noon));
        assert_eq!(parse_time("2023-11-14T12:00:00"), Some(noon));
        assert_eq!(parse_time(" 2023-11-14T12:00:00.000000 "), Some(noon));
        assert_eq!(parse_time(&format_time(noon)), Some(noon), "what the service shows reads back");
        assert_eq!(parse_time("2023-11-14"), Some(noon - 12 * 3600 * 1_000_000));
        for bad in ["", "yesterday", "2023-13-01", "2023-11-14 12:00", "1700000000"] {
            assert_eq!(parse_time(bad), None, "{bad}");
        }
    }

    #[test]
    fn times_are_shown_to_the_microsecond_without_an_offset() {
        assert_eq!(format_time(0), "1970-01-01T00:00:00.000000");
        assert_eq!(format_time(1_700_000_000_123_456), "2023-11-14T22:13:20.123456");
        assert_eq!(format_time(i64::MAX), "");
    }

    #[test]
    fn durations_saturate() {
        assert_eq!(micros(Duration::from_millis(3)), 3_000);
        assert_eq!(micros(Duration::MAX), i64::MAX);
        assert_eq!(after(i64::MAX - 1, Duration::from_secs(1)), i64::MAX);
    }
}
