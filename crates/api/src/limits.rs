//! Request rates per API key: a GCRA (generic cell rate algorithm, the token bucket
//! written as one timestamp per key) kept in this process's memory, and the middleware
//! that applies it to the keyed routes (`/api/v3/*`, `/api/v2/*`).
//!
//! Each key may make `burst` requests at once and `per_second` sustained. Every answer to
//! an authenticated request carries the IETF `RateLimit-Limit` (the burst),
//! `RateLimit-Remaining` and `RateLimit-Reset` (seconds until the full burst is available
//! again) headers; a refused one is 429 `RateLimited` with `Retry-After` (seconds until one
//! more request is allowed). A request without a valid key is not counted: it gets its 401
//! from the handler. The buckets live in one API process, so N API processes behind a load
//! balancer allow a key N times the configured rate.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::header::HeaderValue;
use axum::http::{HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, RunError};
use crate::extract::{api_key, Authenticated};
use crate::settings::RateLimit;
use crate::state::AppState;

/// What one request is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Let through; `remaining` more requests may follow at once, and the full burst is
    /// available again after `reset`.
    Allowed { remaining: u32, reset: Duration },
    /// Refused; one more request is allowed after `retry_after`, the full burst after `reset`.
    Limited { retry_after: Duration, reset: Duration },
}

/// Per-key GCRA state: for each key, its theoretical arrival time (TAT), the instant at
/// which its bucket would be full again. A request at `now` is allowed when, after adding
/// one emission interval, the TAT is at most `burst` intervals ahead of `now`.
pub struct RateLimiter {
    /// 1 / `per_second`.
    interval: Duration,
    /// `burst` intervals: how far ahead of now the TAT may run.
    tolerance: Duration,
    burst: u32,
    buckets: Mutex<Buckets>,
}

struct Buckets {
    tat: HashMap<[u8; 32], Instant>,
    /// When the map reaches this size, keys whose bucket is full again are dropped (a
    /// missing key and a full bucket mean the same).
    prune_at: usize,
}

const PRUNE_MIN: usize = 1024;

const MAX_INTERVAL: Duration = Duration::from_secs(365 * 24 * 3600);

impl RateLimiter {
    /// `None` when the limit is off.
    pub fn new(limit: RateLimit) -> Option<Self> {
        if !(limit.per_second > 0.0 && limit.per_second.is_finite()) {
            return None;
        }
        let burst = limit.burst.max(1);
        // Bounded so that instants computed from it cannot overflow: a rate under one
        // request a year is no different from one a year.
        let interval = Duration::try_from_secs_f64(1.0 / limit.per_second)
            .unwrap_or(MAX_INTERVAL)
            .clamp(Duration::from_nanos(1), MAX_INTERVAL);
        Some(Self {
            interval,
            tolerance: interval.saturating_mul(burst),
            burst,
            buckets: Mutex::new(Buckets { tat: HashMap::new(), prune_at: PRUNE_MIN }),
        })
    }

    /// The `RateLimit-Limit` value.
    pub fn burst(&self) -> u32 {
        self.burst
    }

    /// Counts one request of `key` at `now`, if it is allowed.
    pub fn check(&self, key: [u8; 32], now: Instant) -> Decision {
        // A poisoned lock only means another request panicked mid-update of a timestamp;
        // the map is still usable.
        let mut buckets = self.buckets.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let tat = buckets.tat.get(&key).copied().filter(|t| *t > now).unwrap_or(now);
        let next = tat + self.interval;
        let ahead = next.duration_since(now);
        if ahead > self.tolerance {
            return Decision::Limited { retry_after: ahead - self.tolerance, reset: tat.duration_since(now) };
        }
        if buckets.tat.len() >= buckets.prune_at {
            buckets.tat.retain(|_, t| *t > now);
            buckets.prune_at = (buckets.tat.len() * 2).max(PRUNE_MIN);
        }
        buckets.tat.insert(key, next);
        let left = (self.tolerance - ahead).as_nanos() / self.interval.as_nanos();
        Decision::Allowed { remaining: u32::try_from(left).unwrap_or(u32::MAX), reset: ahead }
    }
}

impl RateLimiter {
    /// Whether one more request of `key` would be allowed at `now`, without counting it:
    /// `None` when it would, else how long until it would.
    pub fn wait(&self, key: [u8; 32], now: Instant) -> Option<Duration> {
        let buckets = self.buckets.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let tat = buckets.tat.get(&key).copied().filter(|t| *t > now).unwrap_or(now);
        let ahead = (tat + self.interval).duration_since(now);
        (ahead > self.tolerance).then(|| ahead - self.tolerance)
    }
}

/// Whole seconds, rounded up: a client that waits this long is not refused again.
pub(crate) fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// What the middleware needs: the store (to authenticate) and the buckets.
#[derive(Clone)]
pub(crate) struct Limits {
    pub state: AppState,
    pub limiter: Arc<RateLimiter>,
}

/// Authenticates the key, counts the request against it, and answers 429 or passes the
/// request on (with the account, so the handler does not look the key up again). Requests
/// without a valid key pass on uncounted and get their 401 from the handler.
pub(crate) async fn limit_requests(State(limits): State<Limits>, mut req: Request, next: Next) -> Response {
    let Some(key) = api_key(req.headers()).map(str::to_owned) else { return next.run(req).await };
    let account = match limits.state.keys.authenticate(&limits.state.store, &key).await {
        Ok(Some(account)) => account,
        // Unknown key (401) or a database error (the handler answers it): not counted.
        Ok(None) | Err(_) => return next.run(req).await,
    };
    let digest = crate::keys::digest(&key);
    req.extensions_mut().insert(Authenticated(account));
    count(&limits.limiter, digest, req, next).await
}

/// Counts `req` against `bucket`: passes it on, or answers 429 `RateLimited` (in the
/// run-handle shape for run endpoints, as their handlers answer); either way with the
/// `RateLimit-*` headers. The keyed routes count per API key, the console's v3 routes per
/// session key.
pub(crate) async fn count(limiter: &RateLimiter, bucket: [u8; 32], req: Request, next: Next) -> Response {
    let decision = limiter.check(bucket, Instant::now());
    let mut response = match decision {
        Decision::Allowed { .. } => next.run(req).await,
        Decision::Limited { retry_after, .. } => {
            let error = ApiError::RateLimited { retry_after: ceil_secs(retry_after).max(1) };
            if req.method() == Method::POST && req.uri().path().ends_with("/run") {
                RunError(error).into_response()
            } else {
                error.into_response()
            }
        }
    };
    rate_headers(response.headers_mut(), limiter.burst(), decision);
    response
}

fn rate_headers(headers: &mut HeaderMap, burst: u32, decision: Decision) {
    let (remaining, reset) = match decision {
        Decision::Allowed { remaining, reset } => (remaining, reset),
        Decision::Limited { reset, .. } => (0, reset),
    };
    headers.insert("ratelimit-limit", HeaderValue::from(burst));
    headers.insert("ratelimit-remaining", HeaderValue::from(remaining));
    headers.insert("ratelimit-reset", HeaderValue::from(ceil_secs(reset)));
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: [u8; 32] = [1; 32];

    fn limiter(per_second: f64, burst: u32) -> RateLimiter {
        RateLimiter::new(RateLimit { per_second, burst }).expect("a limit")
    }

    #[test]
    fn zero_or_nonsense_rates_turn_the_limit_off() {
        for per_second in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(RateLimiter::new(RateLimit { per_second, burst: 10 }).is_none(), "{per_second}");
        }
    }

    #[test]
    fn a_burst_then_one_request_per_interval() {
        let l = limiter(2.0, 3);
        let t0 = Instant::now();
        let remaining: Vec<Decision> = (0..3).map(|_| l.check(KEY, t0)).collect();
        assert_eq!(
            remaining,
            [
                Decision::Allowed { remaining: 2, reset: Duration::from_millis(500) },
                Decision::Allowed { remaining: 1, reset: Duration::from_millis(1000) },
                Decision::Allowed { remaining: 0, reset: Duration::from_millis(1500) },
            ]
        );
        assert_eq!(
            l.check(KEY, t0),
            Decision::Limited { retry_after: Duration::from_millis(500), reset: Duration::from_millis(1500) }
        );
        // A refused request does not move the bucket: 0.2 s later, 0.3 s are left to wait.
        let later = t0 + Duration::from_millis(200);
        assert!(
            matches!(l.check(KEY, later), Decision::Limited { retry_after, .. } if retry_after == Duration::from_millis(300))
        );
        // One interval on, exactly one more request fits.
        let t1 = t0 + Duration::from_millis(500);
        assert!(matches!(l.check(KEY, t1), Decision::Allowed { remaining: 0, .. }));
        assert!(matches!(l.check(KEY, t1), Decision::Limited { .. }));
        // After the reset, the whole burst is back.
        let t2 = t1 + Duration::from_millis(1500);
        assert!(matches!(l.check(KEY, t2), Decision::Allowed { remaining: 2, .. }));
    }

    #[test]
    fn extreme_rates_neither_overflow_nor_panic() {
        let now = Instant::now();
        for (per_second, burst) in [(1e-300, u32::MAX), (f64::MIN_POSITIVE, 1), (1e300, 1)] {
            let l = limiter(per_second, burst);
            for _ in 0..3 {
                l.check(KEY, now);
            }
        }
        let slow = limiter(1e-300, 1);
        slow.check(KEY, now);
        assert!(
            matches!(slow.check(KEY, now), Decision::Limited { retry_after, .. } if retry_after == MAX_INTERVAL)
        );
    }

    #[test]
    fn waiting_is_read_without_counting() {
        let l = limiter(1.0, 2);
        let now = Instant::now();
        for _ in 0..5 {
            assert_eq!(l.wait(KEY, now), None);
        }
        l.check(KEY, now);
        assert_eq!(l.wait(KEY, now), None);
        l.check(KEY, now);
        assert_eq!(l.wait(KEY, now), Some(Duration::from_secs(1)));
        assert_eq!(l.wait(KEY, now + Duration::from_secs(1)), None);
    }

    #[test]
    fn keys_have_buckets_of_their_own() {
        let l = limiter(1.0, 1);
        let now = Instant::now();
        assert!(matches!(l.check(KEY, now), Decision::Allowed { .. }));
        assert!(matches!(l.check(KEY, now), Decision::Limited { .. }));
        assert!(matches!(l.check([2; 32], now), Decision::Allowed { .. }));
    }

    #[test]
    fn full_buckets_are_forgotten_and_busy_ones_kept() {
        let l = limiter(1.0, 5);
        let t0 = Instant::now();
        l.check(KEY, t0);
        l.check(KEY, t0);
        for i in 0..PRUNE_MIN - 1 {
            let mut key = [0; 32];
            key[..8].copy_from_slice(&(i as u64).to_le_bytes());
            l.check(key, t0);
        }
        // 1.5 s on, only KEY (two requests, so 2 s ahead) is still above a full bucket.
        l.check([9; 32], t0 + Duration::from_millis(1500));
        let buckets = l.buckets.lock().unwrap();
        assert_eq!(buckets.tat.len(), 2, "KEY and the newest key");
        assert!(buckets.tat.contains_key(&KEY));
    }

    #[test]
    fn seconds_round_up() {
        assert_eq!(ceil_secs(Duration::ZERO), 0);
        assert_eq!(ceil_secs(Duration::from_millis(1)), 1);
        assert_eq!(ceil_secs(Duration::from_secs(2)), 2);
        assert_eq!(ceil_secs(Duration::from_millis(2001)), 3);
    }
}
