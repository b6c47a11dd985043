//! Signed tracking tokens for the open pixel and click redirects. A token names a variant
//! and carries an HMAC of it; a click URL also carries an HMAC of its target, so the redirect
//! route cannot be used to send people anywhere else.

use super::mac;

pub struct TrackingKeys {
    key: Vec<u8>,
}

impl TrackingKeys {
    pub fn new(key: &[u8]) -> Self {
        Self { key: key.to_vec() }
    }

    fn sign(&self, parts: &[&str]) -> String {
        mac::short_signature(&self.key, parts)
    }

    fn matches(&self, given: &str, parts: &[&str]) -> bool {
        mac::same(given, &self.sign(parts))
    }

    /// `<id>.<signature>`, the id signed under `label`.
    fn id_token(&self, label: &str, id: &str) -> String {
        format!("{id}.{}", self.sign(&[label, id]))
    }

    /// The id an [`Self::id_token`] of `label` names, if its signature is ours.
    fn verify_id_token<'t>(&self, label: &str, token: &'t str) -> Option<&'t str> {
        let (id, signature) = token.rsplit_once('.')?;
        self.matches(signature, &[label, id]).then_some(id)
    }

    /// `<variant id>.<signature>`.
    pub fn token(&self, variant_id: &str) -> String {
        self.id_token("open", variant_id)
    }

    /// The variant a token names, if its signature is ours.
    pub fn verify_token<'t>(&self, token: &'t str) -> Option<&'t str> {
        self.verify_id_token("open", token)
    }

    pub fn click_url(
        &self,
        public_url: &str,
        token: &str,
        variant_id: &str,
        target: &str,
    ) -> String {
        let encoded: String = url::form_urlencoded::byte_serialize(target.as_bytes()).collect();
        format!(
            "{public_url}/t/{token}/c?u={encoded}&s={}",
            self.sign(&["click", variant_id, target])
        )
    }

    pub fn verify_click(&self, variant_id: &str, target: &str, signature: &str) -> bool {
        self.matches(signature, &["click", variant_id, target])
    }

    /// `<payment failure id>.<signature>`: the card-update page of a failing payment
    /// (`/pay/<token>`). It carries no expiry: the page's lifetime follows from the record
    /// (`domain::card_update`).
    pub fn pay_token(&self, failure_id: &str) -> String {
        self.id_token("pay", failure_id)
    }

    /// The payment failure a card-update token names, if its signature is ours.
    pub fn verify_pay_token<'t>(&self, token: &'t str) -> Option<&'t str> {
        self.verify_id_token("pay", token)
    }

    /// `<expiry notice id>.<signature>`: the card-update page of a customer whose card
    /// expires soon (`/pay/customer/<token>`). Its own label, so a payment's token cannot
    /// open a customer's page, nor the other way round.
    pub fn customer_pay_token(&self, notice_id: &str) -> String {
        self.id_token("pay-customer", notice_id)
    }

    /// The expiry notice a customer card-update token names, if its signature is ours.
    pub fn verify_customer_pay_token<'t>(&self, token: &'t str) -> Option<&'t str> {
        self.verify_id_token("pay-customer", token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Issue = fn(&TrackingKeys, &str) -> String;
    type Verify = for<'t> fn(&TrackingKeys, &'t str) -> Option<&'t str>;

    /// The id tokens: open (variant), pay (payment failure) and customer pay (expiry notice).
    const ID_TOKENS: [(&str, Issue, Verify); 3] = [
        ("open", TrackingKeys::token, TrackingKeys::verify_token),
        (
            "pay",
            TrackingKeys::pay_token,
            TrackingKeys::verify_pay_token,
        ),
        (
            "pay-customer",
            TrackingKeys::customer_pay_token,
            TrackingKeys::verify_customer_pay_token,
        ),
    ];

    #[test]
    fn tokens_and_click_targets_are_signed() {
        let keys = TrackingKeys::new(b"k1");
        let token = keys.token("var-1");
        assert_eq!(keys.verify_token("var-2.AAAA"), None);

        let url = keys.click_url(
            "https://c.example",
            &token,
            "var-1",
            "https://acme.io/x?y=1",
        );
        let sig = url.rsplit_once("&s=").unwrap().1;
        assert!(keys.verify_click("var-1", "https://acme.io/x?y=1", sig));
        assert!(!keys.verify_click("var-1", "https://evil.example", sig));
        assert!(!keys.verify_click("var-2", "https://acme.io/x?y=1", sig));
    }

    #[test]
    fn each_id_token_is_signed_under_its_own_label() {
        let keys = TrackingKeys::new(b"k1");
        for (kind, issue, verify) in ID_TOKENS {
            let token = issue(&keys, "id-1");
            assert_eq!(verify(&keys, &token), Some("id-1"), "{kind}");
            assert_eq!(verify(&TrackingKeys::new(b"k2"), &token), None, "{kind}");
            assert_eq!(verify(&keys, "id-1"), None, "{kind} unsigned");
            // A token of the same id under another label stands for nothing here.
            for (other, _, verify_other) in ID_TOKENS {
                if other != kind {
                    assert_eq!(verify_other(&keys, &token), None, "{kind} as {other}");
                }
            }
        }
    }
}
