//! Invitation tokens. A token is an HMAC of the invitation id under a service secret: the
//! invitation email's job makes it again from the id, so the token is never stored in clear
//! (only its hash is, to look it up) nor carried in a job's payload.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// How long an invitation stays open.
pub const VALID_FOR: chrono::Duration = chrono::Duration::days(7);

pub struct InvitationKeys {
    key: Vec<u8>,
}

impl InvitationKeys {
    pub fn new(key: &[u8]) -> Self {
        Self { key: key.to_vec() }
    }

    /// The invitation's token: 43 URL-safe characters (256 bits).
    pub fn token(&self, invitation_id: &str) -> String {
        URL_SAFE_NO_PAD.encode(super::mac::of_parts(
            &self.key,
            &["invitation", invitation_id],
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_stable_per_invitation_and_secret() {
        let keys = InvitationKeys::new(b"secret");
        let token = keys.token("inv-1");
        assert_eq!(token.len(), 43);
        assert_eq!(token, keys.token("inv-1"));
        assert_ne!(token, keys.token("inv-2"));
        assert_ne!(token, InvitationKeys::new(b"other").token("inv-1"));
        assert!(
            token
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
    }
}
