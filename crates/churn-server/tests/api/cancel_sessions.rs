//! Cancel-flow sessions and the funnel (decisions §19): a verified widget open starts a
//! session, the reason step and the submission move it forward only, it is abandoned 24 hours
//! after opening on the test clock, another project's or a forged id moves nothing, and the
//! list and the funnel read them.

use reqwest::Method;
use serde_json::{Value, json};

use crate::cancel_flow::{acme_keys, identity_secret, signed};
use crate::dashboard_analytics::table_rows;
use crate::dashboard_client::Browser;
use crate::helpers::{Backend, TestApp, advance, fields, header_str, post_event};
use churn_core::both_backends;

both_backends!(
    each_step_moves_a_session_forward_only,
    another_projects_or_a_forged_session_moves_nothing,
    the_funnel_counts_sessions_abandoned_on_the_test_clock,
    the_dashboard_draws_the_funnel_and_lists_the_sessions,
);

/// The widget's side of one project: its public key and identity secret.
struct Widget<'a> {
    app: &'a TestApp,
    public: String,
    secret: String,
}

impl<'a> Widget<'a> {
    async fn of(app: &'a TestApp, token: &str, slug: &str) -> Self {
        let public = if slug == "acme" {
            acme_keys(app, token).await.0
        } else {
            app.data_str(
                token,
                Method::GET,
                &format!("/projects/{slug}"),
                "public_key",
            )
            .await
        };
        let secret = identity_secret(app, token, slug).await;
        Widget {
            app,
            public,
            secret,
        }
    }

    /// Opens the widget for `email` with its hash: the session id answered.
    async fn open(&self, email: &str) -> String {
        let hash = churn_sdk::identity::customer_hash(&self.secret, email, None);
        let config = self
            .app
            .expect(
                self.app.req(
                    Method::GET,
                    &format!(
                        "/cancel-flow/config/{}?customer_email={email}&customer_hash={hash}",
                        self.public
                    ),
                ),
                200,
            )
            .await;
        config["data"]["session_id"].as_str().unwrap().to_owned()
    }

    /// The customer chose `reason` in `session`.
    async fn reason(&self, session: &str, email: &str, reason: &str, status: u16) -> Value {
        let body = signed(
            &self.secret,
            json!({"customer_email": email, "reason": reason}),
        );
        self.app
            .expect(
                self.app
                    .req(
                        Method::POST,
                        &format!("/cancel-flow/sessions/{session}/reason"),
                    )
                    .header("x-public-key", &self.public)
                    .json(&body),
                status,
            )
            .await
    }

    /// Submits the outcome, in `session` when given.
    async fn submit(&self, session: Option<&str>, email: &str, reason: &str, accepted: bool) {
        self.submit_expecting(session, email, reason, accepted, 1000, 201)
            .await;
    }

    /// A customer through the whole flow: opens it, chooses `reason` and submits the outcome
    /// with `mrr`; the session id answered.
    async fn through(&self, email: &str, reason: &str, accepted: bool, mrr: i64) -> String {
        let session = self.open(email).await;
        self.reason(&session, email, reason, 200).await;
        self.submit_expecting(Some(&session), email, reason, accepted, mrr, 201)
            .await;
        session
    }

    async fn submit_expecting(
        &self,
        session: Option<&str>,
        email: &str,
        reason: &str,
        accepted: bool,
        mrr: i64,
        status: u16,
    ) -> Value {
        let mut body = json!({"customer_email": email, "reason": reason,
            "offer_accepted": accepted, "mrr": mrr});
        if let Some(session) = session {
            body["session_id"] = json!(session);
        }
        self.app
            .expect(
                self.app
                    .req(Method::POST, "/cancel-flow/reasons")
                    .header("x-public-key", &self.public)
                    .json(&signed(&self.secret, body)),
                status,
            )
            .await
    }
}

/// A flow with an offer for `too_expensive` and none for `missing_features`.
async fn put_flow(app: &TestApp, token: &str, slug: &str) {
    app.call_json(token, Method::PUT, &format!("/projects/{slug}/cancel-flow"), &json!({"reasons": [{"code": "too_expensive", "label": "Too pricey"}, {"code": "missing_features", "label": "Missing something"},], "offers": {"too_expensive": {"kind": "discount", "percent": 20, "months": 3}},}), 200).await;
}

async fn sessions(app: &TestApp, token: &str, query: &str) -> Value {
    app.call(
        token,
        Method::GET,
        &format!("/projects/acme/cancel-flow/sessions{query}"),
        200,
    )
    .await
}

async fn session(app: &TestApp, token: &str, id: &str) -> Value {
    sessions(app, token, "?per_page=100").await["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("no session {id}"))
}

async fn each_step_moves_a_session_forward_only(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    put_flow(&app, &token, "acme").await;
    // Dana accepts an offer more than once.
    crate::cancel_offers::without_offer_cooldown(&app, &token).await;
    let w = Widget::of(&app, &token, "acme").await;
    let dana = "dana@customer.example";

    // opened → offer_shown (a reason with an offer) → saved.
    let id = w.open("Dana@Customer.example").await;
    let opened = session(&app, &token, &id).await;
    assert_eq!(opened["status"], "opened");
    assert_eq!(opened["customer_email"], dana);
    assert_eq!(opened["flow_id"], Value::Null);
    assert_eq!(opened["reason"], Value::Null);
    assert_eq!(opened["ended_at"], Value::Null);
    let shown = w.reason(&id, dana, "too_expensive", 200).await;
    assert_eq!(shown["data"]["status"], "offer_shown");
    assert_eq!(shown["data"]["offer_kind"], "discount");
    assert_eq!(shown["data"]["reason"], "too_expensive");
    // Back to a reason without an offer is a step backward.
    let back = w.reason(&id, dana, "missing_features", 409).await;
    assert_eq!(back["error"]["code"], "CONFLICT");
    // A reason that is not the flow's is refused and moves nothing.
    w.reason(&id, dana, "other", 400).await;
    w.submit(Some(&id), dana, "too_expensive", true).await;
    let saved = session(&app, &token, &id).await;
    assert_eq!(saved["status"], "saved");
    assert_eq!(saved["reason"], "too_expensive");
    assert_eq!(saved["offer_kind"], "discount");
    assert!(saved["ended_at"].is_string());
    // Nothing moves an ended session.
    w.reason(&id, dana, "too_expensive", 409).await;

    // opened → reason (no offer) → cancelled.
    let id = w.open(dana).await;
    let chose = w.reason(&id, dana, "missing_features", 200).await;
    assert_eq!(chose["data"]["status"], "reason");
    assert_eq!(chose["data"]["offer_kind"], Value::Null);
    w.submit(Some(&id), dana, "missing_features", false).await;
    let cancelled = session(&app, &token, &id).await;
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(cancelled["offer_kind"], Value::Null);

    // An offer declined: offer_shown → cancelled, the offer kept as shown.
    let id = w.open(dana).await;
    w.reason(&id, dana, "too_expensive", 200).await;
    w.submit(Some(&id), dana, "too_expensive", false).await;
    let declined = session(&app, &token, &id).await;
    assert_eq!(declined["status"], "cancelled");
    assert_eq!(declined["offer_kind"], "discount");

    // A widget that reports only the outcome moves opened straight to it.
    let id = w.open(dana).await;
    w.submit(Some(&id), dana, "too_expensive", true).await;
    let direct = session(&app, &token, &id).await;
    assert_eq!(direct["status"], "saved");
    assert_eq!(direct["reason"], "too_expensive");
    assert_eq!(direct["offer_kind"], "discount");

    // A session past 24 hours is abandoned: its step is refused; a late submission is still
    // recorded as a cancellation but leaves the session abandoned.
    let id = w.open(dana).await;
    advance(&app, 24 * 3600).await;
    assert_eq!(session(&app, &token, &id).await["status"], "abandoned");
    w.reason(&id, dana, "too_expensive", 409).await;
    let late = w
        .submit_expecting(Some(&id), dana, "missing_features", false, 1000, 201)
        .await;
    assert!(late["data"]["churn_event_id"].is_string());
    let abandoned = session(&app, &token, &id).await;
    assert_eq!(abandoned["status"], "abandoned");
    assert_eq!(abandoned["ended_at"], Value::Null);

    // An older widget, without a session id: recorded, and no session started or moved.
    let before = sessions(&app, &token, "").await["meta"]["total"].clone();
    w.submit(None, dana, "missing_features", false).await;
    let config = app
        .expect(
            app.req(Method::GET, &format!("/cancel-flow/config/{}", w.public)),
            200,
        )
        .await;
    assert_eq!(config["data"]["session_id"], Value::Null);
    assert_eq!(sessions(&app, &token, "").await["meta"]["total"], before);
    assert_eq!(before, 5);
}

async fn another_projects_or_a_forged_session_moves_nothing(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    put_flow(&app, &token, "acme").await;
    let intruder = app.register("mallory@example.com").await;
    let elsewhere = app.create_project(&intruder.token, "Elsewhere").await;
    let slug = elsewhere["slug"].as_str().unwrap().to_owned();
    put_flow(&app, &intruder.token, &slug).await;
    let acme = Widget::of(&app, &token, "acme").await;
    let other = Widget::of(&app, &intruder.token, &slug).await;
    let dana = "dana@customer.example";
    let id = acme.open(dana).await;

    // Another project's key with a valid hash of its own: the session is not found.
    let refused = other.reason(&id, dana, "too_expensive", 404).await;
    assert_eq!(refused["error"]["code"], "NOT_FOUND");
    other
        .submit_expecting(Some(&id), dana, "too_expensive", true, 1000, 404)
        .await;
    // Another customer of the same project, and a forged id.
    acme.reason(&id, "eve@customer.example", "too_expensive", 404)
        .await;
    let forged = "00000000-0000-7000-8000-000000000000";
    acme.reason(forged, dana, "too_expensive", 404).await;
    acme.submit_expecting(Some(forged), dana, "too_expensive", true, 1000, 404)
        .await;
    // A session step without the customer's hash.
    app.expect(
        app.req(Method::POST, &format!("/cancel-flow/sessions/{id}/reason"))
            .header("x-public-key", &acme.public)
            .json(&json!({"customer_email": dana, "reason": "too_expensive"})),
        401,
    )
    .await;

    // Nothing moved, and the refused submissions stored no event anywhere.
    let untouched = session(&app, &token, &id).await;
    assert_eq!(untouched["status"], "opened");
    assert_eq!(untouched["reason"], Value::Null);
    for (token, slug) in [(&token, "acme"), (&intruder.token, slug.as_str())] {
        let listed = app
            .call(
                token,
                Method::GET,
                &format!("/projects/{slug}/churn-events"),
                200,
            )
            .await;
        assert_eq!(listed["meta"]["total"], 0, "{slug}");
    }
    // The other project lists none of acme's sessions.
    let theirs = app
        .call(
            &intruder.token,
            Method::GET,
            &format!("/projects/{slug}/cancel-flow/sessions"),
            200,
        )
        .await;
    assert_eq!(theirs["data"], json!([]));
}

async fn the_funnel_counts_sessions_abandoned_on_the_test_clock(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    put_flow(&app, &token, "acme").await;
    let w = Widget::of(&app, &token, "acme").await;
    let funnel = |query: &'static str| {
        let app = &app;
        let token = &token;
        async move {
            app.call(
                token,
                Method::GET,
                &format!("/projects/acme/analytics/cancel-flow{query}"),
                200,
            )
            .await["data"]
                .clone()
        }
    };
    // Nothing yet: zero counts and rates, as the other analytics answer them.
    assert_eq!(
        funnel("").await,
        json!({"sessions": 0, "reason_chosen": 0, "offer_shown": 0, "saved": 0,
            "cancelled": 0, "abandoned": 0, "save_rate": 0.0, "reasons": [], "offers": [],
            "flows": []})
    );

    // The MRR a reason counts is each customer's latest churn event's: erin has one from
    // before, and none from the flow, since her session is abandoned.
    post_event(&app, &token, &json!({"customer_email": "erin@customer.example", "event_type": "cancellation", "mrr": 7000}), 201).await;
    // a: offer shown and taken; b: offer declined; c: a reason without offer, cancelled;
    // d: offer shown, then left; e: opened, then left.
    let a = w
        .through("a@customer.example", "too_expensive", true, 1000)
        .await;
    w.through("b@customer.example", "too_expensive", false, 2000)
        .await;
    w.through("c@customer.example", "missing_features", false, 4000)
        .await;
    let d = w.open("erin@customer.example").await;
    w.reason(&d, "erin@customer.example", "too_expensive", 200)
        .await;
    w.open("e@customer.example").await;

    let before = funnel("").await;
    assert_eq!(before["sessions"], 5);
    assert_eq!(
        before["abandoned"], 0,
        "nothing is abandoned before 24 hours"
    );
    advance(&app, 24 * 3600 - 1).await;
    assert_eq!(funnel("").await["abandoned"], 0);
    advance(&app, 1).await;
    // f opens now: in progress, not abandoned.
    w.open("f@customer.example").await;

    let expected = json!({
        "sessions": 6, "reason_chosen": 4, "offer_shown": 3, "saved": 1, "cancelled": 2,
        "abandoned": 2, "save_rate": 33.33,
        "reasons": [
            {"code": "too_expensive", "count": 3, "mrr_cents": 1000 + 2000 + 7000},
            {"code": "missing_features", "count": 1, "mrr_cents": 4000},
        ],
        "offers": [{"kind": "discount", "shown": 3, "accepted": 1, "accept_rate": 33.33}],
        "flows": [{"flow_id": null, "variant": null, "sessions": 6, "saved": 1,
            "cancelled": 2, "save_rate": 33.33}],
    });
    assert_eq!(funnel("").await, expected);
    assert_eq!(funnel("?days=30").await, expected);
    // The list: filtered by the status as it reads now.
    let statuses = |page: Value| -> Vec<String> {
        page["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["status"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        statuses(sessions(&app, &token, "?status=opened").await),
        ["opened"]
    );
    assert_eq!(
        statuses(sessions(&app, &token, "?status=abandoned").await),
        ["abandoned"; 2]
    );
    // The window: 5 days on, only f opened within the last 5 days, and it is abandoned now.
    advance(&app, 5 * 86_400).await;
    let recent = funnel("?days=5").await;
    assert_eq!(
        (&recent["sessions"], &recent["abandoned"]),
        (&json!(1), &json!(1))
    );
    assert_eq!(funnel("?days=7").await["sessions"], 6);
    let bad = app
        .call(
            &token,
            Method::GET,
            "/projects/acme/analytics/cancel-flow?days=0",
            400,
        )
        .await;
    assert_eq!(fields(&bad), ["days"]);

    // Five days on, f is abandoned too; the list, paginated.
    assert_eq!(
        statuses(sessions(&app, &token, "?status=abandoned").await),
        ["abandoned"; 3]
    );
    assert_eq!(
        statuses(sessions(&app, &token, "?status=saved").await),
        ["saved"]
    );
    assert_eq!(
        statuses(sessions(&app, &token, "?status=cancelled").await),
        ["cancelled"; 2]
    );
    assert_eq!(
        sessions(&app, &token, "?status=opened").await["data"],
        json!([])
    );
    let page = sessions(&app, &token, "?per_page=4&page=2").await;
    assert_eq!(
        page["meta"],
        json!({"page": 2, "per_page": 4, "total": 6, "total_pages": 2})
    );
    assert_eq!(page["data"].as_array().unwrap().len(), 2);
    // Newest first: the last page holds the first sessions opened.
    assert_eq!(page["data"][1]["id"], a.as_str());
    let bad = app
        .call(
            &token,
            Method::GET,
            "/projects/acme/cancel-flow/sessions?status=lost",
            400,
        )
        .await;
    assert_eq!(fields(&bad), ["status"]);
}

async fn the_dashboard_draws_the_funnel_and_lists_the_sessions(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    put_flow(&app, &token, "acme").await;
    let w = Widget::of(&app, &token, "acme").await;
    let a = w
        .through("a@customer.example", "too_expensive", true, 2500)
        .await;
    let b = w.open("b@customer.example").await;
    w.submit_expecting(
        Some(&b),
        "b@customer.example",
        "missing_features",
        false,
        1000,
        201,
    )
    .await;
    let c = w.open("c@customer.example").await;
    let browser = Browser::sign_in(&app, "owner@acme.io").await;

    let html = browser.get("/app/p/acme/analytics?days=30", 200).await;
    assert!(html.contains("Cancel flow"), "{html}");
    assert!(html.contains("<strong>50%</strong> saved"), "{html}");
    assert!(html.contains(r#"<svg class="chart funnel""#));
    let steps: Vec<Vec<String>> = [
        ["Opened", "3"],
        ["Chose a reason", "2"],
        ["Shown an offer", "1"],
        ["Saved", "1"],
        ["Cancelled", "1"],
        ["Abandoned", "0"],
    ]
    .iter()
    .map(|r| r.iter().map(|c| (*c).to_owned()).collect())
    .collect();
    assert_eq!(table_rows(&html, "funnel-table"), steps);
    assert_eq!(
        table_rows(&html, "reasons-table"),
        [
            ["too expensive", "1", "$25.00"],
            ["missing features", "1", "$10.00"]
        ]
    );
    assert_eq!(
        table_rows(&html, "offers-table"),
        [["discount", "1", "1", "100%"]]
    );
    assert_eq!(
        table_rows(&html, "flows-table"),
        [["default flow", "3", "1", "1", "50%"]]
    );

    let list = browser.get("/app/p/acme/cancel-flow/sessions", 200).await;
    for email in [
        "a@customer.example",
        "b@customer.example",
        "c@customer.example",
    ] {
        assert!(list.contains(email), "{email}: {list}");
    }
    let saved = browser
        .get("/app/p/acme/cancel-flow/sessions?status=saved", 200)
        .await;
    assert!(saved.contains("a@customer.example"));
    assert!(!saved.contains("b@customer.example"));

    let csv = browser
        .get("/app/p/acme/cancel-flow/sessions?format=csv", 200)
        .await;
    let lines: Vec<&str> = csv.split("\r\n").collect();
    assert_eq!(
        lines[0],
        "id,customer_email,flow_id,variant,reason,offer_kind,status,opened_at,ended_at"
    );
    assert_eq!(
        lines.len(),
        5,
        "three sessions and the last line end: {csv}"
    );
    let row = |id: &str| -> Vec<String> {
        let line = lines.iter().find(|l| l.starts_with(id)).unwrap();
        line.split(',').map(str::to_owned).collect()
    };
    let (a, b, c) = (row(&a), row(&b), row(&c));
    assert_eq!(
        a[1..7],
        [
            "a@customer.example",
            "",
            "",
            "too_expensive",
            "discount",
            "saved"
        ]
    );
    assert_eq!(
        b[1..7],
        [
            "b@customer.example",
            "",
            "",
            "missing_features",
            "",
            "cancelled"
        ]
    );
    assert_eq!(c[1..7], ["c@customer.example", "", "", "", "", "opened"]);
    assert!(!a[8].is_empty() && c[8].is_empty(), "ended_at");
    let r = browser
        .open("/app/p/acme/cancel-flow/sessions?status=abandoned&format=csv")
        .await;
    assert_eq!(r.headers()["content-type"], "text/csv; charset=utf-8");
    assert!(header_str(&r, "content-disposition").contains("acme-cancel-flow-sessions.csv"));
}
