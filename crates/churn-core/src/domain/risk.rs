//! Churn-risk scoring (decisions §9), pure: the 18 signals, each a function of one customer's
//! [`Aggregates`]; the default weights in [`DEFAULT_WEIGHTS`]; the score, its level and the
//! insufficient-data rule. `docs/risk.md` explains the model.
//!
//! Windows are whole UTC days counted back from the service clock's today: "the last 7 days"
//! are today and the 6 days before it; "the 7 before" are the 7 days before those.

use std::collections::BTreeMap;

use chrono::NaiveDate;

use crate::time::Timestamp;

/// The score every customer starts from; signals add to it or take from it.
pub const BASE_SCORE: i64 = 25;
/// A customer whose tracked history (first tracked event to now) spans fewer days has no score.
pub const MIN_HISTORY_DAYS: i64 = 7;
/// How many days of daily rollups a scoring run reads (the longest window plus margin).
pub const LOOKBACK_DAYS: i64 = 90;

/// The default weight of each signal, in score points when the signal is present at full
/// strength: positive raises the risk, negative lowers it. In the order of decisions §9.
pub const DEFAULT_WEIGHTS: [(Signal, i64); 18] = [
    (Signal::NoEvents14d, 35),
    (Signal::DecliningUsage, 20),
    (Signal::SupportTickets, 15),
    (Signal::FailedPayments, 25),
    (Signal::ShortSessions, 10),
    (Signal::FeatureDropOff, 15),
    (Signal::BillingDowngrades, 20),
    (Signal::LoginGaps, 20),
    (Signal::ApiErrorSpikes, 10),
    (Signal::CompetitorPageVisits, 15),
    (Signal::CancelPageViews, 25),
    (Signal::NpsDetractor, 20),
    (Signal::PaymentMethodExpiring, 10),
    (Signal::FeatureAdoption, -10),
    (Signal::BillingUpgrades, -15),
    (Signal::TeamInvites, -10),
    (Signal::ApiUsageGrowth, -10),
    (Signal::NpsPromoter, -15),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Signal {
    NoEvents14d,
    DecliningUsage,
    SupportTickets,
    FailedPayments,
    ShortSessions,
    FeatureDropOff,
    BillingDowngrades,
    LoginGaps,
    ApiErrorSpikes,
    CompetitorPageVisits,
    CancelPageViews,
    NpsDetractor,
    PaymentMethodExpiring,
    FeatureAdoption,
    BillingUpgrades,
    TeamInvites,
    ApiUsageGrowth,
    NpsPromoter,
}

impl Signal {
    /// The name in payloads and answers.
    pub fn name(self) -> &'static str {
        match self {
            Signal::NoEvents14d => "no_events_14d",
            Signal::DecliningUsage => "declining_usage",
            Signal::SupportTickets => "support_tickets",
            Signal::FailedPayments => "failed_payments",
            Signal::ShortSessions => "short_sessions",
            Signal::FeatureDropOff => "feature_drop_off",
            Signal::BillingDowngrades => "billing_downgrades",
            Signal::LoginGaps => "login_gaps",
            Signal::ApiErrorSpikes => "api_error_spikes",
            Signal::CompetitorPageVisits => "competitor_page_visits",
            Signal::CancelPageViews => "cancel_page_views",
            Signal::NpsDetractor => "nps_detractor",
            Signal::PaymentMethodExpiring => "payment_method_expiring",
            Signal::FeatureAdoption => "feature_adoption",
            Signal::BillingUpgrades => "billing_upgrades",
            Signal::TeamInvites => "team_invites",
            Signal::ApiUsageGrowth => "api_usage_growth",
            Signal::NpsPromoter => "nps_promoter",
        }
    }

    /// How strongly the signal is present in `a`, in (0, 1]; `None` when absent.
    pub fn strength(self, a: &Aggregates) -> Option<f64> {
        let present = |yes: bool| yes.then_some(1.0);
        match self {
            Signal::NoEvents14d => present(a.total(0..14) == 0 && a.history_days() >= 14),
            Signal::DecliningUsage => {
                let (recent, before) = (a.total(0..7), a.total(7..14));
                present(before >= 4 && recent * 2 < before)
            }
            Signal::SupportTickets => {
                let opened = a.count("support_ticket_opened", 0..30);
                let resolved = a.count("support_ticket_resolved", 0..30);
                match opened {
                    0 => None,
                    _ if resolved >= opened => Some(0.5),
                    _ => Some(1.0),
                }
            }
            Signal::FailedPayments => {
                present(a.count("invoice_overdue", 0..30) + a.payment_failures_30d > 0)
            }
            Signal::ShortSessions => {
                present(median(&a.session_durations_14d).is_some_and(|m| m < 60.0))
            }
            Signal::FeatureDropOff => {
                let (recent, before) = (a.features(0..14), a.features(14..28));
                present(before > 0 && recent * 2 < before)
            }
            Signal::BillingDowngrades => present(a.count("subscription_downgraded", 0..60) > 0),
            Signal::LoginGaps => present(
                a.count("login", 0..7) == 0
                    && [7..14, 14..21, 21..28]
                        .into_iter()
                        .all(|week| a.count("login", week) > 0),
            ),
            Signal::ApiErrorSpikes => {
                let recent = a.count("api_error", 0..7);
                let before = a.count("api_error", 7..35);
                // recent ≥ 3 × (before / 4), in integers.
                present(recent >= 10 && recent * 4 >= 3 * before)
            }
            Signal::CompetitorPageVisits => present(
                a.count("competitor_page_viewed", 0..30)
                    + a.count_detail("page_viewed", "competitor", 0..30)
                    > 0,
            ),
            Signal::CancelPageViews => {
                present(a.count("cancel_page_viewed", 0..14) + a.cancel_flow_opens_14d > 0)
            }
            Signal::NpsDetractor => present(a.nps.is_some_and(|s| (0..=6).contains(&s))),
            Signal::PaymentMethodExpiring => present(
                a.card_expires_at
                    .is_some_and(|at| at >= a.now && at <= a.now + chrono::Duration::days(30)),
            ),
            Signal::FeatureAdoption => present(
                a.feature_first_used
                    .values()
                    .any(|first| a.days_ago(*first).is_some_and(|d| d < 14)),
            ),
            Signal::BillingUpgrades => present(a.count("subscription_upgraded", 0..60) > 0),
            Signal::TeamInvites => present(a.count("team_member_invited", 0..30) > 0),
            Signal::ApiUsageGrowth => {
                let (recent, before) = (a.count("api_call", 0..7), a.count("api_call", 7..14));
                // Up at least 20 %: recent ≥ 1.2 × before, in integers.
                present(before > 0 && recent * 5 >= before * 6)
            }
            Signal::NpsPromoter => present(a.nps.is_some_and(|s| (9..=10).contains(&s))),
        }
    }
}

/// What scoring knows of one customer: daily rollups and a few kept facts, never raw events
/// (bar the session durations of the last 14 days, read from their typed column).
#[derive(Debug, Clone)]
pub struct Aggregates {
    /// The service clock's now; its UTC date is day 0.
    pub now: Timestamp,
    /// The customer's first tracked event.
    pub first_event_at: Timestamp,
    /// Daily counts of the last [`LOOKBACK_DAYS`] days: (day, event name, detail) → count, the
    /// detail being the feature of `feature_used`, the category of `page_viewed`, else empty.
    pub daily: BTreeMap<(NaiveDate, String, String), i64>,
    /// The first day each feature was ever used.
    pub feature_first_used: BTreeMap<String, NaiveDate>,
    /// `duration_seconds` of `login` and `session` events of the last 14 days.
    pub session_durations_14d: Vec<f64>,
    /// The latest NPS answer (0–10).
    pub nps: Option<i64>,
    /// The card expiry of the latest notice.
    pub card_expires_at: Option<Timestamp>,
    /// Payment-failure records of the last 30 days.
    pub payment_failures_30d: i64,
    /// Cancel-flow widget opens of the last 14 days.
    pub cancel_flow_opens_14d: i64,
}

impl Aggregates {
    fn today(&self) -> NaiveDate {
        self.now.date_naive()
    }

    /// Days from `day` to today (0 = today); `None` for a day after today.
    fn days_ago(&self, day: NaiveDate) -> Option<i64> {
        let d = (self.today() - day).num_days();
        (d >= 0).then_some(d)
    }

    /// Whole days since the first tracked event.
    pub fn history_days(&self) -> i64 {
        (self.now - self.first_event_at).num_days()
    }

    fn sum(&self, window: std::ops::Range<i64>, keep: impl Fn(&str, &str) -> bool) -> i64 {
        self.daily
            .iter()
            .filter(|((day, event, detail), _)| {
                self.days_ago(*day).is_some_and(|d| window.contains(&d)) && keep(event, detail)
            })
            .map(|(_, n)| *n)
            .sum()
    }

    /// All events in the window (days ago, end exclusive). Events dated after today (the API
    /// accepts a day ahead) count in no window.
    fn total(&self, window: std::ops::Range<i64>) -> i64 {
        self.sum(window, |_, _| true)
    }

    pub fn count(&self, name: &str, window: std::ops::Range<i64>) -> i64 {
        self.sum(window, |event, _| event == name)
    }

    fn count_detail(&self, name: &str, detail: &str, window: std::ops::Range<i64>) -> i64 {
        self.sum(window, |event, d| event == name && d == detail)
    }

    /// Distinct features used in the window.
    fn features(&self, window: std::ops::Range<i64>) -> i64 {
        let mut seen: Vec<&str> = self
            .daily
            .keys()
            .filter(|(day, event, detail)| {
                event == "feature_used"
                    && !detail.is_empty()
                    && self.days_ago(*day).is_some_and(|d| window.contains(&d))
            })
            .map(|(_, _, detail)| detail.as_str())
            .collect();
        seen.sort_unstable();
        seen.dedup();
        seen.len() as i64
    }
}

fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len().is_multiple_of(2) {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Low,
    Medium,
    High,
    Critical,
}

impl Level {
    /// critical 80–100, high 60–79, medium 40–59, low 0–39.
    pub fn of(score: i64) -> Level {
        match score {
            80.. => Level::Critical,
            60..=79 => Level::High,
            40..=59 => Level::Medium,
            _ => Level::Low,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Level::Low => "low",
            Level::Medium => "medium",
            Level::High => "high",
            Level::Critical => "critical",
        }
    }

    pub fn parse(s: &str) -> Option<Level> {
        [Level::Low, Level::Medium, Level::High, Level::Critical]
            .into_iter()
            .find(|l| l.as_str() == s)
    }
}

/// A present signal and its contribution in score points (positive raises the risk).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contribution {
    pub name: String,
    pub weight: i64,
}

/// The outcome of scoring one customer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Assessment {
    /// Tracked history spans fewer than [`MIN_HISTORY_DAYS`].
    InsufficientData,
    Scored {
        score: i64,
        level: Level,
        /// Risk-raising first, largest first.
        signals: Vec<Contribution>,
    },
}

/// Event names a signal reads; every other tracked event name is a custom event, a candidate
/// feature of the learned model.
pub const SIGNAL_EVENTS: [&str; 16] = [
    "api_call",
    "api_error",
    "cancel_page_viewed",
    "competitor_page_viewed",
    "feature_used",
    "invoice_overdue",
    "login",
    "nps_response",
    "page_viewed",
    "payment_method_expiring",
    "session",
    "subscription_downgraded",
    "subscription_upgraded",
    "support_ticket_opened",
    "support_ticket_resolved",
    "team_member_invited",
];

/// Days back a custom event counts as present.
pub const EVENT_WINDOW_DAYS: i64 = 30;
const EVENT_PREFIX: &str = "event:";

/// What a model weighs: one of the signals, or a custom event (`event:<name>`), present when
/// the customer tracked it in the last [`EVENT_WINDOW_DAYS`] days.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Feature {
    Signal(Signal),
    Event(String),
}

impl Feature {
    pub fn name(&self) -> String {
        match self {
            Feature::Signal(s) => s.name().to_owned(),
            Feature::Event(e) => format!("{EVENT_PREFIX}{e}"),
        }
    }

    /// The inverse of [`Feature::name`].
    pub fn parse(name: &str) -> Option<Feature> {
        match name.strip_prefix(EVENT_PREFIX) {
            Some(event) if !event.is_empty() => Some(Feature::Event(event.to_owned())),
            Some(_) => None,
            None => DEFAULT_WEIGHTS
                .iter()
                .find(|(s, _)| s.name() == name)
                .map(|(s, _)| Feature::Signal(*s)),
        }
    }

    /// How strongly the feature is present in `a`, in (0, 1]; `None` when absent.
    pub fn strength(&self, a: &Aggregates) -> Option<f64> {
        match self {
            Feature::Signal(s) => s.strength(a),
            Feature::Event(e) => (a.count(e, 0..EVENT_WINDOW_DAYS) > 0).then_some(1.0),
        }
    }
}

/// Which weights scored a customer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelKind {
    /// [`DEFAULT_WEIGHTS`] from [`BASE_SCORE`].
    Default,
    /// Weights fitted to the project's own churn (`domain::model`).
    Learned,
}

impl ModelKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ModelKind::Default => "default",
            ModelKind::Learned => "learned",
        }
    }
}

/// A scoring model: a base score plus, for each feature present, its weight in score points
/// times its strength; the sum clamped to 0–100.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    pub kind: ModelKind,
    pub base: i64,
    pub weights: Vec<(Feature, i64)>,
}

impl Model {
    /// The documented defaults.
    pub fn default_model() -> Model {
        Model {
            kind: ModelKind::Default,
            base: BASE_SCORE,
            weights: DEFAULT_WEIGHTS
                .iter()
                .map(|(s, w)| (Feature::Signal(*s), *w))
                .collect(),
        }
    }

    /// The contributions of the features present, each rounded to whole points; risk-raising
    /// first, largest first.
    pub fn contributions(&self, a: &Aggregates) -> Vec<Contribution> {
        let mut signals: Vec<Contribution> = self
            .weights
            .iter()
            .filter_map(|(feature, weight)| {
                let strength = feature.strength(a)?;
                let points = (*weight as f64 * strength).round() as i64;
                (points != 0).then(|| Contribution {
                    name: feature.name(),
                    weight: points,
                })
            })
            .collect();
        signals.sort_by(|x, y| y.weight.cmp(&x.weight).then_with(|| x.name.cmp(&y.name)));
        signals
    }

    /// The base plus the contributions, before the clamp to 0–100: the ranking the model's
    /// AUC is measured on.
    pub fn raw_score(&self, a: &Aggregates) -> i64 {
        self.base + self.contributions(a).iter().map(|c| c.weight).sum::<i64>()
    }

    /// Scores a customer.
    pub fn assess(&self, a: &Aggregates) -> Assessment {
        if a.history_days() < MIN_HISTORY_DAYS {
            return Assessment::InsufficientData;
        }
        let signals = self.contributions(a);
        let score = (self.base + signals.iter().map(|c| c.weight).sum::<i64>()).clamp(0, 100);
        Assessment::Scored {
            score,
            level: Level::of(score),
            signals,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::time;

    fn now() -> Timestamp {
        time::parse("2026-11-21T12:00:00Z").unwrap()
    }

    /// A customer tracked for 60 days with no events in the rollups yet.
    pub(crate) fn customer() -> Aggregates {
        Aggregates {
            now: now(),
            first_event_at: now() - chrono::Duration::days(60),
            daily: BTreeMap::new(),
            feature_first_used: BTreeMap::new(),
            session_durations_14d: Vec::new(),
            nps: None,
            card_expires_at: None,
            payment_failures_30d: 0,
            cancel_flow_opens_14d: 0,
        }
    }

    fn day(days_ago: i64) -> NaiveDate {
        now().date_naive() - chrono::Duration::days(days_ago)
    }

    /// `a` with `n` more of `event` on the day `days_ago`.
    pub(crate) fn with(mut a: Aggregates, event: &str, days_ago: i64, n: i64) -> Aggregates {
        *a.daily
            .entry((day(days_ago), event.to_owned(), String::new()))
            .or_default() += n;
        a
    }

    fn with_detail(mut a: Aggregates, event: &str, detail: &str, days_ago: i64) -> Aggregates {
        *a.daily
            .entry((day(days_ago), event.to_owned(), detail.to_owned()))
            .or_default() += 1;
        a
    }

    fn has(a: &Aggregates, s: Signal) -> bool {
        s.strength(a).is_some()
    }

    /// `s` counts one `event` from today back to `last_day` days ago, and not the day before.
    fn counts_back_to(s: Signal, event: &str, last_day: i64) {
        assert!(
            has(&with(customer(), event, last_day, 1), s),
            "{event}, {last_day} days ago"
        );
        let before = last_day + 1;
        assert!(
            !has(&with(customer(), event, before, 1), s),
            "{event}, {before} days ago"
        );
    }

    /// Active today, so only the signal under test can be present.
    fn active() -> Aggregates {
        with(customer(), "page_viewed", 0, 1)
    }

    #[test]
    fn no_events_14d_needs_silence_and_a_customer_older_than_14_days() {
        let s = Signal::NoEvents14d;
        assert!(has(&with(customer(), "login", 14, 1), s));
        assert!(
            !has(&with(customer(), "login", 13, 1), s),
            "day 13 is inside"
        );
        let mut young = customer();
        young.first_event_at = now() - chrono::Duration::days(13);
        assert!(!has(&young, s));
        young.first_event_at = now() - chrono::Duration::days(14);
        assert!(has(&young, s));
    }

    #[test]
    fn declining_usage_halves_from_at_least_four() {
        let s = Signal::DecliningUsage;
        let before = |n| with(customer(), "login", 7, n);
        assert!(has(&before(4), s), "0 < 50 % of 4");
        assert!(!has(&before(3), s), "fewer than 4 before");
        assert!(has(&with(before(6), "login", 6, 2), s), "2 < 3");
        assert!(!has(&with(before(6), "login", 6, 3), s), "3 is 50 %");
        assert!(
            !has(&with(customer(), "login", 14, 10), s),
            "day 14 is outside"
        );
    }

    #[test]
    fn support_tickets_weigh_more_when_unresolved() {
        let s = Signal::SupportTickets;
        assert_eq!(s.strength(&active()), None);
        let opened = with(customer(), "support_ticket_opened", 29, 1);
        assert_eq!(s.strength(&opened), Some(1.0));
        let resolved = with(opened.clone(), "support_ticket_resolved", 0, 1);
        assert_eq!(s.strength(&resolved), Some(0.5));
        assert_eq!(
            s.strength(&with(customer(), "support_ticket_opened", 30, 1)),
            None
        );
    }

    #[test]
    fn failed_payments_count_overdue_invoices_and_failure_records() {
        let s = Signal::FailedPayments;
        counts_back_to(s, "invoice_overdue", 29);
        let mut records = active();
        records.payment_failures_30d = 1;
        assert!(has(&records, s));
    }

    #[test]
    fn short_sessions_compare_the_median_to_a_minute() {
        let s = Signal::ShortSessions;
        let sessions = |d: &[f64]| {
            let mut a = active();
            a.session_durations_14d = d.to_vec();
            a
        };
        assert!(!has(&sessions(&[]), s));
        assert!(has(&sessions(&[10.0, 59.0, 300.0]), s));
        assert!(!has(&sessions(&[10.0, 60.0, 300.0]), s));
        assert!(has(&sessions(&[10.0, 109.0]), s), "median 59.5");
        assert!(!has(&sessions(&[10.0, 110.0]), s), "median 60");
    }

    #[test]
    fn feature_drop_off_halves_the_distinct_features() {
        let s = Signal::FeatureDropOff;
        let before = ["a", "b", "c", "d"]
            .iter()
            .fold(customer(), |a, f| with_detail(a, "feature_used", f, 20));
        assert!(has(&before, s));
        let one = with_detail(before.clone(), "feature_used", "a", 13);
        assert!(has(&one, s), "1 < 2");
        let two = with_detail(one, "feature_used", "b", 0);
        assert!(!has(&two, s), "2 is 50 %");
        assert!(!has(&with_detail(customer(), "feature_used", "a", 28), s));
        assert!(has(&with_detail(customer(), "feature_used", "a", 27), s));
    }

    #[test]
    fn billing_changes_count_60_days() {
        for (event, s) in [
            ("subscription_downgraded", Signal::BillingDowngrades),
            ("subscription_upgraded", Signal::BillingUpgrades),
        ] {
            counts_back_to(s, event, 59);
        }
    }

    #[test]
    fn login_gaps_need_three_weeks_of_logins_then_none() {
        let s = Signal::LoginGaps;
        let weeks = [7, 14, 21]
            .into_iter()
            .fold(customer(), |a, d| with(a, "login", d, 1));
        assert!(has(&weeks, s));
        assert!(!has(&with(weeks.clone(), "login", 6, 1), s));
        let missing_week = [7, 14, 28]
            .into_iter()
            .fold(customer(), |a, d| with(a, "login", d, 1));
        assert!(!has(&missing_week, s));
    }

    #[test]
    fn api_error_spikes_need_ten_and_three_times_the_mean() {
        let s = Signal::ApiErrorSpikes;
        assert!(has(&with(customer(), "api_error", 6, 10), s));
        assert!(!has(&with(customer(), "api_error", 6, 9), s));
        // 4 weeks of 20 → weekly mean 5; 15 is 3 ×.
        let base = with(customer(), "api_error", 20, 20);
        assert!(has(&with(base.clone(), "api_error", 0, 15), s));
        assert!(!has(&with(base, "api_error", 0, 14), s));
        // Errors 35 days back are outside the 4 weeks.
        let old = with(customer(), "api_error", 35, 1000);
        assert!(has(&with(old, "api_error", 0, 10), s));
    }

    #[test]
    fn competitor_pages_are_named_or_categorised() {
        let s = Signal::CompetitorPageVisits;
        counts_back_to(s, "competitor_page_viewed", 29);
        assert!(has(
            &with_detail(customer(), "page_viewed", "competitor", 0),
            s
        ));
        assert!(!has(
            &with_detail(customer(), "page_viewed", "pricing", 0),
            s
        ));
    }

    #[test]
    fn cancel_page_views_count_events_and_widget_opens() {
        let s = Signal::CancelPageViews;
        counts_back_to(s, "cancel_page_viewed", 13);
        let mut opened = active();
        opened.cancel_flow_opens_14d = 1;
        assert!(has(&opened, s));
    }

    #[test]
    fn nps_splits_into_detractors_and_promoters() {
        let nps = |score| {
            let mut a = active();
            a.nps = Some(score);
            a
        };
        for (score, detractor, promoter) in [
            (0, true, false),
            (6, true, false),
            (7, false, false),
            (8, false, false),
            (9, false, true),
            (10, false, true),
        ] {
            assert_eq!(has(&nps(score), Signal::NpsDetractor), detractor, "{score}");
            assert_eq!(has(&nps(score), Signal::NpsPromoter), promoter, "{score}");
        }
    }

    #[test]
    fn payment_methods_expiring_within_30_days() {
        let s = Signal::PaymentMethodExpiring;
        let expiring = |days| {
            let mut a = active();
            a.card_expires_at = Some(now() + chrono::Duration::days(days));
            a
        };
        assert!(has(&expiring(0), s));
        assert!(has(&expiring(30), s));
        assert!(!has(&expiring(31), s));
        assert!(
            !has(&expiring(-1), s),
            "already expired is a failed payment's business"
        );
    }

    #[test]
    fn feature_adoption_is_a_first_use_in_14_days() {
        let s = Signal::FeatureAdoption;
        let first = |days_ago| {
            let mut a = active();
            a.feature_first_used.insert("export".into(), day(days_ago));
            a
        };
        assert!(has(&first(13), s));
        assert!(!has(&first(14), s));
    }

    #[test]
    fn team_invites_count_30_days() {
        let s = Signal::TeamInvites;
        counts_back_to(s, "team_member_invited", 29);
    }

    #[test]
    fn api_usage_growth_is_20_percent_week_over_week() {
        let s = Signal::ApiUsageGrowth;
        let weeks = |before, recent| {
            with(
                with(customer(), "api_call", 7, before),
                "api_call",
                0,
                recent,
            )
        };
        assert!(has(&weeks(10, 12), s));
        assert!(!has(&weeks(10, 11), s));
        assert!(!has(&weeks(0, 50), s), "no growth from nothing");
    }

    #[test]
    fn levels_at_their_boundaries() {
        for (score, level) in [
            (0, Level::Low),
            (39, Level::Low),
            (40, Level::Medium),
            (59, Level::Medium),
            (60, Level::High),
            (79, Level::High),
            (80, Level::Critical),
            (100, Level::Critical),
        ] {
            assert_eq!(Level::of(score), level, "{score}");
        }
    }

    #[test]
    fn fewer_than_7_days_of_history_has_no_score() {
        let mut a = active();
        a.first_event_at = now() - chrono::Duration::days(7) + chrono::Duration::milliseconds(1);
        assert_eq!(
            Model::default_model().assess(&a),
            Assessment::InsufficientData
        );
        a.first_event_at = now() - chrono::Duration::days(7);
        assert!(matches!(
            Model::default_model().assess(&a),
            Assessment::Scored {
                score: BASE_SCORE,
                ..
            }
        ));
    }

    #[test]
    fn scores_add_contributions_to_the_base_and_stay_in_range() {
        let a = with(customer(), "cancel_page_viewed", 20, 1); // silent 14 days: +35
        let mut a = with(a, "subscription_upgraded", 20, 1); // −15
        a.nps = Some(3); // +20
        let Assessment::Scored {
            score,
            level,
            signals,
        } = Model::default_model().assess(&a)
        else {
            panic!("scored");
        };
        assert_eq!(score, BASE_SCORE + 35 + 20 - 15);
        assert_eq!(level, Level::High);
        let names: Vec<_> = signals
            .iter()
            .map(|c| (c.name.as_str(), c.weight))
            .collect();
        assert_eq!(
            names,
            [
                ("no_events_14d", 35),
                ("nps_detractor", 20),
                ("billing_upgrades", -15)
            ]
        );
        let mut worst = with(a, "invoice_overdue", 20, 1);
        worst.cancel_flow_opens_14d = 1;
        worst.nps = Some(0);
        worst.payment_failures_30d = 2;
        let worst = with(worst, "subscription_downgraded", 1, 1);
        assert!(matches!(
            Model::default_model().assess(&worst),
            Assessment::Scored {
                score: 100,
                level: Level::Critical,
                ..
            }
        ));
        let mut best = with(active(), "subscription_upgraded", 0, 1);
        best.nps = Some(10);
        let best = with(best, "team_member_invited", 0, 1);
        assert!(matches!(
            Model::default_model().assess(&best),
            Assessment::Scored {
                score: 0,
                level: Level::Low,
                ..
            }
        ));
    }

    #[test]
    fn custom_events_are_features_present_in_30_days() {
        let f = Feature::parse("event:export_failed").unwrap();
        assert_eq!(f, Feature::Event("export_failed".into()));
        assert_eq!(f.name(), "event:export_failed");
        assert_eq!(
            Feature::parse("nps_detractor"),
            Some(Feature::Signal(Signal::NpsDetractor))
        );
        assert_eq!(Feature::parse("event:"), None);
        assert_eq!(Feature::parse("nope"), None);
        assert_eq!(
            f.strength(&with(customer(), "export_failed", 29, 1)),
            Some(1.0)
        );
        assert_eq!(f.strength(&with(customer(), "export_failed", 30, 1)), None);
    }

    #[test]
    fn a_model_adds_its_features_points_to_its_base() {
        let model = Model {
            kind: ModelKind::Learned,
            base: 40,
            weights: vec![
                (Feature::Event("export_failed".into()), 30),
                (Feature::Signal(Signal::NpsPromoter), -12),
                (Feature::Signal(Signal::NoEvents14d), 3),
            ],
        };
        let mut a = with(active(), "export_failed", 3, 2);
        a.nps = Some(10);
        assert_eq!(model.raw_score(&a), 40 + 30 - 12);
        assert_eq!(
            model.assess(&a),
            Assessment::Scored {
                score: 58,
                level: Level::Medium,
                signals: vec![
                    Contribution {
                        name: "event:export_failed".into(),
                        weight: 30
                    },
                    Contribution {
                        name: "nps_promoter".into(),
                        weight: -12
                    },
                ],
            }
        );
        let heavy = Model { base: 90, ..model };
        assert_eq!(heavy.raw_score(&a), 108, "the raw score is not clamped");
        assert!(matches!(
            heavy.assess(&a),
            Assessment::Scored { score: 100, .. }
        ));
    }

    #[test]
    fn the_weight_table_names_every_signal_once() {
        let mut names: Vec<_> = DEFAULT_WEIGHTS.iter().map(|(s, _)| s.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 18);
        let raising = DEFAULT_WEIGHTS.iter().filter(|(_, w)| *w > 0).count();
        assert_eq!(
            raising, 13,
            "13 negative signals raise the risk, 5 lower it"
        );
    }
}
