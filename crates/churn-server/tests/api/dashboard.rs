//! The dashboard (decisions §17) from the outside: the `/` redirect, hashed and cached assets,
//! security headers, cookie sessions (flags, expiry, `ver` revocation), CSRF, roles, tenancy,
//! CSV export, and the pages calling the same services as the API.

use reqwest::Method;
use reqwest::header::{HeaderMap, SET_COOKIE};
use serde_json::json;

use crate::dashboard_client::{Browser, location, session_cookie, set_session_cookie, url as page};
use crate::helpers::{
    Backend, Options, TestApp, acme_owner, advance, event_of, event_with_variants, mark_recovered,
    post_event,
};
use crate::team::join;
use churn_core::both_backends;

both_backends!(
    root_redirects_and_assets_are_hashed_and_cached,
    pages_carry_the_security_headers,
    sign_in_sets_a_strict_cookie_that_the_api_ignores,
    sessions_expire_and_sign_out_everywhere_revokes_them,
    the_cookie_is_secure_behind_an_https_proxy,
    writes_need_the_csrf_token_and_change_nothing_without_it,
    a_viewer_sees_no_write_controls_and_is_refused_every_write,
    another_tenants_event_is_not_found_as_in_the_api,
    csv_export_quotes_cells_and_keeps_formulas_text,
    a_draft_is_edited_and_sent_from_the_event_page,
    an_empty_project_shows_the_checklist_then_the_overview,
    registration_opens_the_new_project,
    a_reset_link_is_asked_for_once_however_often_the_answer_is_reloaded,
    the_customers_own_words_are_shown_and_a_bare_reason_code_is_not,
);

fn header<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .map(|v| v.to_str().unwrap())
        .unwrap_or_default()
}

async fn root_redirects_and_assets_are_hashed_and_cached(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let r = app.client.get(page(&app, "/")).send().await.unwrap();
    assert_eq!(r.status(), 303);
    assert_eq!(location(&r), "/app");
    let r = app.client.get(page(&app, "/app")).send().await.unwrap();
    assert_eq!((r.status().as_u16(), location(&r)), (303, "/app/sign-in"));

    let html = app
        .client
        .get(page(&app, "/app/sign-in"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let css = html
        .split("href=\"/app/assets/dashboard.")
        .nth(1)
        .and_then(|rest| rest.split(".css\"").next())
        .expect("the stylesheet is linked by its hashed name");
    assert_eq!(css.len(), 12);
    assert!(css.chars().all(|c| c.is_ascii_hexdigit()));
    let r = app
        .client
        .get(page(&app, &format!("/app/assets/dashboard.{css}.css")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        header(r.headers(), "cache-control"),
        "public, max-age=31536000, immutable"
    );
    assert_eq!(
        header(r.headers(), "content-type"),
        "text/css; charset=utf-8"
    );
    assert!(r.text().await.unwrap().contains("--accent"));
    for stale in [
        "/app/assets/dashboard.css",
        "/app/assets/dashboard.000000000000.css",
    ] {
        let r = app.client.get(page(&app, stale)).send().await.unwrap();
        assert_eq!(r.status(), 404, "{stale}");
    }
}

async fn pages_carry_the_security_headers(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, browser) = Browser::acme_owner(&app).await;
    for (path, signed) in [
        ("/app/sign-in", false),
        ("/app/register", false),
        ("/app/forgot-password", false),
        ("/app/p/acme", true),
        ("/app/p/acme/events", true),
        ("/app/nowhere", true),
    ] {
        let mut request = app.client.get(page(&app, path));
        if signed {
            request = request.header("cookie", &browser.cookie);
        }
        let r = request.send().await.unwrap();
        let h = r.headers();
        let csp = header(h, "content-security-policy");
        assert!(csp.contains("default-src 'self'"), "{path}: {csp}");
        assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
        assert!(
            csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
            "{path}: {csp}"
        );
        assert_eq!(header(h, "x-frame-options"), "DENY", "{path}");
        assert_eq!(header(h, "x-content-type-options"), "nosniff", "{path}");
        assert_eq!(header(h, "cache-control"), "no-store", "{path}");
        assert!(header(h, "vary").contains("HX-Request"), "{path}");
        assert!(!header(h, "x-request-id").is_empty(), "{path}");
        assert!(header(h, "content-type").starts_with("text/html"), "{path}");
        let html = r.text().await.unwrap();
        // No inline script or handler: every script is a file of ours.
        assert!(
            !html.contains("<script>") && !html.contains(" onclick="),
            "{path}"
        );
    }
}

async fn sign_in_sets_a_strict_cookie_that_the_api_ignores(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    acme_owner(&app).await;
    let wrong = app
        .post_form(
            page(&app, "/app/sign-in"),
            &[("email", "owner@acme.io"), ("password", "wrong horse")],
        )
        .await;
    assert_eq!(wrong.status(), 401);
    assert!(wrong.headers().get(SET_COOKIE).is_none());
    assert!(
        wrong
            .text()
            .await
            .unwrap()
            .contains("Invalid email or password.")
    );

    let r = app
        .post_form(
            page(&app, "/app/sign-in"),
            &[("email", "OWNER@acme.io"), ("password", "correct horse")],
        )
        .await;
    assert_eq!((r.status().as_u16(), location(&r)), (303, "/app"));
    let (cookie, set) = (session_cookie(&r), set_session_cookie(&r));
    for flag in ["HttpOnly", "SameSite=Lax", "Path=/app", "Max-Age=604800"] {
        assert!(set.contains(flag), "{set}");
    }
    assert!(!set.contains("Secure"), "plain HTTP on loopback: {set}");
    let browser = Browser::with_cookie(&app, cookie.clone()).await;
    let r = app
        .client
        .get(page(&app, "/app"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(location(&r), "/app/p/acme");
    let html = browser.get("/app/p/acme", 200).await;
    assert!(html.contains("owner@acme.io"));
    // The cookie's token is a session token, but the API reads only Authorization.
    let token = cookie.trim_start_matches("churn_session=");
    app.me(token).await;
    app.expect(
        app.req(Method::GET, "/auth/me").header("cookie", &cookie),
        401,
    )
    .await;
}

async fn sessions_expire_and_sign_out_everywhere_revokes_them(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (api_token, first) = Browser::acme_owner(&app).await;
    let second = Browser::sign_in(&app, "owner@acme.io").await;

    // A session lasts 7 days of service time, as the API's.
    advance(&app, 7 * 86_400 - 60).await;
    first.get("/app/p/acme", 200).await;
    advance(&app, 120).await;
    let r = first.open("/app/p/acme").await;
    assert_eq!((r.status().as_u16(), location(&r)), (303, "/app/sign-in"));

    // Signing out everywhere bumps `ver`: every other cookie and API token stops working.
    let third = Browser::sign_in(&app, "owner@acme.io").await;
    let _ = second;
    let r = third
        .send_form("/app/sign-out-everywhere", &[], &third.csrf)
        .await;
    assert_eq!(
        (r.status().as_u16(), location(&r)),
        (303, "/app/sign-in?signed_out=everywhere")
    );
    let cleared = set_session_cookie(&r);
    assert!(cleared.contains("Max-Age=0"), "{cleared}");
    let r = third.open("/app/p/acme").await;
    assert_eq!((r.status().as_u16(), location(&r)), (303, "/app/sign-in"));
    app.call(&api_token, Method::GET, "/auth/me", 401).await;
}

/// A production server (not in dev mode) behind a proxy on loopback, which it trusts to say
/// whether the browser came over HTTPS (`X-Forwarded-Proto`).
pub(crate) async fn behind_a_proxy(backend: Backend) -> TestApp {
    TestApp::spawn_with(
        backend,
        Options::default()
            .with("dev_mode", false)
            .with("trusted_proxies", "127.0.0.1"),
    )
    .await
}

async fn the_cookie_is_secure_behind_an_https_proxy(backend: Backend) {
    let app = behind_a_proxy(backend).await;
    acme_owner(&app).await;
    for (proto, secure) in [("https", true), ("http", false)] {
        let r = app
            .client
            .post(page(&app, "/app/sign-in"))
            .header("x-forwarded-proto", proto)
            .form(&[("email", "owner@acme.io"), ("password", "correct horse")])
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 303);
        let set = set_session_cookie(&r);
        assert_eq!(set.ends_with("; Secure"), secure, "{proto}: {set}");
    }
}

async fn writes_need_the_csrf_token_and_change_nothing_without_it(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let (id, _) = event_with_variants(&app, &token, "dana@example.com").await;
    let browser = Browser::sign_in(&app, "owner@acme.io").await;
    let path = format!("/app/p/acme/events/{id}/recovered");
    // Another session's token (another user: two sign-ins of one user in the same second
    // are the same token).
    app.create_project(&app.register("eve2@acme.io").await.token, "Acme")
        .await;
    let other = Browser::sign_in(&app, "eve2@acme.io").await;
    for csrf in ["", "00", other.csrf.as_str(), &browser.csrf[..32]] {
        browser.post_with_csrf(&path, &[], csrf, 403).await;
    }
    assert_eq!(
        event_of(&app, &token, &id).await["status"],
        "variants_generated"
    );
    // Sign-out is a write too.
    browser.post_with_csrf("/app/sign-out", &[], "", 403).await;
    browser.get("/app/p/acme", 200).await;

    // A scripted request sends the token in a header.
    let r = app
        .client
        .post(page(&app, &path))
        .header("cookie", &browser.cookie)
        .header("x-csrf-token", &browser.csrf)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    assert_eq!(event_of(&app, &token, &id).await["status"], "recovered");
}

async fn a_viewer_sees_no_write_controls_and_is_refused_every_write(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let (id, vid) = event_with_variants(&app, &token, "dana@example.com").await;
    join(&app, &token, "viewer@acme.io", "viewer").await;
    let viewer = Browser::sign_in(&app, "viewer@acme.io").await;
    let html = viewer.get(&format!("/app/p/acme/events/{id}"), 200).await;
    assert!(html.contains("viewer"), "the role badge");
    for control in [
        "Mark recovered",
        "Change the reason",
        "Save the draft",
        "Send to",
        "Draft the nine",
    ] {
        assert!(!html.contains(control), "a viewer sees no {control:?}");
    }
    let base = format!("/app/p/acme/events/{id}");
    for (path, form) in [
        (format!("{base}/recovered"), vec![]),
        (
            format!("{base}/reason"),
            vec![("cancel_reason", "too_expensive")],
        ),
        (format!("{base}/generate"), vec![]),
        (
            format!("{base}/variants/{vid}"),
            vec![("subject", "Hi"), ("body", "Hello")],
        ),
        (format!("{base}/variants/{vid}/send"), vec![]),
    ] {
        viewer.post(&path, &form, 403).await;
    }
    let event = event_of(&app, &token, &id).await;
    assert_eq!(event["status"], "variants_generated");
    assert!(
        event["variants"]
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v["status"] == "draft" && v["subject"] != "Hi")
    );
    assert!(app.outbox().iter().all(|m| !m.contains("dana@example.com")));
}

async fn another_tenants_event_is_not_found_as_in_the_api(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let (id, vid) = event_with_variants(&app, &token, "dana@example.com").await;
    let other = app.register("mallory@evil.io").await;
    app.create_project(&other.token, "Acme").await;
    let mallory = Browser::sign_in(&app, "mallory@evil.io").await;
    // Mallory's own "acme" is another project: acme's event is not in it.
    app.call(
        &other.token,
        Method::GET,
        &format!("/projects/acme/churn-events/{id}"),
        404,
    )
    .await;
    mallory.get(&format!("/app/p/acme/events/{id}"), 404).await;
    mallory
        .get(
            &format!("/app/p/acme/events/{id}/variants/{vid}/preview"),
            404,
        )
        .await;
    mallory
        .post(&format!("/app/p/acme/events/{id}/recovered"), &[], 404)
        .await;
    // Someone else's project is not found at all.
    let project = event_of(&app, &token, &id).await["project_id"]
        .as_str()
        .unwrap()
        .to_owned();
    mallory.get(&format!("/app/p/{project}"), 404).await;
    assert_eq!(
        event_of(&app, &token, &id).await["status"],
        "variants_generated"
    );
}

async fn csv_export_quotes_cells_and_keeps_formulas_text(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    for (email, name, reason) in [
        (
            "dana@example.com",
            "Doe, \"Jr\"",
            "=HYPERLINK(\"http://evil\")",
        ),
        ("eve@example.com", "@eve", "+1 too pricey\nreally"),
    ] {
        post_event(
            &app,
            &token,
            &json!({"customer_email": email, "customer_name": name, "event_type": "cancellation",
                    "cancel_reason": reason, "mrr": 4900, "currency": "usd", "plan_name": "-pro"}),
            201,
        )
        .await;
    }
    let browser = Browser::sign_in(&app, "owner@acme.io").await;
    let r = browser.open("/app/p/acme/events?format=csv&q=dana").await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        header(r.headers(), "content-type"),
        "text/csv; charset=utf-8"
    );
    assert!(header(r.headers(), "content-disposition").contains("acme-churn-events.csv"));
    let csv = r.text().await.unwrap();
    let mut lines = csv.split("\r\n");
    assert_eq!(
        lines.next().unwrap(),
        "id,created_at,customer_email,customer_name,event_type,status,reason_code,cancel_reason,mrr_cents,currency,plan_name,recovered_at,lost_at"
    );
    let row = lines.next().unwrap();
    assert!(
        row.contains(",dana@example.com,\"Doe, \"\"Jr\"\"\",cancellation,new,"),
        "{row}"
    );
    assert!(
        row.contains(",\"'=HYPERLINK(\"\"http://evil\"\")\",4900,usd,'-pro,,"),
        "{row}"
    );
    assert!(
        !csv.contains("eve@example.com"),
        "the search selects one customer"
    );
    assert_eq!(lines.next(), Some(""), "one row and the final line end");

    let all = browser.get("/app/p/acme/events?format=csv", 200).await;
    assert!(
        all.contains(",'@eve,") && all.contains(",\"'+1 too pricey\nreally\","),
        "{all}"
    );
    assert_eq!(
        all.matches("\r\n").count(),
        3,
        "a newline inside a quoted cell is not a row"
    );
    let none = browser
        .get("/app/p/acme/events?format=csv&status=recovered", 200)
        .await;
    assert_eq!(none.matches("\r\n").count(), 1);
    // The same filters as the API: a bad status is a 400 page.
    browser.get("/app/p/acme/events?status=bogus", 400).await;
}

async fn a_draft_is_edited_and_sent_from_the_event_page(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let (id, vid) = event_with_variants(&app, &token, "dana@example.com").await;
    let browser = Browser::sign_in(&app, "owner@acme.io").await;
    let base = format!("/app/p/acme/events/{id}");
    let html = browser.get(&base, 200).await;
    assert_eq!(html.matches("<article class=\"card variant\"").count(), 9);
    assert!(html.contains("recommended"));
    // The project gave no testimonials: the social-proof email says so (§15).
    assert!(
        html.contains("class=\"warning\"") && html.contains("No testimonials"),
        "{html}"
    );
    let preview = browser
        .open(&format!("{base}/variants/{vid}/preview"))
        .await;
    assert_eq!(preview.status(), 200);
    let csp = header(preview.headers(), "content-security-policy").to_owned();
    assert!(
        csp.contains("sandbox") && csp.contains("frame-ancestors 'self'"),
        "{csp}"
    );

    assert_eq!(
        browser
            .post(
                &format!("{base}/variants/{vid}"),
                &[
                    ("subject", "A note from the dashboard"),
                    ("body", "<p>Come back, Dana.</p>"),
                ],
                303
            )
            .await
            .location,
        format!("{base}?done=edited").as_str()
    );
    let html = browser.get(&format!("{base}?done=edited"), 200).await;
    assert!(html.contains("The draft is saved.") && html.contains("A note from the dashboard"));
    browser
        .post(&format!("{base}/variants/{vid}/send"), &[], 303)
        .await;
    let event = event_of(&app, &token, &id).await;
    assert_eq!(event["status"], "email_sent");
    let sent = event["variants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["id"] == vid)
        .unwrap()
        .clone();
    assert_eq!(sent["status"], "sent");
    assert!(
        app.outbox()
            .iter()
            .any(|m| m.contains("A note from the dashboard"))
    );
    // Sent twice: the service's 409, as a page.
    browser
        .post(&format!("{base}/variants/{vid}/send"), &[], 409)
        .await;
    let html = browser.get(&base, 200).await;
    assert!(
        html.contains("Sent “A note from the dashboard”"),
        "the timeline shows the send"
    );
}

async fn an_empty_project_shows_the_checklist_then_the_overview(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (token, browser) = Browser::acme_owner(&app).await;
    let html = browser.get("/app/p/acme", 200).await;
    assert!(html.contains("Set up Acme"));
    let public_key = app
        .data_str(&token, Method::GET, "/projects/acme", "public_key")
        .await;
    assert!(
        html.contains(&public_key),
        "the snippets hold the project's public key"
    );
    assert!(html.contains("X-API-Key") && html.contains("customerHash"));
    assert_eq!(html.matches("(to do)").count(), 5);

    let (id, _) = event_with_variants(&app, &token, "dana@example.com").await;
    mark_recovered(&app, &token, &id).await;
    let html = browser.get("/app/p/acme?period=7", 200).await;
    for part in [
        "Recovered MRR",
        "Recovery rate",
        "Open churn events",
        "MRR at risk",
        "Dunning recovery rate",
    ] {
        assert!(html.contains(part), "{part}");
    }
    assert!(html.contains("<svg class=\"chart\""));
    assert!(html.contains("aria-current=\"true\">7 days"));
    assert!(html.contains(">100%<"), "one recovered, none lost: {html}");
    browser.get("/app/p/acme?period=12", 400).await;
}

async fn registration_opens_the_new_project(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let ada = [
        ("name", "Ada"),
        ("email", "ada@example.com"),
        ("password", "correct horse"),
    ];
    let r = app
        .post_form(
            page(&app, "/app/register"),
            &[&ada[..], &[("project_name", "Ada's App")]].concat(),
        )
        .await;
    assert_eq!(
        (r.status().as_u16(), location(&r)),
        (303, "/app/p/ada-s-app")
    );
    let browser = Browser::with_cookie(&app, session_cookie(&r)).await;
    let html = browser.get("/app/p/ada-s-app", 200).await;
    assert!(
        html.contains("Set up Ada&#39;s App") || html.contains("Set up Ada&#x27;s App"),
        "{html}"
    );
    // A second registration of the address is the service's 409, shown on the form.
    let r = app.post_form(page(&app, "/app/register"), &ada).await;
    assert_eq!(r.status(), 409);
}

async fn a_reset_link_is_asked_for_once_however_often_the_answer_is_reloaded(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    acme_owner(&app).await;
    let resets = |app: &TestApp| {
        app.outbox()
            .into_iter()
            .filter(|m| m.contains("Subject: Reset your churn password"))
            .count()
    };
    for email in ["owner@acme.io", "nobody@acme.io"] {
        let r = app
            .post_form(page(&app, "/app/forgot-password"), &[("email", email)])
            .await;
        // The same answer whether or not the address has an account.
        assert_eq!(
            (r.status().as_u16(), location(&r)),
            (303, "/app/forgot-password?done=sent"),
            "{email}"
        );
    }
    app.run_jobs().await;
    assert_eq!(resets(&app), 1);
    for _ in 0..2 {
        let r = app
            .client
            .get(page(&app, "/app/forgot-password?done=sent"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let html = r.text().await.unwrap();
        assert!(html.contains("is on its way"), "{html}");
        assert!(!html.contains("<form"), "{html}");
    }
    app.run_jobs().await;
    assert_eq!(resets(&app), 1, "a reload sends nothing");
}

async fn the_customers_own_words_are_shown_and_a_bare_reason_code_is_not(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (token, founder) = Browser::acme_owner(&app).await;
    for (cancel_reason, shown) in [("The price went up again", true), ("too_expensive", false)] {
        let event = post_event(
            &app,
            &token,
            &json!({"customer_email": "dana@example.com", "event_type": "cancellation",
                    "cancel_reason": cancel_reason}),
            201,
        )
        .await;
        let id = event["data"]["id"].as_str().unwrap();
        let html = founder.get(&format!("/app/p/acme/events/{id}"), 200).await;
        assert_eq!(html.contains("In their words"), shown, "{cancel_reason}");
        let said = format!("<dt>In their words</dt><dd>{cancel_reason}</dd>");
        assert_eq!(html.contains(&said), shown, "{cancel_reason}");
    }
}
