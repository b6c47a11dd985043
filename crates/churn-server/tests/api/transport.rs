use reqwest::Method;
use serde_json::json;

use crate::helpers::{Backend, Options, TestApp};
use churn_core::both_backends;

both_backends!(
    rate_limit_headers_and_429,
    credential_routes_have_the_stricter_limit,
    plain_http_is_refused_unless_allowed,
    tls_is_served_with_hsts,
);

/// Sends `n` requests at once so the burst is spent faster than tokens refill (one per 100 ms
/// for the general bucket, one per 200 ms for credential routes).
async fn burst(n: usize, make: impl Fn() -> reqwest::RequestBuilder) -> Vec<reqwest::Response> {
    futures::future::join_all((0..n).map(|_| make().send()))
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect()
}

fn header(r: &reqwest::Response, name: &str) -> u64 {
    r.headers()[name].to_str().unwrap().parse().unwrap()
}

async fn rate_limit_headers_and_429(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options::default().with("rate_limits", "on")).await;
    // Headers on every kind of answer.
    let s = app.register("ada@example.com").await;
    for (request, status) in [
        (app.req(Method::GET, "/nowhere"), 404),
        (app.req(Method::DELETE, "/auth/me"), 405),
        (
            app.req(Method::POST, "/projects")
                .bearer_auth(&s.token)
                .json(&json!({"name": "Acme"})),
            201,
        ),
        (app.req(Method::GET, "/health"), 200),
    ] {
        let r = request.send().await.unwrap();
        assert_eq!(r.status(), status);
        assert_eq!(header(&r, "x-ratelimit-limit"), 30);
        assert!(header(&r, "x-ratelimit-remaining") < 30);
        assert!(header(&r, "x-ratelimit-reset") >= 1);
    }

    let answers = burst(40, || app.req(Method::GET, "/auth/me")).await;
    let served = answers.iter().filter(|r| r.status() != 429).count();
    assert!(
        (25..=30).contains(&served),
        "30 tokens, 5 spent above, a few refilled: {served} served"
    );
    assert!(answers.iter().all(|r| header(r, "x-ratelimit-limit") == 30));
    let refused = answers
        .into_iter()
        .find(|r| r.status() == 429)
        .expect("the burst is refused");
    assert_eq!(header(&refused, "x-ratelimit-remaining"), 0);
    assert_eq!(
        header(&refused, "retry-after"),
        1,
        "one token refills within 100 ms"
    );
    let body: serde_json::Value = refused.json().await.unwrap();
    insta::assert_json_snapshot!("rate_limited", body);
}

async fn credential_routes_have_the_stricter_limit(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options::default().with("rate_limits", "on")).await;
    // A body the route refuses before hashing anything.
    let answers = burst(20, || {
        app.req(Method::POST, "/auth/login")
            .json(&json!({"email": "x@example.com"}))
    })
    .await;
    let served = answers.iter().filter(|r| r.status() == 400).count();
    assert!((10..=12).contains(&served), "burst of 10: {served} served");
    assert!(answers.iter().any(|r| r.status() == 429));
    assert!(answers.iter().all(|r| header(r, "x-ratelimit-limit") == 10));
    // The general bucket is separate.
    assert_eq!(
        app.req(Method::GET, "/health")
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
}

/// A production server (not in dev mode) that requires HTTPS, trusting the proxies in
/// `trusted_proxies` to say whether the browser came over it.
async fn https_only(backend: Backend, trusted_proxies: &str) -> TestApp {
    TestApp::spawn_with(
        backend,
        Options::default()
            .with("allow_http", false)
            .with("dev_mode", false)
            .with("trusted_proxies", trusted_proxies),
    )
    .await
}

async fn plain_http_is_refused_unless_allowed(backend: Backend) {
    let app = https_only(backend, "10.0.0.0/8").await;
    let refused = app.expect(app.req(Method::GET, "/auth/me"), 403).await;
    assert_eq!(refused["error"]["message"], "HTTPS is required");
    // Forwarded-Proto counts only from a trusted proxy; this peer (loopback) is not one.
    app.expect(
        app.req(Method::GET, "/auth/me")
            .header("x-forwarded-proto", "https"),
        403,
    )
    .await;
    // Probes stay reachable.
    app.expect(app.req(Method::GET, "/health"), 200).await;
    drop(app);

    let proxied = https_only(backend, "127.0.0.1").await;
    let r = proxied
        .req(Method::GET, "/auth/me")
        .header("x-forwarded-proto", "https")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401, "served: the proxy terminated TLS");
    assert!(r.headers().contains_key("strict-transport-security"));
    proxied
        .expect(proxied.req(Method::GET, "/auth/me"), 403)
        .await;
}

async fn tls_is_served_with_hsts(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let cert_path = dir.path().join("cert.pem");
    let key_path = dir.path().join("key.pem");
    std::fs::write(&cert_path, cert.cert.pem()).unwrap();
    std::fs::write(&key_path, cert.signing_key.serialize_pem()).unwrap();
    let app = TestApp::spawn_with(
        backend,
        Options::default()
            .with("tls_cert", cert_path.display().to_string())
            .with("tls_key", key_path.display().to_string())
            .with("allow_http", false),
    )
    .await;
    assert!(app.address.starts_with("https://"));
    let r = app.req(Method::GET, "/health").send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.headers()["strict-transport-security"],
        "max-age=31536000; includeSubDomains"
    );
    let s = app.register("ada@example.com").await;
    app.me(&s.token).await;
    // Plain HTTP on the TLS port does not get an answer.
    let plain = app.address.replace("https://", "http://");
    assert!(
        reqwest::get(format!("{plain}/health"))
            .await
            .map(|r| !r.status().is_success())
            .unwrap_or(true)
    );
}
