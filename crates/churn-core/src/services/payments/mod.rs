//! Payments: connections to payment providers (`connections`), their inbound events
//! (`webhooks`), and dunning (`dunning`): retries, tone emails, configuration, lists and
//! statistics.
//! The only capability holding the provider clients: it owns the encryption key that opens
//! their credentials and the tenant outbound client their calls go through; it sends
//! dunning emails through the [`Sending`] capability's sender and transport.

mod connections;
mod dunning;
mod webhooks;

use std::sync::Arc;

use super::group::{Group, Work, write_units};
use super::{Core, EncryptionKey, Sending};
use crate::api::payments::WebhookAction;
use crate::outbound::Outbound;

pub use connections::Connection;
pub use webhooks::InboundHeaders;

#[derive(Clone)]
pub struct Payments {
    pub(super) core: Core,
    /// The project's sender and the email transport, for dunning emails.
    pub(super) sending: Sending,
    pub(super) outbound: Outbound,
    pub(super) encryption_key: Arc<EncryptionKey>,
    /// Base of the webhook addresses shown to the provider.
    pub(super) public_url: String,
    /// The group-commit queue of inbound provider events.
    pub(super) intake: Group<Work<WebhookAction>, WebhookAction>,
}

impl Payments {
    /// The queue `intake` starts with. Grouped on SQLite, whose one writer otherwise takes
    /// the events' transactions one at a time (+38 % events/s). Not on PostgreSQL: every new
    /// churn event updates its transaction's count and cohort rows, and a group of 30 events
    /// updates each row 30 times in one transaction, every update walking the row's earlier
    /// versions (the top of PostgreSQL's profile); grouped, it was no faster and its p99
    /// twice as long.
    pub(super) fn intake() -> Group<Work<WebhookAction>, WebhookAction> {
        Group::new(write_units, 0)
    }
}
