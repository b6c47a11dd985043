//! Ranking the nine variants of an event. A transparent additive model:
//!
//! 1. every strategy starts at 0.10; the strategy mapped from the cancel reason gets +0.50, so
//!    on a plain event the mapping decides;
//! 2. tenure, MRR and the event type nudge strategies known to suit them (±0.05–0.12);
//! 3. tracked behaviour, when the customer has any, nudges again (little use → unused
//!    features, support tickets → fix the pain point, steady use → recap the value);
//! 4. the project's own outcomes: each strategy's sends and the recoveries that followed give
//!    a Beta(1, 9) posterior (a 10 % prior); once a strategy has `MIN_SENDS` sends, the
//!    difference between its posterior mean and the prior is added, weighted by how much
//!    evidence there is. A strategy that keeps winning customers back rises above the mapping.
//!
//! Every adjustment leaves a short reason, so the ranking explains itself. A strategy whose
//! email lacks its material (no code, no testimonials, …) ranks after every other whatever
//! its score, so it is never the recommendation (decisions §15).

use std::collections::HashMap;

use super::strategy::{ReasonCode, Strategy};

const BASE: f64 = 0.10;
const MAPPED: f64 = 0.50;
pub const MIN_SENDS: u64 = 10;
const PRIOR_ALPHA: f64 = 1.0;
const PRIOR_BETA: f64 = 9.0;

/// What tracking says about the customer over the last 30 days.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Behaviour {
    pub events_30d: u64,
    pub distinct_features_30d: u64,
    pub support_tickets_30d: u64,
    pub days_since_last_event: Option<u64>,
}

/// Sends of one strategy in the project and how many were followed by a recovery.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    pub sends: u64,
    pub recoveries: u64,
}

#[derive(Debug, Clone, Default)]
pub struct RankingInput {
    pub reason: Option<ReasonCode>,
    pub tenure_days: Option<i64>,
    pub mrr_cents: Option<i64>,
    pub payment_failed: bool,
    pub behaviour: Option<Behaviour>,
    pub outcomes: HashMap<Strategy, Outcome>,
    /// Strategies whose email lacks its material: ranked last.
    pub lacking: Vec<Strategy>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    pub strategy: Strategy,
    /// 1 is the recommendation.
    pub rank: u8,
    pub score: f64,
    pub reasons: Vec<String>,
}

struct Scores(HashMap<Strategy, (f64, Vec<String>)>);

impl Scores {
    fn add(&mut self, strategy: Strategy, delta: f64, reason: impl Into<String>) {
        let entry = self.0.entry(strategy).or_insert((BASE, Vec::new()));
        entry.0 += delta;
        entry.1.push(reason.into());
    }
}

pub fn rank(input: &RankingInput) -> Vec<Ranked> {
    use Strategy::*;
    let mut s = Scores(
        Strategy::ALL
            .iter()
            .map(|st| (*st, (BASE, Vec::new())))
            .collect(),
    );
    let reason = input.reason.unwrap_or(ReasonCode::Other);
    s.add(
        reason.strategy(),
        MAPPED,
        format!("matches the cancel reason ({})", reason.as_str()),
    );

    match input.tenure_days {
        Some(days) if days >= 365 => {
            s.add(FounderEmail, 0.10, "long-time customer: a personal note");
            s.add(ValueRecap, 0.08, "long tenure: a lot of value to recap");
        }
        Some(days) if days < 30 => {
            s.add(
                UnusedFeature,
                0.08,
                "new customer: likely has not found key features",
            );
            s.add(
                FeedbackRequest,
                0.05,
                "new customer: learn what went wrong early",
            );
        }
        _ => {}
    }
    match input.mrr_cents {
        Some(mrr) if mrr >= 20_000 => {
            s.add(FounderEmail, 0.10, "high MRR: worth a founder's time");
            s.add(
                DowngradeOffer,
                0.06,
                "high MRR: a cheaper plan keeps most revenue",
            );
        }
        Some(mrr) if mrr < 2_000 => {
            s.add(PauseOption, 0.05, "low MRR: pausing costs little");
            s.add(Discount, -0.05, "low MRR: little room for a discount");
        }
        _ => {}
    }
    if input.payment_failed {
        s.add(
            ValueRecap,
            0.05,
            "payment failed: remind of the value before asking to update the card",
        );
        s.add(
            PauseOption,
            0.04,
            "payment failed: a pause may suit a tight month",
        );
    }
    if let Some(b) = input.behaviour {
        if b.events_30d > 0 && b.distinct_features_30d <= 2 {
            s.add(
                UnusedFeature,
                0.12,
                format!(
                    "used only {} feature(s) in 30 days",
                    b.distinct_features_30d
                ),
            );
        }
        if b.support_tickets_30d > 0 {
            s.add(
                PainPointFix,
                0.12,
                format!("{} support ticket(s) in 30 days", b.support_tickets_30d),
            );
        }
        if b.events_30d >= 20 {
            s.add(
                ValueRecap,
                0.08,
                "active in the last 30 days: recap the value",
            );
        }
        if b.days_since_last_event.is_some_and(|d| d >= 14) {
            s.add(PauseOption, 0.06, "inactive for two weeks or more");
        }
    }
    for (strategy, outcome) in &input.outcomes {
        if outcome.sends < MIN_SENDS {
            continue;
        }
        let sends = outcome.sends as f64;
        let recoveries = outcome.recoveries.min(outcome.sends) as f64;
        let posterior = (PRIOR_ALPHA + recoveries) / (PRIOR_ALPHA + PRIOR_BETA + sends);
        let prior = PRIOR_ALPHA / (PRIOR_ALPHA + PRIOR_BETA);
        let weight = sends / (sends + 20.0);
        let delta = 2.0 * weight * (posterior - prior);
        s.add(
            *strategy,
            delta,
            format!(
                "this project: {} of {} sends recovered",
                outcome.recoveries, outcome.sends
            ),
        );
    }

    for strategy in &input.lacking {
        s.add(
            *strategy,
            0.0,
            "lacks its material: ranked last, never recommended",
        );
    }
    let mut ranked: Vec<_> = s.0.into_iter().collect();
    for (_, (_, reasons)) in ranked
        .iter_mut()
        .filter(|(_, (_, reasons))| reasons.is_empty())
    {
        reasons.push("baseline: nothing about this customer points to this strategy".to_owned());
    }
    let lacking = |s: &Strategy| input.lacking.contains(s);
    ranked.sort_by(|(a, (sa, _)), (b, (sb, _))| {
        lacking(a)
            .cmp(&lacking(b))
            .then(sb.total_cmp(sa))
            .then(a.cmp(b))
    });
    ranked
        .into_iter()
        .enumerate()
        .map(|(i, (strategy, (score, reasons)))| Ranked {
            strategy,
            rank: i as u8 + 1,
            score: (score * 1000.0).round() / 1000.0,
            reasons,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn top(input: &RankingInput) -> Strategy {
        rank(input)[0].strategy
    }

    #[test]
    fn the_mapped_strategy_wins_on_plain_events() {
        for reason in ReasonCode::ALL {
            for (tenure, mrr) in [
                (None, None),
                (Some(400), Some(50_000)),
                (Some(5), Some(500)),
            ] {
                let input = RankingInput {
                    reason: Some(reason),
                    tenure_days: tenure,
                    mrr_cents: mrr,
                    ..Default::default()
                };
                assert_eq!(
                    top(&input),
                    reason.strategy(),
                    "{reason:?} tenure {tenure:?} mrr {mrr:?}"
                );
            }
        }
        assert_eq!(top(&RankingInput::default()), Strategy::FeedbackRequest);
    }

    #[test]
    fn ranks_are_a_permutation_with_reasons() {
        let ranked = rank(&RankingInput {
            reason: Some(ReasonCode::TooExpensive),
            tenure_days: Some(400),
            ..Default::default()
        });
        assert_eq!(ranked.len(), 9);
        assert_eq!(
            ranked.iter().map(|r| r.rank).collect::<Vec<_>>(),
            (1..=9).collect::<Vec<_>>()
        );
        assert!(ranked.windows(2).all(|w| w[0].score >= w[1].score));
        assert!(ranked[0].reasons[0].contains("too_expensive"));
    }

    #[test]
    fn project_outcomes_can_overturn_the_mapping() {
        let mut outcomes = HashMap::new();
        outcomes.insert(
            Strategy::FounderEmail,
            Outcome {
                sends: 60,
                recoveries: 40,
            },
        );
        outcomes.insert(
            Strategy::Discount,
            Outcome {
                sends: 60,
                recoveries: 0,
            },
        );
        let input = RankingInput {
            reason: Some(ReasonCode::TooExpensive),
            outcomes,
            ..Default::default()
        };
        let ranked = rank(&input);
        assert_eq!(ranked[0].strategy, Strategy::FounderEmail);
        assert!(ranked[0].reasons.iter().any(|r| r.contains("40 of 60")));

        // Too few sends: no evidence yet.
        let mut few = HashMap::new();
        few.insert(
            Strategy::FounderEmail,
            Outcome {
                sends: 5,
                recoveries: 5,
            },
        );
        assert_eq!(
            top(&RankingInput {
                reason: Some(ReasonCode::TooExpensive),
                outcomes: few,
                ..Default::default()
            }),
            Strategy::Discount
        );
    }

    #[test]
    fn a_strategy_lacking_its_material_is_never_recommended() {
        for reason in ReasonCode::ALL {
            let other = if reason.strategy() == Strategy::SocialProof {
                Strategy::FounderEmail
            } else {
                Strategy::SocialProof
            };
            let lacking = vec![reason.strategy(), other];
            let ranked = rank(&RankingInput {
                reason: Some(reason),
                tenure_days: Some(400),
                mrr_cents: Some(50_000),
                lacking: lacking.clone(),
                ..Default::default()
            });
            assert!(!lacking.contains(&ranked[0].strategy), "{reason:?}");
            let last: Vec<_> = ranked[7..].iter().map(|r| r.strategy).collect();
            assert!(
                last.iter().all(|s| lacking.contains(s)),
                "{reason:?}: {last:?}"
            );
            assert!(
                ranked[7]
                    .reasons
                    .iter()
                    .any(|r| r.contains("never recommended"))
            );
        }
    }

    #[test]
    fn behaviour_adjusts_the_order() {
        let plain = RankingInput {
            reason: Some(ReasonCode::Other),
            ..Default::default()
        };
        let busy = RankingInput {
            behaviour: Some(Behaviour {
                events_30d: 30,
                distinct_features_30d: 1,
                support_tickets_30d: 2,
                days_since_last_event: Some(1),
            }),
            ..plain.clone()
        };
        let position = |input: &RankingInput, s: Strategy| {
            rank(input).iter().position(|r| r.strategy == s).unwrap()
        };
        assert!(position(&busy, Strategy::PainPointFix) < position(&plain, Strategy::PainPointFix));
        assert!(
            position(&busy, Strategy::UnusedFeature) < position(&plain, Strategy::UnusedFeature)
        );
    }
}
