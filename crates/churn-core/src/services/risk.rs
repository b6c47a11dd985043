//! Churn-risk scoring runs and the score routes (decisions §9). A run reads a slice of
//! customers at a time (their rows, daily rollups and recent session durations), scores each
//! with `domain::risk`, and keeps one score per customer and day for 90 days. Runs come from
//! each project's chain of scheduled jobs and from `recompute`. A run with enough labelled
//! customers first refits the project's learned model (`domain::model`) and scores with it.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};

use chrono::NaiveDate;

use super::Local;
use super::access::ProjectAccess;
use super::behavior::since_day;
use super::paging::Page;
use crate::api::Meta;
use crate::api::risk::{
    FeatureWeight, ModelName, Recomputed, RiskDetail, RiskModel, RiskQuery, RiskScore, ScorePoint,
    SignalWeight,
};
use crate::domain::behavior::day_key;
use crate::domain::email::Email;
use crate::domain::model;
use crate::domain::risk::{
    Aggregates, Assessment, Feature, LOOKBACK_DAYS, Level, MIN_HISTORY_DAYS, Model, ModelKind,
};
use crate::domain::role::Permission;
use crate::domain::validation::{Validator, between};
use crate::error::{Error, Result};
use crate::jobs::kind::Job;
use crate::store::risk::{self, CustomerFacts, ModelRecord, ScoreFilter, ScoreRecord};
use crate::time::{self, Timestamp};

/// Customers scored per read and write transaction; bounds a run's memory.
const SLICE: i64 = 500;
/// Days of daily scores kept (and shown as history).
const KEPT_DAYS: i64 = 90;

fn score_not_found() -> Error {
    Error::NotFound("no churn-risk score for this customer".into())
}

/// Counts other features keep per customer of a slice: (payment-failure records of the last 30
/// days, cancel-flow widget opens of the last 14 days).
async fn outside_counts(
    core: &Local,
    project_id: &str,
    slice: (&str, &str),
    now: Timestamp,
) -> Result<BTreeMap<String, (i64, i64)>> {
    let db = core.store.reader();
    let mut counts: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    let month = now - chrono::Duration::days(30);
    for (email, n) in risk::payment_failures(db, project_id, slice, month).await? {
        counts.entry(email).or_default().0 = n;
    }
    let fortnight = now - chrono::Duration::days(14);
    for (email, n) in
        crate::store::cancel_flows::opens_by_customer(db, project_id, slice, fortnight).await?
    {
        counts.entry(email).or_default().1 = n;
    }
    Ok(counts)
}

/// The scoring runs going on, by project id.
pub(crate) type Runs = Mutex<HashMap<String, Shared<BoxFuture<'static, RunResult>>>>;
type RunResult = std::result::Result<Recomputed, Arc<Error>>;

impl Local {
    /// The scheduled run due at `due`: moves the schedule on and enqueues the next run (once,
    /// however often this one is retried), then scores.
    pub(crate) async fn run_scheduled_scoring(&self, project_id: &str, due: &str) -> Result<()> {
        let due = time::parse(due).ok_or_else(|| Error::internal("corrupt scoring due time"))?;
        let now = self.now();
        let hours = self.risk_config_of(project_id).await?.check_interval_hours;
        let next = now + chrono::Duration::hours(hours);
        let mut tx = self.store.begin().await?;
        if risk::advance_schedule(&mut *tx, project_id, due, next).await? {
            let job = Job::ScoreProject {
                project_id: project_id.to_owned(),
                due: time::format(&next),
            };
            job.enqueue(&mut tx, next, now).await?;
        }
        tx.commit().await?;
        self.score_once(project_id).await?;
        Ok(())
    }

    /// `POST /projects/:slug/churn-risk/recompute`: scores the project now, or waits for the
    /// run going on and answers its result (decisions §20).
    pub async fn recompute_risk(&self, access: &ProjectAccess) -> Result<Recomputed> {
        access.authorize(Permission::Write)?;
        self.score_once(&access.project.id).await
    }

    /// Single flight per project in this process: the first caller starts a run in a task of
    /// its own (so callers going away do not stop it), later callers wait for the same run.
    /// Across processes, see [`Local::score_alone`].
    async fn score_once(&self, project_id: &str) -> Result<Recomputed> {
        let flight = {
            let mut runs = self.scoring.lock().unwrap_or_else(|e| e.into_inner());
            runs.entry(project_id.to_owned())
                .or_insert_with(|| {
                    let core = self.clone();
                    let id = project_id.to_owned();
                    let run = tokio::spawn(async move {
                        let result = core.score_alone(&id).await.map_err(Arc::new);
                        core.scoring
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .remove(&id);
                        result
                    });
                    async move {
                        run.await
                            .unwrap_or_else(|e| Err(Arc::new(Error::internal(e))))
                    }
                    .boxed()
                    .shared()
                })
                .clone()
        };
        flight.await.map_err(|e| {
            Arc::try_unwrap(e).unwrap_or_else(|shared| Error::internal(shared.to_string()))
        })
    }

    /// One run at a time per project across the processes sharing PostgreSQL, under the
    /// project's run lock; a caller that waited for it while another process's run finished
    /// answers that run's result.
    async fn score_alone(&self, project_id: &str) -> Result<Recomputed> {
        let (before, _) = risk::last_run(self.store.reader(), project_id).await?;
        let Some(held) = risk::lock_runs(&self.store, project_id).await? else {
            return self.score_and_count(project_id).await;
        };
        let (after, last) = risk::last_run(self.store.reader(), project_id).await?;
        let result = if after > before {
            Ok(last)
        } else {
            self.score_and_count(project_id).await
        };
        // Ending the lock's transaction (it wrote nothing) lets the next run in.
        held.rollback().await?;
        result
    }

    async fn score_and_count(&self, project_id: &str) -> Result<Recomputed> {
        let result = self.score_project(project_id).await?;
        self.keep_todays_risk(project_id).await?;
        risk::record_run(self.store.writer(), project_id, &result).await?;
        Ok(result)
    }

    /// Scores every customer with a tracked event in the last 90 days and raises the alerts;
    /// says how many got a score (not those with insufficient data) and how many alerts the run
    /// logged. With enough labelled customers the run first refits the learned model and
    /// scores with it.
    pub async fn score_project(&self, project_id: &str) -> Result<Recomputed> {
        let now = self.now();
        let config = self.risk_config_of(project_id).await?;
        let model = self.scoring_model(project_id, now).await?;
        let today = day_key(now.date_naive());
        let mut after = String::new();
        let mut scored = 0;
        let mut alerts = 0;
        while let Some((facts, mut inputs)) = self.read_slice(project_id, &after, now).await? {
            let mut tx = self.store.begin().await?;
            risk::lock_scoring(&mut tx, project_id).await?;
            let mut records = Vec::with_capacity(facts.len());
            for f in &facts {
                let assessment = model.assess(&inputs.aggregates(f, now));
                let record = score_record(f, assessment, model.kind, &today, now)?;
                scored += u64::from(record.score.is_some());
                records.push(record);
            }
            risk::save_scores(&mut tx, project_id, &records).await?;
            for record in &records {
                alerts += u64::from(
                    self.raise_alert(&mut tx, project_id, &config, record, now)
                        .await?,
                );
            }
            tx.commit().await?;
            after = facts.last().map(|f| f.email.clone()).unwrap_or_default();
        }
        let mut tx = self.store.begin().await?;
        risk::lock_scoring(&mut tx, project_id).await?;
        risk::purge_scores(&mut *tx, project_id, &since_day(now, KEPT_DAYS)).await?;
        tx.commit().await?;
        Ok(Recomputed { scored, alerts })
    }

    /// The next slice of customers to score after `after` (by email), with what scoring reads
    /// of them; `None` when none is left.
    async fn read_slice(
        &self,
        project_id: &str,
        after: &str,
        now: Timestamp,
    ) -> Result<Option<(Vec<CustomerFacts>, SliceInputs)>> {
        let since = now - chrono::Duration::days(LOOKBACK_DAYS);
        let rollup_since = since_day(now, LOOKBACK_DAYS);
        // The 14 whole days of the session window start at midnight.
        let sessions_since = (now.date_naive() - chrono::Duration::days(13))
            .and_hms_opt(0, 0, 0)
            .map(|t| t.and_utc())
            .unwrap_or(now);
        let db = self.store.reader();
        let facts = risk::customers_to_score(db, project_id, since, after, SLICE).await?;
        let (Some(first), Some(last)) = (facts.first(), facts.last()) else {
            return Ok(None);
        };
        let slice = (first.email.as_str(), last.email.as_str());
        let mut inputs = SliceInputs::default();
        for r in risk::rollups(db, project_id, slice, &rollup_since).await? {
            let day = parse_day(&r.day)?;
            inputs
                .daily
                .entry(r.customer_email)
                .or_default()
                .insert((day, r.event, r.detail), r.n);
        }
        for (email, feature, day) in risk::feature_first_use(db, project_id, slice).await? {
            let day = parse_day(&day)?;
            inputs
                .features
                .entry(email)
                .or_default()
                .insert(feature, day);
        }
        for (email, d) in risk::session_durations(db, project_id, slice, sessions_since).await? {
            inputs.sessions.entry(email).or_default().push(d);
        }
        inputs.outside = outside_counts(self, project_id, slice, now).await?;
        Ok(Some((facts, inputs)))
    }

    /// The model this run scores with: refitted when the project holds enough labelled
    /// customers, else the last learned one, else the default.
    async fn scoring_model(&self, project_id: &str, now: Timestamp) -> Result<Model> {
        let since = now - chrono::Duration::days(LOOKBACK_DAYS);
        let history_from = now - chrono::Duration::days(MIN_HISTORY_DAYS);
        let min = i64::try_from(model::MIN_PER_CLASS).unwrap_or(i64::MAX);
        let (churned, others) =
            risk::label_counts(self.store.reader(), project_id, since, history_from).await?;
        let labelled = usize::try_from(churned.saturating_add(others)).unwrap_or(usize::MAX);
        if churned >= min
            && others >= min
            && let Some(m) = self.refit(project_id, labelled, now).await?
        {
            return Ok(m);
        }
        match risk::model(self.store.reader(), project_id).await? {
            Some(record) => learned_model(&record),
            None => Ok(Model::default_model()),
        }
    }

    /// Fits the project's model to the customers a run scores (those with enough history,
    /// `labelled` of them, sampled past [`model::MAX_EXAMPLES`]), labelled by whether they
    /// have a churn event, and keeps it. `None` when no model could be fitted: the previous
    /// one (or the default) keeps scoring, the next run tries again.
    async fn refit(
        &self,
        project_id: &str,
        labelled: usize,
        now: Timestamp,
    ) -> Result<Option<Model>> {
        let totals = risk::event_totals(
            self.store.reader(),
            project_id,
            &since_day(now, LOOKBACK_DAYS),
        )
        .await?;
        let features = model::features(&totals);
        let mut examples = Vec::new();
        let mut after = String::new();
        while let Some((facts, mut inputs)) = self.read_slice(project_id, &after, now).await? {
            for f in &facts {
                let a = inputs.aggregates(f, now);
                if a.history_days() >= MIN_HISTORY_DAYS && model::in_sample(&f.email, labelled) {
                    examples.push(model::Example {
                        email: f.email.clone(),
                        churned: f.churned,
                        x: model::vector(&features, &a),
                    });
                }
            }
            after = facts.last().map(|f| f.email.clone()).unwrap_or_default();
        }
        let trained = match model::train(features, &examples) {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(project_id, error = %e, "churn-risk model not refitted");
                return Ok(None);
            }
        };
        tracing::info!(
            project_id,
            customers = trained.customers,
            auc = trained.auc,
            default_auc = trained.default_auc,
            "churn-risk model refitted"
        );
        let weights = feature_weights(&trained.model);
        let record = ModelRecord {
            base: trained.model.base,
            weights: serde_json::to_string(&weights).map_err(Error::internal)?,
            trained_at: now,
            customers: i64::try_from(trained.customers).unwrap_or(i64::MAX),
            auc: trained.auc,
        };
        risk::save_model(self.store.writer(), project_id, &record).await?;
        Ok(Some(trained.model))
    }

    /// `GET /projects/:slug/churn-risk/model`.
    pub async fn risk_model(&self, access: &ProjectAccess) -> Result<RiskModel> {
        access.authorize(Permission::Read)?;
        Ok(
            match risk::model(self.store.reader(), &access.project.id).await? {
                Some(record) => RiskModel {
                    model: ModelName::Learned,
                    weights: feature_weights(&learned_model(&record)?),
                    trained_at: Some(record.trained_at),
                    customers: u64::try_from(record.customers).unwrap_or(0),
                    auc: Some(record.auc),
                },
                None => RiskModel {
                    model: ModelName::Default,
                    weights: feature_weights(&Model::default_model()),
                    trained_at: None,
                    customers: 0,
                    auc: None,
                },
            },
        )
    }

    /// `GET /projects/:slug/churn-risk/customers`: highest first, insufficient data last.
    pub async fn list_risk(
        &self,
        access: &ProjectAccess,
        q: RiskQuery,
    ) -> Result<(Vec<RiskScore>, Meta)> {
        access.authorize(Permission::Read)?;
        let mut v = Validator::new();
        let page = Page::check(&mut v, q.page, q.per_page);
        if let Some(level) = &q.level
            && Level::parse(level).is_none()
        {
            v.add("level", "must be one of critical, high, medium, low");
        }
        if let Some(score) = q.min_score {
            v.check("min_score", between(score, 0..=100));
        }
        v.finish()?;
        let filter = ScoreFilter {
            level: q.level,
            min_score: q.min_score,
        };
        let db = self.store.reader();
        let project_id = &access.project.id;
        let total = risk::count_latest(db, project_id, &filter).await?;
        let offset = page.offset();
        let rows = risk::list_latest(db, project_id, &filter, page.per_page, offset).await?;
        let items = rows.into_iter().map(score_view).collect::<Result<_>>()?;
        Ok((items, page.meta(total)))
    }

    /// `GET /projects/:slug/churn-risk/customers/:email`.
    pub async fn customer_risk(&self, access: &ProjectAccess, email: &str) -> Result<RiskDetail> {
        access.authorize(Permission::Read)?;
        let email = Email::parse(email).map_err(|_| score_not_found())?;
        let db = self.store.reader();
        let project_id = &access.project.id;
        let latest = risk::latest(db, project_id, email.as_str())
            .await?
            .ok_or_else(score_not_found)?;
        let since = since_day(self.now(), KEPT_DAYS);
        let history = risk::history(db, project_id, email.as_str(), &since)
            .await?
            .into_iter()
            .map(|(date, score)| ScorePoint { date, score })
            .collect();
        Ok(RiskDetail {
            score: score_view(latest)?,
            history,
        })
    }
}

/// The rollups and counts of one slice of customers, by email.
#[derive(Default)]
struct SliceInputs {
    daily: BTreeMap<String, BTreeMap<(NaiveDate, String, String), i64>>,
    features: BTreeMap<String, BTreeMap<String, NaiveDate>>,
    sessions: BTreeMap<String, Vec<f64>>,
    outside: BTreeMap<String, (i64, i64)>,
}

impl SliceInputs {
    fn aggregates(&mut self, f: &CustomerFacts, now: Timestamp) -> Aggregates {
        let (payment_failures_30d, cancel_flow_opens_14d) =
            self.outside.get(&f.email).copied().unwrap_or_default();
        Aggregates {
            now,
            first_event_at: f.first_event_at,
            daily: self.daily.remove(&f.email).unwrap_or_default(),
            feature_first_used: self.features.remove(&f.email).unwrap_or_default(),
            session_durations_14d: self.sessions.remove(&f.email).unwrap_or_default(),
            nps: f.nps_score,
            card_expires_at: f.card_expires_at,
            payment_failures_30d,
            cancel_flow_opens_14d,
        }
    }
}

fn feature_weights(m: &Model) -> Vec<FeatureWeight> {
    m.weights
        .iter()
        .map(|(f, w)| FeatureWeight {
            feature: f.name(),
            weight: *w,
        })
        .collect()
}

fn learned_model(r: &ModelRecord) -> Result<Model> {
    let corrupt = || Error::internal("corrupt weights of a stored churn-risk model");
    let weights: Vec<FeatureWeight> = serde_json::from_str(&r.weights).map_err(|_| corrupt())?;
    Ok(Model {
        kind: ModelKind::Learned,
        base: r.base,
        weights: weights
            .into_iter()
            .map(|w| Ok((Feature::parse(&w.feature).ok_or_else(corrupt)?, w.weight)))
            .collect::<Result<_>>()?,
    })
}

fn parse_day(raw: &str) -> Result<NaiveDate> {
    NaiveDate::parse_from_str(raw, "%Y-%m-%d")
        .map_err(|_| Error::internal(format!("corrupt rollup day in storage: {raw:?}")))
}

fn score_record(
    f: &CustomerFacts,
    assessment: Assessment,
    kind: ModelKind,
    today: &str,
    now: Timestamp,
) -> Result<ScoreRecord> {
    let (score, level, signals) = match assessment {
        Assessment::InsufficientData => (None, None, Vec::new()),
        Assessment::Scored {
            score,
            level,
            signals,
        } => (Some(score), Some(level.as_str().to_owned()), signals),
    };
    let signals: Vec<SignalWeight> = signals
        .into_iter()
        .map(|c| SignalWeight {
            name: c.name,
            weight: c.weight,
        })
        .collect();
    Ok(ScoreRecord {
        customer_email: f.email.clone(),
        day: today.to_owned(),
        score,
        level,
        signals: serde_json::to_string(&signals).map_err(Error::internal)?,
        model: kind.as_str().to_owned(),
        scored_at: now,
    })
}

fn score_view(r: ScoreRecord) -> Result<RiskScore> {
    Ok(RiskScore {
        insufficient_data: r.score.is_none(),
        signals: serde_json::from_str(&r.signals)
            .map_err(|_| Error::internal("corrupt signals of a stored score"))?,
        customer_email: r.customer_email,
        risk_score: r.score,
        risk_level: r.level,
        scored_at: r.scored_at,
        model: r.model,
    })
}
