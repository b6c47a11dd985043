//! Who may be emailed: the call to action and unsubscribe link of every email, one-click
//! unsubscribe, the suppression list (fed by unsubscribes and bounces), the daily send quota
//! on the test clock, and verified sender domains checked against a DNS server on loopback.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use hickory_proto::rr::rdata::TXT;
use hickory_proto::rr::{RData, Record, RecordType};
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{
    Backend, Options, TestApp, acme_owner, configure, fields, generated_event as event, header_str,
    patch_project, rotate_secret_key, send_variant, serve_dns, set_clock, variant_of,
};
use churn_core::both_backends;

both_backends!(
    every_email_has_a_button_and_an_unsubscribe_link,
    unsubscribe_by_post_but_not_by_get,
    a_bounce_suppresses_and_gives_its_quota_back,
    suppression_routes_and_roles,
    quota_resets_at_the_utc_day_boundary,
    sender_domain_is_verified_through_dns,
);

async fn owner(app: &TestApp, settings: Value) -> String {
    let token = acme_owner(app).await;
    configure(app, &token, settings).await;
    token
}

async fn send(app: &TestApp, token: &str, event: &str, variant: &Value, status: u16) -> Value {
    send_variant(app, token, event, variant["id"].as_str().unwrap(), status).await
}

async fn variant_status(app: &TestApp, token: &str, event: &str, variant: &Value) -> Value {
    let vid = variant["id"].as_str().unwrap();
    variant_of(app, token, event, vid).await["status"].clone()
}

/// The email with this message id from the outbox, quoted-printable soft breaks and folded
/// headers undone.
pub fn outbox_mail(app: &TestApp, sent: &Value) -> String {
    let id = sent["data"]["message_id"].as_str().unwrap();
    let name: String = id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    let raw =
        std::fs::read_to_string(app.data_dir().join("outbox").join(format!("{name}.eml"))).unwrap();
    unfold(&raw)
}

fn unfold(raw: &str) -> String {
    raw.replace("=\r\n", "")
        .replace("=3D", "=")
        .replace("\r\n ", " ")
        .replace("\r\n\t", " ")
}

/// The one-click URL of `List-Unsubscribe`.
pub fn unsubscribe_url(mail: &str) -> String {
    let header = mail
        .lines()
        .find_map(|l| l.strip_prefix("List-Unsubscribe: <"))
        .unwrap_or_else(|| panic!("no List-Unsubscribe in:\n{mail}"));
    header[..header.find('>').unwrap()].to_owned()
}

async fn suppressions(app: &TestApp, token: &str) -> Value {
    app.call(token, Method::GET, "/projects/acme/suppressions", 200)
        .await
}

async fn every_email_has_a_button_and_an_unsubscribe_link(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    // The founder's own code: the discount button carries it (decisions §15).
    let token = owner(
        &app,
        json!({"reactivation_url": "https://acme.io/back", "coupon_code": "COMEBACK20"}),
    )
    .await;
    let (id, variants) = event(&app, &token, "dana@northwind.example").await;
    assert_eq!(variants.len(), 9);
    for variant in &variants {
        let strategy = variant["strategy"].as_str().unwrap();
        let sent = send(&app, &token, &id, variant, 200).await;
        let mail = outbox_mail(&app, &sent);
        let target = match strategy {
            "discount" => format!(
                "https://acme.io/back?coupon={}",
                variant["coupon_code"].as_str().unwrap()
            ),
            "pause_option" => "https://acme.io/back?offer=pause".to_owned(),
            "downgrade_offer" => "https://acme.io/back?offer=downgrade".to_owned(),
            _ => "https://acme.io/back".to_owned(),
        };
        // Text part: the button's line and the footer's link.
        assert!(
            mail.contains(&format!(": {target}\r\n")),
            "{strategy}:\n{mail}"
        );
        let unsubscribe = unsubscribe_url(&mail);
        assert!(
            unsubscribe.starts_with(&format!(
                "{}/u/",
                app.address.replace("localhost", "127.0.0.1")
            )),
            "{unsubscribe}"
        );
        assert!(
            mail.contains(&format!("Unsubscribe: {unsubscribe}")),
            "{strategy}:\n{mail}"
        );
        // HTML part: one button, its link tracked and signed for this target, and the
        // unsubscribe link as is (never a redirect).
        let encoded: String = url::form_urlencoded::byte_serialize(target.as_bytes()).collect();
        assert_eq!(
            mail.matches("display: inline-block; background: #2563eb")
                .count(),
            1,
            "{strategy}:\n{mail}"
        );
        assert!(
            mail.contains(&format!("/c?u={encoded}&amp;s=")),
            "{strategy}:\n{mail}"
        );
        assert!(
            mail.contains(&format!("<a href=\"{unsubscribe}\"")),
            "{strategy}:\n{mail}"
        );
        for header in [
            "<mailto:support@acme.io?subject=unsubscribe>",
            "List-Unsubscribe-Post: List-Unsubscribe=One-Click",
        ] {
            assert!(mail.contains(header), "{strategy}: missing {header}");
        }
    }

    // Without any URL the button is a reply to the support address; an edit that drops the
    // button gets it back at send time.
    configure(&app, &token, json!({"reactivation_url": null})).await;
    let (id, variants) = event(&app, &token, "eve@northwind.example").await;
    let value_recap = variants
        .iter()
        .find(|v| v["strategy"] == "value_recap")
        .unwrap();
    app.call_json(
        &token,
        Method::PATCH,
        &format!(
            "/projects/acme/churn-events/{id}/variants/{}",
            value_recap["id"].as_str().unwrap()
        ),
        &json!({"body": "Hi Eve,\n\nWe would love to have you back."}),
        200,
    )
    .await;
    let mail = outbox_mail(&app, &send(&app, &token, &id, value_recap, 200).await);
    assert!(mail.contains("Reply to us: support@acme.io"), "{mail}");
    assert!(
        mail.contains("<a href=\"mailto:support@acme.io\""),
        "{mail}"
    );
    let refused = patch_project(
        &app,
        &token,
        &json!({"settings": {"reactivation_url": "http://acme.io/back"}}),
        400,
    )
    .await;
    assert_eq!(
        refused["error"]["details"][0]["field"],
        "settings.reactivation_url"
    );
}

async fn unsubscribe_by_post_but_not_by_get(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let token = owner(&app, json!({})).await;
    let (id, variants) = event(&app, &token, "Dana@Northwind.example").await;
    let mail = outbox_mail(&app, &send(&app, &token, &id, &variants[0], 200).await);
    let url = unsubscribe_url(&mail);

    // A GET (a mail scanner following the link) shows a page with a button and changes nothing.
    let page = app.client.get(&url).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(header_str(&page, "content-type").starts_with("text/html"));
    let html = page.text().await.unwrap();
    assert!(
        html.contains("<form method=\"post\"") && html.contains("dana@northwind.example"),
        "{html}"
    );
    assert!(!html.contains("<script"), "{html}");
    assert_eq!(suppressions(&app, &token).await["meta"]["total"], 0);
    send(&app, &token, &id, &variants[1], 200).await;

    // Forged or altered tokens are unknown, whatever the method.
    let forged = format!("{}x", url);
    for method in [Method::GET, Method::POST] {
        let answer = app.client.request(method, &forged).send().await.unwrap();
        assert_eq!(answer.status(), 404);
    }
    assert_eq!(suppressions(&app, &token).await["meta"]["total"], 0);

    // The RFC 8058 one-click POST unsubscribes at once.
    let done = app
        .client
        .post(&url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("List-Unsubscribe=One-Click")
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 200);
    let listed = suppressions(&app, &token).await;
    assert_eq!(listed["meta"]["total"], 1);
    assert_eq!(listed["data"][0]["email"], "dana@northwind.example");
    assert_eq!(listed["data"][0]["reason"], "unsubscribed");
    assert!(
        listed["data"][0]["created_at"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    // A second POST is harmless.
    assert_eq!(app.client.post(&url).send().await.unwrap().status(), 200);

    let refused = send(&app, &token, &id, &variants[2], 409).await;
    assert_eq!(refused["error"]["code"], "CONFLICT");
    assert_eq!(refused["error"]["message"], "the customer has unsubscribed");
    assert_eq!(
        variant_status(&app, &token, &id, &variants[2]).await,
        "draft"
    );
}

async fn a_bounce_suppresses_and_gives_its_quota_back(backend: Backend) {
    let (port, received) = crate::email::start_smtp();
    let app = TestApp::spawn_with(
        backend,
        Options::default()
            .with("smtp_url", format!("smtp://127.0.0.1:{port}"))
            .with("send_quota_paid", 1),
    )
    .await;
    let token = owner(&app, json!({})).await;
    let (id, variants) = event(&app, &token, "bounce@northwind.example").await;
    send(&app, &token, &id, &variants[0], 502).await;
    let listed = suppressions(&app, &token).await;
    assert_eq!(listed["data"][0]["email"], "bounce@northwind.example");
    assert_eq!(listed["data"][0]["reason"], "bounced");
    let refused = send(&app, &token, &id, &variants[1], 409).await;
    assert_eq!(refused["error"]["message"], "the address bounced");
    assert_eq!(
        variant_status(&app, &token, &id, &variants[1]).await,
        "draft"
    );

    // The bounce was not delivered, so the day's only send is still available.
    let (id, variants) = event(&app, &token, "dana@northwind.example").await;
    send(&app, &token, &id, &variants[0], 200).await;
    assert_eq!(received.lock().unwrap().len(), 1);
    send(&app, &token, &id, &variants[1], 429).await;
}

async fn suppression_routes_and_roles(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let token = owner(&app, json!({})).await;
    let (id, variants) = event(&app, &token, "dana@northwind.example").await;
    let mail = outbox_mail(&app, &send(&app, &token, &id, &variants[0], 200).await);
    app.client
        .post(unsubscribe_url(&mail))
        .send()
        .await
        .unwrap();

    // The project's secret key reads the list like other project data, but cannot delete.
    let key = rotate_secret_key(&app, &token).await;
    let listed = app
        .call_with_key(
            &key,
            Method::GET,
            "/projects/acme/suppressions?per_page=1",
            200,
        )
        .await;
    assert_eq!(
        listed["meta"],
        json!({"page": 1, "per_page": 1, "total": 1, "total_pages": 1})
    );
    let path = "/projects/acme/suppressions/dana@northwind.example";
    app.call_with_key(&key, Method::DELETE, path, 401).await;
    let bad = app
        .call(
            &token,
            Method::GET,
            "/projects/acme/suppressions?per_page=101",
            400,
        )
        .await;
    assert_eq!(bad["error"]["details"][0]["field"], "per_page");

    // Another account sees no such project.
    let stranger = app.register("eve@else.io").await;
    app.call(
        &stranger.token,
        Method::GET,
        "/projects/acme/suppressions",
        404,
    )
    .await;
    app.call(&stranger.token, Method::DELETE, path, 404).await;

    // The admin (here the owner) lifts it; the address may be emailed again.
    app.call(
        &token,
        Method::DELETE,
        "/projects/acme/suppressions/Dana@Northwind.example",
        204,
    )
    .await;
    app.call(&token, Method::DELETE, path, 404).await;
    assert_eq!(suppressions(&app, &token).await["meta"]["total"], 0);
    send(&app, &token, &id, &variants[1], 200).await;
}

async fn quota_resets_at_the_utc_day_boundary(backend: Backend) {
    let app = TestApp::spawn_with(
        backend,
        Options::default()
            .with("send_quota_paid", 2)
            .with("rate_limits", "off"),
    )
    .await;
    set_clock(&app, "2026-11-21T23:59:00.000Z").await;
    let token = owner(&app, json!({})).await;
    let (id, variants) = event(&app, &token, "dana@northwind.example").await;
    send(&app, &token, &id, &variants[0], 200).await;
    send(&app, &token, &id, &variants[1], 200).await;
    let refused = send(&app, &token, &id, &variants[2], 429).await;
    assert_eq!(refused["error"]["code"], "RATE_LIMITED");
    assert_eq!(refused["error"]["message"], "daily email quota reached");
    assert_eq!(
        variant_status(&app, &token, &id, &variants[2]).await,
        "draft"
    );

    // Still the same UTC day a second before midnight; a new day one second after.
    set_clock(&app, "2026-11-21T23:59:59.000Z").await;
    send(&app, &token, &id, &variants[2], 429).await;
    set_clock(&app, "2026-11-22T00:00:01.000Z").await;
    send(&app, &token, &id, &variants[2], 200).await;
    send(&app, &token, &id, &variants[3], 200).await;
    send(&app, &token, &id, &variants[4], 429).await;
}

/// A DNS server on loopback (UDP) that answers TXT queries for `_churn.acme.io` with the
/// values in `records`, and NXDOMAIN for everything else.
async fn start_dns(records: Arc<Mutex<Vec<String>>>) -> SocketAddr {
    serve_dns(move |q| {
        let name = q.name().to_string().to_ascii_lowercase();
        let answers: Vec<_> = if q.query_type() == RecordType::TXT
            && name.trim_end_matches('.') == "_churn.acme.io"
        {
            let records = records.lock().unwrap();
            records
                .iter()
                .map(|value| {
                    let txt = RData::TXT(TXT::new(vec![value.clone()]));
                    Record::from_rdata(q.name().clone(), 60, txt)
                })
                .collect()
        } else {
            Vec::new()
        };
        (!answers.is_empty()).then_some(answers)
    })
    .await
}

async fn sender_domain_is_verified_through_dns(backend: Backend) {
    let records = Arc::new(Mutex::new(vec!["v=spf1 -all".to_owned()]));
    let dns = start_dns(records.clone()).await;
    let app = TestApp::spawn_with(
        backend,
        Options::default().with("dns_resolver", dns.to_string()),
    )
    .await;
    let token = owner(&app, json!({})).await;
    let settings = "/projects/acme/email-settings";
    let empty = app.call(&token, Method::GET, settings, 200).await;
    assert_eq!(
        empty["data"],
        json!({"from_name": null, "from_email": null, "reply_to": null, "domain": null, "domain_verified": false, "dns_record": null})
    );
    let bad = app
        .call_json(
            &token,
            Method::PUT,
            settings,
            &json!({"from_email": "not an address", "reply_to": "x@"}),
            400,
        )
        .await;
    assert_eq!(fields(&bad), ["from_email", "reply_to"]);
    app.call(&token, Method::POST, &format!("{settings}/verify"), 400)
        .await;

    let put = app.call_json(&token, Method::PUT, settings, &json!({"from_name": "Ada at Acme", "from_email": "Hello@Acme.io", "reply_to": "help@acme.io"}), 200).await["data"]
        .clone();
    assert_eq!(put["from_email"], "hello@acme.io");
    assert_eq!(put["domain"], "acme.io");
    assert_eq!(put["domain_verified"], false);
    assert_eq!(put["dns_record"]["type"], "TXT");
    assert_eq!(put["dns_record"]["name"], "_churn.acme.io");
    let value = put["dns_record"]["value"].as_str().unwrap().to_owned();
    assert!(value.starts_with("churn-verification="), "{value}");

    // Unverified: the service's address under the project's name; Reply-To the support address.
    let (id, variants) = event(&app, &token, "dana@northwind.example").await;
    let mail = outbox_mail(&app, &send(&app, &token, &id, &variants[0], 200).await);
    assert!(mail.contains("From: Acme <no-reply@localhost>"), "{mail}");
    assert!(mail.contains("Reply-To: support@acme.io"), "{mail}");

    // The record is not there yet: still unverified.
    let verify = format!("{settings}/verify");
    let answer = app.call(&token, Method::POST, &verify, 200).await;
    assert_eq!(answer["data"]["domain_verified"], false);

    records.lock().unwrap().push(value.clone());
    let answer = app.call(&token, Method::POST, &verify, 200).await;
    assert_eq!(answer["data"]["domain_verified"], true);
    let mail = outbox_mail(&app, &send(&app, &token, &id, &variants[1], 200).await);
    assert!(
        mail.contains("From: \"Ada at Acme\" <hello@acme.io>"),
        "{mail}"
    );
    assert!(mail.contains("Reply-To: help@acme.io"), "{mail}");

    // The same domain keeps its proof; another domain needs a new one.
    let same = app
        .call_json(
            &token,
            Method::PUT,
            settings,
            &json!({"from_email": "team@acme.io"}),
            200,
        )
        .await;
    assert_eq!(same["data"]["domain_verified"], true);
    assert_eq!(same["data"]["from_name"], Value::Null);
    let mail = outbox_mail(&app, &send(&app, &token, &id, &variants[2], 200).await);
    assert!(mail.contains("From: Acme <team@acme.io>"), "{mail}");
    assert!(mail.contains("Reply-To: support@acme.io"), "{mail}");
    let moved = app
        .call_json(
            &token,
            Method::PUT,
            settings,
            &json!({"from_email": "team@acme.dev"}),
            200,
        )
        .await;
    assert_eq!(moved["data"]["domain_verified"], false);
    assert_eq!(moved["data"]["dns_record"]["name"], "_churn.acme.dev");
    assert_ne!(moved["data"]["dns_record"]["value"], value.as_str());

    // Administration only: a secret key is 401, another account 404.
    let key = rotate_secret_key(&app, &token).await;
    app.call_with_key(&key, Method::GET, settings, 401).await;
    let stranger = app.register("eve@else.io").await;
    app.call_json(
        &stranger.token,
        Method::PUT,
        settings,
        &json!({"from_email": "eve@acme.io"}),
        404,
    )
    .await;
}
