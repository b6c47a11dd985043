//! Editing drafts and sending a variant: at most one email per variant, even when sends race
//! or the process dies mid-send.
//!
//! A send claims the draft (`sending`, `claimed_at`, message id and recipient) before the
//! email leaves, then delivers and records in a task of its own, so a caller that goes away
//! cannot stop it between the relay's acceptance and the record. A claim whose outcome was
//! never recorded (the process died) is not sent again: at start-up the file outbox's `.eml`
//! files settle it; otherwise an operator does (`churn variants stuck` / `settle`).

use super::access::ProjectAccess;
use super::payments::Promotion;
use super::sender::Sender;
use super::{Payments, Sending};
use crate::api::events::{EditVariant, EditedVariant, SentVariant};
use crate::domain::cta::CallToAction;
use crate::domain::lifecycle::{Action, EventStatus, transition};
use crate::domain::role::Permission;
use crate::domain::settings::ProjectSettings;
use crate::domain::strategy::Strategy;
use crate::domain::unsubscribe::SuppressionReason;
use crate::domain::validation::one_line;
use crate::domain::variant::{
    MAX_BODY_CHARS, MAX_SUBJECT_CHARS, VariantAction, VariantGuard, VariantStatus,
    transition as variant_transition,
};
use crate::email::{EmailTransport, OutgoingEmail, SendError, compose};
use crate::error::{Error, Result};
use crate::generation::html;
use crate::jobs::kind::Job;
use crate::store::events::EventRecord;
use crate::store::variants::{self, ClaimRow, VariantRecord};
use crate::store::{Store, events, projects};
use crate::time::Timestamp;

fn variant_not_found() -> Error {
    Error::NotFound("variant not found".into())
}

impl Sending {
    pub async fn edit_variant(
        &self,
        access: &ProjectAccess,
        event_id: &str,
        variant_id: &str,
        req: EditVariant,
    ) -> Result<EditedVariant> {
        self.core.authorize_events(access, Permission::Write)?;
        let event = self.core.load_event(access, event_id).await?;
        transition(event.status, Action::Edit).map_err(|e| Error::validation(e.to_string()))?;
        let variant = variants::get(self.core.store.reader(), &event.id, variant_id)
            .await?
            .ok_or_else(variant_not_found)?;
        // A send in flight holds the variant: it is no longer editable.
        variant_transition(variant.status, VariantAction::Edit)
            .map_err(|e| Error::Conflict(e.to_string()))?;
        let subject = match req.subject.as_deref().map(str::trim) {
            None => variant.subject.clone(),
            Some("") => return Err(Error::invalid_field("subject", "must not be empty")),
            Some(s) => {
                one_line(s, MAX_SUBJECT_CHARS).map_err(|m| Error::invalid_field("subject", m))?
            }
        };
        let (body, body_text) = match req.body.as_deref() {
            None => (variant.body.clone(), variant.body_text.clone()),
            Some(b) if b.trim().is_empty() => {
                return Err(Error::invalid_field("body", "must not be empty"));
            }
            Some(b) if b.chars().count() > MAX_BODY_CHARS => {
                return Err(Error::invalid_field(
                    "body",
                    format!("must be at most {MAX_BODY_CHARS} characters"),
                ));
            }
            Some(b) if looks_like_html(b) => {
                let clean = html::sanitize(b);
                let text = html::to_text(&clean);
                (clean, text)
            }
            Some(b) => (html::from_text(b.trim()), b.trim().to_owned()),
        };
        let now = self.core.now();
        if !variants::edit(
            self.core.store.writer(),
            &variant.id,
            &subject,
            &body,
            &body_text,
            now,
        )
        .await?
        {
            return Err(self
                .refused(&event.id, &variant.id, VariantAction::Edit)
                .await);
        }
        Ok(EditedVariant {
            id: variant.id,
            strategy: variant.strategy,
            subject,
            body,
            status: VariantStatus::Draft,
            updated_at: now,
        })
    }

    /// Sends a variant to the customer. The event's status is checked before the variant is
    /// looked up (decisions §7); a suppressed address is refused (409) and the daily quota
    /// counted (429) before anything is claimed. The variant is claimed, with the message id
    /// and recipient, before the email leaves, so a second send of it — concurrent or later —
    /// is a conflict; delivery and its record then run in a task of their own, which finishes
    /// even if the caller goes away (decisions §7, "A send survives its caller"). A discount
    /// code written for Stripe is created there first, through `payments` (§15).
    pub async fn send_variant(
        &self,
        access: &ProjectAccess,
        event_id: &str,
        variant_id: &str,
        payments: &Payments,
    ) -> Result<SentVariant> {
        self.core.authorize_events(access, Permission::Write)?;
        let event = self.core.load_event(access, event_id).await?;
        transition(event.status, Action::Send).map_err(|e| Error::validation(e.to_string()))?;
        if event.customer_email.trim().is_empty() {
            return Err(Error::validation(
                "customer email is missing on this churn event",
            ));
        }
        let transport = self
            .mailer
            .transport
            .clone()
            .ok_or_else(|| Error::NotConfigured("email service is not configured".into()))?;
        let variant = variants::get(self.core.store.reader(), &event.id, variant_id)
            .await?
            .ok_or_else(variant_not_found)?;
        variant_transition(variant.status, VariantAction::Send)
            .map_err(|e| Error::Conflict(e.to_string()))?;
        self.refuse_suppressed(&access.project.id, &event.customer_email)
            .await?;
        let sender = self.sender_for(&access.project).await?;

        let email = self.compose(
            access,
            &sender,
            &event.customer_email,
            event.customer_name.clone(),
            &variant,
        );
        // The claim makes the check above hold against concurrent sends too; the quota is
        // counted in the same transaction, so a refused send leaves the variant a draft.
        let mut tx = self.core.store.begin().await?;
        if !variants::claim_for_send(
            &mut *tx,
            &variant.id,
            &email.message_id,
            &email.to,
            self.core.now(),
        )
        .await?
        {
            tx.rollback().await?;
            return Err(self
                .refused(&event.id, &variant.id, VariantAction::Send)
                .await);
        }
        let quota_day = self.count_send(&mut tx, &access.project).await?;
        tx.commit().await?;
        let taken = Taken {
            project_id: access.project.id.clone(),
            quota_day,
        };

        let promotion = promotion(&access.project.settings, &variant, &event);
        let claim = Claim {
            project_id: access.project.id.clone(),
            variant_id: variant.id,
            event_id: event.id,
            message_id: Some(email.message_id.clone()),
            recovery_window: chrono::Duration::days(access.project.settings.recovery_window_days),
        };
        // Awaiting the task does not tie it to this future: when the caller is dropped
        // (client gone, timeout), the task still delivers and records.
        let this = self.clone();
        let payments = payments.clone();
        self.deliveries
            .spawn(async move {
                if let Some(promotion) = promotion
                    && let Err(e) = payments.issue(&promotion).await
                {
                    // No code, no email: the draft and the quota are as they were.
                    this.release(&claim, &taken, VariantAction::Release).await?;
                    return Err(e);
                }
                this.deliver(transport.as_ref(), &email, &claim, &taken)
                    .await
            })
            .await
            .map_err(Error::internal)?
    }

    /// Ends a claim whose email did not leave: the quota is given back and the variant is a
    /// draft again (`Release`) or bounced (`Bounce`).
    async fn release(&self, claim: &Claim, taken: &Taken, action: VariantAction) -> Result<()> {
        self.release_send(&taken.project_id, &taken.quota_day)
            .await?;
        let released = variant_transition(VariantStatus::Sending, action)
            .map_err(|g| Error::internal(g.to_string()))?;
        variants::release_claim(
            self.core.store.writer(),
            &claim.variant_id,
            claim.message_id.as_deref(),
            released,
            self.core.now(),
        )
        .await?;
        Ok(())
    }

    /// Hands the claimed email over and records the outcome. An email that did not leave
    /// frees the draft and gives its quota back (502), one whose recipient was refused for
    /// good marks it bounced and suppresses the address (502); an email that left is recorded
    /// as sent. If the record itself fails, the claim stays for reconciliation rather than
    /// risk a second email.
    async fn deliver(
        &self,
        transport: &dyn EmailTransport,
        email: &OutgoingEmail,
        claim: &Claim,
        taken: &Taken,
    ) -> Result<SentVariant> {
        if let Err(e) = super::send_counted(&self.core, transport, "recovery", email).await {
            // The mail server accepted nothing: the send does not count.
            if matches!(e, SendError::Rejected(_)) {
                self.suppress(&taken.project_id, &email.to, SuppressionReason::Bounced)
                    .await?;
            }
            let (action, public) = match e {
                SendError::Rejected(_) => (
                    VariantAction::Bounce,
                    "the email server refused the recipient",
                ),
                SendError::Failed(_) => (
                    VariantAction::Release,
                    "the email could not be handed to the email server",
                ),
            };
            self.release(claim, taken, action).await?;
            return Err(Error::upstream(public, e));
        }
        let sent_at = self.core.now();
        record_sent(&self.core.store, claim, sent_at).await?;
        Ok(SentVariant {
            variant_id: claim.variant_id.clone(),
            status: VariantStatus::Sent,
            sent_at,
            recipient: email.to.clone(),
            message_id: email.message_id.clone(),
        })
    }

    /// Why a conditional write of an edit or a claim changed nothing: the variant moved on
    /// since it was read (a send took it), or the event stopped accepting sends meanwhile.
    async fn refused(&self, event_id: &str, variant_id: &str, action: VariantAction) -> Error {
        let current = match variants::get(self.core.store.reader(), event_id, variant_id).await {
            Ok(Some(v)) => v.status,
            Ok(None) => return variant_not_found(),
            Err(e) => return e,
        };
        let guard = match variant_transition(current, action) {
            Err(guard) => guard,
            Ok(_) if action == VariantAction::Edit => VariantGuard::NotDraft,
            Ok(_) => VariantGuard::AlreadySent,
        };
        Error::Conflict(guard.to_string())
    }

    /// Waits for deliveries still running (their callers may be gone), before shutdown.
    pub async fn finish_deliveries(&self) {
        self.deliveries.close();
        self.deliveries.wait().await;
    }

    /// Settles, at start-up, the claims a crash left behind, where the transport keeps the
    /// evidence (the file outbox): an email on file was sent (recorded exactly as a send
    /// is), none was not (back to draft). With SMTP nothing is guessed: those claims are
    /// left for `churn variants settle`.
    pub async fn settle_claims(&self) -> Result<ClaimsSettled> {
        let mut settled = ClaimsSettled::default();
        for claim in variants::claims(self.core.store.reader(), None).await? {
            let evidence = match (&self.mailer.transport, &claim.message_id) {
                (Some(transport), Some(message_id)) => transport.delivered(message_id),
                _ => None,
            };
            let outcome = match evidence {
                Some(true) => Settlement::Sent,
                Some(false) => Settlement::NotSent,
                None => {
                    settled.left += 1;
                    continue;
                }
            };
            if settle(&self.core.store, &claim, outcome, self.core.now()).await? {
                match outcome {
                    Settlement::Sent => settled.sent += 1,
                    Settlement::NotSent => settled.released += 1,
                }
            }
        }
        Ok(settled)
    }

    fn compose(
        &self,
        access: &ProjectAccess,
        sender: &Sender,
        to: &str,
        to_name: Option<String>,
        variant: &VariantRecord,
    ) -> OutgoingEmail {
        let project = &access.project;
        let support = project
            .support_email
            .clone()
            .unwrap_or_else(|| self.mailer.sender_address());
        let unsubscribe_to = sender.reply_to.clone().unwrap_or_else(|| support.clone());
        let cta = CallToAction::new(
            variant.strategy,
            project.settings.reactivation_target(),
            variant.coupon_code.as_deref(),
            &support,
            variant
                .coupon_percent
                .unwrap_or(project.settings.discount_percent),
        );
        let unsubscribe_url = self.unsubscribe_url(&project.id, to);
        let parts = compose::SendParts {
            cta: &cta,
            keys: &self.tracking,
            public_url: &self.mailer.public_url,
            variant_id: &variant.id,
            product: &project.name,
            unsubscribe_url: &unsubscribe_url,
        };
        OutgoingEmail {
            from: sender.from.clone(),
            to: to.to_owned(),
            to_name,
            reply_to: sender.reply_to.clone(),
            subject: variant.subject.clone(),
            html: compose::html_part(&variant.body, &parts),
            text: compose::text_part(&variant.body_text, &parts),
            list_unsubscribe: format!(
                "<{unsubscribe_url}>, <mailto:{unsubscribe_to}?subject=unsubscribe>"
            ),
            message_id: format!("{}@churn", uuid::Uuid::new_v4()),
        }
    }
}

/// A claimed send: what its record needs once the email has left.
struct Claim {
    project_id: String,
    variant_id: String,
    event_id: String,
    /// `None` only for claims taken before message ids were recorded with them.
    message_id: Option<String>,
    recovery_window: chrono::Duration,
}

/// What a send took before the email left, given back when it did not.
struct Taken {
    project_id: String,
    quota_day: String,
}

/// What start-up reconciliation did with the claims it found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClaimsSettled {
    /// An email on file: recorded as sent.
    pub sent: u64,
    /// No email on file: back to draft.
    pub released: u64,
    /// No evidence either way (SMTP): left for an operator.
    pub left: u64,
}

/// How an operator (or the outbox's evidence) resolves a claim whose outcome is unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settlement {
    /// The email went out: recorded as if the send had been.
    Sent,
    /// It did not: the variant is a draft again.
    NotSent,
}

/// Records a claimed email as handed over: the variant becomes `sent` and, on the event's
/// first send, the event moves to `email_sent` and its recovery window starts. `false` when
/// the claim was settled meanwhile.
async fn record_sent(store: &Store, claim: &Claim, now: Timestamp) -> Result<bool> {
    let mut tx = store.begin().await?;
    if !variants::mark_sent(
        &mut *tx,
        &claim.variant_id,
        claim.message_id.as_deref(),
        now,
    )
    .await?
    {
        return Ok(false);
    }
    let after_send = transition(EventStatus::VariantsGenerated, Action::Send)
        .map_err(|g| Error::internal(g.to_string()))?;
    // The first send starts the recovery window; a later one, or an event that moved on
    // (recovered while the claim was pending), keeps its status.
    if events::set_status(
        &mut *tx,
        &claim.project_id,
        &claim.event_id,
        EventStatus::VariantsGenerated,
        after_send,
        now,
    )
    .await?
    {
        Job::ExpireEvent {
            event_id: claim.event_id.clone(),
        }
        .enqueue(&mut tx, now + claim.recovery_window, now)
        .await?;
    }
    let sent = crate::domain::webhooks::EventType::VariantSent;
    super::webhooks::emit_variant(&mut tx, sent, &claim.variant_id, now).await?;
    tx.commit().await?;
    Ok(true)
}

/// Resolves one claim: sent (recorded as a send is) or not sent (back to draft). `false`
/// when it was settled meanwhile.
pub(super) async fn settle(
    store: &Store,
    claim: &ClaimRow,
    outcome: Settlement,
    now: Timestamp,
) -> Result<bool> {
    match outcome {
        Settlement::Sent => {
            let project = projects::by_id(store.reader(), &claim.project_id)
                .await?
                .ok_or_else(|| Error::NotFound("project not found".into()))?;
            let claim = Claim {
                project_id: claim.project_id.clone(),
                variant_id: claim.id.clone(),
                event_id: claim.churn_event_id.clone(),
                message_id: claim.message_id.clone(),
                recovery_window: chrono::Duration::days(project.settings.recovery_window_days),
            };
            record_sent(store, &claim, now).await
        }
        Settlement::NotSent => {
            variants::release_claim(
                store.writer(),
                &claim.id,
                claim.message_id.as_deref(),
                VariantStatus::Draft,
                now,
            )
            .await
        }
    }
}

/// The code a discount variant must have made at Stripe before it is sent: its own code,
/// unless that is the project's `coupon_code` (made by the founder, used as is).
fn promotion(
    settings: &ProjectSettings,
    variant: &VariantRecord,
    event: &EventRecord,
) -> Option<Promotion> {
    let code = variant.coupon_code.as_ref()?;
    (variant.strategy == Strategy::Discount && settings.coupon_code.as_ref() != Some(code)).then(
        || Promotion {
            project_id: variant.project_id.clone(),
            scope: format!("variant-{}", variant.id),
            code: code.clone(),
            percent_off: variant.coupon_percent.unwrap_or(settings.discount_percent),
            months: settings.discount_months,
            customer_id: event.provider_customer_id.clone(),
        },
    )
}

fn looks_like_html(body: &str) -> bool {
    let t = body.trim_start();
    t.starts_with('<') || t.contains("</") || t.contains("<br")
}
