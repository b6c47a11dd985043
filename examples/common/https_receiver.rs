//! What the webhook examples share: an HTTPS receiver on a free loopback port, serving the
//! certificate `ALERTS_TLS_CERT` with key `ALERTS_TLS_KEY` (PEM, for `localhost`), and the
//! small reads a signature check needs.

use axum::http::HeaderMap;

/// Serves `app` over HTTPS on a free loopback port; answers `https://localhost:<port>`.
pub async fn serve(app: axum::Router) -> Result<String, Box<dyn std::error::Error>> {
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

/// A header's value, empty when missing or not text.
pub fn header(headers: &HeaderMap, name: &str) -> String {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// Seconds since the Unix epoch, for the signatures' timestamp tolerance.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
