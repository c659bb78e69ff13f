//! Which IP addresses user-supplied URLs may not reach, and which ports
//! they may name.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Whether `ip` is off limits for fetching user-supplied URLs.
///
/// IPv4: `0.0.0.0/8` (this network, incl. unspecified), `10/8`,
/// `100.64/10` (CGNAT), `127/8`, `169.254/16`, `172.16/12`, `192.0.0/24`
/// (IETF protocol assignments), `192.0.2/24`, `198.51.100/24`,
/// `203.0.113/24` (documentation), `192.88.99/24` (6to4 relay),
/// `192.168/16`, `198.18/15` (benchmarking), `224/4` (multicast) and
/// `240/4` (reserved, incl. broadcast `255.255.255.255`).
///
/// IPv6: everything outside global unicast `2000::/3` (so `::`, `::1`,
/// `fc00::/7`, `fe80::/10`, `fec0::/10`, `ff00::/8`, `100::/64`,
/// `64:ff9b:1::/48`, ...), except that IPv4-mapped `::ffff:a.b.c.d`,
/// IPv4-compatible `::a.b.c.d` and NAT64 `64:ff9b::a.b.c.d` addresses are
/// judged by their embedded IPv4 address. Inside `2000::/3`:
/// `2001::/23` (IETF protocol assignments, incl. Teredo), `2001:db8::/32`
/// and `3fff::/20` (documentation) and `5f00::/16` are forbidden; 6to4
/// `2002::/16` is judged by its embedded IPv4 address.
pub fn is_forbidden_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_forbidden_v4(v4),
        IpAddr::V6(v6) => is_forbidden_v6(v6),
    }
}

/// Whether an image URL may name `port`: 80, 443, or an unprivileged port
/// (1024–65535) outside the Fetch standard's "bad ports" (those browsers
/// refuse: SIP, X11, IRC, NFS, ...).
///
/// Ports below 1024 other than 80 and 443 belong to services that do not
/// speak HTTP (SMTP 25, SSH 22, ...); an HTTP request smuggled into one of
/// them is an attack, never an image. Unprivileged ports stay open because
/// image hosts and object stores do serve on 8080, 8443, 9000 and the like.
/// The rule holds whatever the address policy.
pub fn is_allowed_port(port: u16) -> bool {
    match port {
        80 | 443 => true,
        0..=1023 => false,
        _ => !BAD_UNPRIVILEGED_PORTS.contains(&port),
    }
}

/// The Fetch standard's bad ports from 1024 up
/// (<https://fetch.spec.whatwg.org/#bad-port>).
const BAD_UNPRIVILEGED_PORTS: [u16; 19] = [
    1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679,
    6697, 10080,
];

fn is_forbidden_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    match a {
        0 | 10 | 127 => true,
        100 => (64..128).contains(&b),
        169 => b == 254,
        172 => (16..32).contains(&b),
        192 => matches!((b, c), (0, 0) | (0, 2) | (88, 99) | (168, _)),
        198 => b == 18 || b == 19 || (b == 51 && c == 100),
        203 => b == 0 && c == 113,
        224..=255 => true,
        _ => false,
    }
}

fn is_forbidden_v6(ip: Ipv6Addr) -> bool {
    let seg = ip.segments();
    let embedded_v4 = |hi: u16, lo: u16| {
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };

    // ::ffff:a.b.c.d (IPv4-mapped)
    if seg[..5] == [0; 5] && seg[5] == 0xffff {
        return is_forbidden_v4(embedded_v4(seg[6], seg[7]));
    }
    // ::a.b.c.d (IPv4-compatible, deprecated); also covers :: and ::1,
    // whose embedded 0.0.0.0 / 0.0.0.1 are forbidden.
    if seg[..6] == [0; 6] {
        return is_forbidden_v4(embedded_v4(seg[6], seg[7]));
    }
    // 64:ff9b::a.b.c.d (NAT64 well-known prefix)
    if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return is_forbidden_v4(embedded_v4(seg[6], seg[7]));
    }
    // Only global unicast from here on.
    if seg[0] & 0xe000 != 0x2000 {
        return true;
    }
    // 2001::/23: IETF protocol assignments (Teredo, ORCHID, ...)
    if seg[0] == 0x2001 && seg[1] < 0x0200 {
        return true;
    }
    // 2001:db8::/32: documentation
    if seg[0] == 0x2001 && seg[1] == 0x0db8 {
        return true;
    }
    // 2002::/16: 6to4, embeds an IPv4 address in bits 16..48
    if seg[0] == 0x2002 {
        return is_forbidden_v4(embedded_v4(seg[1], seg[2]));
    }
    // 3fff::/20: documentation (RFC 9637)
    if seg[0] == 0x3fff && seg[1] < 0x1000 {
        return true;
    }
    // 5f00::/16: SRv6 SIDs, not globally routable
    if seg[0] == 0x5f00 {
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_table() {
        let forbidden = [
            "127.0.0.1",
            "127.255.255.254",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "0.0.0.0",
            "0.1.2.3",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "198.51.100.7",
            "203.0.113.9",
            "198.18.0.1",
            "198.19.255.255",
            "192.88.99.1",
            "::",
            "::1",
            "fe80::1",
            "febf::1",
            "fec0::1",
            "fc00::1",
            "fd12:3456::1",
            "ff02::1",
            "100::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::1",
            "2001:db8::1",
            "2001::1",
            "2002:7f00:1::1",
            "2002:c0a8:101::1",
            "3fff::1",
            "3fff:fff::1",
            "5f00::1",
            // Boundaries, cloud metadata services and mapped forms of each range.
            "100.64.0.0",
            "100.100.100.200",
            "169.254.0.1",
            "224.0.0.0",
            "239.255.255.255",
            "ff0e::1",
            "fd00:ec2::254",
            "::ffff:0.0.0.0",
            "::ffff:100.64.0.1",
            "::ffff:224.0.0.1",
            "::ffff:240.0.0.1",
            "64:ff9b::a40:1",
        ];
        for ip in forbidden {
            let parsed: IpAddr = ip.parse().unwrap();
            assert!(is_forbidden_ip(parsed), "{ip} should be forbidden");
        }

        let allowed = [
            "8.8.8.8",
            "1.1.1.1",
            "172.32.0.1",
            "172.15.255.255",
            "100.128.0.1",
            "100.63.255.255",
            "192.169.0.1",
            "169.255.0.1",
            "198.20.0.1",
            "223.255.255.255",
            "11.0.0.1",
            "2606:4700::1111",
            "2001:4860:4860::8888",
            "2a00:1450::1",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ];
        for ip in allowed {
            let parsed: IpAddr = ip.parse().unwrap();
            assert!(!is_forbidden_ip(parsed), "{ip} should be allowed");
        }
    }

    #[test]
    fn port_allow_list() {
        for port in [80, 443, 1024, 3000, 8080, 8443, 9000, 32768, 65535] {
            assert!(is_allowed_port(port), "{port} should be allowed");
        }
        for port in [0, 1, 21, 22, 23, 25, 53, 79, 81, 110, 143, 442, 444, 587, 993, 1023] {
            assert!(!is_allowed_port(port), "{port} should be refused");
        }
        for port in BAD_UNPRIVILEGED_PORTS {
            assert!(!is_allowed_port(port), "{port} is a bad port");
        }
    }
}
