//! Resolving who may act on which project: from a session's user or from an API key. Every
//! project-scoped request goes through here, so the tenant filter cannot be forgotten. A
//! session token counts only while its user's session version is the one it carries; that
//! version is cached with the access decisions, so checking it costs no database read.

use std::sync::Arc;

use super::tokens::invalid_session;
use super::{Accounts, Local, cache};
use crate::domain::keys::{KeyKind, PresentedKey};
use crate::domain::role::{Actor, Permission, allows};
use crate::error::{Error, Result};
use crate::store::projects::{self, ProjectRecord};
use crate::store::{access_changes, keys};

/// A project together with who is acting on it.
#[derive(Debug, Clone)]
pub struct ProjectAccess {
    pub project: ProjectRecord,
    pub actor: Actor,
}

impl ProjectAccess {
    pub fn authorize(&self, permission: Permission) -> Result<()> {
        if allows(self.actor, permission) {
            Ok(())
        } else {
            Err(Error::Forbidden(
                "your role does not allow this action".into(),
            ))
        }
    }
}

pub(crate) fn project_not_found() -> Error {
    Error::NotFound("project not found".into())
}

impl Accounts {
    /// The user id of a session token that is valid, unexpired and not revoked.
    pub async fn verify_session(&self, token: &str) -> Result<String> {
        let claims = self.tokens.verify(token, self.core.now())?;
        if self.core.session_version(&claims.user_id).await? != Some(claims.version) {
            return Err(invalid_session());
        }
        Ok(claims.user_id)
    }
}

impl Local {
    /// What the cache holds for `key`, once it is known to be current: on SQLite, where no
    /// process can notify the others, a change counted since the last look drops it all.
    pub(super) async fn cached(&self, key: &cache::Key) -> Result<Option<cache::Value>> {
        if !self.cache.is_live() {
            return Ok(None);
        }
        if !self.store.backend().shared() {
            self.cache
                .observe(access_changes::version(self.store.reader()).await?);
        }
        Ok(self.cache.get(key))
    }

    /// The user's current session version; `None` when the user is gone.
    pub(super) async fn session_version(&self, user_id: &str) -> Result<Option<i64>> {
        let key = cache::Key::SessionVersion(user_id.to_owned());
        if let Some(cache::Value::SessionVersion(version)) = self.cached(&key).await? {
            return Ok(Some(version));
        }
        let epoch = self.cache.epoch();
        let version = crate::store::users::session_version(self.store.reader(), user_id).await?;
        if let Some(version) = version {
            self.cache
                .insert(key, cache::Value::SessionVersion(version), epoch);
        }
        Ok(version)
    }

    /// A project the user owns or belongs to, by slug or id. Owned slugs win; a slug shared by
    /// several projects the user merely belongs to is ambiguous (409).
    pub async fn project_for_user(&self, user_id: &str, slug_or_id: &str) -> Result<ProjectAccess> {
        let key = cache::Key::Visible {
            user_id: user_id.to_owned(),
            slug_or_id: slug_or_id.to_owned(),
        };
        let found = match self.cached(&key).await? {
            Some(cache::Value::Visible(found)) => found,
            _ => {
                let epoch = self.cache.epoch();
                let found =
                    Arc::new(projects::visible_to(self.store.reader(), user_id, slug_or_id).await?);
                if !found.is_empty() {
                    self.cache
                        .insert(key, cache::Value::Visible(found.clone()), epoch);
                }
                found
            }
        };
        let pick = match found.as_slice() {
            [] => return Err(project_not_found()),
            [(only, _)] => only.id.clone(),
            [(first, _), ..] if first.owner_id == user_id || first.id == slug_or_id => {
                first.id.clone()
            }
            _ => {
                return Err(Error::Conflict(format!(
                    "several projects you belong to use the slug {slug_or_id:?}; use the project id instead"
                )));
            }
        };
        let (project, role) = found
            .iter()
            .find(|(p, _)| p.id == pick)
            .cloned()
            .ok_or_else(project_not_found)?;
        Ok(ProjectAccess {
            project,
            actor: Actor::User(role),
        })
    }

    /// The project of a secret API key. A public or unknown key is 401; a valid key used on
    /// another project's path is 403.
    pub async fn project_for_secret_key(
        &self,
        raw_key: &str,
        slug_or_id: Option<&str>,
    ) -> Result<ProjectAccess> {
        let project = self.project_for_key(raw_key, KeyKind::Secret).await?;
        if let Some(path) = slug_or_id
            && project.slug != path
            && project.id != path
        {
            return Err(Error::Forbidden(
                "this API key belongs to another project".into(),
            ));
        }
        Ok(ProjectAccess {
            project,
            actor: Actor::SecretKey,
        })
    }

    /// The project of an active key of the given kind; 401 for anything else.
    pub async fn project_for_key(&self, raw_key: &str, kind: KeyKind) -> Result<ProjectRecord> {
        let unauthorized = || Error::Unauthorized("invalid API key".into());
        let presented = PresentedKey::parse(raw_key)
            .filter(|k| k.kind == kind)
            .ok_or_else(unauthorized)?;
        let now = self.now();
        let lookup = presented.lookup();
        // A recent miss holds whatever changed since (see `cache`).
        if self.cache.is_known_miss(kind, &lookup) {
            return Err(unauthorized());
        }
        let key = cache::Key::Credential(kind, lookup.clone());
        if let Some(cache::Value::Credential(project, expires_at)) = self.cached(&key).await? {
            return match expires_at {
                Some(at) if at <= now => Err(unauthorized()),
                _ => Ok((*project).clone()),
            };
        }
        let epoch = self.cache.epoch();
        let Some((project, expires_at)) =
            projects::by_active_key(self.store.reader(), kind, &lookup, now).await?
        else {
            self.cache.remember_miss(kind, lookup);
            return Err(unauthorized());
        };
        self.cache.insert(
            key,
            cache::Value::Credential(Arc::new(project.clone()), expires_at),
            epoch,
        );
        Ok(project)
    }

    /// The project's current public key and the hint of its current secret key.
    pub(super) async fn current_keys(
        &self,
        project_id: &str,
    ) -> Result<(Option<String>, Option<String>)> {
        let key = cache::Key::CurrentKeys(project_id.to_owned());
        if let Some(cache::Value::CurrentKeys(public, hint)) = self.cached(&key).await? {
            return Ok((public, hint));
        }
        let epoch = self.cache.epoch();
        let (public, hint) = keys::current(self.store.reader(), project_id).await?;
        self.cache.insert(
            key,
            cache::Value::CurrentKeys(public.clone(), hint.clone()),
            epoch,
        );
        Ok((public, hint))
    }

    /// The project of an unscoped call with a session: the one named by `?project=`, else the
    /// user's only project.
    pub async fn project_for_user_or_only(
        &self,
        user_id: &str,
        project: Option<&str>,
    ) -> Result<ProjectAccess> {
        if let Some(slug_or_id) = project {
            return self.project_for_user(user_id, slug_or_id).await;
        }
        let mut all = projects::list_for_user(self.store.reader(), user_id).await?;
        match all.len() {
            1 => {
                let (project, role) = all.remove(0);
                Ok(ProjectAccess {
                    project,
                    actor: Actor::User(role),
                })
            }
            0 => Err(project_not_found()),
            _ => Err(Error::invalid_field(
                "project",
                "you have several projects: pass ?project=<slug or id>",
            )),
        }
    }

    /// The project holding a churn event, for an unscoped call with a session; 404 when the
    /// event is not in any project the user can see.
    pub async fn project_of_event_for_user(
        &self,
        user_id: &str,
        event_id: &str,
    ) -> Result<ProjectAccess> {
        let project_id =
            crate::store::events::project_of_for_user(self.store.reader(), user_id, event_id)
                .await?
                .ok_or_else(super::events::event_not_found)?;
        self.project_for_user(user_id, &project_id).await
    }
}
