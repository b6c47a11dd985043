//! Counters of the work this process does, beside the server's HTTP ones: incremented where
//! the work happens, registered by the server in its Prometheus registry. Every label value
//! comes from a fixed set (job kinds, email kinds, purposes, outcomes, provider names), never
//! from a request.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JobLabels {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EmailLabels {
    kind: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutboundLabels {
    purpose: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProviderLabels {
    provider: &'static str,
    action: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DeliveryLabels {
    channel: &'static str,
    outcome: &'static str,
}

/// What came of an email: handed to the relay or outbox, refused by it, or not attempted
/// (suppressed recipient, quota reached, email not configured).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmailOutcome {
    Sent,
    Failed,
    Skipped,
}

/// The counters; clones share them.
#[derive(Clone, Default, Debug)]
pub struct Metrics {
    jobs_failed: Family<JobLabels, Counter>,
    emails: Family<EmailLabels, Counter>,
    outbound: Family<OutboundLabels, Counter>,
    provider_events: Family<ProviderLabels, Counter>,
    deliveries: Family<DeliveryLabels, Counter>,
}

impl Metrics {
    /// Adds the counters to `registry` (names without `_total`: the encoder adds it).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "churn_jobs_failed",
            "Failed attempts of background jobs, retried or not, by kind",
            self.jobs_failed.clone(),
        );
        registry.register(
            "churn_emails",
            "Emails by kind and outcome (sent, failed, skipped)",
            self.emails.clone(),
        );
        registry.register(
            "churn_outbound_requests",
            "Outbound HTTP calls by purpose and outcome",
            self.outbound.clone(),
        );
        registry.register(
            "churn_provider_events",
            "Payment-provider webhook events by provider and what was done with them",
            self.provider_events.clone(),
        );
        registry.register(
            "churn_deliveries",
            "Churn-risk alert deliveries by channel and outcome",
            self.deliveries.clone(),
        );
    }

    /// An attempt of a job of `kind` failed.
    pub fn job_failed(&self, kind: &str) {
        self.jobs_failed
            .get_or_create(&JobLabels {
                kind: kind.to_owned(),
            })
            .inc();
    }

    /// An email of `kind` (`recovery`, `account`, `invitation`, `dunning`, `dunning_team`,
    /// `endpoint_disabled`, `check_in`).
    pub fn email(&self, kind: &'static str, outcome: EmailOutcome) {
        let outcome = match outcome {
            EmailOutcome::Sent => "sent",
            EmailOutcome::Failed => "failed",
            EmailOutcome::Skipped => "skipped",
        };
        self.emails
            .get_or_create(&EmailLabels { kind, outcome })
            .inc();
    }

    /// An outbound call for `purpose` ended with `outcome`.
    pub fn outbound(&self, purpose: &'static str, outcome: &'static str) {
        self.outbound
            .get_or_create(&OutboundLabels { purpose, outcome })
            .inc();
    }

    /// A provider's webhook event was received and `action` done with it.
    pub fn provider_event(&self, provider: &'static str, action: &'static str) {
        self.provider_events
            .get_or_create(&ProviderLabels { provider, action })
            .inc();
    }

    /// An alert delivery step on `channel` ended with `outcome`.
    pub fn delivery(&self, channel: &'static str, outcome: &'static str) {
        self.deliveries
            .get_or_create(&DeliveryLabels { channel, outcome })
            .inc();
    }
}
