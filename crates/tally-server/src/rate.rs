//! A request-rate limit per credential: a token bucket for each credential that sent a
//! request, refilled at the allowed rate and holding at most one second's worth.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use rustc_hash::FxHashMap;

/// The buckets of every credential.
pub(crate) struct RateLimit {
    per_second: f64,
    buckets: Mutex<FxHashMap<String, Bucket>>,
}

/// One credential's requests in hand, as of `at`.
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl RateLimit {
    /// Allows `per_second` requests per second to each credential, in bursts of as many.
    pub(crate) fn new(per_second: u32) -> Self {
        Self {
            per_second: f64::from(per_second.max(1)),
            buckets: Mutex::default(),
        }
    }

    /// Takes one request from `credential`'s bucket, or says how long until one is there.
    pub(crate) fn take(&self, credential: &str, now: Instant) -> Result<(), Duration> {
        let mut buckets = self.buckets.lock().expect("rate limit lock");
        let bucket = buckets
            .entry(credential.to_owned())
            .or_insert_with(|| Bucket {
                tokens: self.per_second,
                at: now,
            });
        let refilled = now.saturating_duration_since(bucket.at).as_secs_f64() * self.per_second;
        bucket.tokens = (bucket.tokens + refilled).min(self.per_second);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64(
                (1.0 - bucket.tokens) / self.per_second,
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_of_the_rate_passes_then_the_bucket_refills_at_the_rate() {
        let limit = RateLimit::new(4);
        let start = Instant::now();
        for _ in 0..4 {
            assert_eq!(limit.take("a", start), Ok(()));
        }
        assert_eq!(limit.take("a", start), Err(Duration::from_millis(250)));
        // Another credential has a bucket of its own.
        assert_eq!(limit.take("b", start), Ok(()));
        let later = start + Duration::from_millis(500);
        assert_eq!(limit.take("a", later), Ok(()));
        assert_eq!(limit.take("a", later), Ok(()));
        assert!(limit.take("a", later).is_err());
        // A long pause refills one second's worth, no more.
        let much_later = later + Duration::from_secs(60);
        for _ in 0..4 {
            assert_eq!(limit.take("a", much_later), Ok(()));
        }
        assert!(limit.take("a", much_later).is_err());
    }
}
