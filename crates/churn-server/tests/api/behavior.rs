//! `POST /track`, customers and event analytics (decisions §8).

use chrono::Duration;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{
    Backend, Options, TestApp, acme_with_key, clock_now, fields, generated_event, post_event,
    wire_time,
};
use churn_core::both_backends;

both_backends!(
    tracking_takes_only_the_secret_key,
    single_events_are_validated_field_by_field,
    batches_are_all_or_nothing,
    ids_make_tracking_idempotent,
    concurrent_posts_of_one_id_store_it_once,
    concurrent_batches_of_two_projects_are_stored_in_full,
    tracking_is_limited_per_key_not_per_ip,
    customers_come_from_tracking_and_churn_events,
    customer_lists_filter_sort_and_page,
    a_customer_shows_its_counts_and_timeline,
    analytics_counts_every_event_name,
    customers_of_another_tenant_are_404,
    recovery_ranking_reads_tracked_behaviour,
    events_with_and_without_a_duration_alternate,
);

/// Posts `body` to `/track` with the key `key`, asserting `status`; answers the body.
pub(crate) async fn track(app: &TestApp, key: &str, body: Value, status: u16) -> Value {
    app.expect(
        app.req(Method::POST, "/track")
            .header("x-api-key", key)
            .json(&body),
        status,
    )
    .await
}

async fn get(app: &TestApp, token: &str, path: &str) -> Value {
    app.call(token, Method::GET, path, 200).await
}

async fn tracking_takes_only_the_secret_key(backend: Backend) {
    let (app, acme) = TestApp::spawn_acme_with_key(backend).await;
    let event = json!({"event": "login", "customer_email": "dana@shop.io"});
    let answer = track(&app, &acme.key, event.clone(), 200).await;
    assert_eq!(answer, json!({"status": "ok"}));

    let jwt = app
        .call_json(&acme.token, Method::POST, "/track", &event, 401)
        .await;
    assert_eq!(jwt["error"]["code"], "UNAUTHORIZED");
    let project = get(&app, &acme.token, "/projects/acme").await;
    let public = project["data"]["public_key"].as_str().unwrap();
    track(&app, public, event.clone(), 401).await;
    track(&app, "sk_live_unknown", event, 401).await;
}

async fn single_events_are_validated_field_by_field(backend: Backend) {
    let (app, acme) = TestApp::spawn_acme_with_key(backend).await;
    let now = clock_now(&app).await;
    let bad = track(
        &app,
        &acme.key,
        json!({"event": "", "customer_email": "nope", "properties": "x",
               "timestamp": wire_time(now + Duration::days(2)), "id": "i".repeat(65), "colour": 1}),
        400,
    )
    .await;
    assert_eq!(bad["error"]["code"], "VALIDATION_ERROR");
    let mut got = fields(&bad);
    got.sort();
    assert_eq!(
        got,
        [
            "colour",
            "customer_email",
            "event",
            "id",
            "properties",
            "timestamp"
        ]
    );
    let big =
        json!({"event": "e", "customer_email": "a@b.io", "properties": {"k": "v".repeat(8200)}});
    assert_eq!(
        fields(&track(&app, &acme.key, big, 400).await),
        ["properties"]
    );
    let old = json!({"event": "e", "customer_email": "a@b.io", "timestamp": wire_time(now - Duration::days(5 * 366))});
    assert_eq!(
        fields(&track(&app, &acme.key, old, 400).await),
        ["timestamp"]
    );
    let none = get(&app, &acme.token, "/projects/acme/customers").await;
    assert_eq!(none["meta"]["total"], 0, "nothing invalid was stored");
}

async fn batches_are_all_or_nothing(backend: Backend) {
    let (app, acme) = TestApp::spawn_acme_with_key(backend).await;
    let ok = |i: usize| json!({"event": "login", "customer_email": format!("c{i}@shop.io")});
    let mut events: Vec<Value> = (0..5).map(ok).collect();
    events[3] = json!({"event": "login"});
    let bad = track(&app, &acme.key, json!({ "events": events }), 400).await;
    assert_eq!(fields(&bad), ["events[3].customer_email"]);
    let none = get(&app, &acme.token, "/projects/acme/customers").await;
    assert_eq!(none["meta"]["total"], 0, "one bad item rejects the batch");

    let too_many: Vec<Value> = (0..101).map(ok).collect();
    let refused = track(&app, &acme.key, json!({ "events": too_many }), 400).await;
    assert_eq!(refused["error"]["message"], "at most 100 events per batch");
    assert_eq!(fields(&refused), ["events"]);
    track(&app, &acme.key, json!({"events": []}), 400).await;

    let hundred: Vec<Value> = (0..100).map(ok).collect();
    let answer = track(&app, &acme.key, json!({ "events": hundred }), 200).await;
    assert_eq!(
        answer,
        json!({"status": "ok", "accepted": 100, "duplicates": 0})
    );
    let all = get(&app, &acme.token, "/projects/acme/customers").await;
    assert_eq!(all["meta"]["total"], 100);
}

async fn ids_make_tracking_idempotent(backend: Backend) {
    let (app, acme) = TestApp::spawn_acme_with_key(backend).await;
    let event = |id: &str| json!({"id": id, "event": "login", "customer_email": "dana@shop.io"});
    track(&app, &acme.key, event("a"), 200).await;
    track(&app, &acme.key, event("a"), 200).await;
    let batch = json!({"events": [event("a"), event("b"), event("b"), event("c")]});
    let answer = track(&app, &acme.key, batch, 200).await;
    assert_eq!(
        answer,
        json!({"status": "ok", "accepted": 2, "duplicates": 2})
    );
    let timeline = get(
        &app,
        &acme.token,
        "/projects/acme/customers/dana@shop.io/events",
    )
    .await;
    let mut ids: Vec<_> = timeline["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    assert_eq!(ids, ["a", "b", "c"]);
    let customer = get(&app, &acme.token, "/projects/acme/customers/dana@shop.io").await;
    assert_eq!(
        customer["data"]["events_30d"], 3,
        "duplicates are not counted"
    );

    // Ids are per project: another project may use the same one.
    let other = app.create_project(&acme.token, "Other").await;
    let other_key = other["api_keys"]["secret_key"].as_str().unwrap();
    track(&app, other_key, event("a"), 200).await;
    let theirs = get(
        &app,
        &acme.token,
        "/projects/other/customers/dana@shop.io/events",
    )
    .await;
    assert_eq!(theirs["meta"]["total"], 1);
}

async fn concurrent_posts_of_one_id_store_it_once(backend: Backend) {
    let (app, acme) = TestApp::spawn_acme_with_key(backend).await;
    let event = json!({"id": "once", "event": "login", "customer_email": "dana@shop.io"});
    let batch = json!({"events": [event.clone()]});
    let posts = (0..8).map(|i| {
        let body = if i % 2 == 0 {
            event.clone()
        } else {
            batch.clone()
        };
        app.req(Method::POST, "/track")
            .header("x-api-key", &acme.key)
            .json(&body)
            .send()
    });
    let answers = futures::future::join_all(posts).await;
    let mut accepted = 0;
    for answer in answers {
        let answer = answer.unwrap();
        assert_eq!(answer.status(), 200);
        let body: Value = answer.json().await.unwrap();
        accepted += body["accepted"].as_u64().unwrap_or(0);
    }
    assert!(accepted <= 1, "a batch claimed an event another stored");
    let timeline = get(
        &app,
        &acme.token,
        "/projects/acme/customers/dana@shop.io/events",
    )
    .await;
    assert_eq!(timeline["meta"]["total"], 1);
    let customer = get(&app, &acme.token, "/projects/acme/customers/dana@shop.io").await;
    assert_eq!(customer["data"]["events_30d"], 1);
}

/// Concurrent calls are written together (services/ingest.rs): every call is still answered
/// for its own events, each id is stored once per project, and rollups and customers add up.
async fn concurrent_batches_of_two_projects_are_stored_in_full(backend: Backend) {
    let (app, acme) = TestApp::spawn_acme_with_key(backend).await;
    let other = app.create_project(&acme.token, "Other").await;
    let other_key = other["api_keys"]["secret_key"].as_str().unwrap().to_owned();
    // Call i sends ids i*10 .. i*10+19: half of them repeat the previous call's.
    let body = |i: usize| {
        let events: Vec<Value> = (i * 10..i * 10 + 20)
            .map(|n| json!({"id": format!("e{n}"), "event": "login", "customer_email": format!("c{}@shop.io", n % 7)}))
            .collect();
        json!({"events": events})
    };
    let calls = 24;
    let posts = (0..calls).map(|i| {
        let key = if i % 2 == 0 { &acme.key } else { &other_key };
        app.req(Method::POST, "/track")
            .header("x-api-key", key)
            .json(&body(i / 2))
            .send()
    });
    let mut accepted = [0, 0];
    for (i, answer) in futures::future::join_all(posts)
        .await
        .into_iter()
        .enumerate()
    {
        let answer = answer.unwrap();
        assert_eq!(answer.status(), 200);
        let body: Value = answer.json().await.unwrap();
        let (new, dup) = (
            body["accepted"].as_u64().unwrap(),
            body["duplicates"].as_u64().unwrap(),
        );
        assert_eq!(new + dup, 20, "{body}");
        accepted[i % 2] += new;
    }
    // Each project received the ids e0 .. e(calls/2*10+9).
    let distinct = (calls as u64 / 2) * 10 + 10;
    assert_eq!(accepted, [distinct, distinct]);
    for slug in ["acme", "other"] {
        let names = get(
            &app,
            &acme.token,
            &format!("/projects/{slug}/analytics/events"),
        )
        .await;
        assert_eq!(
            names["data"],
            json!([{"event": "login", "count": distinct, "customers": 7}])
        );
        let customers = get(
            &app,
            &acme.token,
            &format!("/projects/{slug}/customers?per_page=100"),
        )
        .await;
        let sum: u64 = customers["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["events_30d"].as_u64().unwrap())
            .sum();
        assert_eq!(
            (customers["meta"]["total"].as_u64(), sum),
            (Some(7), distinct)
        );
    }
}

async fn tracking_is_limited_per_key_not_per_ip(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options::default().with("rate_limits", "on")).await;
    let acme = acme_with_key(&app).await;
    // An invalid body costs no write, so the bucket drains faster than it refills.
    let mut served = 0;
    let limited = loop {
        let answer = app
            .req(Method::POST, "/track")
            .header("x-api-key", &acme.key)
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        if answer.status() == 429 {
            break answer;
        }
        assert_eq!(answer.status(), 400);
        served += 1;
        assert!(served < 5000, "the key was never limited");
    };
    assert!(
        served >= 200,
        "the burst is 200 and the per-IP limit (30) does not apply: {served}"
    );
    assert_eq!(limited.headers()["x-ratelimit-limit"], "200");
    let body: Value = limited.json().await.unwrap();
    assert_eq!(body["error"]["code"], "RATE_LIMITED");
    // The IP's own bucket is untouched.
    let health = app.req(Method::GET, "/projects").bearer_auth(&acme.token);
    let answer = health.send().await.unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.headers()["x-ratelimit-limit"], "30");
}

async fn customers_come_from_tracking_and_churn_events(backend: Backend) {
    let (app, acme) = TestApp::spawn_acme_with_key(backend).await;
    let now = clock_now(&app).await;
    post_event(
        &app,
        &acme.token,
        &json!({"customer_email": "Lee@Shop.io", "event_type": "cancellation"}),
        201,
    )
    .await;
    let early = wire_time(now - Duration::days(3));
    track(
        &app,
        &acme.key,
        json!({"event": "login", "customer_email": "lee@shop.io", "timestamp": early}),
        200,
    )
    .await;
    let lee = get(&app, &acme.token, "/projects/acme/customers/lee@shop.io").await;
    assert_eq!(lee["data"]["email"], "lee@shop.io");
    assert_eq!(lee["data"]["first_seen_at"], early);
    assert_eq!(lee["data"]["last_seen_at"], wire_time(now));
    assert_eq!(lee["data"]["churn_events"], 1);
    assert_eq!(lee["data"]["events_30d"], 1);
    assert_eq!(lee["data"]["open_payment_failures"], 0);
    assert_eq!(lee["data"]["risk_score"], Value::Null);
    assert_eq!(lee["data"]["event_counts"], json!({"login": 1}));
}

async fn customer_lists_filter_sort_and_page(backend: Backend) {
    let (app, acme) = TestApp::spawn_acme_with_key(backend).await;
    let now = clock_now(&app).await;
    let events: Vec<Value> = ["b@x.io", "a@x.io", "c@y.io", "under_score@y.io"]
        .iter()
        .enumerate()
        .map(|(i, email)| {
            json!({"event": "login", "customer_email": email,
                   "timestamp": wire_time(now - Duration::hours(i as i64))})
        })
        .collect();
    track(&app, &acme.key, json!({ "events": events }), 200).await;
    let emails = |body: &Value| -> Vec<String> {
        body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["email"].as_str().unwrap().to_owned())
            .collect()
    };
    let list = get(&app, &acme.token, "/projects/acme/customers").await;
    assert_eq!(
        emails(&list),
        ["b@x.io", "a@x.io", "c@y.io", "under_score@y.io"],
        "last seen first"
    );
    assert_eq!(list["data"][0]["events_30d"], 1);
    let by_email = get(&app, &acme.token, "/projects/acme/customers?sort=email").await;
    assert_eq!(
        emails(&by_email),
        ["a@x.io", "b@x.io", "c@y.io", "under_score@y.io"]
    );
    let q = get(
        &app,
        &acme.token,
        "/projects/acme/customers?q=X.IO&sort=email&order=desc",
    )
    .await;
    assert_eq!(emails(&q), ["b@x.io", "a@x.io"]);
    assert_eq!(q["meta"]["total"], 2);
    let wildcard = get(&app, &acme.token, "/projects/acme/customers?q=_").await;
    assert_eq!(emails(&wildcard), ["under_score@y.io"], "_ is no wildcard");
    let page = get(
        &app,
        &acme.token,
        "/projects/acme/customers?sort=email&per_page=3&page=2",
    )
    .await;
    assert_eq!(emails(&page), ["under_score@y.io"]);
    assert_eq!(
        page["meta"],
        json!({"page": 2, "per_page": 3, "total": 4, "total_pages": 2})
    );
    let by_key = app
        .call_with_key(
            &acme.key,
            Method::GET,
            "/projects/acme/customers?sort=risk_score",
            200,
        )
        .await;
    assert_eq!(by_key["meta"]["total"], 4);
    for bad in [
        "sort=name",
        "order=up",
        "per_page=101",
        "page=0",
        "colour=red",
    ] {
        let answer = app
            .call(
                &acme.token,
                Method::GET,
                &format!("/projects/acme/customers?{bad}"),
                400,
            )
            .await;
        assert_eq!(answer["error"]["code"], "VALIDATION_ERROR", "{bad}");
    }
}

async fn a_customer_shows_its_counts_and_timeline(backend: Backend) {
    let (app, acme) = TestApp::spawn_acme_with_key(backend).await;
    let now = clock_now(&app).await;
    let ev = |name: &str, days: i64, props: Value| {
        json!({"event": name, "customer_email": "dana@shop.io",
               "timestamp": wire_time(now - Duration::days(days)), "properties": props})
    };
    let batch = json!({"events": [
        ev("login", 1, json!({"duration_seconds": 30})),
        ev("login", 2, json!({})),
        ev("feature_used", 3, json!({"feature": "export"})),
        ev("login", 31, json!({})),
    ]});
    track(&app, &acme.key, batch, 200).await;
    let dana = get(&app, &acme.token, "/projects/acme/customers/dana@shop.io").await;
    assert_eq!(
        dana["data"]["events_30d"], 3,
        "the 31-day-old login is outside"
    );
    assert_eq!(
        dana["data"]["event_counts"],
        json!({"login": 2, "feature_used": 1})
    );
    let timeline = get(
        &app,
        &acme.token,
        "/projects/acme/customers/dana@shop.io/events",
    )
    .await;
    let names: Vec<_> = timeline["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["login", "login", "feature_used", "login"]);
    let newest = &timeline["data"][0];
    assert_eq!(newest["properties"], json!({"duration_seconds": 30}));
    assert_eq!(newest["timestamp"], wire_time(now - Duration::days(1)));
    assert_eq!(newest["received_at"], wire_time(now));
    let logins = get(
        &app,
        &acme.token,
        "/projects/acme/customers/dana@shop.io/events?event=login&per_page=2",
    )
    .await;
    assert_eq!(logins["meta"]["total"], 3);
    assert_eq!(logins["data"].as_array().unwrap().len(), 2);
    // The documented 1 to 64 characters (schemathesis found a longer name answered 200).
    for name in ["".to_owned(), "x".repeat(65)] {
        let path = format!("/projects/acme/customers/dana@shop.io/events?event={name}");
        let answer = app.call(&acme.token, Method::GET, &path, 400).await;
        assert_eq!(answer["error"]["details"][0]["field"], "event", "{answer}");
    }
    for path in [
        "/projects/acme/customers/nobody@shop.io",
        "/projects/acme/customers/nobody@shop.io/events",
        "/projects/acme/customers/not-an-email",
    ] {
        let answer = app.call(&acme.token, Method::GET, path, 404).await;
        assert_eq!(answer["error"]["code"], "NOT_FOUND", "{path}");
    }
}

async fn analytics_counts_every_event_name(backend: Backend) {
    let (app, acme) = TestApp::spawn_acme_with_key(backend).await;
    let now = clock_now(&app).await;
    let ev = |name: &str, email: &str, days: i64| json!({"event": name, "customer_email": email, "timestamp": wire_time(now - Duration::days(days))});
    let batch = json!({"events": [
        ev("login", "a@x.io", 0), ev("login", "a@x.io", 1), ev("login", "b@x.io", 2),
        ev("Exported_Report", "a@x.io", 0), ev("exported_report", "b@x.io", 0),
        ev("exported_report", "c@x.io", 0), ev("exported_report", "c@x.io", 6),
        ev("login", "a@x.io", 40),
    ]});
    track(&app, &acme.key, batch, 200).await;
    let month = get(&app, &acme.token, "/projects/acme/analytics/events").await;
    assert_eq!(
        month["data"],
        json!([
            {"event": "exported_report", "count": 3, "customers": 2},
            {"event": "login", "count": 3, "customers": 2},
            {"event": "Exported_Report", "count": 1, "customers": 1},
        ])
    );
    let today = get(&app, &acme.token, "/projects/acme/analytics/events?days=1").await;
    assert_eq!(
        today["data"],
        json!([
            {"event": "exported_report", "count": 2, "customers": 2},
            {"event": "Exported_Report", "count": 1, "customers": 1},
            {"event": "login", "count": 1, "customers": 1},
        ])
    );
    for bad in ["days=0", "days=366"] {
        app.call(
            &acme.token,
            Method::GET,
            &format!("/projects/acme/analytics/events?{bad}"),
            400,
        )
        .await;
    }
}

async fn customers_of_another_tenant_are_404(backend: Backend) {
    let (app, acme) = TestApp::spawn_acme_with_key(backend).await;
    track(
        &app,
        &acme.key,
        json!({"event": "login", "customer_email": "dana@shop.io"}),
        200,
    )
    .await;
    let intruder = app.register("mallory@example.com").await;
    let theirs = app.create_project(&intruder.token, "Elsewhere").await;
    for path in [
        "/projects/acme/customers",
        "/projects/acme/customers/dana@shop.io",
        "/projects/acme/customers/dana@shop.io/events",
        "/projects/acme/analytics/events",
    ] {
        app.call(&intruder.token, Method::GET, path, 404).await;
        let key = theirs["api_keys"]["secret_key"].as_str().unwrap();
        app.call_with_key(key, Method::GET, path, 403).await;
    }
    let own = get(&app, &intruder.token, "/projects/elsewhere/customers").await;
    assert_eq!(own["meta"]["total"], 0, "tracking stays in its project");
}

async fn recovery_ranking_reads_tracked_behaviour(backend: Backend) {
    let (app, acme) = TestApp::spawn_acme_with_key(backend).await;
    let now = clock_now(&app).await;
    let ev = |name: &str, email: &str, days: i64| json!({"event": name, "customer_email": email, "timestamp": wire_time(now - Duration::days(days))});
    let batch = json!({"events": [
        ev("support_ticket_opened", "dana@shop.io", 3),
        ev("login", "dana@shop.io", 20),
    ]});
    track(&app, &acme.key, batch, 200).await;
    let reasons = |variants: &[Value], strategy: &str| -> Vec<String> {
        let v = variants.iter().find(|v| v["strategy"] == strategy).unwrap();
        serde_json::from_value(v["rank_reasons"].clone()).unwrap()
    };
    let (_, tracked) = generated_event(&app, &acme.token, "dana@shop.io").await;
    assert!(
        reasons(&tracked, "pain_point_fix").contains(&"1 support ticket(s) in 30 days".to_owned()),
        "{tracked:?}"
    );
    assert!(
        !reasons(&tracked, "pause_option").contains(&"inactive for two weeks or more".to_owned()),
        "active 3 days ago"
    );
    assert!(
        reasons(&tracked, "unused_feature")
            .contains(&"used only 0 feature(s) in 30 days".to_owned())
    );
    let (_, untracked) = generated_event(&app, &acme.token, "lee@shop.io").await;
    let all: Vec<String> = ["pain_point_fix", "unused_feature", "pause_option"]
        .iter()
        .flat_map(|s| reasons(&untracked, s))
        .collect();
    assert!(
        !all.iter()
            .any(|r| r.contains("30 days") || r.contains("inactive")),
        "no behaviour without tracking: {all:?}"
    );
}

/// A session duration is stored in a typed column; events without one bind a null there, and
/// the statement cached for one must accept the other (PostgreSQL once refused the float after
/// a null with "incorrect binary data format in bind parameter").
async fn events_with_and_without_a_duration_alternate(backend: Backend) {
    let (app, acme) = TestApp::spawn_acme_with_key(backend).await;
    for i in 0..10 {
        let plain = json!({"event": "feature_used", "customer_email": "dana@shop.io",
                           "properties": {"feature": format!("f{i}")}});
        track(&app, &acme.key, plain, 200).await;
        let timed = json!({"event": "login", "customer_email": "dana@shop.io",
                           "properties": {"duration_seconds": 42.5 + f64::from(i)}});
        track(&app, &acme.key, timed, 200).await;
    }
    let timeline = get(
        &app,
        &acme.token,
        "/projects/acme/customers/dana@shop.io/events",
    )
    .await;
    assert_eq!(timeline["meta"]["total"], 20);
}
