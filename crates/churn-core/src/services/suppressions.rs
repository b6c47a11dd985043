//! The suppression list: addresses a project's recovery and check-in emails no longer go to,
//! fed by one-click unsubscribes (`/u/<token>`) and by bounces. Dunning emails about a failed
//! payment are not subject to it.

use super::Sending;
use super::access::ProjectAccess;
use super::paging::Page;
use crate::api::Meta;
use crate::api::email_rules::{PageQuery, Suppression};
use crate::domain::role::Permission;
use crate::domain::unsubscribe::SuppressionReason;
use crate::error::{Error, Result};
use crate::store::{projects, suppressions};

/// Whose unsubscribe a token names, for the page that confirms it.
#[derive(Debug, Clone)]
pub struct UnsubscribeTarget {
    pub project_name: String,
    pub email: String,
}

fn normalise(email: &str) -> String {
    email.trim().to_lowercase()
}

impl Sending {
    /// Why `email` may not be sent recovery or check-in emails by the project, if it may not.
    /// For every sender of such emails (manual sends, automation).
    pub async fn is_suppressed(
        &self,
        project_id: &str,
        email: &str,
    ) -> Result<Option<SuppressionReason>> {
        Ok(
            suppressions::get(self.core.store.reader(), project_id, &normalise(email))
                .await?
                .map(|s| s.reason),
        )
    }

    /// 409 with the reason's message when the address is suppressed.
    pub(crate) async fn refuse_suppressed(&self, project_id: &str, email: &str) -> Result<()> {
        match self.is_suppressed(project_id, email).await? {
            Some(reason) => Err(Error::Conflict(reason.refusal().to_owned())),
            None => Ok(()),
        }
    }

    pub(crate) async fn suppress(
        &self,
        project_id: &str,
        email: &str,
        reason: SuppressionReason,
    ) -> Result<()> {
        suppressions::insert(
            self.core.store.writer(),
            project_id,
            &normalise(email),
            reason,
            self.core.now(),
        )
        .await
    }

    /// The signed `/u/<token>` URL of an address, for the email's footer and headers.
    pub(crate) fn unsubscribe_url(&self, project_id: &str, email: &str) -> String {
        let token = self.unsubscribe.token(project_id, &normalise(email));
        format!("{}/u/{token}", self.mailer.public_url)
    }

    /// What a token names; 404 for a forged token or a deleted project. Changes nothing.
    pub async fn unsubscribe_target(&self, token: &str) -> Result<UnsubscribeTarget> {
        Ok(self.resolve_unsubscribe(token).await?.1)
    }

    /// Adds the address a token names to its project's suppression list (idempotent).
    pub async fn unsubscribe(&self, token: &str) -> Result<UnsubscribeTarget> {
        let (project_id, target) = self.resolve_unsubscribe(token).await?;
        self.suppress(&project_id, &target.email, SuppressionReason::Unsubscribed)
            .await?;
        Ok(target)
    }

    async fn resolve_unsubscribe(&self, token: &str) -> Result<(String, UnsubscribeTarget)> {
        let not_found = || Error::NotFound("no route for this path".into());
        let (project_id, email) = self.unsubscribe.verify(token).ok_or_else(not_found)?;
        let project = projects::by_id(self.core.store.reader(), &project_id)
            .await?
            .ok_or_else(not_found)?;
        let target = UnsubscribeTarget {
            project_name: project.name,
            email,
        };
        Ok((project_id, target))
    }

    pub async fn list_suppressions(
        &self,
        access: &ProjectAccess,
        q: PageQuery,
    ) -> Result<(Vec<Suppression>, Meta)> {
        access.authorize(Permission::Read)?;
        let page = Page::parse(q.page, q.per_page)?;
        let db = self.core.store.reader();
        let total = suppressions::count(db, &access.project.id).await?;
        let rows = suppressions::list(db, &access.project.id, page.per_page, page.offset()).await?;
        let meta = page.meta(total);
        let items = rows
            .into_iter()
            .map(|r| Suppression {
                email: r.email,
                reason: r.reason,
                created_at: r.created_at,
            })
            .collect();
        Ok((items, meta))
    }

    /// Lets the address be emailed again (admin); 404 when it is not listed.
    pub async fn delete_suppression(&self, access: &ProjectAccess, email: &str) -> Result<()> {
        access.authorize(Permission::Administer)?;
        if suppressions::delete(
            self.core.store.writer(),
            &access.project.id,
            &normalise(email),
        )
        .await?
        {
            Ok(())
        } else {
            Err(Error::NotFound("suppression not found".into()))
        }
    }
}
