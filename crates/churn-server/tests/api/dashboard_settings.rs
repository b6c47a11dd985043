//! The dashboard's Settings, Team and Account pages and the emailed pages that end in the
//! dashboard (decisions §17): each page with real content, every write through the service
//! its API route calls (allowed for the role the API allows, 403 otherwise, 403 without the
//! CSRF token, 404 on another tenant's project), the secret key shown once, invitations
//! accepted into the project, and a password reset that signs in.

use reqwest::Method;
use serde_json::{Value, json};

use crate::cancel_flow::identity_secret;
use crate::dashboard_client::{Browser, Posted, location, session_cookie, url};
use crate::helpers::{Backend, TestApp};
use crate::team::{invite, join};
use churn_core::both_backends;

both_backends!(
    settings_team_and_account_pages_show_their_content,
    project_settings_are_saved_by_admins_and_refused_to_others,
    the_secret_key_is_shown_once_and_the_public_key_stays,
    providers_connect_and_the_sender_domain_shows_its_record,
    a_provider_connects_to_a_test_server_from_its_advanced_input,
    secrets_and_keys_are_for_admins_and_the_owner,
    another_tenants_settings_and_team_are_not_found,
    team_invitations_roles_and_leaving_from_the_page,
    an_invitation_accepted_from_its_page_lands_in_the_project,
    the_password_reset_page_signs_in,
    the_account_page_changes_the_password,
    the_account_page_changes_the_name,
);

pub(crate) async fn project_json(app: &TestApp, token: &str) -> Value {
    app.call(token, Method::GET, "/projects/acme", 200).await["data"].clone()
}

const PROJECT_FORM: &[(&str, &str)] = &[
    ("name", "Acme Inc"),
    ("support_email", "help@acme.io"),
    ("founder_name", "Ada"),
    ("product_url", "https://acme.io"),
    ("reactivation_url", "https://acme.io/billing"),
    ("update_payment_url", "https://acme.io/card"),
    ("coupon_code", "COMEBACK20"),
    ("discount_percent", "20"),
    ("discount_months", "3"),
    ("recovery_window_days", "30"),
    ("language", "en"),
    (
        "testimonials",
        "It saved our quarter | Priya, Head of Ops at Lumen\n",
    ),
    ("features", "Exports\nTeam seats\n"),
];

async fn settings_team_and_account_pages_show_their_content(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (token, owner) = Browser::acme_owner(&app).await;
    let project = project_json(&app, &token).await;
    let public = project["public_key"].as_str().unwrap();

    let html = owner.get("/app/p/acme/settings", 200).await;
    for text in [
        "<h1>Settings</h1>",
        "aria-current=\"page\">Settings",
        public,
        "Identity secret",
        "idsec_",
        "Webhook secret",
        &format!("/api/v1/webhooks/stripe/{public}"),
        "invoice.payment_failed",
        "customer.subscription.deleted",
        "subscription.halted",
        "Sender domain",
        "data-copy=\"public-key\"",
        "/app/assets/copy.",
    ] {
        assert!(html.contains(text), "settings shows {text:?}");
    }
    assert!(!html.contains("style=\""), "no inline style");
    assert!(!html.contains("<script>"), "no inline script");

    let html = owner.get("/app/p/acme/team", 200).await;
    assert!(html.contains("owner@acme.io") && html.contains("Invite someone"));
    assert!(html.contains("aria-current=\"page\">Team"));
    let html = owner.get("/app/account", 200).await;
    assert!(html.contains("owner@acme.io") && html.contains("Change the password"));
    let html = owner.get("/app/p/acme/settings/suppressions", 200).await;
    assert!(html.contains("No suppressed addresses"));

    let csv = owner
        .get("/app/p/acme/settings/suppressions?format=csv", 200)
        .await;
    assert_eq!(csv, "email,reason,created_at\r\n");
}

async fn project_settings_are_saved_by_admins_and_refused_to_others(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    join(&app, &token, "viewer@acme.io", "viewer").await;
    join(&app, &token, "member@acme.io", "member").await;
    let owner = Browser::sign_in(&app, "owner@acme.io").await;
    for who in ["viewer@acme.io", "member@acme.io"] {
        let b = Browser::sign_in(&app, who).await;
        let html = b.get("/app/p/acme/settings", 200).await;
        assert!(
            !html.contains("Save the project settings") && !html.contains("Connect Stripe"),
            "{who} sees no write controls"
        );
        b.post("/app/p/acme/settings/project", PROJECT_FORM, 403)
            .await;
    }
    // Without the CSRF token nothing changes.
    owner
        .post_with_csrf("/app/p/acme/settings/project", PROJECT_FORM, "forged", 403)
        .await;
    assert_eq!(project_json(&app, &token).await["name"], "Acme");

    assert_eq!(
        owner
            .post("/app/p/acme/settings/project", PROJECT_FORM, 303)
            .await
            .location,
        "/app/p/acme/settings?done=project"
    );
    let project = project_json(&app, &token).await;
    assert_eq!(project["name"], "Acme Inc");
    assert_eq!(project["support_email"], "help@acme.io");
    let settings = &project["settings"];
    assert_eq!(settings["coupon_code"], "COMEBACK20");
    assert_eq!(settings["founder_name"], "Ada");
    assert_eq!(settings["reactivation_url"], "https://acme.io/billing");
    assert_eq!(settings["update_payment_url"], "https://acme.io/card");
    assert_eq!(settings["discount_percent"], 20);
    assert_eq!(
        settings["testimonials"],
        json!([{"quote": "It saved our quarter", "author": "Priya, Head of Ops at Lumen"}])
    );
    assert_eq!(settings["features"], json!(["Exports", "Team seats"]));
    let html = owner.get("/app/p/acme/settings?done=project", 200).await;
    assert!(html.contains("It saved our quarter | Priya") && html.contains("COMEBACK20"));

    // The service's own rules answer, on the page.
    let Posted { body: html, .. } = owner
        .post(
            "/app/p/acme/settings/project",
            &[("name", "Acme"), ("reactivation_url", "http://acme.io")],
            400,
        )
        .await;
    assert!(html.contains("reactivation_url"), "{html}");
}

async fn the_secret_key_is_shown_once_and_the_public_key_stays(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (token, owner) = Browser::acme_owner(&app).await;
    let before = project_json(&app, &token).await;
    let posted = owner
        .post("/app/p/acme/settings/keys/rotate", &[], 303)
        .await;
    assert_eq!(posted.location, "/app/p/acme/settings?done=keys");
    let html = owner.follow(&posted).await;
    let secret = html
        .split("<code id=\"shown-value\">")
        .nth(1)
        .and_then(|rest| rest.split('<').next())
        .expect("the new secret is on the page")
        .to_owned();
    let after = project_json(&app, &token).await;
    assert_eq!(
        after["public_key"], before["public_key"],
        "the public key stays"
    );
    assert_ne!(after["secret_key_hint"], before["secret_key_hint"]);
    assert!(secret.ends_with(after["secret_key_hint"].as_str().unwrap()));
    app.call_with_key(&secret, Method::GET, "/projects/acme/churn-events", 200)
        .await;
    let again = owner.get("/app/p/acme/settings", 200).await;
    assert!(!again.contains(&secret), "shown once");

    // Asked for, the public key is replaced too.
    let posted = owner
        .post("/app/p/acme/settings/keys/rotate", &[("public", "on")], 303)
        .await;
    let html = owner.follow(&posted).await;
    let last = project_json(&app, &token).await;
    assert_ne!(last["public_key"], after["public_key"]);
    assert!(html.contains(last["public_key"].as_str().unwrap()));
    assert!(html.contains("The public key is new too"));
    assert!(html.contains(&format!(
        "ends in <code>{}</code>",
        last["secret_key_hint"].as_str().unwrap()
    )));
    assert!(html.contains("<code id=\"shown-value\">"));
}

async fn providers_connect_and_the_sender_domain_shows_its_record(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (token, owner) = Browser::acme_owner(&app).await;
    assert_eq!(
        owner
            .post(
                "/app/p/acme/settings/providers/stripe",
                &[
                    ("api_key", "rk_test_abcd1234"),
                    ("webhook_secret", "whsec_wxyz9876"),
                ],
                303
            )
            .await
            .location,
        "/app/p/acme/settings?done=provider"
    );
    let providers = providers(&app, &token).await;
    let stripe = &providers[0];
    assert_eq!(stripe["provider"], "stripe");
    assert_eq!(stripe["api_key_hint"], "1234");
    let html = owner.get("/app/p/acme/settings?done=provider", 200).await;
    assert!(html.contains("Update Stripe") && html.contains("Disconnect Stripe"));
    assert!(html.contains(stripe["webhook_url"].as_str().unwrap()));
    assert!(
        !html.contains("rk_test_abcd1234"),
        "never the credential itself"
    );
    // Missing fields are the service's validation, shown on the page.
    let Posted { body: html, .. } = owner
        .post(
            "/app/p/acme/settings/providers/razorpay",
            &[("key_id", "rzp_test_1")],
            400,
        )
        .await;
    assert!(html.contains("key_secret"), "{html}");
    owner
        .post("/app/p/acme/settings/providers/stripe/disconnect", &[], 303)
        .await;

    owner
        .post(
            "/app/p/acme/settings/sender",
            &[
                ("from_name", "Ada at Acme"),
                ("from_email", "ada@mail.acme.io"),
            ],
            303,
        )
        .await;
    let sender = app
        .call(&token, Method::GET, "/projects/acme/email-settings", 200)
        .await["data"]
        .clone();
    let html = owner.get("/app/p/acme/settings", 200).await;
    assert!(html.contains("_churn.mail.acme.io"), "{html}");
    assert!(html.contains(sender["dns_record"]["value"].as_str().unwrap()));
    assert!(html.contains("Verify the domain") && html.contains("not verified"));
    // Verifying looks the record up; without it the page says so, and nothing is verified.
    let status = owner
        .send_form("/app/p/acme/settings/sender/verify", &[], &owner.csrf)
        .await
        .status();
    assert_ne!(status, 403);
    assert_ne!(status, 500);
}

/// Acme's connections, through the API.
async fn providers(app: &TestApp, token: &str) -> Value {
    app.call(token, Method::GET, "/projects/acme/providers", 200)
        .await["data"]
        .clone()
}

/// The API's optional `api_base`, in a closed "Advanced" part of the Stripe and Razorpay
/// forms: checked by the service as the API checks it, its refusal beside the input with what
/// was typed kept, and a reconnect storing what the form sends.
async fn a_provider_connects_to_a_test_server_from_its_advanced_input(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (token, owner) = Browser::acme_owner(&app).await;
    let closed =
        "<details><summary>Advanced: a Stripe-compatible test server (e.g. stripe-mock)</summary>";
    let html = owner.get("/app/p/acme/settings", 200).await;
    assert!(html.contains(closed), "{html}");
    assert!(html.contains("placeholder=\"https://api.stripe.com\""));
    assert!(html.contains("placeholder=\"https://api.razorpay.com\""));

    let stripe = |api_base: &'static str| {
        [
            ("api_key", "rk_test_abcd1234"),
            ("webhook_secret", "whsec_wxyz9876"),
            ("api_base", api_base),
        ]
    };
    for (typed, why) in [
        (
            "https://127.0.0.1:12111",
            "api_base must not point to a loopback, private or otherwise non-public address",
        ),
        ("http://93.184.216.34", "api_base must be an https:// URL"),
        ("not a url", "api_base must be a valid URL"),
    ] {
        let Posted { body: html, .. } = owner
            .post("/app/p/acme/settings/providers/stripe", &stripe(typed), 400)
            .await;
        assert!(
            html.contains(&format!(
                "<p class=\"field-error\" id=\"stripe-api-base-error\">{why}</p>"
            )),
            "{html}"
        );
        assert!(html.contains(&format!(
            "value=\"{typed}\" aria-invalid=\"true\" aria-describedby=\"stripe-api-base-error\""
        )));
        assert!(html.contains("<details open><summary>Advanced: a Stripe-compatible"));
        assert!(html.contains("The connection is not saved: see the messages beside the inputs."));
        assert!(
            !html.contains("rk_test_abcd1234"),
            "no secret is written back"
        );
    }
    assert_eq!(
        providers(&app, &token).await,
        json!([]),
        "nothing refused is stored"
    );

    owner
        .post(
            "/app/p/acme/settings/providers/stripe",
            &stripe("https://93.184.216.34/"),
            303,
        )
        .await;
    assert_eq!(
        providers(&app, &token).await[0]["api_base"],
        "https://93.184.216.34"
    );
    // The form shows it, open: a reconnect sends it again.
    let html = owner.get("/app/p/acme/settings", 200).await;
    assert!(html.contains(
        "<details open><summary>Advanced: a Stripe-compatible test server (e.g. stripe-mock)</summary>"
    ));
    assert!(html.contains("value=\"https://93.184.216.34\""));

    // Reconnecting stores what the form sends: emptied, the base is Stripe's own again.
    owner
        .post("/app/p/acme/settings/providers/stripe", &stripe(""), 303)
        .await;
    assert_eq!(
        providers(&app, &token).await[0]["api_base"],
        "https://api.stripe.com"
    );
    let html = owner.get("/app/p/acme/settings", 200).await;
    assert!(
        html.contains(closed),
        "the default is not shown as a test server"
    );

    // Razorpay's form: the same check, its key id kept beside the complaint.
    let Posted { body: html, .. } = owner
        .post(
            "/app/p/acme/settings/providers/razorpay",
            &[
                ("key_id", "rzp_test_kept"),
                ("key_secret", "s3cret"),
                ("webhook_secret", "w3bhook"),
                ("api_base", "https://169.254.169.254"),
            ],
            400,
        )
        .await;
    assert!(html.contains("id=\"razorpay-api-base-error\">api_base must not point"));
    assert!(html.contains("value=\"rzp_test_kept\""));
    assert!(html.contains("value=\"https://169.254.169.254\""));
    assert!(!html.contains("s3cret") && !html.contains("w3bhook"));
}

async fn secrets_and_keys_are_for_admins_and_the_owner(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    join(&app, &token, "viewer@acme.io", "viewer").await;
    join(&app, &token, "member@acme.io", "member").await;
    join(&app, &token, "admin@acme.io", "admin").await;
    let writes: &[(&str, &[(&str, &str)])] = &[
        ("/app/p/acme/settings/keys/rotate", &[]),
        ("/app/p/acme/settings/identity-secret/rotate", &[]),
        ("/app/p/acme/settings/webhook-secret/rotate", &[]),
        (
            "/app/p/acme/settings/providers/custom",
            &[("retry_url", "")],
        ),
        (
            "/app/p/acme/settings/sender",
            &[("from_email", "a@acme.io")],
        ),
        ("/app/p/acme/settings/sender/verify", &[]),
    ];
    for who in ["viewer@acme.io", "member@acme.io"] {
        let b = Browser::sign_in(&app, who).await;
        let html = b.get("/app/p/acme/settings", 200).await;
        assert!(
            !html.contains("idsec_") && !html.contains("Replace the"),
            "{who}"
        );
        for (path, form) in writes {
            b.post(path, form, 403).await;
        }
    }
    // An admin administers but does not replace the keys (the owner's alone, as in the API).
    let admin = Browser::sign_in(&app, "admin@acme.io").await;
    let html = admin.get("/app/p/acme/settings", 200).await;
    assert!(html.contains("idsec_") && !html.contains("Replace the secret key"));
    admin
        .post("/app/p/acme/settings/keys/rotate", &[], 403)
        .await;
    let before = identity_secret(&app, &token, "acme").await;
    let posted = admin
        .post("/app/p/acme/settings/identity-secret/rotate", &[], 303)
        .await;
    assert_eq!(posted.location, "/app/p/acme/settings?done=identity");
    let html = admin.follow(&posted).await;
    let after = identity_secret(&app, &token, "acme").await;
    assert_ne!(before, after);
    assert!(html.contains(&after) && html.contains("The identity secret is replaced"));
    // A reload rotates nothing.
    admin.get(&posted.location, 200).await;
    assert_eq!(identity_secret(&app, &token, "acme").await, after);
    let webhook = || app.call(&token, Method::GET, "/projects/acme/webhook-secret", 200);
    let old = webhook().await;
    admin
        .post("/app/p/acme/settings/webhook-secret/rotate", &[], 303)
        .await;
    assert_ne!(webhook().await, old);
    admin
        .post(
            "/app/p/acme/settings/providers/custom",
            &[("retry_url", "")],
            303,
        )
        .await;
}

async fn another_tenants_settings_and_team_are_not_found(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let id = project_json(&app, &token).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mallory = Browser::another_tenant(&app, "Evil").await;
    for path in ["settings", "team", "settings/suppressions"] {
        mallory.get(&format!("/app/p/{id}/{path}"), 404).await;
    }
    for path in [
        "settings/keys/rotate",
        "settings/project",
        "settings/webhook-secret/rotate",
        "team/invitations",
        "team/leave",
    ] {
        mallory
            .post(
                &format!("/app/p/{id}/{path}"),
                &[("name", "x"), ("email", "m@evil.io")],
                404,
            )
            .await;
    }
    assert_eq!(project_json(&app, &token).await["name"], "Acme");
}

async fn team_invitations_roles_and_leaving_from_the_page(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    join(&app, &token, "viewer@acme.io", "viewer").await;
    join(&app, &token, "member@acme.io", "member").await;
    let owner = Browser::sign_in(&app, "owner@acme.io").await;

    let posted = owner
        .post(
            "/app/p/acme/team/invitations",
            &[("email", "new@acme.io"), ("role", "viewer")],
            303,
        )
        .await;
    assert_eq!(posted.location, "/app/p/acme/team?done=invited");
    let html = owner.follow(&posted).await;
    assert!(html.contains("/invitations/") && html.contains("Invitation link for new@acme.io"));
    let pending = app
        .call(&token, Method::GET, "/projects/acme/invitations", 200)
        .await["data"]
        .clone();
    let invitation = pending[0]["id"].as_str().unwrap().to_owned();
    let members = app
        .call(&token, Method::GET, "/projects/acme/members", 200)
        .await["data"]
        .clone();
    let id_of = |email: &str| {
        members
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["email"] == email)
            .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (viewer_id, member_id) = (id_of("viewer@acme.io"), id_of("member@acme.io"));

    // The viewer and the member see the team and no write controls, and are refused.
    for who in ["viewer@acme.io", "member@acme.io"] {
        // Removing another member (removing oneself is leaving, always allowed).
        let other = if who == "viewer@acme.io" {
            &member_id
        } else {
            &viewer_id
        };
        let b = Browser::sign_in(&app, who).await;
        let html = b.get("/app/p/acme/team", 200).await;
        assert!(html.contains("owner@acme.io"));
        for control in ["Change the role", "Remove ", "Invite someone", "Revoke"] {
            assert!(!html.contains(control), "{who} sees no {control:?}");
        }
        assert!(html.contains("Leave Acme"));
        for (path, form) in [
            (
                "/app/p/acme/team/invitations".to_owned(),
                vec![("email", "x@acme.io")],
            ),
            (
                format!("/app/p/acme/team/invitations/{invitation}/revoke"),
                vec![],
            ),
            (
                format!("/app/p/acme/team/members/{viewer_id}/role"),
                vec![("role", "admin")],
            ),
            (format!("/app/p/acme/team/members/{other}/remove"), vec![]),
        ] {
            b.post(&path, &form, 403).await;
        }
    }
    owner
        .post_with_csrf(
            &format!("/app/p/acme/team/members/{viewer_id}/role"),
            &[("role", "member")],
            "forged",
            403,
        )
        .await;

    assert_eq!(
        owner
            .post(
                &format!("/app/p/acme/team/members/{viewer_id}/role"),
                &[("role", "member")],
                303
            )
            .await
            .location,
        "/app/p/acme/team?done=role"
    );
    owner
        .post(
            &format!("/app/p/acme/team/invitations/{invitation}/revoke"),
            &[],
            303,
        )
        .await;
    owner
        .post(
            &format!("/app/p/acme/team/members/{member_id}/remove"),
            &[],
            303,
        )
        .await;
    let members = app
        .call(&token, Method::GET, "/projects/acme/members", 200)
        .await["data"]
        .clone();
    let roles: Vec<(String, String)> = members
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["email"].as_str().unwrap().into(),
                m["role"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(roles.contains(&("viewer@acme.io".into(), "member".into())));
    assert!(!roles.iter().any(|(e, _)| e == "member@acme.io"));
    let pending = app
        .call(&token, Method::GET, "/projects/acme/invitations", 200)
        .await;
    assert_eq!(pending["data"], json!([]));

    // Leaving: the former viewer goes, and lands on /app.
    let leaver = Browser::sign_in(&app, "viewer@acme.io").await;
    assert_eq!(
        leaver
            .post("/app/p/acme/team/leave", &[], 303)
            .await
            .location,
        "/app"
    );
    leaver.get("/app/p/acme/team", 404).await;
    // The owner cannot leave.
    owner.post("/app/p/acme/team/leave", &[], 400).await;
}

async fn an_invitation_accepted_from_its_page_lands_in_the_project(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    let invitation = invite(&app, &token, "nell@example.com", "viewer").await;
    let link = invitation["accept_url"].as_str().unwrap();
    let r = app.client.get(link).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let r = app.register_invited(link, "Nell").await;
    assert_eq!(r.status(), 303);
    assert_eq!(location(&r), "/app/p/acme");
    let nell = Browser::with_cookie(&app, session_cookie(&r)).await;
    let html = nell.get("/app/p/acme", 200).await;
    assert!(html.contains("viewer"), "the role badge");

    // An existing account signs in on the page and lands in the project as well.
    // (Its address confirmed through the verification page, which ends in the dashboard.)
    app.register("bo@example.com").await;
    let verification = app.verification_token("bo@example.com").await;
    let r = app
        .post_form(
            url(&app, "/verify-email"),
            &[("token", verification.as_str())],
        )
        .await;
    assert_eq!((r.status().as_u16(), location(&r)), (303, "/app"));
    let invitation = invite(&app, &token, "bo@example.com", "member").await;
    let r = app
        .post_form(
            invitation["accept_url"].as_str().unwrap(),
            &[("mode", "signin"), ("password", "correct horse")],
        )
        .await;
    assert_eq!(r.status(), 303);
    assert_eq!(location(&r), "/app/p/acme");
    let bo = Browser::with_cookie(&app, session_cookie(&r)).await;
    bo.get("/app/p/acme/team", 200).await;
}

async fn the_password_reset_page_signs_in(backend: Backend) {
    let (app, token) = TestApp::spawn_acme(backend).await;
    app.forgot_password("owner@acme.io").await;
    app.run_jobs().await;
    let mails = app.outbox().join("\n");
    let reset: String = mails
        .split("/reset-password?token=")
        .nth(1)
        .expect("a reset email")
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    let r = app
        .post_form(
            url(&app, "/reset-password"),
            &[("token", reset.as_str()), ("password", "a brand new one")],
        )
        .await;
    assert_eq!(r.status(), 303);
    assert_eq!(location(&r), "/app");
    let signed = Browser::with_cookie(&app, session_cookie(&r)).await;
    let r = signed.open("/app").await;
    assert_eq!((r.status().as_u16(), location(&r)), (303, "/app/p/acme"));
    // Earlier sessions are over.
    app.call(&token, Method::GET, "/auth/me", 401).await;
}

async fn the_account_page_changes_the_password(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (_, owner) = Browser::acme_owner(&app).await;
    let Posted { body: html, .. } = owner
        .post(
            "/app/account/password",
            &[
                ("current_password", "wrong"),
                ("new_password", "another good one"),
            ],
            400,
        )
        .await;
    assert!(html.contains("role=\"alert\""), "{html}");
    owner
        .post_with_csrf(
            "/app/account/password",
            &[
                ("current_password", "correct horse"),
                ("new_password", "another good one"),
            ],
            "forged",
            403,
        )
        .await;
    let form = [
        ("current_password", "correct horse"),
        ("new_password", "another good one"),
    ];
    let r = owner
        .send_form("/app/account/password", &form, &owner.csrf)
        .await;
    assert_eq!(r.status(), 303);
    let fresh = Browser::with_cookie(&app, session_cookie(&r)).await;
    fresh.get("/app/account?done=password", 200).await;
    // The old cookie is signed out.
    let r = owner.open("/app/account").await;
    assert_eq!(location(&r), "/app/sign-in");
}

async fn the_account_page_changes_the_name(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (token, owner) = Browser::acme_owner(&app).await;
    let html = owner.get("/app/account", 200).await;
    assert!(html.contains("name=\"name\" type=\"text\""), "{html}");
    // The rule of registration: one line, not blank.
    for bad in ["   ", "Ada\r\nBcc: evil@example.com"] {
        let refused = owner.post("/app/account/name", &[("name", bad)], 400).await;
        assert!(refused.body.contains("role=\"alert\""), "{}", refused.body);
    }
    owner
        .post_with_csrf("/app/account/name", &[("name", "Mallory")], "forged", 403)
        .await;
    let done = owner
        .post("/app/account/name", &[("name", "Ada Lovelace")], 303)
        .await;
    assert_eq!(done.location, "/app/account?done=name");
    let html = owner.get("/app/account?done=name", 200).await;
    assert!(html.contains("Your name is changed."), "{html}");
    assert!(html.contains("value=\"Ada Lovelace\""), "{html}");
    // The API's current user is the same record; the session stays.
    let me = app.me(&token).await;
    assert_eq!(me["data"]["name"], "Ada Lovelace");
    let overview = owner.get("/app/p/acme", 200).await;
    assert!(overview.contains("Ada Lovelace"), "the rail names the user");
}
