//! A project's own sender: `email-settings`, the DNS TXT proof of its domain, and who an
//! email of the project comes from. With a verified domain, recovery, check-in and dunning
//! emails go out from `from_email`; without one, recovery and check-in emails use
//! `CHURN_EMAIL_FROM`'s address with the project's name as display name.

use std::net::SocketAddr;
use std::time::Duration;

use hickory_resolver::Resolver;
use hickory_resolver::config::{NameServerConfig, ResolverConfig};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::proto::rr::RData;
use rand::Rng;

use super::Sending;
use super::access::ProjectAccess;
use crate::api::email_rules::{DnsRecord, EmailSettings, UpdateEmailSettings};
use crate::domain::email::Email;
use crate::domain::role::Permission;
use crate::domain::sender::{domain_of, record_name, record_value};
use crate::domain::validation::{Validator, one_line};
use crate::error::{Error, Result};
use crate::store::email_settings::{self, EmailSettingsRecord};
use crate::store::projects::ProjectRecord;

const MAX_FROM_NAME: usize = 100;
const DNS_TIMEOUT: Duration = Duration::from_secs(5);

/// Who an email of a project comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sender {
    /// A mailbox: `"Name" <address>`.
    pub from: String,
    pub reply_to: Option<String>,
    /// Whether `from` is the project's own verified address (dunning sends only then).
    pub verified: bool,
}

fn fresh_token() -> String {
    hex::encode(rand::rng().random::<[u8; 16]>())
}

fn view(s: Option<EmailSettingsRecord>) -> EmailSettings {
    let Some(s) = s else {
        return EmailSettings {
            from_name: None,
            from_email: None,
            reply_to: None,
            domain: None,
            domain_verified: false,
            dns_record: None,
        };
    };
    let domain = s
        .from_email
        .as_deref()
        .and_then(domain_of)
        .map(str::to_owned);
    EmailSettings {
        dns_record: domain.as_deref().map(|d| DnsRecord {
            record_type: "TXT".to_owned(),
            name: record_name(d),
            value: record_value(&s.verification_token),
        }),
        domain_verified: domain.is_some() && s.verified_at.is_some(),
        domain,
        from_name: s.from_name,
        from_email: s.from_email,
        reply_to: s.reply_to,
    }
}

fn mailbox(name: &str, address: &str) -> Result<String> {
    crate::email::mailbox(name, address)
        .map(|m| m.to_string())
        .map_err(|e| Error::internal(format!("sender {e}")))
}

impl Sending {
    pub async fn email_settings(&self, access: &ProjectAccess) -> Result<EmailSettings> {
        access.authorize(Permission::Administer)?;
        Ok(view(
            email_settings::get(self.core.store.reader(), &access.project.id).await?,
        ))
    }

    /// Replaces the sender. Another domain in `from_email` unverifies it (with a new token).
    pub async fn put_email_settings(
        &self,
        access: &ProjectAccess,
        req: UpdateEmailSettings,
    ) -> Result<EmailSettings> {
        access.authorize(Permission::Administer)?;
        let mut v = Validator::new();
        let mut email = |field: &str, raw: Option<String>| {
            raw.filter(|s| !s.trim().is_empty())
                .and_then(|s| v.check(field, Email::parse(&s)).map(Email::into_inner))
        };
        let from_email = email("from_email", req.from_email);
        let reply_to = email("reply_to", req.reply_to);
        let from_name = req
            .from_name
            .and_then(|n| v.check("from_name", one_line(&n, MAX_FROM_NAME)))
            .filter(|n| !n.is_empty());
        v.finish()?;

        let mut tx = self.core.store.begin().await?;
        let current = email_settings::get(&mut *tx, &access.project.id).await?;
        let same_domain = |c: &EmailSettingsRecord| {
            c.from_email.as_deref().and_then(domain_of) == from_email.as_deref().and_then(domain_of)
        };
        let (verification_token, verified_at) = match current {
            Some(c) if same_domain(&c) => (c.verification_token, c.verified_at),
            _ => (fresh_token(), None),
        };
        let next = EmailSettingsRecord {
            from_name,
            from_email,
            reply_to,
            verification_token,
            verified_at,
        };
        email_settings::upsert(&mut *tx, &access.project.id, &next, self.core.now()).await?;
        tx.commit().await?;
        Ok(view(Some(next)))
    }

    /// Looks the TXT record up and marks the domain verified when it holds the token. A
    /// failed lookup proves nothing either way: it is logged and changes nothing.
    pub async fn verify_sender_domain(&self, access: &ProjectAccess) -> Result<EmailSettings> {
        access.authorize(Permission::Administer)?;
        let current = email_settings::get(self.core.store.reader(), &access.project.id).await?;
        let Some((domain, token)) = current.as_ref().and_then(|c| {
            Some((
                domain_of(c.from_email.as_deref()?)?.to_owned(),
                c.verification_token.clone(),
            ))
        }) else {
            return Err(Error::validation(
                "set from_email before verifying its domain",
            ));
        };
        let expected = record_value(&token);
        match txt_records(self.dns_resolver, &record_name(&domain)).await {
            Ok(values) if values.contains(&expected) => {
                email_settings::mark_verified(
                    self.core.store.writer(),
                    &access.project.id,
                    &token,
                    self.core.now(),
                )
                .await?;
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(%domain, error = %e, "sender domain lookup failed"),
        }
        Ok(view(
            email_settings::get(self.core.store.reader(), &access.project.id).await?,
        ))
    }

    /// Who the project's emails come from: its verified sender, else the service's address
    /// under the project's name; Reply-To the sender's `reply_to`, else `support_email`.
    pub async fn sender_for(&self, project: &ProjectRecord) -> Result<Sender> {
        let settings = email_settings::get(self.core.store.reader(), &project.id).await?;
        if let Some(s) = settings
            && s.verified_at.is_some()
            && let Some(address) = &s.from_email
        {
            let name = s.from_name.as_deref().unwrap_or(&project.name);
            return Ok(Sender {
                from: mailbox(name, address)?,
                reply_to: s.reply_to.or_else(|| project.support_email.clone()),
                verified: true,
            });
        }
        Ok(Sender {
            from: mailbox(&project.name, &self.mailer.sender_address())?,
            reply_to: project.support_email.clone(),
            verified: false,
        })
    }
}

/// The TXT strings at `name` (each record's character-strings joined), through `server`
/// (UDP and TCP) when given, else the system's resolver. No such name or record: none.
async fn txt_records(server: Option<SocketAddr>, name: &str) -> Result<Vec<String>, String> {
    let mut builder = match server {
        Some(addr) => {
            let mut ns = NameServerConfig::udp_and_tcp(addr.ip());
            for connection in &mut ns.connections {
                connection.port = addr.port();
            }
            Resolver::builder_with_config(
                ResolverConfig::from_name_servers(vec![ns]),
                TokioRuntimeProvider::default(),
            )
        }
        None => Resolver::builder_tokio().map_err(|e| e.to_string())?,
    };
    builder.options_mut().timeout = DNS_TIMEOUT;
    let resolver = builder.build().map_err(|e| e.to_string())?;
    // Fully qualified: the search domains of the host play no part.
    match resolver.txt_lookup(format!("{name}.")).await {
        Ok(lookup) => Ok(lookup
            .answers()
            .iter()
            .filter_map(|record| match &record.data {
                RData::TXT(txt) => Some(
                    txt.txt_data
                        .iter()
                        .map(|part| String::from_utf8_lossy(part))
                        .collect::<String>(),
                ),
                _ => None,
            })
            .collect()),
        Err(e) if e.is_no_records_found() || e.is_nx_domain() => Ok(Vec::new()),
        Err(e) => Err(e.to_string()),
    }
}
