//! The payment providers a project connects to, by their wire names (paths, JSON, storage).

use utoipa::ToSchema;

use super::wire::wire_enum;

wire_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ToSchema)]
    pub enum Provider {
        /// Stripe conventions.
        ProviderA = "providerA",
        /// Razorpay conventions.
        ProviderB = "providerB",
        /// Churn's own event format, signed with the project's webhook secret.
        Custom = "custom",
    }
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
        assert_eq!(Provider::parse("providerA"), Some(Provider::ProviderA));
        assert_eq!(Provider::parse("stripe"), None);
        assert_eq!(Provider::Custom.as_str(), "custom");
        assert_eq!(hint("sk_test_abcd1234"), "1234");
        assert_eq!(hint("ab"), "ab");
        assert_eq!(hint("ééééé"), "éééé");
    }
}
