//! Tracked behaviour events (`POST /track`, decisions §8): the validation of one event and the
//! properties scoring reads, extracted into typed fields. (`tracking` is another matter: opens
//! and clicks of the emails churn sends.)

use chrono::NaiveDate;
use serde_json::{Map, Value};

use super::email::Email;
use super::validation::Validator;
use crate::time::{self, Timestamp};

pub const MAX_EVENT_NAME: usize = 64;
pub const MAX_ID: usize = 64;
pub const MAX_PROPERTIES_BYTES: usize = 8 * 1024;
pub const MAX_BATCH: usize = 100;
/// How far ahead of the service clock a timestamp may be.
pub const MAX_AHEAD_DAYS: i64 = 1;
/// How far back: five years of 365 days plus the leap days they may hold.
pub const MAX_BACK_DAYS: i64 = 5 * 365 + 2;
/// Longest extracted text property kept in a typed column (feature, category).
const MAX_DETAIL: usize = 200;

const FIELDS: [&str; 5] = ["id", "event", "customer_email", "properties", "timestamp"];

/// One valid tracked event.
#[derive(Debug, Clone, PartialEq)]
pub struct BehaviorEvent {
    /// The caller's id, which makes the call idempotent; `None`: a fresh one is made.
    pub id: Option<String>,
    pub event: String,
    pub customer_email: String,
    pub properties: Map<String, Value>,
    pub occurred_at: Timestamp,
    pub extracted: Extracted,
}

/// The properties the signals read, taken out of `properties` when they have the right type
/// (a property of another type is kept in `properties` and ignored by scoring).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extracted {
    /// `duration_seconds`: a non-negative number.
    pub duration_seconds: Option<f64>,
    /// `feature`: a non-empty string.
    pub feature: Option<String>,
    /// `category`: a non-empty string.
    pub category: Option<String>,
    /// `score` of an `nps_response`: an integer 0–10.
    pub nps_score: Option<i64>,
    /// `expires_at` of a `payment_method_expiring`: RFC 3339, or a date `YYYY-MM-DD`
    /// (then the end of that day).
    pub expires_at: Option<Timestamp>,
}

impl BehaviorEvent {
    /// The UTC day of the event, as daily rollups key it (`YYYY-MM-DD`).
    pub fn day(&self) -> String {
        day_key(self.occurred_at.date_naive())
    }

    /// The rollup's second dimension: the feature of `feature_used`, the category of
    /// `page_viewed`, else empty.
    pub fn detail(&self) -> &str {
        let detail = match self.event.as_str() {
            "feature_used" => self.extracted.feature.as_deref(),
            "page_viewed" => self.extracted.category.as_deref(),
            _ => None,
        };
        detail.unwrap_or("")
    }
}

pub fn day_key(day: NaiveDate) -> String {
    day.format("%Y-%m-%d").to_string()
}

/// Validates one event (an object) against the service clock's `now`; problems are recorded
/// in `v` under `prefix` + field name (`events[3].timestamp` in a batch).
pub fn parse_event(
    v: &mut Validator,
    prefix: &str,
    raw: &Value,
    now: Timestamp,
) -> Option<BehaviorEvent> {
    let field = |name: &str| format!("{prefix}{name}");
    let Some(obj) = raw.as_object() else {
        let name = prefix.trim_end_matches('.');
        v.add(
            if name.is_empty() { "body" } else { name },
            "must be an object",
        );
        return None;
    };
    let before = v.error_count();
    for key in obj.keys().filter(|k| !FIELDS.contains(&k.as_str())) {
        v.add(&field(key), "unknown field");
    }
    let text = |v: &mut Validator, name: &str| match obj.get(name) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            v.add(&field(name), "must be a string");
            None
        }
    };
    let id = text(v, "id");
    if let Some(id) = &id
        && (id.is_empty() || id.chars().count() > MAX_ID)
    {
        v.add(&field("id"), format!("must be 1 to {MAX_ID} characters"));
    }
    let missing = |name: &str| obj.get(name).is_none_or(Value::is_null);
    if missing("event") {
        v.add(&field("event"), "is required");
    }
    let event = text(v, "event");
    if let Some(e) = &event
        && (e.trim().is_empty() || e.chars().count() > MAX_EVENT_NAME)
    {
        v.add(
            &field("event"),
            format!("must be 1 to {MAX_EVENT_NAME} characters"),
        );
    }
    if missing("customer_email") {
        v.add(&field("customer_email"), "is required");
    }
    let email = text(v, "customer_email")
        .and_then(|raw| v.check(&field("customer_email"), Email::parse(&raw)));
    let properties = match obj.get("properties") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => {
            if Value::Object(map.clone()).to_string().len() > MAX_PROPERTIES_BYTES {
                v.add(
                    &field("properties"),
                    format!("must be at most {MAX_PROPERTIES_BYTES} bytes of JSON"),
                );
            }
            map.clone()
        }
        Some(_) => {
            v.add(&field("properties"), "must be an object");
            Map::new()
        }
    };
    let occurred_at = match text(v, "timestamp") {
        None => Some(now),
        Some(raw) => v.check(
            &field("timestamp"),
            time::parse(&raw)
                .ok_or_else(|| "must be an RFC 3339 timestamp".to_owned())
                .and_then(|t| check_window(t, now)),
        ),
    };
    if v.error_count() > before {
        return None;
    }
    let event = event?;
    let extracted = extract(&event, &properties);
    Some(BehaviorEvent {
        id,
        event,
        customer_email: email?.into_inner(),
        properties,
        occurred_at: occurred_at?,
        extracted,
    })
}

fn check_window(t: Timestamp, now: Timestamp) -> Result<Timestamp, String> {
    if t > now + chrono::Duration::days(MAX_AHEAD_DAYS) {
        Err("must not be more than 1 day in the future".into())
    } else if t < now - chrono::Duration::days(MAX_BACK_DAYS) {
        Err("must not be more than 5 years in the past".into())
    } else {
        Ok(t)
    }
}

/// Takes the properties the signals read out of `properties`.
pub fn extract(event: &str, properties: &Map<String, Value>) -> Extracted {
    let text = |name: &str| {
        properties
            .get(name)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| s.chars().take(MAX_DETAIL).collect::<String>())
    };
    Extracted {
        duration_seconds: properties
            .get("duration_seconds")
            .and_then(Value::as_f64)
            .filter(|d| d.is_finite() && *d >= 0.0),
        feature: text("feature"),
        category: text("category"),
        nps_score: (event == "nps_response")
            .then(|| properties.get("score").and_then(Value::as_i64))
            .flatten()
            .filter(|s| (0..=10).contains(s)),
        expires_at: (event == "payment_method_expiring")
            .then(|| properties.get("expires_at").and_then(Value::as_str))
            .flatten()
            .and_then(parse_expiry),
    }
}

fn parse_expiry(raw: &str) -> Option<Timestamp> {
    time::parse(raw).or_else(|| {
        let day = NaiveDate::parse_from_str(raw, "%Y-%m-%d").ok()?;
        Some(day.and_hms_milli_opt(23, 59, 59, 999)?.and_utc())
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::error::Error;

    fn now() -> Timestamp {
        time::parse("2026-11-21T10:00:00Z").unwrap()
    }

    fn parse(raw: Value) -> Result<BehaviorEvent, Vec<String>> {
        let mut v = Validator::new();
        let event = parse_event(&mut v, "", &raw, now());
        match v.finish() {
            Ok(()) => Ok(event.expect("valid without errors")),
            Err(Error::Validation { details, .. }) => {
                assert!(event.is_none());
                Err(details.into_iter().map(|d| d.field).collect())
            }
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn a_minimal_event_is_stamped_now() {
        let e = parse(json!({"event": "login", "customer_email": " Ada@Example.com "})).unwrap();
        assert_eq!(e.customer_email, "ada@example.com");
        assert_eq!(e.occurred_at, now());
        assert_eq!(e.id, None);
        assert_eq!(e.day(), "2026-11-21");
        assert_eq!(e.detail(), "");
    }

    #[test]
    fn every_bad_field_is_named() {
        let long = "x".repeat(65);
        let fields = parse(json!({
            "id": long, "event": "", "customer_email": "nope",
            "properties": [1], "timestamp": "yesterday", "extra": 1
        }))
        .unwrap_err();
        assert_eq!(
            fields,
            [
                "extra",
                "id",
                "event",
                "customer_email",
                "properties",
                "timestamp"
            ]
        );
        assert_eq!(parse(json!({})).unwrap_err(), ["event", "customer_email"]);
        assert_eq!(parse(json!("login")).unwrap_err(), ["body"]);
    }

    #[test]
    fn names_and_ids_have_limits() {
        let ok = |event: &str, id: &str| {
            parse(json!({"event": event, "id": id, "customer_email": "a@b.io"})).is_ok()
        };
        assert!(ok(&"e".repeat(64), &"i".repeat(64)));
        assert!(!ok(&"e".repeat(65), "i"));
        assert!(!ok("e", &"i".repeat(65)));
        assert!(!ok("   ", "i"));
        assert!(!ok("e", ""));
    }

    #[test]
    fn properties_are_limited_to_8_kib() {
        let event = |len: usize| {
            // {"k":"…"} is 8 bytes of JSON around the value.
            json!({"event": "e", "customer_email": "a@b.io", "properties": {"k": "v".repeat(len - 8)}})
        };
        assert!(parse(event(MAX_PROPERTIES_BYTES)).is_ok());
        assert_eq!(
            parse(event(MAX_PROPERTIES_BYTES + 1)).unwrap_err(),
            ["properties"]
        );
    }

    #[test]
    fn timestamps_may_be_a_day_ahead_and_five_years_back() {
        let at = |t: &str| {
            parse(json!({"event": "e", "customer_email": "a@b.io", "timestamp": t}))
                .map(|e| e.occurred_at)
        };
        assert!(at("2026-11-22T10:00:00Z").is_ok());
        assert!(at("2026-11-22T10:00:00.001Z").is_err());
        assert!(at("2021-11-20T10:00:00Z").is_ok());
        assert!(at("2021-11-19T09:59:59Z").is_err());
        assert_eq!(
            at("2026-11-21T12:00:00+02:00").unwrap(),
            time::parse("2026-11-21T10:00:00Z").unwrap()
        );
    }

    #[test]
    fn typed_properties_are_extracted() {
        let e = |event: &str, props: Value| extract(event, props.as_object().unwrap());
        let session = e(
            "session",
            json!({"duration_seconds": 42.5, "feature": " export ", "category": "competitor"}),
        );
        assert_eq!(session.duration_seconds, Some(42.5));
        assert_eq!(session.feature.as_deref(), Some("export"));
        assert_eq!(session.category.as_deref(), Some("competitor"));
        assert_eq!(
            e("login", json!({"duration_seconds": -1})).duration_seconds,
            None
        );
        assert_eq!(
            e("login", json!({"duration_seconds": "60"})).duration_seconds,
            None
        );
        assert_eq!(e("nps_response", json!({"score": 6})).nps_score, Some(6));
        assert_eq!(e("nps_response", json!({"score": 11})).nps_score, None);
        assert_eq!(e("survey", json!({"score": 6})).nps_score, None);
        assert_eq!(
            e(
                "payment_method_expiring",
                json!({"expires_at": "2026-12-01"})
            )
            .expires_at,
            time::parse("2026-12-01T23:59:59.999Z")
        );
        assert_eq!(
            e(
                "payment_method_expiring",
                json!({"expires_at": "2026-12-01T00:00:00Z"})
            )
            .expires_at,
            time::parse("2026-12-01T00:00:00Z")
        );
        assert_eq!(
            e("payment_method_expiring", json!({"expires_at": "soon"})).expires_at,
            None
        );
    }

    #[test]
    fn the_rollup_detail_is_the_feature_or_the_category() {
        let event = |name: &str, props: Value| {
            parse(json!({"event": name, "customer_email": "a@b.io", "properties": props})).unwrap()
        };
        assert_eq!(
            event("feature_used", json!({"feature": "export"})).detail(),
            "export"
        );
        assert_eq!(
            event("page_viewed", json!({"category": "competitor"})).detail(),
            "competitor"
        );
        assert_eq!(event("login", json!({"feature": "export"})).detail(), "");
    }
}
