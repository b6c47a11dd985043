//! Card-expiry notices (decisions §18). A `payment_method_expiring` event, tracked or stored
//! from Stripe's `customer.source.expiring`, schedules one email `expiry_notice_days` before
//! the expiry (at once when nearer) as a job; the notice row's uniqueness per customer makes
//! a repeated signal schedule nothing and a newer expiry replace the pending notice, and a
//! successful payment cancels it. The email links to the customer's card-update page
//! (`/pay/customer/<token>`), whose Stripe Checkout return saves the new card as the
//! default and retries nothing. Sent like the dunning emails: from the verified sender, no
//! quota, suppressions not consulted.

use serde_json::Value;

use super::Payments;
use super::card_update::{
    CardUpdatePage, CardUpdated, PageSubject, gone, open_setup, saved_card, upstream, while_open,
};
use crate::domain::behavior::BehaviorEvent;
use crate::domain::card_update::{PAGE_LIFETIME, PageState, customer_page_action};
use crate::domain::dunning::format_amount;
use crate::domain::expiry_notice::{ExpiryFacts, card_label, render, send_at};
use crate::domain::provider::Provider;
use crate::domain::role::Permission;
use crate::error::{Error, Result};
use crate::ids::new_id;
use crate::jobs::JobRun;
use crate::jobs::kind::Job;
use crate::providers::stripe::Stripe;
use crate::services::access::ProjectAccess;
use crate::store::expiry_notices::{self as notices, NoticeRecord};
use crate::store::payment_failures as failures;
use crate::store::{Tx, dunning};
use crate::time::Timestamp;

/// The event that carries the signal.
const SIGNAL: &str = "payment_method_expiring";

/// Schedules, in the caller's transaction, the notices of one project's newly stored
/// `payment_method_expiring` events that name an `expires_at`, oldest signal first, and
/// enqueues the email job of each notice stored.
pub(in crate::services) async fn schedule_notices(
    tx: &mut Tx,
    project_id: &str,
    events: &[&BehaviorEvent],
    now: Timestamp,
) -> Result<()> {
    let mut expiring: Vec<(&BehaviorEvent, Timestamp)> = events
        .iter()
        .filter(|e| e.event == SIGNAL)
        .filter_map(|e| Some((*e, e.extracted.expires_at?)))
        .collect();
    if expiring.is_empty() {
        return Ok(());
    }
    let config = dunning::get(&mut **tx, project_id).await?;
    if !config.enabled {
        return Ok(());
    }
    expiring.sort_by_key(|(e, _)| e.occurred_at);
    for (e, expires_at) in expiring {
        let Some(at) = send_at(expires_at, config.expiry_notice_days, now) else {
            continue;
        };
        let text = |key: &str| {
            e.properties
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let notice = NoticeRecord {
            id: new_id(),
            project_id: project_id.to_owned(),
            customer_email: e.customer_email.clone(),
            expires_at,
            signal_at: e.occurred_at,
            brand: text("brand"),
            last4: text("last4"),
            provider_customer_id: None,
            send_at: at,
            status: "pending".into(),
            reason: None,
            created_at: now,
        };
        if notices::schedule(&mut **tx, &notice).await? {
            Job::ExpiryNotice {
                notice_id: notice.id,
                project_id: project_id.to_owned(),
            }
            .enqueue(tx, at, now)
            .await?;
        }
    }
    Ok(())
}

impl Payments {
    /// The customer page's address for a notice: `<public url>/pay/customer/<token>`.
    pub fn customer_card_url(&self, notice_id: &str) -> String {
        format!(
            "{}/pay/customer/{}",
            self.public_url,
            self.sending.tracking.customer_pay_token(notice_id)
        )
    }

    /// Job `expiry_notice`: the email of a notice still pending, or a logged skip. A notice
    /// replaced or cancelled since has nothing to send.
    pub(crate) async fn send_expiry_notice(&self, notice_id: &str, run: &JobRun) -> Result<()> {
        let db = self.core.store.reader();
        let Some(notice) = notices::by_id(db, notice_id).await? else {
            return Ok(());
        };
        if notice.status != "pending" {
            return Ok(());
        }
        let (project, _) = match self.branding(&notice.project_id).await {
            Ok(found) => found,
            Err(Error::NotFound(_)) => return Ok(()),
            Err(e) => return Err(e),
        };
        let config = dunning::get(db, &project.id).await?;
        let now = self.core.now();
        let id = notice.id.as_str();
        let skip = |reason: &'static str| async move {
            tracing::info!(notice = %id, reason, "expiry notice skipped");
            self.core
                .metrics
                .email("dunning", crate::metrics::EmailOutcome::Skipped);
            notices::skip(self.core.store.writer(), id, reason, now).await
        };
        if !config.enabled || config.expiry_notice_days == 0 {
            return skip("expiry notices are off").await;
        }
        if notice.expires_at <= now {
            return skip("the card expired before the notice could go out").await;
        }
        let route = match self.dunning_route(&project, config.send_emails).await? {
            Ok(route) => route,
            Err(reason) => return skip(reason).await,
        };
        let update_url = format!("{}?via=email", self.customer_card_url(id));
        let card = card_label(notice.brand.as_deref(), notice.last4.as_deref());
        let (subject, text) = render(&ExpiryFacts {
            project_name: &project.name,
            card: card.as_deref(),
            expires_at: notice.expires_at,
            update_url: &update_url,
            sender_name: &config.sender_name,
        });
        let reason = self
            .send_once(
                run,
                &route,
                &config.sender_name,
                notice.customer_email.clone(),
                (subject, text),
                "the email server did not accept the expiry notice",
            )
            .await?;
        let mut tx = self.core.store.begin().await?;
        notices::mark_sent(&mut *tx, id, reason, now).await?;
        run.complete(tx).await
    }

    /// `GET /pay/customer/<token>`: the page of a customer whose card expires soon. 404 for
    /// a forged token, a notice replaced by a newer one, or a page past its lifetime.
    pub async fn customer_card_page(&self, token: &str) -> Result<CardUpdatePage> {
        let notice = self.page_notice(token).await?;
        self.customer_page(&notice).await
    }

    /// `POST /pay/customer/<token>`: a setup-mode Checkout Session for the customer at
    /// Stripe, in the currency Stripe bills them in; answers its hosted page's address. 409
    /// when the page has no Stripe button or Stripe knows no currency for the customer, 502
    /// when Stripe errs.
    pub async fn start_customer_card_update(&self, token: &str) -> Result<String> {
        let notice = self.page_notice(token).await?;
        let (stripe, customer) = self.stripe_for_customer(&notice).await?;
        let currency = stripe
            .customer(&customer)
            .await
            .map_err(upstream)?
            .currency
            .ok_or_else(|| Error::Conflict("this card cannot be updated here".into()))?;
        let page = self.customer_card_url(&notice.id);
        open_setup(&stripe, &customer, &currency, &page, &notice.id).await
    }

    /// `GET /pay/customer/<token>/done?session_id=…`: the session must belong to the
    /// customer and hold a saved payment method, which becomes the invoices' default (with
    /// a key per session, so a reload changes nothing). Nothing is retried: nothing failed.
    /// The customer's pending notice, if any, is no longer needed.
    pub async fn finish_customer_card_update(
        &self,
        token: &str,
        session_id: &str,
    ) -> Result<(CardUpdatePage, Option<CardUpdated>)> {
        let notice = self.page_notice(token).await?;
        if session_id.is_empty() {
            return Err(gone());
        }
        let (stripe, customer) = self.stripe_for_customer(&notice).await?;
        let (session, method) = saved_card(&stripe, &customer, session_id).await?;
        stripe
            .set_default_payment_method(&customer, &method, &format!("churn-card-{session}"))
            .await
            .map_err(upstream)?;
        notices::cancel_pending(
            self.core.store.writer(),
            &notice.project_id,
            &notice.customer_email,
            "the customer saved a new card",
            self.core.now(),
        )
        .await?;
        Ok((self.customer_page(&notice).await?, Some(CardUpdated::Saved)))
    }

    /// The dunning settings' preview of the card-update page: the project's name, colours
    /// and button (Stripe Checkout when Stripe is connected, else `update_payment_url`), with
    /// a sample payment. Read access.
    pub async fn card_update_preview(&self, access: &ProjectAccess) -> Result<CardUpdatePage> {
        access.authorize(Permission::Read)?;
        let (project, colors) = self.branding(&access.project.id).await?;
        let action = customer_page_action(
            self.stripe_usable(&project.id).await?,
            project.settings.update_payment_url.as_deref(),
        );
        Ok(CardUpdatePage {
            project_name: project.name,
            colors,
            subject: PageSubject::Payment {
                plan_name: Some("Pro (sample)".into()),
                amount: format_amount(2900, "usd"),
                due: self.core.now(),
            },
            state: PageState::Failing,
            action,
            support_email: project.support_email,
        })
    }

    /// The notice a customer token names while its page is open.
    async fn page_notice(&self, token: &str) -> Result<NoticeRecord> {
        let id = self.sending.tracking.verify_customer_pay_token(token);
        let notice = notices::by_id(self.core.store.reader(), id.ok_or_else(gone)?).await?;
        while_open(notice, |n| n.created_at, self.core.now())
    }

    /// The customer at Stripe: the one the signal named, else the one of their newest Stripe
    /// payment failure whose page is still open.
    async fn stripe_customer_of(&self, notice: &NoticeRecord) -> Result<Option<String>> {
        if notice.provider_customer_id.is_some() {
            return Ok(notice.provider_customer_id.clone());
        }
        let since = self.core.now() - PAGE_LIFETIME;
        let records = failures::of_customer(
            self.core.store.reader(),
            &notice.project_id,
            &notice.customer_email,
            100,
        )
        .await?;
        Ok(records
            .into_iter()
            .filter(|r| r.provider == Provider::Stripe && r.created_at >= since)
            .find_map(|r| r.provider_customer_id))
    }

    async fn stripe_for_customer(&self, notice: &NoticeRecord) -> Result<(Stripe, String)> {
        let refused = || Error::Conflict("this card cannot be updated here".into());
        let connection = self
            .connection(&notice.project_id, Provider::Stripe)
            .await?
            .ok_or_else(refused)?;
        let stripe = self.stripe(&connection).ok_or_else(refused)?;
        let customer = self.stripe_customer_of(notice).await?.ok_or_else(refused)?;
        Ok((stripe, customer))
    }

    async fn customer_page(&self, notice: &NoticeRecord) -> Result<CardUpdatePage> {
        let (project, colors) = self.branding(&notice.project_id).await?;
        let stripe_customer = self.stripe_customer_of(notice).await?.is_some()
            && self.stripe_usable(&project.id).await?;
        Ok(CardUpdatePage {
            project_name: project.name,
            colors,
            subject: PageSubject::Card {
                card: card_label(notice.brand.as_deref(), notice.last4.as_deref()),
                expires_at: notice.expires_at,
            },
            state: PageState::Expiring,
            action: customer_page_action(
                stripe_customer,
                project.settings.update_payment_url.as_deref(),
            ),
            support_email: project.support_email,
        })
    }
}
