//! The dashboard's outcome-webhook pages (decisions §19, §17): endpoints created (the secret
//! shown once), edited, tested and deleted through the services of the API routes; the
//! delivery log paginated, exported as CSV and redelivered; viewers and members reading
//! without write controls and refused; writes without the CSRF token refused with nothing
//! changed; another tenant's endpoint not found.

use reqwest::Method;
use serde_json::{Value, json};
use wiremock::ResponseTemplate;

use crate::alerts::receiving;
use crate::dashboard_client::{Browser, Posted, main_of};
use crate::helpers::{Backend, TestApp, acme_owner, header_str, post_endpoint};
use crate::team::join;
use churn_core::both_backends;

both_backends!(
    an_endpoint_is_created_edited_tested_redelivered_and_deleted_from_its_pages,
    a_refused_endpoint_keeps_what_was_typed_and_creates_nothing,
    the_delivery_log_is_paginated_and_exported_as_csv,
    viewers_and_members_read_without_write_controls_and_are_refused,
    writes_without_the_csrf_token_are_refused_and_change_nothing,
    another_tenants_endpoint_is_not_found,
);

const LIST: &str = "/app/p/acme/settings/webhooks";

pub(crate) async fn endpoints(app: &TestApp, token: &str) -> Vec<Value> {
    app.call(token, Method::GET, "/projects/acme/webhook-endpoints", 200)
        .await["data"]
        .as_array()
        .unwrap()
        .clone()
}

async fn deliveries(app: &TestApp, token: &str, id: &str) -> Vec<Value> {
    let path = format!("/projects/acme/webhook-endpoints/{id}/deliveries?per_page=100");
    app.call(token, Method::GET, &path, 200).await["data"]
        .as_array()
        .unwrap()
        .clone()
}

/// An endpoint made through the API; answers its id.
async fn endpoint_by_api(app: &TestApp, token: &str, url: &str) -> String {
    post_endpoint(
        app,
        token,
        &json!({"url": url, "description": "CRM", "event_types": ["churn_event.created"]}),
        201,
    )
    .await["data"]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Queues a test message to the endpoint `id`.
async fn send_test(app: &TestApp, token: &str, id: &str) {
    let path = format!("/projects/acme/webhook-endpoints/{id}/test");
    app.call(token, Method::POST, &path, 202).await;
}

/// An endpoint made through the API at a port that answers nothing, with a test message
/// queued to it: (its id, the delivery's id).
async fn endpoint_with_a_test(app: &TestApp, token: &str) -> (String, String) {
    let id = endpoint_by_api(app, token, "https://127.0.0.1:9/hooks").await;
    send_test(app, token, &id).await;
    let did = deliveries(app, token, &id).await[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    (id, did)
}

async fn an_endpoint_is_created_edited_tested_redelivered_and_deleted_from_its_pages(
    backend: Backend,
) {
    let (receiver, app) = receiving(
        backend,
        "/alerts",
        ResponseTemplate::new(200).set_body_string("ok"),
    )
    .await;
    let token = acme_owner(&app).await;
    app.run_jobs().await;
    let owner = Browser::sign_in(&app, "owner@acme.io").await;
    let settings = owner.get("/app/p/acme/settings", 200).await;
    assert!(settings.contains("href=\"/app/p/acme/settings/webhooks\""));
    let html = owner.get(LIST, 200).await;
    assert!(html.contains("No endpoints yet.") && html.contains("Add the endpoint"));
    for t in [
        "churn_event.recovered",
        "cancel_flow.saved",
        "churn_risk.alert",
    ] {
        assert!(
            html.contains(&format!("value=\"{t}\"")),
            "a checkbox for {t}"
        );
    }

    let url = format!("{}/alerts", receiver.base);
    let posted = owner
        .post(
            LIST,
            &[
                ("url", &url),
                ("description", "Our CRM"),
                ("event_types", "churn_event.recovered"),
                ("event_types", "cancel_flow.saved"),
                ("format", "standard"),
                ("enabled", "false"),
                ("enabled", "true"),
            ],
            303,
        )
        .await;
    let stored = endpoints(&app, &token).await;
    assert_eq!(stored.len(), 1);
    let e = &stored[0];
    let id = e["id"].as_str().unwrap().to_owned();
    assert_eq!(e["url"], url.as_str());
    assert_eq!(e["description"], "Our CRM");
    assert_eq!(
        e["event_types"],
        json!(["churn_event.recovered", "cancel_flow.saved"])
    );
    assert_eq!(e["enabled"], true);
    assert_eq!(e["format"], "standard");
    // The secret, once: on the endpoint's page the creation redirects to, not on the next view.
    assert_eq!(posted.location, format!("{LIST}/{id}?done=created"));
    let created = owner.follow(&posted).await;
    let secret = created
        .split("id=\"shown-value\">")
        .nth(1)
        .and_then(|rest| rest.split('<').next())
        .unwrap();
    assert!(
        secret.starts_with("whsec_") && secret.len() > 30,
        "{secret}"
    );
    let page = format!("{LIST}/{id}");
    let html = owner.get(&page, 200).await;
    assert!(!html.contains("whsec_") && html.contains("Nothing sent yet."));

    // Edited: every input of the form, as one change.
    let Posted { location, .. } = owner
        .post(
            &page,
            &[
                ("url", &url),
                ("description", "Sales CRM"),
                ("event_types", "churn_event.lost"),
                ("format", "slack"),
                ("enabled", "false"),
            ],
            303,
        )
        .await;
    assert_eq!(location, format!("{page}?done=saved"));
    let e = &endpoints(&app, &token).await[0];
    assert_eq!(e["description"], "Sales CRM");
    assert_eq!(e["event_types"], json!(["churn_event.lost"]));
    assert_eq!(e["format"], "slack");
    assert_eq!(e["enabled"], false);
    let html = owner.get(&location, 200).await;
    assert!(html.contains("The endpoint is saved."));
    assert!(html.contains("value=\"churn_event.lost\" checked"));
    assert!(!html.contains("value=\"churn_event.recovered\" checked"));
    assert!(html.contains("<option value=\"slack\" selected"));
    assert!(html.contains("id=\"enabled\" type=\"checkbox\" name=\"enabled\" value=\"true\">"));
    owner
        .post(
            &page,
            &[
                ("url", &url),
                ("description", "Sales CRM"),
                ("event_types", "churn_event.lost"),
                ("format", "standard"),
                ("enabled", "false"),
                ("enabled", "true"),
            ],
            303,
        )
        .await;

    // A test message, delivered; its log entry redelivered with the same message id.
    let Posted { location, .. } = owner.post(&format!("{page}/test"), &[], 303).await;
    assert_eq!(location, format!("{page}?done=tested"));
    let html = owner.get(&location, 200).await;
    assert!(html.contains("webhook.test") && html.contains(">pending<"));
    assert!(!html.contains(">Redeliver<"), "no redelivery while pending");
    app.run_jobs().await;
    let html = main_of(&owner.get(&page, 200).await);
    assert!(html.contains(">delivered<") && html.contains("last answer HTTP 200"));
    let log = deliveries(&app, &token, &id).await;
    assert_eq!(log.len(), 1);
    let did = log[0]["id"].as_str().unwrap();
    let message = log[0]["message_id"].as_str().unwrap();
    assert!(html.contains(message));
    let redeliver = format!("{page}/deliveries/{did}/redeliver");
    assert!(html.contains(&format!("action=\"{redeliver}\"")));
    let Posted { location, .. } = owner.post(&redeliver, &[], 303).await;
    assert_eq!(location, format!("{page}?done=redelivered"));
    app.run_jobs().await;
    let log = deliveries(&app, &token, &id).await;
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["attempts"].as_array().unwrap().len(), 2);
    assert_eq!(log[0]["message_id"], message);
    let hits = receiver.mock.received_requests().await.unwrap();
    assert_eq!(hits.iter().filter(|r| r.url.path() == "/alerts").count(), 2);
    let html = owner.get(&page, 200).await;
    assert!(html.contains("2 attempts"));
    // The list shows the newest delivery.
    let html = main_of(&owner.get(LIST, 200).await);
    assert!(html.contains(&url) && html.contains("Sales CRM") && html.contains(">delivered<"));

    // Deleted behind a confirmation.
    let html = owner.get(&format!("{page}/delete"), 200).await;
    assert!(html.contains("Delete the endpoint") && html.contains("Keep it"));
    let Posted { location, .. } = owner.post(&format!("{page}/delete"), &[], 303).await;
    assert_eq!(location, format!("{LIST}?done=deleted"));
    assert!(endpoints(&app, &token).await.is_empty());
    owner.get(&page, 404).await;
    let html = owner.get(&location, 200).await;
    assert!(html.contains("The endpoint is deleted"));
}

async fn a_refused_endpoint_keeps_what_was_typed_and_creates_nothing(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (token, owner) = Browser::acme_owner(&app).await;
    let Posted { body, .. } = owner
        .post(
            LIST,
            &[
                ("url", "http://crm.example.com/hooks"),
                ("description", "Typed <b>here</b>"),
                ("format", "standard"),
                ("enabled", "false"),
            ],
            400,
        )
        .await;
    assert!(body.contains("see the messages beside the inputs"));
    assert!(body.contains("id=\"url-error\"") && body.contains("id=\"event_types-error\""));
    assert!(body.contains("value=\"http://crm.example.com/hooks\""));
    assert!(body.contains("value=\"Typed &#60;b&#62;here&#60;/b&#62;\""));
    assert!(endpoints(&app, &token).await.is_empty());

    // An edit refused the same way leaves the endpoint as it was.
    let id = endpoint_by_api(&app, &token, "https://crm.example.com/hooks").await;
    let Posted { body, .. } = owner
        .post(
            &format!("{LIST}/{id}"),
            &[
                ("url", "https://crm.example.com/hooks"),
                ("description", "Changed"),
                ("format", "standard"),
                ("enabled", "true"),
            ],
            400,
        )
        .await;
    assert!(body.contains("id=\"event_types-error\"") && body.contains("value=\"Changed\""));
    let e = &endpoints(&app, &token).await[0];
    assert_eq!(e["description"], "CRM");
    assert_eq!(e["event_types"], json!(["churn_event.created"]));
}

async fn the_delivery_log_is_paginated_and_exported_as_csv(backend: Backend) {
    let app = TestApp::spawn_private(backend).await;
    let token = acme_owner(&app).await;
    // Port 9 answers nothing: every attempt fails, and stays pending until its retries end.
    let id = endpoint_by_api(&app, &token, "https://127.0.0.1:9/hooks").await;
    for _ in 0..23 {
        send_test(&app, &token, &id).await;
    }
    let owner = Browser::sign_in(&app, "owner@acme.io").await;
    let page = format!("{LIST}/{id}");
    let first = main_of(&owner.get(&page, 200).await);
    assert!(first.contains("23 deliveries") && first.contains("Page 1 of 2"));
    assert_eq!(first.matches("<article class=\"card alert\"").count(), 20);
    assert!(first.contains(&format!("href=\"{page}?page=2\" rel=\"next\"")));
    let second = main_of(&owner.get(&format!("{page}?page=2"), 200).await);
    assert_eq!(second.matches("<article class=\"card alert\"").count(), 3);
    assert!(second.contains("Page 2 of 2"));
    owner.get(&format!("{page}?page=0"), 400).await;

    let r = owner.open(&format!("{page}?format=csv")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header_str(&r, "content-type"), "text/csv; charset=utf-8");
    assert!(
        header_str(&r, "content-disposition")
            .contains(&format!("acme-webhook-{id}-deliveries.csv"))
    );
    let csv = r.text().await.unwrap();
    let lines: Vec<&str> = csv.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert_eq!(
        lines[0],
        "id,message_id,event_type,status,reason,attempts,last_status_code,next_attempt_at,created_at"
    );
    assert_eq!(lines.len(), 24, "every delivery, not the page on screen");
    let log = deliveries(&app, &token, &id).await;
    for (line, d) in lines[1..].iter().zip(&log) {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells[0], d["id"]);
        assert_eq!(cells[1], d["message_id"]);
        assert_eq!(cells[2], "webhook.test");
        assert_eq!(cells[3], "pending");
        assert_eq!(cells[5], "0");
        assert_eq!(cells[6], "");
        assert_eq!(cells[7], d["next_attempt_at"]);
    }

    // The endpoints list exports too.
    let csv = owner.get(&format!("{LIST}?format=csv"), 200).await;
    let lines: Vec<&str> = csv.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert_eq!(
        lines[0],
        "id,url,description,event_types,format,enabled,disabled_reason,created_at"
    );
    assert_eq!(lines.len(), 2);
    assert!(lines[1].starts_with(&format!(
        "{id},https://127.0.0.1:9/hooks,CRM,churn_event.created,standard,true,,"
    )));
}

async fn viewers_and_members_read_without_write_controls_and_are_refused(backend: Backend) {
    let app = TestApp::spawn_private(backend).await;
    let token = acme_owner(&app).await;
    join(&app, &token, "viewer@acme.io", "viewer").await;
    join(&app, &token, "member@acme.io", "member").await;
    let (id, did) = endpoint_with_a_test(&app, &token).await;
    app.run_jobs().await;
    let page = format!("{LIST}/{id}");
    let form: &[(&str, &str)] = &[
        ("url", "https://127.0.0.1:9/other"),
        ("description", "Taken over"),
        ("event_types", "churn_event.lost"),
        ("format", "slack"),
        ("enabled", "true"),
    ];
    for who in ["viewer@acme.io", "member@acme.io"] {
        let b = Browser::sign_in(&app, who).await;
        let list = main_of(&b.get(LIST, 200).await);
        assert!(list.contains("https://127.0.0.1:9/hooks"), "{who}");
        assert!(list.contains("Only admins add and change endpoints."));
        assert!(!list.contains("<form"), "{who} sees no form on the list");
        let html = main_of(&b.get(&page, 200).await);
        assert!(html.contains("webhook.test") && html.contains("<dt>URL</dt>"));
        for control in [
            "<form",
            "Send a test message",
            "Redeliver",
            "Delete this endpoint",
        ] {
            assert!(!html.contains(control), "{who} sees no {control:?}");
        }
        b.get(&format!("{page}/delete"), 403).await;
        b.post(LIST, form, 403).await;
        b.post(&page, form, 403).await;
        b.post(&format!("{page}/test"), &[], 403).await;
        b.post(&format!("{page}/deliveries/{did}/redeliver"), &[], 403)
            .await;
        b.post(&format!("{page}/delete"), &[], 403).await;
    }
    let stored = endpoints(&app, &token).await;
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0]["description"], "CRM");
    let log = deliveries(&app, &token, &id).await;
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["attempts"].as_array().unwrap().len(), 1);
}

async fn writes_without_the_csrf_token_are_refused_and_change_nothing(backend: Backend) {
    let app = TestApp::spawn_private(backend).await;
    let token = acme_owner(&app).await;
    let (id, did) = endpoint_with_a_test(&app, &token).await;
    app.run_jobs().await;
    let before = deliveries(&app, &token, &id).await;
    let owner = Browser::sign_in(&app, "owner@acme.io").await;
    let page = format!("{LIST}/{id}");
    let form: &[(&str, &str)] = &[
        ("url", "https://127.0.0.1:9/other"),
        ("description", "Changed"),
        ("event_types", "churn_event.lost"),
        ("format", "slack"),
        ("enabled", "true"),
    ];
    let writes = [
        LIST.to_owned(),
        page.clone(),
        format!("{page}/test"),
        format!("{page}/deliveries/{did}/redeliver"),
        format!("{page}/delete"),
    ];
    for path in &writes {
        for csrf in ["", "not-the-token"] {
            owner.post_with_csrf(path, form, csrf, 403).await;
        }
    }
    let stored = endpoints(&app, &token).await;
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0]["description"], "CRM");
    assert_eq!(stored[0]["format"], "standard");
    let after = deliveries(&app, &token, &id).await;
    assert_eq!(after.len(), 1);
    assert_eq!(after[0]["attempts"], before[0]["attempts"]);
    assert_eq!(after[0]["status"], before[0]["status"]);
}

async fn another_tenants_endpoint_is_not_found(backend: Backend) {
    let app = TestApp::spawn_private(backend).await;
    let token = acme_owner(&app).await;
    let (id, did) = endpoint_with_a_test(&app, &token).await;
    let mallory = Browser::another_tenant(&app, "Evil").await;
    // Acme's endpoint under Mallory's own project, and Acme's pages themselves.
    for base in ["/app/p/evil/settings/webhooks", LIST] {
        let page = format!("{base}/{id}");
        for path in [
            page.clone(),
            format!("{page}/delete"),
            format!("{page}?format=csv"),
        ] {
            mallory.get(&path, 404).await;
        }
        for path in [
            page.clone(),
            format!("{page}/test"),
            format!("{page}/delete"),
            format!("{page}/deliveries/{did}/redeliver"),
        ] {
            mallory
                .post(
                    &path,
                    &[
                        ("url", "https://evil.io/x"),
                        ("event_types", "churn_event.lost"),
                    ],
                    404,
                )
                .await;
        }
    }
    mallory.get(LIST, 404).await;
    let stored = endpoints(&app, &token).await;
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0]["description"], "CRM");
    assert_eq!(deliveries(&app, &token, &id).await.len(), 1);
}
