//! The arithmetic of analytics (decisions §13): calendar months, cohort rows from monthly
//! aggregates, holdout group assignment, and Newcombe's interval for a difference of rates.

use std::collections::BTreeMap;

use chrono::Datelike;
use sha2::{Digest, Sha256};

use super::lifecycle::EventStatus;
use super::strategy::Strategy;
use super::wire_enum::wire_enum;
use crate::api::analytics::CohortRow;
use crate::api::cancel_flow::VariantResult;
use crate::time::Timestamp;

/// A calendar month (UTC), ordered in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Month(i32);

impl Month {
    pub fn of(ts: Timestamp) -> Self {
        Month(ts.year() * 12 + ts.month0() as i32)
    }

    /// `YYYY-MM`.
    pub fn parse(raw: &str) -> Option<Self> {
        let (year, month) = raw.split_once('-')?;
        let (year, month): (i32, i32) = (year.parse().ok()?, month.parse().ok()?);
        (1..=12)
            .contains(&month)
            .then_some(Month(year * 12 + month - 1))
    }

    pub fn plus(self, months: i32) -> Self {
        Month(self.0 + months)
    }

    /// The month's last day, `YYYY-MM-DD`.
    pub fn last_day(self) -> String {
        let next = self.plus(1);
        let first = chrono::NaiveDate::from_ymd_opt(
            next.0.div_euclid(12),
            next.0.rem_euclid(12) as u32 + 1,
            1,
        )
        .unwrap_or_default();
        first
            .pred_opt()
            .unwrap_or(first)
            .format("%Y-%m-%d")
            .to_string()
    }

    /// Months from `self` up to and including `last`, oldest first.
    pub fn through(self, last: Month) -> impl Iterator<Item = Month> {
        (self.0..=last.0).map(Month)
    }
}

impl std::fmt::Display for Month {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:04}-{:02}",
            self.0.div_euclid(12),
            self.0.rem_euclid(12) + 1
        )
    }
}

/// One monthly aggregate: events of a month in one status (and, recovered, one attributed
/// strategy), and their MRR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonthlyCount {
    pub month: Month,
    pub status: EventStatus,
    pub strategy: Option<Strategy>,
    pub n: i64,
    pub mrr: i64,
}

/// recovered / (recovered + lost) × 100, to two decimals; 0 when nothing is resolved.
pub fn recovery_rate(recovered: u64, lost: u64) -> f64 {
    let resolved = recovered + lost;
    if resolved == 0 {
        0.0
    } else {
        (recovered as f64 * 10_000.0 / resolved as f64).round() / 100.0
    }
}

/// The cohort rows of the `months` months ending with `current`, newest first, empty months
/// included with zeros.
pub fn cohorts(counts: &[MonthlyCount], current: Month, months: i32) -> Vec<CohortRow> {
    let mut rows: BTreeMap<Month, CohortRow> = current
        .plus(1 - months)
        .through(current)
        .map(|m| {
            let by_strategy = Strategy::ALL
                .iter()
                .map(|s| (s.as_str().to_owned(), 0))
                .collect();
            let row = CohortRow {
                cohort: m.to_string(),
                total_events: 0,
                recovered: 0,
                lost: 0,
                processing: 0,
                recovery_rate: 0.0,
                total_mrr_cents: 0,
                recovered_mrr_cents: 0,
                by_strategy,
            };
            (m, row)
        })
        .collect();
    for c in counts {
        let Some(row) = rows.get_mut(&c.month) else {
            continue;
        };
        let n = c.n.max(0) as u64;
        row.total_events += n;
        row.total_mrr_cents += c.mrr;
        match c.status {
            EventStatus::Recovered => {
                row.recovered += n;
                row.recovered_mrr_cents += c.mrr;
                if let Some(s) = c.strategy {
                    *row.by_strategy.entry(s.as_str().to_owned()).or_default() += n;
                }
            }
            EventStatus::Lost => row.lost += n,
            _ => row.processing += n,
        }
    }
    rows.into_values()
        .rev()
        .map(|mut row| {
            row.recovery_rate = recovery_rate(row.recovered, row.lost);
            row
        })
        .collect()
}

wire_enum! {
    /// Whether autopilot may email an event (`treatment`) or holds it out (`control`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, utoipa::ToSchema)]
    pub enum Group {
        Treatment = "treatment",
        Control = "control",
    }
}

/// The first 8 bytes of SHA-256(`key`) as a big-endian unsigned integer: the stable draw
/// behind every assignment of an experiment (the holdout here, a cancel flow's variants).
pub fn stable_draw(key: &str) -> u64 {
    let digest = Sha256::digest(key.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

/// `control` when the [`stable_draw`] of the event id mod 100 is below `holdout_percent`;
/// else `treatment`.
pub fn holdout_group(event_id: &str, holdout_percent: i64) -> Group {
    let bucket = stable_draw(event_id) % 100;
    if (bucket as i64) < holdout_percent {
        Group::Control
    } else {
        Group::Treatment
    }
}

/// The Wilson score interval (95 %, z = 1.959964) of `successes` out of `n`, as fractions.
fn wilson(successes: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = Z95;
    let (n, p) = (n as f64, successes as f64 / n as f64);
    let centre = p + z * z / (2.0 * n);
    let spread = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    let denominator = 1.0 + z * z / n;
    (
        ((centre - spread) / denominator).max(0.0),
        ((centre + spread) / denominator).min(1.0),
    )
}

const Z95: f64 = 1.959_963_984_540_054;

/// Newcombe's hybrid score interval (his method 10) for p1 − p2, where p1 = r1/n1 and
/// p2 = r2/n2, in percentage points.
pub fn newcombe(r1: u64, n1: u64, r2: u64, n2: u64) -> (f64, f64) {
    let p = |r: u64, n: u64| if n == 0 { 0.0 } else { r as f64 / n as f64 };
    let (p1, p2) = (p(r1, n1), p(r2, n2));
    let (l1, u1) = wilson(r1, n1);
    let (l2, u2) = wilson(r2, n2);
    let d = p1 - p2;
    let low = d - ((p1 - l1).powi(2) + (u2 - p2).powi(2)).sqrt();
    let high = d + ((u1 - p1).powi(2) + (p2 - l2).powi(2)).sqrt();
    (low * 100.0, high * 100.0)
}

/// A rate compared with a baseline's: the difference in percentage points and its interval,
/// to two decimals (measured uplift §13, a cancel flow's experiment §19).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Difference {
    /// rate − baseline rate, each as [`recovery_rate`] rounds it.
    pub points: f64,
    /// Newcombe's hybrid score interval of the difference.
    pub ci95: [f64; 2],
    /// Whether `ci95` excludes 0.
    pub significant: bool,
}

/// `successes` out of `n` against the baseline's `base_successes` out of `base_n`.
pub fn difference(successes: u64, n: u64, base_successes: u64, base_n: u64) -> Difference {
    let round = |x: f64| (x * 100.0).round() / 100.0;
    let rate = |r: u64, n: u64| recovery_rate(r, n.saturating_sub(r));
    let (low, high) = newcombe(successes, n, base_successes, base_n);
    let (low, high) = (round(low), round(high));
    Difference {
        points: round(rate(successes, n) - rate(base_successes, base_n)),
        ci95: [low, high],
        significant: low > 0.0 || high < 0.0,
    }
}

/// An experiment's results (decisions §19) from each variant's `(key, saved, cancelled)` in
/// the flow's order: the first is the baseline, whose comparison is null; every other one is
/// compared with it.
pub fn experiment_results(counts: &[(&str, u64, u64)]) -> Vec<VariantResult> {
    let baseline = counts
        .first()
        .map(|&(_, saved, cancelled)| (saved, saved + cancelled));
    counts
        .iter()
        .enumerate()
        .map(|(i, &(key, saved, cancelled))| {
            let compared = baseline.filter(|_| i > 0).map(|(base_saved, base_n)| {
                difference(saved, saved + cancelled, base_saved, base_n)
            });
            VariantResult {
                key: key.to_owned(),
                sessions: saved + cancelled,
                saved,
                cancelled,
                save_rate: recovery_rate(saved, cancelled),
                uplift_points: compared.map(|d| d.points),
                ci95: compared.map(|d| d.ci95),
                significant: compared.map(|d| d.significant),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(x: f64, places: i32) -> f64 {
        let f = 10f64.powi(places);
        (x * f).round() / f
    }

    #[test]
    fn months_print_parse_and_step() {
        let m = Month::parse("2026-01").unwrap();
        assert_eq!(m.plus(-1).to_string(), "2025-12");
        assert_eq!(m.plus(11).to_string(), "2026-12");
        assert_eq!(m.plus(12).to_string(), "2027-01");
        assert_eq!(
            Month::of(crate::time::parse("2026-11-30T23:59:59Z").unwrap()).to_string(),
            "2026-11"
        );
        assert_eq!(Month::parse("2026-13"), None);
        assert_eq!(m.last_day(), "2026-01-31");
        assert_eq!(m.plus(1).last_day(), "2026-02-28");
        assert_eq!(m.plus(-1).last_day(), "2025-12-31");
        let all: Vec<_> = m.plus(-2).through(m).map(|m| m.to_string()).collect();
        assert_eq!(all, ["2025-11", "2025-12", "2026-01"]);
    }

    #[test]
    fn cohorts_fill_empty_months_and_attribute_recoveries() {
        let current = Month::parse("2026-03").unwrap();
        let count = |month: &str, status, strategy, n, mrr| MonthlyCount {
            month: Month::parse(month).unwrap(),
            status,
            strategy,
            n,
            mrr,
        };
        let counts = [
            count("2026-03", EventStatus::New, None, 2, 1000),
            count(
                "2026-01",
                EventStatus::Recovered,
                Some(Strategy::Discount),
                3,
                900,
            ),
            count("2026-01", EventStatus::Recovered, None, 1, 100),
            count("2026-01", EventStatus::Lost, None, 4, 400),
            count("2026-01", EventStatus::EmailSent, None, 1, 0),
            count("2025-12", EventStatus::Lost, None, 9, 9),
        ];
        let rows = cohorts(&counts, current, 3);
        let names: Vec<_> = rows.iter().map(|r| r.cohort.as_str()).collect();
        assert_eq!(names, ["2026-03", "2026-02", "2026-01"]);
        assert_eq!((rows[0].total_events, rows[0].processing), (2, 2));
        assert_eq!(rows[1].total_events, 0);
        assert_eq!(rows[1].by_strategy.len(), 9);
        let jan = &rows[2];
        assert_eq!(
            (jan.total_events, jan.recovered, jan.lost, jan.processing),
            (9, 4, 4, 1)
        );
        assert_eq!((jan.total_mrr_cents, jan.recovered_mrr_cents), (1400, 1000));
        assert_eq!(jan.recovery_rate, 50.0);
        assert_eq!(jan.by_strategy["discount"], 3);
        assert_eq!(
            jan.by_strategy.values().sum::<u64>(),
            3,
            "the unsent recovery counts nowhere"
        );
    }

    #[test]
    fn holdout_follows_the_hash_rule() {
        // SHA-256("abc") starts ba7816bf8f01cfea: 0xba7816bf8f01cfea mod 100 = 74.
        assert_eq!(
            u64::from_str_radix("ba7816bf8f01cfea", 16).unwrap() % 100,
            74
        );
        assert_eq!(holdout_group("abc", 74), Group::Treatment);
        assert_eq!(holdout_group("abc", 75), Group::Control);
        assert_eq!(holdout_group("abc", 0), Group::Treatment);
        assert_eq!(holdout_group("abc", 100), Group::Control);
    }

    #[test]
    fn newcombe_matches_his_worked_examples() {
        // Newcombe (1998), table II: 56/70 vs 48/80 gives 0.0524 to 0.3339.
        let (low, high) = newcombe(56, 70, 48, 80);
        assert_eq!((round(low, 2), round(high, 2)), (5.24, 33.39));
        // 9/10 vs 3/10: 0.1705 to 0.8090.
        let (low, high) = newcombe(9, 10, 3, 10);
        assert_eq!((round(low, 2), round(high, 2)), (17.05, 80.90));
        // 5/56 vs 0/29: -0.0381 to 0.1926.
        let (low, high) = newcombe(5, 56, 0, 29);
        assert_eq!((round(low, 2), round(high, 2)), (-3.81, 19.26));
    }

    #[test]
    fn differences_are_rounded_points_with_their_interval() {
        // 56/70 = 80 % against 48/80 = 60 %: 20 points, Newcombe's 5.24 to 33.39.
        assert_eq!(
            difference(56, 70, 48, 80),
            Difference {
                points: 20.0,
                ci95: [5.24, 33.39],
                significant: true
            }
        );
        // 5/56 = 8.93 % against 0/29: the interval holds 0.
        let d = difference(5, 56, 0, 29);
        assert_eq!(
            (d.points, d.ci95, d.significant),
            (8.93, [-3.81, 19.26], false)
        );
        assert!(!difference(0, 0, 0, 0).significant, "nothing measured");
    }

    #[test]
    fn experiments_compare_each_variant_with_the_first() {
        let results = experiment_results(&[("a", 48, 32), ("b", 56, 14), ("c", 0, 0)]);
        let keys: Vec<_> = results.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, ["a", "b", "c"]);
        let a = &results[0];
        assert_eq!(
            (a.sessions, a.saved, a.cancelled, a.save_rate),
            (80, 48, 32, 60.0)
        );
        assert_eq!((a.uplift_points, a.ci95, a.significant), (None, None, None));
        // 56/70 = 80 % against 48/80 = 60 %: Newcombe's worked example, 5.24 to 33.39.
        let b = &results[1];
        assert_eq!((b.sessions, b.save_rate), (70, 80.0));
        assert_eq!(
            (b.uplift_points, b.ci95, b.significant),
            (Some(20.0), Some([5.24, 33.39]), Some(true))
        );
        // Nothing measured yet: 0 % against 60 %, an interval too wide to say anything.
        let c = &results[2];
        assert_eq!(
            (c.sessions, c.save_rate, c.uplift_points),
            (0, 0.0, Some(-60.0))
        );
        assert_eq!(c.significant, Some(false));
        assert!(experiment_results(&[]).is_empty());
    }

    #[test]
    fn rates_are_percentages_of_resolved_events() {
        assert_eq!(recovery_rate(1, 2), 33.33);
        assert_eq!(recovery_rate(0, 0), 0.0);
    }
}
