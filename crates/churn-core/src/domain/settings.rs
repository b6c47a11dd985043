//! Per-project settings that shape recovery emails and the recovery window.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::objects_only::objects_only;
use super::validation::{Validator, https_url};
use crate::error::Result;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub struct ProjectSettings {
    /// Days after the first recovery email before an unrecovered event counts as lost (1–365).
    pub recovery_window_days: i64,
    /// Percent off offered by the discount strategy (1–90).
    pub discount_percent: i64,
    /// Months the discount lasts (1–36).
    pub discount_months: i64,
    pub founder_name: Option<String>,
    pub product_url: Option<String>,
    /// Where a customer goes to come back (https only); the emails' button leads there.
    /// Unset: `product_url`.
    pub reactivation_url: Option<String>,
    /// Where a customer of custom billing updates their card (https only): the card-update
    /// page's button (decisions §18).
    pub update_payment_url: Option<String>,
    /// Language of generated emails (an IETF tag such as `en`).
    pub language: String,
    /// Recovery on its own (decisions §13).
    pub autopilot: AutopilotSettings,
    /// A promotion code the founder made in their billing system: the discount email offers
    /// it as is when Stripe is not connected (with Stripe, each email gets its own code).
    pub coupon_code: Option<String>,
    /// What customers said, the only quotes the social_proof email may use.
    pub testimonials: Vec<Testimonial>,
    /// Feature names the unused_feature email may point to (beside the customer's tracked ones).
    pub features: Vec<String>,
    /// A customer who accepted a cancel-flow offer within this many days is offered none
    /// (0–3650; 0: no cooldown; decisions §19).
    pub offer_cooldown_days: i64,
}

pub const OFFER_COOLDOWN_DAYS: (i64, i64) = (0, 3650);

pub const MAX_COUPON_CODE: usize = 64;
pub const MAX_TESTIMONIALS: usize = 10;
pub const MAX_QUOTE: usize = 500;
pub const MAX_AUTHOR: usize = 200;
pub const MAX_FEATURES: usize = 20;
pub const MAX_FEATURE_NAME: usize = 100;

/// A customer's words and who said them, as the founder wants them quoted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct Testimonial {
    /// One line, 1–500 characters.
    #[schema(
        min_length = 1,
        max_length = 500,
        pattern = r"^[^\x00-\x1f\x7f-\x9f]*$"
    )]
    pub quote: String,
    /// Who said it ("Priya, Head of Ops at Lumen"), one line, 1–200 characters.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x1f\x7f-\x9f]*$"
    )]
    pub author: String,
}

/// A feature's name as customers know it: one line, 1–100 characters (the pattern holds the
/// length: a container schema takes no `maxLength`).
#[derive(ToSchema)]
#[schema(value_type = String, pattern = r"^[^\x00-\x1f\x7f-\x9f]{1,100}$")]
pub struct FeatureName(pub String);

/// Autopilot: for each new event, the recommended email `delay_minutes` after its creation,
/// and the next-ranked one `follow_up_days` after that if nothing was clicked; a
/// `holdout_percent` share of events is held out as the control group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub struct AutopilotSettings {
    pub enabled: bool,
    /// 0–10080.
    pub delay_minutes: i64,
    /// 0 (no follow-up) or 1–30.
    pub follow_up_days: i64,
    /// 0–50.
    pub holdout_percent: i64,
}

impl Default for AutopilotSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            delay_minutes: 60,
            follow_up_days: 3,
            holdout_percent: 0,
        }
    }
}

/// A partial update of the autopilot: only the keys it names change.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct AutopilotPatch {
    pub enabled: Option<bool>,
    #[schema(minimum = 0, maximum = 10080)]
    pub delay_minutes: Option<i64>,
    #[schema(minimum = 0, maximum = 30)]
    pub follow_up_days: Option<i64>,
    #[schema(minimum = 0, maximum = 50)]
    pub holdout_percent: Option<i64>,
}

impl Default for ProjectSettings {
    fn default() -> Self {
        Self {
            recovery_window_days: 30,
            discount_percent: 20,
            discount_months: 3,
            founder_name: None,
            product_url: None,
            reactivation_url: None,
            update_payment_url: None,
            language: "en".to_owned(),
            autopilot: AutopilotSettings::default(),
            coupon_code: None,
            testimonials: Vec::new(),
            features: Vec::new(),
            offer_cooldown_days: 180,
        }
    }
}

/// A partial update: absent fields keep their value, `null` clears an optional one.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct SettingsPatch {
    #[schema(minimum = 1, maximum = 365)]
    pub recovery_window_days: Option<i64>,
    #[schema(minimum = 1, maximum = 90)]
    pub discount_percent: Option<i64>,
    #[schema(minimum = 1, maximum = 36)]
    pub discount_months: Option<i64>,
    #[serde(default, with = "double_option")]
    #[schema(value_type = Option<String>, max_length = 200)]
    pub founder_name: Option<Option<String>>,
    /// An http or https URL: host, optional port and path, no query; empty (or null) clears it.
    #[serde(default, with = "double_option")]
    #[schema(
        value_type = Option<String>,
        max_length = 500,
        pattern = r"^([Hh][Tt][Tt][Pp][Ss]?://[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?(/[A-Za-z0-9._~-]*)*)?$"
    )]
    pub product_url: Option<Option<String>>,
    /// Where a customer goes to come back (https only); unset, `product_url`. Empty (or null)
    /// clears it.
    #[serde(default, with = "double_option")]
    #[schema(value_type = Option<String>, max_length = 500, pattern = r"^([Hh][Tt][Tt][Pp][Ss]://|$)")]
    pub reactivation_url: Option<Option<String>>,
    /// Where a customer of custom billing updates their card (https only). Empty (or null)
    /// clears it.
    #[serde(default, with = "double_option")]
    #[schema(value_type = Option<String>, max_length = 500, pattern = r"^([Hh][Tt][Tt][Pp][Ss]://|$)")]
    pub update_payment_url: Option<Option<String>>,
    /// An IETF language tag such as `en` or `pt-br`.
    #[schema(pattern = r"^[A-Za-z0-9-]{2,16}$")]
    pub language: Option<String>,
    pub autopilot: Option<AutopilotPatch>,
    /// A code made in the founder's billing system: printable ASCII, no spaces, at most 64
    /// characters; empty (or null) clears it.
    #[serde(default, with = "double_option")]
    #[schema(value_type = Option<String>, max_length = 64, pattern = r"^[!-~]*$")]
    pub coupon_code: Option<Option<String>>,
    /// Replaces the list (at most 10; `[]` clears it).
    #[schema(max_items = 10)]
    pub testimonials: Option<Vec<Testimonial>>,
    /// Replaces the list (at most 20 names; `[]` clears it).
    #[schema(max_items = 20, value_type = Option<Vec<FeatureName>>)]
    pub features: Option<Vec<String>>,
    /// Days after accepting a cancel-flow offer during which a customer is offered none.
    #[schema(minimum = 0, maximum = 3650)]
    pub offer_cooldown_days: Option<i64>,
}

impl ProjectSettings {
    /// Applies `patch`, naming each bad field as `settings.<field>`.
    pub fn apply(&self, patch: SettingsPatch) -> Result<ProjectSettings> {
        let mut v = Validator::new();
        let mut next = self.clone();
        let mut range = |field: &str, value: Option<i64>, lo: i64, hi: i64, slot: &mut i64| {
            v.set_between(&format!("settings.{field}"), value, lo..=hi, slot);
        };
        range(
            "recovery_window_days",
            patch.recovery_window_days,
            1,
            365,
            &mut next.recovery_window_days,
        );
        range(
            "discount_percent",
            patch.discount_percent,
            1,
            90,
            &mut next.discount_percent,
        );
        range(
            "discount_months",
            patch.discount_months,
            1,
            36,
            &mut next.discount_months,
        );
        range(
            "offer_cooldown_days",
            patch.offer_cooldown_days,
            OFFER_COOLDOWN_DAYS.0,
            OFFER_COOLDOWN_DAYS.1,
            &mut next.offer_cooldown_days,
        );
        if let Some(name) = patch.founder_name {
            next.founder_name = v
                .check("settings.founder_name", optional(name, 200))
                .unwrap_or(next.founder_name);
        }
        if let Some(url) = patch.product_url {
            let checked = optional(url, 500).and_then(|url| match url {
                Some(u) if !product_url_ok(&u) => Err(
                    "must be an http or https URL: host, optional port and a path of letters, \
                     digits and ._~-"
                        .to_owned(),
                ),
                other => Ok(other),
            });
            next.product_url = v
                .check("settings.product_url", checked)
                .unwrap_or(next.product_url);
        }
        let https = |url: Option<String>| {
            optional(url, 500).and_then(|url| url.map(|u| https_url(&u, 500)).transpose())
        };
        if let Some(url) = patch.reactivation_url {
            next.reactivation_url = v
                .check("settings.reactivation_url", https(url))
                .unwrap_or(next.reactivation_url);
        }
        if let Some(url) = patch.update_payment_url {
            next.update_payment_url = v
                .check("settings.update_payment_url", https(url))
                .unwrap_or(next.update_payment_url);
        }
        if let Some(language) = patch.language {
            let ok = (2..=16).contains(&language.len())
                && language
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-');
            if ok {
                next.language = language.to_ascii_lowercase();
            } else {
                v.add(
                    "settings.language",
                    "must be a language tag such as en or pt-br",
                );
            }
        }
        if let Some(autopilot) = patch.autopilot {
            let a = &mut next.autopilot;
            if let Some(enabled) = autopilot.enabled {
                a.enabled = enabled;
            }
            let mut range =
                |field: &str, value: Option<i64>, ok: bool, hint: &str, slot: &mut i64| {
                    if let Some(value) = value {
                        if ok {
                            *slot = value;
                        } else {
                            v.add(
                                &format!("settings.autopilot.{field}"),
                                format!("must be {hint}"),
                            );
                        }
                    }
                };
            let delay = autopilot.delay_minutes;
            range(
                "delay_minutes",
                delay,
                delay.is_some_and(|d| (0..=10080).contains(&d)),
                "between 0 and 10080",
                &mut a.delay_minutes,
            );
            let follow = autopilot.follow_up_days;
            range(
                "follow_up_days",
                follow,
                follow.is_some_and(|d| (0..=30).contains(&d)),
                "0 (none) or between 1 and 30",
                &mut a.follow_up_days,
            );
            let holdout = autopilot.holdout_percent;
            range(
                "holdout_percent",
                holdout,
                holdout.is_some_and(|h| (0..=50).contains(&h)),
                "between 0 and 50",
                &mut a.holdout_percent,
            );
        }
        if let Some(code) = patch.coupon_code {
            let checked = match code {
                Some(c) if c.chars().count() > MAX_COUPON_CODE => {
                    Err(format!("must be at most {MAX_COUPON_CODE} characters"))
                }
                Some(c) if !c.chars().all(|ch| ch.is_ascii_graphic()) => {
                    Err("must be printable ASCII without spaces".to_owned())
                }
                Some(c) => Ok(Some(c).filter(|c| !c.is_empty())),
                None => Ok(None),
            };
            next.coupon_code = v
                .check("settings.coupon_code", checked)
                .unwrap_or(next.coupon_code);
        }
        if let Some(testimonials) = patch.testimonials {
            if testimonials.len() > MAX_TESTIMONIALS {
                v.add(
                    "settings.testimonials",
                    format!("must hold at most {MAX_TESTIMONIALS} testimonials"),
                );
            } else {
                let before = v.error_count();
                let checked: Vec<Testimonial> = testimonials
                    .into_iter()
                    .enumerate()
                    .filter_map(|(i, t)| {
                        let field = |f: &str| format!("settings.testimonials[{i}].{f}");
                        let quote = v.check(&field("quote"), line(&t.quote, MAX_QUOTE));
                        let author = v.check(&field("author"), line(&t.author, MAX_AUTHOR));
                        Some(Testimonial {
                            quote: quote?,
                            author: author?,
                        })
                    })
                    .collect();
                if v.error_count() == before {
                    next.testimonials = checked;
                }
            }
        }
        if let Some(features) = patch.features {
            if features.len() > MAX_FEATURES {
                v.add(
                    "settings.features",
                    format!("must hold at most {MAX_FEATURES} names"),
                );
            } else {
                let before = v.error_count();
                let checked: Vec<String> = features
                    .iter()
                    .enumerate()
                    .filter_map(|(i, f)| {
                        v.check(
                            &format!("settings.features[{i}]"),
                            line(f, MAX_FEATURE_NAME),
                        )
                    })
                    .collect();
                if v.error_count() == before {
                    next.features = checked;
                }
            }
        }
        v.finish()?;
        Ok(next)
    }
}

/// A required line of text, trimmed: not blank, and as sent (the document's pattern and
/// maxLength) no control character and at most `max` characters.
fn line(raw: &str, max: usize) -> std::result::Result<String, String> {
    if raw.chars().count() > max || raw.chars().any(char::is_control) {
        return Err(format!("must be one line of at most {max} characters"));
    }
    match raw.trim() {
        "" => Err("must not be empty".into()),
        value => Ok(value.to_owned()),
    }
}

impl ProjectSettings {
    /// Where the emails' button leads: `reactivation_url`, else `product_url`.
    pub fn reactivation_target(&self) -> Option<&str> {
        self.reactivation_url
            .as_deref()
            .or(self.product_url.as_deref())
    }
}

/// The document's pattern for `product_url`: an origin's shape, then a path of unreserved
/// characters (the URL parser alone takes `*` in a host, queries, credentials).
fn product_url_ok(raw: &str) -> bool {
    let host_at = raw.find("://").map_or(0, |i| i + 3);
    let (origin, path) = raw.split_at(raw[host_at..].find('/').map_or(raw.len(), |i| host_at + i));
    super::origin::shaped_like_an_origin(origin)
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._~-".contains(c))
}

fn optional(value: Option<String>, max: usize) -> std::result::Result<Option<String>, String> {
    match value {
        None => Ok(None),
        // The limit holds for the value as sent, before trimming (the document's maxLength).
        Some(s) if s.chars().count() > max => Err(format!("must be at most {max} characters")),
        Some(s) => Ok(Some(s.trim().to_owned()).filter(|s| !s.is_empty())),
    }
}

/// Tells "absent" (keep) from `null` (clear) in a patch.
pub(crate) mod double_option {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Option<String>>, D::Error> {
        Option::<String>::deserialize(d).map(Some)
    }

    pub fn serialize<S: Serializer>(v: &Option<Option<String>>, s: S) -> Result<S::Ok, S::Error> {
        v.as_ref().and_then(|inner| inner.as_ref()).serialize(s)
    }
}

objects_only!(SettingsPatch, AutopilotPatch, Testimonial);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn patch_changes_only_what_it_names() {
        let patch: SettingsPatch = serde_json::from_value(
            serde_json::json!({"discount_percent": 35, "founder_name": "Ada"}),
        )
        .unwrap();
        let next = ProjectSettings::default().apply(patch).unwrap();
        assert_eq!(next.discount_percent, 35);
        assert_eq!(next.offer_cooldown_days, 180, "the default cooldown");
        assert_eq!(next.founder_name.as_deref(), Some("Ada"));
        assert_eq!(next.recovery_window_days, 30);

        let clear: SettingsPatch =
            serde_json::from_value(serde_json::json!({"founder_name": null})).unwrap();
        assert_eq!(next.apply(clear).unwrap().founder_name, None);
    }

    #[test]
    fn autopilot_patches_change_only_the_keys_they_name() {
        let patch: SettingsPatch = serde_json::from_value(
            serde_json::json!({"autopilot": {"enabled": true, "holdout_percent": 20}}),
        )
        .unwrap();
        let next = ProjectSettings::default().apply(patch).unwrap();
        let expected = AutopilotSettings {
            enabled: true,
            holdout_percent: 20,
            ..AutopilotSettings::default()
        };
        assert_eq!(next.autopilot, expected);
        let bad: SettingsPatch = serde_json::from_value(
            serde_json::json!({"autopilot": {"delay_minutes": 10081, "follow_up_days": 31, "holdout_percent": 51}}),
        )
        .unwrap();
        let Err(Error::Validation { details, .. }) = next.apply(bad) else {
            panic!("expected validation error");
        };
        assert_eq!(details.len(), 3);
        assert_eq!(details[0].field, "settings.autopilot.delay_minutes");
        let unknown = serde_json::from_value::<SettingsPatch>(
            serde_json::json!({"autopilot": {"turbo": true}}),
        );
        assert!(unknown.is_err());
    }

    #[test]
    fn email_material_is_checked_and_named_by_field() {
        let patch = |v| serde_json::from_value::<SettingsPatch>(v).unwrap();
        let next = ProjectSettings::default()
            .apply(patch(serde_json::json!({
                "coupon_code": "COMEBACK-20",
                "testimonials": [{"quote": " Setup took an afternoon. ", "author": "Tom"}],
                "features": [" Scheduled reports"],
            })))
            .unwrap();
        assert_eq!(next.coupon_code.as_deref(), Some("COMEBACK-20"));
        assert_eq!(next.testimonials[0].quote, "Setup took an afternoon.");
        assert_eq!(next.features, ["Scheduled reports"]);
        let cleared = next
            .apply(patch(
                serde_json::json!({"coupon_code": null, "features": []}),
            ))
            .unwrap();
        assert_eq!(cleared.coupon_code, None);
        assert!(cleared.features.is_empty() && cleared.testimonials.len() == 1);

        let bad = patch(serde_json::json!({
            "coupon_code": " PADDED",
            "testimonials": [{"quote": "Fine.", "author": "A"}, {"quote": "\nFine.", "author": ""}],
            "features": ["x".repeat(101)],
        }));
        let Err(Error::Validation { details, .. }) = next.apply(bad) else {
            panic!("expected validation error");
        };
        let fields: Vec<_> = details.iter().map(|d| d.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "settings.coupon_code",
                "settings.testimonials[1].quote",
                "settings.testimonials[1].author",
                "settings.features[0]"
            ]
        );
        let too_many = patch(serde_json::json!({"features": vec!["a"; 21]}));
        assert!(next.apply(too_many).is_err());
        let long_code = patch(serde_json::json!({"coupon_code": "X".repeat(65)}));
        assert!(next.apply(long_code).is_err());
    }

    #[test]
    fn product_urls_follow_the_documented_pattern() {
        for good in [
            "https://acme.io",
            "HTTP://acme.io:8080/pricing/pro-plan_2.html",
            "http://0",
        ] {
            assert!(product_url_ok(good), "{good}");
        }
        for bad in [
            "https://acme.io/?ref=1",
            "https://acme.io/#top",
            "https://u:p@acme.io",
            "https://*.acme.io",
            "https://acme.io/a%20b",
            "ftp://acme.io",
            "acme.io",
        ] {
            assert!(!product_url_ok(bad), "{bad}");
        }
    }

    #[test]
    fn out_of_range_values_name_their_field() {
        let patch: SettingsPatch = serde_json::from_value(
            serde_json::json!({"recovery_window_days": 0, "discount_percent": 91, "offer_cooldown_days": 3651, "product_url": "javascript:x", "reactivation_url": "http://acme.io/back"}),
        )
        .unwrap();
        let Err(Error::Validation { details, .. }) = ProjectSettings::default().apply(patch) else {
            panic!("expected validation error");
        };
        let fields: Vec<_> = details.iter().map(|d| d.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "settings.recovery_window_days",
                "settings.discount_percent",
                "settings.offer_cooldown_days",
                "settings.product_url",
                "settings.reactivation_url"
            ]
        );
    }
}
