//! Editing drafts and sending a variant: at most one email per variant, even when sends race.

use super::Churn;
use super::access::ProjectAccess;
use crate::api::events::{EditVariant, EditedVariant, SentVariant};
use crate::domain::lifecycle::{Action, EventStatus, transition};
use crate::domain::role::Permission;
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
    /// looked up (decisions §7); the variant is claimed before the email leaves, so a second
    /// send of it — concurrent or later — is a conflict.
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
        // The claim makes the check above hold against concurrent sends too.
        if !variants::claim_for_send(self.store.writer(), &variant.id, self.now()).await? {
            return Err(already_sent());
        }

        let email = self.compose(
            access,
            &event.customer_email,
            event.customer_name.clone(),
            &variant,
        );
        if let Err(e) = transport.send(&email).await {
            let released = match e {
                SendError::Rejected(_) => variant_transition(status, VariantAction::Bounce)
                    .unwrap_or(VariantStatus::Bounced),
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
        to: &str,
        to_name: Option<String>,
        variant: &VariantRecord,
    ) -> OutgoingEmail {
        let reply_to = access.project.support_email.clone();
        let unsubscribe_to = reply_to.clone().unwrap_or_else(|| self.sender_address());
        OutgoingEmail {
            from: self.email_from.clone(),
            to: to.to_owned(),
            to_name,
            reply_to,
            subject: variant.subject.clone(),
            html: compose::with_tracking(
                &variant.body,
                &self.tracking,
                &self.public_url,
                &variant.id,
            ),
            text: variant.body_text.clone(),
            list_unsubscribe: format!("<mailto:{unsubscribe_to}?subject=unsubscribe>"),
            message_id: format!("{}@churn", uuid::Uuid::new_v4()),
        }
    }
}

fn looks_like_html(body: &str) -> bool {
    let t = body.trim_start();
    t.starts_with('<') || t.contains("</") || t.contains("<br")
}
