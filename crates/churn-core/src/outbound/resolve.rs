//! Name resolution for outbound calls. The system resolver answers; for tenant-given URLs a
//! filter then drops every non-public address, so the address actually connected to is the
//! one checked (a name that resolves to a public address when validated and to 127.0.0.1
//! when called gets nowhere).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::address::is_public;

/// The operating system's resolver (getaddrinfo on tokio's blocking pool).
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// A given DNS server (`CHURN_DNS_RESOLVER`), asked over UDP and TCP instead of the system's
/// configuration.
#[derive(Clone)]
pub struct DnsServer {
    resolver: Arc<hickory_resolver::Resolver<hickory_resolver::net::runtime::TokioRuntimeProvider>>,
}

impl DnsServer {
    pub fn new(server: SocketAddr) -> Result<Self, String> {
        use hickory_resolver::config::{NameServerConfig, ResolverConfig};
        let mut ns = NameServerConfig::udp_and_tcp(server.ip());
        for connection in &mut ns.connections {
            connection.port = server.port();
        }
        let mut builder = hickory_resolver::Resolver::builder_with_config(
            ResolverConfig::from_name_servers(vec![ns]),
            hickory_resolver::net::runtime::TokioRuntimeProvider::default(),
        );
        builder.options_mut().timeout = std::time::Duration::from_secs(5);
        let resolver = builder.build().map_err(|e| e.to_string())?;
        Ok(Self {
            resolver: Arc::new(resolver),
        })
    }
}

impl Resolve for DnsServer {
    fn resolve(&self, name: Name) -> Resolving {
        let resolver = self.resolver.clone();
        // Fully qualified: the search domains of the host play no part.
        let host = format!("{}.", name.as_str().trim_end_matches('.'));
        Box::pin(async move {
            let found = resolver.lookup_ip(host).await?;
            let addrs: Vec<SocketAddr> = found.iter().map(|ip| SocketAddr::new(ip, 0)).collect();
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// Fixed answers, for tests: a name maps to the addresses given, any other name fails.
#[derive(Debug, Default, Clone)]
pub struct StaticResolver {
    hosts: HashMap<String, Vec<IpAddr>>,
}

impl StaticResolver {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with(mut self, host: &str, ip: IpAddr) -> Self {
        self.hosts
            .entry(host.to_ascii_lowercase())
            .or_default()
            .push(ip);
        self
    }
}

impl Resolve for StaticResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let found = self.hosts.get(&name.as_str().to_ascii_lowercase()).cloned();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let ips = found.ok_or_else(|| format!("{host} is not a known name"))?;
            let addrs: Vec<SocketAddr> = ips.into_iter().map(|ip| SocketAddr::new(ip, 0)).collect();
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// Every address of a name was non-public: the call is refused before connecting.
#[derive(Debug, thiserror::Error)]
#[error("{host} resolves only to non-public addresses")]
pub struct NonPublicName {
    pub host: String,
}

/// The resolver a client is built with: the inner resolver's answer, without non-public
/// addresses when `public_only`.
pub(super) struct Filtered {
    pub(super) inner: Arc<dyn Resolve>,
    pub(super) public_only: bool,
}

impl Resolve for Filtered {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        let lookup = self.inner.resolve(name);
        let public_only = self.public_only;
        Box::pin(async move {
            let addrs = lookup.await?;
            if !public_only {
                return Ok(addrs);
            }
            let kept: Vec<SocketAddr> = addrs.filter(|a| is_public(a.ip())).collect();
            if kept.is_empty() {
                return Err(Box::new(NonPublicName { host }) as _);
            }
            Ok(Box::new(kept.into_iter()) as Addrs)
        })
    }
}

/// All addresses `host` resolves to through `resolver` (for checks at configuration time).
pub(super) async fn lookup(resolver: &dyn Resolve, host: &str) -> Option<Vec<IpAddr>> {
    let name: Name = host.parse().ok()?;
    let addrs = resolver.resolve(name).await.ok()?;
    Some(addrs.map(|a| a.ip()).collect())
}
