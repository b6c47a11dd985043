//! Projects: creation with a key pair, the project views, settings, origins, keys and the
//! webhook secret. Each operation authorizes itself through the role policy.

use super::Local;
use super::access::ProjectAccess;
use crate::api::auth::DefaultProjectOrigins;
use crate::api::projects::{
    ApiKeys, CreateProject, Project, RotateKeysRequest, RotatedKeys, UpdateProject, WebhookSecret,
};
use crate::domain::email::Email;
use crate::domain::keys::{KeyKind, KeyPair, generate_webhook_secret};
use crate::domain::origin;
use crate::domain::role::{Permission, Role};
use crate::domain::settings::ProjectSettings;
use crate::domain::slug;
use crate::domain::validation::{Validator, between, optional_text, required_line};
use crate::domain::webhook_secrets::{OVERLAP, WebhookSecrets};
use crate::error::{Error, Result};
use crate::ids::new_id;
use crate::store::projects::{self, ProjectRecord};
use crate::store::sealed::{self, PREVIOUS_WEBHOOK_SECRET, WEBHOOK_SECRET};
use crate::store::{Store, keys, users};
use crate::time::Timestamp;

const SLUG_ATTEMPTS: usize = 5;
const MAX_GRACE_HOURS: i64 = 72;

/// Validated fields of a project to create.
#[derive(Debug, Clone)]
pub struct NewProject {
    name: String,
    product_type: Option<String>,
    support_email: Option<String>,
}

impl NewProject {
    pub fn validate(
        name: &str,
        product_type: Option<&str>,
        support_email: Option<&str>,
    ) -> Result<Self> {
        let mut v = Validator::new();
        let name = v.check("name", required_line(name, 200));
        let product_type =
            product_type.and_then(|t| v.check("product_type", optional_text(t, 100)));
        let support_email = support_email
            .filter(|e| !e.trim().is_empty())
            .and_then(|e| v.check("support_email", Email::parse(e)));
        v.finish()?;
        Ok(Self {
            name: name.unwrap_or_default(),
            product_type: product_type.filter(|t| !t.is_empty()),
            support_email: support_email.map(Email::into_inner),
        })
    }
}

impl Local {
    pub async fn create_project(&self, owner_id: &str, req: CreateProject) -> Result<Project> {
        let new = NewProject::validate(
            &req.name,
            req.product_type.as_deref(),
            req.support_email.as_deref(),
        )?;
        let (mut project, keys) = self.insert_project(owner_id, new, false).await?;
        project.api_keys = Some(keys);
        Ok(project)
    }

    /// Inserts a project with a fresh key pair, retrying the slug with a suffix on collision.
    /// With `as_default` it also becomes the owner's default project, which may happen once.
    pub(super) async fn insert_project(
        &self,
        owner_id: &str,
        new: NewProject,
        as_default: bool,
    ) -> Result<(Project, ApiKeys)> {
        let base = slug::slugify(&new.name);
        for attempt in 0..SLUG_ATTEMPTS {
            let slug = if attempt == 0 {
                base.clone()
            } else {
                slug::with_suffix(&base, &uuid::Uuid::new_v4())
            };
            let now = self.now();
            let id = new_id();
            let webhook_secret = WEBHOOK_SECRET.seal(
                self.encryption_key.bytes(),
                &[&id],
                generate_webhook_secret().as_bytes(),
            )?;
            let record = ProjectRecord {
                id,
                owner_id: owner_id.to_owned(),
                name: new.name.clone(),
                slug,
                product_type: new.product_type.clone(),
                support_email: new.support_email.clone(),
                allowed_origins: Vec::new(),
                settings: ProjectSettings::default(),
                webhook_secret,
                previous_webhook_secret: None,
                previous_webhook_secret_until: None,
                created_at: now,
                updated_at: now,
                // Read from the owner's row, never written with the project.
                owner_trial_ends_at: now,
                owner_paid_until: None,
            };
            let mut tx = self.store.begin().await?;
            if !projects::insert(&mut tx, &record).await? {
                tx.rollback().await?;
                continue;
            }
            if as_default
                && !users::claim_default_project(&mut *tx, owner_id, &record.id, now).await?
            {
                tx.rollback().await?;
                return Err(Error::Conflict("onboarding is already complete".into()));
            }
            let pair = KeyPair::generate();
            keys::insert_pair(&mut tx, &record.id, &pair, now).await?;
            self.commit_access_change(tx).await?;
            let mut view = project_view(&record);
            view.role = Some(Role::Owner);
            return Ok((
                view,
                ApiKeys {
                    public_key: pair.public_key,
                    secret_key: pair.secret_key,
                },
            ));
        }
        Err(Error::Conflict(
            "could not find a free slug for this project name".into(),
        ))
    }

    pub async fn list_projects(&self, user_id: &str) -> Result<Vec<Project>> {
        let rows = projects::list_for_user(self.store.reader(), user_id).await?;
        Ok(rows
            .iter()
            .map(|(record, role)| {
                let mut view = project_view(record);
                view.role = Some(*role);
                view
            })
            .collect())
    }

    /// The detail view: adds the role, the current public key, the secret key's hint and settings.
    pub async fn project_detail(&self, access: &ProjectAccess) -> Result<Project> {
        access.authorize(Permission::Read)?;
        let (public_key, hint) = self.current_keys(&access.project.id).await?;
        let mut view = project_view(&access.project);
        view.role = match access.actor {
            crate::domain::role::Actor::User(role) => Some(role),
            crate::domain::role::Actor::SecretKey | crate::domain::role::Actor::PublicKey => None,
        };
        view.public_key = public_key;
        view.secret_key_hint = hint;
        view.settings = Some(access.project.settings.clone());
        Ok(view)
    }

    pub async fn update_project(
        &self,
        access: &ProjectAccess,
        req: UpdateProject,
    ) -> Result<Project> {
        access.authorize(Permission::Administer)?;
        let now = self.now();
        let updated = self
            .modify_project(&access.project.id, |next| {
                let mut v = Validator::new();
                if let Some(name) = &req.name
                    && let Some(name) = v.check("name", required_line(name, 200))
                {
                    next.name = name;
                }
                if let Some(product_type) = &req.product_type
                    && let Some(t) = v.check("product_type", optional_text(product_type, 100))
                {
                    next.product_type = Some(t).filter(|t| !t.is_empty());
                }
                if let Some(email) = &req.support_email {
                    next.support_email = if email.trim().is_empty() {
                        None
                    } else {
                        v.check("support_email", Email::parse(email))
                            .map(Email::into_inner)
                    };
                }
                let settings = req.settings.map(|patch| next.settings.apply(patch));
                if let Some(Err(Error::Validation { details, .. })) = &settings {
                    for d in details {
                        v.add(&d.field, d.message.clone());
                    }
                }
                v.finish()?;
                if let Some(settings) = settings {
                    next.settings = settings?;
                }
                next.updated_at = now;
                Ok(())
            })
            .await?;
        let access = ProjectAccess {
            project: updated,
            ..access.clone()
        };
        self.project_detail(&access).await
    }

    /// Applies `change` to the current row under a write lock and stores it; 404 when the
    /// project is gone. Concurrent changes to one project therefore never overwrite each other.
    async fn modify_project(
        &self,
        id: &str,
        change: impl FnOnce(&mut ProjectRecord) -> Result<()>,
    ) -> Result<ProjectRecord> {
        let mut tx = self.store.begin().await?;
        let mut record = projects::lock(&self.store, &mut tx, id)
            .await?
            .ok_or_else(super::access::project_not_found)?;
        change(&mut record)?;
        projects::update(&mut *tx, &record).await?;
        self.commit_access_change(tx).await?;
        Ok(record)
    }

    pub async fn delete_project(&self, access: &ProjectAccess) -> Result<()> {
        access.authorize(Permission::DeleteProject)?;
        let mut tx = self.store.begin().await?;
        projects::delete(&mut *tx, &access.project.id).await?;
        self.commit_access_change(tx).await
    }

    pub async fn set_allowed_origins(
        &self,
        access: &ProjectAccess,
        origins: &[String],
    ) -> Result<Vec<String>> {
        access.authorize(Permission::Administer)?;
        let normalized = validate_origins(origins)?;
        let now = self.now();
        let updated = self
            .modify_project(&access.project.id, |next| {
                next.allowed_origins = normalized;
                next.updated_at = now;
                Ok(())
            })
            .await?;
        Ok(updated.allowed_origins)
    }

    /// `PUT /auth/allowed-origins`: the caller's default project, else their oldest owned one.
    pub async fn set_default_project_origins(
        &self,
        user: &users::UserRecord,
        origins: &[String],
    ) -> Result<DefaultProjectOrigins> {
        let owned = projects::list_for_user(self.store.reader(), &user.id).await?;
        let target = owned
            .iter()
            .find(|(p, _)| Some(&p.id) == user.default_project_id.as_ref())
            .or_else(|| {
                owned
                    .iter()
                    .find(|(p, role)| *role == Role::Owner && p.owner_id == user.id)
            })
            .ok_or_else(|| {
                Error::NotFound("you have no project yet; complete onboarding first".into())
            })?;
        let access = ProjectAccess {
            project: target.0.clone(),
            actor: crate::domain::role::Actor::User(target.1),
        };
        let allowed_origins = self.set_allowed_origins(&access, origins).await?;
        Ok(DefaultProjectOrigins {
            project_slug: access.project.slug,
            allowed_origins,
        })
    }

    pub async fn rotate_keys(
        &self,
        access: &ProjectAccess,
        req: RotateKeysRequest,
    ) -> Result<RotatedKeys> {
        access.authorize(Permission::RotateKeys)?;
        let kinds = req.keys.unwrap_or_else(|| KeyKind::ALL.to_vec());
        let grace = req.expire_old_in_hours.unwrap_or(0);
        let rotated =
            rotate_keys_of(&self.store, &access.project.id, &kinds, grace, self.now()).await;
        self.cache.invalidate();
        rotated
    }

    pub fn webhook_secret(&self, access: &ProjectAccess) -> Result<WebhookSecret> {
        access.authorize(Permission::Administer)?;
        Ok(WebhookSecret {
            webhook_secret: self.webhook_secrets(&access.project)?.current().to_owned(),
        })
    }

    /// Issues a new secret; the one it replaces keeps counting for [`OVERLAP`].
    pub async fn rotate_webhook_secret(&self, access: &ProjectAccess) -> Result<WebhookSecret> {
        access.authorize(Permission::Administer)?;
        let now = self.now();
        let fresh = generate_webhook_secret();
        let sealed = WEBHOOK_SECRET.seal(
            self.encryption_key.bytes(),
            &[&access.project.id],
            fresh.as_bytes(),
        )?;
        self.modify_project(&access.project.id, |next| {
            // Both columns share a scope, so the sealed value moves as it is.
            next.previous_webhook_secret =
                Some(std::mem::replace(&mut next.webhook_secret, sealed));
            next.previous_webhook_secret_until = Some(now + OVERLAP);
            next.updated_at = now;
            Ok(())
        })
        .await?;
        Ok(WebhookSecret {
            webhook_secret: fresh,
        })
    }

    /// The project's webhook secrets that count now, opened.
    pub(crate) fn webhook_secrets(&self, project: &ProjectRecord) -> Result<WebhookSecrets> {
        let key = self.encryption_key.bytes();
        let open = |column: &sealed::Column, value: &str| {
            String::from_utf8(column.open(key, &[&project.id], value)?).map_err(Error::internal)
        };
        let previous = match (
            &project.previous_webhook_secret,
            project.previous_webhook_secret_until,
        ) {
            (Some(sealed), Some(until)) => Some((open(&PREVIOUS_WEBHOOK_SECRET, sealed)?, until)),
            _ => None,
        };
        Ok(WebhookSecrets::new(
            open(&WEBHOOK_SECRET, &project.webhook_secret)?,
            previous,
            self.now(),
        ))
    }
}

/// Issues new keys of the given kinds; the ones they replace stop working now or after
/// `grace_hours`, the others are kept.
pub(super) async fn rotate_keys_of(
    store: &Store,
    project_id: &str,
    kinds: &[KeyKind],
    grace_hours: i64,
    now: Timestamp,
) -> Result<RotatedKeys> {
    let mut v = Validator::new();
    if kinds.is_empty() {
        v.add("keys", "must name at least one of public, secret");
    }
    v.check(
        "expire_old_in_hours",
        between(grace_hours, 0..=MAX_GRACE_HOURS),
    );
    v.finish()?;
    let old_keys_expire_at = now + chrono::Duration::hours(grace_hours);
    let pair = KeyPair::generate();
    let mut tx = store.begin().await?;
    // Locking the project serialises concurrent rotations: each sees the pair the last one made.
    projects::lock(store, &mut tx, project_id)
        .await?
        .ok_or_else(super::access::project_not_found)?;
    for &kind in kinds {
        keys::expire_active(&mut tx, project_id, kind, old_keys_expire_at).await?;
    }
    keys::insert_keys(&mut tx, project_id, &pair, kinds, now).await?;
    let public_key = if kinds.contains(&KeyKind::Public) {
        pair.public_key
    } else {
        keys::current(&mut *tx, project_id)
            .await?
            .0
            .ok_or_else(|| Error::internal("a project without a public key"))?
    };
    store.announce_access_change(&mut tx).await?;
    tx.commit().await?;
    Ok(RotatedKeys {
        public_key,
        secret_key: kinds.contains(&KeyKind::Secret).then_some(pair.secret_key),
        old_keys_expire_at,
    })
}

fn validate_origins(origins: &[String]) -> Result<Vec<String>> {
    if origins.len() > origin::MAX_ALLOWED_ORIGINS {
        return Err(Error::invalid_field(
            "allowed_origins",
            format!(
                "at most {} origins are allowed",
                origin::MAX_ALLOWED_ORIGINS
            ),
        ));
    }
    origin::normalize_all(origins).map_err(|errors| {
        let mut v = Validator::new();
        for (i, message) in errors {
            v.add(&format!("allowed_origins[{i}]"), message);
        }
        v.finish().expect_err("at least one origin was invalid")
    })
}

/// The base view every project answer starts from.
pub fn project_view(p: &ProjectRecord) -> Project {
    Project {
        id: p.id.clone(),
        name: p.name.clone(),
        slug: p.slug.clone(),
        product_type: p.product_type.clone(),
        support_email: p.support_email.clone(),
        allowed_origins: p.allowed_origins.clone(),
        created_at: p.created_at,
        updated_at: p.updated_at,
        role: None,
        public_key: None,
        secret_key_hint: None,
        settings: None,
        api_keys: None,
    }
}
