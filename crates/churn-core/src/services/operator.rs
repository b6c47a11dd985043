//! Actions of the operator CLI: they act across tenants, so they are not reachable
//! over HTTP.

use std::sync::Arc;

use chrono::NaiveDate;

use super::access::ProjectAccess;
use super::accounts::{CreatedAccount, subscription_view};
use super::cache::AccessCache;
use super::quota::SendQuota;
use super::sending::{self, Settlement};
use super::{EncryptionKey, KeyRotation, Local, Mailer, Payments, Sending, Team};
use crate::api::auth::Subscription;
use crate::api::events::StuckVariant;
use crate::api::projects::RotatedKeys;
use crate::config::Config;
use crate::domain::email::Email;
use crate::domain::invitation::InvitationKeys;
use crate::domain::keys::KeyKind;
use crate::domain::lifecycle::EventStatus;
use crate::domain::role::{Actor, Role};
use crate::domain::subscription::SubscriptionStatus;
use crate::domain::tracking::TrackingKeys;
use crate::domain::unsubscribe::UnsubscribeKeys;
use crate::error::{Error, Result};
use crate::outbound::Outbound;
use crate::store::events::{self, EventRecord, ListFilter, SortColumn, Totals};
use crate::store::kept_counts::{self, Drift, KeptCount};
use crate::store::projects::{self, ProjectRecord};
use crate::store::users::{self, UserRecord};
use crate::store::variants;
use crate::store::{Store, payment_failures};
use crate::time::{Clock, Timestamp};

/// The operator CLI's view of the service: storage and clock, without the keys the HTTP
/// service signs with.
pub struct Operator {
    store: Store,
    clock: Arc<dyn Clock>,
    /// Base of the links it prints.
    public_url: String,
    /// Where the encryption key comes from, loaded only by commands that open sealed values.
    config: Config,
}

/// A project as its owner sees it, for the CLI's team and report commands: the operator acts
/// with the owner's rights, through the same services and policy as the HTTP API.
pub struct AsOwner {
    pub core: Local,
    pub team: Team,
    pub access: ProjectAccess,
    pub owner: UserRecord,
}

/// What `churn subscription set` does to an account.
#[derive(Debug, Clone, Copy)]
pub enum SubscriptionChange {
    /// Paid through the end of this day (UTC).
    PaidUntil(NaiveDate),
    /// No longer paid and no trial left: expired now.
    Expire,
}

impl Operator {
    /// Connects to the existing database and migrates it: a missing SQLite file or a
    /// PostgreSQL server that does not answer is [`crate::store::Unavailable`].
    pub async fn open(config: &Config, clock: Arc<dyn Clock>) -> Result<Self> {
        Self::connect(config, clock, true).await
    }

    /// Connects, creating the SQLite file when missing (`churn migrate`), and migrates.
    pub async fn create(config: &Config, clock: Arc<dyn Clock>) -> Result<Self> {
        Self::connect(config, clock, false).await
    }

    async fn connect(config: &Config, clock: Arc<dyn Clock>, existing_only: bool) -> Result<Self> {
        let opening = crate::store::Opening {
            max_connections: config.db_max_connections,
            existing_only,
        };
        let store = Store::open(&config.database_url, opening).await?;
        store.migrate().await?;
        Ok(Self {
            store,
            clock,
            public_url: config.public_url(),
            config: config.clone(),
        })
    }

    /// The servers' encryption key (never a new one), refused unless it is the database's;
    /// like a server's start, it seals what is still stored in plaintext.
    async fn encryption_key(&self) -> Result<Arc<EncryptionKey>> {
        let key = Arc::new(super::secrets::existing_encryption_key(&self.config)?);
        super::secrets::check_encryption_key(&self.store, &key, self.now()).await?;
        super::secrets::seal_plaintext(&self.store, &key).await?;
        Ok(key)
    }

    /// `churn keys rotate-encryption`: every sealed value resealed with `new_key`, which
    /// becomes the database's key (and the key file's, when the key came from the file).
    pub async fn rotate_encryption_key(&self, new_key: &str) -> Result<KeyRotation> {
        let old = self.encryption_key().await?;
        super::secrets::rotate_encryption_key(&self.store, &self.config, &old, new_key, self.now())
            .await
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The project (by slug or id, across owners) and the services to act on it as its owner.
    /// Nothing is cached: server processes change the same database meanwhile. Invitations
    /// made here are emailed by a server's job worker.
    pub async fn as_owner(&self, slug_or_id: &str) -> Result<AsOwner> {
        let project = self.project(slug_or_id).await?;
        let owner = users::by_id(self.store.reader(), &project.owner_id)
            .await?
            .ok_or_else(|| Error::internal("a project without its owner"))?;
        let key = self.encryption_key().await?;
        let secret = super::secrets::tracking_secret(&self.store, &key, self.now()).await?;
        let core = self.local(key);
        let team = Team {
            core: core.clone(),
            mailer: Mailer {
                transport: None,
                public_url: self.public_url.clone(),
                // The CLI sends nothing itself.
                email_from: String::new(),
            },
            keys: Arc::new(InvitationKeys::new(secret.as_bytes())),
        };
        Ok(AsOwner {
            core,
            team,
            access: ProjectAccess {
                project,
                actor: Actor::User(Role::Owner),
            },
            owner,
        })
    }

    fn local(&self, encryption_key: Arc<EncryptionKey>) -> Local {
        Local {
            store: self.store.clone(),
            clock: self.clock.clone(),
            cache: Arc::new(AccessCache::new(false)),
            tracked: super::ingest::group(),
            encryption_key,
            scoring: Arc::default(),
            subscriptions: self.config.subscriptions,
            // The CLI serves no /metrics.
            metrics: Default::default(),
        }
    }

    /// Payments as a server holds them (`churn payments …`): provider credentials opened with
    /// the server's encryption key (refused when missing or not the database's), provider calls
    /// through the tenant outbound client. The dunning emails a retry schedules are sent by a
    /// server's job worker, so this holds no email transport.
    pub async fn payments(&self, config: &Config) -> Result<Payments> {
        let now = self.now();
        let encryption_key = self.encryption_key().await?;
        let secret = super::secrets::tracking_secret(&self.store, &encryption_key, now).await?;
        let core = self.local(encryption_key.clone());
        let sending = Sending {
            core: core.clone(),
            mailer: Mailer {
                transport: None,
                public_url: self.public_url.clone(),
                email_from: String::new(),
            },
            tracking: Arc::new(TrackingKeys::new(secret.as_bytes())),
            unsubscribe: Arc::new(UnsubscribeKeys::new(secret.as_bytes())),
            send_quota: SendQuota {
                trial: config.send_quota_trial,
                paid: config.send_quota_paid,
            },
            dns_resolver: config.dns_resolver,
            deliveries: tokio_util::task::TaskTracker::new(),
        };
        Ok(Payments {
            core,
            sending,
            outbound: Outbound::new(config.outbound_settings()?)?,
            encryption_key,
            public_url: self.public_url.clone(),
            intake: Payments::intake(),
        })
    }

    /// The id of the project a payment failure belongs to, across tenants.
    pub async fn payment_failure_project(&self, failure_id: &str) -> Result<String> {
        payment_failures::by_id(self.store.reader(), failure_id)
            .await?
            .map(|f| f.project_id)
            .ok_or_else(|| Error::NotFound(format!("no payment failure with id {failure_id:?}")))
    }

    pub async fn list_users(&self) -> Result<Vec<(UserRecord, Subscription)>> {
        let now = self.now();
        let users = users::list(self.store.reader()).await?;
        Ok(users
            .into_iter()
            .map(|u| {
                let subscription = subscription_view(self.config.subscriptions, &u, now);
                (u, subscription)
            })
            .collect())
    }

    /// `churn users create`: an account without a password and the single-use link, valid 24
    /// hours, that sets one.
    pub async fn create_user(&self, email: &str, name: &str) -> Result<CreatedAccount> {
        super::accounts::create_with_password_link(
            &self.store,
            self.now(),
            &self.public_url,
            name,
            email,
        )
        .await
    }

    /// Only with subscriptions on: the CLI refuses before calling it otherwise.
    pub async fn change_subscription(
        &self,
        email: &str,
        change: SubscriptionChange,
    ) -> Result<(UserRecord, SubscriptionStatus)> {
        let email = Email::parse(email).map_err(|e| Error::invalid_field("email", e))?;
        let mut user = users::by_email(self.store.reader(), email.as_str())
            .await?
            .ok_or_else(|| Error::NotFound(format!("no user with email {email}")))?;
        let now = self.now();
        match change {
            SubscriptionChange::PaidUntil(day) => {
                let end = day
                    .succ_opt()
                    .and_then(|d| d.and_hms_opt(0, 0, 0))
                    .ok_or_else(|| Error::invalid_field("paid_until", "date out of range"))?
                    .and_utc();
                user.paid_until = Some(end);
            }
            SubscriptionChange::Expire => {
                user.paid_until = None;
                user.trial_ends_at = user.trial_ends_at.min(now);
            }
        }
        let mut tx = self.store.begin().await?;
        users::set_subscription(&mut *tx, &user.id, user.trial_ends_at, user.paid_until, now)
            .await?;
        // Servers cache the owner's subscription with each project.
        self.store.announce_access_change(&mut tx).await?;
        tx.commit().await?;
        let status = self
            .config
            .subscriptions
            .status(user.trial_ends_at, user.paid_until, now);
        Ok((user, status))
    }

    /// Every project with its owner's email, optionally only those of one owner.
    pub async fn list_all_projects(
        &self,
        owner_email: Option<&str>,
    ) -> Result<Vec<(ProjectRecord, String)>> {
        let owner = owner_email
            .map(|e| Email::parse(e).map_err(|m| Error::invalid_field("user", m)))
            .transpose()?;
        projects::list_all(self.store.reader(), owner.as_ref().map(Email::as_str)).await
    }

    /// Every kept figure that differs from its recount from the base tables
    /// (`store::kept_counts`), with the slug of its project.
    pub async fn kept_count_drift(&self) -> Result<Vec<(Drift, String)>> {
        let drift = kept_counts::drift(&self.store).await?;
        if drift.is_empty() {
            return Ok(Vec::new());
        }
        let slugs: std::collections::HashMap<String, String> =
            projects::list_all(self.store.reader(), None)
                .await?
                .into_iter()
                .map(|(p, _)| (p.id, p.slug))
                .collect();
        Ok(drift
            .into_iter()
            .map(|d| {
                let slug = slugs.get(&d.project_id).cloned().unwrap_or_default();
                (d, slug)
            })
            .collect())
    }

    /// Rebuilds each of `counts` from its recount.
    pub async fn rebuild_kept_counts(&self, counts: &[KeptCount]) -> Result<()> {
        kept_counts::repair(&self.store, counts).await
    }

    /// Rotates the keys of the given kinds of the project with this slug or id; a slug
    /// several owners share is refused so the operator names the id.
    pub async fn rotate_keys(
        &self,
        slug_or_id: &str,
        kinds: &[KeyKind],
        grace_hours: i64,
    ) -> Result<(ProjectRecord, RotatedKeys)> {
        let mut found = projects::any_by_slug_or_id(self.store.reader(), slug_or_id).await?;
        let project = match found.len() {
            0 => {
                return Err(Error::NotFound(format!(
                    "no project with slug or id {slug_or_id:?}"
                )));
            }
            1 => found.remove(0),
            n => {
                return Err(Error::Conflict(format!(
                    "{n} projects use the slug {slug_or_id:?}; give the project id instead"
                )));
            }
        };
        let keys = super::projects::rotate_keys_of(
            &self.store,
            &project.id,
            kinds,
            grace_hours,
            self.now(),
        )
        .await?;
        Ok((project, keys))
    }

    /// Variants held by a send whose outcome was never recorded, oldest claim first.
    pub async fn stuck_variants(&self) -> Result<Vec<StuckVariant>> {
        let claims = variants::claims(self.store.reader(), None).await?;
        claims
            .into_iter()
            .map(|c| {
                Ok(StuckVariant {
                    claimed_at: crate::store::ts_opt(c.claimed_at.as_deref())?,
                    id: c.id,
                    project_id: c.project_id,
                    project: c.project_slug,
                    churn_event_id: c.churn_event_id,
                    recipient: c.recipient,
                    message_id: c.message_id,
                })
            })
            .collect()
    }

    /// Resolves a stuck send: sent (recorded as if the send had been: the event moves to
    /// `email_sent` and its recovery window starts) or not sent (back to draft).
    pub async fn settle_variant(&self, variant_id: &str, outcome: Settlement) -> Result<()> {
        let claim = variants::claims(self.store.reader(), Some(variant_id))
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| {
                Error::NotFound(format!("no variant {variant_id} is waiting to be settled"))
            })?;
        if !sending::settle(&self.store, &claim, outcome, self.now()).await? {
            return Err(Error::Conflict(format!(
                "variant {variant_id} was settled meanwhile"
            )));
        }
        Ok(())
    }

    /// The project with this slug or id, across all owners; a slug several owners share must
    /// be given as the id.
    /// The id of the project an alert belongs to (`churn alerts redeliver <id>`).
    pub async fn project_of_alert(&self, alert_id: &str) -> Result<String> {
        crate::store::alerts::by_id(self.store.reader(), alert_id)
            .await?
            .map(|(project_id, _)| project_id)
            .ok_or_else(|| Error::NotFound(format!("no alert with id {alert_id:?}")))
    }

    /// Demo data (`churn demo seed|clear`).
    pub fn demo(&self) -> super::demo::Demo {
        super::demo::Demo::new(self.store.clone(), self.clock.clone())
    }

    pub async fn project(&self, slug_or_id: &str) -> Result<ProjectRecord> {
        let mut found = projects::any_by_slug_or_id(self.store.reader(), slug_or_id).await?;
        match found.len() {
            0 => Err(Error::NotFound(format!(
                "no project with slug or id {slug_or_id:?}"
            ))),
            1 => Ok(found.remove(0)),
            n => Err(Error::Conflict(format!(
                "{n} projects use the slug {slug_or_id:?}; give the project id instead"
            ))),
        }
    }

    /// The newest `limit` events of a project (optionally of one status) and how many match.
    pub async fn recent_events(
        &self,
        project_id: &str,
        status: Option<EventStatus>,
        limit: i64,
    ) -> Result<(Vec<EventRecord>, u64)> {
        let filter = ListFilter {
            status,
            event_type: None,
            q: None,
        };
        let db = self.store.reader();
        let total = events::count(db, project_id, &filter).await?;
        let rows = events::list(
            db,
            project_id,
            &filter,
            SortColumn::CreatedAt,
            true,
            limit,
            0,
            total,
        )
        .await?;
        Ok((rows, total))
    }

    /// The event totals of a project.
    pub async fn event_totals(&self, project_id: &str) -> Result<Totals> {
        events::totals(self.store.reader(), project_id).await
    }
}
