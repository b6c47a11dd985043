//! The HMAC-SHA256 of churn's signed tokens, and the constant-time check of a signature.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// How much of the HMAC a short signature keeps.
const SIGNATURE_BYTES: usize = 16;

/// HMAC-SHA256 under `key` of `parts`, each followed by the unit separator (0x1f), so no two
/// different lists of parts sign the same bytes. The first part labels what is signed.
pub(crate) fn of_parts(key: &[u8], parts: &[&str]) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    for part in parts {
        mac.update(part.as_bytes());
        mac.update(b"\x1f");
    }
    mac.finalize().into_bytes().into()
}

/// The first 16 bytes of [`of_parts`], base64url without padding.
pub(crate) fn short_signature(key: &[u8], parts: &[&str]) -> String {
    URL_SAFE_NO_PAD.encode(&of_parts(key, parts)[..SIGNATURE_BYTES])
}

/// Length-checked constant-time comparison: a truncated signature never matches.
pub(crate) fn same(given: &str, expected: &str) -> bool {
    given.len() == expected.len() && bool::from(given.as_bytes().ct_eq(expected.as_bytes()))
}
