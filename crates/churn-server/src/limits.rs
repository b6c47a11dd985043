//! The limits every request is held to: the body size ([`MAX_BODY_BYTES`]) and the rate
//! limits ([`RateLimits`]). Used by the middleware that applies them and by the cancel-flow
//! route, which checks its own limit; neither reaches into the other for them.
//!
//! Rate limits with `X-RateLimit-Limit/Remaining/Reset` on every response: per IP, credential
//! routes 5 rps (burst 10), everything else 10 rps (burst 30). Two kinds of route are limited
//! per key instead, once the key has authenticated (decisions §20): `/track` per secret key,
//! 100 rps (burst 200), and inbound provider webhooks per public key, 200 rps (burst 1,000),
//! since a provider delivers for every tenant from a few addresses. A key that does not
//! authenticate is charged to its IP's bucket, so made-up keys buy no buckets of their own
//! (and, remembered as unknown, cost no database read after the first). Buckets are keyed
//! by the key itself, not by its spelling (`sk_`/`cg_sk_`, `pub_`/`cg_pub_`).
//! Tokens refill continuously (GCRA); `Reset` is the seconds until the bucket is full again.
//! An IPv6 client is keyed by its /64, the block one subscriber gets, so rotating addresses
//! inside it gains nothing. Cancel-flow submissions are also limited per public key (10 per
//! 15 s), checked by their handler once it knows the key; their answers carry that limit's
//! headers instead.

use std::hash::Hash;
use std::net::{IpAddr, Ipv6Addr};
use std::num::NonZeroU32;
use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue};
use axum::response::Response;
use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};

use crate::error::ApiError;
use churn_core::domain::keys::{KeyKind, PresentedKey};

/// Request bodies larger than this are refused with 413.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

type Limiter<K> =
    RateLimiter<K, DefaultKeyedStateStore<K>, DefaultClock, StateInformationMiddleware>;

struct Bucket<K: Hash + Eq + Clone = IpAddr> {
    limiter: Limiter<K>,
    burst: u32,
    refill: Duration,
}

fn nz(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n).expect("rate limit constants are non-zero")
}

impl<K: Hash + Eq + Clone> Bucket<K> {
    fn new(per_second: u32, burst: u32) -> Self {
        Self::with_quota(
            Quota::per_second(nz(per_second)).allow_burst(nz(burst)),
            burst,
        )
    }

    fn with_quota(quota: Quota, burst: u32) -> Self {
        Self {
            limiter: RateLimiter::keyed(quota).with_middleware::<StateInformationMiddleware>(),
            burst,
            refill: quota.replenish_interval(),
        }
    }

    /// Takes a token for `key`: the answer's `X-RateLimit-*` values on success, the refusal
    /// (429 with `Retry-After`) otherwise.
    fn take(&self, key: &K, clock: &DefaultClock, path: &str) -> Result<Stamp, Box<Response>> {
        match self.limiter.check_key(key) {
            Ok(snapshot) => {
                let remaining = snapshot.remaining_burst_capacity();
                Ok(Stamp {
                    limit: self.burst,
                    remaining,
                    reset: self.refill * (self.burst - remaining),
                })
            }
            Err(not_until) => {
                let wait = not_until.wait_time_from(clock.now());
                let mut response = ApiError::rate_limited(ceil_secs(wait)).into_response_for(path);
                set_headers(
                    response.headers_mut(),
                    self.burst,
                    0,
                    self.refill * self.burst,
                );
                Err(Box::new(response))
            }
        }
    }
}

/// The `X-RateLimit-*` values of an allowed request.
pub struct Stamp {
    limit: u32,
    remaining: u32,
    reset: Duration,
}

impl Stamp {
    pub fn apply(&self, headers: &mut HeaderMap) {
        set_headers(headers, self.limit, self.remaining, self.reset);
    }
}

pub struct RateLimits {
    auth: Bucket,
    general: Bucket,
    /// `/track`, keyed by an authenticated secret key.
    tracking: Bucket<String>,
    /// Inbound provider webhooks, keyed by an authenticated public key.
    webhooks: Bucket<String>,
    /// Cancel-flow submissions per public key: 10 per 15 s (decisions §11).
    cancel_flow: Bucket<String>,
    clock: DefaultClock,
}

const CANCEL_FLOW_BURST: u32 = 10;
const CANCEL_FLOW_PERIOD: Duration = Duration::from_secs(15);

/// Routes that take credentials get the stricter limit.
const CREDENTIAL_ROUTES: &[&str] = &[
    "/api/v1/auth/login",
    "/api/v1/auth/register",
    "/api/v1/auth/forgot-password",
    "/api/v1/auth/reset-password",
    "/api/v1/auth/idp",
    "/api/v1/auth/password",
    "/api/v1/auth/verify-email",
    "/reset-password",
    "/verify-email",
];

impl RateLimits {
    pub fn new() -> Self {
        Self {
            auth: Bucket::new(5, 10),
            general: Bucket::new(10, 30),
            tracking: Bucket::new(100, 200),
            webhooks: Bucket::new(200, 1_000),
            cancel_flow: Bucket::with_quota(
                Quota::with_period(CANCEL_FLOW_PERIOD / CANCEL_FLOW_BURST)
                    .expect("non-zero period")
                    .allow_burst(nz(CANCEL_FLOW_BURST)),
                CANCEL_FLOW_BURST,
            ),
            clock: DefaultClock::default(),
        }
    }

    /// Forgets idle clients so memory stays bounded.
    pub fn sweep(&self) {
        for bucket in [&self.auth, &self.general] {
            bucket.limiter.retain_recent();
            bucket.limiter.shrink_to_fit();
        }
        for bucket in [&self.tracking, &self.webhooks, &self.cancel_flow] {
            bucket.limiter.retain_recent();
            bucket.limiter.shrink_to_fit();
        }
    }

    /// Counts a cancel-flow submission with this public key, whichever way it is spelled.
    pub fn check_cancel_flow(&self, public_key: &str, path: &str) -> Result<Stamp, Box<Response>> {
        let key =
            PresentedKey::parse(public_key).map_or_else(|| public_key.to_owned(), |k| k.lookup());
        self.cancel_flow.take(&key, &self.clock, path)
    }
}

impl RateLimits {
    /// Charges a request to `path` to its client's bucket: the stricter one for routes that
    /// take credentials.
    pub fn charge_ip(&self, path: &str, client: IpAddr) -> Result<Stamp, Box<Response>> {
        let bucket = if CREDENTIAL_ROUTES.contains(&path) {
            &self.auth
        } else {
            &self.general
        };
        bucket.take(&limit_key(client), &self.clock, path)
    }

    /// Charges a request to `path` to the bucket of a key that authenticated: a secret key
    /// (only `/track` is limited by one) or a public key (inbound provider webhooks).
    pub fn charge_key(&self, key: &PresentedKey, path: &str) -> Result<Stamp, Box<Response>> {
        let bucket = match key.kind {
            KeyKind::Secret => &self.tracking,
            KeyKind::Public => &self.webhooks,
        };
        bucket.take(&key.lookup(), &self.clock, path)
    }

    /// Counts a request hyper could not parse against its peer's general limit, and the
    /// limit headers for its answer. No request was read, so the peer address is the key.
    pub fn charge_unparsed(&self, peer: IpAddr) -> [(&'static str, u64); 3] {
        let bucket = &self.general;
        let remaining = bucket
            .limiter
            .check_key(&limit_key(peer))
            .map_or(0, |s| s.remaining_burst_capacity());
        [
            ("x-ratelimit-limit", u64::from(bucket.burst)),
            ("x-ratelimit-remaining", u64::from(remaining)),
            (
                "x-ratelimit-reset",
                ceil_secs(bucket.refill * (bucket.burst - remaining)),
            ),
        ]
    }
}

/// IPv4 as is (also when mapped into IPv6); IPv6 by its /64.
fn limit_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !(u128::from(u64::MAX)))),
        },
    }
}

fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

fn set_headers(headers: &mut HeaderMap, limit: u32, remaining: u32, reset: Duration) {
    headers.insert("x-ratelimit-limit", HeaderValue::from(limit));
    headers.insert("x-ratelimit-remaining", HeaderValue::from(remaining));
    headers.insert("x-ratelimit-reset", HeaderValue::from(ceil_secs(reset)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_allowed_then_refused() {
        let bucket: Bucket = Bucket::new(10, 30);
        let ip: IpAddr = "203.0.113.7".parse().unwrap();
        let mut last = u32::MAX;
        for _ in 0..30 {
            last = bucket
                .limiter
                .check_key(&ip)
                .unwrap()
                .remaining_burst_capacity();
        }
        assert_eq!(last, 0);
        assert!(bucket.limiter.check_key(&ip).is_err());
        let other: IpAddr = "203.0.113.8".parse().unwrap();
        assert!(
            bucket.limiter.check_key(&other).is_ok(),
            "limits are per IP"
        );
        assert_eq!(bucket.refill, Duration::from_millis(100));
    }

    #[test]
    fn cancel_flow_allows_ten_per_fifteen_seconds_per_key() {
        let limits = RateLimits::new();
        for _ in 0..10 {
            assert!(limits.check_cancel_flow("pub_a", "/").is_ok());
        }
        assert!(limits.check_cancel_flow("pub_a", "/").is_err());
        assert!(limits.check_cancel_flow("pub_b", "/").is_ok(), "per key");
        assert_eq!(limits.cancel_flow.refill, Duration::from_millis(1500));
    }

    #[test]
    fn cancel_flow_counts_the_key_not_its_spelling() {
        let limits = RateLimits::new();
        for i in 0..10 {
            let spelled = if i % 2 == 0 { "pub_a" } else { "cg_pub_a" };
            assert!(limits.check_cancel_flow(spelled, "/").is_ok());
        }
        assert!(limits.check_cancel_flow("cg_pub_a", "/").is_err());
        assert!(limits.check_cancel_flow("pub_a", "/").is_err());
    }

    #[test]
    fn webhooks_get_a_thousand_per_key_then_two_hundred_a_second() {
        let limits = RateLimits::new();
        let key = "a".to_owned();
        for _ in 0..1_000 {
            assert!(limits.webhooks.limiter.check_key(&key).is_ok());
        }
        assert!(limits.webhooks.limiter.check_key(&key).is_err());
        assert!(limits.webhooks.limiter.check_key(&"b".to_owned()).is_ok());
        assert_eq!(limits.webhooks.refill, Duration::from_millis(5));
    }

    #[test]
    fn tracking_keys_get_200_then_wait() {
        let bucket: Bucket<String> = Bucket::new(100, 200);
        let key = "sk_live_a".to_owned();
        for _ in 0..200 {
            assert!(bucket.limiter.check_key(&key).is_ok());
        }
        assert!(bucket.limiter.check_key(&key).is_err());
        assert!(bucket.limiter.check_key(&"sk_live_b".to_owned()).is_ok());
        assert_eq!(bucket.refill, Duration::from_millis(10));
    }

    #[test]
    fn ipv6_clients_share_their_64() {
        let key = |s: &str| limit_key(s.parse().unwrap());
        assert_eq!(
            key("2001:db8:1:2:aaaa::1"),
            key("2001:db8:1:2:ffff:ffff:ffff:ffff")
        );
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
        assert_eq!(key("::ffff:203.0.113.7"), key("203.0.113.7"));
        assert_ne!(key("203.0.113.7"), key("203.0.113.8"));

        let bucket: Bucket = Bucket::new(10, 30);
        for i in 0..30u16 {
            let rotated = format!("2001:db8:1:2::{i:x}");
            assert!(bucket.limiter.check_key(&key(&rotated)).is_ok());
        }
        assert!(
            bucket
                .limiter
                .check_key(&key("2001:db8:1:2::abcd"))
                .is_err(),
            "a new address in the same /64 is still limited"
        );
    }
}
