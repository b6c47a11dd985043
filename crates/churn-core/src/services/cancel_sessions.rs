//! Cancel-flow sessions and their funnel (decisions §19). A verified widget open starts a
//! session ([`Local::open_session`], in the configuration's transaction); the widget reports
//! the reason chosen ([`Payments::session_reason`], which also says whether that reason's
//! offer is shown) and the submission ends it (`Local::end_session`, in the submission's
//! transaction). Moves follow `domain::cancel_session::transition`; a session is found only
//! in the caller's project and only for the customer it opened for, so another project's id
//! or a forged one is 404 and moves nothing.

use super::analytics::in_range;
use super::paging::Page;
use super::{Local, Payments};
use crate::api::Meta;
use crate::api::analytics::{CancelFlowFunnel, FunnelFlow, FunnelOffer, FunnelQuery, FunnelReason};
use crate::api::cancel_flow::{
    CancelFlowSession, CancelReasonSubmission, SessionQuery, SessionReason, WidgetFlow,
};
use crate::domain::analytics::recovery_rate;
use crate::domain::cancel_flow::{Offer, OfferKind};
use crate::domain::cancel_session::{self, ABANDONED_AFTER, SessionStatus};
use crate::domain::email::Email;
use crate::domain::role::Permission;
use crate::domain::validation::Validator;
use crate::error::{Error, Result};
use crate::ids::new_id;
use crate::store::Writes;
use crate::store::cancel_sessions::{self as store, SessionRecord, Step};
use crate::store::events::EventRecord;
use crate::time::Timestamp;

use super::access::ProjectAccess;

const DEFAULT_DAYS: i64 = 30;
const MAX_DAYS: i64 = 365;

impl Local {
    /// Starts a session for a verified customer shown `flow`; its id goes to the widget.
    pub(super) async fn open_session<'e>(
        &self,
        db: impl Writes<'e>,
        project_id: &str,
        customer: &Email,
        flow: &WidgetFlow,
        now: Timestamp,
    ) -> Result<String> {
        let record = SessionRecord {
            id: new_id(),
            project_id: project_id.to_owned(),
            customer_email: customer.as_str().to_owned(),
            flow_id: flow.flow_id.clone(),
            variant: flow.variant.clone(),
            reason: None,
            offer_kind: None,
            status: SessionStatus::Opened,
            churn_event_id: None,
            opened_at: now,
            ended_at: None,
        };
        store::insert(db, &record).await?;
        Ok(record.id)
    }

    /// The project's session `id` opened for `customer_email`: 404 for another project's,
    /// another customer's or a forged one.
    pub(super) async fn session_for(
        &self,
        project_id: &str,
        id: &str,
        customer_email: &str,
    ) -> Result<SessionRecord> {
        let customer = Email::parse(customer_email).ok();
        store::get(self.store.reader(), project_id, id)
            .await?
            .filter(|s| customer.is_some_and(|c| c.as_str() == s.customer_email))
            .ok_or_else(session_not_found)
    }

    /// Ends `session` with the outcome of a submission recorded as `event` (its reason, when
    /// it was made), in the submission's transaction. A session that can no longer move
    /// (ended, or abandoned since) keeps its status: the cancellation itself is recorded all
    /// the same.
    pub(super) async fn end_session<'e>(
        &self,
        db: impl Writes<'e>,
        session: &SessionRecord,
        event: &EventRecord,
        offer: Option<&Offer>,
        saved: bool,
    ) -> Result<()> {
        let now = event.created_at;
        let to = if saved {
            SessionStatus::Saved
        } else {
            SessionStatus::Cancelled
        };
        if let Err(guard) = cancel_session::transition(session.status, session.opened_at, now, to) {
            tracing::info!(session_id = %session.id, %guard, "the submission leaves its session as it is");
            return Ok(());
        }
        let offer_kind = shown_kind(offer);
        let step = Step {
            from: session.status,
            to,
            reason: Some(&event.reason_code),
            offer_kind: offer_kind.as_deref(),
            churn_event_id: Some(&event.id),
            ended_at: Some(now),
        };
        if !store::advance(db, &session.project_id, &session.id, &step).await? {
            tracing::info!(session_id = %session.id, "the session moved meanwhile; left as it is");
        }
        Ok(())
    }

    /// `GET /projects/:slug/cancel-flow/sessions`: newest first, each with its status as it
    /// reads now; `status` filters by it (400 for a name that is none).
    pub async fn cancel_flow_sessions(
        &self,
        access: &ProjectAccess,
        q: SessionQuery,
    ) -> Result<(Vec<CancelFlowSession>, Meta)> {
        access.authorize(Permission::Read)?;
        let mut v = Validator::new();
        let page = Page::check(&mut v, q.page, q.per_page);
        let status = q.status.as_deref().and_then(|s| {
            v.check(
                "status",
                SessionStatus::parse(s).ok_or(
                    "must be one of opened, reason, offer_shown, saved, cancelled, abandoned",
                ),
            )
        });
        v.finish()?;
        let db = self.store.reader();
        let project_id = &access.project.id;
        let cutoff = self.now() - ABANDONED_AFTER;
        let total = store::count(db, project_id, status, cutoff).await?;
        let offset = page.offset();
        let items = store::list(db, project_id, status, cutoff, page.per_page, offset)
            .await?
            .into_iter()
            .map(session_view)
            .collect();
        Ok((items, page.meta(total)))
    }

    /// `GET /projects/:slug/analytics/cancel-flow`: the funnel of the sessions opened in the
    /// last `days` days (default 30), read now.
    pub async fn cancel_flow_funnel(
        &self,
        access: &ProjectAccess,
        q: FunnelQuery,
    ) -> Result<CancelFlowFunnel> {
        access.authorize(Permission::Read)?;
        let days = in_range("days", q.days, DEFAULT_DAYS, MAX_DAYS)?;
        let now = self.now();
        let since = now - chrono::Duration::days(days);
        let db = self.store.reader();
        let project_id = &access.project.id;
        let (counts, reasons, offers, flows) = futures::try_join!(
            store::funnel(db, project_id, now - ABANDONED_AFTER, since),
            store::reasons(db, project_id, since),
            store::offers(db, project_id, since),
            store::flows(db, project_id, since),
        )?;
        let n = |x: i64| u64::try_from(x).unwrap_or(0);
        // The rates are the analytics' rates (two decimals, 0 when nothing is counted): a save
        // rate is `saved / (saved + cancelled)`, an accept rate `accepted / shown`.
        Ok(CancelFlowFunnel {
            sessions: n(counts.sessions),
            reason_chosen: n(counts.reason_chosen),
            offer_shown: n(counts.offer_shown),
            saved: n(counts.saved),
            cancelled: n(counts.cancelled),
            abandoned: n(counts.abandoned),
            save_rate: recovery_rate(n(counts.saved), n(counts.cancelled)),
            reasons: reasons
                .into_iter()
                .map(|(code, count, mrr_cents)| FunnelReason {
                    code,
                    count: n(count),
                    mrr_cents,
                })
                .collect(),
            offers: offers
                .into_iter()
                .map(|(kind, shown, accepted)| FunnelOffer {
                    kind,
                    shown: n(shown),
                    accepted: n(accepted),
                    accept_rate: recovery_rate(n(accepted), n(shown - accepted)),
                })
                .collect(),
            flows: flows
                .into_iter()
                .map(|f| FunnelFlow {
                    save_rate: recovery_rate(n(f.saved), n(f.cancelled)),
                    flow_id: f.flow_id,
                    variant: f.variant,
                    sessions: n(f.sessions),
                    saved: n(f.saved),
                    cancelled: n(f.cancelled),
                })
                .collect(),
        })
    }
}

impl Payments {
    /// `POST /cancel-flow/sessions/:id/reason` (decisions §19): the customer of the session
    /// (checked by `customer_hash`, as a submission is) chose `reason`. The facts route the
    /// flow again, as a submission does; when the reason has an offer the widget shows it
    /// and the session moves on to `offer_shown`, else it rests at `reason`. 404 for a
    /// session not the customer's in this project, 409 once it has ended or gone past.
    pub async fn session_reason(
        &self,
        access: &ProjectAccess,
        id: &str,
        req: SessionReason,
    ) -> Result<CancelFlowSession> {
        access.authorize(Permission::CancelFlow)?;
        self.check_customer_hash(
            &access.project.id,
            &req.customer_email,
            req.provider_subscription_id.as_deref(),
            req.customer_hash.as_deref(),
        )
        .await?;
        let session = self
            .core
            .session_for(&access.project.id, id, &req.customer_email)
            .await?;
        let checked = self
            .core
            .check_cancel_reason(
                access,
                CancelReasonSubmission {
                    customer_email: req.customer_email,
                    reason: req.reason,
                    plan_name: req.plan_name,
                    mrr: req.mrr,
                    tenure_days: req.tenure_days,
                    billing_interval: req.billing_interval,
                    properties: req.properties,
                    provider_subscription_id: req.provider_subscription_id,
                    ..CancelReasonSubmission::default()
                },
            )
            .await?;
        let offer_kind = shown_kind(checked.offer.as_ref());
        let to = if offer_kind.is_some() {
            SessionStatus::OfferShown
        } else {
            SessionStatus::Reason
        };
        let now = self.core.now();
        cancel_session::transition(session.status, session.opened_at, now, to)
            .map_err(|e| Error::Conflict(e.to_string()))?;
        let step = Step {
            from: session.status,
            to,
            reason: Some(&checked.record.reason_code),
            offer_kind: offer_kind.as_deref(),
            churn_event_id: None,
            ended_at: None,
        };
        let writer = self.core.store.writer();
        if !store::advance(writer, &access.project.id, id, &step).await? {
            return Err(Error::Conflict(
                "the cancel-flow session moved meanwhile".into(),
            ));
        }
        Ok(session_view(SessionRecord {
            status: to,
            reason: Some(checked.record.reason_code),
            offer_kind: offer_kind.or(session.offer_kind),
            ..session
        }))
    }
}

/// The wire name of the kind of `offer` when the widget shows it (a `none` offer is not).
fn shown_kind(offer: Option<&Offer>) -> Option<String> {
    offer
        .map(Offer::kind)
        .filter(|k| *k != OfferKind::None)
        .and_then(|k| serde_json::to_value(k).ok())
        .and_then(|v| v.as_str().map(str::to_owned))
}

fn session_not_found() -> Error {
    Error::NotFound("cancel-flow session not found".into())
}

fn session_view(r: SessionRecord) -> CancelFlowSession {
    CancelFlowSession {
        id: r.id,
        customer_email: r.customer_email,
        flow_id: r.flow_id,
        variant: r.variant,
        reason: r.reason,
        offer_kind: r.offer_kind,
        status: r.status,
        opened_at: r.opened_at,
        ended_at: r.ended_at,
    }
}
