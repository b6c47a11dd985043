//! Card-expiry notices (decisions §18) on the test clock: the email `expiry_notice_days`
//! before the expiry, or at once when nearer; cancelled by a successful payment; replaced by
//! a newer expiry; one email for a repeated signal; none when off. The customer's
//! card-update page against the fake Stripe (exact form parameters; the default payment
//! method set, nothing retried), its token apart from a payment's, and the dashboard's
//! preview of the page.

use chrono::{DateTime, TimeDelta, Utc};
use reqwest::Method;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, ResponseTemplate};

use crate::card_update::pairs;
use crate::dashboard_client::Browser;
use crate::helpers::{Backend, clock_now, fields, header_str, set_clock, wire_time};
use crate::webhooks::{Setup, fixture, setup};
use churn_core::both_backends;

both_backends!(
    the_notice_goes_out_days_before_or_at_once,
    a_success_cancels_and_a_newer_expiry_replaces,
    a_repeated_signal_sends_one_email,
    no_notice_when_off_and_the_setting_is_checked,
    the_customer_page_saves_the_card_and_retries_nothing,
    the_dashboard_previews_the_page,
);

const STRIPE_CUSTOMER: &str = "cus_QXg1o8vcGmoR32";

impl Setup {
    /// A verified sender, and a secret key for `/track` (the owner's JWT does not survive
    /// the clock's jumps). Moves the project to its new public key.
    async fn ready(&mut self) -> String {
        self.verified_sender().await;
        let rotated = self
            .call(Method::POST, "/projects/acme/rotate-keys", 200)
            .await;
        self.public_key = rotated["data"]["public_key"].as_str().unwrap().to_owned();
        rotated["data"]["secret_key"].as_str().unwrap().to_owned()
    }

    async fn expiring(&self, key: &str, email: &str, expires_at: DateTime<Utc>, extra: Value) {
        let mut properties = json!({"expires_at": wire_time(expires_at)});
        properties
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().cloned().unwrap_or_default());
        crate::behavior::track(
            &self.app,
            key,
            json!({"event": "payment_method_expiring",
                        "customer_email": email, "properties": properties}),
            200,
        )
        .await;
    }

    /// The notice emails to `email` so far.
    fn notices_to(&self, email: &str) -> Vec<String> {
        self.dunning_mails()
            .into_iter()
            .filter(|m| m.contains(&format!("To: {email}")) && m.contains("/pay/customer/"))
            .collect()
    }

    /// (run_at, status) of the queued expiry-notice jobs.
    async fn notice_jobs(&self) -> Vec<String> {
        use sqlx::Row;
        self.app
            .query("SELECT run_at FROM jobs WHERE kind = 'expiry_notice' ORDER BY run_at")
            .await
            .iter()
            .map(|r| r.get::<String, _>(0))
            .collect()
    }
}

async fn the_notice_goes_out_days_before_or_at_once(backend: Backend) {
    let mut s = setup(backend).await;
    let key = s.ready().await;
    let now = clock_now(&s.app).await;
    let card = json!({"brand": "Visa", "last4": "4242"});
    s.expiring(
        &key,
        "dana@shop.io",
        now + TimeDelta::days(20),
        card.clone(),
    )
    .await;
    // Due 14 days (the default) before the expiry.
    assert_eq!(s.notice_jobs().await, [wire_time(now + TimeDelta::days(6))]);
    s.app.run_jobs().await;
    assert!(s.notices_to("dana@shop.io").is_empty());
    s.advance(6 * 86_400 - 60).await;
    s.app.run_jobs().await;
    assert!(
        s.notices_to("dana@shop.io").is_empty(),
        "not a minute early"
    );
    s.advance(60).await;
    s.app.run_jobs().await;
    let mails = s.notices_to("dana@shop.io");
    assert_eq!(mails.len(), 1);
    let day = (now + TimeDelta::days(20)).format("%-d %B %Y").to_string();
    assert!(
        mails[0].contains(&format!(
            "Subject: Your Visa ending in 4242 expires on {day}"
        )),
        "{}",
        mails[0]
    );
    assert!(mails[0].contains("From: \"Billing Team\" <billing@acme.io>"));

    // Three days away: at once.
    let now = clock_now(&s.app).await;
    s.expiring(&key, "erin@shop.io", now + TimeDelta::days(3), json!({}))
        .await;
    s.app.run_jobs().await;
    let mails = s.notices_to("erin@shop.io");
    assert_eq!(mails.len(), 1);
    assert!(
        mails[0].contains("Subject: Your card for Acme expires on"),
        "{}",
        mails[0]
    );
    // A card that already expired gets no notice.
    s.expiring(&key, "finn@shop.io", now - TimeDelta::days(1), json!({}))
        .await;
    assert!(s.notice_jobs().await.is_empty());
}

async fn a_success_cancels_and_a_newer_expiry_replaces(backend: Backend) {
    let mut s = setup(backend).await;
    let key = s.ready().await;
    let now = clock_now(&s.app).await;
    s.expiring(
        &key,
        "jenny.rosen@example.com",
        now + TimeDelta::days(30),
        json!({}),
    )
    .await;
    s.expiring(&key, "fred@shop.io", now + TimeDelta::days(30), json!({}))
        .await;
    // Jenny pays an invoice before her notice is due.
    s.send_a(&fixture("a_invoice_paid"), 200).await;
    // Fred's card is reported again with a later expiry: it replaces the pending notice.
    s.advance(3600).await;
    s.expiring(&key, "fred@shop.io", now + TimeDelta::days(40), json!({}))
        .await;
    s.advance(17 * 86_400).await;
    s.app.run_jobs().await;
    assert!(s.notices_to("jenny.rosen@example.com").is_empty());
    assert!(s.notices_to("fred@shop.io").is_empty(), "replaced");
    use sqlx::Row;
    let rows = s
        .app
        .query("SELECT customer_email, status, reason FROM expiry_notices ORDER BY customer_email")
        .await;
    let rows: Vec<(String, String, Option<String>)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(
        rows,
        [
            ("fred@shop.io".into(), "pending".into(), None),
            (
                "jenny.rosen@example.com".into(),
                "cancelled".into(),
                Some("a payment succeeded".into())
            ),
        ]
    );
    s.advance(10 * 86_400).await;
    s.app.run_jobs().await;
    let mails = s.notices_to("fred@shop.io");
    assert_eq!(mails.len(), 1);
    let day = (now + TimeDelta::days(40)).format("%-d %B %Y").to_string();
    assert!(mails[0].contains(&day), "{}", mails[0]);
}

async fn a_repeated_signal_sends_one_email(backend: Backend) {
    let mut s = setup(backend).await;
    let key = s.ready().await;
    let now = clock_now(&s.app).await;
    let expires = now + TimeDelta::days(5);
    // The same expiry, three times at once and once more later, each a new tracked event.
    futures::future::join_all((0..3).map(|_| s.expiring(&key, "gus@shop.io", expires, json!({}))))
        .await;
    s.advance(60).await;
    s.expiring(&key, "gus@shop.io", expires, json!({})).await;
    assert_eq!(s.notice_jobs().await.len(), 1);
    s.app.run_jobs().await;
    s.expiring(&key, "gus@shop.io", expires, json!({})).await;
    s.advance(86_400).await;
    s.app.run_jobs().await;
    assert_eq!(s.notices_to("gus@shop.io").len(), 1);
}

async fn no_notice_when_off_and_the_setting_is_checked(backend: Backend) {
    let mut s = setup(backend).await;
    assert_eq!(
        s.configure(json!({"max_retries": 4})).await["expiry_notice_days"],
        14,
        "the default"
    );
    let refused = s
        .put_dunning_config(json!({"expiry_notice_days": 61}), 400)
        .await;
    assert_eq!(fields(&refused), ["expiry_notice_days"]);
    assert_eq!(
        s.configure(json!({"expiry_notice_days": 0})).await["expiry_notice_days"],
        0
    );
    let key = s.ready().await;
    let now = clock_now(&s.app).await;
    s.expiring(&key, "hana@shop.io", now + TimeDelta::days(2), json!({}))
        .await;
    s.app.run_jobs().await;
    assert!(s.notice_jobs().await.is_empty());
    assert!(s.notices_to("hana@shop.io").is_empty());
}

async fn the_customer_page_saves_the_card_and_retries_nothing(backend: Backend) {
    let mut s = setup(backend).await;
    s.ready().await;
    // A payment's page first, so that its token can be tried as a customer's.
    s.send_a(&fixture("a_basil_invoice_payment_failed"), 200)
        .await;
    s.app.run_jobs().await;
    let record_link = crate::dunning::page_link(&s.dunning_mails()[0]).to_owned();
    let record_path = &record_link[record_link.find("/pay/").unwrap()..];

    // The fixture's card expires at the end of August 2030: nearer than 14 days, at once.
    set_clock(&s.app, "2030-08-20T09:00:00Z").await;
    Mock::given(method("GET"))
        .and(path(format!("/v1/customers/{STRIPE_CUSTOMER}")))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"id": STRIPE_CUSTOMER,
            "object": "customer", "email": "jenny@shop.io", "currency": "eur"})),
        )
        .mount(&s.fake.mock)
        .await;
    let notice = fixture("a_source_expiring");
    assert_eq!(s.send_a(&notice, 200).await["action"], "customer_signal");
    assert_eq!(s.send_a(&notice, 200).await["action"], "duplicate");
    s.app.run_jobs().await;
    let mails = s.notices_to("jenny@shop.io");
    assert_eq!(mails.len(), 1);
    assert!(
        mails[0].contains("Subject: Your Visa ending in 4242 expires on 31 August 2030"),
        "{}",
        mails[0]
    );
    let link = crate::dunning::page_link(&mails[0]).to_owned();
    let at = link.find("/pay/customer/").unwrap();
    let (base, page) = (&link[..at], &link[at..]);

    let opened = s
        .app
        .client
        .get(format!("{}{page}", s.app.address))
        .send()
        .await
        .unwrap();
    let status = opened.status();
    let body = opened.text().await.unwrap();
    assert_eq!(status, 200, "{page}: {body}");
    for text in [
        "Update the card you pay with",
        "Visa ending in 4242",
        "31 August 2030",
        r#"<form method="post""#,
    ] {
        assert!(body.contains(text), "{text}: {body}");
    }

    // A payment's token is no customer's, nor the other way round.
    let token = &page["/pay/customer/".len()..];
    let record_token = &record_path["/pay/".len()..];
    for wrong in [
        format!("/pay/customer/{record_token}"),
        format!("/pay/{token}"),
    ] {
        let r = s
            .app
            .client
            .get(format!("{}{wrong}", s.app.address))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404, "{wrong}");
    }

    // The payment above had its own retries on the way to 2030; none may follow from here.
    let pays = || async {
        let received = s.fake.mock.received_requests().await.unwrap();
        received
            .iter()
            .filter(|r| r.url.path().ends_with("/pay"))
            .count()
    };
    let pays_before = pays().await;
    let checkout = "https://checkout.stripe.com/c/pay/cs_test_c1";
    for (verb, at, answer) in [
        (
            "POST",
            "/v1/checkout/sessions".to_owned(),
            json!({"id": "cs_test_c1", "object": "checkout.session", "url": checkout}),
        ),
        (
            "GET",
            "/v1/checkout/sessions/cs_test_c1".to_owned(),
            json!({"id": "cs_test_c1", "object": "checkout.session", "customer": STRIPE_CUSTOMER,
                "setup_intent": {"id": "seti_1", "object": "setup_intent", "status": "succeeded",
                "payment_method": "pm_1Renewed"}}),
        ),
        (
            "POST",
            format!("/v1/customers/{STRIPE_CUSTOMER}"),
            json!({"id": STRIPE_CUSTOMER, "object": "customer"}),
        ),
    ] {
        Mock::given(method(verb))
            .and(path(at))
            .respond_with(ResponseTemplate::new(200).set_body_json(answer))
            .mount(&s.fake.mock)
            .await;
    }
    let pressed = s
        .app
        .client
        .post(format!("{}{page}", s.app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(pressed.status(), 303);
    assert_eq!(pressed.headers()["location"], checkout);
    let back = s
        .app
        .client
        .get(format!(
            "{}{page}/done?session_id=cs_test_c1",
            s.app.address
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(back.status(), 200);
    let body = back.text().await.unwrap();
    assert!(body.contains("Thank you, your new card is saved"), "{body}");

    let received = s.fake.mock.received_requests().await.unwrap();
    let forms = |verb: &str, at: &str| -> Vec<Vec<(String, String)>> {
        received
            .iter()
            .filter(|r| r.method.as_str() == verb && r.url.path() == at)
            .map(|r| {
                let mut form: Vec<(String, String)> = url::form_urlencoded::parse(&r.body)
                    .map(|(k, v)| (k.into_owned(), v.into_owned()))
                    .collect();
                form.sort();
                form
            })
            .collect()
    };
    assert_eq!(
        forms("POST", "/v1/checkout/sessions"),
        [pairs(&[
            ("mode", "setup"),
            ("customer", STRIPE_CUSTOMER),
            ("currency", "eur"),
            (
                "success_url",
                &format!("{base}{page}/done?session_id={{CHECKOUT_SESSION_ID}}")
            ),
            ("cancel_url", &format!("{base}{page}")),
        ])]
    );
    assert_eq!(
        forms("POST", &format!("/v1/customers/{STRIPE_CUSTOMER}")),
        [pairs(&[(
            "invoice_settings[default_payment_method]",
            "pm_1Renewed"
        )])]
    );
    // Nothing was failing for this customer: no invoice is retried.
    assert_eq!(pays().await, pays_before, "no retry");
}

async fn the_dashboard_previews_the_page(backend: Backend) {
    let s = setup(backend).await;
    let browser = Browser::sign_in(&s.app, "owner@acme.io").await;
    let settings = browser.get("/app/p/acme/payments", 200).await;
    assert!(
        settings.contains(
            r#"<iframe class="widget-frame" src="/app/p/acme/payments/page-preview" sandbox"#
        ),
        "{settings}"
    );
    let r = browser.open("/app/p/acme/payments/page-preview").await;
    assert_eq!(r.status(), 200);
    let csp = header_str(&r, "content-security-policy").to_owned();
    assert!(
        csp.contains("form-action 'none'; frame-ancestors 'self'; sandbox"),
        "{csp}"
    );
    let body = r.text().await.unwrap();
    // Stripe is connected: the Checkout button, on the project's own page, sample amount.
    for text in [
        "<p class=\"brand\">Acme</p>",
        "29.00 USD",
        "Pro (sample)",
        "Your payment did not go through",
        r#"<button type="submit">Update payment method</button>"#,
    ] {
        assert!(body.contains(text), "{text}: {body}");
    }
}
