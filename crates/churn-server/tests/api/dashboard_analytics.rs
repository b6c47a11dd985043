//! The dashboard's analytics page and the overview's tiles and "Needs you" (decisions §17):
//! the page's numbers are the API's (`/cohorts`, `/forecasting`, `/analytics/uplift`), the
//! cohort CSV holds the API's rows, tiles put their series in the main chart (a plain link,
//! or a partial for htmx), each kind of "Needs you" row appears when its condition holds and
//! links to where it is fixed, and another tenant's project is not found.

use reqwest::Method;
use serde_json::{Value, json};

use crate::analytics::set_clock;
use crate::dashboard_client::Browser;
use crate::dashboard_customers::{CUSTOMER, QUIET, seeded};
use crate::helpers::{
    Backend, TestApp, acme_owner, event_with_variants, generate, header_str, mark_recovered,
    patch_project, post_event, send_variant,
};
use churn_core::both_backends;

both_backends!(
    the_analytics_page_shows_what_the_api_answers,
    the_cohort_csv_holds_the_apis_rows,
    tiles_put_their_series_in_the_main_chart,
    needs_you_lists_each_kind_where_it_is_fixed,
    mrr_at_risk_is_kept_for_each_scoring_day,
    strategy_performance_counts_the_periods_days,
    another_tenants_analytics_are_not_found,
);

async fn api(app: &TestApp, token: &str, path: &str) -> Value {
    app.call(token, Method::GET, path, 200).await["data"].clone()
}

async fn event(app: &TestApp, token: &str, email: &str, mrr: i64) -> String {
    post_event(app, token, &json!({"customer_email": email, "event_type": "cancellation", "mrr": mrr, "currency": "usd"}), 201)
    .await["data"]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// `acme` with events in January (one recovered, one open) and March 2026 (one recovered,
/// two open), the clock in March; answers the owner's token and browser.
async fn months_of_events(app: &TestApp) -> (String, Browser<'_>) {
    set_clock(app, "2026-03-20T00:00:00Z").await;
    let token = acme_owner(app).await;
    set_clock(app, "2026-01-10T12:00:00Z").await;
    let january = event(app, &token, "a@example.com", 4_000).await;
    event(app, &token, "b@example.com", 1_000).await;
    set_clock(app, "2026-03-15T12:00:00Z").await;
    let march = event(app, &token, "c@example.com", 2_500).await;
    event(app, &token, "d@example.com", 700).await;
    event(app, &token, "e@example.com", 300).await;
    for id in [january, march] {
        mark_recovered(app, &token, &id).await;
    }
    let browser = Browser::sign_in(app, "owner@acme.io").await;
    (token, browser)
}

/// The text of each cell of each body row of the table with `class`, tags stripped.
pub fn table_rows(html: &str, class: &str) -> Vec<Vec<String>> {
    let table = html
        .split(&format!("<table class=\"{class}\">"))
        .nth(1)
        .and_then(|t| t.split("</table>").next())
        .unwrap_or_else(|| panic!("a {class} table: {html}"));
    let body = table.split("<tbody>").nth(1).unwrap();
    body.split("<tr>")
        .skip(1)
        .map(|row| {
            row.split("<t")
                .filter(|part| part.starts_with("d") || part.starts_with("h "))
                .map(|cell| {
                    let inner = cell.split_once('>').unwrap().1;
                    let inner = inner.split("</t").next().unwrap();
                    strip_tags(inner)
                })
                .collect()
        })
        .collect()
}

fn strip_tags(html: &str) -> String {
    let mut text = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text.trim().to_owned()
}

async fn the_analytics_page_shows_what_the_api_answers(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (token, browser) = months_of_events(&app).await;
    let html = browser.get("/app/p/acme/analytics?months=3", 200).await;
    assert!(html.contains("<a href=\"/app/p/acme/analytics\" aria-current=\"page\">Analytics</a>"));
    assert!(html.contains("<svg class=\"chart heatmap\""), "{html}");

    // Cohorts: one heat-map row and one table row per month of the API's answer.
    let cohorts = api(&app, &token, "/projects/acme/cohorts?months=3").await;
    let cohorts = cohorts.as_array().unwrap();
    let rows = table_rows(&html, "cohorts");
    assert_eq!(rows.len(), cohorts.len(), "{rows:?}");
    for (row, c) in rows.iter().zip(cohorts) {
        let expected = [
            c["cohort"].as_str().unwrap().to_owned(),
            c["total_events"].to_string(),
            c["recovered"].to_string(),
            c["lost"].to_string(),
            c["processing"].to_string(),
        ];
        assert_eq!(row[..5], expected, "{row:?}");
        assert_eq!(
            html.matches(&format!("<title>{}: ", c["cohort"].as_str().unwrap()))
                .count(),
            4,
            "four heat-map cells for {}",
            c["cohort"]
        );
    }
    assert_eq!(
        rows[0][5], "100%",
        "March: one recovered, none lost, two open"
    );
    assert!(
        html.contains("<title>2026-03: 1 of 3 events recovered (33.33%)</title>"),
        "{html}"
    );

    // The forecast: the API's months and method.
    let forecast = api(&app, &token, "/projects/acme/forecasting").await;
    for month in forecast["history"]
        .as_array()
        .unwrap()
        .iter()
        .chain(forecast["forecast"].as_array().unwrap())
    {
        assert!(html.contains(&format!("<td>{}</td>", month["month"].as_str().unwrap())));
    }
    // The method in words where the service's code is not for founders to decode.
    let method = match forecast["method"].as_str().unwrap() {
        "insufficient_history" => "the mean of the months so far (a model needs 3 complete months)",
        method => method,
    };
    assert!(
        html.contains(&format!("Forecast method: {method}.")),
        "{html}"
    );

    // Uplift: the API's groups, for the window in the URL and each period.
    let uplift = api(&app, &token, "/projects/acme/analytics/uplift?days=30").await;
    let html = browser.get("/app/p/acme/analytics?days=30", 200).await;
    let groups = table_rows(&html, "uplift");
    assert_eq!(groups[0][0], "Autopilot");
    assert_eq!(groups[0][1], uplift["treatment"]["events"].to_string());
    assert_eq!(groups[1][1], uplift["control"]["events"].to_string());
    let periods = table_rows(&html, "periods-table");
    let days: Vec<&str> = periods.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(days, ["30 days", "90 days", "180 days", "365 days"]);
    assert!(html.contains("aria-current=\"true\">30 days</a>"));

    // The API's limits, with its messages.
    for bad in ["months=99", "horizon=0", "days=abc"] {
        browser
            .get(&format!("/app/p/acme/analytics?{bad}"), 400)
            .await;
    }
}

async fn the_cohort_csv_holds_the_apis_rows(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (token, browser) = months_of_events(&app).await;
    let csv = browser
        .get("/app/p/acme/analytics?months=3&format=csv", 200)
        .await;
    let lines: Vec<&str> = csv.split("\r\n").collect();
    assert!(lines[0].starts_with(
        "cohort,total_events,recovered,lost,processing,recovery_rate,total_mrr_cents,recovered_mrr_cents,recovered_by_"
    ));
    assert_eq!(lines[0].matches("recovered_by_").count(), 9);
    let cohorts = api(&app, &token, "/projects/acme/cohorts?months=3").await;
    let cohorts = cohorts.as_array().unwrap();
    assert_eq!(
        lines.len(),
        cohorts.len() + 2,
        "a row per month and the last line end"
    );
    for (line, c) in lines[1..].iter().zip(cohorts) {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells[0], c["cohort"]);
        assert_eq!(cells[1], c["total_events"].to_string());
        assert_eq!(cells[6], c["total_mrr_cents"].to_string());
        assert_eq!(cells[7], c["recovered_mrr_cents"].to_string());
    }
    assert_eq!(lines[1], "2026-03,3,1,0,2,100,3500,2500,0,0,0,0,0,0,0,0,0");
    let r = browser.open("/app/p/acme/analytics?format=csv").await;
    assert_eq!(r.headers()["content-type"], "text/csv; charset=utf-8");
    assert!(header_str(&r, "content-disposition").contains("acme-cohorts.csv"));
}

async fn tiles_put_their_series_in_the_main_chart(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, browser) = months_of_events(&app).await;
    let html = browser.get("/app/p/acme?period=7", 200).await;
    assert_eq!(
        html.matches("<svg class=\"spark\"").count(),
        5,
        "a sparkline per tile"
    );
    for metric in [
        "recovered_mrr",
        "recovery_rate",
        "open_events",
        "mrr_at_risk",
        "dunning_recovery_rate",
    ] {
        assert!(
            html.contains(&format!(
                "<a class=\"tile\" href=\"?period=7&#38;metric={metric}\""
            )),
            "{metric}: {html}"
        );
    }
    assert!(html.contains("Churned and recovered MRR by month</h2>"));
    assert!(html.contains("metric=recovered_mrr\" hx-get=\"?period=7&#38;metric=recovered_mrr\" hx-target=\"#overview-main\" hx-swap=\"outerHTML\" hx-push-url=\"true\" aria-current=\"true\""));

    // A plain link: the whole page, with the open events by month in the chart.
    let html = browser
        .get("/app/p/acme?period=7&metric=open_events", 200)
        .await;
    assert!(
        html.starts_with("<!DOCTYPE html>"),
        "the whole page: {html}"
    );
    assert!(
        html.contains("<h2 id=\"mrr-heading\">Churn events created each month and still open</h2>")
    );
    let months = table_rows(&html, "main-numbers");
    assert_eq!(months.len(), 6, "{months:?}");
    assert_eq!(months[5], ["2026-03", "2"]);
    assert_eq!(months[3], ["2026-01", "1"]);
    assert!(html.contains("metric=open_events\" hx-get=\"?period=7&#38;metric=open_events\" hx-target=\"#overview-main\" hx-swap=\"outerHTML\" hx-push-url=\"true\" aria-current=\"true\""));

    // htmx: just the tiles and the chart.
    let r = app
        .client
        .get(format!(
            "{}/app/p/acme?period=7&metric=recovery_rate",
            app.address
        ))
        .header("cookie", &browser.cookie)
        .header("HX-Request", "true")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(header_str(&r, "vary").contains("HX-Request"));
    let partial = r.text().await.unwrap();
    assert!(
        partial.starts_with("<div id=\"overview-main\">"),
        "{partial}"
    );
    assert!(!partial.contains("<html") && !partial.contains("Needs you"));
    let rates = table_rows(&partial, "main-numbers");
    assert_eq!(rates[5], ["2026-03", "100%"]);

    browser.get("/app/p/acme?metric=bogus", 400).await;
}

/// MRR at risk by month-end is read from the figure kept per scoring day: a day no run kept
/// is filled once from the scores, and a scoring run keeps its own day's figure from the
/// scores as they are when it ends.
async fn mrr_at_risk_is_kept_for_each_scoring_day(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (token, browser) = months_of_events(&app).await;
    let project: String = {
        use sqlx::Row;
        app.query("SELECT id FROM projects WHERE slug = 'acme'")
            .await[0]
            .get(0)
    };
    // a@ (MRR 4,000) high in February; on 15 March a@ low and b@ (1,000) critical, and c@
    // (2,500) high on 1 March with no later score.
    for (email, day, level) in [
        ("a@example.com", "2026-02-10", "high"),
        ("a@example.com", "2026-03-15", "low"),
        ("b@example.com", "2026-03-15", "critical"),
        ("c@example.com", "2026-03-01", "high"),
    ] {
        app.query(&format!(
            "INSERT INTO risk_scores (project_id, customer_email, day, score, level, signals, model, scored_at) \
             VALUES ('{project}', '{email}', '{day}', 80, '{level}', '[]', 'default', '{day}T06:00:00.000Z')"
        ))
        .await;
    }
    let months = |html: &str| table_rows(html, "main-numbers");
    let html = browser
        .get("/app/p/acme?period=7&metric=mrr_at_risk", 200)
        .await;
    let rows = months(&html);
    assert_eq!(rows[4], ["2026-02", "$40.00"], "{rows:?}");
    assert_eq!(
        rows[5],
        ["2026-03", "$35.00"],
        "b@ and c@ on 15 March: {rows:?}"
    );
    let kept = |rows: Vec<sqlx::any::AnyRow>| -> Vec<(String, i64, i64)> {
        use sqlx::Row;
        rows.iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect()
    };
    let filled = kept(
        app.query("SELECT day, customers, mrr_cents FROM risk_day_totals ORDER BY day")
            .await,
    );
    assert_eq!(
        filled,
        [
            ("2026-02-10".to_owned(), 1, 4_000),
            ("2026-03-01".to_owned(), 2, 6_500),
            ("2026-03-15".to_owned(), 2, 3_500)
        ],
        "one figure per latest scoring day read: February's end, the previous week's, today's"
    );

    // A run today (15 March) keeps the day's figure from the scores it ends with.
    app.query(&format!(
        "UPDATE risk_scores SET level = 'low' WHERE project_id = '{project}' AND customer_email = 'c@example.com'"
    ))
    .await;
    app.call(
        &token,
        Method::POST,
        "/projects/acme/churn-risk/recompute",
        200,
    )
    .await;
    let html = browser
        .get("/app/p/acme?period=7&metric=mrr_at_risk", 200)
        .await;
    let rows = months(&html);
    assert_eq!(rows[5], ["2026-03", "$10.00"], "{rows:?}");
    assert_eq!(rows[4], ["2026-02", "$40.00"], "{rows:?}");
    let today = kept(
        app.query("SELECT day, customers, mrr_cents FROM risk_day_totals WHERE day = '2026-03-15'")
            .await,
    );
    assert_eq!(today, [("2026-03-15".to_owned(), 1, 1_000)]);
}

/// Strategy performance counts the sends of the period's UTC days (today's so far
/// included) and those of them whose event is recovered.
async fn strategy_performance_counts_the_periods_days(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    // Signed in on the last day, so the token holds at every earlier clock.
    set_clock(&app, "2026-03-16T12:00:00Z").await;
    let token = acme_owner(&app).await;
    let mut sent = Vec::new();
    for (at, email) in [
        ("2026-03-01T10:00:00Z", "early@example.com"),
        ("2026-03-09T23:59:00Z", "eve@example.com"),
        ("2026-03-10T00:00:00Z", "edge@example.com"),
        ("2026-03-16T09:00:00Z", "today@example.com"),
    ] {
        set_clock(&app, at).await;
        let (id, vid) = event_with_variants(&app, &token, email).await;
        send_variant(&app, &token, &id, &vid, 200).await;
        sent.push(id);
    }
    for id in &sent[..3] {
        mark_recovered(&app, &token, id).await;
    }
    set_clock(&app, "2026-03-16T12:00:00Z").await;
    let browser = Browser::sign_in(&app, "owner@acme.io").await;
    // (sends, recovered) over the strategy table's rows.
    let totals = |html: &str| -> (i64, i64) {
        let card = html
            .split("id=\"strategies-heading\"")
            .nth(1)
            .and_then(|c| c.split("</section>").next())
            .unwrap();
        card.split("<tr><td>").skip(1).fold((0, 0), |(s, r), row| {
            let cells: Vec<i64> = row
                .split("<td class=\"num\">")
                .skip(1)
                .take(2)
                .map(|c| {
                    c.split('<')
                        .next()
                        .unwrap()
                        .replace(',', "")
                        .parse()
                        .unwrap()
                })
                .collect();
            (s + cells[0], r + cells[1])
        })
    };
    // 10 to 16 March: the send at midnight on the 10th (recovered) and today's, not the
    // one a minute before, though it is within seven times 24 hours.
    let html = browser.get("/app/p/acme?period=7", 200).await;
    assert_eq!(totals(&html), (2, 1), "{html}");
    let html = browser.get("/app/p/acme?period=30", 200).await;
    assert_eq!(totals(&html), (4, 3));
}

async fn needs_you_lists_each_kind_where_it_is_fixed(backend: Backend) {
    let (s, failure, _) = seeded(backend).await;
    let app = &s.app;
    let browser = Browser::sign_in(app, "owner@acme.io").await;
    let needs = |html: &str| table_rows(html, "needs");
    let hrefs = |html: &str| -> Vec<String> {
        let table = html
            .split("<table class=\"needs\">")
            .nth(1)
            .unwrap_or_default();
        table
            .split("<a href=\"")
            .skip(1)
            .map(|a| a.split('"').next().unwrap().to_owned())
            .collect()
    };

    // The seeded alert about QUIET failed every delivery.
    let html = browser.get("/app/p/acme", 200).await;
    let rows = needs(&html);
    assert!(
        rows.iter()
            .any(|r| r[0].starts_with("A risk alert failed") && r[1] == QUIET),
        "{rows:?}"
    );
    assert!(hrefs(&html).contains(&"/app/p/acme/risk".to_owned()));
    assert!(
        !rows.iter().any(|r| r[1] == CUSTOMER),
        "the payment has retries left: {rows:?}"
    );

    // A payment one decline from abandonment.
    app.query("UPDATE payment_failures SET attempts = max_retries - 1")
        .await;
    let html = browser.get("/app/p/acme", 200).await;
    assert!(
        needs(&html)
            .iter()
            .any(|r| r[0].starts_with("A failing payment") && r[1] == CUSTOMER),
        "{html}"
    );
    assert!(hrefs(&html).contains(&format!("/app/p/acme/payments/{failure}")));

    // A customer gone critical while alerts were off.
    let key = crate::helpers::rotate_secret_key(app, &s.token).await;
    let acme = crate::helpers::Acme {
        token: s.token.clone(),
        key,
    };
    crate::alerts::configure(app, json!({"enabled": false})).await;
    crate::risk::track(
        app,
        &acme.key,
        &[
            ("login", "silent@shop.io", 20, json!({})),
            ("nps_response", "silent@shop.io", 20, json!({"score": 4})),
        ],
    )
    .await;
    assert_eq!(crate::risk::recompute(app, &acme).await["alerts"], 0);
    crate::alerts::configure(app, json!({"enabled": true})).await;
    let html = browser.get("/app/p/acme", 200).await;
    assert!(
        needs(&html)
            .iter()
            .any(|r| r[0].starts_with("A customer at critical risk") && r[1] == "silent@shop.io"),
        "{html}"
    );
    assert!(
        hrefs(&html).contains(&"/app/p/acme/customers/silent@shop.io".to_owned()),
        "{:?}",
        hrefs(&html)
    );
    assert!(
        !needs(&html)
            .iter()
            .any(|r| r[0].starts_with("A customer at critical") && r[1] == QUIET)
    );

    // A sender domain set and not verified.
    app.expect(
        app.req(Method::PUT, "/projects/acme/email-settings")
            .bearer_auth(&s.token)
            .json(&json!({"from_email": "hello@acme.io"})),
        200,
    )
    .await;
    // Autopilot's event, some of whose drafts lack their material.
    patch_project(
        app,
        &s.token,
        &json!({"settings": {"autopilot": {"enabled": true, "delay_minutes": 600}}}),
        200,
    )
    .await;
    let event = app
        .expect(
            app.req(Method::POST, "/projects/acme/churn-events")
                .bearer_auth(&s.token)
                .json(
                    &json!({"customer_email": "dana@example.com", "event_type": "cancellation",
                    "cancel_reason": "too expensive for us", "mrr": 9_900, "currency": "usd"}),
                ),
            201,
        )
        .await["data"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let variants = generate(&s.app, &s.token, &event).await;
    assert!(
        variants
            .iter()
            .any(|v| !v["warnings"].as_array().unwrap().is_empty()),
        "no testimonials, features or founder's name: some drafts have warnings"
    );
    let html = browser.get("/app/p/acme", 200).await;
    let rows = needs(&html);
    assert!(
        rows.iter()
            .any(|r| r[0] == "The sender domain is not verified" && r[1] == "acme.io"),
        "{rows:?}"
    );
    assert!(hrefs(&html).contains(&"/app/p/acme/settings#sender".to_owned()));
    assert!(
        rows.iter()
            .any(|r| r[0].starts_with("Autopilot will skip") && r[1] == "dana@example.com"),
        "{rows:?}"
    );
    assert!(hrefs(&html).contains(&format!("/app/p/acme/events/{event}")));

    // Most money at stake first.
    let cents: Vec<f64> = rows
        .iter()
        .map(|r| {
            r[2].trim_start_matches('$')
                .replace(',', "")
                .parse()
                .unwrap()
        })
        .collect();
    assert!(cents.windows(2).all(|w| w[0] >= w[1]), "{rows:?}");
}

async fn another_tenants_analytics_are_not_found(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (token, _) = months_of_events(&app).await;
    let project = api(&app, &token, "/projects/acme").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mallory = Browser::another_tenant(&app, "Acme").await;
    for path in ["/analytics", "/analytics?format=csv", "?metric=open_events"] {
        mallory.get(&format!("/app/p/{project}{path}"), 404).await;
    }
    // Mallory's own "acme" holds none of acme's events.
    let csv = mallory
        .get("/app/p/acme/analytics?months=3&format=csv", 200)
        .await;
    assert!(csv.contains("\r\n2026-03,0,0,0,0,0,0,0,"), "{csv}");
}
