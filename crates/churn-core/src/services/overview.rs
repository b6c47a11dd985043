//! The dashboard's overview of a project (decisions §17): the headline figures of a period
//! beside the period before it, reasons, strategy performance, and the set-up checklist an
//! empty project shows instead. Read permission, like every statistic.

use super::Core;
use super::access::ProjectAccess;
use crate::domain::analytics::recovery_rate;
use crate::domain::role::Permission;
use crate::error::{Error, Result};
use crate::store::{email_settings, overview as store, providers};
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
    /// Emails sent in the period, by strategy, most sends first.
    pub strategies: Vec<StrategyRow>,
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

impl Core {
    pub async fn overview(&self, access: &ProjectAccess, days: i64) -> Result<Overview> {
        access.authorize(Permission::Read)?;
        if !PERIODS.contains(&days) {
            return Err(Error::invalid_field("period", "must be 7, 30 or 90"));
        }
        // Periods end just after now, so that what happened this millisecond counts.
        let now = self.now() + chrono::Duration::milliseconds(1);
        let span = chrono::Duration::days(days);
        let start = now - span;
        let (current, previous) = futures::try_join!(
            self.period(access, start, now),
            self.period(access, start - span, start)
        )?;
        let db = self.store.reader();
        let id = &access.project.id;
        let (reasons, strategies) = futures::try_join!(
            store::reasons(db, id, start, now),
            store::strategies(db, id, start, now)
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
        // The last day of `[from, to)`: risk scores are kept per day.
        let day = (to - chrono::Duration::milliseconds(1))
            .format("%Y-%m-%d")
            .to_string();
        let (events, (paid, abandoned), (customers_at_risk, mrr_at_risk_cents)) = futures::try_join!(
            store::events(db, id, from, to),
            store::dunning(db, id, from, to),
            store::at_risk(db, id, &day)
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

/// part / whole × 100, to two decimals; 0 when the whole is.
fn percent(part: i64, whole: i64) -> f64 {
    if whole <= 0 {
        return 0.0;
    }
    (part as f64 * 10_000.0 / whole as f64).round() / 100.0
}
