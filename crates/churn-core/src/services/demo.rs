//! Demo data for a project (`churn demo seed|clear`), so a dashboard comes alive in a minute
//! and benchmarks replay: a year of churn events across reasons, plans and statuses, the nine
//! variants for some, sends, opens, clicks and the strategy that won; customers with tracked
//! behaviour and a risk-score history; payment failures with their retries; risk alerts with
//! delivery attempts; a cancel flow with submissions. Every row follows from the seed and its
//! index (dates counted back from now), so a seed gives the same data whatever the batch size.
//!
//! Written in groups of [`BATCH`], a transaction each, through the tables' own triggers (see
//! `store::demo`), so every kept count is exact after a seed and after a clear. A project
//! holding demo data refuses a second seed: ids follow from the index, and one seed per
//! project keeps `clear` a matter of ranges.

use std::sync::Arc;

use chrono::Duration;
use serde_json::json;

use super::cancel_flow::PROVIDER;
use crate::domain::cancel_flow::CancelFlow;
use crate::domain::risk::Level;
use crate::domain::strategy::{ReasonCode, Strategy};
use crate::error::{Error, Result};
use crate::store::customers::{self, Activity};
use crate::store::demo::{
    self, AlertRow, EMAIL_DOMAIN, EventRow, FailureRow, Marker, VariantRow, id_prefix,
};
use crate::store::projects::ProjectRecord;
use crate::store::risk::{self, ScoreRecord};
use crate::store::{Store, behavior, cancel_flows, overview};
use crate::time::{self, Clock, Timestamp};

/// Rows of one kind per transaction.
const BATCH: u64 = 2_000;
/// The most events and customers a seed makes (ids hold seven digits).
pub const MAX_ROWS: u64 = 9_999_999;
/// Days of each customer's score history, oldest first; the last is today's.
const SCORE_DAYS: [i64; 5] = [60, 30, 14, 7, 0];

#[derive(Debug, Clone)]
pub struct SeedOptions {
    pub events: u64,
    pub customers: u64,
    pub seed: u64,
    /// Lowercase ISO 4217 code of every amount.
    pub currency: String,
}

/// What a seed made.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Seeded {
    pub events: u64,
    pub recovered: u64,
    pub lost: u64,
    pub variants: u64,
    pub sent: u64,
    pub customers: u64,
    pub risk_scores: u64,
    pub behavior_rollups: u64,
    pub payment_failures: u64,
    pub payment_attempts: u64,
    pub alerts: u64,
    pub cancel_flow_opens: u64,
    /// Whether the seed stored a cancel flow (the project had none).
    pub cancel_flow: bool,
}

/// What a clear removed.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Cleared {
    pub events: u64,
    pub customers: u64,
    pub payment_failures: u64,
    pub alerts: u64,
    pub cancel_flow: bool,
}

/// Seeds and clears demo data, with the operator's rights (the operator CLI).
pub struct Demo {
    store: Store,
    clock: Arc<dyn Clock>,
}

impl Demo {
    pub fn new(store: Store, clock: Arc<dyn Clock>) -> Self {
        Self { store, clock }
    }

    pub async fn seed(&self, project: &ProjectRecord, o: &SeedOptions) -> Result<Seeded> {
        if o.customers == 0 || o.customers > MAX_ROWS || o.events > MAX_ROWS {
            return Err(Error::validation(format!(
                "customers must be 1–{MAX_ROWS} and events 0–{MAX_ROWS}"
            )));
        }
        let now = self.clock.now();
        let pid = project.id.as_str();
        let mut made = Seeded::default();

        let mut tx = self.store.begin().await?;
        made.cancel_flow = cancel_flows::get(&mut *tx, pid).await?.is_none();
        if made.cancel_flow {
            let flow = CancelFlow::default_for(&project.settings);
            cancel_flows::put(&mut *tx, pid, &flow, now).await?;
        }
        let marker = Marker {
            seed: o.seed as i64,
            events: o.events as i64,
            customers: o.customers as i64,
            cancel_flow_at: made.cancel_flow.then(|| time::format(&now)),
            created_at: time::format(&now),
        };
        demo::insert_marker(&mut *tx, pid, &marker).await?;
        tx.commit().await?;

        let g = Generator {
            seed: o.seed,
            now,
            prefix: id_prefix(pid),
            customers: o.customers,
            currency: o.currency.clone(),
        };
        for from in (0..o.customers).step_by(BATCH as usize) {
            let mut people: Vec<Customer> = (from..(from + BATCH).min(o.customers))
                .map(|c| g.customer(c))
                .collect();
            // The order tracking and scoring lock customers in (`risk::save_scores`).
            people.sort_by(|a, b| a.activity.email.cmp(&b.activity.email));
            let mut tx = self.store.begin().await?;
            let seen: Vec<&Activity> = people.iter().map(|p| &p.activity).collect();
            customers::record_activity(&mut *tx, pid, &seen).await?;
            for (k, day) in SCORE_DAYS.iter().enumerate() {
                let scores: Vec<ScoreRecord> =
                    people.iter().map(|p| p.score(k, *day, now)).collect();
                risk::save_scores(&mut tx, pid, &scores).await?;
            }
            overview::forget_at_risk(&mut *tx, pid).await?;
            let rollups: Vec<_> = people.iter().flat_map(|p| &p.rollups).collect();
            let counts: Vec<_> = rollups.iter().map(|(k, n)| (k, *n)).collect();
            behavior::add_to_rollups(&mut *tx, pid, &counts).await?;
            let alerts: Vec<AlertRow> = people.iter().filter_map(|p| p.alert.clone()).collect();
            demo::insert_alerts(&mut *tx, pid, &alerts).await?;
            let failures: Vec<FailureRow> =
                people.iter().filter_map(|p| p.failure.clone()).collect();
            demo::insert_failures(&mut tx, pid, &failures).await?;
            let opens: Vec<_> = people.iter().filter_map(|p| p.open.clone()).collect();
            demo::insert_opens(&mut *tx, pid, &opens).await?;
            tx.commit().await?;
            made.customers += people.len() as u64;
            made.risk_scores += (people.len() * SCORE_DAYS.len()) as u64;
            made.behavior_rollups += rollups.len() as u64;
            made.alerts += alerts.len() as u64;
            made.payment_failures += failures.len() as u64;
            made.payment_attempts += failures
                .iter()
                .map(|f| f.attempts.len() as u64)
                .sum::<u64>();
            made.cancel_flow_opens += opens.len() as u64;
        }

        for from in (0..o.events).step_by(BATCH as usize) {
            let to = (from + BATCH).min(o.events);
            let mut events = Vec::new();
            let mut variants = Vec::new();
            let mut opens = Vec::new();
            for i in from..to {
                let e = g.event(i);
                made.recovered += u64::from(e.row.recovered_at.is_some());
                made.lost += u64::from(e.row.status == "lost");
                made.sent += e.variants.iter().filter(|v| v.status != "draft").count() as u64;
                if let Some(open) = e.open {
                    opens.push(open);
                }
                events.push(e.row);
                variants.extend(e.variants);
            }
            let mut tx = self.store.begin().await?;
            demo::insert_events(&mut *tx, pid, &events).await?;
            demo::insert_variants(&mut *tx, pid, &variants).await?;
            let (first, end) = (event_id(&g.prefix, from), event_id(&g.prefix, to));
            demo::send_and_recover(&mut tx, pid, &first, &end).await?;
            demo::insert_opens(&mut *tx, pid, &opens).await?;
            tx.commit().await?;
            made.events += events.len() as u64;
            made.variants += variants.len() as u64;
            made.cancel_flow_opens += opens.len() as u64;
        }
        Ok(made)
    }

    /// Removes the project's demo data and nothing else: events in groups of [`BATCH`], a
    /// transaction each (one transaction of a million row-trigger updates of the same count
    /// rows is quadratic on PostgreSQL), then the rest and the marker in one.
    pub async fn clear(&self, project: &ProjectRecord) -> Result<Cleared> {
        let pid = project.id.as_str();
        let Some(marker) = demo::marker(self.store.reader(), pid).await? else {
            return Err(Error::NotFound(format!(
                "project {} holds no demo data",
                project.slug
            )));
        };
        let prefix = id_prefix(pid);
        let mut cleared = Cleared::default();
        let events = marker.events as u64;
        for from in (0..events).step_by(BATCH as usize) {
            let to = (from + BATCH).min(events);
            let mut tx = self.store.begin().await?;
            cleared.events += demo::delete_events(
                &mut tx,
                pid,
                &event_id(&prefix, from),
                &event_id(&prefix, to),
            )
            .await?;
            tx.commit().await?;
        }
        let mut tx = self.store.begin().await?;
        let removed = demo::delete_rest(&mut tx, pid, &marker).await?;
        overview::forget_at_risk(&mut *tx, pid).await?;
        tx.commit().await?;
        cleared.customers = removed.customers;
        cleared.payment_failures = removed.payment_failures;
        cleared.alerts = removed.alerts;
        cleared.cancel_flow = removed.cancel_flow;
        Ok(cleared)
    }
}

/// SplitMix64: a few lines, deterministic everywhere, and good enough for made-up data.
struct Rng(u64);

impl Rng {
    /// The stream of row `index` of kind `kind` under `seed`.
    fn new(seed: u64, kind: u64, index: u64) -> Self {
        let mut r = Rng(seed ^ kind.wrapping_mul(0xA076_1D64_78BD_642F));
        r.0 ^= index.wrapping_mul(0xE703_7ED1_A0B4_28DB);
        r.next();
        r
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn weighted<T: Copy>(&mut self, items: &[(T, u64)]) -> T {
        let mut roll = self.below(items.iter().map(|(_, w)| w).sum());
        for &(item, w) in items {
            if roll < w {
                return item;
            }
            roll -= w;
        }
        unreachable!("the roll is below the sum of the weights")
    }
}

const CUSTOMER: u64 = 1;
const EVENT: u64 = 2;

const FIRST: [&str; 24] = [
    "Ada", "Ben", "Chloe", "Dev", "Elena", "Farid", "Grace", "Hugo", "Ines", "Jon", "Kemi", "Liam",
    "Mei", "Nora", "Omar", "Priya", "Quinn", "Rosa", "Sven", "Tara", "Umar", "Vera", "Wes", "Yuki",
];
const LAST: [&str; 20] = [
    "Adams", "Baker", "Chen", "Diaz", "Evans", "Fischer", "Garcia", "Haddad", "Ito", "Jensen",
    "Kim", "Lopez", "Moreau", "Nakamura", "Okafor", "Patel", "Rossi", "Silva", "Tanaka", "Weber",
];
/// (plan, monthly price in major units, weight).
const PLANS: [(&str, i64, u64); 4] = [
    ("Starter", 19, 40),
    ("Growth", 49, 32),
    ("Pro", 99, 20),
    ("Business", 249, 8),
];
const REASONS: [(ReasonCode, u64); 8] = [
    (ReasonCode::TooExpensive, 28),
    (ReasonCode::NotUsingEnough, 20),
    (ReasonCode::MissingFeatures, 14),
    (ReasonCode::SwitchingCompetitor, 12),
    (ReasonCode::DontNeedAnymore, 10),
    (ReasonCode::TechnicalIssues, 8),
    (ReasonCode::PoorSupport, 4),
    (ReasonCode::Other, 4),
];
const RISK_LEVELS: [(Level, u64); 4] = [
    (Level::Low, 55),
    (Level::Medium, 25),
    (Level::High, 13),
    (Level::Critical, 7),
];
/// Signals that raise the risk, and those that lower it.
const RAISING: [&str; 8] = [
    "login_gaps",
    "declining_usage",
    "no_events_14d",
    "failed_payments",
    "cancel_page_views",
    "short_sessions",
    "feature_drop_off",
    "competitor_page_visits",
];
const LOWERING: [&str; 3] = ["feature_adoption", "team_invites", "api_usage_growth"];
const FEATURES: [&str; 5] = ["reports", "export", "integrations", "api", "dashboards"];
const DECLINES: [(&str, &str, u64); 4] = [
    (
        "insufficient_funds",
        "Your card has insufficient funds.",
        45,
    ),
    ("expired_card", "Your card has expired.", 20),
    ("card_declined", "Your card was declined.", 25),
    ("do_not_honor", "Your card was declined.", 10),
];

fn cancel_reason(code: ReasonCode) -> &'static str {
    match code {
        ReasonCode::TooExpensive => "It's too expensive for what we use",
        ReasonCode::NotUsingEnough => "We barely logged in last month",
        ReasonCode::MissingFeatures => "We need an export to our warehouse",
        ReasonCode::SwitchingCompetitor => "Moving to another tool our team prefers",
        ReasonCode::DontNeedAnymore => "The project ended",
        ReasonCode::TechnicalIssues => "Sync kept failing",
        ReasonCode::PoorSupport => "Took days to get an answer",
        ReasonCode::Other => "Other",
    }
}

fn subject(s: Strategy) -> &'static str {
    match s {
        Strategy::ValueRecap => "What you got done with us this year",
        Strategy::UnusedFeature => "One feature you haven't tried yet",
        Strategy::DowngradeOffer => "A smaller plan that fits",
        Strategy::PauseOption => "Pause instead of cancelling?",
        Strategy::FounderEmail => "A note from our founder",
        Strategy::PainPointFix => "We fixed what got in your way",
        Strategy::SocialProof => "How teams like yours use us",
        Strategy::FeedbackRequest => "Could you tell us what we missed?",
        Strategy::Discount => "20% off your next three months",
    }
}

struct Generator {
    seed: u64,
    now: Timestamp,
    prefix: String,
    customers: u64,
    currency: String,
}

/// One customer's rows.
struct Customer {
    activity: Activity,
    score: i64,
    signals: String,
    rollups: Vec<(behavior::RollupKey, i64)>,
    alert: Option<AlertRow>,
    failure: Option<FailureRow>,
    open: Option<(String, String)>,
}

impl Customer {
    /// The `k`-th score of the history, `days` ago: rising towards today's.
    fn score(&self, k: usize, days: i64, now: Timestamp) -> ScoreRecord {
        let steps = (SCORE_DAYS.len() - 1 - k) as i64;
        let score = (self.score - steps * (self.score / 8)).clamp(0, 100);
        let at = now - Duration::days(days);
        ScoreRecord {
            customer_email: self.activity.email.clone(),
            day: at.format("%Y-%m-%d").to_string(),
            score: Some(score),
            level: Some(Level::of(score).as_str().to_owned()),
            signals: self.signals.clone(),
            model: "default".to_owned(),
            scored_at: at,
        }
    }
}

/// One event's rows.
struct Event {
    row: EventRow,
    variants: Vec<VariantRow>,
    open: Option<(String, String)>,
}

/// Event ids sort by index, so a group of events is a range of ids.
fn event_id(prefix: &str, i: u64) -> String {
    format!("{prefix}e{i:07}")
}

impl Generator {
    fn email(c: u64) -> (String, String) {
        let (first, last) = (FIRST[(c % 24) as usize], LAST[((c / 24) % 20) as usize]);
        (
            format!(
                "{}.{}.{c}@{EMAIL_DOMAIN}",
                first.to_lowercase(),
                last.to_lowercase()
            ),
            format!("{first} {last}"),
        )
    }

    fn ago(&self, days: i64, r: &mut Rng) -> Timestamp {
        self.now - Duration::days(days) - Duration::seconds(r.range(0, 86_399))
    }

    fn customer(&self, c: u64) -> Customer {
        let r = &mut Rng::new(self.seed, CUSTOMER, c);
        let (email, _) = Self::email(c);
        let level = r.weighted(&RISK_LEVELS);
        let score = match level {
            Level::Low => r.range(3, 39),
            Level::Medium => r.range(40, 59),
            Level::High => r.range(60, 79),
            Level::Critical => r.range(80, 98),
        };
        let mut signals = Vec::new();
        let mut left = score;
        while left > 8 && signals.len() < 4 {
            let weight = if signals.len() == 3 {
                left
            } else {
                r.range(8, left.min(35))
            };
            let name = RAISING[(r.below(RAISING.len() as u64) as usize + signals.len()) % 8];
            if signals.iter().all(|(n, _)| *n != name) {
                signals.push((name, weight));
                left -= weight;
            }
        }
        if level == Level::Low {
            signals.push((LOWERING[r.below(3) as usize], -r.range(5, 20)));
        }
        let signals = json!(
            signals
                .iter()
                .map(|(n, w)| json!({"name": n, "weight": w}))
                .collect::<Vec<_>>()
        )
        .to_string();
        let quiet = match level {
            Level::Low => r.range(0, 3),
            Level::Medium => r.range(2, 10),
            Level::High => r.range(7, 21),
            Level::Critical => r.range(14, 45),
        };
        let last_at = self.ago(quiet, r);
        let first_at = last_at - Duration::days(r.range(60, 700));
        let nps = r.chance(30).then(|| {
            let s = if level >= Level::High {
                r.range(0, 6)
            } else {
                r.range(5, 10)
            };
            (s, last_at - Duration::days(r.range(0, 30)))
        });
        let card_expiry = r
            .chance(5)
            .then(|| (self.now + Duration::days(r.range(1, 30)), last_at));
        let mut rollups = Vec::new();
        for k in 0..3 {
            let day = (last_at - Duration::days(k * r.range(1, 7)))
                .format("%Y-%m-%d")
                .to_string();
            let (event, detail) = match k {
                0 => ("login", ""),
                1 => ("feature_used", FEATURES[r.below(5) as usize]),
                _ if level >= Level::High => ("page_viewed", "cancel"),
                _ => ("page_viewed", "pricing"),
            };
            rollups.push((
                behavior::RollupKey {
                    customer_email: email.clone(),
                    day,
                    event: event.to_owned(),
                    detail: detail.to_owned(),
                },
                r.range(1, 12),
            ));
        }
        // Rollup keys are distinct per customer only when their days differ.
        rollups.sort_by(|a, b| a.0.cmp(&b.0));
        rollups.dedup_by(|a, b| a.0 == b.0);

        let alert = (level >= Level::High && r.chance(35)).then(|| {
            let at = self.ago(r.range(0, 28), r);
            let (status, reason, attempts) = match r.below(100) {
                0..75 => {
                    let mut tries = Vec::new();
                    if r.chance(20) {
                        tries.push(json!({"at": time::format(&at), "status_code": 503, "error": null, "response_body": "upstream unavailable"}));
                    }
                    tries.push(json!({"at": time::format(&(at + Duration::minutes(1))), "status_code": 200, "error": null, "response_body": "ok"}));
                    ("delivered", None, tries)
                }
                75..90 => {
                    let tries = (0..4)
                        .map(|k| {
                            let t = at + Duration::minutes(5_i64.pow(k));
                            if k % 2 == 0 {
                                json!({"at": time::format(&t), "status_code": null, "error": "timed out after 10 s", "response_body": null})
                            } else {
                                json!({"at": time::format(&t), "status_code": 500, "error": null, "response_body": "internal error"})
                            }
                        })
                        .collect();
                    ("failed", None, tries)
                }
                _ => ("skipped", Some("no_webhook_url"), Vec::new()),
            };
            AlertRow {
                id: format!("{}a{c:07}", self.prefix),
                opaque_id: format!("{}o{c:07}", self.prefix),
                customer_email: email.clone(),
                risk_score: score,
                risk_level: level.as_str(),
                signals: signals.clone(),
                status,
                reason,
                attempts: json!(attempts).to_string(),
                created_at: time::format(&at),
            }
        });

        let failure = r.chance(5).then(|| {
            let (code, text) = {
                let pick: Vec<_> = DECLINES.iter().map(|&(c, t, w)| ((c, t), w)).collect();
                r.weighted(&pick)
            };
            let created = self.ago(r.range(1, 180), r);
            let status = r.weighted(&[("failing", 30), ("recovered", 45), ("abandoned", 25)]);
            let failed = match status {
                "abandoned" => 4,
                _ => r.range(1, 3),
            };
            let id = format!("{}p{c:07}", self.prefix);
            let at = |k: i64| (created + Duration::days(3 * k)).min(self.now);
            let mut attempts: Vec<_> = (0..failed)
                .map(|k| {
                    (
                        format!("{id}-{k}"),
                        time::format(&at(k)),
                        "failed",
                        Some(code),
                    )
                })
                .collect();
            let recovered_at = (status == "recovered").then(|| {
                attempts.push((
                    format!("{id}-{failed}"),
                    time::format(&at(failed)),
                    "succeeded",
                    None,
                ));
                time::format(&at(failed))
            });
            let plan = r.weighted(&PLANS.map(|(_, price, w)| (price, w)));
            FailureRow {
                reference: format!("in_demo{c:07}"),
                id,
                customer_email: email.clone(),
                amount: plan * 100,
                currency: self.currency.clone(),
                status,
                failure_reason: text,
                decline_code: code,
                abandon_reason: (status == "abandoned").then_some("retries_exhausted"),
                recovered_at,
                created_at: time::format(&created),
                updated_at: attempts.last().map(|a| a.1.clone()).unwrap_or_default(),
                attempts,
            }
        });
        // Opened the cancel flow and stayed.
        let open = r.chance(3).then(|| (email.clone(), time::format(&last_at)));

        Customer {
            activity: Activity {
                email,
                first_at,
                last_at,
                nps,
                card_expiry,
            },
            score,
            signals,
            rollups,
            alert,
            failure,
            open,
        }
    }

    fn event(&self, i: u64) -> Event {
        let r = &mut Rng::new(self.seed, EVENT, i);
        let id = event_id(&self.prefix, i);
        let c = r.below(self.customers);
        let (email, name) = Self::email(c);
        // More churn lately: the density of days ago falls linearly over the year.
        let u = r.below(1_000_000) as f64 / 1_000_000.0;
        let days = (365.0 * (1.0 - u.sqrt())) as i64;
        let created = self.ago(days, r).max(self.now - Duration::days(365));
        let (plan, price) = r.weighted(&PLANS.map(|(n, p, w)| ((n, p), w)));
        let seats = if price >= 99 { r.range(1, 4) } else { 1 };
        let payment_failed = r.chance(12);
        let reason = if payment_failed {
            ReasonCode::Other
        } else {
            r.weighted(&REASONS)
        };
        let provider = match (payment_failed, r.below(100)) {
            (true, _) | (false, 0..55) => "stripe",
            (false, 55..85) => PROVIDER,
            _ => "api",
        };
        let status = match days {
            0 => r.weighted(&[("new", 25), ("variants_generated", 75)]),
            1..14 => r.weighted(&[("email_sent", 55), ("recovered", 25), ("lost", 20)]),
            _ => r.weighted(&[("recovered", 27), ("lost", 73)]),
        };
        let via = (status == "recovered").then(|| match provider {
            PROVIDER if r.chance(70) => "cancel_flow",
            _ if payment_failed => "payment",
            _ if r.chance(85) => "email",
            _ => "manual",
        });
        let emailed = match (status, via) {
            ("email_sent", _) | (_, Some("email")) => true,
            ("lost", _) => r.chance(60),
            _ => false,
        };
        let ts = |t: Timestamp| time::format(&t.min(self.now));
        let mut variants = Vec::new();
        let mut finished = created + Duration::hours(r.range(2, 96));
        if emailed || status == "variants_generated" {
            let sent = emailed.then(|| {
                if r.chance(60) {
                    reason.strategy()
                } else {
                    Strategy::ALL[r.below(9) as usize]
                }
            });
            let lead = sent.unwrap_or_else(|| reason.strategy());
            let all_nine = !emailed || r.chance(8);
            let order = std::iter::once(lead)
                .chain(Strategy::ALL.into_iter().filter(|s| *s != lead))
                .take(if all_nine { 9 } else { 1 });
            for (rank, strategy) in order.enumerate() {
                let rank = rank as i64 + 1;
                let first_name = name.split(' ').next().unwrap_or_default();
                let body_text = format!(
                    "Hi {first_name},\n\n{}.\n\nReply to this email and I will read it myself.",
                    subject(strategy)
                );
                let mut v = VariantRow {
                    id: format!("{id}-{}", strategy.as_str()),
                    churn_event_id: id.clone(),
                    strategy: strategy.as_str(),
                    subject: subject(strategy).to_owned(),
                    body: format!(
                        "<p>Hi {first_name},</p><p>{}.</p><p>Reply to this email and I will read it myself.</p>",
                        subject(strategy)
                    ),
                    body_text,
                    status: "draft",
                    rank,
                    rank_score: 0.92 - 0.07 * rank as f64,
                    rank_reasons: json!([format!(
                        "fits the reason: {}",
                        reason.phrase().unwrap_or("other")
                    )])
                    .to_string(),
                    coupon: (strategy == Strategy::Discount).then_some(("COMEBACK20", 20)),
                    recipient: None,
                    opened_at: None,
                    clicked_at: None,
                    open_count: 0,
                    click_count: 0,
                    created_at: ts(created + Duration::minutes(1)),
                    updated_at: ts(created + Duration::minutes(1)),
                };
                if Some(strategy) == sent {
                    let sent_at = created + Duration::minutes(r.range(10, 120));
                    let recovered = via == Some("email");
                    v.recipient = Some(email.clone());
                    v.status = "sent";
                    v.updated_at = ts(sent_at);
                    finished = sent_at + Duration::hours(r.range(1, 72));
                    if r.chance(if recovered { 90 } else { 55 }) {
                        v.status = "opened";
                        v.open_count = r.range(1, 4);
                        v.opened_at = Some(ts(sent_at + Duration::minutes(r.range(5, 600))));
                        if r.chance(if recovered { 80 } else { 35 }) {
                            v.status = "clicked";
                            v.click_count = r.range(1, 2);
                            v.clicked_at = Some(ts(sent_at + Duration::minutes(r.range(610, 900))));
                        }
                    }
                }
                variants.push(v);
            }
        }
        let recovered_at = via.map(|_| ts(finished));
        let open =
            (provider == PROVIDER).then(|| (email.clone(), ts(created - Duration::minutes(2))));
        Event {
            row: EventRow {
                id,
                customer_email: email,
                customer_name: name,
                event_type: if payment_failed {
                    "payment_failed"
                } else {
                    "cancellation"
                },
                cancel_reason: (!payment_failed).then(|| cancel_reason(reason)),
                reason_code: reason.as_str(),
                mrr: price * 100 * seats,
                currency: self.currency.clone(),
                plan_name: plan,
                provider,
                tenure_days: r.range(14, 900),
                // Recovered after a send: `send_and_recover` recovers it once the send counts.
                status: if via == Some("email") {
                    "email_sent"
                } else {
                    status
                },
                recovered_via: via,
                lost_at: (status == "lost").then(|| ts(finished)),
                offer_applied_at: (via == Some("cancel_flow"))
                    .then(|| ts(created + Duration::minutes(1))),
                recovered_at,
                updated_at: ts(finished),
                created_at: ts(created),
            },
            variants,
            open,
        }
    }
}
