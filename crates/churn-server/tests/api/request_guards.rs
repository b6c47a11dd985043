//! What every request meets before its route (`middleware::request_guards`): security headers,
//! hostile input refused in the house error shape, early answers that keep the connection
//! usable, bounded metric labels.

use reqwest::Method;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use crate::helpers::{Backend, Options, TestApp, metrics};
use churn_core::both_backends;

both_backends!(
    every_answer_is_nosniff_and_secrets_are_not_cached,
    hostile_input_is_refused_by_name,
    an_early_answer_keeps_the_connection_usable,
    requests_hyper_cannot_parse_are_answered_in_the_house_shape,
    made_up_methods_do_not_grow_metrics,
);

async fn every_answer_is_nosniff_and_secrets_are_not_cached(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options::default().with("rate_limits", "on")).await;
    let huge = "x".repeat(1024 * 1024 + 1);
    for (request, status) in [
        (app.req(Method::GET, "/health"), 200),
        (app.req(Method::GET, "/nowhere"), 404),
        (app.req(Method::DELETE, "/auth/me"), 405),
        (app.req(Method::GET, "/auth/me"), 401),
        (
            app.req(Method::POST, "/auth/register")
                .header("content-type", "application/json")
                .body(huge),
            413,
        ),
    ] {
        let r = request.send().await.unwrap();
        assert_eq!(r.status(), status);
        assert_eq!(r.headers()["x-content-type-options"], "nosniff", "{status}");
    }
    let limited =
        futures::future::join_all((0..40).map(|_| app.req(Method::GET, "/auth/me").send()))
            .await
            .into_iter()
            .map(Result::unwrap)
            .find(|r| r.status() == 429)
            .expect("the burst is refused");
    assert_eq!(limited.headers()["x-content-type-options"], "nosniff");

    let app = TestApp::spawn(backend).await;
    let no_store = |r: &reqwest::Response| {
        r.headers()
            .get("cache-control")
            .is_some_and(|v| v == "no-store")
    };
    let body = json!({"name": "Ada", "email": "ada@example.com", "password": "correct horse"});
    let registered = app
        .req(Method::POST, "/auth/register")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(no_store(&registered));
    let token = registered.json::<serde_json::Value>().await.unwrap()["data"]["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let login = json!({"email": "ada@example.com", "password": "correct horse"});
    let cases = [
        (app.req(Method::POST, "/auth/login").json(&login), true),
        (
            app.req(Method::POST, "/auth/onboarding")
                .bearer_auth(&token),
            true,
        ),
        (
            app.req(Method::POST, "/projects")
                .bearer_auth(&token)
                .json(&json!({"name": "Acme"})),
            true,
        ),
        (
            app.req(Method::GET, "/projects/acme/webhook-secret")
                .bearer_auth(&token),
            true,
        ),
        (
            app.req(Method::POST, "/projects/acme/webhook-secret/rotate")
                .bearer_auth(&token),
            true,
        ),
        (
            app.req(Method::POST, "/projects/acme/rotate-keys")
                .bearer_auth(&token),
            true,
        ),
        (app.req(Method::GET, "/projects").bearer_auth(&token), false),
        (app.req(Method::GET, "/auth/me").bearer_auth(&token), false),
    ];
    for (request, expected) in cases {
        let r = request.send().await.unwrap();
        let url = r.url().path().to_owned();
        assert!(r.status().is_success(), "{url}: {}", r.status());
        assert_eq!(no_store(&r), expected, "{url}");
    }
}

async fn hostile_input_is_refused_by_name(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let s = app.register("ada@example.com").await;
    app.create_project(&s.token, "Acme").await;
    let raw = |method: Method, path: &str, body: &str| {
        app.req(method, path)
            .bearer_auth(&s.token)
            .header("content-type", "application/json")
            .body(body.to_owned())
    };

    let unknown = app
        .expect(
            app.req(Method::POST, "/auth/register").json(
                &json!({"name": "Bo", "email": "bo@example.com", "password": "correct horse", "admin": true}),
            ),
            400,
        )
        .await;
    insta::assert_json_snapshot!("unknown_field", unknown);
    let nested = app
        .expect(
            raw(
                Method::PATCH,
                "/projects/acme",
                r#"{"settings": {"colour": "red"}}"#,
            ),
            400,
        )
        .await;
    assert_eq!(nested["error"]["details"][0]["field"], "settings.colour");
    // serde would read an object's fields from an array, in order; an array is no object.
    for (method, path, body, field) in [
        (
            Method::PATCH,
            "/projects/acme",
            r#"{"settings": []}"#,
            "settings",
        ),
        (
            Method::PUT,
            "/projects/acme/cancel-flow",
            r#"{"reasons": [{"code": "other", "label": "Other"}], "copy": [null, null]}"#,
            "copy",
        ),
        (
            Method::PUT,
            "/projects/acme/cancel-flow",
            r#"{"reasons": [["other", "Other"]]}"#,
            "reasons[0]",
        ),
    ] {
        let array = app.expect(raw(method, path, body), 400).await;
        assert_eq!(array["error"]["details"][0]["field"], field, "{body}");
        let message = array["error"]["details"][0]["message"].as_str().unwrap();
        assert!(
            message.contains("array, expected an object"),
            "{body}: {message}"
        );
    }

    let trailing = app
        .expect(
            raw(Method::POST, "/projects", r#"{"name": "Evil"}garbage"#),
            400,
        )
        .await;
    insta::assert_json_snapshot!("trailing_data", trailing);
    let projects = app.call(&s.token, Method::GET, "/projects", 200).await;
    assert_eq!(
        projects["data"].as_array().unwrap().len(),
        1,
        "nothing created"
    );

    // A NUL in a body, a path or a query: the same 400 on both backends, even unauthenticated.
    let nul_body = app
        .expect(
            app.req(Method::POST, "/auth/register")
                .header("content-type", "application/json")
                .body(r#"{"name": "A\u0000", "email": "nul@example.com", "password": "correct horse"}"#),
            400,
        )
        .await;
    insta::assert_json_snapshot!("nul_in_body", nul_body);
    let nul_path = app
        .call(&s.token, Method::GET, "/projects/a%00b", 400)
        .await;
    insta::assert_json_snapshot!("nul_in_path", nul_path);
    app.call(&s.token, Method::GET, "/churn-events/a%00b", 400)
        .await;
    let nul_query = app
        .call(
            &s.token,
            Method::GET,
            "/projects/acme/churn-events?status=new%00",
            400,
        )
        .await;
    assert_eq!(nul_query["error"]["details"][0]["field"], "status");

    // Numbers out of range are refused, never truncated.
    for page in ["4294967297", "99999999999999999999", "0"] {
        let out = app
            .call(
                &s.token,
                Method::GET,
                &format!("/projects/acme/churn-events?page={page}"),
                400,
            )
            .await;
        assert_eq!(out["error"]["details"][0]["field"], "page", "{page}: {out}");
    }
    let hours = app
        .expect(
            raw(
                Method::POST,
                "/projects/acme/rotate-keys",
                r#"{"expire_old_in_hours": 18446744073709551616}"#,
            ),
            400,
        )
        .await;
    assert_eq!(hours["error"]["details"][0]["field"], "expire_old_in_hours");
    let clock = app
        .expect(
            app.req(Method::POST, "/dev/clock")
                .json(&json!({"advance_seconds": i64::MAX})),
            400,
        )
        .await;
    insta::assert_json_snapshot!("clock_out_of_range", clock);

    // Errors raised outside the handlers keep the house shape too.
    let duplicated = app
        .expect(
            app.client.get(format!(
                "{}/t/token/c?u=https://a.example&u=https://b.example&s=x",
                app.address
            )),
            400,
        )
        .await;
    insta::assert_json_snapshot!("duplicated_query_parameter", duplicated);
    let long = format!("/projects?{}", "q=1&".repeat(3000));
    let too_long = app.call(&s.token, Method::GET, &long, 414).await;
    insta::assert_json_snapshot!("uri_too_long", too_long);
}

/// Writes `request` on a raw connection and reads one HTTP/1.1 answer off it: status, body
/// and headers.
async fn exchange(
    reader: &mut BufReader<tokio::net::TcpStream>,
    request: &[u8],
) -> (u16, String, Vec<String>) {
    reader.get_mut().write_all(request).await.unwrap();
    let mut status_line = String::new();
    reader.read_line(&mut status_line).await.unwrap();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .unwrap_or_else(|| panic!("no status line: {status_line:?}"))
        .parse()
        .unwrap();
    let mut headers = Vec::new();
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).await.unwrap();
        let line = line.trim_end().to_ascii_lowercase();
        if line.is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("content-length:") {
            length = v.trim().parse().unwrap();
        }
        headers.push(line);
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await.unwrap();
    (status, String::from_utf8(body).unwrap(), headers)
}

async fn an_early_answer_keeps_the_connection_usable(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let port = app.address.rsplit(':').next().unwrap();
    let stream = tokio::net::TcpStream::connect(format!("127.0.0.1:{port}"))
        .await
        .unwrap();
    let mut reader = BufReader::new(stream);
    // Refused (401, 404) before any handler reads the body; the body follows the headers.
    let body = format!(r#"{{"name": "{}"}}"#, "x".repeat(64 * 1024));
    for path in ["/api/v1/projects", "/api/v1/nowhere"] {
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let (status, answer, headers) = exchange(&mut reader, request.as_bytes()).await;
        assert!([401, 404].contains(&status), "{status}: {answer}");
        assert!(
            !headers.iter().any(|h| h == "connection: close"),
            "{headers:?}"
        );
    }
    let (status, answer, _) = exchange(
        &mut reader,
        b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n",
    )
    .await;
    assert_eq!(status, 200, "the same connection still serves: {answer}");
}

/// Beyond what the routes see: a target over hyper's 64 KiB, more headers than it takes, and
/// a malformed header line are refused by hyper itself; the answer keeps the house shape.
async fn requests_hyper_cannot_parse_are_answered_in_the_house_shape(backend: Backend) {
    let app = TestApp::spawn_with(backend, Options::default().with("rate_limits", "on")).await;
    let port = app.address.rsplit(':').next().unwrap().to_owned();
    let long_target = format!(
        "GET /api/v1/projects?q={} HTTP/1.1\r\nHost: x\r\n\r\n",
        "a".repeat(70_000)
    );
    // Too many headers is hyper's "too large" too; unlike a huge one it is read whole, so
    // closing after the answer cannot reset the connection before the client reads it.
    let many_headers = format!(
        "GET /health HTTP/1.1\r\nHost: x\r\n{}\r\n",
        (0..200)
            .map(|i| format!("X-H{i}: a\r\n"))
            .collect::<String>()
    );
    let bad_header = "GET /health HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n".to_owned();
    for (request, status, code) in [
        (long_target, 414, "URI_TOO_LONG"),
        (many_headers, 431, "REQUEST_HEADER_FIELDS_TOO_LARGE"),
        (bad_header, 400, "VALIDATION_ERROR"),
    ] {
        let stream = tokio::net::TcpStream::connect(format!("127.0.0.1:{port}"))
            .await
            .unwrap();
        let mut reader = BufReader::new(stream);
        // A healthy request first: the rewrite must not touch answers before it.
        assert_eq!(
            exchange(&mut reader, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                .await
                .0,
            200
        );
        let (got, body, headers) = exchange(&mut reader, request.as_bytes()).await;
        assert_eq!(got, status, "{body}");
        let body: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["error"]["code"], code, "{body}");
        for name in ["x-request-id", "x-ratelimit-remaining", "connection: close"] {
            assert!(
                headers.iter().any(|h| h.starts_with(name)),
                "{name} missing: {headers:?}"
            );
        }
        assert!(headers.contains(&"x-content-type-options: nosniff".to_owned()));
        assert!(headers.contains(&"content-type: application/json".to_owned()));
    }
}

async fn made_up_methods_do_not_grow_metrics(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    for m in ["AAAA1", "AAAA2"] {
        let method = Method::from_bytes(m.as_bytes()).unwrap();
        app.req(method, "/health").send().await.unwrap();
    }
    let metrics = metrics(&app).await;
    assert!(!metrics.contains("AAAA"), "{metrics}");
    assert!(metrics.contains(r#"method="OTHER""#), "{metrics}");
}
