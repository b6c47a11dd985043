//! The outbound client against real servers on loopback: hostile tenant URLs refused, DNS
//! rebinding refused at connect time, allow-private, no redirects, the body cap, the
//! User-Agent, extra roots for HTTPS, and the cap on concurrent LLM calls.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Json;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use churn_core::domain::strategy::Strategy;
use churn_core::generation::llm::{LlmGenerator, MAX_CONCURRENT_CALLS};
use churn_core::generation::{EmailContext, Generator, GeneratorKind};
use churn_core::outbound::{
    Outbound, OutboundError, Settings, StaticResolver, TargetError, USER_AGENT, load_roots,
};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use serde_json::{Value, json};

const PUBLIC: IpAddr = IpAddr::V4(Ipv4Addr::new(93, 184, 216, 34));
const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// A receiver that counts the requests reaching `/hook`.
fn receiver(hits: Arc<AtomicUsize>) -> axum::Router {
    axum::Router::new()
        .route(
            "/hook",
            get(move || {
                hits.fetch_add(1, Ordering::SeqCst);
                async { "received" }
            }),
        )
        .route(
            "/ua",
            get(|headers: HeaderMap| async move {
                headers[header::USER_AGENT].to_str().unwrap().to_owned()
            }),
        )
        .route(
            "/redirect",
            get(|| async { (StatusCode::FOUND, [(header::LOCATION, "/hook")]) }),
        )
        .route("/big", get(|| async { vec![b'x'; 64 * 1024] }))
        .route(
            "/stream",
            get(|| async {
                let chunks = futures::stream::iter(
                    (0..64).map(|_| Ok::<_, std::io::Error>(vec![b'y'; 1024])),
                );
                axum::body::Body::from_stream(chunks).into_response()
            }),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                "late"
            }),
        )
}

async fn http_server(app: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// An HTTPS server whose certificate (for `names`) a fresh test CA signed; returns its
/// address and the CA's PEM.
async fn https_server(app: axum::Router, names: &[&str]) -> (SocketAddr, String) {
    use rcgen::{
        BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose,
        IsCa, KeyPair, KeyUsagePurpose,
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "churn test CA");
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let mut leaf_params =
        CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    leaf_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let leaf = leaf_params.signed_by(&leaf_key, &*ca).unwrap();
    let tls = axum_server::tls_rustls::RustlsConfig::from_pem(
        leaf.pem().into_bytes(),
        leaf_key.serialize_pem().into_bytes(),
    )
    .await
    .unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let server = axum_server::from_tcp_rustls(listener, tls).unwrap();
    tokio::spawn(async move { server.serve(app.into_make_service()).await });
    (addr, ca.pem())
}

fn roots(ca_pem: &str) -> Vec<reqwest::Certificate> {
    reqwest::Certificate::from_pem_bundle(ca_pem.as_bytes()).unwrap()
}

#[tokio::test]
async fn hostile_tenant_urls_are_refused() {
    let outbound = Outbound::new(Settings {
        resolver: Arc::new(
            StaticResolver::new()
                .with("localhost", LOOPBACK)
                .with("internal.example", "10.0.0.7".parse().unwrap())
                .with("mixed.example", PUBLIC)
                .with("mixed.example", "192.168.0.9".parse().unwrap())
                .with("hooks.example", PUBLIC),
        ),
        ..Settings::new()
    })
    .unwrap();
    let hostile = [
        ("http://hooks.example/hook", TargetError::NotHttps),
        ("ftp://hooks.example/hook", TargetError::NotHttps),
        ("https://127.0.0.1/hook", TargetError::NotPublic),
        ("https://localhost/hook", TargetError::NotPublic),
        ("https://api.localhost/hook", TargetError::NotPublic),
        ("https://10.1.2.3/hook", TargetError::NotPublic),
        ("https://172.16.0.1/hook", TargetError::NotPublic),
        ("https://172.31.255.254/hook", TargetError::NotPublic),
        ("https://192.168.1.1/hook", TargetError::NotPublic),
        (
            "https://169.254.169.254/latest/meta-data",
            TargetError::NotPublic,
        ),
        ("https://100.64.0.1/hook", TargetError::NotPublic),
        ("https://[::1]/hook", TargetError::NotPublic),
        ("https://[::ffff:127.0.0.1]/hook", TargetError::NotPublic),
        ("https://[::ffff:a9fe:a9fe]/hook", TargetError::NotPublic),
        ("https://[fc00::1]/hook", TargetError::NotPublic),
        ("https://[fe80::1]/hook", TargetError::NotPublic),
        ("https://0.0.0.0/hook", TargetError::NotPublic),
        ("https://224.0.0.1/hook", TargetError::NotPublic),
        // The URL parser normalises decimal, octal, hex and short forms to 127.0.0.1.
        ("https://2130706433/hook", TargetError::NotPublic),
        ("https://017700000001/hook", TargetError::NotPublic),
        ("https://0x7f.0.0.1/hook", TargetError::NotPublic),
        ("https://127.1/hook", TargetError::NotPublic),
        ("https://internal.example/hook", TargetError::NotPublic),
        ("https://mixed.example/hook", TargetError::NotPublic),
        ("not a url", TargetError::Invalid),
    ];
    for (url, why) in hostile {
        assert_eq!(
            outbound.check_tenant_url(url).await.err(),
            Some(why),
            "{url}"
        );
        // Called anyway (a URL stored before the check existed), it never leaves either;
        // mixed.example keeps a public address to connect to.
        if why == TargetError::NotPublic && !url.contains("mixed.example") {
            let called = outbound.tenant().get(url).send().await;
            assert!(
                matches!(called, Err(OutboundError::Refused(_))),
                "{url}: {called:?}"
            );
        }
    }
    for url in [
        "https://hooks.example/hook",
        "https://93.184.216.34/hook",
        // Not resolvable now: accepted, and checked again on every call.
        "https://unknown.example/hook",
    ] {
        assert!(outbound.check_tenant_url(url).await.is_ok(), "{url}");
    }
    let field = TargetError::NotPublic.for_field("webhook_url");
    assert!(field.to_string().starts_with("webhook_url "), "{field}");
}

/// Answers a public address the first time a name is looked up, loopback afterwards.
struct Rebinding {
    lookups: AtomicUsize,
}

impl Resolve for Rebinding {
    fn resolve(&self, _: Name) -> Resolving {
        let first = self.lookups.fetch_add(1, Ordering::SeqCst) == 0;
        let ip = if first { PUBLIC } else { LOOPBACK };
        Box::pin(async move { Ok(Box::new(std::iter::once(SocketAddr::new(ip, 0))) as Addrs) })
    }
}

#[tokio::test]
async fn dns_rebinding_is_refused_at_connect_time_unless_private_is_allowed() {
    let hits = Arc::new(AtomicUsize::new(0));
    let (addr, ca) = https_server(receiver(hits.clone()), &["rebind.example"]).await;
    let url = format!("https://rebind.example:{}/hook", addr.port());
    let strict = Outbound::new(Settings {
        extra_roots: roots(&ca),
        resolver: Arc::new(Rebinding {
            lookups: AtomicUsize::new(0),
        }),
        ..Settings::new()
    })
    .unwrap();
    strict
        .check_tenant_url(&url)
        .await
        .expect("the name looked public when checked");
    let called = strict.tenant().get(&url).send().await;
    assert!(
        matches!(called, Err(OutboundError::Refused(_))),
        "{called:?}"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 0);

    // The same receiver is reached when private addresses are allowed.
    let open = Outbound::new(Settings {
        extra_roots: roots(&ca),
        allow_private: true,
        resolver: Arc::new(StaticResolver::new().with("rebind.example", LOOPBACK)),
        ..Settings::new()
    })
    .unwrap();
    open.check_tenant_url(&url).await.unwrap();
    let answer = open.tenant().get(&url).send().await.unwrap();
    assert_eq!(answer.body, b"received");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    // So is a loopback literal.
    let literal = format!("https://127.0.0.1:{}/hook", addr.port());
    open.check_tenant_url(&literal).await.unwrap();
}

#[tokio::test]
async fn calls_follow_no_redirect_cap_bodies_time_out_and_say_who_they_are() {
    let hits = Arc::new(AtomicUsize::new(0));
    let addr = http_server(receiver(hits.clone())).await;
    let outbound = Outbound::new(Settings::new()).unwrap();
    let http = outbound.operator();
    let url = |path: &str| format!("http://{addr}{path}");

    let redirected = http.get(&url("/redirect")).send().await;
    match redirected {
        Err(OutboundError::Status { status, .. }) => assert_eq!(status, StatusCode::FOUND),
        other => panic!("{other:?}"),
    }
    assert_eq!(hits.load(Ordering::SeqCst), 0, "the redirect was followed");

    let ua = http.get(&url("/ua")).send().await.unwrap();
    assert_eq!(String::from_utf8(ua.body).unwrap(), USER_AGENT);
    assert!(USER_AGENT.starts_with("churn/"));

    for path in ["/big", "/stream"] {
        let capped = http.get(&url(path)).max_body(16 * 1024).send().await;
        assert!(
            matches!(capped, Err(OutboundError::TooLarge { limit: 16384 })),
            "{path}: {capped:?}"
        );
        let whole = http
            .get(&url(path))
            .max_body(64 * 1024)
            .send()
            .await
            .unwrap();
        assert_eq!(whole.body.len(), 64 * 1024, "{path}");
    }

    let slow = http
        .get(&url("/slow"))
        .timeout(Duration::from_millis(200))
        .send()
        .await;
    assert!(matches!(slow, Err(OutboundError::Timeout)), "{slow:?}");

    // The tenant client refuses the loopback receiver that the operator client reaches.
    let tenant = outbound.tenant().get(&url("/hook")).send().await;
    assert!(
        matches!(tenant, Err(OutboundError::Refused(_))),
        "{tenant:?}"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn https_receivers_are_trusted_through_the_extra_ca_file() {
    let hits = Arc::new(AtomicUsize::new(0));
    let (addr, ca) = https_server(receiver(hits.clone()), &["localhost"]).await;
    let url = format!("https://localhost:{}/hook", addr.port());

    let without = Outbound::new(Settings::new()).unwrap();
    let refused = without.operator().get(&url).send().await;
    assert!(refused.is_err(), "an unknown CA must not be trusted");
    assert_eq!(hits.load(Ordering::SeqCst), 0);

    // The file may hold several certificates; the test CA is the second.
    let dir = tempfile::tempdir().unwrap();
    let other = rcgen::generate_simple_self_signed(vec!["other.example".to_owned()]).unwrap();
    let file = dir.path().join("roots.pem");
    std::fs::write(&file, format!("{}\n{ca}", other.cert.pem())).unwrap();
    let with = Outbound::new(Settings {
        extra_roots: load_roots(&file).unwrap(),
        ..Settings::new()
    })
    .unwrap();
    let answer = with.operator().get(&url).send().await.unwrap();
    assert_eq!(answer.body, b"received");

    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "no certificates here").unwrap();
    assert!(
        load_roots(&empty)
            .unwrap_err()
            .contains("no PEM certificate")
    );
    assert!(load_roots(&dir.path().join("missing.pem")).is_err());
}

#[tokio::test]
async fn llm_calls_in_flight_are_capped() {
    let in_flight = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (flight, top) = (in_flight.clone(), peak.clone());
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        post(move |Json(_): Json<Value>| {
            let (flight, top) = (flight.clone(), top.clone());
            async move {
                let now = flight.fetch_add(1, Ordering::SeqCst) + 1;
                top.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(300)).await;
                flight.fetch_sub(1, Ordering::SeqCst);
                let content = json!({"subject": "Hello", "body": "Hi Dana,\n\nA note.\n\nAcme"});
                Json(json!({"choices": [{"message": {"content": content.to_string()}}]}))
            }
        }),
    );
    let addr = http_server(app).await;
    let outbound = Outbound::new(Settings::new()).unwrap();
    let llm = LlmGenerator::new(
        outbound.operator().clone(),
        &format!("http://{addr}/v1"),
        None,
        "test-model".into(),
        Duration::from_secs(20),
    );
    let ctx = context();
    // Two generations at once: eighteen calls.
    let drafts = futures::future::join_all(
        (0..2 * Strategy::ALL.len()).map(|i| llm.generate(&ctx, Strategy::ALL[i % 9])),
    )
    .await;
    for draft in drafts {
        assert_eq!(draft.unwrap().generator, GeneratorKind::Llm);
    }
    let peak = peak.load(Ordering::SeqCst);
    assert!(
        (2..=MAX_CONCURRENT_CALLS).contains(&peak),
        "peak {peak} in flight"
    );
}

fn context() -> EmailContext {
    EmailContext {
        first_name: "Dana".into(),
        customer_email: "dana@northwind.example".into(),
        product: "Acme".into(),
        plan: "the Pro plan".into(),
        founder: "The Acme team".into(),
        founder_first: "the founder".into(),
        founder_name: None,
        support_email: "support@acme.io".into(),
        product_url: None,
        reactivation_url: None,
        tenure: None,
        mrr: None,
        discounted_price: None,
        downgrade_price: None,
        discount_percent: 20,
        discount_months: 3,
        coupon_code: Some("WINBACK20-ABCDEF".into()),
        pause_months: 3,
        reason_code: "other".into(),
        reason: None,
        testimonials: Vec::new(),
        features: Vec::new(),
        payment_failed: false,
        language: "en".into(),
    }
}
