//! Building and running the server. `Application::build` takes a config and an already bound
//! listener, so tests and benchmarks start it on port 0 in-process.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::ServiceExt;
use axum::serve::ListenerExt;
use axum_server::tls_rustls::RustlsConfig;
use churn_core::config::{Config, LogFormat};
use churn_core::services::Churn;
use churn_core::time::{Clock, SystemClock, TestClock};
use tokio_util::sync::CancellationToken;

use crate::limits::RateLimits;
use crate::metrics::Metrics;
use crate::middleware::network::Network;
use crate::state::AppState;

pub struct Application {
    listener: std::net::TcpListener,
    addr: SocketAddr,
    service: crate::routes::HttpService,
    tls: Option<RustlsConfig>,
    limits: Option<Arc<RateLimits>>,
    state: AppState,
}

impl Application {
    /// Opens the database (migrating it), loads keys, settles sends a previous run left
    /// unfinished where the outbox tells their outcome, and assembles the routes.
    pub async fn build(
        mut config: Config,
        listener: std::net::TcpListener,
    ) -> anyhow::Result<Self> {
        // Several crates link rustls; name the provider once so none has to guess.
        let _ = rustls::crypto::ring::default_provider().install_default();
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        // Links in emails point at the address actually bound (port 0 picks one) unless told otherwise.
        if config.public_url.is_none() {
            let scheme = if config.tls_enabled() {
                "https"
            } else {
                "http"
            };
            config.public_url = Some(format!("{scheme}://{addr}"));
        }
        crate::startup::announce(&config);
        // Before the database: a start refused here leaves no file behind.
        let tls = match (&config.tls_cert, &config.tls_key) {
            (Some(cert), Some(key)) => Some(
                RustlsConfig::from_pem_file(cert, key)
                    .await
                    .with_context(|| {
                        format!(
                            "CHURN_TLS_CERT/CHURN_TLS_KEY: cannot load {}",
                            cert.display()
                        )
                    })?,
            ),
            _ => None,
        };
        let test_clock = config.dev_mode.then(TestClock::default);
        let clock: Arc<dyn Clock> = match &test_clock {
            Some(clock) => Arc::new(clock.clone()),
            None => Arc::new(SystemClock),
        };
        let churn = Churn::open(&config, clock)
            .await
            .context("opening the database")?;
        let claims = churn
            .sending()
            .settle_claims()
            .await
            .context("settling sends left unfinished")?;
        if claims.sent + claims.released > 0 {
            tracing::info!(
                sent = claims.sent,
                not_sent = claims.released,
                "settled sends left unfinished by a previous run from the email outbox"
            );
        }
        if claims.left > 0 {
            tracing::warn!(
                stuck = claims.left,
                "sends of an earlier run have no recorded outcome; see `churn variants stuck`"
            );
        }
        let network = Arc::new(Network {
            trusted_proxies: config.trusted_proxies.clone(),
            tls: tls.is_some(),
            allow_http: config.allow_http(),
        });
        let limits = config.rate_limits.then(|| Arc::new(RateLimits::new()));
        let metrics = Arc::new(Metrics::new(churn.local().metrics()));
        let state = AppState {
            churn,
            config: Arc::new(config),
            metrics,
            test_clock,
        };
        let service = crate::routes::service(state.clone(), network, limits.clone());
        Ok(Self {
            listener,
            addr,
            service,
            tls,
            limits,
            state,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The dev-mode test clock, when dev mode is on.
    pub fn test_clock(&self) -> Option<TestClock> {
        self.state.test_clock.clone()
    }

    /// Serves until `shutdown` completes, then drains in-flight requests.
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let token = CancellationToken::new();
        if let Some(limits) = self.limits.clone() {
            let token = token.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_secs(60));
                loop {
                    tokio::select! {
                        _ = token.cancelled() => break,
                        _ = tick.tick() => limits.sweep(),
                    }
                }
            });
        }
        // In dev mode time only moves when told, and due jobs run on `/dev/jobs/run`.
        let worker = self.state.test_clock.is_none().then(|| {
            churn_core::jobs::spawn_worker(
                self.state
                    .churn
                    .job_runner()
                    .with_concurrency(self.state.config.job_concurrency),
                token.clone(),
                // Polled this often when nothing is due, so that an email enqueued by a
                // request leaves well within a second.
                Duration::from_millis(250),
            )
        });
        let service = self.service;
        let served = match self.tls {
            None => {
                let listener = crate::connection::Listener::new(
                    tokio::net::TcpListener::from_std(self.listener)?,
                    self.limits.clone(),
                )
                // An empty tap: axum passes the peer address to `ConnectInfo` for `TapIo`.
                .tap_io(|_| {});
                axum::serve(
                    listener,
                    service.into_make_service_with_connect_info::<SocketAddr>(),
                )
                .with_graceful_shutdown(shutdown)
                .await
                .map_err(anyhow::Error::from)
            }
            Some(tls) => {
                let handle = axum_server::Handle::new();
                let stopper = handle.clone();
                tokio::spawn(async move {
                    shutdown.await;
                    stopper.graceful_shutdown(Some(Duration::from_secs(10)));
                });
                let limits = self.limits.clone();
                // axum-server hands over hyper's own body type.
                let service = tower::ServiceExt::map_request(
                    service,
                    |req: axum::http::Request<hyper::body::Incoming>| {
                        req.map(axum::body::Body::new)
                    },
                );
                axum_server::from_tcp_rustls(self.listener, tls)?
                    .map(|tls| crate::connection::Acceptor::new(tls, limits))
                    .handle(handle)
                    .serve(service.into_make_service_with_connect_info::<SocketAddr>())
                    .await
                    .map_err(anyhow::Error::from)
            }
        };
        token.cancel();
        if let Some(worker) = worker {
            let _ = worker.await;
        }
        // Sends whose callers left are still delivering; their records need the database.
        self.state.churn.sending().finish_deliveries().await;
        self.state.churn.store().close().await;
        served
    }
}

/// Logs to stderr, as text or JSON, filtered by `CHURN_LOG`.
pub fn init_tracing(config: &Config) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_new(&config.log).unwrap_or_else(|_| EnvFilter::new("info"));
    // Colour codes only for a terminal: a file or a journal would keep them as noise.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    let _ = match config.log_format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
}
