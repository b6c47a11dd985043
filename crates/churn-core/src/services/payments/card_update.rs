//! The card-update page of a failing payment (`/pay/<token>`, decisions §18): no login, the
//! signed token is the customer's only key. Opening it shows the amount, the plan and the
//! due date and logs the visit; with Stripe its button opens a setup-mode Checkout Session,
//! and the return makes the saved card the invoices' default and retries the invoice at once
//! (counted like a manual retry, through the same [`Payments::retry_record`]).

use super::Payments;
use crate::api::payments::CustomerStatus;
use crate::domain::cancel_flow::FlowColors;
use crate::domain::card_update::{
    PAGE_LIFETIME, PageAction, PageState, page_action, page_open, visit_source,
};
use crate::domain::dunning::format_amount;
use crate::domain::email::Email;
use crate::domain::provider::Provider;
use crate::error::{Error, Result};
use crate::providers::stripe::{SetupReturn, Stripe};
use crate::services::access::ProjectAccess;
use crate::store::payment_failures::{self as failures, FailureRecord};
use crate::store::{cancel_flows, events, projects};
use crate::time::Timestamp;

/// What the page shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardUpdatePage {
    pub project_name: String,
    /// The cancel flow's colours, so the page looks like the business's own.
    pub colors: FlowColors,
    pub subject: PageSubject,
    pub state: PageState,
    /// A failing record's button; `None` when there is nothing to press here.
    pub action: Option<PageAction>,
    /// Whom to contact when the page cannot help.
    pub support_email: Option<String>,
}

/// What the page is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageSubject {
    /// A failing payment (`/pay/<token>`).
    Payment {
        plan_name: Option<String>,
        /// Formatted like the dunning emails (`29.90 USD`).
        amount: String,
        /// When the payment was due: the record's creation.
        due: Timestamp,
    },
    /// A customer's card that expires soon (`/pay/customer/<token>`).
    Card {
        /// "Visa ending in 4242", when known.
        card: Option<String>,
        expires_at: Timestamp,
    },
}

/// How the retry after a card update went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardUpdated {
    /// The invoice is paid.
    Paid,
    /// The new card was declined too.
    Declined,
    /// The card is saved, but the provider did not answer: the scheduled retries go on.
    Pending,
    /// The card is saved as the default on a customer's page: nothing was failing, so
    /// nothing is retried.
    Saved,
}

pub(super) fn upstream(e: crate::providers::CallError) -> Error {
    Error::upstream("the payment provider failed", e.to_string())
}

/// The Checkout session a customer came back from, checked: it must be `customer`'s and hold
/// a saved payment method. Answers the session's id and the method's.
pub(super) async fn saved_card(
    stripe: &Stripe,
    customer: &str,
    session_id: &str,
) -> Result<(String, String)> {
    let session = stripe
        .checkout_session(session_id)
        .await
        .map_err(upstream)?;
    if session.customer.as_deref() != Some(customer) {
        return Err(gone());
    }
    let method = session
        .setup_intent
        .filter(|i| i.status.as_deref() == Some("succeeded"))
        .and_then(|i| i.payment_method)
        .ok_or_else(|| Error::Conflict("the new card was not saved".into()))?;
    Ok((session.id, method))
}

/// A Checkout session in setup mode for `customer`, returning to `page` (`…/done` on
/// success): its https URL. A fresh key per press: each press is a new session.
pub(super) async fn open_setup(
    stripe: &Stripe,
    customer: &str,
    currency: &str,
    page: &str,
    subject: &str,
) -> Result<String> {
    let success_url = format!("{page}/done?session_id={{CHECKOUT_SESSION_ID}}");
    let back = SetupReturn {
        success_url: &success_url,
        cancel_url: page,
    };
    let key = format!("churn-setup-{subject}-{}", uuid::Uuid::new_v4());
    let session = stripe
        .create_setup_session(customer, currency, back, &key)
        .await
        .map_err(upstream)?;
    session
        .url
        .filter(|u| url::Url::parse(u).is_ok_and(|u| u.scheme() == "https"))
        .ok_or_else(|| Error::upstream("the payment provider failed", "no https checkout url"))
}

pub(super) fn gone() -> Error {
    Error::NotFound("this page does not exist or has expired".into())
}

/// The record a page's token named (its `created_at` given) while the page is open; else
/// the page is gone.
pub(super) fn while_open<T>(
    found: Option<T>,
    created_at: impl Fn(&T) -> Timestamp,
    now: Timestamp,
) -> Result<T> {
    found
        .filter(|record| page_open(created_at(record), now))
        .ok_or_else(gone)
}

impl Payments {
    /// `GET /customer-status/:publicKey` (the in-app banner): whether the signed customer
    /// has a failing payment, and the card-update page of the newest one whose page is still
    /// open. 400 without a valid email; 401 [`HASH_REFUSED`](super::super::identity::HASH_REFUSED)
    /// when the hash is missing or wrong, as in the cancel flow.
    pub async fn customer_status(
        &self,
        access: &ProjectAccess,
        customer_email: Option<&str>,
        customer_hash: Option<&str>,
    ) -> Result<CustomerStatus> {
        let email = Email::parse(customer_email.unwrap_or_default())
            .map_err(|message| Error::invalid_field("customer_email", message))?;
        self.check_customer_hash(&access.project.id, email.as_str(), None, customer_hash)
            .await?;
        let since = self.core.now() - PAGE_LIFETIME;
        let newest = failures::newest_failing(
            self.core.store.reader(),
            &access.project.id,
            email.as_str(),
            since,
        )
        .await?;
        Ok(CustomerStatus {
            payment_failing: newest.is_some(),
            // `via=banner` marks the visits it brings.
            update_url: newest.map(|r| format!("{}?via=banner", self.card_update_url(&r.id))),
        })
    }

    /// The page's address for a record: `<public url>/pay/<token>`.
    pub fn card_update_url(&self, failure_id: &str) -> String {
        format!(
            "{}/pay/{}",
            self.public_url,
            self.sending.tracking.pay_token(failure_id)
        )
    }

    /// `GET /pay/<token>`: the page, the visit logged on the record (`via`: where the link
    /// was). 404 for a forged token or an expired page.
    pub async fn card_update_page(&self, token: &str, via: Option<&str>) -> Result<CardUpdatePage> {
        let record = self.page_record(token).await?;
        failures::log_visit(
            self.core.store.writer(),
            &record.id,
            self.core.now(),
            visit_source(via),
        )
        .await?;
        self.page(&record).await
    }

    /// `POST /pay/<token>` (Stripe): a Checkout Session in setup mode for the record's
    /// customer; answers its hosted page's address. 409 when the record is not failing or
    /// its page has no Stripe button, 502 when Stripe errs.
    pub async fn start_card_update(&self, token: &str) -> Result<String> {
        let record = self.page_record(token).await?;
        let (stripe, customer) = self.stripe_of(&record).await?;
        let page = self.card_update_url(&record.id);
        open_setup(&stripe, &customer, &record.currency, &page, &record.id).await
    }

    /// `GET /pay/<token>/done?session_id=…`: the session must belong to the record's
    /// customer and hold a saved payment method; it becomes the invoices' default and the
    /// invoice is retried at once, once per session. A record no longer failing, or a session
    /// handled before (a reload), answers the page without retrying.
    pub async fn finish_card_update(
        &self,
        token: &str,
        session_id: &str,
    ) -> Result<(CardUpdatePage, Option<CardUpdated>)> {
        let record = self.page_record(token).await?;
        if record.status != "failing" {
            return Ok((self.page(&record).await?, None));
        }
        if session_id.is_empty() {
            return Err(gone());
        }
        let (stripe, customer) = self.stripe_of(&record).await?;
        let (session, method) = saved_card(&stripe, &customer, session_id).await?;
        // Once per session: a reload of this page must not retry (and count) again.
        if !failures::claim_card_update(
            self.core.store.writer(),
            &session,
            &record.id,
            self.core.now(),
        )
        .await?
        {
            return Ok((self.page(&record).await?, None));
        }
        stripe
            .set_default_payment_method(&customer, &method, &format!("churn-card-{session}"))
            .await
            .map_err(upstream)?;
        let updated = match self.retry_record(&record).await {
            Ok(r) if r.last_attempt.outcome == "succeeded" => CardUpdated::Paid,
            Ok(_) => CardUpdated::Declined,
            Err(Error::Upstream { .. }) => CardUpdated::Pending,
            Err(e) => return Err(e),
        };
        let record = failures::by_id(self.core.store.reader(), &record.id)
            .await?
            .ok_or_else(gone)?;
        Ok((self.page(&record).await?, Some(updated)))
    }

    /// The record a token names while its page is open.
    async fn page_record(&self, token: &str) -> Result<FailureRecord> {
        let id = self.sending.tracking.verify_pay_token(token);
        let record = failures::by_id(self.core.store.reader(), id.ok_or_else(gone)?).await?;
        while_open(record, |r| r.created_at, self.core.now())
    }

    /// The Stripe client and customer of a failing record whose page has the Checkout button.
    async fn stripe_of(&self, record: &FailureRecord) -> Result<(Stripe, String)> {
        let refused = || Error::Conflict("this payment cannot be updated here".into());
        if record.status != "failing" || record.provider != Provider::Stripe {
            return Err(refused());
        }
        let connection = self
            .connection(&record.project_id, Provider::Stripe)
            .await?
            .ok_or_else(refused)?;
        let stripe = self.stripe(&connection).ok_or_else(refused)?;
        let customer = record.provider_customer_id.clone().ok_or_else(refused)?;
        Ok((stripe, customer))
    }

    /// The project of a page and its cancel flow's colours.
    pub(super) async fn branding(
        &self,
        project_id: &str,
    ) -> Result<(projects::ProjectRecord, FlowColors)> {
        let db = self.core.store.reader();
        let project = projects::by_id(db, project_id).await?.ok_or_else(gone)?;
        let colors = cancel_flows::get(db, &project.id)
            .await?
            .map(|flow| flow.colors)
            .unwrap_or_default();
        Ok((project, colors))
    }

    /// Whether the project's Stripe connection can open Checkout sessions.
    pub(super) async fn stripe_usable(&self, project_id: &str) -> Result<bool> {
        Ok(self
            .connection(project_id, Provider::Stripe)
            .await?
            .is_some_and(|c| self.stripe(&c).is_some()))
    }

    async fn page(&self, record: &FailureRecord) -> Result<CardUpdatePage> {
        let db = self.core.store.reader();
        let (project, colors) = self.branding(&record.project_id).await?;
        let plan_name = match &record.churn_event_id {
            Some(id) => events::by_id(db, id).await?.and_then(|e| e.plan_name),
            None => None,
        };
        let state = PageState::of(&record.status);
        let action = match state {
            PageState::Failing => {
                let stripe_customer = record.provider == Provider::Stripe
                    && record.provider_customer_id.is_some()
                    && self.stripe_usable(&record.project_id).await?;
                page_action(
                    record.provider,
                    stripe_customer,
                    record.payment_link.as_deref(),
                    project.settings.update_payment_url.as_deref(),
                )
            }
            _ => None,
        };
        Ok(CardUpdatePage {
            project_name: project.name,
            colors,
            subject: PageSubject::Payment {
                plan_name,
                amount: format_amount(record.amount, &record.currency),
                due: record.created_at,
            },
            state,
            action,
            support_email: project.support_email,
        })
    }
}
