//! Pure domain rules: no I/O, no clock reads; every function here takes what it needs.

pub mod alerts;
pub mod behavior;
pub mod cta;
pub mod dunning;
pub mod email;
pub mod keys;
pub mod lifecycle;
pub mod origin;
pub mod password;
pub mod provider;
pub mod provider_events;
pub mod ranking;
pub mod risk;
pub mod role;
pub mod sender;
pub mod settings;
pub mod slug;
pub mod strategy;
pub mod subscription;
pub mod tracking;
pub mod unsubscribe;
pub mod validation;
pub mod variant;
pub(crate) mod wire;
