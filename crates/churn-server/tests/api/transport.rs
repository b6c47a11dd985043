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

async fn rate_limit_headers_and_429(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options::default().with("rate_limits", "on")).await;
    let mut remaining = Vec::new();
    for _ in 0..30 {
        let r = app.req(Method::GET, "/auth/me").send().await.unwrap();
        assert_eq!(r.status(), 401);
        assert_eq!(r.headers()["x-ratelimit-limit"], "30");
        assert!(r.headers().contains_key("x-ratelimit-reset"));
        remaining.push(
            r.headers()["x-ratelimit-remaining"]
                .to_str()
                .unwrap()
                .parse::<u32>()
                .unwrap(),
        );
    }
    assert_eq!(remaining.first(), Some(&29));
    assert!(remaining.windows(2).all(|w| w[1] <= w[0]), "{remaining:?}");
    let limited = app.req(Method::GET, "/health").send().await.unwrap();
    assert_eq!(limited.status(), 429);
    assert_eq!(limited.headers()["x-ratelimit-remaining"], "0");
    let retry_after: u64 = limited.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (1..=1).contains(&retry_after),
        "one token refills in 100 ms: {retry_after}"
    );
    let body: serde_json::Value = limited.json().await.unwrap();
    insta::assert_json_snapshot!("rate_limited", body);
}

async fn credential_routes_have_the_stricter_limit(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options::default().with("rate_limits", "on")).await;
    // A body the route refuses before hashing anything, so the burst is sent faster than it refills.
    let login = || {
        app.req(Method::POST, "/auth/login")
            .json(&json!({"email": "x@example.com"}))
    };
    for _ in 0..10 {
        let r = login().send().await.unwrap();
        assert_eq!(r.status(), 400);
        assert_eq!(r.headers()["x-ratelimit-limit"], "10");
    }
    let limited = login().send().await.unwrap();
    assert_eq!(limited.status(), 429);
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

async fn plain_http_is_refused_unless_allowed(backend: Backend) {
    let app = TestApp::spawn_with(
        backend,
        Options::default()
            .with("allow_http", false)
            .with("trusted_proxies", "10.0.0.0/8"),
    )
    .await;
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

    let proxied = TestApp::spawn_with(
        backend,
        Options::default()
            .with("allow_http", false)
            .with("trusted_proxies", "127.0.0.1"),
    )
    .await;
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
    app.expect(app.req(Method::GET, "/auth/me").bearer_auth(&s.token), 200)
        .await;
    // Plain HTTP on the TLS port does not get an answer.
    let plain = app.address.replace("https://", "http://");
    assert!(
        reqwest::get(format!("{plain}/health"))
            .await
            .map(|r| !r.status().is_success())
            .unwrap_or(true)
    );
}
