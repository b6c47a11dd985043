//! Sign-in with an identity provider: RS256 ID tokens checked against a JWKS served on
//! loopback, as Google or any OpenID Connect provider would.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Json;
use axum::routing::get;
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Backend, Options, TestApp};
use churn_core::both_backends;

both_backends!(id_tokens_sign_in_or_create_users);

/// A 2048-bit RSA key made for this test only (PKCS#1 DER, base64), and its public modulus.
const TEST_KEY_DER: &[&str] = &[
    "MIIEpAIBAAKCAQEAlOowKAPCZEe7e2aqeqmij3rn7QSdw2F7J/NlVW7Pzqnhz9Ff69pUCJSpS6vYjHksEHWb3N8rYBxauB+2",
    "lirBHzWpXWVMlU98qOiwrOFdMbA9P+W3arzuAB+/zPDwseAOm1nC6tJZrId+CTPaCMpBK39k1CnRKdiaZkYHA97ouSnIN3rW",
    "/0ucRycfcIeqfP8BiFMhrsMiyU4JM59k0QVHmbB/Ge1PkNkIabiCrue/GPjOymdE082v30iFH5TxX4NnDkmSJ4kNYVFG7SRp",
    "9Vrbkd1pvondxx/cGg+N38ddjlAHyPJjRGASjlQTW4PHyO++2pksD/5HJqEmKlvqTGlaEwIDAQABAoIBAAthvbq5OtWxhxQx",
    "+/K/Kqq4lEFEVCiXhIAm6GzEuPZme3KhlQ+XH7G+M+H4QwEAzyWwHFcf6ZYbF+X90O9RjXKf7KkaS0wYOxxDGL0SxpQ79udL",
    "Qzi4MweB/1KgBQDOpSv2vhRDoQRnIL996pRq0EHAwKMLHsg9HLDKrNH9BIc7NLAEMgdtBZc+IWmWQydcSz/xNZSab30cCI1x",
    "NaX6v9nmBeVxHF3ILgayHslO5xfXGCVrn8M1bhGpO/O31K88cXs5uEt5ztxL0mCLmlN7e0QgxSP9jETKMZLwlfHtVWlbYuRx",
    "AQ6V2JVs9v6w8gAez/R3gA9Anpzv2Q479wjoMnUCgYEA0bK+VtPONJM5ZXx+j0xb3Ko5c54S8xJ+673K0jcmBtQQUO4XGSkT",
    "VC2uZqfBywWho+hMKeJTLb1epHui6d3uDtR0846RCeXer8THIzLAwxDVnQIWbCWLTeEyeJlQ1SITT9S/hU2vVlFqd0AOqNQE",
    "5ECZlF4frU9HdPbt2rntcOUCgYEAtcuknbVo4TI5HdiY9xY7pEFH1q8zagj7mwv1hZWtIszmSLkd1qrBf12YDhBk4aJK4IGo",
    "hjXF8DJqdkYdJzwvDEmh/J6IwcdjbapkS3uzaWFeKsPJD3U0vfWefPCj4M7FhOwSp4ZnLwfhpsFNf4PP1wuq8VVxkOJm1Qm8",
    "XQlXh5cCgYB5BZ6iP8UvRJSIhKwKCbiuhrN3jZBEJrWHWla2sctJf5QXEQHVrIYSO/b+Ge1XPV3HWeay+YKl0DfR1+Ty8flV",
    "J7qDYhFE1ByL9pYzMzRan9mYrr7AFX7rKH/XaCxlhS/+D7uktGvv9jbqsdaECzDzhnDcVuITRMDpuSUW6d0mHQKBgQCGhlsa",
    "GNOzUObTHySSMvGPan8ubhctr9f/s6nLYCbuSZFe3x0lbNYi2a9bOOZt0Rp3Z3q9Va1TQPtm6htInVBzV0l3Fhk8y77Xt+7f",
    "rHnm0RZNrvNpbOHKb6cH7UpXYKro4YgsT1irhLmGHCSs5201RH0KeJ/BBsfxfXLVpcQPoQKBgQC5sfG3EZsE0hrJYxGchgzJ",
    "JBEcioHTYsLH/HL+fWiaK9n00eGqbo28+1T51hpXByfPLEhbjdpDWTbpjNQxXAx94bukk0ZYrOZY4LaeYcXRv2hp4eBqcuLH",
    "7mZ5zGL6nxt80sns7PChJdLuS5h9kQ8Gb29rgQNMelEe9hMr86hWzw==",
];
const TEST_KEY_N: &str = "lOowKAPCZEe7e2aqeqmij3rn7QSdw2F7J_NlVW7Pzqnhz9Ff69pUCJSpS6vYjHksEHWb3N8rYBxauB-2lirBHzWpXWVMlU98qOiwrOFdMbA9P-W3arzuAB-_zPDwseAOm1nC6tJZrId-CTPaCMpBK39k1CnRKdiaZkYHA97ouSnIN3rW_0ucRycfcIeqfP8BiFMhrsMiyU4JM59k0QVHmbB_Ge1PkNkIabiCrue_GPjOymdE082v30iFH5TxX4NnDkmSJ4kNYVFG7SRp9Vrbkd1pvondxx_cGg-N38ddjlAHyPJjRGASjlQTW4PHyO--2pksD_5HJqEmKlvqTGlaEw";
const ISSUER: &str = "https://accounts.example";
const CLIENT: &str = "churn-client";

fn sign(claims: Value, kid: &str) -> String {
    let der = base64::engine::general_purpose::STANDARD
        .decode(TEST_KEY_DER.concat())
        .unwrap();
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, &claims, &EncodingKey::from_rsa_der(&der)).unwrap()
}

/// Serves the test key set; returns its URL and a count of the fetches.
async fn jwks_server() -> (String, Arc<AtomicUsize>) {
    let jwks = json!({"keys": [{"kty": "RSA", "alg": "RS256", "use": "sig", "kid": "k1", "n": TEST_KEY_N, "e": "AQAB"}]});
    let fetches = Arc::new(AtomicUsize::new(0));
    let counted = fetches.clone();
    let app = axum::Router::new().route(
        "/jwks",
        get(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            let jwks = jwks.clone();
            async move { Json(jwks) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, fetches)
}

async fn id_tokens_sign_in_or_create_users(backend: Backend) {
    let unconfigured = TestApp::spawn(backend).await;
    let answer = unconfigured
        .expect(
            unconfigured
                .req(Method::POST, "/auth/idp")
                .json(&json!({"provider": "google", "id_token": "x"})),
            500,
        )
        .await;
    assert_eq!(
        answer["error"]["message"],
        "identity provider is not configured"
    );
    drop(unconfigured);

    let (jwks, fetches) = jwks_server().await;
    let app = TestApp::spawn_with(
        backend,
        Options::default()
            .with("idp_jwks_url", jwks)
            .with("idp_issuer", ISSUER)
            .with("idp_client_id", CLIENT),
    )
    .await;
    let now = chrono::Utc::now().timestamp();
    let claims = |email: &str, verified: Value, aud: &str, iss: &str, exp: i64| json!({"iss": iss, "aud": aud, "sub": "123", "exp": exp, "iat": now, "email": email, "email_verified": verified, "name": "Grace Hopper"});
    let login = |token: String| {
        app.req(Method::POST, "/auth/idp")
            .json(&json!({"provider": "oidc", "id_token": token}))
    };

    let created = app
        .expect(
            login(sign(
                claims("Grace@Navy.example", json!(true), CLIENT, ISSUER, now + 600),
                "k1",
            )),
            200,
        )
        .await;
    assert_eq!(created["data"]["user"]["email"], "grace@navy.example");
    assert_eq!(created["data"]["user"]["name"], "Grace Hopper");
    let me = app.me(created["data"]["token"].as_str().unwrap()).await;
    assert_eq!(me["data"]["subscription"]["status"], "paid");
    // The same person again: the same user, with "true" as a string as some providers send it.
    let again = app
        .expect(
            login(sign(
                claims(
                    "grace@navy.example",
                    json!("true"),
                    CLIENT,
                    ISSUER,
                    now + 600,
                ),
                "k1",
            )),
            200,
        )
        .await;
    assert_eq!(again["data"]["user"]["id"], created["data"]["user"]["id"]);
    // The takeover rule: a password account whose email was never verified belongs to
    // whoever proves the address. The password and every earlier token stop working.
    let ada = app.register("ada@example.com").await;
    let before = app.me(&ada.token).await;
    assert_eq!(before["data"]["email_verified"], false);
    let taken = app
        .expect(
            login(sign(
                claims("ada@example.com", json!(true), CLIENT, ISSUER, now + 600),
                "k1",
            )),
            200,
        )
        .await;
    assert_eq!(taken["data"]["user"]["id"], before["data"]["id"]);
    app.call(&ada.token, Method::GET, "/auth/me", 401).await;
    let password_login = app
        .req(Method::POST, "/auth/login")
        .json(&json!({"email": "ada@example.com", "password": "correct horse"}));
    app.expect(password_login, 401).await;
    let taken_token = taken["data"]["token"].as_str().unwrap();
    let me = app.me(taken_token).await;
    assert_eq!(me["data"]["email_verified"], true);
    // Verified now: signing in through the provider again ends no session.
    app.expect(
        login(sign(
            claims("ada@example.com", json!(true), CLIENT, ISSUER, now + 600),
            "k1",
        )),
        200,
    )
    .await;
    app.me(taken_token).await;

    // An account whose owner verified the address links without losing anything.
    let bob = app.register("bob@example.com").await;
    app.run_jobs().await;
    let mail = app
        .outbox()
        .into_iter()
        .find(|m| m.contains("<bob@example.com>") && m.contains("Confirm your email address"))
        .expect("bob's verification email");
    let token = mail
        .split("verify-email?token=")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    app.expect(
        app.req(Method::POST, "/auth/verify-email")
            .json(&json!({"token": token})),
        200,
    )
    .await;
    app.expect(
        login(sign(
            claims("bob@example.com", json!(true), CLIENT, ISSUER, now + 600),
            "k1",
        )),
        200,
    )
    .await;
    app.me(&bob.token).await;
    app.expect(
        app.req(Method::POST, "/auth/login")
            .json(&json!({"email": "bob@example.com", "password": "correct horse"})),
        200,
    )
    .await;

    for (token, why) in [
        (
            sign(
                claims("x@navy.example", json!(false), CLIENT, ISSUER, now + 600),
                "k1",
            ),
            "unverified email",
        ),
        (
            sign(
                claims(
                    "x@navy.example",
                    json!(true),
                    "someone-else",
                    ISSUER,
                    now + 600,
                ),
                "k1",
            ),
            "wrong audience",
        ),
        (
            sign(
                claims(
                    "x@navy.example",
                    json!(true),
                    CLIENT,
                    "https://evil.example",
                    now + 600,
                ),
                "k1",
            ),
            "wrong issuer",
        ),
        (
            sign(
                claims("x@navy.example", json!(true), CLIENT, ISSUER, now - 10),
                "k1",
            ),
            "expired",
        ),
        (
            sign(
                claims("x@navy.example", json!(true), CLIENT, ISSUER, now + 600),
                "unknown",
            ),
            "unknown key",
        ),
        ("not.a.jwt".to_owned(), "garbage"),
    ] {
        let refused = app.expect(login(token), 401).await;
        assert_eq!(refused["error"]["code"], "UNAUTHORIZED", "{why}");
    }
    // Unknown key ids, however many, fetch the keys again at most once a minute: the first
    // sign-in's fetch is the only one so far.
    for n in 0..5 {
        let token = sign(
            claims("x@navy.example", json!(true), CLIENT, ISSUER, now + 600),
            &format!("rotated-{n}"),
        );
        app.expect(login(token), 401).await;
    }
    assert_eq!(fetches.load(Ordering::SeqCst), 1);
    app.expect(
        app.req(Method::POST, "/auth/idp")
            .json(&json!({"provider": "myspace", "id_token": "x"})),
        400,
    )
    .await;
}
