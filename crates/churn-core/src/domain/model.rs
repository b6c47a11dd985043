//! The learned churn-risk model (decisions §9), pure: which features a project's model weighs,
//! the deterministic held-out fifth, the logistic-regression fit (linfa-logistic, pure Rust),
//! the mapping of its coefficients to score points, and the AUC that judges it.
//! `docs/risk.md` §8 explains the model to readers.

use std::cmp::Ordering;

use linfa::Dataset;
use linfa::traits::Fit;
use linfa_logistic::LogisticRegression;
use ndarray::{Array1, Array2};
use sha2::{Digest, Sha256};

use super::risk::{Aggregates, DEFAULT_WEIGHTS, Feature, Model, ModelKind, SIGNAL_EVENTS};

/// Labelled customers of each class a fit needs.
pub const MIN_PER_CLASS: usize = 30;
/// Occurrences (over the scoring lookback, project-wide) that make a custom event a feature.
pub const MIN_EVENT_OCCURRENCES: i64 = 50;
/// At most this many custom events become features (the most frequent), so one project's
/// thousands of event names cannot blow up the fit.
pub const MAX_EVENT_FEATURES: usize = 30;
/// Score points per unit of log-odds: the slope of 100 × the logistic function at its middle,
/// so a score near 50 moves as 100 × the churn probability does.
pub const POINTS_PER_LOGIT: f64 = 25.0;
/// The score of even odds: a logit of 0 maps here.
pub const EVEN_ODDS_SCORE: f64 = 50.0;
/// L2 penalty of the fit (linfa's `alpha`, on the summed loss): keeps weights finite when a
/// feature separates the classes perfectly, and small when few customers back them.
pub const L2_ALPHA: f64 = 1.0;
/// One customer in this many is held out of the fit to measure it.
const HOLD_OUT_EVERY: usize = 5;
/// A refit learns from at most about this many customers: past it, a stable sample
/// ([`in_sample`]), so a project's size never sets the memory a refit holds.
pub const MAX_EXAMPLES: usize = 50_000;
const MAX_ITERATIONS: u64 = 500;

/// The features of a project's model: the 18 signals in the table's order, then the custom
/// events seen at least [`MIN_EVENT_OCCURRENCES`] times (at most [`MAX_EVENT_FEATURES`], most
/// frequent first, then by name), ordered by name. `event_totals` is (event name, occurrences).
pub fn features(event_totals: &[(String, i64)]) -> Vec<Feature> {
    let mut events: Vec<&(String, i64)> = event_totals
        .iter()
        .filter(|(name, n)| *n >= MIN_EVENT_OCCURRENCES && !SIGNAL_EVENTS.contains(&name.as_str()))
        .collect();
    events.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    events.truncate(MAX_EVENT_FEATURES);
    let mut names: Vec<&String> = events.into_iter().map(|(name, _)| name).collect();
    names.sort();
    DEFAULT_WEIGHTS
        .iter()
        .map(|(s, _)| Feature::Signal(*s))
        .chain(names.into_iter().map(|n| Feature::Event(n.clone())))
        .collect()
}

/// A customer's feature strengths (0 when absent), in the order of `features`.
pub fn vector(features: &[Feature], a: &Aggregates) -> Vec<f64> {
    features
        .iter()
        .map(|f| f.strength(a).unwrap_or(0.0))
        .collect()
}

/// One labelled customer.
#[derive(Debug, Clone, PartialEq)]
pub struct Example {
    pub email: String,
    /// The customer has a churn event.
    pub churned: bool,
    /// Feature strengths, in the order of the model's features.
    pub x: Vec<f64>,
}

/// Whether each example is held out: within each class, customers ordered by a SHA-256 of their
/// email, every fifth from the first. Deterministic, and both classes are always represented.
pub fn held_out(examples: &[Example]) -> Vec<bool> {
    let mut out = vec![false; examples.len()];
    for class in [true, false] {
        let mut members: Vec<(Vec<u8>, &str, usize)> = examples
            .iter()
            .enumerate()
            .filter(|(_, e)| e.churned == class)
            .map(|(i, e)| {
                (
                    Sha256::digest(e.email.as_bytes()).to_vec(),
                    e.email.as_str(),
                    i,
                )
            })
            .collect();
        members.sort();
        for (rank, (_, _, i)) in members.into_iter().enumerate() {
            out[i] = rank % HOLD_OUT_EVERY == 0;
        }
    }
    out
}

/// Area under the ROC curve of `(score, churned)` pairs: the chance that a churned customer
/// scores above one who did not, ties counting half. `None` without both classes.
pub fn auc(scored: &[(f64, bool)]) -> Option<f64> {
    let positives = scored.iter().filter(|(_, y)| *y).count();
    let negatives = scored.len() - positives;
    if positives == 0 || negatives == 0 {
        return None;
    }
    let mut sorted: Vec<(f64, bool)> = scored.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    // Mann–Whitney: the sum of the positives' ranks, tied scores sharing their mean rank.
    let mut rank_sum = 0.0;
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j < sorted.len() && sorted[j].0.total_cmp(&sorted[i].0) == Ordering::Equal {
            j += 1;
        }
        let mean_rank = (i + 1 + j) as f64 / 2.0;
        rank_sum += mean_rank * sorted[i..j].iter().filter(|(_, y)| *y).count() as f64;
        i = j;
    }
    let p = positives as f64;
    Some((rank_sum - p * (p + 1.0) / 2.0) / (p * negatives as f64))
}

/// The raw (unclamped) score of a feature vector under `base` and per-feature `points`, as
/// `Model::raw_score` computes it from aggregates: each contribution rounded on its own.
fn raw_score(base: i64, points: &[i64], x: &[f64]) -> f64 {
    let sum: i64 = points
        .iter()
        .zip(x)
        .map(|(w, s)| (*w as f64 * s).round() as i64)
        .sum();
    (base + sum) as f64
}

/// A fitted model and how it was judged.
#[derive(Debug, Clone, PartialEq)]
pub struct Trained {
    pub model: Model,
    /// AUC of the learned model's raw scores on the held-out fifth.
    pub auc: f64,
    /// AUC of the default model on the same customers, for comparison.
    pub default_auc: f64,
    /// Labelled customers used, the held-out fifth included.
    pub customers: usize,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NotTrained {
    #[error("fewer than {MIN_PER_CLASS} labelled customers in a class")]
    TooFewLabels,
    #[error("logistic regression failed: {0}")]
    Fit(String),
}

/// Whether a customer is among those a refit learns from when `labelled` customers qualify:
/// all of them up to [`MAX_EXAMPLES`], else each with probability `MAX_EXAMPLES / labelled`,
/// drawn from a hash of the email (so a run keeps the same customers, and the share of
/// churned ones stays what it is).
pub fn in_sample(email: &str, labelled: usize) -> bool {
    if labelled <= MAX_EXAMPLES {
        return true;
    }
    let digest = Sha256::digest([b"refit sample\0".as_slice(), email.as_bytes()].concat());
    let draw = u64::from_be_bytes(digest[..8].try_into().expect("eight bytes"));
    // draw / 2^64 < MAX_EXAMPLES / labelled, in integers.
    u128::from(draw) * (labelled as u128) < (MAX_EXAMPLES as u128) << 64
}

/// Fits a model to `examples` (their `x` in the order of `features`) on four fifths and
/// measures it on the held-out fifth. Coefficients become score points:
/// weight = round([`POINTS_PER_LOGIT`] × coefficient), base = round([`EVEN_ODDS_SCORE`] +
/// [`POINTS_PER_LOGIT`] × intercept).
pub fn train(features: Vec<Feature>, examples: &[Example]) -> Result<Trained, NotTrained> {
    let churned = examples.iter().filter(|e| e.churned).count();
    if churned < MIN_PER_CLASS || examples.len() - churned < MIN_PER_CLASS {
        return Err(NotTrained::TooFewLabels);
    }
    let held = held_out(examples);
    let (train, test): (Vec<_>, Vec<_>) = examples.iter().zip(&held).partition(|(_, h)| !**h);
    let x = Array2::from_shape_fn((train.len(), features.len()), |(i, j)| train[i].0.x[j]);
    let y: Array1<bool> = train.iter().map(|(e, _)| e.churned).collect();
    let fitted = LogisticRegression::default()
        .alpha(L2_ALPHA)
        .max_iterations(MAX_ITERATIONS)
        .fit(&Dataset::new(x, y))
        .map_err(|e| NotTrained::Fit(e.to_string()))?;
    // linfa's positive class is the larger one: turn its coefficients towards "churned".
    let sign = if fitted.labels().pos.class { 1.0 } else { -1.0 };
    let points: Vec<i64> = fitted
        .params()
        .iter()
        .map(|c| (POINTS_PER_LOGIT * sign * c).round() as i64)
        .collect();
    let base = (EVEN_ODDS_SCORE + POINTS_PER_LOGIT * sign * fitted.intercept()).round() as i64;
    if !fitted.intercept().is_finite() || fitted.params().iter().any(|c| !c.is_finite()) {
        return Err(NotTrained::Fit("coefficients are not finite".into()));
    }
    let default_points: Vec<i64> = features
        .iter()
        .map(|f| match f {
            Feature::Signal(s) => DEFAULT_WEIGHTS
                .iter()
                .find(|(d, _)| d == s)
                .map_or(0, |(_, w)| *w),
            Feature::Event(_) => 0,
        })
        .collect();
    let default_base = Model::default_model().base;
    let judge = |base, points: &[i64]| {
        let scored: Vec<(f64, bool)> = test
            .iter()
            .map(|(e, _)| (raw_score(base, points, &e.x), e.churned))
            .collect();
        auc(&scored).unwrap_or(0.5)
    };
    Ok(Trained {
        auc: judge(base, &points),
        default_auc: judge(default_base, &default_points),
        customers: examples.len(),
        model: Model {
            kind: ModelKind::Learned,
            base,
            weights: features.into_iter().zip(points).collect(),
        },
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::domain::risk::tests::with;
    use crate::domain::risk::{Assessment, Signal};

    /// A customer tracked for 60 days, active today.
    fn customer(events: &[(&str, i64)]) -> Aggregates {
        [("page_viewed", 0)].iter().chain(events).fold(
            crate::domain::risk::tests::customer(),
            |a, &(event, days_ago)| with(a, event, days_ago, 1),
        )
    }

    #[test]
    fn features_are_the_signals_then_frequent_custom_events() {
        let totals = [
            ("login".to_owned(), 500),
            ("export_failed".to_owned(), 50),
            ("report_shared".to_owned(), 49),
            ("a_custom".to_owned(), 70),
        ];
        let names: Vec<String> = features(&totals).iter().map(Feature::name).collect();
        assert_eq!(names.len(), 20);
        assert_eq!(names[0], "no_events_14d");
        assert_eq!(names[18..], ["event:a_custom", "event:export_failed"]);
        let many: Vec<(String, i64)> = (0..40).map(|i| (format!("e{i:02}"), 100 + i)).collect();
        let kept = features(&many);
        assert_eq!(kept.len(), 18 + MAX_EVENT_FEATURES);
        assert_eq!(kept[18].name(), "event:e10", "the 30 most frequent");
    }

    #[test]
    fn auc_counts_pairs_and_halves_ties() {
        let perfect = [(1.0, false), (2.0, false), (3.0, true), (4.0, true)];
        assert_eq!(auc(&perfect), Some(1.0));
        let reversed = [(1.0, true), (2.0, false)];
        assert_eq!(auc(&reversed), Some(0.0));
        let tied = [(1.0, true), (1.0, false)];
        assert_eq!(auc(&tied), Some(0.5));
        // Pairs (p, n): (3 > 1) (3 > 2) (2 = 2: ½) (2 > 1) → 3.5 of 4.
        let mixed = [(1.0, false), (2.0, false), (2.0, true), (3.0, true)];
        assert_eq!(auc(&mixed), Some(0.875));
        assert_eq!(auc(&[(1.0, true)]), None);
    }

    /// Customer `i`, `c{i}@shop.io`.
    fn example(i: usize, churned: bool, x: Vec<f64>) -> Example {
        Example {
            email: format!("c{i}@shop.io"),
            churned,
            x,
        }
    }

    #[test]
    fn the_held_out_fifth_is_stratified_and_deterministic() {
        let examples: Vec<Example> = (0..100).map(|i| example(i, i % 3 == 0, vec![])).collect();
        let held = held_out(&examples);
        let count = |class| {
            examples
                .iter()
                .zip(&held)
                .filter(|(e, h)| e.churned == class && **h)
                .count()
        };
        assert_eq!(count(true), 7, "34 churned: ranks 0, 5, …, 30");
        assert_eq!(count(false), 14, "66 others");
        let mut reversed = examples.clone();
        reversed.reverse();
        let mut again = held_out(&reversed);
        again.reverse();
        assert_eq!(held, again, "the input order does not matter");
    }

    #[test]
    fn too_few_labels_fit_nothing() {
        let examples: Vec<Example> = (0..29)
            .map(|i| example(i, true, vec![0.0; 18]))
            .chain((29..200).map(|i| example(i, false, vec![0.0; 18])))
            .collect();
        assert_eq!(
            train(features(&[]), &examples),
            Err(NotTrained::TooFewLabels)
        );
    }

    /// 240 customers, 80 churned. Churned customers mostly tracked `export_failed`; the default
    /// signals are spread almost evenly over both classes (cancel-page views a little more
    /// among the churned).
    fn synthetic() -> (Vec<Feature>, Vec<Aggregates>, Vec<Example>) {
        let mut customers = Vec::new();
        for i in 0..240usize {
            let churned = i % 3 == 0;
            let mut events: Vec<(&str, i64)> = Vec::new();
            // 85 % of the churned, 10 % of the others.
            let failed = if churned {
                i % 20 != 3 && i % 20 != 9 && i % 20 != 15
            } else {
                i % 10 == 1
            };
            if failed {
                events.push(("export_failed", 3));
                events.push(("export_failed", 5));
            }
            if i % 4 == 1 || (churned && i % 5 == 0) {
                events.push(("cancel_page_viewed", 2));
            }
            if i % 6 == 2 || i % 6 == 3 {
                events.push(("subscription_upgraded", 10));
            }
            let mut a = customer(&events);
            if i % 7 < 2 {
                a.nps = Some(3);
            }
            customers.push((format!("c{i:03}@shop.io"), churned, a));
        }
        let mut totals: BTreeMap<String, i64> = BTreeMap::new();
        for (_, _, a) in &customers {
            for ((_, event, _), n) in &a.daily {
                *totals.entry(event.clone()).or_default() += n;
            }
        }
        let totals: Vec<(String, i64)> = totals.into_iter().collect();
        let features = features(&totals);
        let examples = customers
            .iter()
            .map(|(email, churned, a)| Example {
                email: email.clone(),
                churned: *churned,
                x: vector(&features, a),
            })
            .collect();
        let aggregates = customers.into_iter().map(|(_, _, a)| a).collect();
        (features, aggregates, examples)
    }

    #[test]
    fn the_learned_model_finds_a_custom_event_that_predicts_churn() {
        let (features, aggregates, examples) = synthetic();
        assert!(features.contains(&Feature::Event("export_failed".into())));
        let trained = train(features, &examples).unwrap();
        assert_eq!(trained.customers, 240);
        assert_eq!(trained.model.kind, ModelKind::Learned);
        let strongest = trained
            .model
            .weights
            .iter()
            .max_by_key(|(_, w)| *w)
            .unwrap();
        assert_eq!(strongest.0.name(), "event:export_failed");
        assert!(strongest.1 > 0);

        // Its AUC on the held-out fifth, recomputed from the customers' aggregates through
        // the scoring path, beats the default model's on the same customers.
        let held = held_out(&examples);
        let judge = |model: &Model| {
            let scored: Vec<(f64, bool)> = aggregates
                .iter()
                .zip(&examples)
                .zip(&held)
                .filter(|(_, h)| **h)
                .map(|((a, e), _)| (model.raw_score(a) as f64, e.churned))
                .collect();
            auc(&scored).unwrap()
        };
        let learned = judge(&trained.model);
        let default = judge(&Model::default_model());
        assert_eq!(learned, trained.auc);
        assert_eq!(default, trained.default_auc);
        println!("held-out AUC: learned {learned:.3}, default {default:.3}");
        assert!(learned > 0.85, "learned AUC {learned}");
        assert!(
            learned > default + 0.2,
            "learned {learned} vs default {default}"
        );

        // Scores stay 0–100 with their levels, explained by the event's points.
        let churner = &aggregates[0];
        let Assessment::Scored { score, signals, .. } = trained.model.assess(churner) else {
            panic!("scored");
        };
        assert!((0..=100).contains(&score));
        assert_eq!(signals[0].name, "event:export_failed");
        assert_eq!(
            trained.model.assess(churner),
            trained.model.assess(churner),
            "deterministic"
        );
    }

    #[test]
    fn fitting_is_deterministic() {
        let (features, _, examples) = synthetic();
        assert_eq!(
            train(features.clone(), &examples).unwrap(),
            train(features, &examples).unwrap()
        );
    }

    #[test]
    fn coefficients_map_to_points_around_even_odds() {
        // A feature present in every churned customer and no other: a large positive weight;
        // with the classes balanced and the feature absent, the base sits below 50.
        let examples: Vec<Example> = (0..80)
            .map(|i| example(i, i % 2 == 0, vec![if i % 2 == 0 { 1.0 } else { 0.0 }]))
            .collect();
        let trained = train(vec![Feature::Signal(Signal::NpsDetractor)], &examples).unwrap();
        let (_, w) = trained.model.weights[0];
        assert!(w > 50, "weight {w}");
        assert!(trained.model.base < 50);
        assert!(trained.model.base + w > 50);
        assert_eq!(trained.auc, 1.0);
    }

    #[test]
    fn a_large_project_refits_on_a_stable_sample_of_bounded_size() {
        let emails: Vec<String> = (0..200_000).map(|i| format!("c{i}@example.com")).collect();
        assert!(emails[..1000].iter().all(|e| in_sample(e, MAX_EXAMPLES)));
        let kept = emails.iter().filter(|e| in_sample(e, emails.len())).count();
        // Expected 50,000; the binomial spread is about ±200.
        assert!((49_000..=51_000).contains(&kept), "{kept}");
        let again = emails.iter().filter(|e| in_sample(e, emails.len())).count();
        assert_eq!(kept, again, "the same customers every run");
    }
}
