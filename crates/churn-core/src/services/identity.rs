//! Signed customer identity (decisions §16): each project's identity secret, shown to admins
//! and rotated with a 24-hour overlap, and the check of `customer_hash` on the calls that act
//! for one customer. The secrets are sealed with the service encryption key, so this lives
//! with [`Payments`], the capability that holds it.

use super::Payments;
use super::access::ProjectAccess;
use crate::api::projects::IdentitySecret;
use crate::domain::identity::{self, ROTATION_OVERLAP_HOURS};
use crate::domain::role::Permission;
use crate::error::{Error, Result};
use crate::store::{identity_secrets, projects, sealed};

/// The answer to a call whose hash is missing or wrong (§16).
pub const HASH_REFUSED: &str = "customer_hash is missing or does not match";

/// The domain the demo customer's address is made in: reserved, so it never reaches anyone.
const DEMO_DOMAIN: &str = "churn.invalid";

/// The fixed customer `GET /widget/v1/demo` acts for: `demo@<slug>.churn.invalid`.
pub fn demo_customer(slug: &str) -> String {
    format!("demo@{slug}.{DEMO_DOMAIN}")
}

/// Whether an email is a demo customer, whose submissions are answered but never stored.
pub fn is_demo_customer(email: &str) -> bool {
    email
        .trim()
        .to_ascii_lowercase()
        .strip_prefix("demo@")
        .is_some_and(|domain| domain.ends_with(&format!(".{DEMO_DOMAIN}")))
}

impl Payments {
    /// `GET /projects/:slug/identity-secret` (admin): the current secret.
    pub async fn identity_secret(&self, access: &ProjectAccess) -> Result<IdentitySecret> {
        access.authorize(Permission::Administer)?;
        let identity_secret = self
            .live_identity_secrets(&access.project.id)
            .await?
            .swap_remove(0);
        Ok(IdentitySecret { identity_secret })
    }

    /// `POST /projects/:slug/identity-secret/rotate` (admin): a new current secret; the one it
    /// replaces keeps verifying for [`ROTATION_OVERLAP_HOURS`].
    pub async fn rotate_identity_secret(&self, access: &ProjectAccess) -> Result<IdentitySecret> {
        access.authorize(Permission::Administer)?;
        let project_id = &access.project.id;
        let now = self.core.now();
        let identity_secret = identity::generate_identity_secret();
        let sealed = self.seal_identity(project_id, &identity_secret)?;
        let mut tx = self.core.store.begin().await?;
        // Locking the project serialises concurrent rotations.
        projects::lock(&self.core.store, &mut tx, project_id)
            .await?
            .ok_or_else(super::access::project_not_found)?;
        let overlap_ends = now + chrono::Duration::hours(ROTATION_OVERLAP_HOURS);
        identity_secrets::expire_current(&mut tx, project_id, overlap_ends).await?;
        identity_secrets::insert_current(&mut *tx, project_id, &sealed, now).await?;
        tx.commit().await?;
        Ok(IdentitySecret { identity_secret })
    }

    /// Makes the project's first identity secret, on its first use (projects made before
    /// secrets existed have none either).
    async fn create_identity_secret(&self, project_id: &str) -> Result<()> {
        let sealed = self.seal_identity(project_id, &identity::generate_identity_secret())?;
        identity_secrets::insert_current(
            self.core.store.writer(),
            project_id,
            &sealed,
            self.core.now(),
        )
        .await?;
        Ok(())
    }

    /// The secrets that verify now, opened, the current one first; one is made when the
    /// project has none yet.
    async fn live_identity_secrets(&self, project_id: &str) -> Result<Vec<String>> {
        let now = self.core.now();
        let mut sealed_secrets =
            identity_secrets::live(self.core.store.reader(), project_id, now).await?;
        if sealed_secrets.is_empty() {
            self.create_identity_secret(project_id).await?;
            // Another request may have made it first: read what was kept.
            sealed_secrets =
                identity_secrets::live(self.core.store.writer(), project_id, now).await?;
        }
        let key = self.encryption_key.bytes();
        sealed_secrets
            .iter()
            .map(|s| {
                let plain = sealed::IDENTITY_SECRETS.open(key, &[project_id], s)?;
                String::from_utf8(plain).map_err(Error::internal)
            })
            .collect::<Result<Vec<_>>>()
            .and_then(|secrets| {
                if secrets.is_empty() {
                    Err(Error::internal("the project has no identity secret"))
                } else {
                    Ok(secrets)
                }
            })
    }

    /// Checks `customer_hash` for a customer (and the subscription the call names): 401
    /// [`HASH_REFUSED`] when it is missing or matches no live secret.
    pub(crate) async fn check_customer_hash(
        &self,
        project_id: &str,
        email: &str,
        subscription_id: Option<&str>,
        presented: Option<&str>,
    ) -> Result<()> {
        let Some(presented) = presented.filter(|h| !h.trim().is_empty()) else {
            return Err(Error::Unauthorized(HASH_REFUSED.into()));
        };
        let secrets = self.live_identity_secrets(project_id).await?;
        if identity::hash_matches(&secrets, email, subscription_id, presented) {
            Ok(())
        } else {
            Err(Error::Unauthorized(HASH_REFUSED.into()))
        }
    }

    /// The demo customer's address and hash, made by the server for `GET /widget/v1/demo`.
    pub async fn demo_identity(&self, project_id: &str, slug: &str) -> Result<(String, String)> {
        let email = demo_customer(slug);
        let secrets = self.live_identity_secrets(project_id).await?;
        let hash = identity::customer_hash(&secrets[0], &email, None);
        Ok((email, hash))
    }

    fn seal_identity(&self, project_id: &str, secret: &str) -> Result<String> {
        sealed::IDENTITY_SECRETS.seal(
            self.encryption_key.bytes(),
            &[project_id],
            secret.as_bytes(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_customer_is_recognised_and_nobody_else() {
        let demo = demo_customer("acme-analytics");
        assert_eq!(demo, "demo@acme-analytics.churn.invalid");
        assert!(is_demo_customer(&demo));
        assert!(is_demo_customer(" DEMO@acme-analytics.churn.invalid"));
        assert!(!is_demo_customer("demo@acme.io"));
        assert!(!is_demo_customer("ada@acme-analytics.churn.invalid"));
    }
}
