//! Generating the nine variants of an event: the status guard, the email context, the
//! generator (all nine concurrently), the ranking, and storing the drafts.
//!
//! Generation is single-flight per event: `processing` is a lease taken with a
//! compare-and-set (`new → processing`, or a `processing` lease older than twice the
//! generator's time limit, left by an interrupted run). A concurrent call answers 409
//! `generation is already in progress` without calling the generator.

use serde_json::json;

use super::Generation;
use super::access::ProjectAccess;
use super::events::{event_not_found, variant_view};
use crate::api::events::Generated;
use crate::domain::lifecycle::{Action, EventStatus, transition};
use crate::domain::provider::Provider;
use crate::domain::ranking::{self, RankingInput};
use crate::domain::role::Permission;
use crate::domain::strategy::{ReasonCode, Strategy};
use crate::error::{Error, Result};
use crate::generation::{EmailContext, promises};
use crate::ids::new_id;
use crate::store::events::{self, EventRecord};
use crate::store::projects::ProjectRecord;
use crate::store::providers;
use crate::store::variants::{self, VariantRecord};

const PAUSE_MONTHS: i64 = 3;

impl Generation {
    pub async fn generate(&self, access: &ProjectAccess, id: &str) -> Result<Generated> {
        self.core.authorize_events(access, Permission::Write)?;
        let event = self.core.load_event(access, id).await?;
        transition(event.status, Action::StartGeneration)
            .map_err(|e| Error::validation(e.to_string()))?;
        let now = self.core.now();
        let lease =
            chrono::Duration::from_std(self.generator.time_limit() * 2).map_err(Error::internal)?;
        if !events::start_generation(
            self.core.store.writer(),
            &access.project.id,
            &event.id,
            now,
            now - lease,
        )
        .await?
        {
            // Another generation holds the lease, or finished meanwhile: judge by what is there now.
            let now_status = events::get(self.core.store.reader(), &access.project.id, id)
                .await?
                .ok_or_else(event_not_found)?
                .status;
            transition(now_status, Action::StartGeneration)
                .map_err(|e| Error::validation(e.to_string()))?;
            return Err(Error::Conflict("generation is already in progress".into()));
        }

        // With Stripe connected, each discount email gets its own code, made there at send.
        let stripe = providers::get(
            self.core.store.reader(),
            &access.project.id,
            Provider::Stripe,
        )
        .await?
        .is_some();
        let ctx = self.email_context(&access.project, &event, stripe);
        let warnings: Vec<Vec<String>> = Strategy::ALL
            .iter()
            .map(|s| promises::warnings(&ctx, *s))
            .collect();
        let drafts = futures::future::join_all(
            Strategy::ALL
                .iter()
                .map(|s| self.generator.generate(&ctx, *s)),
        )
        .await;
        let outcomes = variants::outcomes(self.core.store.reader(), &access.project.id).await?;
        let behaviour = self
            .core
            .behaviour_of(&access.project.id, &event.customer_email)
            .await?;
        let ranked = ranking::rank(&RankingInput {
            reason: ReasonCode::parse(&event.reason_code),
            tenure_days: event.tenure_days,
            mrr_cents: event.mrr,
            payment_failed: event.event_type == "payment_failed",
            behaviour,
            outcomes,
            lacking: Strategy::ALL
                .iter()
                .zip(&warnings)
                .filter(|(_, w)| !w.is_empty())
                .map(|(s, _)| *s)
                .collect(),
        });
        let now = self.core.now();
        let mut records = Vec::with_capacity(Strategy::ALL.len());
        for ((strategy, draft), warnings) in Strategy::ALL.iter().zip(drafts).zip(warnings) {
            let draft = draft
                .map_err(|e| Error::internal(format!("generating {}: {e}", strategy.as_str())))?;
            let rank = ranked
                .iter()
                .find(|r| r.strategy == *strategy)
                .expect("every strategy is ranked");
            let (coupon_code, coupon_percent, offer) = match strategy {
                Strategy::Discount => (ctx.coupon_code.clone(), Some(ctx.discount_percent), None),
                Strategy::DowngradeOffer => (
                    None,
                    None,
                    Some(
                        json!({"kind": "downgrade", "suggested_mrr_cents": event.mrr.map(|m| m / 2)}),
                    ),
                ),
                Strategy::PauseOption => (
                    None,
                    None,
                    Some(json!({"kind": "pause", "max_months": PAUSE_MONTHS})),
                ),
                _ => (None, None, None),
            };
            records.push(VariantRecord {
                id: new_id(),
                churn_event_id: event.id.clone(),
                project_id: access.project.id.clone(),
                strategy: *strategy,
                subject: draft.subject,
                body: draft.html,
                body_text: draft.text,
                status: crate::domain::variant::VariantStatus::Draft,
                claimed_at: None,
                recommended: rank.rank == 1,
                rank: i64::from(rank.rank),
                rank_score: rank.score,
                rank_reasons: rank.reasons.clone(),
                warnings,
                generator: draft.generator.as_str().to_owned(),
                coupon_code,
                coupon_percent,
                offer,
                recipient: None,
                message_id: None,
                sent_at: None,
                opened_at: None,
                clicked_at: None,
                open_count: 0,
                click_count: 0,
                created_at: now,
                updated_at: now,
            });
        }
        records.sort_by_key(|r| r.rank);

        let finished = transition(EventStatus::Processing, Action::FinishGeneration)
            .map_err(|e| Error::validation(e.to_string()))?;
        // Finishing first takes the event's row lock, so of two generations racing here the
        // second waits, then finds the event no longer processing.
        let mut tx = self.core.store.begin().await?;
        if !events::set_status(
            &mut *tx,
            &event.project_id,
            &event.id,
            EventStatus::Processing,
            finished,
            now,
        )
        .await?
        {
            tx.rollback().await?;
            return Err(Error::validation("variants have already been generated"));
        }
        variants::replace_drafts(&mut tx, &event.id, &records).await?;
        tx.commit().await?;
        Ok(Generated {
            event_id: event.id,
            status: finished,
            variants: records.into_iter().map(variant_view).collect(),
        })
    }

    /// What the emails of this event may say, formatted for reading. `stripe`: the discount's
    /// code is made at Stripe when sent, else it is the project's `coupon_code` (if any).
    pub(super) fn email_context(
        &self,
        project: &ProjectRecord,
        event: &EventRecord,
        stripe: bool,
    ) -> EmailContext {
        let settings = &project.settings;
        let first_name = event
            .customer_name
            .as_deref()
            .and_then(|n| n.split_whitespace().next())
            .map(str::to_owned)
            .unwrap_or_else(|| "there".to_owned());
        let (founder, founder_first) = match &settings.founder_name {
            Some(name) => (
                format!("{name}, founder of {}", project.name),
                name.split_whitespace().next().unwrap_or(name).to_owned(),
            ),
            None => (
                format!("The {} team", project.name),
                "the founder".to_owned(),
            ),
        };
        let discount = settings.discount_percent;
        let money = |cents: i64| format!("{}/month", format_money(cents, &event.currency));
        EmailContext {
            first_name,
            customer_email: event.customer_email.clone(),
            product: project.name.clone(),
            plan: event
                .plan_name
                .as_deref()
                .map_or_else(|| "your plan".to_owned(), |p| format!("the {p} plan")),
            founder,
            founder_first,
            founder_name: settings.founder_name.clone(),
            support_email: project
                .support_email
                .clone()
                .unwrap_or_else(|| super::sender_address(&self.email_from)),
            product_url: settings.product_url.clone(),
            reactivation_url: settings.reactivation_target().map(str::to_owned),
            tenure: event.tenure_days.filter(|d| *d > 0).map(tenure_phrase),
            mrr: event.mrr.filter(|m| *m > 0).map(money),
            discounted_price: event
                .mrr
                .filter(|m| *m > 0)
                .map(|m| money(m * (100 - discount) / 100)),
            downgrade_price: event.mrr.filter(|m| *m > 0).map(|m| money(m / 2)),
            discount_percent: discount,
            discount_months: settings.discount_months,
            coupon_code: if stripe {
                Some(coupon_code(discount, &event.id))
            } else {
                settings.coupon_code.clone()
            },
            pause_months: PAUSE_MONTHS,
            reason_code: ReasonCode::parse(&event.reason_code)
                .unwrap_or(ReasonCode::Other)
                .as_str()
                .to_owned(),
            reason: ReasonCode::parse(&event.reason_code)
                .and_then(ReasonCode::phrase)
                .map(str::to_owned),
            testimonials: settings.testimonials.clone(),
            features: settings.features.clone(),
            payment_failed: event.event_type == "payment_failed",
            language: settings.language.clone(),
        }
    }
}

/// `WINBACK20-1A2B3C`: the discount and the random tail of the event id, so codes differ per event.
fn coupon_code(percent: i64, event_id: &str) -> String {
    let tail: String = event_id.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    format!(
        "WINBACK{percent}-{}",
        tail[tail.len().saturating_sub(6)..].to_ascii_uppercase()
    )
}

fn format_money(cents: i64, currency: &str) -> String {
    let amount = format!("{}.{:02}", cents / 100, cents % 100);
    match currency {
        "usd" => format!("${amount}"),
        "eur" => format!("€{amount}"),
        "gbp" => format!("£{amount}"),
        other => format!("{amount} {}", other.to_ascii_uppercase()),
    }
}

fn tenure_phrase(days: i64) -> String {
    let plural = |n: i64, unit: &str| {
        if n == 1 {
            format!("1 {unit}")
        } else {
            format!("{n} {unit}s")
        }
    };
    match days {
        d if d < 14 => plural(d, "day"),
        d if d < 60 => plural(d / 7, "week"),
        d if d < 730 => plural(d / 30, "month"),
        d => plural(d / 365, "year"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatting_helpers() {
        assert_eq!(format_money(4900, "usd"), "$49.00");
        assert_eq!(format_money(123456, "cad"), "1234.56 CAD");
        assert_eq!(tenure_phrase(1), "1 day");
        assert_eq!(tenure_phrase(21), "3 weeks");
        assert_eq!(tenure_phrase(420), "14 months");
        assert_eq!(tenure_phrase(1100), "3 years");
        assert_eq!(
            coupon_code(20, "019a2b3c-0000-7000-8000-00000abcdef1"),
            "WINBACK20-BCDEF1"
        );
    }
}
