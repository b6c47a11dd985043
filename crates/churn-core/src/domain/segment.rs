//! Which customers a cancel flow is for (decisions §19): a flow's segment, the facts the
//! widget passes about the customer, and the routing rule that picks the flow to show.
//!
//! A segment is a conjunction of the conditions it names; a segment naming nothing matches
//! everyone. A fact the widget did not pass never satisfies a condition on it, so a flow for
//! "plans: Pro" is not shown to a customer whose plan is unknown.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::objects_only::objects_only;
use super::validation::{Validator, required_text};
use super::wire_enum::wire_enum;

/// The plans a segment may name.
pub const MAX_PLANS: usize = 50;
/// The properties a segment may require, or the widget may pass.
pub const MAX_PROPERTIES: usize = 20;
pub const MAX_PROPERTY_KEY: usize = 100;
pub const MAX_PROPERTY_VALUE: usize = 500;
/// Monthly recurring revenue in cents, the bound of churn events' `mrr`.
pub const MAX_MRR: i64 = 1_000_000_000_000;
/// The message of an MRR out of range, on churn events and segments alike.
pub const MRR_RANGE: &str = "must be between 0 and 1000000000000 (cents)";
/// A tenure of a hundred years is enough for anyone.
pub const MAX_TENURE_DAYS: i64 = 36_500;
/// Plan names, as on churn events.
pub const MAX_PLAN_NAME: usize = 500;

wire_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, ToSchema)]
    pub enum BillingInterval {
        Month = "month",
        Year = "year",
    }
}

/// A flow's segment as stored and answered: only the conditions it names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Segment {
    /// The customer's plan is one of these names (exact, trimmed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plans: Option<Vec<String>>,
    /// MRR in cents, at least this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mrr_min: Option<i64>,
    /// MRR in cents, at most this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mrr_max: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenure_min_days: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenure_max_days: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub billing_interval: Option<BillingInterval>,
    /// Each of these properties passed by the widget, with exactly this value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub properties: BTreeMap<String, String>,
}

/// A segment as sent; every condition optional.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct SegmentInput {
    /// 1–50 plan names.
    #[schema(min_items = 1, max_items = 50)]
    pub plans: Option<Vec<String>>,
    #[schema(minimum = 0, maximum = 1e12)]
    pub mrr_min: Option<i64>,
    #[schema(minimum = 0, maximum = 1e12)]
    pub mrr_max: Option<i64>,
    #[schema(minimum = 0, maximum = 36500)]
    pub tenure_min_days: Option<i64>,
    #[schema(minimum = 0, maximum = 36500)]
    pub tenure_max_days: Option<i64>,
    #[schema(value_type = Option<BillingInterval>)]
    pub billing_interval: Option<String>,
    /// At most 20 properties, string values.
    pub properties: Option<BTreeMap<String, String>>,
}

impl SegmentInput {
    /// The segment, with every bad condition named `segment.<field>` in `v`.
    pub fn validate(self, v: &mut Validator) -> Segment {
        let mut segment = Segment::default();
        if let Some(plans) = self.plans {
            if !(1..=MAX_PLANS).contains(&plans.len()) {
                v.add(
                    "segment.plans",
                    format!("must hold 1 to {MAX_PLANS} plan names"),
                );
            }
            let mut names = Vec::with_capacity(plans.len());
            for (i, plan) in plans.iter().enumerate() {
                if let Some(name) = v.check(
                    &format!("segment.plans[{i}]"),
                    required_text(plan, MAX_PLAN_NAME),
                ) {
                    names.push(name);
                }
            }
            segment.plans = Some(names);
        }
        let mut bounded = |field: &str, value: Option<i64>, max: i64, message: &str| match value {
            Some(n) if !(0..=max).contains(&n) => {
                v.add(&format!("segment.{field}"), message);
                None
            }
            other => other,
        };
        let tenure_range = format!("must be between 0 and {MAX_TENURE_DAYS}");
        segment.mrr_min = bounded("mrr_min", self.mrr_min, MAX_MRR, MRR_RANGE);
        segment.mrr_max = bounded("mrr_max", self.mrr_max, MAX_MRR, MRR_RANGE);
        segment.tenure_min_days = bounded(
            "tenure_min_days",
            self.tenure_min_days,
            MAX_TENURE_DAYS,
            &tenure_range,
        );
        segment.tenure_max_days = bounded(
            "tenure_max_days",
            self.tenure_max_days,
            MAX_TENURE_DAYS,
            &tenure_range,
        );
        if let (Some(min), Some(max)) = (segment.mrr_min, segment.mrr_max)
            && max < min
        {
            v.add("segment.mrr_max", "must not be less than mrr_min");
        }
        if let (Some(min), Some(max)) = (segment.tenure_min_days, segment.tenure_max_days)
            && max < min
        {
            v.add(
                "segment.tenure_max_days",
                "must not be less than tenure_min_days",
            );
        }
        segment.billing_interval = self
            .billing_interval
            .as_deref()
            .and_then(|raw| v.check("segment.billing_interval", billing_interval(raw)));
        if let Some(properties) = self.properties {
            segment.properties = check_properties("segment.properties", properties, v);
        }
        segment
    }
}

/// What the widget says about the customer; each fact may be unknown.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CustomerFacts {
    pub plan_name: Option<String>,
    pub mrr: Option<i64>,
    pub tenure_days: Option<i64>,
    pub billing_interval: Option<BillingInterval>,
    pub properties: BTreeMap<String, String>,
}

impl Segment {
    /// Whether a customer with these facts is in the segment: every condition it names holds,
    /// and a condition on an unknown fact does not.
    pub fn matches(&self, facts: &CustomerFacts) -> bool {
        let at_least = |bound: Option<i64>, fact: Option<i64>| {
            bound.is_none_or(|b| fact.is_some_and(|f| f >= b))
        };
        let at_most = |bound: Option<i64>, fact: Option<i64>| {
            bound.is_none_or(|b| fact.is_some_and(|f| f <= b))
        };
        let plan = facts.plan_name.as_deref().map(str::trim);
        self.plans
            .as_ref()
            .is_none_or(|plans| plan.is_some_and(|p| plans.iter().any(|name| name == p)))
            && at_least(self.mrr_min, facts.mrr)
            && at_most(self.mrr_max, facts.mrr)
            && at_least(self.tenure_min_days, facts.tenure_days)
            && at_most(self.tenure_max_days, facts.tenure_days)
            && self
                .billing_interval
                .is_none_or(|i| facts.billing_interval == Some(i))
            && self
                .properties
                .iter()
                .all(|(key, value)| facts.properties.get(key) == Some(value))
    }
}

/// A flow as routing sees it.
pub trait Routable {
    fn priority(&self) -> i64;
    fn active(&self) -> bool;
    fn segment(&self) -> &Segment;
}

/// The flow to show (decisions §19): the active flow of lowest priority whose segment
/// matches; among equal priorities the first in `flows`. `None`: the default flow.
pub fn route<'a, F: Routable>(flows: &'a [F], facts: &CustomerFacts) -> Option<&'a F> {
    flows
        .iter()
        .filter(|f| f.active() && f.segment().matches(facts))
        .min_by_key(|f| f.priority())
}

/// The widget's facts as sent (query parameters or body fields), checked into `v` under
/// their own names. `mrr`, `tenure_days` and `plan_name` are checked by the caller's own
/// rules where it has them, so only values in range are used here.
#[derive(Debug, Clone, Default)]
pub struct FactsInput<'a> {
    pub plan_name: Option<&'a str>,
    pub mrr: Option<i64>,
    pub tenure_days: Option<i64>,
    pub billing_interval: Option<&'a str>,
    pub properties: Option<serde_json::Value>,
}

impl FactsInput<'_> {
    /// The facts; a bad `billing_interval` or `properties` is named in `v`, and so are an
    /// `mrr` or `tenure_days` out of range when `check_numbers`.
    pub fn check(self, v: &mut Validator, check_numbers: bool) -> CustomerFacts {
        let mrr = self.mrr.filter(|m| (0..=MAX_MRR).contains(m));
        let tenure_days = self.tenure_days.filter(|d| *d >= 0);
        if check_numbers {
            if self.mrr.is_some() && mrr.is_none() {
                v.add("mrr", MRR_RANGE);
            }
            if self.tenure_days.is_some() && tenure_days.is_none() {
                v.add("tenure_days", "must not be negative");
            }
        }
        let billing_interval = self
            .billing_interval
            .and_then(|raw| v.check("billing_interval", billing_interval(raw)));
        let properties = match self.properties {
            None | Some(serde_json::Value::Null) => BTreeMap::new(),
            Some(serde_json::Value::Object(map)) => {
                let mut strings = BTreeMap::new();
                let mut all_strings = true;
                for (key, value) in map {
                    match value {
                        serde_json::Value::String(s) => {
                            strings.insert(key, s);
                        }
                        _ => all_strings = false,
                    }
                }
                if all_strings {
                    check_properties("properties", strings, v)
                } else {
                    v.add("properties", "values must be strings");
                    BTreeMap::new()
                }
            }
            Some(_) => {
                v.add("properties", "must be a JSON object of strings");
                BTreeMap::new()
            }
        };
        CustomerFacts {
            plan_name: self
                .plan_name
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(str::to_owned),
            mrr,
            tenure_days,
            billing_interval,
            properties,
        }
    }
}

/// `properties` of a query string: a JSON object of strings.
pub fn parse_properties(raw: &str) -> std::result::Result<serde_json::Value, String> {
    serde_json::from_str(raw).map_err(|_| "must be a JSON object of strings".to_owned())
}

fn billing_interval(raw: &str) -> std::result::Result<BillingInterval, &'static str> {
    BillingInterval::parse(raw.trim()).ok_or("must be month or year")
}

fn check_properties(
    field: &str,
    properties: BTreeMap<String, String>,
    v: &mut Validator,
) -> BTreeMap<String, String> {
    if properties.len() > MAX_PROPERTIES {
        v.add(
            field,
            format!("must hold at most {MAX_PROPERTIES} properties"),
        );
        return BTreeMap::new();
    }
    let mut checked = BTreeMap::new();
    for (key, value) in properties {
        if key.trim().is_empty() || key.chars().count() > MAX_PROPERTY_KEY {
            v.add(
                field,
                format!("keys must be 1 to {MAX_PROPERTY_KEY} characters"),
            );
        } else if value.chars().count() > MAX_PROPERTY_VALUE {
            v.add(
                &format!("{field}.{key}"),
                format!("must be at most {MAX_PROPERTY_VALUE} characters"),
            );
        } else {
            checked.insert(key, value);
        }
    }
    checked
}

objects_only!(SegmentInput);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn segment(value: serde_json::Value) -> Segment {
        let mut v = Validator::new();
        let segment = serde_json::from_value::<SegmentInput>(value)
            .unwrap()
            .validate(&mut v);
        v.finish().unwrap();
        segment
    }

    fn bad_fields(value: serde_json::Value) -> Vec<String> {
        let mut v = Validator::new();
        serde_json::from_value::<SegmentInput>(value)
            .unwrap()
            .validate(&mut v);
        match v.finish() {
            Err(crate::error::Error::Validation { details, .. }) => {
                details.into_iter().map(|d| d.field).collect()
            }
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    fn facts() -> CustomerFacts {
        CustomerFacts::default()
    }

    #[test]
    fn an_empty_segment_matches_everyone() {
        assert!(segment(json!({})).matches(&facts()));
    }

    #[test]
    fn plans_match_one_of_the_names() {
        let s = segment(json!({"plans": ["Pro", " Team "]}));
        let on = |plan: &str| CustomerFacts {
            plan_name: Some(plan.into()),
            ..facts()
        };
        assert!(s.matches(&on("Pro")) && s.matches(&on("Team")) && s.matches(&on(" Pro ")));
        assert!(!s.matches(&on("Basic")) && !s.matches(&on("pro")));
        assert!(!s.matches(&facts()), "an unknown plan is in no plan");
    }

    #[test]
    fn mrr_bounds_are_inclusive() {
        let s = segment(json!({"mrr_min": 1000, "mrr_max": 5000}));
        let paying = |mrr| CustomerFacts {
            mrr: Some(mrr),
            ..facts()
        };
        assert!(s.matches(&paying(1000)) && s.matches(&paying(5000)));
        assert!(!s.matches(&paying(999)) && !s.matches(&paying(5001)));
        assert!(!s.matches(&facts()), "an unknown MRR is in no range");
        assert!(!segment(json!({"mrr_max": 5000})).matches(&facts()));
    }

    #[test]
    fn tenure_bounds_are_inclusive() {
        let s = segment(json!({"tenure_min_days": 30, "tenure_max_days": 365}));
        let after = |days| CustomerFacts {
            tenure_days: Some(days),
            ..facts()
        };
        assert!(s.matches(&after(30)) && s.matches(&after(365)));
        assert!(!s.matches(&after(29)) && !s.matches(&after(366)));
        assert!(!s.matches(&facts()), "an unknown tenure is in no range");
        assert!(!segment(json!({"tenure_max_days": 10})).matches(&facts()));
    }

    #[test]
    fn billing_interval_must_be_the_one_named() {
        let s = segment(json!({"billing_interval": "year"}));
        let billed = |i| CustomerFacts {
            billing_interval: Some(i),
            ..facts()
        };
        assert!(s.matches(&billed(BillingInterval::Year)));
        assert!(!s.matches(&billed(BillingInterval::Month)));
        assert!(!s.matches(&facts()), "an unknown interval is neither");
    }

    #[test]
    fn properties_need_every_key_with_its_value() {
        let s = segment(json!({"properties": {"region": "eu", "tier": "gold"}}));
        let with = |pairs: &[(&str, &str)]| CustomerFacts {
            properties: pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..facts()
        };
        assert!(s.matches(&with(&[("region", "eu"), ("tier", "gold"), ("x", "y")])));
        assert!(!s.matches(&with(&[("region", "eu"), ("tier", "silver")])));
        assert!(!s.matches(&with(&[("region", "eu")])), "an absent key");
        assert!(!s.matches(&facts()));
    }

    #[test]
    fn every_condition_must_hold() {
        let s = segment(json!({"plans": ["Pro"], "billing_interval": "month"}));
        let pro_monthly = CustomerFacts {
            plan_name: Some("Pro".into()),
            billing_interval: Some(BillingInterval::Month),
            ..facts()
        };
        assert!(s.matches(&pro_monthly));
        let pro_yearly = CustomerFacts {
            billing_interval: Some(BillingInterval::Year),
            ..pro_monthly
        };
        assert!(!s.matches(&pro_yearly));
    }

    #[test]
    fn every_bad_condition_is_named() {
        assert_eq!(
            bad_fields(json!({
                "plans": ["Pro", " "],
                "mrr_min": -1,
                "tenure_min_days": 40,
                "tenure_max_days": 30,
                "billing_interval": "week",
            })),
            [
                "segment.plans[1]",
                "segment.mrr_min",
                "segment.tenure_max_days",
                "segment.billing_interval",
            ]
        );
        assert_eq!(
            bad_fields(json!({"plans": [], "mrr_min": 10, "mrr_max": 5})),
            ["segment.plans", "segment.mrr_max"]
        );
        let many: BTreeMap<String, String> =
            (0..21).map(|i| (format!("k{i}"), "v".to_owned())).collect();
        assert_eq!(
            bad_fields(json!({ "properties": many })),
            ["segment.properties"]
        );
        assert!(serde_json::from_value::<SegmentInput>(json!({"plan": ["Pro"]})).is_err());
    }

    struct Flow(i64, bool, Segment);

    impl Routable for Flow {
        fn priority(&self) -> i64 {
            self.0
        }
        fn active(&self) -> bool {
            self.1
        }
        fn segment(&self) -> &Segment {
            &self.2
        }
    }

    #[test]
    fn routing_takes_the_active_match_of_lowest_priority() {
        let pro = segment(json!({"plans": ["Pro"]}));
        let flows = [
            Flow(5, true, Segment::default()),
            Flow(1, false, Segment::default()),
            Flow(2, true, pro.clone()),
            Flow(2, true, Segment::default()),
        ];
        let on_pro = CustomerFacts {
            plan_name: Some("Pro".into()),
            ..facts()
        };
        let chosen = |f: &CustomerFacts| {
            route(&flows, f).map(|f| flows.iter().position(|g| std::ptr::eq(g, f)).unwrap())
        };
        assert_eq!(chosen(&on_pro), Some(2), "the inactive flow 1 is skipped");
        assert_eq!(
            chosen(&facts()),
            Some(3),
            "the first of equal priorities that matches"
        );
        assert_eq!(route(&flows[..1], &on_pro).map(|f| f.0), Some(5));
        assert!(route(&flows[1..3], &facts()).is_none(), "the default flow");
    }

    #[test]
    fn widget_facts_are_checked_by_name() {
        let mut v = Validator::new();
        let facts = FactsInput {
            plan_name: Some(" Pro "),
            mrr: Some(-5),
            tenure_days: Some(-1),
            billing_interval: Some("week"),
            properties: Some(json!({"tier": 3})),
        }
        .check(&mut v, true);
        assert_eq!(facts.plan_name.as_deref(), Some("Pro"));
        assert_eq!((facts.mrr, facts.tenure_days), (None, None));
        let fields: Vec<String> = match v.finish() {
            Err(crate::error::Error::Validation { details, .. }) => {
                details.into_iter().map(|d| d.field).collect()
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(
            fields,
            ["mrr", "tenure_days", "billing_interval", "properties"]
        );

        let mut v = Validator::new();
        let facts = FactsInput {
            billing_interval: Some("year"),
            properties: Some(parse_properties(r#"{"region": "eu"}"#).unwrap()),
            mrr: Some(-5),
            ..FactsInput::default()
        }
        .check(&mut v, false);
        assert!(v.finish().is_ok(), "numbers are the caller's to name");
        assert_eq!(facts.billing_interval, Some(BillingInterval::Year));
        assert_eq!(facts.properties["region"], "eu");
        assert!(parse_properties("{").is_err());
    }
}
