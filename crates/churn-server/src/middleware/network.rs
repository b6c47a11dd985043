//! Where a request really comes from: the peer address, or, behind a trusted proxy, what the
//! proxy says in `X-Forwarded-For` / `X-Forwarded-Proto`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use axum::extract::{ConnectInfo, Request};
use ipnet::IpNet;

#[derive(Debug, Clone)]
pub struct Network {
    pub trusted_proxies: Vec<IpNet>,
    pub tls: bool,
    pub allow_http: bool,
}

impl Network {
    fn peer(req: &Request) -> IpAddr {
        req.extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|c| c.0.ip())
            .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
    }

    fn trusted(&self, ip: IpAddr) -> bool {
        self.trusted_proxies.iter().any(|net| net.contains(&ip))
    }

    /// The client's address: the peer, or behind trusted proxies the right-most forwarded
    /// address that is not itself a trusted proxy (entries further left can be forged).
    pub fn client_ip(&self, req: &Request) -> IpAddr {
        let peer = Self::peer(req);
        if !self.trusted(peer) {
            return peer;
        }
        let forwarded = req
            .headers()
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .filter_map(|s| s.trim().parse::<IpAddr>().ok())
            .collect::<Vec<_>>();
        forwarded
            .into_iter()
            .rev()
            .find(|ip| !self.trusted(*ip))
            .unwrap_or(peer)
    }

    pub fn is_secure(&self, req: &Request) -> bool {
        if self.tls {
            return true;
        }
        self.trusted(Self::peer(req))
            && req
                .headers()
                .get("x-forwarded-proto")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|proto| proto.trim().eq_ignore_ascii_case("https"))
    }

    pub fn is_loopback_peer(req: &Request) -> bool {
        Self::peer(req).is_loopback()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(peer: &str, xff: Option<&str>, proto: Option<&str>) -> Request {
        let mut builder = Request::builder().uri("/");
        if let Some(xff) = xff {
            builder = builder.header("x-forwarded-for", xff);
        }
        if let Some(proto) = proto {
            builder = builder.header("x-forwarded-proto", proto);
        }
        let mut req = builder.body(axum::body::Body::empty()).unwrap();
        req.extensions_mut()
            .insert(ConnectInfo(peer.parse::<SocketAddr>().unwrap()));
        req
    }

    #[test]
    fn forwarded_headers_count_only_from_trusted_proxies() {
        let net = Network {
            trusted_proxies: vec!["10.0.0.0/8".parse().unwrap()],
            tls: false,
            allow_http: false,
        };
        let via_proxy = request(
            "10.0.0.5:1",
            Some("1.1.1.1, 2.2.2.2, 10.0.0.9"),
            Some("https"),
        );
        assert_eq!(
            net.client_ip(&via_proxy),
            "2.2.2.2".parse::<IpAddr>().unwrap()
        );
        assert!(net.is_secure(&via_proxy));
        let direct = request("8.8.8.8:1", Some("1.1.1.1"), Some("https"));
        assert_eq!(net.client_ip(&direct), "8.8.8.8".parse::<IpAddr>().unwrap());
        assert!(
            !net.is_secure(&direct),
            "an untrusted peer cannot claim HTTPS"
        );
    }
}
