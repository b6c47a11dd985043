//! Cohorts across months with strategy attribution, and the forecast's shape and intervals,
//! on the test clock.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{
    Backend, TestApp, acme_owner, event_with_variants, mark_recovered, post_event, send_variant,
    variant_of,
};
// `dashboard_analytics` takes the clock setter from here.
pub use crate::helpers::set_clock;
use churn_core::both_backends;

both_backends!(
    cohorts_count_each_month_and_attribute_recoveries,
    forecasts_need_three_complete_months_then_use_ets
);

async fn create_event(app: &TestApp, token: &str, email: &str, mrr: i64) -> String {
    post_event(
        app,
        token,
        &json!({"customer_email": email, "event_type": "cancellation", "mrr": mrr}),
        201,
    )
    .await["data"]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn get(app: &TestApp, token: &str, path: &str) -> Value {
    app.call(token, Method::GET, path, 200).await["data"].clone()
}

async fn cohorts_count_each_month_and_attribute_recoveries(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    // Registered last, so the trial and the session cover every month the test visits.
    set_clock(&app, "2026-03-01T00:00:00Z").await;
    let owner = acme_owner(&app).await;
    set_clock(&app, "2026-01-10T12:00:00Z").await;
    // January: one recovered after a send, one recovered without, one left open.
    let (sent_event, variant) = event_with_variants(&app, &owner, "a@example.com").await;
    let strategy = variant_of(&app, &owner, &sent_event, &variant).await["strategy"]
        .as_str()
        .unwrap()
        .to_owned();
    send_variant(&app, &owner, &sent_event, &variant, 200).await;
    let unsent = create_event(&app, &owner, "b@example.com", 2000).await;
    create_event(&app, &owner, "c@example.com", 3000).await;
    // March: two events, nothing resolved.
    set_clock(&app, "2026-03-01T00:00:00Z").await;
    create_event(&app, &owner, "d@example.com", 500).await;
    create_event(&app, &owner, "e@example.com", 700).await;
    mark_recovered(&app, &owner, &sent_event).await;
    mark_recovered(&app, &owner, &unsent).await;

    let rows = get(&app, &owner, "/projects/acme/cohorts?months=3").await;
    let rows = rows.as_array().unwrap();
    let months: Vec<_> = rows.iter().map(|r| r["cohort"].as_str().unwrap()).collect();
    assert_eq!(months, ["2026-03", "2026-02", "2026-01"]);
    let march = &rows[0];
    assert_eq!(
        (
            &march["total_events"],
            &march["processing"],
            &march["total_mrr_cents"]
        ),
        (&json!(2), &json!(2), &json!(1200))
    );
    assert_eq!(rows[1]["total_events"], 0);
    assert_eq!(rows[1]["by_strategy"].as_object().unwrap().len(), 9);
    let january = &rows[2];
    assert_eq!(january["total_events"], 3);
    assert_eq!(january["recovered"], 2);
    assert_eq!(january["lost"], 0);
    assert_eq!(january["processing"], 1);
    assert_eq!(january["recovery_rate"], 100.0);
    assert_eq!(january["total_mrr_cents"], 5000);
    assert_eq!(january["recovered_mrr_cents"], 2000);
    let by_strategy = january["by_strategy"].as_object().unwrap();
    assert_eq!(by_strategy.len(), 9);
    assert_eq!(by_strategy[&strategy], 1, "{by_strategy:?}");
    assert_eq!(
        by_strategy
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum::<u64>(),
        1,
        "a recovery without a send counts nowhere"
    );

    // Twelve months by default; out of range is refused naming the parameter.
    assert_eq!(
        get(&app, &owner, "/projects/acme/cohorts")
            .await
            .as_array()
            .unwrap()
            .len(),
        12
    );
    for bad in ["0", "37", "x"] {
        let answer = app
            .call(
                &owner,
                Method::GET,
                &format!("/projects/acme/cohorts?months={bad}"),
                400,
            )
            .await;
        assert_eq!(answer["error"]["details"][0]["field"], "months");
    }
}

async fn forecasts_need_three_complete_months_then_use_ets(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    set_clock(&app, "2026-06-05T00:00:00Z").await;
    let owner = acme_owner(&app).await;
    set_clock(&app, "2026-01-05T00:00:00Z").await;
    // No history: a flat zero forecast.
    let empty = get(&app, &owner, "/projects/acme/forecasting?horizon=2").await;
    assert_eq!(empty["method"], "insufficient_history");
    assert_eq!(empty["history"], json!([]));
    assert_eq!(empty["forecast"][0]["month"], "2026-02");
    assert_eq!(empty["forecast"][1]["churned_mrr_cents"], 0);

    // January and February, and the current month (March): the mean of all three rows.
    let mrr_by_month = [
        ("2026-01-05", 1000),
        ("2026-02-05", 2000),
        ("2026-03-05", 4000),
        ("2026-04-05", 3000),
        ("2026-05-05", 3500),
        ("2026-06-05", 2500),
    ];
    let mut first_recovered = None;
    for (i, (day, mrr)) in mrr_by_month.iter().enumerate() {
        set_clock(&app, &format!("{day}T00:00:00Z")).await;
        let id = create_event(&app, &owner, &format!("c{i}@example.com"), *mrr).await;
        create_event(&app, &owner, &format!("d{i}@example.com"), 100).await;
        if i == 0 {
            mark_recovered(&app, &owner, &id).await;
            first_recovered = Some(id);
        }
        if i == 2 {
            let short = get(&app, &owner, "/projects/acme/forecasting").await;
            assert_eq!(short["method"], "insufficient_history");
            assert_eq!(short["history"].as_array().unwrap().len(), 3);
            // (1100 + 2100 + 4100) / 3 = 2433.33 → 2433; recovered (1000 + 0 + 0) / 3 → 333.
            let first = &short["forecast"][0];
            assert_eq!(first["month"], "2026-04");
            assert_eq!(
                (
                    &first["churned_mrr_cents"],
                    &first["churned_lower"],
                    &first["churned_upper"]
                ),
                (&json!(2433), &json!(2433), &json!(2433))
            );
            assert_eq!(first["recovered_mrr_cents"], 333);
            assert_eq!(short["forecast"].as_array().unwrap().len(), 3);
        }
    }
    assert!(first_recovered.is_some());

    // June is current; January to May are five complete months.
    let fitted = get(&app, &owner, "/projects/acme/forecasting?horizon=4").await;
    let method = fitted["method"].as_str().unwrap();
    assert!(method.starts_with("ETS("), "{method}");
    assert_eq!(fitted["currency"], "usd");
    let history = fitted["history"].as_array().unwrap();
    assert_eq!(history.len(), 6);
    assert_eq!(
        history[0],
        json!({"month": "2026-01", "churned_mrr_cents": 1100, "recovered_mrr_cents": 1000})
    );
    assert_eq!(history[5]["month"], "2026-06");
    let forecast = fitted["forecast"].as_array().unwrap();
    let months: Vec<_> = forecast
        .iter()
        .map(|f| f["month"].as_str().unwrap())
        .collect();
    assert_eq!(months, ["2026-07", "2026-08", "2026-09", "2026-10"]);
    for f in forecast {
        for (value, lower, upper) in [
            ("churned_mrr_cents", "churned_lower", "churned_upper"),
            ("recovered_mrr_cents", "recovered_lower", "recovered_upper"),
        ] {
            let (v, l, u) = (
                f[value].as_i64().unwrap(),
                f[lower].as_i64().unwrap(),
                f[upper].as_i64().unwrap(),
            );
            assert!(0 <= l && l <= v && v <= u, "{f}");
        }
        assert!(
            f["churned_upper"].as_i64() > f["churned_lower"].as_i64(),
            "a varying history has a spread: {f}"
        );
    }
    for bad in ["0", "13"] {
        app.call(
            &owner,
            Method::GET,
            &format!("/projects/acme/forecasting?horizon={bad}"),
            400,
        )
        .await;
    }
}
