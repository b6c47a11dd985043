//! Time: the `Clock` every time-based rule reads, and the wire format of timestamps
//! (RFC 3339 UTC, millisecond precision, `Z`).

use std::sync::{Arc, Mutex};

use chrono::{DateTime, SecondsFormat, Utc};

pub type Timestamp = DateTime<Utc>;

/// Source of "now". Services never call `Utc::now()` directly so that tests and dev mode
/// can move time.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> Timestamp;
}

#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        truncate_ms(Utc::now())
    }
}

/// A clock that only moves when told to; starts at the real time of its creation.
#[derive(Debug, Clone)]
pub struct TestClock {
    now: Arc<Mutex<Timestamp>>,
}

impl TestClock {
    pub fn new(start: Timestamp) -> Self {
        Self {
            now: Arc::new(Mutex::new(truncate_ms(start))),
        }
    }

    pub fn set(&self, to: Timestamp) {
        *self.lock() = truncate_ms(to);
    }

    pub fn advance(&self, by: chrono::Duration) {
        let mut now = self.lock();
        *now += by;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Timestamp> {
        // A poisoned lock only means another thread panicked mid-assignment of a Copy value.
        self.now.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Default for TestClock {
    fn default() -> Self {
        Self::new(Utc::now())
    }
}

impl Clock for TestClock {
    fn now(&self) -> Timestamp {
        *self.lock()
    }
}

fn truncate_ms(t: Timestamp) -> Timestamp {
    DateTime::from_timestamp_millis(t.timestamp_millis()).unwrap_or(t)
}

/// `2026-11-21T10:00:00.000Z`: fixed width, so it also sorts correctly as text in storage.
pub fn format(t: &Timestamp) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

pub fn parse(s: &str) -> Option<Timestamp> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| truncate_ms(t.with_timezone(&Utc)))
}

/// Serde adapter for `Timestamp` fields: the RFC 3339 text of [`format`], read back with
/// [`parse`].
pub mod rfc3339 {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::Timestamp;

    pub fn serialize<S: Serializer>(t: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format(t))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let raw = String::deserialize(d)?;
        super::parse(&raw).ok_or_else(|| serde::de::Error::custom("expected an RFC 3339 timestamp"))
    }

    /// The same for `Option<Timestamp>`.
    pub mod option {
        use serde::{Deserialize, Deserializer, Serializer};

        use super::super::Timestamp;

        pub fn serialize<S: Serializer>(t: &Option<Timestamp>, s: S) -> Result<S::Ok, S::Error> {
            match t {
                Some(t) => s.serialize_str(&super::super::format(t)),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Timestamp>, D::Error> {
            match Option::<String>::deserialize(d)? {
                None => Ok(None),
                Some(raw) => super::super::parse(&raw)
                    .map(Some)
                    .ok_or_else(|| serde::de::Error::custom("expected an RFC 3339 timestamp")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_is_fixed_width_millis_utc() {
        let t = parse("2026-11-21T10:00:00.123456+02:00").unwrap();
        assert_eq!(format(&t), "2026-11-21T08:00:00.123Z");
        let whole = parse("2026-11-21T10:00:00Z").unwrap();
        assert_eq!(format(&whole), "2026-11-21T10:00:00.000Z");
    }

    #[test]
    fn test_clock_moves_only_when_told() {
        let clock = TestClock::new(parse("2026-01-01T00:00:00Z").unwrap());
        assert_eq!(format(&clock.now()), "2026-01-01T00:00:00.000Z");
        clock.advance(chrono::Duration::days(8));
        assert_eq!(format(&clock.now()), "2026-01-09T00:00:00.000Z");
        clock.set(parse("2025-05-05T05:05:05.5Z").unwrap());
        assert_eq!(format(&clock.now()), "2025-05-05T05:05:05.500Z");
    }
}
