//! Prometheus metrics: requests by route and status, and a latency histogram per route. Labels
//! come from fixed sets (route templates, `unmatched`, standard methods or `OTHER`), so clients
//! cannot create series at will.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
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

type LatencyFamily = Family<RouteLabels, Histogram, fn() -> Histogram>;

pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: LatencyFamily,
}

impl Metrics {
    pub fn new() -> Self {
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
        Self {
            registry,
            requests,
            latency,
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

    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("encoding metrics into a String");
        out
    }
}
