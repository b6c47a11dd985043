//! Team: invitations on the test clock, members and roles, invite-only registration, and
//! removal taking effect on a second server process.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{
    Backend, Options, TestApp, acme_owner, advance, header_str, login, until_status,
};
use churn_core::both_backends;

both_backends!(
    invitations_live_seven_days_and_open_once,
    only_the_owner_hands_out_admin_and_nobody_removes_the_owner,
    invite_only_registration_lets_invitees_in,
    the_invitation_link_opens_a_page_to_join
);

/// Invites `email` into `acme` as `role` and answers the invitation.
pub async fn invite(app: &TestApp, token: &str, email: &str, role: &str) -> Value {
    app.call_json(
        token,
        Method::POST,
        "/projects/acme/invitations",
        &json!({"email": email, "role": role}),
        201,
    )
    .await["data"]
        .clone()
}

/// The token at the end of an invitation's `accept_url`.
pub fn token_of(invitation: &Value) -> String {
    let url = invitation["accept_url"].as_str().unwrap();
    url.rsplit_once("/invitations/").unwrap().1.to_owned()
}

pub async fn accept(app: &TestApp, session: &str, token: &str, status: u16) -> Value {
    app.call(
        session,
        Method::POST,
        &format!("/invitations/{token}/accept"),
        status,
    )
    .await
}

/// Registers `email` through the invitation page (which verifies the address) as a member
/// of `acme` with `role`; its session token.
pub async fn join(app: &TestApp, owner: &str, email: &str, role: &str) -> String {
    let invitation = invite(app, owner, email, role).await;
    let joined = app
        .register_invited(invitation["accept_url"].as_str().unwrap(), "Test User")
        .await;
    assert_eq!(joined.status(), 303, "signed in and on the project");
    assert_eq!(joined.headers()["location"], "/app/p/acme");
    login(app, email).await
}

/// Verifies `email` with the link of its verification email (runs the due jobs).
async fn verify_email(app: &TestApp, email: &str) {
    let token = app.verification_token(email).await;
    app.expect(
        app.req(Method::POST, "/auth/verify-email")
            .json(&json!({"token": token})),
        200,
    )
    .await;
}

pub async fn members(app: &TestApp, token: &str) -> Vec<Value> {
    app.call(token, Method::GET, "/projects/acme/members", 200)
        .await["data"]
        .as_array()
        .unwrap()
        .clone()
}

pub fn id_of(members: &[Value], email: &str) -> String {
    members.iter().find(|m| m["email"] == email).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn invitations_live_seven_days_and_open_once(backend: Backend) {
    let (app, owner) = TestApp::spawn_acme(backend).await;
    let created = invite(&app, &owner, " Bob@Example.com ", "viewer").await;
    assert_eq!(created["email"], "bob@example.com");
    assert_eq!(created["role"], "viewer");
    assert_eq!(created["status"], "pending");
    let url = created["accept_url"].as_str().unwrap();
    assert!(url.contains("/invitations/"), "{url}");
    let token = token_of(&created);

    // Listed without the link; a second invitation or one of a member is a conflict.
    let listed = app
        .call(&owner, Method::GET, "/projects/acme/invitations", 200)
        .await;
    assert_eq!(listed["data"].as_array().unwrap().len(), 1);
    assert_eq!(listed["data"][0]["id"], created["id"]);
    assert!(listed["data"][0].get("accept_url").is_none());
    assert!(!listed.to_string().contains(&token));
    for (body, status) in [
        (json!({"email": "bob@example.com"}), 409),
        (json!({"email": "owner@acme.io"}), 409),
        (json!({"email": "carol@example.com", "role": "owner"}), 400),
        (json!({"email": "carol@example.com", "role": "boss"}), 400),
        (json!({"email": "not-an-address"}), 400),
    ] {
        let answer = app
            .call_json(
                &owner,
                Method::POST,
                "/projects/acme/invitations",
                &body,
                status,
            )
            .await;
        if status == 400 {
            let field = &answer["error"]["details"][0]["field"];
            assert!(field == "role" || field == "email", "{answer}");
        }
    }

    // The email goes out through a job and carries the link.
    assert!(app.run_jobs().await >= 1);
    let mail = app
        .outbox()
        .into_iter()
        .find(|m| m.contains("To: bob@example.com"))
        .expect("the invitation email");
    assert!(mail.contains(&format!("/invitations/{token}")));

    // Someone else's session may not use it; the invitee's may, once.
    let carol = app.register("carol@example.com").await.token;
    accept(&app, &carol, &token, 403).await;
    let bob = app.register("bob@example.com").await.token;
    // Not before the address is verified: the token alone must not let its holder in.
    let unverified = accept(&app, &bob, &token, 403).await;
    assert_eq!(
        unverified["error"]["message"],
        "verify your email address first"
    );
    verify_email(&app, "bob@example.com").await;
    let joined = accept(&app, &bob, &token, 200).await;
    assert_eq!(joined["data"]["role"], "viewer");
    assert_eq!(joined["data"]["project"]["slug"], "acme");
    accept(&app, &bob, &token, 409).await;
    let team = members(&app, &bob).await;
    let roles: Vec<_> = team
        .iter()
        .map(|m| (m["email"].as_str().unwrap(), m["role"].as_str().unwrap()))
        .collect();
    assert_eq!(
        roles,
        [("owner@acme.io", "owner"), ("bob@example.com", "viewer")]
    );
    assert!(
        team.iter()
            .all(|m| m["joined_at"].is_string() && m["name"] == "Test User")
    );

    // Seven days on the test clock: expired (400), no longer listed, and replaceable.
    let late = invite(&app, &owner, "carol@example.com", "member").await;
    advance(&app, 7 * 86_400).await;
    // Sessions live seven days too.
    let (owner, carol) = (
        login(&app, "owner@acme.io").await,
        login(&app, "carol@example.com").await,
    );
    accept(&app, &carol, &token_of(&late), 400).await;
    let listed = app
        .call(&owner, Method::GET, "/projects/acme/invitations", 200)
        .await;
    assert_eq!(listed["data"], json!([]));
    let again = invite(&app, &owner, "carol@example.com", "member").await;
    accept(&app, &carol, &token_of(&late), 404).await;

    // A revoked invitation's link opens nothing.
    let path = format!(
        "/projects/acme/invitations/{}",
        again["id"].as_str().unwrap()
    );
    app.call(&owner, Method::DELETE, &path, 204).await;
    app.call(&owner, Method::DELETE, &path, 404).await;
    accept(&app, &carol, &token_of(&again), 404).await;
    accept(&app, &carol, "no-such-token", 404).await;
}

async fn only_the_owner_hands_out_admin_and_nobody_removes_the_owner(backend: Backend) {
    let (app, owner) = TestApp::spawn_acme(backend).await;
    let admin = join(&app, &owner, "admin@acme.io", "admin").await;
    let member = join(&app, &owner, "member@acme.io", "member").await;
    let viewer = join(&app, &owner, "viewer@acme.io", "viewer").await;
    let team = members(&app, &viewer).await;
    let (owner_id, admin_id, member_id, viewer_id) = (
        id_of(&team, "owner@acme.io"),
        id_of(&team, "admin@acme.io"),
        id_of(&team, "member@acme.io"),
        id_of(&team, "viewer@acme.io"),
    );
    let patch = |token: &str, id: &str, role: &str| {
        app.req(Method::PATCH, &format!("/projects/acme/members/{id}"))
            .bearer_auth(token)
            .json(&json!({"role": role}))
    };
    let delete = |token: &str, id: &str| {
        app.req(Method::DELETE, &format!("/projects/acme/members/{id}"))
            .bearer_auth(token)
    };

    // An admin manages members and viewers, never admins; only the owner does.
    app.call_json(
        &admin,
        Method::POST,
        "/projects/acme/invitations",
        &json!({"email": "new@acme.io", "role": "admin"}),
        403,
    )
    .await;
    invite(&app, &admin, "new@acme.io", "viewer").await;
    app.expect(patch(&admin, &member_id, "admin"), 403).await;
    let changed = app.expect(patch(&admin, &member_id, "viewer"), 200).await;
    assert_eq!(changed["data"]["role"], "viewer");
    assert_eq!(changed["data"]["id"], member_id.as_str());
    app.expect(patch(&admin, &member_id, "member"), 200).await;
    app.expect(patch(&member, &viewer_id, "member"), 403).await;
    app.expect(patch(&owner, &member_id, "owner"), 400).await;
    app.expect(patch(&owner, &owner_id, "admin"), 400).await;
    app.expect(patch(&owner, "no-such-user", "viewer"), 404)
        .await;
    let promoted = app.expect(patch(&owner, &viewer_id, "admin"), 200).await;
    assert_eq!(promoted["data"]["role"], "admin");
    app.expect(patch(&admin, &viewer_id, "viewer"), 403).await;
    app.expect(delete(&admin, &viewer_id), 403).await;
    app.expect(patch(&owner, &viewer_id, "viewer"), 200).await;
    app.expect(delete(&owner, &admin_id), 204).await;
    // The removed admin lost access at once.
    app.call(&admin, Method::GET, "/projects/acme", 404).await;

    // The owner stays, whoever asks; a member may leave; a viewer removes nobody else.
    for token in [&owner, &member, &viewer] {
        app.expect(delete(token, &owner_id), 400).await;
    }
    app.expect(delete(&viewer, &member_id), 403).await;
    app.expect(delete(&member, &member_id), 204).await;
    app.expect(delete(&owner, &member_id), 404).await;
    app.call(&member, Method::GET, "/projects/acme", 404).await;
    let left: Vec<_> = members(&app, &owner)
        .await
        .iter()
        .map(|m| m["email"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(left, ["owner@acme.io", "viewer@acme.io"]);
}

async fn invite_only_registration_lets_invitees_in(backend: Backend) {
    let app = TestApp::spawn_registering(backend, "invite_only").await;
    // The very first account always may.
    let owner = acme_owner(&app).await;
    let stranger =
        json!({"name": "S", "email": "stranger@example.com", "password": "correct horse"});
    let refused = app
        .expect(app.req(Method::POST, "/auth/register").json(&stranger), 403)
        .await;
    assert_eq!(
        refused["error"]["message"],
        "registration is by invitation only"
    );
    invite(&app, &owner, "stranger@example.com", "member").await;
    app.expect(app.req(Method::POST, "/auth/register").json(&stranger), 201)
        .await;
    // An expired invitation opens nothing.
    invite(&app, &owner, "late@example.com", "member").await;
    advance(&app, 7 * 86_400 + 1).await;
    app.expect(
        app.req(Method::POST, "/auth/register")
            .json(&json!({"name": "L", "email": "late@example.com", "password": "correct horse"})),
        403,
    )
    .await;
}

/// The status and HTML of a page, checking the headers every page sends.
async fn page(request: reqwest::RequestBuilder) -> (u16, String) {
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    assert_eq!(
        response.headers()["content-type"],
        "text/html; charset=utf-8"
    );
    assert_eq!(response.headers()["referrer-policy"], "no-referrer");
    let html = response.text().await.unwrap();
    assert!(!html.contains("<script"), "{html}");
    (status, html)
}

/// `accept_url` opens a page (no JavaScript): a newcomer creates the account there and joins,
/// an existing user signs in and joins; mistakes leave the invitation open.
async fn the_invitation_link_opens_a_page_to_join(backend: Backend) {
    let app = TestApp::spawn_registering(backend, "invite_only").await;
    let owner = acme_owner(&app).await;
    let web = &app.client;

    let newcomer = invite(&app, &owner, "new@example.com", "member").await;
    let url = newcomer["accept_url"].as_str().unwrap();
    let (status, html) = page(web.get(url)).await;
    assert_eq!(status, 200);
    assert!(
        html.contains("new@example.com is invited to join <strong>Acme</strong> as a member."),
        "{html}"
    );
    let register = |password: &'static str| {
        web.post(url).form(&[
            ("mode", "register"),
            ("name", "Nell"),
            ("password", password),
        ])
    };
    let (status, html) = page(register("short")).await;
    assert_eq!(status, 400);
    assert!(html.contains("role=\"alert\">The password"), "{html}");
    // Joined: signed in and on the project, in the dashboard.
    let joined = register("correct horse").send().await.unwrap();
    assert_eq!(joined.status(), 303);
    assert_eq!(joined.headers()["location"], "/app/p/acme");
    assert!(header_str(&joined, "set-cookie").starts_with("churn_session="));
    let team = members(&app, &owner).await;
    let joined = team.iter().find(|m| m["email"] == "new@example.com");
    assert_eq!(joined.map(|m| m["role"].clone()), Some(json!("member")));
    // The account is a real one, verified by the emailed link, and the link is spent.
    let newcomer = login(&app, "new@example.com").await;
    let me = app.me(&newcomer).await;
    assert_eq!(me["data"]["email_verified"], true);
    assert_eq!(page(web.get(url)).await.0, 409);

    // An account made through the API (the invitation lets it register) signs in instead.
    let existing = invite(&app, &owner, "old@example.com", "viewer").await;
    app.register("old@example.com").await;
    let url = existing["accept_url"].as_str().unwrap();
    let sign_in = |password: &'static str| {
        web.post(url)
            .form(&[("mode", "signin"), ("password", password)])
    };
    let (status, html) = page(sign_in("wrong horse")).await;
    assert_eq!(status, 401);
    assert!(html.contains("Invalid email or password."), "{html}");
    let (status, html) = page(sign_in("correct horse")).await;
    assert_eq!(status, 403);
    assert!(html.contains("Verify your email address first."), "{html}");
    verify_email(&app, "old@example.com").await;
    let joined = sign_in("correct horse").send().await.unwrap();
    assert_eq!(joined.status(), 303);
    assert_eq!(joined.headers()["location"], "/app/p/acme");

    let unknown = format!("{}/invitations/nothing-here", app.address);
    assert_eq!(page(web.get(&unknown)).await.0, 404);
    let expired = invite(&app, &owner, "late@example.com", "member").await;
    advance(&app, 7 * 86_400 + 1).await;
    let (status, html) = page(web.get(expired["accept_url"].as_str().unwrap())).await;
    assert_eq!(status, 400);
    assert!(html.contains("expired"), "{html}");
}

/// Two server processes on one PostgreSQL database: a member removed through one loses
/// access on the other by its next requests (the access cache is dropped by notification).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removal_takes_effect_on_every_process() {
    let first = TestApp::spawn(Backend::Postgres).await;
    let second = first.alongside(Options::default()).await;
    let owner = acme_owner(&first).await;
    let member = join(&first, &owner, "member@acme.io", "member").await;
    let member_id = id_of(&members(&first, &owner).await, "member@acme.io");
    let read = |app: &TestApp| {
        app.req(Method::GET, "/projects/acme/churn-events")
            .bearer_auth(&member)
            .send()
    };
    for _ in 0..3 {
        assert_eq!(
            read(&second).await.unwrap().status(),
            200,
            "warms the cache"
        );
    }
    first
        .call(
            &owner,
            Method::DELETE,
            &format!("/projects/acme/members/{member_id}"),
            204,
        )
        .await;
    assert_eq!(read(&first).await.unwrap().status(), 404);
    until_status(
        404,
        "the second process still lets the removed member in",
        async || read(&second).await.unwrap().status().as_u16(),
    )
    .await;
}
