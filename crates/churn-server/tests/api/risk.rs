//! Churn-risk scoring runs and score routes (decisions §9), on the test clock.

use chrono::Duration;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{
    Acme, Backend, Options, TestApp, acme_with_key, clock_now, post_event, wire_time,
};
use churn_core::both_backends;

both_backends!(
    customers_with_a_short_history_have_no_score,
    a_designed_history_scores_its_signals,
    scoring_runs_every_interval_as_a_job,
    lists_filter_by_level_and_score,
    scores_are_kept_90_days,
    other_tenants_cannot_read_or_recompute,
    the_configuration_has_defaults_and_validates_every_field,
    private_webhooks_are_allowed_when_the_operator_says_so,
    the_model_is_learned_once_30_customers_churned_and_30_did_not,
    concurrent_recomputes_share_one_run,
);

pub(crate) async fn advance(app: &TestApp, days: i64) {
    crate::helpers::advance(app, days * 86_400).await;
}

/// Tracks `(event, customer, days ago, properties)` in one batch.
pub(crate) async fn track(app: &TestApp, key: &str, events: &[(&str, &str, i64, Value)]) {
    let now = clock_now(app).await;
    let events: Vec<Value> = events
        .iter()
        .map(|(event, email, days, props)| {
            json!({"event": event, "customer_email": email,
                   "timestamp": wire_time(now - Duration::days(*days)), "properties": props})
        })
        .collect();
    crate::behavior::track(app, key, json!({ "events": events }), 200).await;
}

/// `PUT /projects/acme/churn-risk/config` of `config` as `token`, asserting `status`; the
/// whole answer.
pub(crate) async fn put_risk_config(
    app: &TestApp,
    token: &str,
    config: Value,
    status: u16,
) -> Value {
    let request = app.req(Method::PUT, "/projects/acme/churn-risk/config");
    app.expect(request.bearer_auth(token).json(&config), status)
        .await
}

pub(crate) async fn recompute(app: &TestApp, acme: &Acme) -> Value {
    app.call_with_key(
        &acme.key,
        Method::POST,
        "/projects/acme/churn-risk/recompute",
        200,
    )
    .await["data"]
        .clone()
}

async fn get(app: &TestApp, token: &str, path: &str) -> Value {
    app.call(token, Method::GET, path, 200).await
}

async fn customers_with_a_short_history_have_no_score(backend: Backend) {
    let (app, acme) = TestApp::spawn_acme_with_key(backend).await;
    track(&app, &acme.key, &[("login", "new@shop.io", 6, json!({}))]).await;
    assert_eq!(
        recompute(&app, &acme).await,
        json!({"scored": 0, "alerts": 0})
    );
    let list = get(&app, &acme.token, "/projects/acme/churn-risk/customers").await;
    let item = &list["data"][0];
    assert_eq!(item["customer_email"], "new@shop.io");
    assert_eq!(item["risk_score"], Value::Null);
    assert_eq!(item["risk_level"], Value::Null);
    assert_eq!(item["insufficient_data"], true);
    assert_eq!(item["signals"], json!([]));
    assert_eq!(item["model"], "default");

    // A day later the history spans 7 days.
    advance(&app, 1).await;
    assert_eq!(recompute(&app, &acme).await["scored"], 1);
    let detail = get(
        &app,
        &acme.token,
        "/projects/acme/churn-risk/customers/new@shop.io",
    )
    .await;
    assert_eq!(detail["data"]["insufficient_data"], false);
    let history = detail["data"]["history"].as_array().unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[0]["score"], Value::Null);
    assert!(history[1]["score"].is_i64());
}

async fn a_designed_history_scores_its_signals(backend: Backend) {
    let (app, acme) = TestApp::spawn_acme_with_key(backend).await;
    track(
        &app,
        &acme.key,
        &[
            // Gone quiet: active 20 days ago, nothing in 14 days, an NPS detractor.
            ("login", "quiet@shop.io", 20, json!({})),
            ("nps_response", "quiet@shop.io", 20, json!({"score": 4})),
            // Happy: a promoter who upgraded and invited a colleague this week.
            ("login", "happy@shop.io", 30, json!({})),
            ("nps_response", "happy@shop.io", 2, json!({"score": 10})),
            ("subscription_upgraded", "happy@shop.io", 1, json!({})),
            ("team_member_invited", "happy@shop.io", 0, json!({})),
        ],
    )
    .await;
    // quiet@ is over the default threshold: an alert, skipped without a webhook URL.
    assert_eq!(
        recompute(&app, &acme).await,
        json!({"scored": 2, "alerts": 1})
    );
    let list = get(&app, &acme.token, "/projects/acme/churn-risk/customers").await;
    assert_eq!(list["meta"]["total"], 2);
    let quiet = &list["data"][0];
    assert_eq!(quiet["customer_email"], "quiet@shop.io");
    assert_eq!(quiet["risk_score"], 80, "25 + 35 + 20");
    assert_eq!(quiet["risk_level"], "critical");
    assert_eq!(
        quiet["signals"],
        json!([{"name": "no_events_14d", "weight": 35}, {"name": "nps_detractor", "weight": 20}])
    );
    let happy = &list["data"][1];
    assert_eq!(happy["risk_score"], 0);
    assert_eq!(happy["risk_level"], "low");
    assert_eq!(
        happy["signals"],
        json!([
            {"name": "team_invites", "weight": -10},
            {"name": "billing_upgrades", "weight": -15},
            {"name": "nps_promoter", "weight": -15},
        ])
    );
    assert_eq!(happy["scored_at"], wire_time(clock_now(&app).await));

    // The customer lists show and sort by the latest score.
    let customers = get(
        &app,
        &acme.token,
        "/projects/acme/customers?sort=risk_score",
    )
    .await;
    assert_eq!(customers["data"][0]["email"], "quiet@shop.io");
    assert_eq!(customers["data"][0]["risk_score"], 80);
    assert_eq!(customers["data"][0]["risk_level"], "critical");
}

async fn scoring_runs_every_interval_as_a_job(backend: Backend) {
    let (app, acme) = TestApp::spawn_acme_with_key(backend).await;
    app.run_jobs().await; // the owner's verification email
    track(&app, &acme.key, &[("login", "dana@shop.io", 10, json!({}))]).await;
    assert_eq!(app.run_jobs().await, 1, "the first run is due at once");
    let scored = get(
        &app,
        &acme.token,
        "/projects/acme/churn-risk/customers/dana@shop.io",
    )
    .await;
    assert_eq!(scored["data"]["history"].as_array().unwrap().len(), 1);
    // More tracking does not start a second chain.
    track(&app, &acme.key, &[("login", "dana@shop.io", 0, json!({}))]).await;
    assert_eq!(app.run_jobs().await, 0);

    advance(&app, 1).await;
    assert_eq!(app.run_jobs().await, 1, "one run per interval");
    let again = get(
        &app,
        &acme.token,
        "/projects/acme/churn-risk/customers/dana@shop.io",
    )
    .await;
    assert_eq!(again["data"]["history"].as_array().unwrap().len(), 2);

    // The next run after a change of interval is due that many hours later.
    put_risk_config(&app, &acme.token, json!({"check_interval_hours": 72}), 200).await;
    advance(&app, 1).await;
    assert_eq!(app.run_jobs().await, 1, "due before the change");
    advance(&app, 2).await;
    assert_eq!(app.run_jobs().await, 0);
    advance(&app, 1).await;
    assert_eq!(app.run_jobs().await, 1, "72 hours later");
}

async fn lists_filter_by_level_and_score(backend: Backend) {
    let (app, acme) = TestApp::spawn_acme_with_key(backend).await;
    track(
        &app,
        &acme.key,
        &[
            ("login", "critical@shop.io", 20, json!({})),
            ("nps_response", "critical@shop.io", 20, json!({"score": 1})),
            ("login", "high@shop.io", 20, json!({})),
            ("login", "low@shop.io", 10, json!({})),
            ("login", "low@shop.io", 0, json!({})),
            ("login", "young@shop.io", 1, json!({})),
        ],
    )
    .await;
    assert_eq!(recompute(&app, &acme).await["scored"], 3);
    let emails = |body: &Value| -> Vec<String> {
        body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["customer_email"].as_str().unwrap().to_owned())
            .collect()
    };
    let all = get(&app, &acme.token, "/projects/acme/churn-risk/customers").await;
    assert_eq!(
        emails(&all),
        [
            "critical@shop.io",
            "high@shop.io",
            "low@shop.io",
            "young@shop.io"
        ],
        "highest first, insufficient data last"
    );
    let high = get(
        &app,
        &acme.token,
        "/projects/acme/churn-risk/customers?level=high",
    )
    .await;
    assert_eq!(emails(&high), ["high@shop.io"]);
    assert_eq!(all["meta"]["total"], 4);
    assert_eq!(high["meta"]["total"], 1);
    let min = get(
        &app,
        &acme.token,
        "/projects/acme/churn-risk/customers?min_score=60",
    )
    .await;
    assert_eq!(emails(&min), ["critical@shop.io", "high@shop.io"]);
    assert_eq!(min["meta"]["total"], 2);
    let page = get(
        &app,
        &acme.token,
        "/projects/acme/churn-risk/customers?per_page=1&page=2",
    )
    .await;
    assert_eq!(emails(&page), ["high@shop.io"]);
    for bad in ["level=severe", "min_score=101", "per_page=0"] {
        app.call(
            &acme.token,
            Method::GET,
            &format!("/projects/acme/churn-risk/customers?{bad}"),
            400,
        )
        .await;
    }
    let unknown = app
        .call(
            &acme.token,
            Method::GET,
            "/projects/acme/churn-risk/customers/nobody@shop.io",
            404,
        )
        .await;
    assert_eq!(unknown["error"]["code"], "NOT_FOUND");
}

async fn scores_are_kept_90_days(backend: Backend) {
    let (app, acme) = TestApp::spawn_acme_with_key(backend).await;
    // Eve is scored once, then tracked no more: her only score ages out with the first day.
    track(
        &app,
        &acme.key,
        &[
            ("login", "dana@shop.io", 10, json!({})),
            ("login", "eve@shop.io", 10, json!({})),
        ],
    )
    .await;
    recompute(&app, &acme).await;
    advance(&app, 89).await;
    track(&app, &acme.key, &[("login", "dana@shop.io", 0, json!({}))]).await;
    recompute(&app, &acme).await;
    // Sessions expire after 7 days; the secret key reads too.
    let get = |path: &'static str| app.call_with_key(&acme.key, Method::GET, path, 200);
    let path = "/projects/acme/churn-risk/customers/dana@shop.io";
    let kept = get(path).await;
    assert_eq!(kept["data"]["history"].as_array().unwrap().len(), 2);
    let list = "/projects/acme/churn-risk/customers";
    assert_eq!(get(list).await["meta"]["total"], 2);
    advance(&app, 1).await;
    recompute(&app, &acme).await;
    let purged = get(path).await;
    let days: Vec<_> = purged["data"]["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["date"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(days.len(), 2, "the first day fell out of the 90: {days:?}");
    let today = clock_now(&app).await.date_naive().to_string();
    assert_eq!(days.last().unwrap(), &today);
    let left = get(list).await;
    assert_eq!(left["meta"]["total"], 1, "eve's latest score is gone");
    assert_eq!(left["data"][0]["customer_email"], "dana@shop.io");
}

async fn other_tenants_cannot_read_or_recompute(backend: Backend) {
    let (app, acme) = TestApp::spawn_acme_with_key(backend).await;
    let intruder = app.register("mallory@example.com").await;
    for path in [
        "/projects/acme/churn-risk/recompute",
        "/projects/acme/churn-risk/customers",
        "/projects/acme/churn-risk/alerts",
    ] {
        let method = if path.ends_with("recompute") {
            Method::POST
        } else {
            Method::GET
        };
        app.call(&intruder.token, method, path, 404).await;
    }
    let owner = app
        .call(
            &acme.token,
            Method::POST,
            "/projects/acme/churn-risk/recompute",
            200,
        )
        .await;
    assert_eq!(owner["data"], json!({"scored": 0, "alerts": 0}));
}

async fn the_configuration_has_defaults_and_validates_every_field(backend: Backend) {
    let (app, acme) = TestApp::spawn_acme_with_key(backend).await;
    let path = "/projects/acme/churn-risk/config";
    let defaults = json!({
        "enabled": true, "delivery_mode": "webhook", "risk_threshold": 70,
        "webhook_url": null, "email_tone": "friendly", "check_interval_hours": 24
    });
    assert_eq!(get(&app, &acme.token, path).await["data"], defaults);
    let by_key = app.call_with_key(&acme.key, Method::GET, path, 200).await;
    assert_eq!(by_key["data"], defaults);
    // Changes take a session: the key alone is 401.
    app.expect(
        app.req(Method::PUT, path)
            .header("x-api-key", &acme.key)
            .json(&json!({"enabled": false})),
        401,
    )
    .await;

    let put = |body: Value| {
        app.req(Method::PUT, path)
            .bearer_auth(&acme.token)
            .json(&body)
    };
    for (body, field) in [
        (
            json!({"webhook_url": "http://hooks.example.com/churn"}),
            "webhook_url",
        ),
        (
            json!({"webhook_url": "https://127.0.0.1/churn"}),
            "webhook_url",
        ),
        (
            json!({"webhook_url": "https://10.1.2.3/churn"}),
            "webhook_url",
        ),
        (
            json!({"webhook_url": "https://[::ffff:192.168.0.1]/churn"}),
            "webhook_url",
        ),
        (
            json!({"webhook_url": "https://localhost/churn"}),
            "webhook_url",
        ),
        (json!({"webhook_url": "not a url"}), "webhook_url"),
        (json!({"risk_threshold": 101}), "risk_threshold"),
        (json!({"risk_threshold": -1}), "risk_threshold"),
        (json!({"check_interval_hours": 0}), "check_interval_hours"),
        (json!({"check_interval_hours": 169}), "check_interval_hours"),
        (json!({"email_tone": "rude"}), "email_tone"),
        (json!({"delivery_mode": "pigeon"}), "delivery_mode"),
        (json!({"delivery_mode": "direct"}), "delivery_mode"),
        (json!({"colour": "red"}), "colour"),
    ] {
        let answer = app.expect(put(body.clone()), 400).await;
        assert_eq!(answer["error"]["code"], "VALIDATION_ERROR", "{body}");
        assert_eq!(answer["error"]["details"][0]["field"], field, "{body}");
    }
    assert_eq!(
        get(&app, &acme.token, path).await["data"],
        defaults,
        "nothing changed"
    );

    let changed = app
        .expect(
            put(
                json!({"enabled": false, "risk_threshold": 0, "email_tone": "urgent",
                       "check_interval_hours": 168, "webhook_url": "https://93.184.215.14/churn"}),
            ),
            200,
        )
        .await;
    let expected = json!({
        "enabled": false, "delivery_mode": "webhook", "risk_threshold": 0,
        "webhook_url": "https://93.184.215.14/churn", "email_tone": "urgent",
        "check_interval_hours": 168
    });
    assert_eq!(changed["data"], expected);
    assert_eq!(get(&app, &acme.token, path).await["data"], expected);
    let cleared = app.expect(put(json!({"webhook_url": null})), 200).await;
    assert_eq!(cleared["data"]["webhook_url"], Value::Null);
    assert_eq!(cleared["data"]["risk_threshold"], 0, "the rest is kept");

    let intruder = app.register("mallory@example.com").await;
    app.call_json(
        &intruder.token,
        Method::PUT,
        path,
        &json!({"enabled": true}),
        404,
    )
    .await;
}

async fn private_webhooks_are_allowed_when_the_operator_says_so(backend: Backend) {
    let app = TestApp::spawn_private(backend).await;
    let acme = acme_with_key(&app).await;
    let answer = put_risk_config(
        &app,
        &acme.token,
        json!({"webhook_url": "https://127.0.0.1:9443/churn"}),
        200,
    )
    .await;
    assert_eq!(
        answer["data"]["webhook_url"],
        "https://127.0.0.1:9443/churn"
    );
    // Still https only.
    put_risk_config(
        &app,
        &acme.token,
        json!({"webhook_url": "http://127.0.0.1:9443/churn"}),
        400,
    )
    .await;
}

async fn churn(app: &TestApp, acme: &Acme, email: &str) {
    post_event(
        app,
        &acme.token,
        &json!({"customer_email": email, "event_type": "cancellation"}),
        201,
    )
    .await;
}

async fn model(app: &TestApp, acme: &Acme) -> Value {
    let by_key = app
        .call_with_key(
            &acme.key,
            Method::GET,
            "/projects/acme/churn-risk/model",
            200,
        )
        .await;
    let by_token = get(app, &acme.token, "/projects/acme/churn-risk/model").await;
    assert_eq!(by_key, by_token, "a JWT or the secret key");
    by_token["data"].clone()
}

async fn the_model_is_learned_once_30_customers_churned_and_30_did_not(backend: Backend) {
    let (app, acme) = TestApp::spawn_acme_with_key(backend).await;
    let default = model(&app, &acme).await;
    assert_eq!(default["model"], "default");
    assert_eq!(default["trained_at"], Value::Null);
    assert_eq!(default["customers"], 0);
    assert_eq!(default["auc"], Value::Null);
    let weights = default["weights"].as_array().unwrap();
    assert_eq!(weights.len(), 18);
    assert_eq!(
        weights[0],
        json!({"feature": "no_events_14d", "weight": 35})
    );
    assert_eq!(
        weights[17],
        json!({"feature": "nps_promoter", "weight": -15})
    );

    // 30 customers who hit `export_failed` (60 occurrences) and will churn; 35 who did not.
    let churners: Vec<String> = (0..30).map(|i| format!("gone{i:02}@shop.io")).collect();
    let stayers: Vec<String> = (0..35).map(|i| format!("kept{i:02}@shop.io")).collect();
    for chunk in churners.chunks(25) {
        let mut events = Vec::new();
        for email in chunk {
            events.push(("login", email.as_str(), 20, json!({})));
            events.push(("export_failed", email.as_str(), 3, json!({})));
            events.push(("export_failed", email.as_str(), 2, json!({})));
        }
        track(&app, &acme.key, &events).await;
    }
    for chunk in stayers.chunks(25) {
        let events: Vec<_> = chunk
            .iter()
            .flat_map(|email| {
                [
                    ("login", email.as_str(), 20, json!({})),
                    ("login", email.as_str(), 2, json!({})),
                ]
            })
            .collect();
        track(&app, &acme.key, &events).await;
    }
    for email in &churners[..29] {
        churn(&app, &acme, email).await;
    }
    assert_eq!(recompute(&app, &acme).await["scored"], 65);
    assert_eq!(model(&app, &acme).await, default, "29 churned: not enough");
    let list = get(&app, &acme.token, "/projects/acme/churn-risk/customers").await;
    assert_eq!(list["data"][0]["model"], "default");

    churn(&app, &acme, &churners[29]).await;
    assert_eq!(recompute(&app, &acme).await["scored"], 65);
    let learned = model(&app, &acme).await;
    assert_eq!(learned["model"], "learned", "{learned}");
    assert_eq!(learned["customers"], 65);
    assert_eq!(learned["trained_at"], wire_time(clock_now(&app).await));
    // The event separates the classes, so the held-out fifth is ranked perfectly.
    assert_eq!(learned["auc"], 1.0, "{learned}");
    let weights = learned["weights"].as_array().unwrap();
    assert_eq!(weights.len(), 19);
    let strongest = weights
        .iter()
        .max_by_key(|w| w["weight"].as_i64().unwrap())
        .unwrap();
    assert_eq!(strongest["feature"], "event:export_failed", "{learned}");
    assert!(strongest["weight"].as_i64().unwrap() > 0);

    // Scores from this run on use it: churners rank above the others, explained by the event.
    let list = get(
        &app,
        &acme.token,
        "/projects/acme/churn-risk/customers?per_page=100",
    )
    .await;
    let items = list["data"].as_array().unwrap();
    assert!(items.iter().all(|c| c["model"] == "learned"));
    for (rank, item) in items.iter().enumerate() {
        let email = item["customer_email"].as_str().unwrap();
        assert_eq!(email.starts_with("gone"), rank < 30, "{rank}: {item}");
        let score = item["risk_score"].as_i64().unwrap();
        assert!((0..=100).contains(&score));
    }
    assert_eq!(items[0]["signals"][0]["name"], "event:export_failed");
}

/// 300 customers at 80 (gone quiet for 20 days, detractors).
async fn quiet_customers(app: &TestApp, acme: &Acme) {
    let customers: Vec<String> = (0..300).map(|i| format!("quiet{i}@shop.io")).collect();
    let events: Vec<_> = customers
        .iter()
        .flat_map(|email| {
            [
                ("login", email.as_str(), 20, json!({})),
                ("nps_response", email.as_str(), 20, json!({"score": 4})),
            ]
        })
        .collect();
    for batch in events.chunks(100) {
        track(app, &acme.key, batch).await;
    }
}

/// Two recomputes at once: one run, whose result both answer. Skipped alerts (webhook mode
/// without a URL) start no quiet period, so a second run would log every alert again.
async fn concurrent_recomputes_share_one_run(backend: Backend) {
    let (app, acme) = TestApp::spawn_acme_with_key(backend).await;
    quiet_customers(&app, &acme).await;
    let (first, second) = tokio::join!(recompute(&app, &acme), recompute(&app, &acme));
    assert_eq!(first, json!({"scored": 300, "alerts": 300}));
    assert_eq!(second, first, "both answered the one run");
    let logged = app.query("SELECT id FROM risk_alerts").await.len();
    assert_eq!(logged, 300, "one run logged the alerts");
    // A later call starts a run of its own.
    assert_eq!(recompute(&app, &acme).await, first);
    assert_eq!(app.query("SELECT id FROM risk_alerts").await.len(), 600);
}

/// The same across two server processes on one database: the one that waits for the other's
/// run answers its result. (SQLite is served by a single process.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recomputes_in_two_processes_share_one_run() {
    let app = TestApp::spawn(Backend::Postgres).await;
    let acme = acme_with_key(&app).await;
    let other = app.alongside(Options::default()).await;
    quiet_customers(&app, &acme).await;
    let (first, second) = tokio::join!(recompute(&app, &acme), recompute(&other, &acme));
    assert_eq!(first, json!({"scored": 300, "alerts": 300}));
    assert_eq!(second, first, "both answered the one run");
    let logged = app.query("SELECT id FROM risk_alerts").await.len();
    assert_eq!(logged, 300, "one run logged the alerts");
}
