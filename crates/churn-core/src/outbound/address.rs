//! Which IP addresses a tenant-given URL may reach: public unicast only. Everything else
//! (loopback, private, link-local, CGNAT, multicast, unspecified, documentation, benchmarking,
//! reserved, ULA, and IPv4 embedded in IPv6 that is itself non-public) is refused.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// IPv4 blocks that are not reachable public unicast (IANA special-purpose registry).
const V4_NOT_PUBLIC: &[(u32, u8)] = &[
    (0x0000_0000, 8),  // 0.0.0.0/8 "this network", unspecified
    (0x0a00_0000, 8),  // 10.0.0.0/8 private
    (0x6440_0000, 10), // 100.64.0.0/10 CGNAT
    (0x7f00_0000, 8),  // 127.0.0.0/8 loopback
    (0xa9fe_0000, 16), // 169.254.0.0/16 link-local (cloud metadata)
    (0xac10_0000, 12), // 172.16.0.0/12 private
    (0xc000_0000, 24), // 192.0.0.0/24 IETF protocol assignments
    (0xc000_0200, 24), // 192.0.2.0/24 documentation
    (0xc058_6300, 24), // 192.88.99.0/24 6to4 relay anycast (deprecated)
    (0xc0a8_0000, 16), // 192.168.0.0/16 private
    (0xc612_0000, 15), // 198.18.0.0/15 benchmarking
    (0xc633_6400, 24), // 198.51.100.0/24 documentation
    (0xcb00_7100, 24), // 203.0.113.0/24 documentation
    (0xe000_0000, 4),  // 224.0.0.0/4 multicast
    (0xf000_0000, 4),  // 240.0.0.0/4 reserved, and the broadcast address
];

/// Whether a connection to `ip` would leave for the public internet.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let bits = u32::from(ip);
    !V4_NOT_PUBLIC
        .iter()
        .any(|&(net, len)| bits >> (32 - len) == net >> (32 - len))
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let bits = u128::from(ip);
    let within = |net: u128, len: u32| bits >> (128 - len) == net >> (128 - len);
    // IPv4-mapped (::ffff:0:0/96) and NAT64 (64:ff9b::/96) addresses reach the embedded IPv4.
    if within(0xffff_0000_0000, 96) || within(0x0064_ff9b << 96, 96) {
        return is_public_v4(Ipv4Addr::from(bits as u32));
    }
    // 6to4 (2002::/16) carries the IPv4 address in the next 32 bits.
    if within(0x2002 << 112, 16) {
        return is_public_v4(Ipv4Addr::from((bits >> 80) as u32));
    }
    // Only global unicast (2000::/3) is public; inside it, the IETF protocol block
    // (2001::/23: Teredo, benchmarking, ORCHID) and documentation (2001:db8::/32) are not.
    // Outside it lie ::, ::1, ULA fc00::/7, link-local fe80::/10, multicast ff00::/8 and the rest.
    within(0x2000 << 112, 3) && !within(0x2001 << 112, 23) && !within(0x2001_0db8 << 96, 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_unicast_is_public() {
        let table = [
            ("8.8.8.8", true),
            ("1.1.1.1", true),
            ("93.184.216.34", true),
            ("100.63.255.255", true),
            ("100.128.0.0", true),
            ("172.15.255.255", true),
            ("172.32.0.0", true),
            ("223.255.255.255", true),
            ("0.0.0.0", false),
            ("0.1.2.3", false),
            ("127.0.0.1", false),
            ("127.255.255.254", false),
            ("10.0.0.1", false),
            ("10.255.255.255", false),
            ("172.16.0.1", false),
            ("172.31.255.255", false),
            ("192.168.1.1", false),
            ("169.254.169.254", false),
            ("100.64.0.1", false),
            ("100.127.255.255", false),
            ("192.0.0.8", false),
            ("192.0.2.1", false),
            ("198.18.0.1", false),
            ("198.19.255.255", false),
            ("198.51.100.7", false),
            ("203.0.113.9", false),
            ("224.0.0.1", false),
            ("239.255.255.250", false),
            ("240.0.0.1", false),
            ("255.255.255.255", false),
            ("2606:4700:4700::1111", true),
            ("2a00:1450:4001:80b::200e", true),
            ("::ffff:8.8.8.8", true),
            ("64:ff9b::808:808", true),
            ("2002:808:808::1", true),
            ("::", false),
            ("::1", false),
            ("::ffff:127.0.0.1", false),
            ("::ffff:10.0.0.1", false),
            ("::ffff:169.254.169.254", false),
            ("64:ff9b::7f00:1", false),
            ("2002:7f00:1::1", false),
            ("2002:c0a8:101::1", false),
            ("::127.0.0.1", false),
            ("fc00::1", false),
            ("fd12:3456:789a::1", false),
            ("fe80::1", false),
            ("fec0::1", false),
            ("ff02::1", false),
            ("2001:db8::1", false),
            ("2001::1", false),
            ("2001:2::1", false),
            ("100::1", false),
        ];
        for (ip, public) in table {
            assert_eq!(is_public(ip.parse().unwrap()), public, "{ip}");
        }
    }
}
