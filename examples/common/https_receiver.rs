//! What the webhook examples share: an HTTPS receiver on a free loopback port, serving the
//! certificate `ALERTS_TLS_CERT` with key `ALERTS_TLS_KEY` (PEM, for `localhost`), that
//! verifies each delivery's raw bytes with the example's own check before they are parsed.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use tokio::sync::{Mutex, mpsc};

/// One delivery as it arrived, with the secret to verify it with and the time now.
pub struct Delivery<'a> {
    pub secret: &'a str,
    headers: &'a HeaderMap,
    pub body: &'a [u8],
    /// Seconds since the Unix epoch, for the signatures' timestamp tolerance.
    pub now: i64,
}

impl Delivery<'_> {
    /// A header's value, empty when missing or not text.
    pub fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    }
}

/// An example's check of one delivery: its signatures, then its payload; the error says what
/// did not verify.
pub type Verify<T> = fn(&Delivery<'_>) -> Result<T, String>;

/// The secret to verify with (empty until the example has it), the check, and where each
/// verdict goes.
struct Receiver<T> {
    secret: Arc<Mutex<String>>,
    verify: Verify<T>,
    verdicts: mpsc::Sender<Result<T, String>>,
}

/// Each delivery is answered 200 when it verifies and 400 when not; either way its verdict
/// is passed on.
async fn receive<T: Send + 'static>(
    State(receiver): State<Arc<Receiver<T>>>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, &'static str) {
    let secret = receiver.secret.lock().await.clone();
    let verdict = (receiver.verify)(&Delivery {
        secret: &secret,
        headers: &headers,
        body: &body,
        now: unix_now(),
    });
    let answer = match verdict {
        Ok(_) => (StatusCode::OK, "received"),
        Err(_) => (StatusCode::BAD_REQUEST, "refused"),
    };
    let _ = receiver.verdicts.send(verdict).await;
    answer
}

/// Receives deliveries at `path`, checked with `verify`; answers the URL to configure, the
/// secret to set once the server has given it, and the verdicts.
pub async fn listen<T: Send + 'static>(
    path: &str,
    verify: Verify<T>,
) -> Result<
    (
        String,
        Arc<Mutex<String>>,
        mpsc::Receiver<Result<T, String>>,
    ),
    Box<dyn std::error::Error>,
> {
    let secret = Arc::new(Mutex::new(String::new()));
    let (sender, verdicts) = mpsc::channel(8);
    let receiver = Arc::new(Receiver {
        secret: secret.clone(),
        verify,
        verdicts: sender,
    });
    let app = axum::Router::new()
        .route(path, axum::routing::post(receive::<T>))
        .with_state(receiver);
    let url = format!("{}{path}", serve(app).await?);
    Ok((url, secret, verdicts))
}

/// The next verified delivery, waiting at most 60 seconds; `what` names it in the error.
pub async fn next<T>(
    verdicts: &mut mpsc::Receiver<Result<T, String>>,
    what: &str,
) -> Result<T, Box<dyn std::error::Error>> {
    let verdict = tokio::time::timeout(Duration::from_secs(60), verdicts.recv())
        .await
        .map_err(|_| format!("no {what} arrived within 60 seconds"))?
        .ok_or("the receiver stopped")?;
    Ok(verdict?)
}

/// Serves `app` over HTTPS on a free loopback port; answers `https://localhost:<port>`.
async fn serve(app: axum::Router) -> Result<String, Box<dyn std::error::Error>> {
    let cert = std::env::var("ALERTS_TLS_CERT").map_err(|_| "set ALERTS_TLS_CERT")?;
    let key = std::env::var("ALERTS_TLS_KEY").map_err(|_| "set ALERTS_TLS_KEY")?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let tls = axum_server::tls_rustls::RustlsConfig::from_pem_file(cert, key).await?;
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let port = listener.local_addr()?.port();
    let server = axum_server::from_tcp_rustls(listener, tls)?;
    tokio::spawn(async move { server.serve(app.into_make_service()).await });
    Ok(format!("https://localhost:{port}"))
}

/// Seconds since the Unix epoch, for the signatures' timestamp tolerance.
fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
