//! Signed customer identity (decisions §16): the `customer_hash` your server hands the
//! widget (`customerHash`) or puts on a cancel-flow submission, so that nobody holding the
//! public key can act for your customers. Exactly the code the service checks with.
//!
//! ```
//! let hash = churn_sdk::identity::customer_hash("idsec_…", "dana@example.com", None);
//! assert_eq!(hash.len(), 64);
//! ```

/// Lowercase hex HMAC-SHA256, keyed with the project's identity secret, of the customer's
/// email (trimmed, lower-cased), followed by `|` and `subscription_id` when given.
pub fn customer_hash(identity_secret: &str, email: &str, subscription_id: Option<&str>) -> String {
    churn_core::domain::identity::customer_hash(identity_secret, email, subscription_id)
}
