//! Autopilot on the test clock: the delayed send of the recommended email, the follow-up of
//! the next-ranked one, every skip rule recorded on the event; holdout groups and the measured
//! uplift against them.

use reqwest::Method;
use serde_json::{Value, json};

use crate::events::find_url;
use crate::helpers::{
    Backend, Options, TestApp, acme_owner, advance, configure, event_of, event_with_variants,
    mark_recovered, post_event, send_variant, set_clock,
};
use crate::mailrules::{outbox_mail, unsubscribe_url};
use churn_core::both_backends;
use churn_core::domain::analytics::newcombe;

both_backends!(
    autopilot_sends_after_the_delay_and_follows_up_once,
    autopilot_records_every_skip,
    autopilot_stops_at_the_quota,
    a_click_makes_the_follow_up_unnecessary,
    autopilot_never_sends_a_variant_with_warnings,
    uplift_compares_treatment_with_the_holdout
);

async fn create(app: &TestApp, token: &str, email: &str) -> Value {
    post_event(app, token, &json!({"customer_email": email, "event_type": "cancellation", "cancel_reason": "too_expensive"}), 201).await["data"]
        .clone()
}

fn sent_strategies(event: &Value) -> Vec<(i64, bool)> {
    let mut sent: Vec<_> = event["variants"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["sent_at"].is_string())
        .map(|v| (v["rank"].as_i64().unwrap(), v["recommended"] == true))
        .collect();
    sent.sort();
    sent
}

fn mails_to(app: &TestApp, email: &str) -> usize {
    app.outbox()
        .iter()
        .filter(|m| m.contains(&format!("To: {email}")) || m.contains(&format!("<{email}>")))
        .count()
}

async fn autopilot_sends_after_the_delay_and_follows_up_once(backend: Backend) {
    let (app, owner) = TestApp::spawn_acme(backend).await;
    configure(
        &app,
        &owner,
        json!({"autopilot": {"enabled": true, "delay_minutes": 60, "follow_up_days": 3}}),
    )
    .await;
    let created = create(&app, &owner, "dana@example.com").await;
    assert_eq!(created["group"], "treatment");
    assert_eq!(created["autopilot"], json!({"status": "scheduled"}));
    let id = created["id"].as_str().unwrap();

    // Not before the delay.
    advance(&app, 59 * 60).await;
    app.run_jobs().await;
    assert_eq!(event_of(&app, &owner, id).await["status"], "new");
    assert_eq!(mails_to(&app, "dana@example.com"), 0);

    // At the delay: generated, and the recommended variant sent; a follow-up is planned.
    advance(&app, 60).await;
    app.run_jobs().await;
    let first = event_of(&app, &owner, id).await;
    assert_eq!(first["status"], "email_sent");
    assert_eq!(sent_strategies(&first), [(1, true)]);
    assert_eq!(first["autopilot"], json!({"status": "scheduled"}));
    assert_eq!(mails_to(&app, "dana@example.com"), 1);

    // Three days later, nothing clicked: the next-ranked one, once.
    advance(&app, 3 * 86_400 - 1).await;
    app.run_jobs().await;
    assert_eq!(sent_strategies(&event_of(&app, &owner, id).await).len(), 1);
    advance(&app, 1).await;
    app.run_jobs().await;
    let second = event_of(&app, &owner, id).await;
    assert_eq!(sent_strategies(&second), [(1, true), (2, false)]);
    assert_eq!(second["autopilot"], json!({"status": "sent"}));

    // Autopilot off: no group, nothing planned.
    configure(&app, &owner, json!({"autopilot": {"enabled": false}})).await;
    let manual = create(&app, &owner, "erin@example.com").await;
    assert_eq!(manual["group"], Value::Null);
    assert_eq!(manual["autopilot"], Value::Null);
    advance(&app, 30 * 86_400).await;
    app.run_jobs().await;
    assert_eq!(mails_to(&app, "dana@example.com"), 2, "once");
    assert_eq!(mails_to(&app, "erin@example.com"), 0);
}

/// A variant lacking its material (decisions §15) is left for the founder: when only such
/// variants remain, the follow-up is skipped.
async fn autopilot_never_sends_a_variant_with_warnings(backend: Backend) {
    let (app, owner) = TestApp::spawn_acme(backend).await;
    configure(
        &app,
        &owner,
        json!({"autopilot": {"enabled": true, "delay_minutes": 0, "follow_up_days": 1}}),
    )
    .await;
    let id = create(&app, &owner, "dana@example.com").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.run_jobs().await;
    let first = event_of(&app, &owner, &id).await;
    assert_eq!(sent_strategies(&first), [(1, true)]);
    let variants = first["variants"].as_array().unwrap();
    // No code, testimonials, features or founder's name: four variants warn, ranked last.
    let warned: Vec<i64> = variants
        .iter()
        .filter(|v| v["warnings"] != json!([]))
        .map(|v| v["rank"].as_i64().unwrap())
        .collect();
    assert_eq!(warned.len(), 4);
    assert!(warned.iter().all(|r| *r >= 6), "{warned:?}");
    // The founder sends the other drafts by hand; only warned ones are left.
    for v in variants
        .iter()
        .filter(|v| (2..=5).contains(&v["rank"].as_i64().unwrap()))
    {
        send_variant(&app, &owner, &id, v["id"].as_str().unwrap(), 200).await;
    }
    advance(&app, 86_400).await;
    app.run_jobs().await;
    let after = event_of(&app, &owner, &id).await;
    assert_eq!(
        sent_strategies(&after).len(),
        5,
        "the follow-up sent nothing"
    );
    assert_eq!(
        after["autopilot"],
        json!({"status": "skipped", "reason": "nothing_left_to_send"})
    );
}

async fn autopilot_records_every_skip(backend: Backend) {
    let (app, owner) = TestApp::spawn_acme(backend).await;
    // An address that unsubscribed, before autopilot is on.
    let (suppressed_event, variant) = event_with_variants(&app, &owner, "gone@example.com").await;
    let sent = send_variant(&app, &owner, &suppressed_event, &variant, 200).await;
    let url = unsubscribe_url(&outbox_mail(&app, &sent));
    assert_eq!(app.client.post(&url).send().await.unwrap().status(), 200);

    configure(&app, &owner, json!({"recovery_window_days": 1, "autopilot": {"enabled": true, "delay_minutes": 10, "follow_up_days": 3, "holdout_percent": 50}})).await;
    // Half the events are held out; create until both groups have one.
    let mut treated = Vec::new();
    let mut control = None;
    for i in 0..40 {
        let e = create(&app, &owner, &format!("c{i}@example.com")).await;
        match e["group"].as_str().unwrap() {
            "control" => {
                assert_eq!(
                    e["autopilot"],
                    json!({"status": "skipped", "reason": "control_group"})
                );
                control.get_or_insert(e["id"].as_str().unwrap().to_owned());
            }
            _ => treated.push(e["id"].as_str().unwrap().to_owned()),
        }
        if control.is_some() && treated.len() >= 2 {
            break;
        }
    }
    let control = control.expect("a control event in 40 tries");
    // Recovered before the send, and an unsubscribed address (treatment events).
    let (recovered, lost) = (treated[0].clone(), treated[1].clone());
    mark_recovered(&app, &owner, &recovered).await;
    let gone = loop {
        let e = create(&app, &owner, "gone@example.com").await;
        if e["group"] == "treatment" {
            break e["id"].as_str().unwrap().to_owned();
        }
    };
    advance(&app, 10 * 60).await;
    app.run_jobs().await;
    let reason = |e: &Value| e["autopilot"].clone();
    assert_eq!(
        reason(&event_of(&app, &owner, &recovered).await),
        json!({"status": "skipped", "reason": "recovered"})
    );
    assert_eq!(
        reason(&event_of(&app, &owner, &gone).await),
        json!({"status": "skipped", "reason": "suppressed"})
    );
    let control_event = event_of(&app, &owner, &control).await;
    assert_eq!(
        control_event["status"], "new",
        "autopilot never emails the control group"
    );
    assert_eq!(
        reason(&control_event),
        json!({"status": "skipped", "reason": "control_group"})
    );
    // Lost a day after its send, before the follow-up was due.
    assert_eq!(event_of(&app, &owner, &lost).await["status"], "email_sent");
    advance(&app, 3 * 86_400).await;
    app.run_jobs().await;
    let lost_event = event_of(&app, &owner, &lost).await;
    assert_eq!(lost_event["status"], "lost");
    assert_eq!(
        reason(&lost_event),
        json!({"status": "skipped", "reason": "lost"})
    );
    assert_eq!(sent_strategies(&lost_event).len(), 1);
}

async fn autopilot_stops_at_the_quota(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options::default().with("send_quota_paid", 1)).await;
    let owner = acme_owner(&app).await;
    configure(
        &app,
        &owner,
        json!({"autopilot": {"enabled": true, "delay_minutes": 0, "follow_up_days": 0}}),
    )
    .await;
    let first = create(&app, &owner, "a@example.com").await;
    let second = create(&app, &owner, "b@example.com").await;
    app.run_jobs().await;
    let states = [
        event_of(&app, &owner, first["id"].as_str().unwrap()).await["autopilot"].clone(),
        event_of(&app, &owner, second["id"].as_str().unwrap()).await["autopilot"].clone(),
    ];
    assert!(states.contains(&json!({"status": "sent"})), "{states:?}");
    assert!(
        states.contains(&json!({"status": "skipped", "reason": "quota"})),
        "{states:?}"
    );
}

async fn uplift_compares_treatment_with_the_holdout(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    set_clock(&app, "2026-05-01T00:00:00Z").await;
    let owner = acme_owner(&app).await;
    // A week's delay: nothing is sent while the groups are judged.
    configure(&app, &owner, json!({"recovery_window_days": 2, "autopilot": {"enabled": true, "delay_minutes": 10080, "holdout_percent": 50}})).await;
    let mut groups = Vec::new();
    for i in 0..16 {
        let e = create(&app, &owner, &format!("u{i}@example.com")).await;
        let (id, group) = (
            e["id"].as_str().unwrap().to_owned(),
            e["group"].as_str().unwrap().to_owned(),
        );
        // Every third event comes back within its window.
        if i % 3 == 0 {
            mark_recovered(&app, &owner, &id).await;
        }
        groups.push((group, i % 3 == 0));
    }
    let count = |group: &str, recovered: bool| {
        groups
            .iter()
            .filter(|(g, r)| g == group && *r == recovered)
            .count() as u64
    };
    // While the windows are open only recoveries count.
    let open = app
        .call(&owner, Method::GET, "/projects/acme/analytics/uplift", 200)
        .await["data"]
        .clone();
    assert_eq!(open["treatment"]["lost"], 0);
    assert_eq!(open["treatment"]["recovered"], count("treatment", true));

    advance(&app, 2 * 86_400).await;
    let uplift = app
        .call(
            &owner,
            Method::GET,
            "/projects/acme/analytics/uplift?days=30",
            200,
        )
        .await["data"]
        .clone();
    let (tr, tl, cr, cl) = (
        count("treatment", true),
        count("treatment", false),
        count("control", true),
        count("control", false),
    );
    assert_eq!(
        uplift["treatment"],
        json!({"events": tr + tl, "recovered": tr, "lost": tl, "recovery_rate": rate(tr, tl)})
    );
    assert_eq!(
        uplift["control"],
        json!({"events": cr + cl, "recovered": cr, "lost": cl, "recovery_rate": rate(cr, cl)})
    );
    let (low, high) = newcombe(tr, tr + tl, cr, cr + cl);
    let round = |x: f64| (x * 100.0).round() / 100.0;
    assert_eq!(uplift["ci95"], json!([round(low), round(high)]));
    assert_eq!(
        uplift["uplift_points"],
        json!(round(rate(tr, tl) - rate(cr, cl)))
    );
    assert_eq!(
        uplift["significant"],
        json!(round(low) > 0.0 || round(high) < 0.0)
    );
    for bad in ["0", "366"] {
        app.call(
            &owner,
            Method::GET,
            &format!("/projects/acme/analytics/uplift?days={bad}"),
            400,
        )
        .await;
    }
}

fn rate(recovered: u64, lost: u64) -> f64 {
    if recovered + lost == 0 {
        0.0
    } else {
        (recovered as f64 * 10_000.0 / (recovered + lost) as f64).round() / 100.0
    }
}

async fn a_click_makes_the_follow_up_unnecessary(backend: Backend) {
    let (app, owner) = TestApp::spawn_acme(backend).await;
    configure(&app, &owner, json!({"product_url": "https://acme.io/account", "autopilot": {"enabled": true, "delay_minutes": 5, "follow_up_days": 2}})).await;
    let id = create(&app, &owner, "dana@example.com").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    advance(&app, 5 * 60).await;
    app.run_jobs().await;
    let mail = app
        .outbox()
        .into_iter()
        .find(|m| m.contains("dana@example.com") && m.contains("/c?u="))
        .expect("the first email");
    let click = find_url(&mail, "/c?u=").replace("&amp;", "&");
    assert_eq!(app.client.get(&click).send().await.unwrap().status(), 302);
    advance(&app, 2 * 86_400).await;
    app.run_jobs().await;
    let after = event_of(&app, &owner, &id).await;
    assert_eq!(
        sent_strategies(&after),
        [(1, true)],
        "no follow-up after a click"
    );
    assert_eq!(after["autopilot"], json!({"status": "sent"}));
    assert_eq!(mails_to(&app, "dana@example.com"), 1);
}
