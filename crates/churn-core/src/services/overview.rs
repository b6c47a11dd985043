//! The dashboard's overview of a project (decisions §17): the headline figures of a period
//! beside the period before it, their monthly trend, reasons, strategy performance, what needs
//! someone's attention ranked by money at stake, and the set-up checklist an empty project
//! shows instead. Read permission, like every statistic.

use super::Local;
use super::access::ProjectAccess;
use crate::domain::analytics::{self, Month, recovery_rate};
use crate::domain::role::Permission;
use crate::error::{Error, Result};
use crate::store::{analytics as monthly, email_settings, overview as store, providers};
use crate::time::Timestamp;

/// The periods the overview offers, in days.
pub const PERIODS: [i64; 3] = [7, 30, 90];

/// The headline figures of one period.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PeriodFigures {
    pub recovered_mrr_cents: i64,
    pub recovered: i64,
    pub lost: i64,
    /// recovered / (recovered + lost) × 100 over events resolved in the period.
    pub recovery_rate: f64,
    /// Churn events open at the period's end.
    pub open_events: i64,
    /// Customers at high or critical risk at the period's end, and their known MRR.
    pub customers_at_risk: i64,
    pub mrr_at_risk_cents: i64,
    /// Payment failures recovered / (recovered + abandoned) × 100 within the period.
    pub dunning_recovery_rate: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ReasonRow {
    pub reason: String,
    pub events: i64,
    pub mrr_cents: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StrategyRow {
    pub strategy: String,
    pub sends: i64,
    pub recovered: i64,
    pub recovery_rate: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Overview {
    pub days: i64,
    pub current: PeriodFigures,
    pub previous: PeriodFigures,
    /// Events created in the period, by reason, most events first.
    pub reasons: Vec<ReasonRow>,
    /// Emails sent in the period, by strategy, most sends first; recovered: sends whose
    /// event is recovered.
    pub strategies: Vec<StrategyRow>,
}

/// Months of a [`Trend`], ending with the current one.
pub const TREND_MONTHS: i32 = 6;

/// The tiles' figures month by month, oldest first, from kept aggregates: the monthly churn
/// cohorts (by the month an event was created, as cohorts and forecasts count), payment
/// failures by the month they were created, and the risk scores of each month's last day.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trend {
    /// `YYYY-MM`.
    pub months: Vec<String>,
    pub recovered_mrr_cents: Vec<i64>,
    pub recovery_rate: Vec<f64>,
    /// Events created in the month and still open.
    pub open_events: Vec<i64>,
    pub mrr_at_risk_cents: Vec<i64>,
    pub dunning_recovery_rate: Vec<f64>,
}

/// What needs someone, and where it is fixed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// A risk alert none of whose delivery attempts succeeded.
    FailedAlert { alert_id: String, customer: String },
    /// A failing payment whose next soft decline abandons it.
    LastRetry {
        failure_id: String,
        customer: String,
    },
    /// A customer at critical risk with no alert since that score.
    UnalertedCritical { customer: String },
    /// An open event autopilot is to email whose drafts with warnings it will skip.
    BlockedDraft { event_id: String, customer: String },
    /// The sender domain is set but not verified: emails go from the default sender.
    UnverifiedSender { domain: String },
}

/// One row of "Needs you": the need and the money at stake (cents, in `currency`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeedRow {
    pub need: Need,
    pub cents: i64,
    pub currency: String,
}

/// The steps of setting a project up, each done or not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Checklist {
    /// Any churn event or tracked event: the overview has something to show.
    pub has_data: bool,
    pub provider_connected: bool,
    pub widget_seen: bool,
    pub tracking: bool,
    pub sender_verified: bool,
    pub autopilot_on: bool,
}

impl Local {
    pub async fn overview(&self, access: &ProjectAccess, days: i64) -> Result<Overview> {
        access.authorize(Permission::Read)?;
        if !PERIODS.contains(&days) {
            return Err(Error::invalid_field("period", "must be 7, 30 or 90"));
        }
        // Whole UTC days, today's so far included (what is kept by day answers them whole);
        // the period ends just after now, so that what happened this millisecond counts.
        let now = self.now() + chrono::Duration::milliseconds(1);
        let span = chrono::Duration::days(days);
        let start = midnight(self.now()) - chrono::Duration::days(days - 1);
        let (current, previous) = futures::try_join!(
            self.period(access, start, now),
            self.period(access, start - span, start)
        )?;
        let db = self.store.reader();
        let id = &access.project.id;
        let (first_day, last_day) = (day_of(start), day_of(self.now()));
        let (reasons, strategies) = futures::try_join!(
            store::reasons(db, id, &first_day, &last_day),
            store::strategies(db, id, &first_day, &last_day)
        )?;
        let mut reasons: Vec<ReasonRow> = reasons
            .into_iter()
            .map(|(reason, events, mrr_cents)| ReasonRow {
                reason,
                events,
                mrr_cents,
            })
            .collect();
        reasons.sort_by(|a, b| b.events.cmp(&a.events).then(a.reason.cmp(&b.reason)));
        let mut strategies: Vec<StrategyRow> = strategies
            .into_iter()
            .map(|(strategy, sends, recovered)| StrategyRow {
                recovery_rate: percent(recovered, sends),
                strategy,
                sends,
                recovered,
            })
            .collect();
        strategies.sort_by(|a, b| b.sends.cmp(&a.sends).then(a.strategy.cmp(&b.strategy)));
        Ok(Overview {
            days,
            current,
            previous,
            reasons,
            strategies,
        })
    }

    async fn period(
        &self,
        access: &ProjectAccess,
        from: Timestamp,
        to: Timestamp,
    ) -> Result<PeriodFigures> {
        let db = self.store.reader();
        let id = &access.project.id;
        // The days of `[from, to)`: churn events and risk scores are kept per day.
        let (first_day, day) = (day_of(from), day_of(to - chrono::Duration::milliseconds(1)));
        let (events, (paid, abandoned), (customers_at_risk, mrr_at_risk_cents)) = futures::try_join!(
            store::events(db, id, &first_day, &day),
            store::dunning(db, id, from, to),
            self.at_risk_on(id, &day)
        )?;
        Ok(PeriodFigures {
            recovered_mrr_cents: events.recovered_mrr_cents,
            recovered: events.recovered,
            lost: events.lost,
            recovery_rate: recovery_rate(events.recovered as u64, events.lost as u64),
            open_events: events.open_at_end,
            customers_at_risk,
            mrr_at_risk_cents,
            dunning_recovery_rate: percent(paid, paid + abandoned),
        })
    }

    /// The last [`TREND_MONTHS`] months of the tiles' figures. A few rows per month of the
    /// aggregates, whatever the number of events; one at-risk read per month.
    pub async fn trend(&self, access: &ProjectAccess) -> Result<Trend> {
        access.authorize(Permission::Read)?;
        let db = self.store.reader();
        let id = &access.project.id;
        let current = Month::of(self.now());
        let first = current.plus(1 - TREND_MONTHS);
        let months: Vec<Month> = first.through(current).collect();
        // The last day of each month, today for the current one.
        let today = day_of(self.now());
        let days: Vec<String> = months
            .iter()
            .map(|m| {
                if *m == current {
                    today.clone()
                } else {
                    m.last_day()
                }
            })
            .collect();
        let first_month = first.to_string();
        let (counts, dunning, at_risk) = futures::try_join!(
            monthly::monthly(db, id, first, current),
            store::dunning_by_month(db, id, &first_month),
            futures::future::try_join_all(days.iter().map(|day| self.at_risk_on(id, day)))
        )?;
        // Newest first, as cohorts answer.
        let mut cohorts = analytics::cohorts(&counts, current, TREND_MONTHS);
        cohorts.reverse();
        let dunning_rate = |month: &str| {
            dunning
                .iter()
                .find(|(m, _, _)| m == month)
                .map(|(_, paid, abandoned)| percent(*paid, paid + abandoned))
                .unwrap_or(0.0)
        };
        Ok(Trend {
            recovered_mrr_cents: cohorts.iter().map(|c| c.recovered_mrr_cents).collect(),
            recovery_rate: cohorts.iter().map(|c| c.recovery_rate).collect(),
            open_events: cohorts.iter().map(|c| c.processing as i64).collect(),
            mrr_at_risk_cents: at_risk.iter().map(|(_, mrr)| *mrr).collect(),
            dunning_recovery_rate: cohorts.iter().map(|c| dunning_rate(&c.cohort)).collect(),
            months: cohorts.into_iter().map(|c| c.cohort).collect(),
        })
    }

    /// Customers at high or critical risk on `day` and their known MRR: the figure kept for
    /// the latest day with scores on or before it, filled once from the scores when no run
    /// kept it (days scored before the figures were kept, or a run still going).
    async fn at_risk_on(&self, project_id: &str, day: &str) -> Result<(i64, i64)> {
        let db = self.store.reader();
        let (scored, kept) = futures::try_join!(
            store::latest_score_day(db, project_id, day),
            store::kept_at_risk(db, project_id, day)
        )?;
        match (scored, kept) {
            // Kept for the latest scores, or for days whose scores were since purged.
            (scored, Some((kept_day, customers, mrr)))
                if scored.as_ref().is_none_or(|s| *s <= kept_day) =>
            {
                Ok((customers, mrr))
            }
            (Some(scored), _) => {
                let figure = store::at_risk(db, project_id, &scored).await?;
                store::keep_at_risk(self.store.writer(), project_id, &scored, figure, false)
                    .await?;
                Ok(figure)
            }
            (None, _) => Ok((0, 0)),
        }
    }

    /// Keeps today's at-risk figure when a scoring run of the project ends.
    pub(super) async fn keep_todays_risk(&self, project_id: &str) -> Result<()> {
        let day = day_of(self.now());
        let figure = store::at_risk(self.store.reader(), project_id, &day).await?;
        store::keep_at_risk(self.store.writer(), project_id, &day, figure, true).await
    }

    /// What needs someone now, most money at stake first: failed alert deliveries, payments
    /// one decline from abandonment, critical-risk customers nobody was alerted about, drafts
    /// autopilot will skip for their warnings, and a sender domain set but
    /// not verified (at stake: the MRR of the open events whose emails it would send).
    pub async fn needs_you(&self, access: &ProjectAccess) -> Result<Vec<NeedRow>> {
        access.authorize(Permission::Read)?;
        let db = self.store.reader();
        let id = &access.project.id;
        let current = Month::of(self.now());
        let (alerts, retries, critical, drafts, sender, currency) = futures::try_join!(
            store::failed_alerts(db, id),
            store::last_retries(db, id),
            store::unalerted_critical(db, id),
            store::blocked_drafts(db, id),
            email_settings::get(db, id),
            monthly::latest_currency(db, id)
        )?;
        let currency = currency.unwrap_or_else(|| "usd".to_owned());
        let row = |need, cents| NeedRow {
            need,
            cents,
            currency: currency.clone(),
        };
        let mut rows: Vec<NeedRow> = Vec::new();
        rows.extend(
            alerts.into_iter().map(|(alert_id, customer, mrr)| {
                row(Need::FailedAlert { alert_id, customer }, mrr)
            }),
        );
        rows.extend(
            retries
                .into_iter()
                .map(|(failure_id, customer, amount, currency)| NeedRow {
                    need: Need::LastRetry {
                        failure_id,
                        customer,
                    },
                    cents: amount,
                    currency,
                }),
        );
        rows.extend(
            critical
                .into_iter()
                .map(|(customer, mrr)| row(Need::UnalertedCritical { customer }, mrr)),
        );
        rows.extend(
            drafts.into_iter().map(|(event_id, customer, mrr)| {
                row(Need::BlockedDraft { event_id, customer }, mrr)
            }),
        );
        if let Some(domain) = sender
            .filter(|s| s.verified_at.is_none())
            .and_then(|s| s.from_email)
            .and_then(|e| e.split_once('@').map(|(_, d)| d.to_owned()))
        {
            let first = monthly::first_month(db, id).await?.unwrap_or(current);
            let open: i64 = monthly::monthly(db, id, first, current)
                .await?
                .iter()
                .filter(|c| !c.status.is_terminal())
                .map(|c| c.mrr)
                .sum();
            rows.push(row(Need::UnverifiedSender { domain }, open));
        }
        rows.sort_by_key(|r| std::cmp::Reverse(r.cents));
        Ok(rows)
    }

    /// What of the set-up is done. Read permission: a viewer sees the steps too.
    pub async fn checklist(&self, access: &ProjectAccess) -> Result<Checklist> {
        access.authorize(Permission::Read)?;
        let db = self.store.reader();
        let id = &access.project.id;
        let (has_data, (tracking, widget_seen), connections, sender) = futures::try_join!(
            store::has_data(db, id),
            store::setup_facts(db, id),
            providers::list(db, id),
            email_settings::get(db, id)
        )?;
        Ok(Checklist {
            has_data,
            provider_connected: !connections.is_empty(),
            widget_seen,
            tracking,
            sender_verified: sender.is_some_and(|s| s.verified_at.is_some()),
            autopilot_on: access.project.settings.autopilot.enabled,
        })
    }
}

/// `at`'s UTC day, `YYYY-MM-DD`.
fn day_of(at: Timestamp) -> String {
    at.format("%Y-%m-%d").to_string()
}

/// The start of `at`'s UTC day.
fn midnight(at: Timestamp) -> Timestamp {
    at.date_naive().and_time(chrono::NaiveTime::MIN).and_utc()
}

/// part / whole × 100, to two decimals; 0 when the whole is.
fn percent(part: i64, whole: i64) -> f64 {
    if whole <= 0 {
        return 0.0;
    }
    (part as f64 * 10_000.0 / whole as f64).round() / 100.0
}
