//! `churn payments …`: a project's failed payments and a manual retry, through the same
//! payments service as the HTTP API, with its owner's rights.

use std::io::Write;

use churn_core::api::payments::{PaymentFailureDetail, PaymentFailureQuery, RetryResult};
use churn_core::config::Config;
use churn_core::error::Error;
use churn_core::services::operator::{AsOwner, Operator};
use churn_core::time;
use clap::Subcommand;

use crate::{money, table, write_json};

#[derive(Debug, Subcommand)]
pub enum PaymentsCommand {
    /// A project's failed payments, newest first.
    List {
        /// Project slug or id.
        #[arg(long)]
        project: String,
        /// Only payments in this status.
        #[arg(long, value_parser = ["failing", "recovered", "abandoned"])]
        status: Option<String>,
        /// At most this many payments.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(i64).range(1..=100))]
        limit: i64,
    },
    /// One failed payment and its timeline: attempts, emails, card-update page visits and
    /// how it ended.
    Show {
        /// The payment failure's id.
        id: String,
    },
    /// Retry a failing payment now through its provider; it counts toward max_retries, as
    /// the dashboard's retry does.
    Retry {
        /// The payment failure's id.
        id: String,
    },
}

pub async fn payments(
    command: PaymentsCommand,
    operator: &Operator,
    config: &Config,
    json: bool,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    match command {
        PaymentsCommand::List {
            project,
            status,
            limit,
        } => {
            let view = operator.as_owner(&project).await?;
            let list = operator
                .payments(config)
                .await?
                .list_failures(
                    &view.access,
                    PaymentFailureQuery {
                        status,
                        page: Some(1),
                        per_page: Some(limit),
                    },
                )
                .await?;
            if json {
                return write_json(out, &list);
            }
            let mut t = table(&[
                "id",
                "customer",
                "provider",
                "amount",
                "status",
                "attempts",
                "next retry",
                "decline",
                "created",
            ]);
            for f in &list.failures {
                t.add_row(vec![
                    f.id.clone(),
                    f.customer_email.clone(),
                    f.provider.as_str().to_owned(),
                    format!("{} {}", money(f.amount), f.currency.to_uppercase()),
                    match &f.abandon_reason {
                        Some(reason) => format!("{} ({reason})", f.status),
                        None => f.status.clone(),
                    },
                    format!("{}/{}", f.attempts, f.max_retries),
                    f.next_retry_at
                        .as_ref()
                        .map_or_else(|| "-".into(), time::format),
                    f.decline_code.clone().unwrap_or_else(|| "-".into()),
                    time::format(&f.created_at),
                ]);
            }
            writeln!(out, "{t}")?;
            writeln!(
                out,
                "{} of {} payment failures in {}",
                list.failures.len(),
                list.total,
                view.access.project.slug
            )?;
        }
        PaymentsCommand::Show { id } => {
            let view = failure_owner(operator, &id).await?;
            let detail = operator
                .payments(config)
                .await?
                .failure(&view.access, &id)
                .await?;
            if json {
                write_json(out, &detail)?;
            } else {
                write_detail(&detail, out)?;
            }
        }
        PaymentsCommand::Retry { id } => {
            let view = failure_owner(operator, &id).await?;
            let result = operator
                .payments(config)
                .await?
                .retry_now(&view.access, &id)
                .await
                .map_err(|e| retry_error(&id, e))?;
            if json {
                write_json(out, &result)?;
            } else {
                write_outcome(&result, out)?;
            }
        }
    }
    Ok(())
}

/// The owner's view of the project a payment failure belongs to.
async fn failure_owner(operator: &Operator, id: &str) -> anyhow::Result<AsOwner> {
    let project = operator.payment_failure_project(id).await?;
    Ok(operator.as_owner(&project).await?)
}

/// The errors the route answers with 409, 400 and 502, said for an operator.
fn retry_error(id: &str, e: Error) -> anyhow::Error {
    match e {
        Error::Conflict(_) => anyhow::anyhow!(
            "payment failure {id} cannot be retried: it is no longer failing, or its retries are \
             used up (see `churn payments list`)"
        ),
        Error::Validation { .. } => anyhow::anyhow!(
            "payment failure {id} cannot be retried from churn: its provider retries payments \
             itself (Razorpay, or custom without a retry_url)"
        ),
        Error::Upstream { source, .. } => anyhow::anyhow!(
            "the payment provider failed ({source}); the attempt was not counted, try again later"
        ),
        other => other.into(),
    }
}

fn write_detail(d: &PaymentFailureDetail, out: &mut impl Write) -> anyhow::Result<()> {
    let f = &d.failure;
    let status = match &f.abandon_reason {
        Some(reason) => format!("{} ({reason})", f.status),
        None => f.status.clone(),
    };
    writeln!(
        out,
        "{} of {} {} by {} through {}: {status}, attempt {} of {}",
        f.id,
        money(f.amount),
        f.currency.to_uppercase(),
        f.customer_email,
        f.provider.as_str(),
        f.attempts,
        f.max_retries
    )?;
    if let Some(at) = &f.next_retry_at {
        writeln!(out, "next retry {}", time::format(at))?;
    }
    let mut t = table(&["when", "what"]);
    for line in d.timeline() {
        t.add_row(vec![time::format(&line.at), line.what]);
    }
    writeln!(out, "{t}")?;
    Ok(())
}

fn write_outcome(r: &RetryResult, out: &mut impl Write) -> anyhow::Result<()> {
    let f = &r.record.failure;
    let a = &r.last_attempt;
    let detail = [a.decline_code.as_deref(), a.error.as_deref()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(": ");
    writeln!(
        out,
        "retry of {} ({} {}, {}): {}{}",
        f.id,
        money(f.amount),
        f.currency.to_uppercase(),
        f.customer_email,
        a.outcome,
        if detail.is_empty() {
            String::new()
        } else {
            format!(" ({detail})")
        }
    )?;
    let reason = f
        .abandon_reason
        .as_ref()
        .map(|r| format!(" ({r})"))
        .unwrap_or_default();
    let next = f
        .next_retry_at
        .as_ref()
        .map(|at| format!(", next retry {}", time::format(at)))
        .unwrap_or_default();
    writeln!(
        out,
        "now {}{reason}, attempt {} of {}{next}",
        f.status, f.attempts, f.max_retries
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use churn_core::api::payments::{PaymentAttempt, PaymentFailure, PaymentFailureDetail};
    use churn_core::domain::provider::Provider;

    use super::*;

    #[test]
    fn the_routes_refusals_read_as_what_to_do() {
        let conflict = retry_error("f1", Error::Conflict("used up".into())).to_string();
        assert!(conflict.contains("no longer failing"), "{conflict}");
        let itself = retry_error(
            "f1",
            Error::validation("this provider retries payments itself"),
        );
        assert!(itself.to_string().contains("retries payments itself"));
        let upstream = retry_error(
            "f1",
            Error::upstream("the payment provider failed", "connection refused"),
        )
        .to_string();
        assert_eq!(
            upstream,
            "the payment provider failed (connection refused); the attempt was not counted, try again later"
        );
        let other = retry_error("f1", Error::NotFound("no payment failure".into()));
        assert_eq!(other.to_string(), "no payment failure");
    }

    #[test]
    fn an_outcome_says_what_happened_and_what_is_next() {
        let at = time::parse("2026-03-04T10:00:00Z").unwrap();
        let result = |status: &str, decline: Option<&str>, abandon: Option<&str>| RetryResult {
            record: PaymentFailureDetail {
                failure: PaymentFailure {
                    id: "f1".into(),
                    provider: Provider::Stripe,
                    customer_email: "jo@example.com".into(),
                    amount: 2990,
                    currency: "usd".into(),
                    status: status.into(),
                    failure_reason: None,
                    decline_code: decline.map(str::to_owned),
                    attempts: 2,
                    max_retries: 3,
                    next_retry_at: (status == "failing").then_some(at),
                    abandon_reason: abandon.map(str::to_owned),
                    recovered_at: None,
                    created_at: at,
                },
                provider_invoice_id: None,
                provider_payment_id: None,
                provider_customer_id: None,
                attempt_history: Vec::new(),
                page_visits: Vec::new(),
                emails: Vec::new(),
                final_action_result: None,
            },
            last_attempt: PaymentAttempt {
                at,
                outcome: if status == "recovered" {
                    "succeeded"
                } else {
                    "failed"
                }
                .into(),
                decline_code: decline.map(str::to_owned),
                error: None,
            },
        };
        let text = |r: RetryResult| {
            let mut out = Vec::new();
            write_outcome(&r, &mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        assert_eq!(
            text(result("failing", Some("insufficient_funds"), None)),
            "retry of f1 (29.90 USD, jo@example.com): failed (insufficient_funds)\n\
             now failing, attempt 2 of 3, next retry 2026-03-04T10:00:00.000Z\n"
        );
        assert_eq!(
            text(result(
                "abandoned",
                Some("stolen_card"),
                Some("hard_decline")
            )),
            "retry of f1 (29.90 USD, jo@example.com): failed (stolen_card)\n\
             now abandoned (hard_decline), attempt 2 of 3\n"
        );
        assert_eq!(
            text(result("recovered", None, None)),
            "retry of f1 (29.90 USD, jo@example.com): succeeded\nnow recovered, attempt 2 of 3\n"
        );
    }
}
