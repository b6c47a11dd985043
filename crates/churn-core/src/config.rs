//! Configuration: defaults → optional `churn.toml` → `CHURN_*` environment → command-line
//! flags, validated once at start-up with errors that name the setting.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use ipnet::IpNet;
use reqwest::dns::Resolve;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Deserializer, Serialize};

use crate::domain::subscription::Subscriptions;
use crate::outbound;

pub const ENV_PREFIX: &str = "CHURN_";

#[derive(Debug, Clone, Deserialize)]
pub struct Config {
    pub bind: SocketAddr,
    pub database_url: DatabaseUrl,
    pub public_url: Option<String>,
    /// Where generated files live (outbox, encryption key): `CHURN_DATA_DIR`, else the SQLite
    /// file's folder, else `./data`; resolved to an absolute path by [`Config::load`], so a
    /// restart from another working folder finds the same files.
    #[serde(default)]
    pub data_dir: PathBuf,
    /// At least 32 bytes when given.
    pub jwt_secret: Option<SecretString>,
    pub encryption_key: Option<SecretString>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// `None`: decided from the bind address (plain HTTP only on loopback).
    pub allow_http: Option<bool>,
    #[serde(deserialize_with = "comma_list")]
    pub trusted_proxies: Vec<IpNet>,
    pub smtp_url: Option<SecretString>,
    /// `None`: `<data_dir>/outbox` when no SMTP is set; empty: email not configured.
    pub email_outbox: Option<String>,
    pub email_from: String,
    pub llm_base_url: Option<String>,
    pub llm_api_key: Option<SecretString>,
    pub llm_model: Option<String>,
    /// Seconds one LLM request may take before its variant falls back to the template.
    pub llm_timeout_secs: u64,
    /// Identity-provider sign-in: the provider's JWKS, its issuer, and our client id.
    pub idp_jwks_url: Option<String>,
    pub idp_issuer: Option<String>,
    pub idp_client_id: Option<String>,
    #[serde(deserialize_with = "on_off")]
    pub rate_limits: bool,
    pub dev_mode: bool,
    /// Lets calls to tenant-given URLs reach loopback and private addresses (see `outbound`).
    pub webhook_allow_private: bool,
    /// PEM roots trusted, besides the built-in ones, by every outbound HTTPS call.
    pub extra_ca_file: Option<PathBuf>,
    /// `None`: decided from the bind address (open on loopback, else by invitation).
    pub registration: Option<Registration>,
    /// `ip:port` of the DNS server for sender-domain verification; `None`: the system's.
    pub dns_resolver: Option<SocketAddr>,
    /// `off`: every account is paid; `on`: trials and paid periods (decisions §4, §15).
    pub subscriptions: Subscriptions,
    /// Recovery and check-in emails per project per UTC day, by the owner's subscription.
    pub send_quota_trial: i64,
    pub send_quota_paid: i64,
    /// Background jobs run at once per process; no project holds more than half of them.
    pub job_concurrency: usize,
    /// Connections a process may open to the database (PostgreSQL: the pool; SQLite: the
    /// readers beside the one writer). `None`: 16 on PostgreSQL, 8 readers on SQLite.
    pub db_max_connections: Option<u32>,
    pub log: String,
    pub log_format: LogFormat,
}

/// The largest `CHURN_DB_MAX_CONNECTIONS` accepted: beyond it a process would hold more
/// connections than a PostgreSQL server allows by default several times over.
pub const MAX_DB_CONNECTIONS: u32 = 500;

/// Who may create an account with `POST /auth/register`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Registration {
    Open,
    /// Only invited addresses, and the very first user.
    InviteOnly,
    /// Accounts come only from `churn users create`.
    Closed,
}

/// The shortest `CHURN_JWT_SECRET` accepted: an HS256 key an attacker cannot brute-force
/// offline from an issued token.
pub const MIN_JWT_SECRET_BYTES: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Serialize)]
struct Defaults {
    bind: &'static str,
    database_url: &'static str,
    trusted_proxies: &'static str,
    email_from: &'static str,
    llm_timeout_secs: u64,
    rate_limits: &'static str,
    dev_mode: bool,
    webhook_allow_private: bool,
    subscriptions: Subscriptions,
    send_quota_trial: i64,
    send_quota_paid: i64,
    job_concurrency: usize,
    log: &'static str,
    log_format: LogFormat,
}

const DEFAULTS: Defaults = Defaults {
    bind: "127.0.0.1:8080",
    database_url: "sqlite://./data/churn.db",
    trusted_proxies: "",
    email_from: "Churn <no-reply@localhost>",
    llm_timeout_secs: 20,
    rate_limits: "on",
    dev_mode: false,
    webhook_allow_private: false,
    subscriptions: Subscriptions::Off,
    send_quota_trial: 200,
    send_quota_paid: 20000,
    job_concurrency: crate::jobs::DEFAULT_CONCURRENCY,
    log: "info",
    log_format: LogFormat::Text,
};

/// Every setting's key, for telling the operator about misspelt variables.
const KNOWN_KEYS: &[&str] = &[
    "bind",
    "database_url",
    "public_url",
    "data_dir",
    "jwt_secret",
    "encryption_key",
    "tls_cert",
    "tls_key",
    "allow_http",
    "trusted_proxies",
    "smtp_url",
    "email_outbox",
    "email_from",
    "llm_base_url",
    "llm_api_key",
    "llm_model",
    "llm_timeout_secs",
    "idp_jwks_url",
    "idp_issuer",
    "idp_client_id",
    "rate_limits",
    "dev_mode",
    "webhook_allow_private",
    "extra_ca_file",
    "registration",
    "dns_resolver",
    "subscriptions",
    "send_quota_trial",
    "send_quota_paid",
    "job_concurrency",
    "db_max_connections",
    "log",
    "log_format",
];

#[derive(Debug, thiserror::Error)]
#[error("configuration: {0}")]
pub struct ConfigError(pub String);

impl Config {
    /// Loads defaults, then `toml_path` (when it exists), then the environment, then
    /// `overrides` (the flags actually given).
    pub fn load(
        toml_path: Option<&std::path::Path>,
        overrides: impl Serialize,
    ) -> Result<Self, ConfigError> {
        let path = toml_path
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("churn.toml"));
        let mut config: Config = Figment::from(Serialized::defaults(DEFAULTS))
            .merge(Toml::file(path))
            .merge(Env::prefixed(ENV_PREFIX).filter(|k| {
                KNOWN_KEYS
                    .iter()
                    .any(|known| k.as_str().eq_ignore_ascii_case(known))
            }))
            .merge(Serialized::globals(overrides))
            .extract()
            .map_err(|e| ConfigError(describe(e)))?;
        config.validate()?;
        config.data_dir = config.resolved_data_dir()?;
        Ok(config)
    }

    /// `CHURN_DATA_DIR`, else the SQLite file's folder (the key then stays beside the data it
    /// opens, wherever the process starts), else `./data`; absolute.
    fn resolved_data_dir(&self) -> Result<PathBuf, ConfigError> {
        let dir = if !self.data_dir.as_os_str().is_empty() {
            self.data_dir.clone()
        } else {
            match self.database_url.sqlite_path() {
                Some(file) => file.parent().map(PathBuf::from).unwrap_or_default(),
                None => PathBuf::from("./data"),
            }
        };
        let absolute = if dir.as_os_str().is_empty() {
            std::env::current_dir()
        } else {
            std::path::absolute(&dir)
        };
        absolute.map_err(|e| ConfigError(format!("CHURN_DATA_DIR: {}: {e}", dir.display())))
    }

    /// `CHURN_*` variables that name no setting; the caller logs a warning for each.
    pub fn unknown_env_vars() -> Vec<String> {
        std::env::vars()
            .map(|(var, _)| var)
            .filter(|var| {
                var.strip_prefix(ENV_PREFIX).is_some_and(|rest| {
                    !Self::is_setting(var) && !rest.to_lowercase().starts_with("test_")
                })
            })
            .collect()
    }

    /// Whether `var` (`CHURN_BIND`, …) names a setting.
    pub fn is_setting(var: &str) -> bool {
        var.strip_prefix(ENV_PREFIX)
            .is_some_and(|rest| KNOWN_KEYS.contains(&rest.to_lowercase().as_str()))
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let fail = |msg: String| Err(ConfigError(msg));
        if !self.database_url.is_sqlite() && !self.database_url.is_postgres() {
            return fail("CHURN_DATABASE_URL must start with sqlite:// or postgres://".into());
        }
        if let Some(secret) = &self.jwt_secret
            && secret.expose_secret().len() < MIN_JWT_SECRET_BYTES
        {
            return fail(format!(
                "CHURN_JWT_SECRET must be at least {MIN_JWT_SECRET_BYTES} bytes (it is {}); \
                 generate one with `openssl rand -base64 32`, or leave it unset to have one \
                 generated and stored in the database",
                secret.expose_secret().len()
            ));
        }
        if self.tls_cert.is_some() != self.tls_key.is_some() {
            return fail("CHURN_TLS_CERT and CHURN_TLS_KEY must be set together".into());
        }
        if self.dev_mode && !self.bind.ip().is_loopback() {
            return fail(format!(
                "CHURN_DEV_MODE is refused unless CHURN_BIND is a loopback address (it is {})",
                self.bind
            ));
        }
        // Behind a proxy every caller looks local, so the loopback-only dev routes would be open.
        if self.dev_mode && !self.trusted_proxies.is_empty() {
            return fail("CHURN_DEV_MODE is refused when CHURN_TRUSTED_PROXIES is set".into());
        }
        if let Some(url) = &self.public_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return fail("CHURN_PUBLIC_URL must be an http:// or https:// URL".into());
        }
        for (setting, url) in [
            ("CHURN_LLM_BASE_URL", &self.llm_base_url),
            ("CHURN_IDP_JWKS_URL", &self.idp_jwks_url),
        ] {
            if let Some(url) = url
                && let Err(e) = outbound::check_operator_url(url)
            {
                return fail(format!("{setting} {e}"));
            }
        }
        if let Some(path) = &self.extra_ca_file
            && let Err(e) = outbound::load_roots(path)
        {
            return fail(format!("CHURN_EXTRA_CA_FILE: {e}"));
        }
        for (name, quota) in [
            ("CHURN_SEND_QUOTA_TRIAL", self.send_quota_trial),
            ("CHURN_SEND_QUOTA_PAID", self.send_quota_paid),
        ] {
            if quota < 0 {
                return fail(format!("{name} must not be negative"));
            }
        }
        // One slot could not be shared: a project may hold at most half of them.
        if self.job_concurrency < 2 {
            return fail(format!(
                "CHURN_JOB_CONCURRENCY must be at least 2 (it is {})",
                self.job_concurrency
            ));
        }
        if let Some(n) = self.db_max_connections
            && !(1..=MAX_DB_CONNECTIONS).contains(&n)
        {
            return fail(format!(
                "CHURN_DB_MAX_CONNECTIONS must be between 1 and {MAX_DB_CONNECTIONS} (it is {n})"
            ));
        }
        if let Err(e) = tracing_subscriber::EnvFilter::try_new(&self.log) {
            return fail(format!("CHURN_LOG is not a valid log filter: {e}"));
        }
        Ok(())
    }

    pub fn tls_enabled(&self) -> bool {
        self.tls_cert.is_some()
    }

    pub fn allow_http(&self) -> bool {
        self.allow_http
            .unwrap_or_else(|| self.bind.ip().is_loopback())
    }

    pub fn registration(&self) -> Registration {
        self.registration
            .unwrap_or(if self.bind.ip().is_loopback() {
                Registration::Open
            } else {
                Registration::InviteOnly
            })
    }

    /// Base for links inside emails.
    pub fn public_url(&self) -> String {
        match &self.public_url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => {
                let scheme = if self.tls_enabled() { "https" } else { "http" };
                format!("{scheme}://{}", self.bind)
            }
        }
    }

    /// The SMTP relay as `host:port` (never its credentials), when one is set.
    pub fn smtp_host(&self) -> Option<String> {
        let url = url::Url::parse(self.smtp_url.as_ref()?.expose_secret()).ok();
        let host = url.as_ref().and_then(|u| u.host_str());
        Some(match (host, url.as_ref().and_then(url::Url::port)) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) => host.to_owned(),
            (None, _) => "(CHURN_SMTP_URL names no host)".to_owned(),
        })
    }

    pub fn email_outbox(&self) -> Option<PathBuf> {
        match &self.email_outbox {
            Some(dir) if dir.trim().is_empty() => None,
            Some(dir) => Some(PathBuf::from(dir)),
            None if self.smtp_url.is_none() => Some(self.data_dir.join("outbox")),
            None => None,
        }
    }

    /// What the outbound clients are built from: `CHURN_EXTRA_CA_FILE`,
    /// `CHURN_WEBHOOK_ALLOW_PRIVATE` and `CHURN_DNS_RESOLVER` (which then answers every name
    /// instead of the system's resolver). Built here so that `outbound` knows plain values only.
    pub fn outbound_settings(&self) -> Result<outbound::Settings, crate::error::Error> {
        use crate::error::Error;
        let extra_roots = match &self.extra_ca_file {
            Some(path) => outbound::load_roots(path)
                .map_err(|e| Error::validation(format!("CHURN_EXTRA_CA_FILE: {e}")))?,
            None => Vec::new(),
        };
        let resolver: Arc<dyn Resolve> = match self.dns_resolver {
            Some(server) => Arc::new(
                outbound::DnsServer::new(server)
                    .map_err(|e| Error::validation(format!("CHURN_DNS_RESOLVER: {e}")))?,
            ),
            None => Arc::new(outbound::SystemResolver),
        };
        Ok(outbound::Settings {
            extra_roots,
            allow_private: self.webhook_allow_private,
            resolver,
            ..outbound::Settings::new()
        })
    }
}

fn describe(e: figment::Error) -> String {
    let key = e.path.last().map(|k| format!("CHURN_{}", k.to_uppercase()));
    match key {
        Some(key) => format!("{key}: {}", e.kind),
        None => e.to_string(),
    }
}

fn comma_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<IpNet>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        List(Vec<String>),
        One(String),
    }
    let items = match Raw::deserialize(d)? {
        Raw::List(list) => list,
        Raw::One(s) => s.split(',').map(str::to_owned).collect(),
    };
    items
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<IpNet>()
                .or_else(|_| s.parse::<std::net::IpAddr>().map(IpNet::from))
                .map_err(|_| {
                    serde::de::Error::custom(format!("{s:?} is not an IP address or CIDR"))
                })
        })
        .collect()
}

fn on_off<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Bool(bool),
        Text(String),
    }
    match Raw::deserialize(d)? {
        Raw::Bool(b) => Ok(b),
        Raw::Text(s) => match s.to_ascii_lowercase().as_str() {
            "on" | "true" | "1" => Ok(true),
            "off" | "false" | "0" => Ok(false),
            _ => Err(serde::de::Error::custom("expected on or off")),
        },
    }
}

/// A database URL whose `Debug` never shows the password.
#[derive(Clone, Deserialize)]
#[serde(transparent)]
pub struct DatabaseUrl(String);

impl DatabaseUrl {
    pub fn new(url: impl Into<String>) -> Self {
        Self(url.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_sqlite(&self) -> bool {
        self.0.starts_with("sqlite:")
    }

    pub fn is_postgres(&self) -> bool {
        self.0.starts_with("postgres://") || self.0.starts_with("postgresql://")
    }

    /// The SQLite file (`sqlite://path`, `sqlite:path`, a query after `?` left out); `None`
    /// for PostgreSQL.
    pub fn sqlite_path(&self) -> Option<PathBuf> {
        let rest = self
            .0
            .strip_prefix("sqlite://")
            .or_else(|| self.0.strip_prefix("sqlite:"))?;
        let path = rest.split_once('?').map_or(rest, |(path, _)| path);
        Some(PathBuf::from(path))
    }

    /// The URL with its password masked, for logs and messages.
    pub fn redacted(&self) -> String {
        match url::Url::parse(&self.0) {
            Ok(mut url) if url.password().is_some() => {
                let _ = url.set_password(Some("********"));
                url.to_string()
            }
            _ => self.0.clone(),
        }
    }
}

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.redacted())
    }
}

/// Runs `f` holding figment's environment lock, so no test that sets `CHURN_*` variables
/// runs meanwhile (they share the process environment).
#[cfg(test)]
#[allow(clippy::result_large_err)] // figment::Jail's closure signature
pub(crate) fn isolated(f: impl FnOnce()) {
    let mut f = Some(f);
    figment::Jail::expect_with(|_| {
        (f.take().expect("runs once"))();
        Ok(())
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_secrets() {
        isolated(|| {
            let url = DatabaseUrl::new("postgres://churn:hunter2@db:5432/churn");
            assert!(!format!("{url:?}").contains("hunter2"));
            let config = Config::load(
                None,
                serde_json::json!({"jwt_secret": "topsecret-topsecret-topsecret-topsecret", "database_url": "postgres://u:pw@h/db"}),
            )
            .unwrap();
            let shown = format!("{config:?}");
            assert!(
                !shown.contains("topsecret") && !shown.contains(":pw@"),
                "{shown}"
            );
        });
    }

    #[test]
    fn flags_override_and_errors_name_the_setting() {
        isolated(|| {
            let config = Config::load(None, serde_json::json!({"bind": "127.0.0.1:9999", "rate_limits": "off", "trusted_proxies": "10.0.0.0/8, 192.168.1.1"})).unwrap();
            assert_eq!(config.bind.port(), 9999);
            assert!(!config.rate_limits);
            assert_eq!(config.trusted_proxies.len(), 2);
            assert!(config.allow_http());

            let err =
                Config::load(None, serde_json::json!({"bind": "not an address"})).unwrap_err();
            assert!(err.0.starts_with("CHURN_BIND"), "{}", err.0);
            let err = Config::load(
                None,
                serde_json::json!({"bind": "0.0.0.0:8080", "dev_mode": true}),
            )
            .unwrap_err();
            assert!(err.0.contains("CHURN_DEV_MODE"), "{}", err.0);
            let err = Config::load(
                None,
                serde_json::json!({"dev_mode": true, "trusted_proxies": "127.0.0.1"}),
            )
            .unwrap_err();
            assert!(err.0.contains("CHURN_TRUSTED_PROXIES"), "{}", err.0);
            let err =
                Config::load(None, serde_json::json!({"database_url": "mysql://x"})).unwrap_err();
            assert!(err.0.contains("CHURN_DATABASE_URL"), "{}", err.0);
            let err =
                Config::load(None, serde_json::json!({"jwt_secret": "x".repeat(31)})).unwrap_err();
            assert!(err.0.starts_with("CHURN_JWT_SECRET"), "{}", err.0);
            assert!(Config::load(None, serde_json::json!({"jwt_secret": "x".repeat(32)})).is_ok());
            let err = Config::load(None, serde_json::json!({"registration": "maybe"})).unwrap_err();
            assert!(err.0.starts_with("CHURN_REGISTRATION"), "{}", err.0);
            let err =
                Config::load(None, serde_json::json!({"subscriptions": "maybe"})).unwrap_err();
            assert!(err.0.starts_with("CHURN_SUBSCRIPTIONS"), "{}", err.0);
            assert!(
                err.0.contains("`off`") && err.0.contains("`on`"),
                "{}",
                err.0
            );
            let on = Config::load(None, serde_json::json!({"subscriptions": "on"})).unwrap();
            assert_eq!(on.subscriptions, Subscriptions::On);
            let err = Config::load(None, serde_json::json!({"job_concurrency": 1})).unwrap_err();
            assert!(err.0.starts_with("CHURN_JOB_CONCURRENCY"), "{}", err.0);
            let err =
                Config::load(None, serde_json::json!({"job_concurrency": "many"})).unwrap_err();
            assert!(err.0.starts_with("CHURN_JOB_CONCURRENCY"), "{}", err.0);
            let defaults = Config::load(None, serde_json::json!({})).unwrap();
            assert_eq!(defaults.job_concurrency, 8);
            assert_eq!(defaults.subscriptions, Subscriptions::Off);
        });
    }

    #[test]
    #[allow(clippy::result_large_err)] // figment::Jail's closure signature
    fn layers_apply_in_order_defaults_toml_env_flags() {
        figment::Jail::expect_with(|jail| {
            jail.create_file(
                "churn.toml",
                "bind = \"127.0.0.1:7000\"\nlog = \"debug\"\nrate_limits = \"off\"",
            )?;
            let from_toml = Config::load(None, serde_json::json!({})).unwrap();
            assert_eq!(from_toml.bind.port(), 7000);
            assert!(!from_toml.rate_limits);

            jail.set_env("CHURN_BIND", "127.0.0.1:7001");
            jail.set_env("CHURN_DATABASE_URL", "postgres://churn@db/churn");
            jail.set_env("CHURN_TRUSTED_PROXIES", "10.0.0.0/8,127.0.0.1");
            jail.set_env("CHURN_EMAIL_OUTBOX", "");
            let from_env = Config::load(None, serde_json::json!({})).unwrap();
            assert_eq!(from_env.bind.port(), 7001);
            assert!(from_env.database_url.is_postgres());
            assert_eq!(from_env.trusted_proxies.len(), 2);
            assert_eq!(from_env.email_outbox(), None);
            assert_eq!(
                from_env.log, "debug",
                "toml still applies where env is silent"
            );

            let from_flags =
                Config::load(None, serde_json::json!({"bind": "127.0.0.1:7002"})).unwrap();
            assert_eq!(from_flags.bind.port(), 7002);

            jail.set_env("CHURN_LOG", "info,=");
            let err = Config::load(None, serde_json::json!({})).unwrap_err();
            assert!(err.0.starts_with("CHURN_LOG"), "{}", err.0);
            Ok(())
        });
    }

    #[test]
    fn outbound_settings_are_checked_at_start_up() {
        isolated(|| {
            let load = |settings: serde_json::Value| Config::load(None, settings);
            assert!(load(serde_json::json!({"llm_base_url": "http://127.0.0.1:9000/v1", "idp_jwks_url": "https://idp.example/jwks"})).is_ok());
            let err =
                load(serde_json::json!({"llm_base_url": "http://llm.example/v1"})).unwrap_err();
            assert!(
                err.0
                    .starts_with("CHURN_LLM_BASE_URL must be an https:// URL"),
                "{}",
                err.0
            );
            let err =
                load(serde_json::json!({"idp_jwks_url": "http://10.0.0.1/jwks"})).unwrap_err();
            assert!(err.0.starts_with("CHURN_IDP_JWKS_URL"), "{}", err.0);

            let dir = tempfile::tempdir().unwrap();
            let missing = dir.path().join("missing.pem");
            let err = load(serde_json::json!({"extra_ca_file": missing})).unwrap_err();
            assert!(
                err.0.starts_with("CHURN_EXTRA_CA_FILE: cannot read"),
                "{}",
                err.0
            );
            let empty = dir.path().join("empty.pem");
            std::fs::write(&empty, "").unwrap();
            let err = load(serde_json::json!({"extra_ca_file": empty})).unwrap_err();
            assert!(err.0.contains("no PEM certificate"), "{}", err.0);
        });
    }

    #[test]
    fn plain_http_defaults_to_loopback_only_and_outbox_follows_smtp() {
        isolated(|| {
            let public = Config::load(None, serde_json::json!({"bind": "0.0.0.0:8080"})).unwrap();
            assert!(!public.allow_http());
            assert_eq!(public.registration(), Registration::InviteOnly);
            let local = Config::load(None, serde_json::json!({})).unwrap();
            assert_eq!(local.registration(), Registration::Open);
            let closed = Config::load(
                None,
                serde_json::json!({"bind": "127.0.0.1:1", "registration": "closed"}),
            )
            .unwrap();
            assert_eq!(closed.registration(), Registration::Closed);
            let here = std::env::current_dir().unwrap();
            assert_eq!(public.email_outbox(), Some(here.join("data/outbox")));
            let off = Config::load(None, serde_json::json!({"email_outbox": ""})).unwrap();
            assert_eq!(off.email_outbox(), None);
        });
    }

    #[test]
    fn the_data_folder_is_the_sqlite_files_unless_given() {
        isolated(|| {
            let load = |settings: serde_json::Value| Config::load(None, settings).unwrap();
            let here = std::env::current_dir().unwrap();
            let beside =
                load(serde_json::json!({"database_url": "sqlite:///srv/churn/churn.db?mode=rwc"}));
            assert_eq!(beside.data_dir, PathBuf::from("/srv/churn"));
            let relative = load(serde_json::json!({"database_url": "sqlite://db/churn.db"}));
            assert_eq!(relative.data_dir, here.join("db"));
            let bare = load(serde_json::json!({"database_url": "sqlite:churn.db"}));
            assert_eq!(bare.data_dir, here);
            let given = load(
                serde_json::json!({"database_url": "sqlite:///srv/churn.db", "data_dir": "/var/lib/churn"}),
            );
            assert_eq!(given.data_dir, PathBuf::from("/var/lib/churn"));
            let postgres = load(serde_json::json!({"database_url": "postgres://db/churn"}));
            assert_eq!(postgres.data_dir, here.join("data"));
        });
    }

    #[test]
    fn the_pool_size_is_bounded() {
        isolated(|| {
            let load = |n: serde_json::Value| {
                Config::load(None, serde_json::json!({"db_max_connections": n}))
            };
            assert_eq!(
                load(serde_json::json!(1)).unwrap().db_max_connections,
                Some(1)
            );
            assert_eq!(
                load(serde_json::json!(MAX_DB_CONNECTIONS))
                    .unwrap()
                    .db_max_connections,
                Some(MAX_DB_CONNECTIONS)
            );
            for bad in [
                serde_json::json!(0),
                serde_json::json!(MAX_DB_CONNECTIONS + 1),
                serde_json::json!("many"),
                serde_json::json!(-1),
            ] {
                let err = load(bad.clone()).unwrap_err();
                assert!(
                    err.0.starts_with("CHURN_DB_MAX_CONNECTIONS"),
                    "{bad}: {}",
                    err.0
                );
            }
        });
    }
}
