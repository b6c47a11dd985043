//! A loopback fake of a payment provider's API over HTTPS (tenant URLs must be https): a
//! TLS front, with a certificate from a fresh test CA, forwarding every request to a
//! wiremock server where tests set answers and read what was received.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::IntoResponse;
use wiremock::MockServer;

pub struct FakeProvider {
    pub mock: MockServer,
    /// `https://localhost:<port>`: the `api_base` or `retry_url` host to configure.
    pub base: String,
    /// The test CA, for `extra_ca_file`.
    pub ca_file: tempfile::NamedTempFile,
}

impl FakeProvider {
    /// From now on answers POSTs to `at` with `template`, and nothing else.
    pub async fn answer(&self, at: &str, template: wiremock::ResponseTemplate) {
        use wiremock::matchers::{method, path};
        self.mock.reset().await;
        wiremock::Mock::given(method("POST"))
            .and(path(at))
            .respond_with(template)
            .mount(&self.mock)
            .await;
    }

    /// Answers the next POST to `at` with `template`; later ones get what was mounted before.
    pub async fn answer_once(&self, at: &str, template: wiremock::ResponseTemplate) {
        use wiremock::matchers::{method, path};
        wiremock::Mock::given(method("POST"))
            .and(path(at))
            .respond_with(template)
            .up_to_n_times(1)
            .mount(&self.mock)
            .await;
    }

    /// Every request received so far, in order.
    pub async fn received(&self) -> Vec<wiremock::Request> {
        self.mock.received_requests().await.unwrap()
    }
}

/// The header `name` of a received request, which must carry it.
pub fn header(request: &wiremock::Request, name: &str) -> String {
    request
        .headers
        .get(name)
        .unwrap_or_else(|| panic!("{name} is sent"))
        .to_str()
        .unwrap()
        .to_owned()
}

/// The Standard Webhooks signature of a received request, checked with the SDK under `secret`
/// at `now` (Unix seconds).
pub fn verify_standard(
    request: &wiremock::Request,
    secret: &str,
    now: i64,
) -> Result<(), churn_sdk::webhooks::VerifyError> {
    churn_sdk::webhooks::verify_standard(
        secret,
        &header(request, "webhook-id"),
        &header(request, "webhook-timestamp"),
        &header(request, "webhook-signature"),
        &request.body,
        now,
    )
}

async fn forward(
    State(target): State<(reqwest::Client, String)>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> impl IntoResponse {
    let (client, base) = target;
    let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let mut request = client.request(method, format!("{base}{path}")).body(body);
    for (name, value) in &headers {
        if name != "host" && name != "content-length" {
            request = request.header(name, value);
        }
    }
    let answer = request.send().await.unwrap();
    let status = StatusCode::from_u16(answer.status().as_u16()).unwrap();
    let content_type = answer
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_else(|| "application/json".into());
    let body = answer.bytes().await.unwrap();
    (status, [("content-type", content_type)], body)
}

pub async fn start() -> FakeProvider {
    start_for(&["localhost"]).await
}

/// A fake whose certificate holds these names (the first one goes into `base`).
pub async fn start_for(names: &[&str]) -> FakeProvider {
    use rcgen::{
        BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose,
        IsCa, KeyPair, KeyUsagePurpose,
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mock = MockServer::start().await;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "churn provider fake CA");
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    let mut leaf_params = CertificateParams::new(names.clone()).unwrap();
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
    let port = listener.local_addr().unwrap().port();
    let app = axum::Router::new()
        .fallback(forward)
        // 3xx answers pass through as they are: the caller decides about redirects.
        .with_state((
            reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            mock.uri(),
        ));
    let server = axum_server::from_tcp_rustls(listener, tls).unwrap();
    tokio::spawn(async move { server.serve(app.into_make_service()).await });
    let ca_file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(ca_file.path(), ca.pem()).unwrap();
    FakeProvider {
        mock,
        base: format!("https://{}:{port}", names[0]),
        ca_file,
    }
}
