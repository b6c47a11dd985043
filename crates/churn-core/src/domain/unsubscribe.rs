//! Signed unsubscribe tokens and the suppression list's reasons. A token names a (project,
//! address) pair and carries an HMAC of it, so `/u/<token>` cannot be used to unsubscribe
//! anyone else; the address is base64url-encoded, not readable at a glance in the URL.

use super::mac;
use super::wire_enum::wire_enum;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use utoipa::ToSchema;

pub struct UnsubscribeKeys {
    key: Vec<u8>,
}

impl UnsubscribeKeys {
    pub fn new(key: &[u8]) -> Self {
        Self { key: key.to_vec() }
    }

    fn sign(&self, project_id: &str, email: &str) -> String {
        mac::short_signature(&self.key, &["unsubscribe", project_id, email])
    }

    /// `<base64url(project id \x1f email)>.<signature>`.
    pub fn token(&self, project_id: &str, email: &str) -> String {
        let payload = URL_SAFE_NO_PAD.encode(format!("{project_id}\x1f{email}"));
        format!("{payload}.{}", self.sign(project_id, email))
    }

    /// The (project id, email) a token names, if its signature is ours.
    pub fn verify(&self, token: &str) -> Option<(String, String)> {
        let (payload, signature) = token.split_once('.')?;
        let decoded = String::from_utf8(URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?;
        let (project_id, email) = decoded.split_once('\x1f')?;
        mac::same(signature, &self.sign(project_id, email))
            .then(|| (project_id.to_owned(), email.to_owned()))
    }
}

wire_enum! {
    /// Why an address is on a project's suppression list.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, ToSchema)]
    pub enum SuppressionReason {
        Unsubscribed = "unsubscribed",
        Bounced = "bounced",
    }
}

impl SuppressionReason {
    /// The answer to a send refused because of it (decisions §7).
    pub fn refusal(self) -> &'static str {
        match self {
            SuppressionReason::Unsubscribed => "the customer has unsubscribed",
            SuppressionReason::Bounced => "the address bounced",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_name_their_pair_and_cannot_be_forged() {
        let keys = UnsubscribeKeys::new(b"k1");
        let token = keys.token("p-1", "dana@x.io");
        assert!(!token.contains("dana"));
        assert_eq!(
            keys.verify(&token),
            Some(("p-1".to_owned(), "dana@x.io".to_owned()))
        );
        assert_eq!(UnsubscribeKeys::new(b"k2").verify(&token), None);
        let (_, signature) = token.split_once('.').unwrap();
        let other = format!(
            "{}.{signature}",
            URL_SAFE_NO_PAD.encode("p-1\x1fother@x.io")
        );
        assert_eq!(keys.verify(&other), None);
        assert_eq!(keys.verify(&token[..token.len() - 1]), None);
        assert_eq!(keys.verify("garbage"), None);
    }
}
