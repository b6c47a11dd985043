//! The card-update page (decisions §18) against the loopback fake of Stripe's API: the link
//! in the dunning email, the page in each state, the setup-mode Checkout round trip ending in
//! a paid invoice (exact form parameters Stripe receives), forged and expired tokens,
//! Razorpay's payment link and the custom `update_payment_url` as the button's target; the
//! in-app banner's `customer-status` (hash, allowed origins, the newest failing record).

use reqwest::Method;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, ResponseTemplate};

use crate::cancel_flow::identity_secret;
use crate::dashboard_client::Browser;
use crate::dunning::{INVOICE, page_link};
use crate::helpers::{Backend, advance};
use crate::webhooks::{Setup, fixture, setup};
use churn_core::both_backends;

both_backends!(
    the_setup_round_trip_pays_the_invoice,
    each_state_and_forged_or_expired_tokens,
    a_session_of_another_customer_changes_nothing,
    a_declined_new_card_is_said_and_a_reload_retries_nothing,
    razorpay_and_custom_targets,
    the_banner_status_follows_the_failing_record,
);

const CUSTOMER: &str = "cus_TS6KX04w045BN9";

/// A page as the customer's browser gets it (redirects not followed).
struct Page {
    status: u16,
    location: Option<String>,
    csp: String,
    body: String,
}

impl Setup {
    /// The card-update link of the newest dunning email to `email`: (public base, `/pay/<token>`).
    fn pay_link(&self, email: &str) -> (String, String) {
        let mail = self
            .dunning_mails()
            .into_iter()
            .rev()
            .find(|m| m.contains(email))
            .expect("a dunning email to the customer");
        let link = page_link(&mail);
        let at = link.find("/pay/").unwrap();
        (link[..at].to_owned(), link[at..].to_owned())
    }

    async fn open(&self, method: Method, path: &str) -> Page {
        let r = self
            .app
            .client
            .request(method, format!("{}{path}", self.app.address))
            .send()
            .await
            .unwrap();
        let header = |name: &str| {
            r.headers()
                .get(name)
                .map(|v| v.to_str().unwrap().to_owned())
        };
        Page {
            status: r.status().as_u16(),
            location: header("location"),
            csp: header("content-security-policy").unwrap_or_default(),
            body: r.text().await.unwrap(),
        }
    }

    async fn stripe_failure(&self) -> String {
        self.verified_sender().await;
        self.send_a(&fixture("a_basil_invoice_payment_failed"), 200)
            .await;
        self.app.run_jobs().await;
        self.pay_link("jenny.rosen@example.com").1
    }

    async fn stripe_answers(&self, verb: &str, at: &str, answer: Value) {
        Mock::given(method(verb))
            .and(path(at))
            .respond_with(ResponseTemplate::new(200).set_body_json(answer))
            .mount(&self.fake.mock)
            .await;
    }

    /// The page's button, pressed, opens the Checkout session `id` Stripe answers with.
    async fn pressed_to_checkout(&self, page: &str, id: &str) {
        let checkout = format!("https://checkout.stripe.com/c/pay/{id}");
        self.stripe_answers(
            "POST",
            "/v1/checkout/sessions",
            json!({"id": id, "object": "checkout.session", "url": checkout}),
        )
        .await;
        let pressed = self.open(Method::POST, page).await;
        assert_eq!(
            (pressed.status, pressed.location.as_deref()),
            (303, Some(checkout.as_str()))
        );
    }

    /// Stripe answers the Checkout session `id` as completed by [`CUSTOMER`] with
    /// `setup_intent`, and the customer's update.
    async fn checkout_completed(&self, id: &str, setup_intent: Value) {
        self.stripe_answers(
            "GET",
            &format!("/v1/checkout/sessions/{id}"),
            json!({"id": id, "object": "checkout.session", "customer": CUSTOMER,
                "setup_intent": setup_intent}),
        )
        .await;
        self.stripe_answers(
            "POST",
            &format!("/v1/customers/{CUSTOMER}"),
            json!({"id": CUSTOMER, "object": "customer"}),
        )
        .await;
    }

    /// The requests Stripe received at `at`: (query, form parameters) of each.
    async fn stripe_received(&self, verb: &str, at: &str) -> Vec<(String, Vec<(String, String)>)> {
        self.fake
            .received()
            .await
            .iter()
            .filter(|r| r.method.as_str() == verb && r.url.path() == at)
            .map(|r| {
                let form = url::form_urlencoded::parse(&r.body)
                    .map(|(k, v)| (k.into_owned(), v.into_owned()))
                    .collect();
                (r.url.query().unwrap_or_default().to_owned(), form)
            })
            .collect()
    }
}

/// Form parameters in the order the encoder writes them (by name).
pub(crate) fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut pairs: Vec<_> = list
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    pairs.sort();
    pairs
}

async fn the_setup_round_trip_pays_the_invoice(backend: Backend) {
    let s = setup(backend).await;
    let page = s.stripe_failure().await;
    let (base, _) = s.pay_link("jenny.rosen@example.com");

    let opened = s.open(Method::GET, &format!("{page}?via=email")).await;
    assert_eq!(opened.status, 200, "{}", opened.body);
    for text in [
        "29.90 USD",
        "Your payment did not go through",
        "Update payment method",
    ] {
        assert!(opened.body.contains(text), "{text}: {}", opened.body);
    }
    assert!(opened.body.contains(r#"<form method="post""#));
    assert!(
        opened.csp.contains("form-action 'self' https:"),
        "{}",
        opened.csp
    );

    s.pressed_to_checkout(&page, "cs_test_a1").await;
    let created = s.stripe_received("POST", "/v1/checkout/sessions").await;
    assert_eq!(
        created[0].1,
        pairs(&[
            ("mode", "setup"),
            ("customer", CUSTOMER),
            ("currency", "usd"),
            (
                "success_url",
                &format!("{base}{page}/done?session_id={{CHECKOUT_SESSION_ID}}")
            ),
            ("cancel_url", &format!("{base}{page}")),
        ])
    );

    s.checkout_completed(
        "cs_test_a1",
        json!({"id": "seti_1", "object": "setup_intent", "status": "succeeded",
            "payment_method": "pm_1NewCard"}),
    )
    .await;
    s.stripe_answers(
        "POST",
        &format!("/v1/invoices/{INVOICE}/pay"),
        json!({"id": INVOICE, "object": "invoice", "status": "paid"}),
    )
    .await;
    let back = s
        .open(Method::GET, &format!("{page}/done?session_id=cs_test_a1"))
        .await;
    assert_eq!(back.status, 200, "{}", back.body);
    assert!(
        back.body.contains("Thank you, your payment went through"),
        "{}",
        back.body
    );
    let read = s
        .stripe_received("GET", "/v1/checkout/sessions/cs_test_a1")
        .await;
    assert_eq!(read[0].0, "expand%5B%5D=setup_intent");
    let updated = s
        .stripe_received("POST", &format!("/v1/customers/{CUSTOMER}"))
        .await;
    assert_eq!(
        updated[0].1,
        pairs(&[("invoice_settings[default_payment_method]", "pm_1NewCard")])
    );
    // The retry counts like a manual one, with the dunning key of its attempt.
    let paid = s
        .stripe_received("POST", &format!("/v1/invoices/{INVOICE}/pay"))
        .await;
    assert_eq!(paid.len(), 1);
    let r = s.only_failure().await;
    assert_eq!(
        (
            &r["status"],
            &r["attempts"],
            &r["attempt_history"][0]["outcome"]
        ),
        (&json!("recovered"), &json!(1), &json!("succeeded"))
    );
    let vias: Vec<&Value> = r["page_visits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| &v["via"])
        .collect();
    assert_eq!(vias, [&json!("email")]);
    // The team sees the page's link and its visits on the record's dashboard page.
    let browser = Browser::sign_in(&s.app, "owner@acme.io").await;
    let html = browser
        .get(
            &format!("/app/p/acme/payments/{}", r["id"].as_str().unwrap()),
            200,
        )
        .await;
    assert!(html.contains(&format!(r#"href="{base}{page}""#)), "{html}");
    assert!(html.contains("<td>card-update page visited (from email)</td>"));

    // Afterwards the page says so, with no button; a reload of the return retries nothing.
    let again = s.open(Method::GET, &page).await;
    assert!(
        again.body.contains("This payment has been made"),
        "{}",
        again.body
    );
    assert!(!again.body.contains("<form"));
    let reload = s
        .open(Method::GET, &format!("{page}/done?session_id=cs_test_a1"))
        .await;
    assert_eq!(reload.status, 200);
    assert_eq!(
        s.stripe_received("POST", &format!("/v1/invoices/{INVOICE}/pay"))
            .await
            .len(),
        1
    );
}

async fn each_state_and_forged_or_expired_tokens(backend: Backend) {
    let s = setup(backend).await;
    let page = s.stripe_failure().await;
    let token = page.trim_start_matches("/pay/");
    let (id, signature) = token.rsplit_once('.').unwrap();
    let r = s.only_failure().await;
    assert_eq!(r["id"], id);

    // Forged: another signature, another id with this signature, no signature.
    let flipped = if signature.ends_with('A') { "B" } else { "A" };
    for forged in [
        format!("/pay/{id}.{}{flipped}", &signature[..signature.len() - 1]),
        format!("/pay/00000000-0000-0000-0000-000000000000.{signature}"),
        format!("/pay/{id}"),
    ] {
        for verb in [Method::GET, Method::POST] {
            let answer = s.open(verb, &forged).await;
            assert_eq!(answer.status, 404, "{forged}: {}", answer.body);
        }
    }

    // Abandoned after a hard decline: the page says so plainly and offers no button.
    Mock::given(method("POST"))
        .and(path(format!("/v1/invoices/{INVOICE}/pay")))
        .respond_with(ResponseTemplate::new(402).set_body_json(json!({"error": {
            "type": "card_error", "code": "card_declined", "decline_code": "stolen_card",
            "message": "Your card was declined."}})))
        .mount(&s.fake.mock)
        .await;
    s.retry_failure(id, 200).await;
    let abandoned = s.open(Method::GET, &page).await;
    assert_eq!(abandoned.status, 200);
    assert!(
        abandoned
            .body
            .contains("This payment can no longer be made here"),
        "{}",
        abandoned.body
    );
    assert!(!abandoned.body.contains("<form") && !abandoned.body.contains("Update payment method"));
    // Its button cannot be pressed either.
    assert_eq!(s.open(Method::POST, &page).await.status, 409);

    // The page that opened was logged, with where it came from.
    let r = s.only_failure().await;
    assert_eq!(r["page_visits"].as_array().unwrap().len(), 1);
    assert_eq!(r["page_visits"][0]["via"], "link");

    // The link lasts 60 days after the record's creation.
    advance(&s.app, 60 * 24 * 3600 - 60).await;
    assert_eq!(s.open(Method::GET, &page).await.status, 200);
    advance(&s.app, 120).await;
    assert_eq!(s.open(Method::GET, &page).await.status, 404);
}

async fn a_session_of_another_customer_changes_nothing(backend: Backend) {
    let s = setup(backend).await;
    let page = s.stripe_failure().await;
    s.stripe_answers(
        "GET",
        "/v1/checkout/sessions/cs_other",
        json!({"id": "cs_other", "object": "checkout.session", "customer": "cus_someone_else",
            "setup_intent": {"id": "seti_2", "status": "succeeded", "payment_method": "pm_theirs"}}),
    )
    .await;
    let answer = s
        .open(Method::GET, &format!("{page}/done?session_id=cs_other"))
        .await;
    assert_eq!(answer.status, 404, "{}", answer.body);
    assert!(
        s.stripe_received("POST", &format!("/v1/customers/{CUSTOMER}"))
            .await
            .is_empty()
    );
    let r = s.only_failure().await;
    assert_eq!(
        (&r["status"], &r["attempts"]),
        (&json!("failing"), &json!(0))
    );
}

async fn razorpay_and_custom_targets(backend: Backend) {
    let s = setup(backend).await;
    s.verified_sender().await;
    // Razorpay: the payment's short_url.
    let mut event: Value = serde_json::from_str(&fixture("b_payment_failed")).unwrap();
    event["payload"]["invoice"] =
        json!({"entity": {"id": "inv_EpitssSmeINDJU", "short_url": "https://rzp.io/i/Pay42"}});
    s.send_b("evt_b1", &event.to_string()).await;
    s.app.run_jobs().await;
    let (_, page) = s.pay_link("gaurav.kumar@example.com");
    let opened = s.open(Method::GET, &page).await;
    assert_eq!(opened.status, 200, "{}", opened.body);
    assert!(opened.body.contains("500.00 INR"), "{}", opened.body);
    assert!(
        opened
            .body
            .contains(r#"<a class="button" href="https://rzp.io/i/Pay42""#),
        "{}",
        opened.body
    );
    // No Checkout for Razorpay.
    assert_eq!(s.open(Method::POST, &page).await.status, 409);

    // Custom: the project's update_payment_url, https only.
    let patch = |url: &str| {
        s.app
            .req(Method::PATCH, "/projects/acme")
            .bearer_auth(&s.token)
            .json(&json!({"settings": {"update_payment_url": url}}))
    };
    let refused = s.app.expect(patch("http://acme.io/billing"), 400).await;
    assert_eq!(
        refused["error"]["details"][0]["field"],
        "settings.update_payment_url"
    );
    let saved = s.app.expect(patch("https://acme.io/billing"), 200).await;
    assert_eq!(
        saved["data"]["settings"]["update_payment_url"],
        "https://acme.io/billing"
    );
    s.send_custom(json!({"id": "c1", "type": "payment.failed",
        "customer_email": "ada@example.com", "amount": 1200, "currency": "eur",
        "payment_id": "p_9", "plan_name": "Team"}))
        .await;
    s.app.run_jobs().await;
    let (_, page) = s.pay_link("ada@example.com");
    let opened = s.open(Method::GET, &page).await;
    assert!(opened.body.contains("12.00 EUR"), "{}", opened.body);
    assert!(opened.body.contains("<dd>Team</dd>"), "{}", opened.body);
    assert!(
        opened
            .body
            .contains(r#"<a class="button" href="https://acme.io/billing""#),
        "{}",
        opened.body
    );
}

async fn the_banner_status_follows_the_failing_record(backend: Backend) {
    const JENNY: &str = "jenny.rosen@example.com";
    const SHOP: &str = "https://shop.example";
    let s = setup(backend).await;
    let secret = identity_secret(&s.app, &s.token, "acme").await;
    let hash = churn_sdk::identity::customer_hash(&secret, JENNY, None);
    let status = |hash: Option<String>, origin: Option<&str>| {
        let mut query = vec![("customer_email", JENNY.to_owned())];
        query.extend(hash.map(|h| ("customer_hash", h)));
        let mut req = s
            .app
            .req(Method::GET, &format!("/customer-status/{}", s.public_key))
            .query(&query);
        if let Some(origin) = origin {
            req = req.header("Origin", origin);
        }
        req
    };
    let nothing = s.app.expect(status(Some(hash.clone()), None), 200).await;
    assert_eq!(
        nothing,
        json!({"data": {"payment_failing": false, "update_url": null}})
    );

    let page = s.stripe_failure().await;
    let failing = s.app.expect(status(Some(hash.clone()), None), 200).await;
    assert_eq!(failing["data"]["payment_failing"], true);
    let url = failing["data"]["update_url"].as_str().unwrap();
    assert!(url.ends_with(&format!("{page}?via=banner")), "{url}");
    let at = url.find("/pay/").unwrap();
    assert_eq!(s.open(Method::GET, &url[at..]).await.status, 200);
    assert_eq!(s.only_failure().await["page_visits"][0]["via"], "banner");

    // A wrong or missing hash: the cancel flow's 401.
    let other = churn_sdk::identity::customer_hash(&secret, "eve@example.com", None);
    for hash in [Some(other), None] {
        let refused = s.app.expect(status(hash, None), 401).await;
        assert_eq!(
            refused["error"]["message"],
            "customer_hash is missing or does not match"
        );
    }

    // Allowed origins as for the widget: a listed origin gets CORS, another is 403.
    s.app
        .expect(
            s.app
                .req(Method::PUT, "/projects/acme/allowed-origins")
                .bearer_auth(&s.token)
                .json(&json!({"allowed_origins": [SHOP]})),
            200,
        )
        .await;
    let foreign = status(Some(hash.clone()), Some("https://evil.example"))
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403);
    assert!(
        foreign
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );
    let listed = status(Some(hash.clone()), Some(SHOP)).send().await.unwrap();
    assert_eq!(listed.status(), 200);
    assert_eq!(listed.headers()["access-control-allow-origin"], SHOP);
    let preflight = s
        .app
        .req(
            Method::OPTIONS,
            &format!("/customer-status/{}", s.public_key),
        )
        .header("Origin", SHOP)
        .header("Access-Control-Request-Method", "GET")
        .send()
        .await
        .unwrap();
    assert_eq!(preflight.status(), 204);
    assert_eq!(
        preflight.headers()["access-control-allow-methods"],
        "GET, OPTIONS"
    );

    // Once paid, no banner.
    s.stripe_answers(
        "POST",
        &format!("/v1/invoices/{INVOICE}/pay"),
        json!({"id": INVOICE, "object": "invoice", "status": "paid"}),
    )
    .await;
    let id = s.only_failure().await["id"].as_str().unwrap().to_owned();
    s.retry_failure(&id, 200).await;
    let paid = s.app.expect(status(Some(hash), None), 200).await;
    assert_eq!(paid["data"]["payment_failing"], false);
}

async fn a_declined_new_card_is_said_and_a_reload_retries_nothing(backend: Backend) {
    let s = setup(backend).await;
    let page = s.stripe_failure().await;
    s.checkout_completed(
        "cs_test_b2",
        json!({"id": "seti_3", "status": "succeeded", "payment_method": "pm_2"}),
    )
    .await;
    Mock::given(method("POST"))
        .and(path(format!("/v1/invoices/{INVOICE}/pay")))
        .respond_with(ResponseTemplate::new(402).set_body_json(json!({"error": {
            "type": "card_error", "code": "card_declined", "decline_code": "insufficient_funds",
            "message": "Your card has insufficient funds."}})))
        .mount(&s.fake.mock)
        .await;
    let done = format!("{page}/done?session_id=cs_test_b2");
    let back = s.open(Method::GET, &done).await;
    assert_eq!(back.status, 200, "{}", back.body);
    assert!(back.body.contains("declined again"), "{}", back.body);
    // The button on the returned page posts to the page itself, not to `/done`.
    let action = format!(r#"<form method="post" action="{page}""#);
    assert!(back.body.contains(&action), "{}", back.body);
    s.pressed_to_checkout(&page, "cs_test_b3").await;
    let reload = s.open(Method::GET, &done).await;
    assert_eq!(reload.status, 200);
    assert!(!reload.body.contains("declined again"), "{}", reload.body);
    let pays = s
        .stripe_received("POST", &format!("/v1/invoices/{INVOICE}/pay"))
        .await;
    assert_eq!(pays.len(), 1);
    let r = s.only_failure().await;
    assert_eq!(
        (&r["status"], &r["attempts"], &r["decline_code"]),
        (&json!("failing"), &json!(1), &json!("insufficient_funds"))
    );
}
