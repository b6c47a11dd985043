//! Payments: connections to payment providers (`connections`), their inbound events
//! (`webhooks`, verified and mapped; `intake`, written in groups), and dunning (`dunning`): retries, tone emails, configuration, lists and
//! statistics, what ends the subscription of a payment given up (`final_action`), and the team's
//! notice of a large failure (`team_notice`), and the notices of cards that expire soon with
//! their customers' card-update pages (`expiry`).
//! The only capability holding the provider clients: it owns the encryption key that opens
//! their credentials and the tenant outbound client their calls go through; it sends
//! dunning emails through the [`Sending`] capability's sender and transport.

mod card_update;
mod connections;
mod dunning;
mod expiry;
mod final_action;
pub(super) mod intake;
mod promotions;
mod team_notice;
mod webhooks;

use std::sync::Arc;

use super::group::Group;
use super::{EncryptionKey, Local, Sending};
use crate::api::payments::WebhookAction;
use crate::outbound::Outbound;

pub use card_update::{CardUpdatePage, CardUpdated, PageSubject};
pub use connections::Connection;
pub(super) use expiry::schedule_notices;
pub(super) use promotions::Promotion;
pub use webhooks::InboundHeaders;

#[derive(Clone)]
pub struct Payments {
    pub(super) core: Local,
    /// The project's sender and the email transport, for dunning emails.
    pub(super) sending: Sending,
    pub(super) outbound: Outbound,
    pub(super) encryption_key: Arc<EncryptionKey>,
    /// Base of the webhook addresses shown to the provider, without a trailing `/`
    /// (`Config::public_url`).
    pub(super) public_url: String,
    /// The group-commit queue of inbound provider events.
    pub(super) intake: Group<intake::Delivery, WebhookAction>,
}

impl Payments {
    /// The queue `intake` starts with.
    pub(super) fn intake() -> Group<intake::Delivery, WebhookAction> {
        intake::group()
    }
}
