//! The store's pure rules: what settling a run moves, when its outputs expire, what an
//! attempt's history records.

use std::time::Duration;

use atelier_core::time::{self, Micros};
use atelier_core::NodeError;
use serde_json::{json, Value};

/// What settling a finished run moves: `(charged, released)` out of the reservation, given
/// the price of its succeeded nodes.
pub(crate) fn settlement(reserved: i64, succeeded_price: i64) -> (i64, i64) {
    let charged = succeeded_price.min(reserved);
    (charged, reserved - charged)
}

/// When a run finished at `now` stops being readable.
pub(crate) fn expiry(now: Micros, retention: Duration) -> Micros {
    time::after(now, retention)
}

/// An entry of a task's attempt history (`Store::task_errors`).
pub(crate) fn attempt_error(attempt: u32, error: &NodeError, now: Micros) -> Value {
    json!({"attempt": attempt, "at": time::format_time(now), "error": error})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settlement_charges_what_succeeded_and_never_more_than_was_reserved() {
        assert_eq!(settlement(10, 4), (4, 6));
        assert_eq!(settlement(10, 0), (0, 10));
        assert_eq!(settlement(10, 12), (10, 0));
    }

    #[test]
    fn expiry_saturates() {
        assert_eq!(expiry(1, Duration::from_secs(1)), 1_000_001);
        assert_eq!(expiry(i64::MAX, Duration::from_secs(1)), i64::MAX);
    }
}
