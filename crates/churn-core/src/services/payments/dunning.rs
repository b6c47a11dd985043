//! Dunning: the retry steps of failing payments (jobs on the typed runtime, and manual
//! retries), the tone emails, the configuration, and the lists and statistics.
//!
//! A step tries the payment through the provider (A: `POST /v1/invoices/{id}/pay` with the
//! key `churn-<record>-<try>`, fresh for every try; custom: a signed POST to `retry_url`), or, for Razorpay and custom without a
//! `retry_url`, which retry on their own, only sends the next reminder. A success recovers
//! the record and the customer's churn events; a hard decline abandons it at once; a soft one
//! counts, and the one that reaches `max_retries` abandons it, as does one whose next retry
//! would fall outside the smart schedule's window (`domain::dunning::next_retry`); a timeout
//! or 5xx is an error, not counted, tried again after an hour. Settling is guarded by the attempt count the step
//! started from, so a job and a manual retry of the same attempt cannot both count.

use std::sync::Arc;

use serde_json::json;

use super::final_action::{final_job, parse_result};
use super::{Payments, Promotion};
use crate::api::payments::{
    DunningConfig, DunningEmail, PageVisit, PaymentAttempt, PaymentFailure, PaymentFailureDetail,
    PaymentFailureList, PaymentFailureQuery, PaymentFailureStats, RetryResult, UpdateDunningConfig,
};
use crate::domain::dunning::{
    DeclineClass, DunningFacts, ERROR_RETRY, LAST_CHANCE_MONTHS, LastChance, NextRetry, Tone,
    classify, next_retry, render, tone_at,
};
use crate::domain::expiry_notice::MAX_DAYS;
use crate::domain::provider::Provider;
use crate::domain::role::Permission;
use crate::domain::validation::{Validator, required_line};
use crate::email::OutgoingEmail;
use crate::error::{Error, Result};
use crate::jobs::JobRun;
use crate::jobs::kind::Job;
use crate::providers::CallError;
use crate::providers::stripe::PayOutcome;
use crate::services::access::ProjectAccess;
use crate::services::cache;
use crate::services::paging::Page;
use crate::store::payment_failures::{self as failures, FailureRecord, Settle};
use crate::store::{Tx, dunning, events, expiry_notices, projects};
use crate::time::{self, Timestamp};

const MAX_SENDER_NAME: usize = 100;

/// What one try of the payment came to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Succeeded,
    Failed {
        decline_code: Option<String>,
        hard: bool,
        error: Option<String>,
    },
    /// The provider did not answer usefully: not counted.
    Error(String),
}

/// A record a manual retry may still try: failing, with retries left.
fn retryable(status: &str, attempts: i64, max_retries: i64) -> bool {
    status == "failing" && attempts < max_retries
}

fn not_found() -> Error {
    Error::NotFound("payment failure not found".into())
}

/// Emits `event` about the payment failures `ids` as they now stand in `tx`.
pub(super) async fn emit_failures(
    tx: &mut Tx,
    project_id: &str,
    event: crate::domain::webhooks::EventType,
    ids: &[String],
    now: Timestamp,
) -> Result<()> {
    let mut items = Vec::with_capacity(ids.len());
    for id in ids {
        if let Some(record) = failures::get(&mut **tx, project_id, id).await? {
            items.push(serde_json::to_value(view(&record)).map_err(Error::internal)?);
        }
    }
    crate::services::webhooks::emit(tx, project_id, event, items, now).await
}

fn view(r: &FailureRecord) -> PaymentFailure {
    PaymentFailure {
        id: r.id.clone(),
        provider: r.provider,
        customer_email: r.customer_email.clone(),
        amount: r.amount,
        currency: r.currency.clone(),
        status: r.status.clone(),
        failure_reason: r.failure_reason.clone(),
        decline_code: r.decline_code.clone(),
        attempts: r.attempts,
        max_retries: r.max_retries,
        next_retry_at: r.next_retry_at,
        abandon_reason: r.abandon_reason.clone(),
        recovered_at: r.recovered_at,
        created_at: r.created_at,
    }
}

fn ts(raw: &str) -> Result<Timestamp> {
    crate::store::ts(raw)
}

/// The dunning work of a new record, each job with its time: the first tone's email now
/// (also after a hard decline, asking for another payment method; not when the window is
/// already closed), the first retry at `next_retry_at` while dunning runs, and the final
/// action of a record abandoned at once.
pub(super) fn first_jobs(
    record: &FailureRecord,
    config: &DunningConfig,
    now: Timestamp,
) -> Vec<(Job, Timestamp)> {
    if !config.enabled {
        return Vec::new();
    }
    let mut jobs = Vec::new();
    if record.abandon_reason.as_deref() != Some("window_closed") {
        let email = Job::DunningEmail {
            failure_id: record.id.clone(),
            tone: tone_at(&config.tone_sequence, 0),
        };
        jobs.push((email, now));
    }
    if let Some(at) = record.next_retry_at {
        jobs.push((retry_job(record, at), at));
    }
    if record.status == "abandoned"
        && let Some(job) = final_job(&record.id, config)
    {
        jobs.push((job, now));
    }
    jobs
}

impl Payments {
    /// Why a dunning-kind email of `project` cannot go now (`send_emails` off, no verified
    /// sender, email not configured), or its sender and the transport to hand it to.
    pub(super) async fn dunning_route(
        &self,
        project: &projects::ProjectRecord,
        send_emails: bool,
    ) -> Result<std::result::Result<DunningRoute, &'static str>> {
        if !send_emails {
            return Ok(Err("send_emails is off"));
        }
        let sender = self.sending.sender_for(project).await?;
        if !sender.verified {
            return Ok(Err("no verified sender domain"));
        }
        let Some(transport) = self.sending.mailer.transport.clone() else {
            return Ok(Err("email is not configured"));
        };
        Ok(Ok(DunningRoute { sender, transport }))
    }

    /// Hands a dunning-kind email (from the verified sender, with `sender_name` as display
    /// name; the HTML part is the text's paragraphs) to the relay once per job: a claim left
    /// by an earlier run means that run stopped after, or during, the hand-over and before
    /// its record, so the email is recorded as sent, unconfirmed, and never sent again.
    /// Answers the reason to record beside `sent` (`None` when sent now); `refused` is the
    /// error when the relay refuses it.
    pub(super) async fn send_once(
        &self,
        run: &JobRun,
        route: &DunningRoute,
        sender_name: &str,
        to: String,
        (subject, text): (String, String),
        refused: &'static str,
    ) -> Result<Option<&'static str>> {
        let message = dunning_message(&route.sender, sender_name, to, subject, text)?;
        if !run.claim_email(self.core.now()).await? {
            // The message id, not the address: customers' emails stay out of the logs.
            tracing::warn!(message_id = %message.message_id, "an email claimed by an earlier run that did not finish is not sent again");
            return Ok(Some(
                "unconfirmed: the process stopped while handing it over",
            ));
        }
        if let Err(e) =
            super::super::send_counted(&self.core, route.transport.as_ref(), "dunning", &message)
                .await
        {
            run.release_email().await?;
            return Err(Error::upstream(refused, e.to_string()));
        }
        Ok(None)
    }
}

/// Where a project's dunning-kind emails go: its verified sender and the email transport.
pub(super) struct DunningRoute {
    sender: crate::services::sender::Sender,
    transport: Arc<dyn crate::email::EmailTransport>,
}

fn dunning_message(
    sender: &crate::services::sender::Sender,
    sender_name: &str,
    to: String,
    subject: String,
    text: String,
) -> Result<OutgoingEmail> {
    let address = super::super::sender_address(&sender.from);
    let from = crate::email::mailbox(sender_name, &address)
        .map_err(|e| Error::internal(format!("sender {e}")))?;
    let html = crate::generation::html::paragraphs(&text);
    Ok(OutgoingEmail {
        from: from.to_string(),
        to,
        to_name: None,
        reply_to: sender.reply_to.clone(),
        subject,
        html,
        text,
        list_unsubscribe: format!("<mailto:{address}?subject=unsubscribe>"),
        message_id: format!("{}@churn", uuid::Uuid::new_v4()),
    })
}

fn retry_job(record: &FailureRecord, due: Timestamp) -> Job {
    Job::DunningRetry {
        failure_id: record.id.clone(),
        due: time::format(&due),
    }
}

impl Payments {
    pub async fn dunning_config(&self, access: &ProjectAccess) -> Result<DunningConfig> {
        access.authorize(Permission::Read)?;
        dunning::get(self.core.store.reader(), &access.project.id).await
    }

    pub async fn put_dunning_config(
        &self,
        access: &ProjectAccess,
        req: UpdateDunningConfig,
    ) -> Result<DunningConfig> {
        access.authorize(Permission::Administer)?;
        let mut config = dunning::get(self.core.store.reader(), &access.project.id).await?;
        let mut v = Validator::new();
        v.set_between(
            "max_retries",
            req.max_retries,
            0..=10,
            &mut config.max_retries,
        );
        v.set_between(
            "retry_interval_hours",
            req.retry_interval_hours,
            1..=720,
            &mut config.retry_interval_hours,
        );
        if let Some(tones) = req.tone_sequence {
            if (1..=10).contains(&tones.len()) {
                config.tone_sequence = tones;
            } else {
                v.add("tone_sequence", "must hold 1 to 10 tones");
            }
        }
        if let Some(name) = req
            .sender_name
            .and_then(|n| v.check("sender_name", required_line(&n, MAX_SENDER_NAME)))
        {
            config.sender_name = name;
        }
        if let Some(enabled) = req.enabled {
            config.enabled = enabled;
        }
        if let Some(send) = req.send_emails {
            config.send_emails = send;
        }
        if let Some(schedule) = req.schedule {
            config.schedule = schedule;
        }
        if let Some(action) = req.final_action {
            config.final_action = action;
        }
        v.set_between(
            "last_chance_discount",
            req.last_chance_discount,
            0..=90,
            &mut config.last_chance_discount,
        );
        if let Some(amount) = req.notify_team_min_amount {
            if amount >= 0 {
                config.notify_team_min_amount = amount;
            } else {
                v.add("notify_team_min_amount", "must be 0 or more");
            }
        }
        v.set_between(
            "expiry_notice_days",
            req.expiry_notice_days,
            0..=MAX_DAYS,
            &mut config.expiry_notice_days,
        );
        v.finish()?;
        let mut tx = self.core.store.begin().await?;
        dunning::put(&mut *tx, &access.project.id, &config, self.core.now()).await?;
        self.core.commit_access_change(tx).await?;
        Ok(config)
    }

    /// The project's dunning configuration, for inbound events (`cache`).
    pub(super) async fn cached_dunning_config(
        &self,
        project_id: &str,
    ) -> Result<Arc<DunningConfig>> {
        let key = cache::Key::Dunning(project_id.to_owned());
        if let Some(cache::Value::Dunning(config)) = self.core.cached(&key).await? {
            return Ok(config);
        }
        let epoch = self.core.cache.epoch();
        let config = Arc::new(dunning::get(self.core.store.reader(), project_id).await?);
        let value = cache::Value::Dunning(config.clone());
        self.core.cache.insert(key, value, epoch);
        Ok(config)
    }

    pub async fn list_failures(
        &self,
        access: &ProjectAccess,
        q: PaymentFailureQuery,
    ) -> Result<PaymentFailureList> {
        access.authorize(Permission::Read)?;
        let mut v = Validator::new();
        let page = Page::check(&mut v, q.page, q.per_page);
        if let Some(s) = &q.status
            && !["failing", "recovered", "abandoned"].contains(&s.as_str())
        {
            v.add("status", "must be failing, recovered or abandoned");
        }
        v.finish()?;
        let db = self.core.store.reader();
        let totals = failures::totals(db, &access.project.id).await?;
        let total = totals
            .iter()
            .filter(|(status, ..)| q.status.as_deref().is_none_or(|s| s == status))
            .map(|(_, _, n, _)| *n)
            .sum::<i64>();
        let rows = failures::list(
            db,
            &access.project.id,
            q.status.as_deref(),
            page.per_page,
            page.offset(),
        )
        .await?;
        Ok(PaymentFailureList {
            failures: rows.iter().map(view).collect(),
            total: total.max(0) as u64,
        })
    }

    /// A customer's payment failures (by email), newest first, at most 100: the customer's
    /// page in the dashboard.
    pub async fn customer_failures(
        &self,
        access: &ProjectAccess,
        email: &str,
    ) -> Result<Vec<PaymentFailure>> {
        access.authorize(Permission::Read)?;
        let email = email.trim().to_lowercase();
        let rows = failures::of_customer(self.core.store.reader(), &access.project.id, &email, 100)
            .await?;
        Ok(rows.iter().map(view).collect())
    }

    pub async fn failure_stats(&self, access: &ProjectAccess) -> Result<PaymentFailureStats> {
        access.authorize(Permission::Read)?;
        let totals = failures::totals(self.core.store.reader(), &access.project.id).await?;
        let count = |status: &str| -> i64 {
            totals
                .iter()
                .filter(|(s, ..)| s == status)
                .map(|(_, _, n, _)| n)
                .sum()
        };
        // The most common currency (ties: alphabetical), and the recovered sum in it.
        let mut by_currency: std::collections::BTreeMap<&str, i64> = Default::default();
        for (_, currency, n, _) in &totals {
            *by_currency.entry(currency).or_default() += n;
        }
        let currency = by_currency
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .map_or("usd", |(c, _)| c)
            .to_owned();
        let (recovered, abandoned) = (count("recovered"), count("abandoned"));
        Ok(PaymentFailureStats {
            total_failures: totals.iter().map(|(_, _, n, _)| n).sum(),
            recovered,
            abandoned,
            active: count("failing"),
            recovery_rate: if recovered + abandoned == 0 {
                0.0
            } else {
                recovered as f64 / (recovered + abandoned) as f64
            },
            revenue_recovered: totals
                .iter()
                .filter(|(s, c, ..)| s == "recovered" && *c == currency)
                .fold(0i64, |total, (.., sum)| total.saturating_add(*sum)),
            currency,
        })
    }

    pub async fn failure(&self, access: &ProjectAccess, id: &str) -> Result<PaymentFailureDetail> {
        access.authorize(Permission::Read)?;
        let record = failures::get(self.core.store.reader(), &access.project.id, id)
            .await?
            .ok_or_else(not_found)?;
        self.detail(&record).await
    }

    async fn detail(&self, r: &FailureRecord) -> Result<PaymentFailureDetail> {
        let db = self.core.store.reader();
        let mut attempt_history = Vec::new();
        for (at, outcome, decline_code, error) in failures::attempts(db, &r.id).await? {
            attempt_history.push(PaymentAttempt {
                at: ts(&at)?,
                outcome,
                decline_code,
                error,
            });
        }
        let mut emails = Vec::new();
        for (at, tone, status, reason) in failures::emails(db, &r.id).await? {
            emails.push(DunningEmail {
                at: ts(&at)?,
                tone: Tone::parse(&tone).unwrap_or(Tone::Friendly),
                status,
                reason,
            });
        }
        let mut page_visits = Vec::new();
        for (at, via) in failures::visits(db, &r.id).await? {
            page_visits.push(PageVisit { at: ts(&at)?, via });
        }
        Ok(PaymentFailureDetail {
            failure: view(r),
            provider_invoice_id: r.provider_invoice_id.clone(),
            provider_payment_id: r.provider_payment_id.clone(),
            provider_customer_id: r.provider_customer_id.clone(),
            attempt_history,
            emails,
            final_action_result: failures::final_action_result(db, &r.id)
                .await?
                .as_deref()
                .map(parse_result)
                .transpose()?,
            page_visits,
        })
    }

    /// Whether churn retries this provider's payments by calling it (Stripe; custom with a
    /// retry URL); the others retry on their own.
    async fn calls_to_retry(&self, project_id: &str, provider: Provider) -> Result<bool> {
        let connection = self.connection(project_id, provider).await?;
        Ok(match (provider, &connection) {
            (Provider::Stripe, Some(_)) => true,
            (Provider::Custom, Some(c)) => c.record.retry_url.is_some(),
            _ => false,
        })
    }

    /// Whether [`retry_now`](Self::retry_now) would try the payment for this caller now: the
    /// dashboard shows its button only then.
    pub async fn can_retry_now(
        &self,
        access: &ProjectAccess,
        failure: &PaymentFailure,
    ) -> Result<bool> {
        Ok(access.authorize(Permission::Write).is_ok()
            && retryable(&failure.status, failure.attempts, failure.max_retries)
            && self
                .calls_to_retry(&access.project.id, failure.provider)
                .await?)
    }

    /// `POST …/payment-failures/:id/retry`: one attempt now, counted like a scheduled one.
    pub async fn retry_now(&self, access: &ProjectAccess, id: &str) -> Result<RetryResult> {
        access.authorize(Permission::Write)?;
        let record = failures::get(self.core.store.reader(), &access.project.id, id)
            .await?
            .ok_or_else(not_found)?;
        self.retry_record(&record).await
    }

    /// One attempt now, counted like a scheduled one: a manual retry, or the retry after the
    /// customer updated their card (`card_update`). 409 when the record is not failing or
    /// its retries are used up, 400 for a provider that retries itself, 502 on its error.
    pub(super) async fn retry_record(&self, record: &FailureRecord) -> Result<RetryResult> {
        if !retryable(&record.status, record.attempts, record.max_retries) {
            return Err(Error::Conflict(
                "this payment is not failing, or its retries are used up".into(),
            ));
        }
        if !self
            .calls_to_retry(&record.project_id, record.provider)
            .await?
        {
            return Err(Error::validation("this provider retries payments itself"));
        }
        let (at, outcome) = self.step(record).await?;
        let (label, decline_code, error) = match outcome {
            Outcome::Succeeded => ("succeeded", None, None),
            Outcome::Failed {
                decline_code,
                error,
                ..
            } => ("failed", decline_code, error),
            Outcome::Error(e) => return Err(Error::upstream("the payment provider failed", e)),
        };
        let record = failures::get(self.core.store.reader(), &record.project_id, &record.id)
            .await?
            .ok_or_else(not_found)?;
        Ok(RetryResult {
            record: self.detail(&record).await?,
            last_attempt: PaymentAttempt {
                at,
                outcome: label.into(),
                decline_code,
                error,
            },
        })
    }

    /// The scheduled step of a record (job `dunning_retry`); a step whose due time no longer
    /// matches the record's (moved by a manual retry or already settled) does nothing.
    pub(crate) async fn run_scheduled_retry(&self, failure_id: &str, due: &str) -> Result<()> {
        let Some(record) = failures::by_id(self.core.store.reader(), failure_id).await? else {
            return Ok(());
        };
        if record.status != "failing"
            || record.next_retry_at.map(|t| time::format(&t)).as_deref() != Some(due)
        {
            return Ok(());
        }
        self.step(&record).await.map(|_| ())
    }

    /// Tries the payment and settles the outcome; answers when and how it went.
    async fn step(&self, record: &FailureRecord) -> Result<(Timestamp, Outcome)> {
        // Every try gets its own number (errors included): the provider replays a stored
        // answer, a 500 included, to a repeated key, while two callers of the same try share
        // one.
        let attempt = failures::attempts(self.core.store.reader(), &record.id)
            .await?
            .len() as i64
            + 1;
        let connection = self.connection(&record.project_id, record.provider).await?;
        let outcome = match (&connection, record.provider) {
            (Some(c), Provider::Stripe) => match (self.stripe(c), &record.provider_invoice_id) {
                (Some(a), Some(invoice)) => {
                    let key = format!("churn-{}-{attempt}", record.id);
                    match a.pay_invoice(invoice, &key).await {
                        Ok(PayOutcome::Paid | PayOutcome::AlreadyPaid) => Outcome::Succeeded,
                        Ok(PayOutcome::NotPaid { status }) => Outcome::Failed {
                            decline_code: None,
                            hard: false,
                            error: Some(format!("the invoice is {status}")),
                        },
                        Err(CallError::Declined(e)) => Outcome::Failed {
                            hard: classify(
                                e.decline_code.as_deref(),
                                e.advice_code.as_deref(),
                                e.code.as_deref(),
                            ) == DeclineClass::Hard,
                            decline_code: e.decline_code.or(e.code),
                            error: None,
                        },
                        Err(CallError::Refused { status, error }) => Outcome::Failed {
                            decline_code: error.decline_code.or(error.code),
                            hard: false,
                            error: Some(format!(
                                "refused ({status}): {}",
                                error.message.unwrap_or_default()
                            )),
                        },
                        Err(CallError::Unavailable(e)) => Outcome::Error(e),
                    }
                }
                _ => {
                    Outcome::Error("the connection has no API key or the record no invoice".into())
                }
            },
            (Some(c), Provider::Custom) if c.record.retry_url.is_some() => {
                self.custom_retry(c, record, attempt).await?
            }
            // Razorpay and custom without retry_url retry on their own: a reminder only.
            _ => Outcome::Failed {
                decline_code: None,
                hard: false,
                error: None,
            },
        };
        let now = self.core.now();
        self.settle(record, &outcome, now).await?;
        Ok((now, outcome))
    }

    async fn custom_retry(
        &self,
        connection: &super::Connection,
        record: &FailureRecord,
        attempt: i64,
    ) -> Result<Outcome> {
        let project = projects::by_id(self.core.store.reader(), &record.project_id)
            .await?
            .ok_or_else(not_found)?;
        let body = json!({
            "payment_failure_id": record.id,
            "customer_email": record.customer_email,
            "amount": record.amount,
            "currency": record.currency,
            "payment_id": record.provider_payment_id,
            "attempt": attempt,
        })
        .to_string();
        let url = connection.record.retry_url.as_deref().unwrap_or_default();
        let secrets = self.core.webhook_secrets(&project)?;
        let answer = self
            .outbound
            .tenant()
            .for_purpose("payment_retry")
            .post(url)
            .signed_json(
                &secrets,
                &format!("{}-{attempt}", record.id),
                self.core.now().timestamp(),
                body.into_bytes(),
            )?
            .timeout(crate::providers::CALL_TIMEOUT)
            .send()
            .await;
        #[derive(serde::Deserialize)]
        struct Answer {
            outcome: String,
            decline_code: Option<String>,
        }
        Ok(match answer.map(|r| r.json::<Answer>()) {
            Ok(Ok(a)) if a.outcome == "succeeded" => Outcome::Succeeded,
            Ok(Ok(a)) if a.outcome == "failed" => Outcome::Failed {
                hard: classify(a.decline_code.as_deref(), None, None) == DeclineClass::Hard,
                decline_code: a.decline_code,
                error: None,
            },
            Ok(Ok(a)) => Outcome::Error(format!("unknown outcome {:?}", a.outcome)),
            Ok(Err(e)) | Err(e) => Outcome::Error(e.to_string()),
        })
    }

    async fn settle(
        &self,
        record: &FailureRecord,
        outcome: &Outcome,
        now: Timestamp,
    ) -> Result<()> {
        let config = dunning::get(self.core.store.reader(), &record.project_id).await?;
        let mut tx = self.core.store.begin().await?;
        let (label, decline_code, error) = match outcome {
            Outcome::Succeeded => ("succeeded", None, None),
            Outcome::Failed {
                decline_code,
                error,
                ..
            } => ("failed", decline_code.as_deref(), error.as_deref()),
            Outcome::Error(e) => ("error", None, Some(e.as_str())),
        };
        failures::log_attempt(&mut *tx, &record.id, now, label, decline_code, error).await?;
        let counted = record.attempts + 1;
        let max = config.max_retries;
        let next = next_retry(
            config.schedule,
            config.retry_interval_hours,
            decline_code,
            record.created_at,
            now,
        );
        let (settle, next_email) = match outcome {
            Outcome::Succeeded => (
                Settle {
                    status: "recovered",
                    attempts: counted,
                    max_retries: max,
                    next_retry_at: None,
                    abandon_reason: None,
                    recovered_at: Some(now),
                    decline_code: None,
                },
                None,
            ),
            Outcome::Failed { hard: true, .. } => (
                Settle {
                    status: "abandoned",
                    attempts: counted,
                    max_retries: max,
                    next_retry_at: None,
                    abandon_reason: Some("hard_decline"),
                    recovered_at: None,
                    decline_code,
                },
                None,
            ),
            Outcome::Failed { .. } if counted >= max => (
                Settle {
                    status: "abandoned",
                    attempts: counted,
                    max_retries: max,
                    next_retry_at: None,
                    abandon_reason: Some("retries_exhausted"),
                    recovered_at: None,
                    decline_code,
                },
                None,
            ),
            Outcome::Failed { .. } if next == NextRetry::WindowClosed => (
                Settle {
                    status: "abandoned",
                    attempts: counted,
                    max_retries: max,
                    next_retry_at: None,
                    abandon_reason: Some("window_closed"),
                    recovered_at: None,
                    decline_code,
                },
                None,
            ),
            Outcome::Failed { .. } => (
                Settle {
                    status: "failing",
                    attempts: counted,
                    max_retries: max,
                    next_retry_at: match next {
                        NextRetry::At(at) if config.enabled => Some(at),
                        _ => None,
                    },
                    abandon_reason: None,
                    recovered_at: None,
                    decline_code,
                },
                Some(tone_at(&config.tone_sequence, counted as usize)),
            ),
            Outcome::Error(_) => (
                Settle {
                    status: "failing",
                    attempts: record.attempts,
                    max_retries: max,
                    next_retry_at: Some(now + ERROR_RETRY),
                    abandon_reason: None,
                    recovered_at: None,
                    decline_code: None,
                },
                None,
            ),
        };
        if !failures::settle(&mut *tx, record, &settle, now).await? {
            // Settled meanwhile by another step of the same attempt.
            return Ok(());
        }
        let reported = match settle.status {
            "recovered" => Some(crate::domain::webhooks::EventType::PaymentFailureRecovered),
            "abandoned" => Some(crate::domain::webhooks::EventType::PaymentFailureAbandoned),
            _ => None,
        };
        if let Some(event) = reported {
            let ids = [record.id.clone()];
            emit_failures(&mut tx, &record.project_id, event, &ids, now).await?;
        }
        if let Some(at) = settle.next_retry_at {
            retry_job(record, at).enqueue(&mut tx, at, now).await?;
        }
        if settle.status == "abandoned"
            && let Some(job) = final_job(&record.id, &config)
        {
            job.enqueue(&mut tx, now, now).await?;
        }
        if let (Some(tone), true) = (next_email, config.enabled) {
            Job::DunningEmail {
                failure_id: record.id.clone(),
                tone,
            }
            .enqueue(&mut tx, now, now)
            .await?;
        }
        if matches!(outcome, Outcome::Succeeded) {
            expiry_notices::cancel_pending(
                &mut *tx,
                &record.project_id,
                &record.customer_email,
                "a payment succeeded",
                now,
            )
            .await?;
            let ids = events::recover_for_customer(
                &mut *tx,
                &record.project_id,
                &record.customer_email,
                "payment",
                now,
            )
            .await?;
            crate::services::webhooks::emit_churn_events(
                &mut tx,
                &record.project_id,
                crate::domain::webhooks::EventType::ChurnEventRecovered,
                &ids,
                now,
            )
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The last-chance offer of a final email, its code made at Stripe first: only for a
    /// Stripe record with a customer id, while Stripe is connected; a provider error fails
    /// the email (tried again with the same keys, so no second coupon).
    async fn last_chance(
        &self,
        record: &FailureRecord,
        config: &DunningConfig,
        tone: Tone,
    ) -> Result<Option<LastChance>> {
        let percent = config.last_chance_discount;
        let customer = match (&record.provider_customer_id, record.provider) {
            (Some(customer), Provider::Stripe) if tone == Tone::Final && percent > 0 => customer,
            _ => return Ok(None),
        };
        let offer = LastChance::of(&record.id, percent);
        let promotion = Promotion {
            project_id: record.project_id.clone(),
            scope: format!("failure-{}-{percent}", record.id),
            code: offer.code.clone(),
            percent_off: percent,
            months: LAST_CHANCE_MONTHS,
            customer_id: Some(customer.clone()),
        };
        match self.issue(&promotion).await {
            Ok(()) => Ok(Some(offer)),
            // Stripe disconnected: the email goes out without an offer.
            Err(Error::Conflict(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// A record with its project, for the jobs that email about it; `None` when either is
    /// gone (the job then has nothing to do).
    pub(super) async fn record_with_project(
        &self,
        failure_id: &str,
    ) -> Result<Option<(FailureRecord, projects::ProjectRecord)>> {
        let db = self.core.store.reader();
        let Some(record) = failures::by_id(db, failure_id).await? else {
            return Ok(None);
        };
        Ok(projects::by_id(db, &record.project_id)
            .await?
            .map(|project| (record, project)))
    }

    /// Job `dunning_email`: the tone's email from the verified sender, or a logged skip.
    pub(crate) async fn send_dunning_email(
        &self,
        failure_id: &str,
        tone: Tone,
        run: &JobRun,
    ) -> Result<()> {
        let db = self.core.store.reader();
        let Some((record, project)) = self.record_with_project(failure_id).await? else {
            return Ok(());
        };
        let config = dunning::get(db, &project.id).await?;
        let now = self.core.now();
        let id = record.id.as_str();
        let skip = |reason: &'static str| async move {
            tracing::info!(failure = %id, tone = tone.as_str(), reason, "dunning email skipped");
            self.core
                .metrics
                .email("dunning", crate::metrics::EmailOutcome::Skipped);
            failures::log_email(
                self.core.store.writer(),
                id,
                now,
                tone.as_str(),
                "skipped",
                Some(reason),
            )
            .await
        };
        let route = match self.dunning_route(&project, config.send_emails).await? {
            Ok(route) => route,
            Err(reason) => return skip(reason).await,
        };
        let offer = self.last_chance(&record, &config, tone).await?;
        // The button goes to the card-update page; `via=email` marks the visits it brings.
        let update_url = format!("{}?via=email", self.card_update_url(&record.id));
        let (subject, text) = render(
            tone,
            &DunningFacts {
                amount: record.amount,
                currency: &record.currency,
                decline_code: record.decline_code.as_deref(),
                update_url: &update_url,
                sender_name: &config.sender_name,
                offer: offer.as_ref(),
            },
        );
        let reason = self
            .send_once(
                run,
                &route,
                &config.sender_name,
                record.customer_email.clone(),
                (subject, text),
                "the email server did not accept the dunning email",
            )
            .await?;
        // The record and the job's end commit together, so a restart cannot send it again.
        let mut tx = self.core.store.begin().await?;
        failures::log_email(&mut *tx, id, now, tone.as_str(), "sent", reason).await?;
        run.complete(tx).await
    }
}
