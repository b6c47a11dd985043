//! Payments: connections to payment providers (`connections`), their inbound events
//! (`webhooks`), and what is built on them.
//! The only capability holding the provider clients: it owns the encryption key that opens
//! their credentials and the tenant outbound client their calls go through.

mod connections;
mod webhooks;

use std::sync::Arc;

use super::{Core, EncryptionKey};
use crate::outbound::Outbound;

pub use connections::Connection;
pub use webhooks::InboundHeaders;

#[derive(Clone)]
pub struct Payments {
    pub(super) core: Core,
    pub(super) outbound: Outbound,
    pub(super) encryption_key: Arc<EncryptionKey>,
    /// Base of the webhook addresses shown to the provider.
    pub(super) public_url: String,
}
