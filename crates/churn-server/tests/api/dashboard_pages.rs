//! Insta snapshots for the dashboard's pages, as a founder reads them: every page family with
//! data in it (and the checklist of an empty project), the sign-in pages and the pages behind
//! emailed links. One snapshot serves both backends: the service clock is set to a fixed
//! time before anything is made, and what stays random (ids, tokens, keys, hashed asset
//! names, ports) is replaced by placeholders (`dashboard_client::snapshot_filters`).

use crate::dashboard_client::{Browser, main_of, snapshot_filters, url};
use crate::dashboard_customers::seed;
use crate::helpers::{Backend, event_with_variants, set_clock};
use crate::team::invite;
use crate::webhooks::setup;
use churn_core::both_backends;

both_backends!(every_page_reads_as_a_founder_expects);

/// A Monday morning long ago, so that charts and relative times do not move with the
/// calendar, and the few times written before the clock is set (the owner's) stand apart.
const NOW: &str = "2001-03-05T09:00:00Z";

async fn every_page_reads_as_a_founder_expects(backend: Backend) {
    let s = setup(backend).await;
    let app = &s.app;
    set_clock(app, NOW).await;
    let (failure, _) = seed(&s).await;
    let (event, _) = event_with_variants(app, &s.token, "dana@example.com").await;
    let invitation = invite(app, &s.token, "nell@example.com", "viewer").await;
    let founder = Browser::sign_in(app, "owner@acme.io").await;
    let newcomer = app.register("new@example.com").await;
    app.create_project(&newcomer.token, "Fresh").await;
    let newcomer = Browser::sign_in(app, "new@example.com").await;

    let mut pages = Vec::new();
    for (name, path) in [
        ("sign_in", "/app/sign-in"),
        ("register", "/app/register"),
        ("forgot_password", "/app/forgot-password"),
        ("reset_password", "/reset-password?token=from-the-email"),
        ("verify_email", "/verify-email?token=from-the-email"),
    ] {
        let r = app.client.get(url(app, path)).send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
        pages.push((name, r.text().await.unwrap()));
    }
    let r = app
        .client
        .get(invitation["accept_url"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    pages.push(("invitation", r.text().await.unwrap()));
    pages.push(("account", founder.get("/app/account", 200).await));
    // The frame once, whole; the other pages inside a project by their content.
    pages.push(("overview", founder.get("/app/p/acme", 200).await));
    let checklist = newcomer.get("/app/p/fresh", 200).await;
    pages.push(("checklist", main_of(&checklist)));
    for (name, path) in [
        ("events", "/app/p/acme/events".to_owned()),
        ("event", format!("/app/p/acme/events/{event}")),
        (
            "customer",
            "/app/p/acme/customers/jenny.rosen@example.com".to_owned(),
        ),
        ("risk", "/app/p/acme/risk".to_owned()),
        ("payments", "/app/p/acme/payments".to_owned()),
        ("payment", format!("/app/p/acme/payments/{failure}")),
        ("settings", "/app/p/acme/settings".to_owned()),
        ("team", "/app/p/acme/team".to_owned()),
    ] {
        pages.push((name, main_of(&founder.get(&path, 200).await)));
    }

    snapshot_filters().bind(|| {
        for (name, html) in pages {
            insta::assert_snapshot!(format!("page_{name}"), html);
        }
    });
}
