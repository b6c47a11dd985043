//! Emails that jobs send go out once across a restart (issue 19, item 11): each job kind is
//! run as by a process killed after handing its email over and before the job completed,
//! then run again as the next process would, and the email is not sent twice; autopilot's
//! follow-up is planned from what was sent.

use serde_json::json;
use sqlx::Row;

use crate::helpers::{Backend, TestApp, advance, configure, event_of, post_event};
use crate::team::invite;
use crate::webhooks::{fixture, setup};
use churn_core::both_backends;

both_backends!(
    account_and_invitation_emails_go_out_once_across_a_restart,
    a_dunning_email_goes_out_once_across_a_restart,
    autopilot_sends_once_and_plans_the_follow_up_across_restarts,
);

/// Runs the due jobs, then puts back each job that ran and completed as a kill between its
/// email's hand-over and its completion leaves it: still `running`, its lease expired, its
/// email claimed; `undo` then removes what the completing transaction committed with it.
/// Says how many jobs were put back.
pub(crate) async fn run_jobs_killed_after_hand_over(app: &TestApp, undo: &[&str]) -> usize {
    let queued = app
        .query(
            "SELECT id, kind, payload, run_at, max_attempts, created_at, project_id FROM jobs \
             WHERE status = 'queued'",
        )
        .await;
    app.run_jobs().await;
    let mut put_back = 0;
    for row in queued {
        let id: String = row.get("id");
        if !app
            .query(&format!("SELECT id FROM jobs WHERE id = '{id}'"))
            .await
            .is_empty()
        {
            continue; // not due, or failed and queued again
        }
        let text = |column: &str| row.get::<String, _>(column).replace('\'', "''");
        let project = row
            .get::<Option<String>, _>("project_id")
            .map_or("NULL".to_owned(), |p| format!("'{p}'"));
        app.query(&format!(
            "INSERT INTO jobs (id, kind, payload, run_at, status, attempts, max_attempts, \
             locked_until, created_at, updated_at, project_id, email_claimed_at) VALUES \
             ('{id}', '{kind}', '{payload}', '{run_at}', 'running', 1, {max}, \
             '2000-01-01T00:00:00.000Z', '{created}', '{created}', {project}, '{created}')",
            kind = text("kind"),
            payload = text("payload"),
            run_at = text("run_at"),
            max = row.get::<i64, _>("max_attempts"),
            created = text("created_at"),
        ))
        .await;
        put_back += 1;
    }
    for statement in undo {
        app.query(statement).await;
    }
    put_back
}

fn mails(app: &TestApp, to: &str, subject: &str) -> usize {
    app.outbox()
        .iter()
        .filter(|m| m.contains(to) && m.contains(subject))
        .count()
}

async fn account_and_invitation_emails_go_out_once_across_a_restart(backend: Backend) {
    let (app, owner) = TestApp::spawn_acme(backend).await;
    app.forgot_password("owner@acme.io").await;
    invite(&app, &owner, "bea@example.com", "member").await;
    let expected = [
        ("owner@acme.io", "Confirm your email address"),
        ("owner@acme.io", "Reset your churn password"),
        ("bea@example.com", "You are invited to Acme"),
    ];

    assert_eq!(run_jobs_killed_after_hand_over(&app, &[]).await, 3);
    for (to, subject) in expected {
        assert_eq!(
            mails(&app, to, subject),
            1,
            "{subject}: {:#?}",
            app.outbox()
        );
    }
    // The next process runs them again: each finds its email claimed and ends.
    assert_eq!(app.run_jobs().await, 3);
    for (to, subject) in expected {
        assert_eq!(mails(&app, to, subject), 1, "{subject} went out once");
    }
    assert_eq!(app.outbox().len(), 3);
    assert!(app.query("SELECT id FROM jobs").await.is_empty());
}

async fn a_dunning_email_goes_out_once_across_a_restart(backend: Backend) {
    let s = setup(backend).await;
    s.verified_sender().await;
    s.send_a(&fixture("a_basil_invoice_payment_failed"), 200)
        .await;
    // The completing transaction also logged the email.
    let put_back = run_jobs_killed_after_hand_over(&s.app, &["DELETE FROM payment_emails"]).await;
    assert!(put_back >= 1, "the dunning email job ran");
    assert_eq!(s.dunning_mails().len(), 1);
    s.app.run_jobs().await;
    assert_eq!(s.dunning_mails().len(), 1, "not sent again");
    let failure = s.only_failure().await;
    let emails = failure["emails"].as_array().unwrap();
    assert_eq!(emails.len(), 1, "{emails:#?}");
    assert_eq!(emails[0]["status"], "sent");
    assert_eq!(
        emails[0]["reason"],
        "unconfirmed: the process stopped while handing it over"
    );
}

async fn autopilot_sends_once_and_plans_the_follow_up_across_restarts(backend: Backend) {
    let (app, owner) = TestApp::spawn_acme(backend).await;
    app.run_jobs().await; // the owner's verification email
    configure(
        &app,
        &owner,
        json!({"autopilot": {"enabled": true, "delay_minutes": 60, "follow_up_days": 3}}),
    )
    .await;
    let created = post_event(
        &app,
        &owner,
        &json!({"customer_email": "dana@example.com", "event_type": "cancellation"}),
        201,
    )
    .await;
    assert_eq!(created["data"]["group"], "treatment");
    let id = created["data"]["id"].as_str().unwrap().to_owned();
    let autopilot = || async { event_of(&app, &owner, &id).await["autopilot"].clone() };
    let to_dana = || {
        app.outbox()
            .iter()
            .filter(|m| m.contains("dana@example.com"))
            .count()
    };

    // The first send hands its email over; the kill loses the follow-up it planned.
    advance(&app, 3600).await;
    let first = run_jobs_killed_after_hand_over(
        &app,
        &["DELETE FROM jobs WHERE kind = 'autopilot' AND status = 'queued'"],
    )
    .await;
    assert_eq!(first, 1);
    assert_eq!(to_dana(), 1);
    // Run again, it sends nothing and plans the follow-up from the email sent.
    assert_eq!(app.run_jobs().await, 1);
    assert_eq!(to_dana(), 1);
    assert_eq!(autopilot().await, json!({"status": "scheduled"}));

    // The follow-up hands its email over; the kill loses its record.
    advance(&app, 3 * 86_400).await;
    let follow_up = run_jobs_killed_after_hand_over(
        &app,
        &["UPDATE churn_events SET autopilot_status = 'scheduled'"],
    )
    .await;
    assert_eq!(follow_up, 1);
    assert_eq!(to_dana(), 2);
    app.run_jobs().await;
    assert_eq!(to_dana(), 2, "the follow-up went out once");
    assert_eq!(autopilot().await, json!({"status": "sent"}));
    advance(&app, 30 * 86_400).await;
    app.run_jobs().await;
    assert_eq!(to_dana(), 2);
}
