//! Hostile text and numbers: display names and subjects with CR, LF or NUL are refused at
//! every entry and, where stored before that rule, never break an email; provider events
//! outside the bounds of what is stored are answered `ignored`, and views over stored
//! amounts as large as `i64::MAX` keep answering.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Backend, Options, TestApp, event_with_variants, send_variant};
use crate::webhooks::setup;
use churn_core::both_backends;

both_backends!(
    display_names_and_subjects_are_one_line_at_every_entry,
    stored_hostile_names_never_break_an_email,
    provider_events_outside_the_bounds_are_ignored,
    views_survive_amounts_as_large_as_i64_max,
);

const HOSTILE: [&str; 4] = [
    "Dana\r\nBcc: evil@example.com",
    "Dana\nBcc: evil@example.com",
    "Dana\rBcc: evil@example.com",
    "Da\u{0}na",
];

/// Sends and asserts a 400 naming `field`.
async fn refused(app: &TestApp, request: reqwest::RequestBuilder, field: &str) {
    let answer = app.expect(request, 400).await;
    assert_eq!(answer["error"]["code"], "VALIDATION_ERROR", "{answer}");
    assert_eq!(answer["error"]["details"][0]["field"], field, "{answer}");
}

async fn display_names_and_subjects_are_one_line_at_every_entry(backend: Backend) {
    let (app, owner) = TestApp::spawn_acme(backend).await;
    let public_key = app
        .data_str(&owner, Method::GET, "/projects/acme", "public_key")
        .await;
    let identity = crate::cancel_flow::identity_secret(&app, &owner, "acme").await;
    let (id, vid) = event_with_variants(&app, &owner, "dana@example.com").await;
    for name in HOSTILE {
        let with_name = |path: &str, method: Method, body: Value| {
            app.req(method, path).bearer_auth(&owner).json(&body)
        };
        refused(
            &app,
            with_name(
                "/projects/acme/churn-events",
                Method::POST,
                json!({"customer_email": "c@example.com", "customer_name": name, "event_type": "cancellation"}),
            ),
            "customer_name",
        )
        .await;
        refused(
            &app,
            app.req(Method::POST, "/cancel-flow/reasons")
                .header("X-Public-Key", &public_key)
                .json(&crate::cancel_flow::signed(
                    &identity,
                    json!({"customer_email": "c@example.com", "reason": "too_expensive", "customer_name": name}),
                )),
            "customer_name",
        )
        .await;
        refused(
            &app,
            with_name("/projects", Method::POST, json!({"name": name})),
            "name",
        )
        .await;
        refused(
            &app,
            with_name("/projects/acme", Method::PATCH, json!({"name": name})),
            "name",
        )
        .await;
        refused(
            &app,
            app.req(Method::POST, "/auth/register").json(
                &json!({"name": name, "email": "eve@example.com", "password": "correct horse"}),
            ),
            "name",
        )
        .await;
        refused(
            &app,
            with_name(
                "/projects/acme/email-settings",
                Method::PUT,
                json!({"from_name": name, "from_email": "billing@acme.io"}),
            ),
            "from_name",
        )
        .await;
        refused(
            &app,
            with_name(
                "/projects/acme/dunning-config",
                Method::PUT,
                json!({"sender_name": name}),
            ),
            "sender_name",
        )
        .await;
        refused(
            &app,
            with_name(
                &format!("/projects/acme/churn-events/{id}/variants/{vid}"),
                Method::PATCH,
                json!({"subject": name}),
            ),
            "subject",
        )
        .await;
    }
    // The invitation page's form registers through the same rule.
    let invitation = crate::team::invite(&app, &owner, "nell@example.com", "member").await;
    let page = app
        .register_invited(
            invitation["accept_url"].as_str().unwrap(),
            "Nell\r\nBcc: evil@example.com",
        )
        .await;
    assert_eq!(page.status(), 400);
    assert!(
        page.text()
            .await
            .unwrap()
            .contains("The name must be one line")
    );
}

/// Sets a text column through a bound parameter, as a row stored before the one-line rule.
async fn store_text(url: &str, sql: &str, value: &str) {
    sqlx::any::install_default_drivers();
    let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(url)
        .await
        .unwrap();
    let done = sqlx::query(sql)
        .bind(value.to_owned())
        .execute(&mut conn)
        .await
        .unwrap();
    assert!(done.rows_affected() >= 1, "{sql}");
}

/// Rows written before the entries refused such names: a customer, a project, a user and
/// a subject with CR and LF. Every email still goes out, with no header injected.
async fn stored_hostile_names_never_break_an_email(backend: Backend) {
    let (app, owner) = TestApp::spawn_acme(backend).await;
    let (id, vid) = event_with_variants(&app, &owner, "dana@example.com").await;
    // A fresh process, so no cache holds the rows as they were.
    let db = app.stop().await;
    let evil = "Bcc: evil@example.com";
    for (sql, value) in [
        (
            "UPDATE churn_events SET customer_name = $1",
            format!("Dana\r\n{evil}"),
        ),
        ("UPDATE projects SET name = $1", format!("Acme\r\n{evil}")),
        (
            "UPDATE recovery_variants SET subject = $1",
            format!("Hello\n{evil}\r"),
        ),
        ("UPDATE users SET name = $1", format!("Owner\r{evil}\0")),
    ] {
        let value = if backend == Backend::Postgres {
            // PostgreSQL cannot store NUL at all; SQLite may hold one.
            value.replace('\0', "")
        } else {
            value
        };
        store_text(&db.url, sql, &value).await;
    }
    let app = TestApp::start(db, Options::default()).await;
    let sent = send_variant(&app, &owner, &id, &vid, 200).await;
    assert!(sent["data"]["message_id"].is_string(), "{sent}");
    // The owner's verification email, and a reset, to the user with the hostile name.
    app.forgot_password("owner@acme.io").await;
    app.run_jobs().await;
    let mails = app.outbox();
    let to = |address: &str| mails.iter().filter(|m| m.contains(address)).count();
    assert_eq!(to("<dana@example.com>"), 1, "{mails:#?}");
    assert_eq!(to("<owner@acme.io>"), 2, "{mails:#?}");
    for mail in &mails {
        let headers = &mail[..mail.find("\r\n\r\n").unwrap()];
        assert!(!headers.lines().any(|l| l.starts_with("Bcc:")), "{headers}");
    }
}

async fn provider_events_outside_the_bounds_are_ignored(backend: Backend) {
    let s = setup(backend).await;
    let failed = |field: &str, value: Value| {
        let mut event = json!({"id": format!("evt_{field}"), "type": "payment.failed",
            "customer_email": "dana@example.com", "amount": 2900, "currency": "usd",
            "payment_id": "pay_1", "decline_code": "insufficient_funds", "plan_name": "Pro",
            "mrr": 2900, "reason": "card declined"});
        event[field] = value;
        event
    };
    let long = "x".repeat(256);
    let mut outside = vec![
        failed("amount", json!(i64::MAX)),
        failed("amount", json!(-1)),
        failed("mrr", json!(i64::MAX)),
        failed("payment_id", json!(long)),
        failed("decline_code", json!(long)),
        failed("currency", json!("dollars")),
        failed("currency", json!("u$d")),
        failed("plan_name", json!("p".repeat(501))),
        failed("reason", json!("r".repeat(2001))),
    ];
    for field in ["payment_id", "decline_code", "plan_name"] {
        for c in ["\r", "\n"] {
            outside.push(failed(field, json!(format!("a{c}b"))));
        }
    }
    let long_id = failed("id", json!(long));
    for (i, mut event) in outside.into_iter().enumerate() {
        event["id"] = json!(format!("evt_out_{i}"));
        let answer = s.send_custom_expecting(&event, 200).await;
        assert_eq!(answer["data"]["action"], "ignored", "{event}");
    }
    // An id past 255 characters too (the provider must not retry it for ever).
    let answer = s.send_custom_expecting(&long_id, 200).await;
    assert_eq!(answer["data"]["action"], "ignored");
    assert!(s.failures().await.is_empty());

    // Stripe's own shape: an invoice due for i64::MAX.
    let invoice = json!({"id": "evt_a_max", "type": "invoice.payment_failed",
        "data": {"object": {"id": "in_max", "customer": "cus_1",
            "customer_email": "dana@example.com", "amount_due": i64::MAX, "currency": "usd"}}});
    assert_eq!(
        s.send_a(&invoice.to_string(), 200).await["action"],
        "ignored"
    );
    assert!(s.failures().await.is_empty());

    // A NUL in any string is refused (400) on both backends, by every provider.
    for (field, value) in [
        ("decline_code", "x\u{0}y"),
        ("reason", "\u{0}"),
        ("plan_name", "Pro\u{0}"),
    ] {
        let answer = s
            .send_custom_expecting(&failed(field, json!(value)), 400)
            .await;
        assert_eq!(answer["error"]["details"][0]["field"], field, "{answer}");
    }
    let mut nul_a = invoice.clone();
    nul_a["data"]["object"]["amount_due"] = json!(100);
    nul_a["data"]["object"]["currency"] = json!("us\u{0}");
    s.send_a(&nul_a.to_string(), 400).await;
    let nul_b = json!({"event": "payment.failed", "payload": {"payment": {"entity":
        {"id": "pay_\u{0}", "amount": 100, "currency": "INR", "email": "dana@example.com"}}}})
    .to_string();
    s.send_b_as_is(Some("evt_b_nul"), &nul_b, 400).await;
    assert!(s.failures().await.is_empty());

    // Within the bounds, the same event is recorded.
    let answer = s
        .send_custom_expecting(&failed("id", json!("evt_fine")), 200)
        .await;
    assert_eq!(answer["data"]["action"], "payment_failure_created");
}

/// Failures stored before amounts were bounded (two of `i64::MAX` in one status): the
/// list and the stats keep answering.
async fn views_survive_amounts_as_large_as_i64_max(backend: Backend) {
    let s = setup(backend).await;
    for i in 0..2 {
        let event = json!({"id": format!("evt_{i}"), "type": "payment.failed",
            "customer_email": format!("c{i}@example.com"), "amount": 100, "currency": "usd",
            "payment_id": format!("pay_{i}")});
        s.send_custom_expecting(&event, 200).await;
    }
    // As stored before amounts were bounded.
    s.app
        .query(&format!(
            "UPDATE payment_failures SET amount = {}",
            i64::MAX
        ))
        .await;
    let list = s
        .call(Method::GET, "/projects/acme/payment-failures", 200)
        .await;
    assert_eq!(list["data"]["total"], 2, "{list}");
    assert_eq!(list["data"]["failures"][0]["amount"], i64::MAX, "{list}");
    let stats = s
        .call(Method::GET, "/projects/acme/payment-failures/stats", 200)
        .await;
    assert_eq!(stats["data"]["active"], 2, "{stats}");
}
