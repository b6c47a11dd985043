//! The payment providers a project connects to, by their wire names (paths, JSON, storage).
//! `providerA` and `providerB`, the names of the interface document, are accepted as aliases
//! on input; answers, logs and stored rows use the real names.

use utoipa::ToSchema;

use super::wire_enum::wire_enum;

wire_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ToSchema)]
    pub enum Provider {
        Stripe = "stripe" | "providerA",
        Razorpay = "razorpay" | "providerB",
        /// Churn's own event format, signed with the project's webhook secret.
        Custom = "custom",
    }
}

impl Provider {
    /// The name the provider's credentials are sealed under: the name it had when the first
    /// connections were sealed, so those still open after the rename (migration 0071).
    pub fn sealing_name(self) -> &'static str {
        match self {
            Provider::Stripe => "providerA",
            Provider::Razorpay => "providerB",
            Provider::Custom => "custom",
        }
    }
}

/// A churn event's free-text `provider` (`api`, a billing system's name…) with the name of a
/// known provider, alias or not, written as that provider's wire name.
pub fn canonical_name(name: String) -> String {
    Provider::parse(&name).map_or(name, |p| p.as_str().to_owned())
}

/// What the API shows of a secret: its last four characters.
pub fn hint(secret: &str) -> String {
    let chars: Vec<char> = secret.chars().collect();
    chars[chars.len().saturating_sub(4)..].iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_hints() {
        assert_eq!(Provider::parse("stripe"), Some(Provider::Stripe));
        assert_eq!(Provider::parse("providerA"), Some(Provider::Stripe));
        assert_eq!(Provider::parse("razorpay"), Some(Provider::Razorpay));
        assert_eq!(Provider::parse("providerB"), Some(Provider::Razorpay));
        assert_eq!(Provider::parse("Stripe"), None);
        assert_eq!(Provider::Stripe.as_str(), "stripe");
        assert_eq!(Provider::Custom.as_str(), "custom");
        let alias: Provider = serde_json::from_value(serde_json::json!("providerB")).unwrap();
        assert_eq!(alias, Provider::Razorpay);
        assert_eq!(serde_json::to_value(alias).unwrap(), "razorpay");
    }

    /// The OpenAPI document shows the real names only.
    #[test]
    fn openapi_shows_the_real_names() {
        use utoipa::PartialSchema;
        let schema = serde_json::to_value(Provider::schema()).unwrap();
        assert_eq!(
            schema["enum"],
            serde_json::json!(["stripe", "razorpay", "custom"]),
            "{schema}"
        );
        assert_eq!(canonical_name("providerA".into()), "stripe");
        assert_eq!(canonical_name("razorpay".into()), "razorpay");
        assert_eq!(canonical_name("paddle".into()), "paddle");
        assert_eq!(hint("sk_test_abcd1234"), "1234");
        assert_eq!(hint("ab"), "ab");
        assert_eq!(hint("ééééé"), "éééé");
    }
}
