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

#[cfg(test)]
mod tests {
    use super::*;

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
