//! Prometheus metrics: requests by route and status, and a latency histogram per route; the
//! core's counters of work done (jobs, emails, outbound calls, provider events, alert
//! deliveries); and gauges read when scraped (the job queue, the database connections).
//! Labels come from fixed sets (route templates, `unmatched`, standard methods or `OTHER`,
//! job kinds), so clients cannot create series at will.

use std::sync::atomic::AtomicU64;

use churn_core::services::Churn;
use churn_core::store::jobs;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: String,
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: &'static str,
}

type LatencyFamily = Family<RouteLabels, Histogram, fn() -> Histogram>;

pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: LatencyFamily,
    jobs_queued: Family<KindLabels, Gauge>,
    oldest_due: Gauge<f64, AtomicU64>,
    connections: Family<StateLabels, Gauge>,
    /// One scrape at a time reads the gauges and renders, so none sees another's half-update.
    scrape: tokio::sync::Mutex<()>,
}

impl Metrics {
    pub fn new(work: &churn_core::metrics::Metrics) -> Self {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        // 0.5 ms … ~16 s
        let latency: LatencyFamily =
            Family::new_with_constructor(|| Histogram::new(exponential_buckets(0.0005, 2.0, 16)));
        registry.register(
            "churn_http_requests",
            "HTTP requests by route and status",
            requests.clone(),
        );
        registry.register(
            "churn_http_request_duration_seconds",
            "HTTP request latency by route",
            latency.clone(),
        );
        work.register(&mut registry);
        let jobs_queued = Family::<KindLabels, Gauge>::default();
        registry.register(
            "churn_jobs_queued",
            "Background jobs waiting, due or not, by kind",
            jobs_queued.clone(),
        );
        let oldest_due = Gauge::<f64, AtomicU64>::default();
        registry.register(
            "churn_jobs_oldest_due_seconds",
            "How long the oldest due job has waited (0 when none is due)",
            oldest_due.clone(),
        );
        let connections = Family::<StateLabels, Gauge>::default();
        registry.register(
            "churn_db_connections",
            "Open database connections of this process, in use or idle",
            connections.clone(),
        );
        Self {
            registry,
            requests,
            latency,
            jobs_queued,
            oldest_due,
            connections,
            scrape: tokio::sync::Mutex::new(()),
        }
    }

    pub fn observe(&self, method: &str, route: &str, status: u16, seconds: f64) {
        self.requests
            .get_or_create(&RequestLabels {
                method: method.to_owned(),
                route: route.to_owned(),
                status,
            })
            .inc();
        self.latency
            .get_or_create(&RouteLabels {
                method: method.to_owned(),
                route: route.to_owned(),
            })
            .observe(seconds);
    }

    /// Reads the gauges from `churn`, then renders everything.
    pub async fn render(&self, churn: &Churn) -> churn_core::Result<String> {
        let _one = self.scrape.lock().await;
        let (in_use, idle) = churn.store().connections();
        self.connections
            .get_or_create(&StateLabels { state: "in_use" })
            .set(in_use.into());
        self.connections
            .get_or_create(&StateLabels { state: "idle" })
            .set(idle.into());
        let now = churn.now();
        let backlog = jobs::backlog(churn.store(), now).await?;
        // Kinds no longer queued drop out rather than linger at their last count.
        self.jobs_queued.clear();
        for (kind, count) in backlog.queued {
            self.jobs_queued
                .get_or_create(&KindLabels { kind })
                .set(count);
        }
        let waited = backlog
            .oldest_due
            .map(|due| (now - due).num_milliseconds().max(0) as f64 / 1000.0);
        self.oldest_due.set(waited.unwrap_or(0.0));
        let mut out = String::new();
        // Writing into a String cannot fail.
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("encoding metrics into a String");
        Ok(out)
    }
}
