//! Editing drafts and sending a variant: at most one email per variant, even when sends race.

use super::Churn;
use super::access::ProjectAccess;
use super::sender::Sender;
use crate::api::events::{EditVariant, EditedVariant, SentVariant};
use crate::domain::cta::CallToAction;
use crate::domain::lifecycle::{Action, EventStatus, transition};
use crate::domain::role::Permission;
use crate::domain::unsubscribe::SuppressionReason;
use crate::domain::variant::{
    MAX_BODY_CHARS, MAX_SUBJECT_CHARS, VariantAction, VariantGuard, VariantStatus,
    transition as variant_transition,
};
use crate::email::{OutgoingEmail, SendError, compose};
use crate::error::{Error, Result};
use crate::generation::html;
use crate::jobs::Job;
use crate::store::events;
use crate::store::variants::{self, VariantRecord};

fn variant_not_found() -> Error {
    Error::NotFound("variant not found".into())
}

impl Churn {
    pub async fn edit_variant(
        &self,
        access: &ProjectAccess,
        event_id: &str,
        variant_id: &str,
        req: EditVariant,
    ) -> Result<EditedVariant> {
        self.authorize_events(access, Permission::Write)?;
        let event = self.load_event(access, event_id).await?;
        transition(event.status, Action::Edit).map_err(|e| Error::validation(e.to_string()))?;
        let variant = variants::get(self.store.reader(), &event.id, variant_id)
            .await?
            .ok_or_else(variant_not_found)?;
        let draft_only = || Error::Conflict(VariantGuard::NotDraft.to_string());
        // A send in flight holds the variant: it is no longer editable.
        let status = variant.status.ok_or_else(draft_only)?;
        variant_transition(status, VariantAction::Edit)
            .map_err(|e| Error::Conflict(e.to_string()))?;
        let subject = match req.subject.as_deref().map(str::trim) {
            None => variant.subject.clone(),
            Some("") => return Err(Error::invalid_field("subject", "must not be empty")),
            Some(s) if s.chars().count() > MAX_SUBJECT_CHARS || s.contains('\n') => {
                return Err(Error::invalid_field(
                    "subject",
                    format!("must be one line of at most {MAX_SUBJECT_CHARS} characters"),
                ));
            }
            Some(s) => s.to_owned(),
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
        let now = self.now();
        if !variants::edit(
            self.store.writer(),
            &variant.id,
            &subject,
            &body,
            &body_text,
            now,
        )
        .await?
        {
            return Err(draft_only());
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
    /// counted (429) before the email leaves; the variant is claimed first, so a second send
    /// of it — concurrent or later — is a conflict. A bounce suppresses the address.
    pub async fn send_variant(
        &self,
        access: &ProjectAccess,
        event_id: &str,
        variant_id: &str,
    ) -> Result<SentVariant> {
        self.authorize_events(access, Permission::Write)?;
        let event = self.load_event(access, event_id).await?;
        let after_send =
            transition(event.status, Action::Send).map_err(|e| Error::validation(e.to_string()))?;
        if event.customer_email.trim().is_empty() {
            return Err(Error::validation(
                "customer email is missing on this churn event",
            ));
        }
        let transport = self
            .email
            .as_ref()
            .ok_or_else(|| Error::NotConfigured("email service is not configured".into()))?;
        let variant = variants::get(self.store.reader(), &event.id, variant_id)
            .await?
            .ok_or_else(variant_not_found)?;
        let already_sent = || Error::Conflict(VariantGuard::AlreadySent.to_string());
        let status = variant.status.ok_or_else(already_sent)?;
        variant_transition(status, VariantAction::Send)
            .map_err(|e| Error::Conflict(e.to_string()))?;
        self.refuse_suppressed(&access.project.id, &event.customer_email)
            .await?;
        let sender = self.sender_for(&access.project).await?;
        // The claim makes the check above hold against concurrent sends too; the quota is
        // counted in the same transaction, so a refused send leaves the variant a draft.
        let mut tx = self.store.begin().await?;
        if !variants::claim_for_send(&mut *tx, &variant.id, self.now()).await? {
            tx.rollback().await?;
            return Err(already_sent());
        }
        let quota_day = self.count_send(&mut tx, &access.project).await?;
        tx.commit().await?;

        let email = self.compose(
            access,
            &sender,
            &event.customer_email,
            event.customer_name.clone(),
            &variant,
        );
        if let Err(e) = transport.send(&email).await {
            // The mail server accepted nothing: the send does not count.
            self.release_send(&access.project.id, &quota_day).await?;
            let released = match e {
                SendError::Rejected(_) => {
                    self.suppress(
                        &access.project.id,
                        &event.customer_email,
                        SuppressionReason::Bounced,
                    )
                    .await?;
                    variant_transition(status, VariantAction::Bounce)
                        .unwrap_or(VariantStatus::Bounced)
                }
                SendError::Failed(_) => status,
            };
            variants::release_claim(self.store.writer(), &variant.id, released, self.now()).await?;
            return Err(Error::Upstream(e.to_string()));
        }

        let now = self.now();
        let mut tx = self.store.begin().await?;
        variants::mark_sent(&mut *tx, &variant.id, &email.to, &email.message_id, now).await?;
        if event.status == EventStatus::VariantsGenerated
            && events::set_status(
                &mut *tx,
                &event.project_id,
                &event.id,
                EventStatus::VariantsGenerated,
                after_send,
                now,
            )
            .await?
        {
            // The first send starts the recovery window.
            let window = chrono::Duration::days(access.project.settings.recovery_window_days);
            Job::ExpireEvent {
                event_id: event.id.clone(),
            }
            .enqueue(&mut tx, now + window, now)
            .await?;
        }
        tx.commit().await?;
        Ok(SentVariant {
            variant_id: variant.id,
            status: VariantStatus::Sent,
            sent_at: now,
            recipient: email.to,
            message_id: email.message_id,
        })
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
            .unwrap_or_else(|| self.sender_address());
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
            public_url: &self.public_url,
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

fn looks_like_html(body: &str) -> bool {
    let t = body.trim_start();
    t.starts_with('<') || t.contains("</") || t.contains("<br")
}
