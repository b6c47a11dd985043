use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{
    Backend, Options, TestApp, acme_owner as owner, advance, configure, event_of, login,
    mark_recovered, post_event, rotate_secret_key, send_variant, variant_of,
};
use churn_core::both_backends;
use churn_core::testing::outbox_without_verifications;

both_backends!(
    lifecycle_from_creation_to_recovery,
    creation_and_list_are_validated,
    lists_paginate_filter_and_sort,
    the_mapped_strategy_is_recommended_for_each_reason,
    ten_concurrent_sends_deliver_one_email,
    recovery_window_moves_unrecovered_events_to_lost,
    statistics_count_and_sum,
    expired_subscription_is_402_on_every_event_route,
    opens_and_clicks_are_tracked_without_open_redirects,
    drafts_are_edited_and_sanitised,
    unscoped_form_has_its_own_shapes,
    sending_without_email_configured_is_500,
    concurrent_generations_store_one_set,
    events_are_isolated_between_tenants,
    query_errors_use_each_form_s_body,
    terminal_events_cannot_be_edited,
    nine_emails_of_a_fixed_event,
    strategy_outcomes_follow_sends_and_recoveries,
);

async fn create_event(app: &TestApp, token: &str, body: Value) -> Value {
    post_event(app, token, &body, 201).await["data"].clone()
}

async fn generate(app: &TestApp, token: &str, id: &str) -> Value {
    app.call(
        token,
        Method::POST,
        &format!("/projects/acme/churn-events/{id}/generate"),
        200,
    )
    .await["data"]
        .clone()
}

fn recommended(generated: &Value) -> Value {
    let recommended: Vec<_> = generated["variants"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["recommended"] == true)
        .cloned()
        .collect();
    assert_eq!(recommended.len(), 1, "exactly one recommended variant");
    recommended[0].clone()
}

/// A cancellation of `email` without a name or reason.
async fn cancellation(app: &TestApp, token: &str, email: &str) -> Value {
    create_event(
        app,
        token,
        json!({"customer_email": email, "event_type": "cancellation"}),
    )
    .await
}

/// Generates the drafts of the event `id`; answers the recommended one's id.
async fn recommended_id(app: &TestApp, token: &str, id: &str) -> String {
    recommended(&generate(app, token, id).await)["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// `GET …/churn-events/{id}/variants`, the whole body.
async fn variants_of(app: &TestApp, token: &str, id: &str) -> Value {
    let path = format!("/projects/acme/churn-events/{id}/variants");
    app.call(token, Method::GET, &path, 200).await
}

/// The statuses of concurrent answers.
fn statuses_of(answers: Vec<reqwest::Result<reqwest::Response>>) -> Vec<u16> {
    answers
        .into_iter()
        .map(|r| r.unwrap().status().as_u16())
        .collect()
}

/// How many of `statuses` are `status`.
fn tally(statuses: &[u16], status: u16) -> usize {
    statuses.iter().filter(|s| **s == status).count()
}

fn send_path(event: &str, variant: &str) -> String {
    format!("/projects/acme/churn-events/{event}/variants/{variant}/send")
}

async fn lifecycle_from_creation_to_recovery(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let token = owner(&app).await;
    with_material(&app, &token).await;
    let event = create_event(
        &app,
        &token,
        json!({"customer_email": "Dana@Northwind.example", "customer_name": "Dana Scully", "event_type": "cancellation",
               "cancel_reason": "It's too expensive for our budget", "mrr": 4900, "plan_name": "Growth", "tenure_days": 420}),
    )
    .await;
    assert_eq!(event["status"], "new");
    assert_eq!(event["provider"], "api");
    assert_eq!(event["currency"], "usd");
    assert_eq!(event["customer_email"], "dana@northwind.example");
    assert_eq!(event["reason_code"], "too_expensive");
    let id = event["id"].as_str().unwrap();

    // Sending before generating: the event's status decides, whatever the variant id.
    let early = send_variant(&app, &token, id, "no-such-variant", 400).await;
    assert_eq!(
        early["error"]["message"],
        "variants must be generated before sending emails"
    );

    let generated = generate(&app, &token, id).await;
    assert_eq!(generated["event_id"], id);
    assert_eq!(generated["status"], "variants_generated");
    let variants = generated["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 9);
    let mut strategies: Vec<_> = variants
        .iter()
        .map(|v| v["strategy"].as_str().unwrap().to_owned())
        .collect();
    strategies.sort();
    assert_eq!(
        strategies,
        [
            "discount",
            "downgrade_offer",
            "feedback_request",
            "founder_email",
            "pain_point_fix",
            "pause_option",
            "social_proof",
            "unused_feature",
            "value_recap"
        ]
    );
    let mut ranks: Vec<_> = variants
        .iter()
        .map(|v| v["rank"].as_i64().unwrap())
        .collect();
    ranks.sort();
    assert_eq!(ranks, (1..=9).collect::<Vec<_>>());
    assert!(variants.iter().all(|v| v["status"] == "draft"
        && v["generator"] == "template"
        && !v["rank_reasons"].as_array().unwrap().is_empty()));
    let best = recommended(&generated);
    assert_eq!(best["strategy"], "discount");
    assert_eq!(best["rank"], 1);
    assert_eq!(best["coupon_percent"], 20);
    assert_eq!(best["coupon_code"], "COMEBACK20");
    assert!(variants.iter().all(|v| v["warnings"] == json!([])));
    assert!(best["body_text"].as_str().unwrap().contains("Hi Dana,"));
    let pause = variants
        .iter()
        .find(|v| v["strategy"] == "pause_option")
        .unwrap();
    assert_eq!(pause["offer"]["kind"], "pause");

    let again = app
        .call(
            &token,
            Method::POST,
            &format!("/projects/acme/churn-events/{id}/generate"),
            400,
        )
        .await;
    assert_eq!(
        again["error"]["message"],
        "variants have already been generated"
    );

    let listed = variants_of(&app, &token, id).await;
    assert_eq!(listed["data"].as_array().unwrap().len(), 9);

    let vid = best["id"].as_str().unwrap();
    let unknown = send_variant(&app, &token, id, "nope", 404).await;
    assert_eq!(unknown["error"]["message"], "variant not found");
    let sent = send_variant(&app, &token, id, vid, 200).await["data"].clone();
    assert_eq!(sent["variant_id"], vid);
    assert_eq!(sent["status"], "sent");
    assert_eq!(sent["recipient"], "dana@northwind.example");
    assert!(sent["sent_at"].as_str().unwrap().ends_with('Z'));
    let twice = send_variant(&app, &token, id, vid, 409).await;
    assert_eq!(twice["error"]["code"], "CONFLICT");

    let mails = outbox_without_verifications(app.data_dir());
    assert_eq!(mails.len(), 1);
    let mail = &mails[0];
    for header in [
        "To: \"Dana Scully\" <dana@northwind.example>",
        "Reply-To: support@acme.io",
        "List-Unsubscribe: <http://127.0.0.1:",
        "/u/",
        "<mailto:support@acme.io?subject=unsubscribe>",
        "List-Unsubscribe-Post: List-Unsubscribe=One-Click",
    ] {
        assert!(mail.contains(header), "missing {header}:\n{mail}");
    }
    assert!(
        mail.contains("multipart/alternative")
            && mail.contains("text/plain")
            && mail.contains("text/html")
    );

    let detail = event_of(&app, &token, id).await;
    assert_eq!(detail["status"], "email_sent");
    assert_eq!(detail["variants"].as_array().unwrap().len(), 9);
    let other = detail["variants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["id"] != vid)
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    send_variant(&app, &token, id, &other, 200).await;

    let recovered = app
        .call(
            &token,
            Method::POST,
            &format!("/projects/acme/churn-events/{id}/recovered"),
            200,
        )
        .await["data"]
        .clone();
    assert_eq!(recovered["status"], "recovered");
    assert_eq!(recovered["recovered_via"], "email");
    assert!(recovered["recovered_at"].is_string());
    let repeat = app
        .call(
            &token,
            Method::POST,
            &format!("/projects/acme/churn-events/{id}/recovered"),
            400,
        )
        .await;
    assert_eq!(
        repeat["error"]["message"],
        "churn event is already recovered"
    );
    let reason = app
        .call_json(
            &token,
            Method::PATCH,
            &format!("/projects/acme/churn-events/{id}/cancel-reason"),
            &json!({"cancel_reason": "x"}),
            400,
        )
        .await;
    assert_eq!(
        reason["error"]["message"],
        "churn event is already recovered"
    );
    let late = send_variant(&app, &token, id, vid, 400).await;
    assert_eq!(
        late["error"]["message"],
        "variants must be generated before sending emails"
    );

    // A customer may come back before any email: recovered straight from `new`.
    let early = create_event(
        &app,
        &token,
        json!({"customer_email": "x@y.io", "event_type": "payment_failed"}),
    )
    .await;
    let back = app
        .call(
            &token,
            Method::POST,
            &format!(
                "/projects/acme/churn-events/{}/recovered",
                early["id"].as_str().unwrap()
            ),
            200,
        )
        .await;
    assert_eq!(back["data"]["recovered_via"], "manual");
    // Cancel reason updates the code.
    let fresh = cancellation(&app, &token, "z@y.io").await;
    let changed = app
        .call_json(
            &token,
            Method::PATCH,
            &format!(
                "/projects/acme/churn-events/{}/cancel-reason",
                fresh["id"].as_str().unwrap()
            ),
            &json!({"cancel_reason": "Switching to a competitor"}),
            200,
        )
        .await;
    assert_eq!(changed["data"]["reason_code"], "switching_competitor");
}

async fn creation_and_list_are_validated(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let token = owner(&app).await;
    let bad = post_event(&app, &token, &json!({"customer_email": "nope", "event_type": "refund", "mrr": -1, "currency": "dollars", "tenure_days": -2}), 400).await;
    insta::assert_json_snapshot!("event_validation", bad);
    let missing = post_event(&app, &token, &json!({"event_type": "cancellation"}), 400).await;
    assert_eq!(missing["error"]["details"][0]["field"], "customer_email");
    for query in [
        "per_page=101",
        "page=0",
        "sort=name",
        "status=done",
        "event_type=refund",
        "order=up",
    ] {
        let body = app
            .call(
                &token,
                Method::GET,
                &format!("/projects/acme/churn-events?{query}"),
                400,
            )
            .await;
        let field = query.split('=').next().unwrap();
        assert_eq!(body["error"]["details"][0]["field"], field, "{query}");
    }
    app.call(&token, Method::GET, "/projects/acme/churn-events/nope", 404)
        .await;
}

async fn lists_paginate_filter_and_sort(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let token = owner(&app).await;
    for i in 0..25 {
        let kind = if i % 5 == 0 {
            "payment_failed"
        } else {
            "cancellation"
        };
        let mrr = if i % 4 == 0 {
            Value::Null
        } else {
            json!(i * 100)
        };
        create_event(
            &app,
            &token,
            json!({"customer_email": format!("c{i:02}@x.io"), "event_type": kind, "mrr": mrr}),
        )
        .await;
    }
    let page = |q: &str| {
        app.req(Method::GET, &format!("/projects/acme/churn-events?{q}"))
            .bearer_auth(&token)
    };
    let first = app.expect(page(""), 200).await;
    assert_eq!(
        first["meta"],
        json!({"page": 1, "per_page": 20, "total": 25, "total_pages": 2})
    );
    let items = first["data"].as_array().unwrap();
    assert_eq!(items.len(), 20);
    assert_eq!(items[0]["customer_email"], "c24@x.io", "newest first");
    let second = app.expect(page("page=2"), 200).await;
    assert_eq!(second["data"].as_array().unwrap().len(), 5);
    assert_eq!(second["data"][4]["customer_email"], "c00@x.io");

    let failed = app
        .expect(page("event_type=payment_failed&per_page=100"), 200)
        .await;
    assert_eq!(failed["meta"]["total"], 5);
    let by_email = app
        .expect(page("sort=customer_email&order=asc&per_page=3"), 200)
        .await;
    let emails: Vec<_> = by_email["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["customer_email"].as_str().unwrap())
        .collect();
    assert_eq!(emails, ["c00@x.io", "c01@x.io", "c02@x.io"]);
    let by_mrr = app
        .expect(page("sort=mrr&order=desc&per_page=2"), 200)
        .await;
    assert_eq!(by_mrr["data"][0]["mrr"], 2300);
    let news = app.expect(page("status=new"), 200).await;
    assert_eq!(news["meta"]["total"], 25);
    let none = app.expect(page("status=recovered"), 200).await;
    assert_eq!(
        none["meta"],
        json!({"page": 1, "per_page": 20, "total": 0, "total_pages": 0})
    );

    // The search: part of an email (any case), or a whole event id; `_` is no wildcard.
    let fragment = app.expect(page("q=C1&per_page=100"), 200).await;
    assert_eq!(fragment["meta"]["total"], 10);
    let id = items[3]["id"].as_str().unwrap();
    let by_id = app.expect(page(&format!("q={id}")), 200).await;
    assert_eq!(by_id["meta"]["total"], 1);
    assert_eq!(by_id["data"][0]["id"], id);
    let whole = app.expect(page("q=c07@x.io"), 200).await;
    assert_eq!(whole["data"][0]["customer_email"], "c07@x.io");
    assert_eq!(whole["meta"]["total"], 1);
    let literal = app.expect(page("q=c_7"), 200).await;
    assert_eq!(literal["meta"]["total"], 0);
}

/// Gives `acme` every strategy's material (decisions §15), so the mapping alone decides.
async fn with_material(app: &TestApp, token: &str) {
    configure(app, token, json!({"coupon_code": "COMEBACK20", "founder_name": "Ada Lovelace", "testimonials": [{"quote": "Setup took one afternoon.", "author": "Tom"}], "features": ["Scheduled reports"]})).await;
}

async fn the_mapped_strategy_is_recommended_for_each_reason(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let token = owner(&app).await;
    with_material(&app, &token).await;
    let mapping = [
        ("too_expensive", "discount"),
        ("missing_features", "unused_feature"),
        ("not_using_enough", "value_recap"),
        ("switching_competitor", "social_proof"),
        ("technical_issues", "pain_point_fix"),
        ("poor_support", "founder_email"),
        ("dont_need_anymore", "pause_option"),
        ("other", "feedback_request"),
    ];
    for (reason, strategy) in mapping {
        let event = create_event(&app, &token, json!({"customer_email": "c@x.io", "event_type": "cancellation", "cancel_reason": reason})).await;
        let generated = generate(&app, &token, event["id"].as_str().unwrap()).await;
        assert_eq!(recommended(&generated)["strategy"], strategy, "{reason}");
    }
}

async fn ten_concurrent_sends_deliver_one_email(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let token = owner(&app).await;
    let event = cancellation(&app, &token, "c@x.io").await;
    let id = event["id"].as_str().unwrap();
    let vid = recommended_id(&app, &token, id).await;
    let sends = (0..10).map(|_| {
        app.req(Method::POST, &send_path(id, &vid))
            .bearer_auth(&token)
            .send()
    });
    let statuses = statuses_of(futures::future::join_all(sends).await);
    assert_eq!(tally(&statuses, 200), 1, "{statuses:?}");
    assert_eq!(tally(&statuses, 409), 9, "{statuses:?}");
    assert_eq!(outbox_without_verifications(app.data_dir()).len(), 1);
}

async fn recovery_window_moves_unrecovered_events_to_lost(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let token = owner(&app).await;
    // Registration queued a verification email: out of the way before counting jobs.
    app.run_jobs().await;
    configure(&app, &token, json!({"recovery_window_days": 10})).await;
    let mut ids = Vec::new();
    for email in ["stays@x.io", "comes-back@x.io"] {
        let event = create_event(
            &app,
            &token,
            json!({"customer_email": email, "event_type": "cancellation"}),
        )
        .await;
        let id = event["id"].as_str().unwrap().to_owned();
        let vid = recommended(&generate(&app, &token, &id).await)["id"]
            .as_str()
            .unwrap()
            .to_owned();
        send_variant(&app, &token, &id, &vid, 200).await;
        ids.push(id);
    }
    advance(&app, 10 * 86_400 - 60).await;
    assert_eq!(
        app.run_jobs().await,
        0,
        "nothing is due before the window ends"
    );
    // Sessions last a week of clock time: sign in again after the jump.
    let token = login(&app, "owner@acme.io").await;
    let event = |id: &str| {
        app.req(Method::GET, &format!("/projects/acme/churn-events/{id}"))
            .bearer_auth(&token)
    };
    assert_eq!(
        app.expect(event(&ids[0]), 200).await["data"]["status"],
        "email_sent"
    );
    app.call(
        &token,
        Method::POST,
        &format!("/projects/acme/churn-events/{}/recovered", ids[1]),
        200,
    )
    .await;
    advance(&app, 60).await;
    assert_eq!(app.run_jobs().await, 2);
    let lost = app.expect(event(&ids[0]), 200).await["data"].clone();
    assert_eq!(lost["status"], "lost");
    assert!(lost["lost_at"].is_string());
    assert_eq!(
        app.expect(event(&ids[1]), 200).await["data"]["status"],
        "recovered"
    );
    assert_eq!(app.run_jobs().await, 0, "jobs run once");
    let lost_message = app
        .call(
            &token,
            Method::POST,
            &format!("/projects/acme/churn-events/{}/recovered", ids[0]),
            400,
        )
        .await;
    assert_eq!(lost_message["error"]["message"], "churn event is lost");
}

async fn statistics_count_and_sum(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let token = owner(&app).await;
    let empty = app
        .call(&token, Method::GET, "/projects/acme/stats", 200)
        .await;
    assert_eq!(
        empty["data"],
        json!({"total_events": 0, "recovered": 0, "lost": 0, "processing": 0, "recovery_rate": 0.0, "total_mrr_cents": 0, "recovered_mrr_cents": 0})
    );
    let mut ids = Vec::new();
    for mrr in [json!(1000), json!(2500), Value::Null, json!(4000)] {
        let e = create_event(
            &app,
            &token,
            json!({"customer_email": "c@x.io", "event_type": "cancellation", "mrr": mrr}),
        )
        .await;
        ids.push(e["id"].as_str().unwrap().to_owned());
    }
    // Recover the 1000 and the MRR-less event; lose the 2500 through the recovery window.
    for i in [0, 2] {
        mark_recovered(&app, &token, &ids[i]).await;
    }
    let vid = recommended(&generate(&app, &token, &ids[1]).await)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    send_variant(&app, &token, &ids[1], &vid, 200).await;
    advance(&app, 30 * 86_400).await;
    app.run_jobs().await;
    let token = login(&app, "owner@acme.io").await;
    let stats = app
        .call(&token, Method::GET, "/projects/acme/stats", 200)
        .await;
    let expected = json!({"total_events": 4, "recovered": 2, "lost": 1, "processing": 1, "recovery_rate": 66.67, "total_mrr_cents": 7500, "recovered_mrr_cents": 1000});
    assert_eq!(stats["data"], expected);

    let account = app.call(&token, Method::GET, "/stats", 200).await;
    assert_eq!(account["data"]["total_events"], 4);
    assert_eq!(account["data"]["projects"][0]["slug"], "acme");
    assert_eq!(account["data"]["projects"][0]["recovered_mrr_cents"], 1000);
    let key = rotate_secret_key(&app, &token).await;
    let by_key = app.call_with_key(&key, Method::GET, "/stats", 200).await;
    assert_eq!(by_key["data"], expected);
}

async fn expired_subscription_is_402_on_every_event_route(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options::default().with("subscriptions", "on")).await;
    let token = owner(&app).await;
    let event = cancellation(&app, &token, "c@x.io").await;
    let id = event["id"].as_str().unwrap();
    let key = rotate_secret_key(&app, &token).await;
    advance(&app, 15 * 86_400).await;
    let routes = [
        (
            Method::POST,
            "/projects/acme/churn-events".to_owned(),
            Some(json!({"customer_email": "c@x.io", "event_type": "cancellation"})),
        ),
        (Method::GET, "/projects/acme/churn-events".to_owned(), None),
        (
            Method::GET,
            format!("/projects/acme/churn-events/{id}"),
            None,
        ),
        (
            Method::POST,
            format!("/projects/acme/churn-events/{id}/generate"),
            None,
        ),
        (
            Method::POST,
            format!("/projects/acme/churn-events/{id}/recovered"),
            None,
        ),
        (
            Method::PATCH,
            format!("/projects/acme/churn-events/{id}/cancel-reason"),
            Some(json!({"cancel_reason": "x"})),
        ),
        (
            Method::GET,
            format!("/projects/acme/churn-events/{id}/variants"),
            None,
        ),
        (
            Method::POST,
            format!("/projects/acme/churn-events/{id}/variants/v/send"),
            None,
        ),
        (
            Method::PATCH,
            format!("/projects/acme/churn-events/{id}/variants/v"),
            Some(json!({"subject": "x"})),
        ),
        (Method::GET, "/churn-events".to_owned(), None),
        (
            Method::POST,
            "/churn-events".to_owned(),
            Some(json!({"customer_email": "c@x.io"})),
        ),
        (Method::GET, format!("/churn-events/{id}"), None),
        (Method::POST, format!("/churn-events/{id}/generate"), None),
        (Method::POST, format!("/churn-events/{id}/recovered"), None),
        (
            Method::POST,
            format!("/churn-events/{id}/variants/v/send"),
            None,
        ),
    ];
    for (method, path, body) in routes {
        let mut req = app.req(method.clone(), &path).header("X-API-Key", &key);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let answer = app.expect(req, 402).await;
        let code = if path.starts_with("/churn-events") {
            &answer["code"]
        } else {
            &answer["error"]["code"]
        };
        assert_eq!(code, "SUBSCRIPTION_EXPIRED", "{method} {path}: {answer}");
    }
    // Statistics are not a churn-event route.
    app.call_with_key(&key, Method::GET, "/projects/acme/stats", 200)
        .await;
}

async fn opens_and_clicks_are_tracked_without_open_redirects(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let token = owner(&app).await;
    configure(
        &app,
        &token,
        json!({"product_url": "https://acme.io/account"}),
    )
    .await;
    let event = create_event(&app, &token, json!({"customer_email": "c@x.io", "event_type": "cancellation", "cancel_reason": "not_using_enough"})).await;
    let id = event["id"].as_str().unwrap();
    let generated = generate(&app, &token, id).await;
    let vid = recommended(&generated)["id"].as_str().unwrap().to_owned();
    send_variant(&app, &token, id, &vid, 200).await;
    let mail = outbox_without_verifications(app.data_dir())
        .remove(0)
        .replace("=\r\n", "")
        .replace("=3D", "=");
    let pixel = find_url(&mail, ".gif");
    let click = find_url(&mail, "/c?u=").replace("&amp;", "&");

    let gif = app.client.get(&pixel).send().await.unwrap();
    assert_eq!(gif.status(), 200);
    assert_eq!(gif.headers()["content-type"], "image/gif");
    let opened = variant_of(&app, &token, id, &vid).await;
    assert_eq!(
        (opened["status"].as_str(), opened["open_count"].as_i64()),
        (Some("opened"), Some(1))
    );
    assert!(opened["opened_at"].is_string());

    let redirect = app.client.get(&click).send().await.unwrap();
    assert_eq!(redirect.status(), 302);
    assert_eq!(redirect.headers()["location"], "https://acme.io/account");
    app.client.get(&pixel).send().await.unwrap();
    let clicked = variant_of(&app, &token, id, &vid).await;
    assert_eq!(
        clicked["status"], "clicked",
        "an open after a click does not go backwards"
    );
    assert_eq!(
        (
            clicked["open_count"].as_i64(),
            clicked["click_count"].as_i64()
        ),
        (Some(2), Some(1))
    );

    let forged_target = click.replace("acme.io", "evil.example");
    assert_eq!(
        app.client
            .get(&forged_target)
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
    let unsigned = format!("{}/t/{vid}.gif", app.address);
    assert_eq!(
        app.client.get(&unsigned).send().await.unwrap().status(),
        404
    );
    let no_sig = click.split("&s=").next().unwrap().to_owned();
    assert_eq!(app.client.get(&no_sig).send().await.unwrap().status(), 404);
}

/// The first URL in a raw email containing `needle`, with the address rebased on the test server.
pub fn find_url(mail: &str, needle: &str) -> String {
    let at = mail
        .find(needle)
        .unwrap_or_else(|| panic!("{needle} not in:\n{mail}"));
    let start = mail[..at].rfind("http").unwrap();
    let end = at + mail[at..].find('"').unwrap();
    mail[start..end].to_owned()
}

async fn drafts_are_edited_and_sanitised(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let token = owner(&app).await;
    let event = cancellation(&app, &token, "c@x.io").await;
    let id = event["id"].as_str().unwrap();
    let vid = recommended_id(&app, &token, id).await;
    let path = format!("/projects/acme/churn-events/{id}/variants/{vid}");
    let edited = app.call_json(&token, Method::PATCH, &path, &json!({"subject": "A better subject", "body": "<p onclick=\"x()\">Hello <b>Dana</b></p><script>alert(1)</script>"}), 200).await["data"]
        .clone();
    assert_eq!(edited["subject"], "A better subject");
    assert_eq!(edited["status"], "draft");
    let body = edited["body"].as_str().unwrap();
    assert!(
        body.contains("<b>Dana</b>") && !body.contains("script") && !body.contains("onclick"),
        "{body}"
    );
    let long = app
        .call_json(
            &token,
            Method::PATCH,
            &path,
            &json!({"subject": "x".repeat(201)}),
            400,
        )
        .await;
    assert_eq!(long["error"]["details"][0]["field"], "subject");
    send_variant(&app, &token, id, &vid, 200).await;
    let mail = outbox_without_verifications(app.data_dir()).remove(0);
    assert!(mail.contains("Subject: A better subject"));
    let sent = app
        .call_json(
            &token,
            Method::PATCH,
            &path,
            &json!({"subject": "late"}),
            409,
        )
        .await;
    assert_eq!(
        sent["error"]["message"],
        "only draft variants can be edited"
    );
}

async fn unscoped_form_has_its_own_shapes(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let token = owner(&app).await;
    let key = rotate_secret_key(&app, &token).await;
    let created = app
        .expect(
            app.req(Method::POST, "/churn-events")
                .header("X-API-Key", &key)
                .json(&json!({"customer_email": "c@x.io", "mrr_cents": 1999, "provider": "custom", "provider_customer_id": "cus_1", "cancel_reason": "too_expensive"})),
            201,
        )
        .await["data"]
        .clone();
    assert_eq!(created["mrr_cents"], 1999);
    assert!(created.get("mrr").is_none());
    assert_eq!(created["event_type"], "cancellation");
    assert_eq!(created["provider"], "custom");
    let id = created["id"].as_str().unwrap();

    let list = app
        .call_with_key(&key, Method::GET, "/churn-events?limit=5", 200)
        .await;
    assert_eq!(
        (
            list["total"].as_u64(),
            list["limit"].as_i64(),
            list["offset"].as_i64()
        ),
        (Some(1), Some(5), Some(0))
    );
    assert_eq!(list["data"][0]["mrr_cents"], 1999);
    let bad_limit = app
        .call_with_key(&key, Method::GET, "/churn-events?limit=101", 400)
        .await;
    insta::assert_json_snapshot!("legacy_validation", bad_limit);

    let generated = app
        .call_with_key(
            &key,
            Method::POST,
            &format!("/churn-events/{id}/generate"),
            200,
        )
        .await;
    assert!(generated.get("data").is_none());
    let variants = generated["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 9);
    assert!(variants.iter().all(|v| v["churn_event_id"] == id));
    let vid = variants.iter().find(|v| v["recommended"] == true).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.call_with_key(
        &key,
        Method::POST,
        &format!("/churn-events/{id}/variants/{vid}/send"),
        200,
    )
    .await;
    let again = app
        .call_with_key(
            &key,
            Method::POST,
            &format!("/churn-events/{id}/variants/{vid}/send"),
            400,
        )
        .await;
    assert_eq!(
        again,
        json!({"error": "this variant has already been sent", "code": "VALIDATION_ERROR"})
    );

    // With a session: the user's only project, or ?project=.
    let detail = app
        .call(&token, Method::GET, &format!("/churn-events/{id}"), 200)
        .await;
    assert_eq!(detail["data"]["status"], "email_sent");
    app.call_json(
        &token,
        Method::POST,
        "/churn-events?project=acme",
        &json!({"customer_email": "d@x.io"}),
        201,
    )
    .await;
    let recovered = app
        .call(
            &token,
            Method::POST,
            &format!("/churn-events/{id}/recovered"),
            200,
        )
        .await;
    assert_eq!(recovered["data"]["status"], "recovered");
    let missing = app
        .call(&token, Method::GET, "/churn-events/nope", 404)
        .await;
    insta::assert_json_snapshot!("legacy_not_found", missing);
    let unauthorized = app.expect(app.req(Method::GET, "/churn-events"), 401).await;
    assert_eq!(unauthorized["code"], "UNAUTHORIZED");
    // Another tenant sees nothing.
    let other = app.register("other@x.io").await;
    app.call(
        &other.token,
        Method::GET,
        &format!("/churn-events/{id}"),
        404,
    )
    .await;
}

async fn sending_without_email_configured_is_500(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options::default().with("email_outbox", "")).await;
    let token = owner(&app).await;
    let event = cancellation(&app, &token, "c@x.io").await;
    let id = event["id"].as_str().unwrap();
    let vid = recommended_id(&app, &token, id).await;
    let answer = send_variant(&app, &token, id, &vid, 500).await;
    assert_eq!(
        answer["error"]["message"],
        "email service is not configured"
    );
    let variants = variants_of(&app, &token, id).await;
    assert!(
        variants["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v["status"] == "draft")
    );
}

async fn concurrent_generations_store_one_set(backend: Backend) {
    let llm = crate::email::start_llm().await;
    let app = crate::email::writing_with(backend, &llm, 5).await;
    let token = owner(&app).await;
    let event = cancellation(&app, &token, "c@x.io").await;
    let id = event["id"].as_str().unwrap();
    let path = format!("/projects/acme/churn-events/{id}/generate");
    let answers = futures::future::join_all(
        (0..5).map(|_| app.req(Method::POST, &path).bearer_auth(&token).send()),
    )
    .await;
    let statuses = statuses_of(answers);
    assert_eq!(tally(&statuses, 200), 1, "{statuses:?}");
    // Losers find the generation running (409) or already done (400).
    assert!(
        statuses.iter().all(|s| [200, 400, 409].contains(s)),
        "{statuses:?}"
    );
    assert_eq!(
        llm.requests.load(std::sync::atomic::Ordering::SeqCst),
        9,
        "the generator ran once"
    );
    let variants = variants_of(&app, &token, id).await;
    assert_eq!(variants["data"].as_array().unwrap().len(), 9);

    // A generation left running (as by a crash) holds the event until its lease, twice the
    // LLM timeout, has passed on the service clock; then another may take over. The first
    // run lasts the 5 s timeout (one strategy's answer is slower), which leaves time for that.
    let event = cancellation(&app, &token, "d@x.io").await;
    let id = event["id"].as_str().unwrap();
    let path = format!("/projects/acme/churn-events/{id}/generate");
    let first = tokio::spawn(app.req(Method::POST, &path).bearer_auth(&token).send());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while llm.requests.load(std::sync::atomic::Ordering::SeqCst) < 18 {
        assert!(
            std::time::Instant::now() < deadline,
            "the first generation started"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let busy = app.call(&token, Method::POST, &path, 409).await;
    assert_eq!(
        busy["error"]["message"],
        "generation is already in progress"
    );
    advance(&app, 11).await;
    let second = app
        .req(Method::POST, &path)
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    let first = first.await.unwrap().unwrap();
    let mut statuses = [first.status().as_u16(), second.status().as_u16()];
    statuses.sort();
    assert_eq!(
        statuses,
        [200, 400],
        "one of the two runs stores its drafts"
    );
    assert_eq!(llm.requests.load(std::sync::atomic::Ordering::SeqCst), 27);
}

async fn events_are_isolated_between_tenants(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let token = owner(&app).await;
    let event = cancellation(&app, &token, "c@x.io").await;
    let id = event["id"].as_str().unwrap();
    let vid = recommended_id(&app, &token, id).await;

    // Mallory owns a project with the same slug: A's event ids mean nothing there.
    let mallory = app.register("mallory@x.io").await;
    let created = app.create_project(&mallory.token, "Acme").await;
    let mallory_key = created["api_keys"]["secret_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let routes = [
        (Method::GET, format!("/projects/acme/churn-events/{id}")),
        (
            Method::POST,
            format!("/projects/acme/churn-events/{id}/generate"),
        ),
        (
            Method::POST,
            format!("/projects/acme/churn-events/{id}/recovered"),
        ),
        (
            Method::GET,
            format!("/projects/acme/churn-events/{id}/variants"),
        ),
        (Method::POST, send_path(id, &vid)),
    ];
    for (method, path) in &routes {
        app.call(&mallory.token, method.clone(), path, 404).await;
        app.expect(
            app.req(method.clone(), path)
                .header("X-API-Key", &mallory_key),
            404,
        )
        .await;
    }
    for path in [
        format!("/churn-events/{id}"),
        format!("/churn-events/{id}/generate"),
        format!("/churn-events/{id}/variants/{vid}/send"),
    ] {
        let method = if path.ends_with(id) {
            Method::GET
        } else {
            Method::POST
        };
        let answer = app
            .expect(
                app.req(method, &path).header("X-API-Key", &mallory_key),
                404,
            )
            .await;
        assert_eq!(answer["code"], "NOT_FOUND");
    }
    // A key naming another project is refused.
    app.call_with_key(
        &mallory_key,
        Method::GET,
        &format!(
            "/churn-events?project={}",
            event["project_id"].as_str().unwrap()
        ),
        403,
    )
    .await;
    let listed = app
        .call_with_key(
            &mallory_key,
            Method::GET,
            "/projects/acme/churn-events",
            200,
        )
        .await;
    assert_eq!(listed["meta"]["total"], 0);
    // Nothing changed for the owner.
    assert_eq!(
        event_of(&app, &token, id).await["status"],
        "variants_generated"
    );
}

async fn query_errors_use_each_form_s_body(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let token = owner(&app).await;
    let scoped = app
        .call(
            &token,
            Method::GET,
            "/projects/acme/churn-events?page=abc",
            400,
        )
        .await;
    assert_eq!(scoped["error"]["code"], "VALIDATION_ERROR");
    assert_eq!(scoped["error"]["details"][0]["field"], "page");
    let legacy = app
        .call(&token, Method::GET, "/churn-events?limit=x", 400)
        .await;
    assert_eq!(legacy["code"], "VALIDATION_ERROR");
    assert!(
        legacy["error"].as_str().unwrap().starts_with("limit"),
        "{legacy}"
    );
    let negative = app
        .call(&token, Method::GET, "/churn-events?offset=-1", 400)
        .await;
    assert_eq!(negative["error"], "offset: must not be negative");
    // Answers made outside the routes keep each form's shape too.
    let no_route = app
        .call(&token, Method::GET, "/churn-events/x/nowhere", 404)
        .await;
    assert_eq!(no_route["code"], "NOT_FOUND");
    let method = app.call(&token, Method::DELETE, "/churn-events", 405).await;
    assert_eq!(method["code"], "METHOD_NOT_ALLOWED");
    let scoped_method = app
        .call(&token, Method::DELETE, "/projects/acme/churn-events", 405)
        .await;
    assert_eq!(scoped_method["error"]["code"], "METHOD_NOT_ALLOWED");
    // With several projects a session must say which one.
    app.create_project(&token, "Second").await;
    let which = app.call(&token, Method::GET, "/churn-events", 400).await;
    assert!(
        which["error"]
            .as_str()
            .unwrap()
            .contains("several projects"),
        "{which}"
    );
    app.call(
        &token,
        Method::GET,
        "/churn-events?project=second&status=new",
        200,
    )
    .await;
}

async fn terminal_events_cannot_be_edited(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let token = owner(&app).await;
    let event = cancellation(&app, &token, "c@x.io").await;
    let id = event["id"].as_str().unwrap();
    let vid = recommended_id(&app, &token, id).await;
    mark_recovered(&app, &token, id).await;
    let edit = app
        .call_json(
            &token,
            Method::PATCH,
            &format!("/projects/acme/churn-events/{id}/variants/{vid}"),
            &json!({"subject": "x"}),
            400,
        )
        .await;
    assert_eq!(edit["error"]["message"], "churn event is already recovered");
    let send = send_variant(&app, &token, id, &vid, 400).await;
    assert_eq!(
        send["error"]["message"],
        "variants must be generated before sending emails"
    );
}

/// The nine emails as generated for one stored event, through the project's settings and the
/// event's fields (tenure, MRR, plan, reason). The coupon differs per event, so it is masked.
async fn nine_emails_of_a_fixed_event(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let token = owner(&app).await;
    configure(&app, &token, json!({"founder_name": "Ada Lovelace", "product_url": "https://acme.io", "discount_percent": 25})).await;
    let event = create_event(
        &app,
        &token,
        json!({"customer_email": "dana@northwind.example", "customer_name": "Dana Scully", "event_type": "cancellation",
               "cancel_reason": "We barely used it last quarter", "mrr": 12900, "currency": "eur", "plan_name": "Team", "tenure_days": 800}),
    )
    .await;
    let generated = generate(&app, &token, event["id"].as_str().unwrap()).await;
    let mut variants = generated["variants"].as_array().unwrap().clone();
    variants.sort_by_key(|v| v["strategy"].as_str().unwrap().to_owned());
    let shown: Vec<String> = variants
        .iter()
        .map(|v| {
            format!(
                "==== {} ====\nSubject: {}\n\n{}\n\n---- HTML ----\n{}\n",
                v["strategy"].as_str().unwrap(),
                v["subject"].as_str().unwrap(),
                v["body_text"].as_str().unwrap(),
                v["body"].as_str().unwrap()
            )
        })
        .collect();
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(r"WINBACK25-[0-9A-F]{6}", "WINBACK25-[coupon]");
    settings.bind(|| insta::assert_snapshot!("nine_emails_of_a_fixed_event", shown.join("\n")));
}

/// The per-strategy outcome counts that ranking reads are kept by triggers; after sends,
/// recoveries (with and without a send) and a loss they equal an aggregate over the history.
async fn strategy_outcomes_follow_sends_and_recoveries(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let token = owner(&app).await;
    let reasons = [
        "too expensive",
        "not using it",
        "missing features",
        "too expensive",
    ];
    let mut sent = Vec::new();
    for (i, reason) in reasons.iter().enumerate() {
        let event = create_event(
            &app,
            &token,
            json!({"customer_email": format!("c{i}@example.com"), "event_type": "cancellation", "cancel_reason": reason}),
        )
        .await;
        let id = event["id"].as_str().unwrap().to_owned();
        let variant = recommended(&generate(&app, &token, &id).await);
        app.call(
            &token,
            Method::POST,
            &send_path(&id, variant["id"].as_str().unwrap()),
            200,
        )
        .await;
        sent.push(id);
    }
    let unsent = create_event(
        &app,
        &token,
        json!({"customer_email": "quiet@example.com", "event_type": "cancellation"}),
    )
    .await;
    for id in [&sent[0], &sent[2], unsent["id"].as_str().unwrap()] {
        mark_recovered(&app, &token, id).await;
    }
    advance(&app, 31 * 24 * 3600).await;
    app.run_jobs().await;

    let db = app.stop().await;
    sqlx::any::install_default_drivers();
    let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&db.url)
        .await
        .unwrap();
    let kept: Vec<(String, i64, i64)> = sqlx::query_as(
        "SELECT strategy, CAST(SUM(sends) AS BIGINT), CAST(SUM(recoveries) AS BIGINT) \
         FROM strategy_days GROUP BY strategy HAVING SUM(sends) <> 0 OR SUM(recoveries) <> 0 \
         ORDER BY strategy",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    let aggregated: Vec<(String, i64, i64)> = sqlx::query_as(
        "SELECT v.strategy, CAST(COUNT(*) AS BIGINT), \
         CAST(SUM(CASE WHEN e.status = 'recovered' THEN 1 ELSE 0 END) AS BIGINT) \
         FROM recovery_variants v JOIN churn_events e ON e.id = v.churn_event_id \
         WHERE v.sent_at IS NOT NULL GROUP BY v.strategy ORDER BY v.strategy",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    assert_eq!(kept, aggregated);
    assert_eq!(kept.iter().map(|r| r.1).sum::<i64>(), 4, "four sends");
    assert_eq!(
        kept.iter().map(|r| r.2).sum::<i64>(),
        2,
        "two recovered after a send"
    );
}
