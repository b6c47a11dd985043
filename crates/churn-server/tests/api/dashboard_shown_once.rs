//! Values the dashboard shows once (decisions §17, issue 24): a write that makes a secret or a
//! link answers 303 to the page that shows it, the value carried in a sealed cookie bound to
//! the session and the page. The first view shows it and clears the cookie; a reload shows the
//! page without it and makes or rotates nothing; a new POST is a new deliberate write. The
//! cookie has the flags a secret's cookie needs and no trace of the value, and opens nothing
//! for another user, another session, another page or project, or once expired.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use reqwest::Method;

use crate::dashboard::behind_a_proxy;
use crate::dashboard_client::{Browser, Posted, cookie_pair, set_cookies, url};
use crate::dashboard_settings::project_json;
use crate::dashboard_webhooks::endpoints;
use crate::helpers::{Backend, TestApp, post_endpoint, set_clock};
use crate::team::join;
use churn_core::both_backends;

both_backends!(
    an_endpoint_is_created_once_per_post_and_its_secret_shown_once,
    a_key_rotation_happens_once_per_post_and_shows_the_new_key_once,
    an_invitation_link_is_shown_once,
    a_shown_value_opens_for_no_other_user_session_page_or_project,
    the_cookie_is_secure_behind_an_https_proxy,
);

const LIST: &str = "/app/p/acme/settings/webhooks";
const SETTINGS: &str = "/app/p/acme/settings";
const TEAM: &str = "/app/p/acme/team";
/// The service clock while these tests run, so that a value's two minutes can pass.
const NOW: &str = "2001-03-05T09:00:00Z";

/// The endpoint form as the list page posts it.
const ENDPOINT: &[(&str, &str)] = &[
    ("url", "https://crm.example.com/hooks"),
    ("description", "CRM"),
    ("event_types", "churn_event.recovered"),
    ("format", "standard"),
    ("enabled", "false"),
    ("enabled", "true"),
];

/// The value shown once on a page (`id` of its `<code>`), if it is there.
fn shown(html: &str, id: &str) -> Option<String> {
    html.split(&format!("<code id=\"{id}\">"))
        .nth(1)
        .and_then(|rest| rest.split('<').next())
        .map(str::to_owned)
}

/// The `churn_shown` cookie a write set, as `name=value`, after checking its flags: for the
/// page at `path` alone, two minutes, out of scripts' reach, never sent by another site, and
/// (on this plain-HTTP loopback) not `Secure`, as the session cookie is not.
fn shown_cookie(posted: &Posted, path: &str) -> String {
    let set = posted
        .cookies
        .iter()
        .find(|c| c.starts_with("churn_shown="))
        .expect("the write sets churn_shown");
    let flags: Vec<&str> = set.split("; ").skip(1).collect();
    assert_eq!(
        flags,
        [
            format!("Path={path}").as_str(),
            "Max-Age=120",
            "HttpOnly",
            "SameSite=Strict"
        ],
        "{set}"
    );
    cookie_pair(set).to_owned()
}

/// The cookie holds nothing of the value: neither as text nor once its base64 is decoded.
fn holds_no_trace_of(cookie: &str, value: &str) {
    let sealed = cookie.trim_start_matches("churn_shown=");
    assert!(!cookie.contains(value) && !cookie.contains("whsec_"));
    let bytes = STANDARD.decode(sealed).expect("the cookie is base64");
    assert!(!bytes.windows(value.len()).any(|w| w == value.as_bytes()));
}

/// The answer clears the page's cookie.
fn clears(cookies: &[String], path: &str) {
    assert!(
        cookies.iter().any(|c| c.starts_with("churn_shown=;")
            && c.contains(&format!("Path={path};"))
            && c.contains("Max-Age=0")),
        "{cookies:?}"
    );
}

async fn an_endpoint_is_created_once_per_post_and_its_secret_shown_once(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (token, owner) = Browser::acme_owner(&app).await;
    let posted = owner.post(LIST, ENDPOINT, 303).await;
    let stored = endpoints(&app, &token).await;
    assert_eq!(stored.len(), 1);
    let id = stored[0]["id"].as_str().unwrap();
    let page = format!("{LIST}/{id}");
    assert_eq!(posted.location, format!("{page}?done=created"));
    assert!(!posted.location.contains("whsec_"), "never in the URL");
    let cookie = shown_cookie(&posted, &page);

    // The first view shows the secret, once, and clears the cookie.
    let (html, cookies) = owner.get_with(&posted.location, &cookie, 200).await;
    let secret = shown(&html, "shown-value").expect("the secret on the first view");
    assert!(
        secret.starts_with("whsec_") && secret.len() > 30,
        "{secret}"
    );
    assert_eq!(html.matches(&secret).count(), 1);
    holds_no_trace_of(&cookie, &secret);
    clears(&cookies, &page);

    // A reload (the cookie gone, as the browser dropped it) creates nothing and shows no secret.
    for _ in 0..2 {
        let html = owner.get(&posted.location, 200).await;
        assert!(!html.contains("whsec_") && !html.contains("shown-value"));
        assert!(html.contains("Its signing secret was shown once"));
    }
    assert_eq!(endpoints(&app, &token).await.len(), 1);

    // The same form posted again is a new, deliberate endpoint with a secret of its own.
    let again = owner.post(LIST, ENDPOINT, 303).await;
    let stored = endpoints(&app, &token).await;
    assert_eq!(stored.len(), 2);
    let other = stored.iter().find(|e| e["id"] != id).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(again.location, format!("{LIST}/{other}?done=created"));
    let html = owner.follow(&again).await;
    let second = shown(&html, "shown-value").unwrap();
    assert_ne!(second, secret);
}

async fn a_key_rotation_happens_once_per_post_and_shows_the_new_key_once(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (token, owner) = Browser::acme_owner(&app).await;
    let before = project_json(&app, &token).await;
    let posted = owner
        .post(&format!("{SETTINGS}/keys/rotate"), &[], 303)
        .await;
    assert_eq!(posted.location, format!("{SETTINGS}?done=keys"));
    let rotated = project_json(&app, &token).await;
    assert_ne!(rotated["secret_key_hint"], before["secret_key_hint"]);
    let cookie = shown_cookie(&posted, SETTINGS);

    let (html, cookies) = owner.get_with(&posted.location, &cookie, 200).await;
    let secret = shown(&html, "shown-value").expect("the new key on the first view");
    assert!(secret.ends_with(rotated["secret_key_hint"].as_str().unwrap()));
    assert_eq!(html.matches(&secret).count(), 1);
    holds_no_trace_of(&cookie, &secret);
    clears(&cookies, SETTINGS);
    // It is the key that works now.
    app.call_with_key(&secret, Method::GET, "/projects/acme/churn-events", 200)
        .await;

    // A reload rotates nothing and shows no key.
    let html = owner.get(&posted.location, 200).await;
    assert!(!html.contains(&secret) && !html.contains("shown-value"));
    assert!(html.contains("The new secret key was shown once"));
    assert_eq!(
        project_json(&app, &token).await["secret_key_hint"],
        rotated["secret_key_hint"]
    );
    app.call_with_key(&secret, Method::GET, "/projects/acme/churn-events", 200)
        .await;

    // Another POST is another rotation, whose key is shown in turn.
    let again = owner
        .post(&format!("{SETTINGS}/keys/rotate"), &[], 303)
        .await;
    let next = shown(&owner.follow(&again).await, "shown-value").unwrap();
    assert_ne!(next, secret);
    assert!(
        next.ends_with(
            project_json(&app, &token).await["secret_key_hint"]
                .as_str()
                .unwrap()
        )
    );
}

async fn an_invitation_link_is_shown_once(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (token, owner) = Browser::acme_owner(&app).await;
    let posted = owner
        .post(
            &format!("{TEAM}/invitations"),
            &[("email", "new@acme.io"), ("role", "viewer")],
            303,
        )
        .await;
    assert_eq!(posted.location, format!("{TEAM}?done=invited"));
    let cookie = shown_cookie(&posted, TEAM);
    let (html, cookies) = owner.get_with(&posted.location, &cookie, 200).await;
    let link = shown(&html, "invitation-link").expect("the link on the first view");
    assert!(link.contains("/invitations/") && html.contains("Invitation link for new@acme.io"));
    holds_no_trace_of(&cookie, &link);
    clears(&cookies, TEAM);

    let html = owner.get(&posted.location, 200).await;
    assert!(!html.contains(&link) && !html.contains("invitation-link"));
    assert!(html.contains("Its link was shown once"));
    let pending = app
        .call(&token, Method::GET, "/projects/acme/invitations", 200)
        .await;
    assert_eq!(pending["data"].as_array().unwrap().len(), 1);
}

async fn a_shown_value_opens_for_no_other_user_session_page_or_project(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    join(&app, &token, "admin@acme.io", "admin").await;
    app.create_project(&token, "Beta").await;
    set_clock(&app, NOW).await;
    let owner = Browser::sign_in(&app, "owner@acme.io").await;
    let posted = owner.post(LIST, ENDPOINT, 303).await;
    let page = posted.location.split('?').next().unwrap().to_owned();
    let cookie = shown_cookie(&posted, &page);
    let rotated = owner
        .post(&format!("{SETTINGS}/keys/rotate"), &[], 303)
        .await;
    let settings_cookie = shown_cookie(&rotated, SETTINGS);
    // The card of a value shown once is the only place either page shows one.
    let nothing = |html: &str| !html.contains("shown-value");

    // Another user of the project, on the very page.
    let admin = Browser::sign_in(&app, "admin@acme.io").await;
    let (html, _) = admin.get_with(&posted.location, &cookie, 200).await;
    assert!(nothing(&html));
    let (html, _) = admin.get_with(SETTINGS, &settings_cookie, 200).await;
    assert!(nothing(&html));
    // Another page: another endpoint's, and the settings of the owner's other project.
    let other = post_endpoint(&app, &token, &serde_json::json!({"url": "https://crm.example.com/b", "event_types": ["churn_event.lost"]}), 201)
        .await["data"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (html, _) = owner
        .get_with(&format!("{LIST}/{other}"), &cookie, 200)
        .await;
    assert!(nothing(&html));
    let (html, _) = owner
        .get_with("/app/p/beta/settings", &settings_cookie, 200)
        .await;
    assert!(nothing(&html));
    // Another session of the same user (signed in a second later: another token).
    set_clock(&app, "2001-03-05T09:00:30Z").await;
    let again = Browser::sign_in(&app, "owner@acme.io").await;
    assert_ne!(again.cookie, owner.cookie);
    let (html, _) = again.get_with(&posted.location, &cookie, 200).await;
    assert!(nothing(&html));
    // Past its two minutes, not even the session it was made for.
    set_clock(&app, "2001-03-05T09:02:01Z").await;
    let (html, _) = owner.get_with(&posted.location, &cookie, 200).await;
    assert!(nothing(&html));
    // Within them, it does: the cookie was fine, only the one presenting it was not.
    set_clock(&app, "2001-03-05T09:01:59Z").await;
    let (html, _) = owner.get_with(&posted.location, &cookie, 200).await;
    assert!(shown(&html, "shown-value").is_some_and(|s| s.starts_with("whsec_")));
}

async fn the_cookie_is_secure_behind_an_https_proxy(backend: Backend) {
    let app = behind_a_proxy(backend).await;
    let (_, owner) = Browser::acme_owner(&app).await;
    let r = app
        .client
        .post(url(&app, &format!("{SETTINGS}/keys/rotate")))
        .header("cookie", &owner.cookie)
        .header("x-forwarded-proto", "https")
        .form(&[("csrf_token", owner.csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    let set = set_cookies(&r)
        .into_iter()
        .find(|c| c.starts_with("churn_shown="))
        .expect("the rotation sets churn_shown");
    assert!(
        set.ends_with("; HttpOnly; SameSite=Strict; Secure"),
        "{set}"
    );
}
