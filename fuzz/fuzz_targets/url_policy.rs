//! The URL policy, without any network: image values that parse as URLs,
//! [`atelier_inputs::classify_url`] and [`atelier_inputs::is_forbidden_ip`].
//!
//! Input: arbitrary bytes, read as an image value (lossy UTF-8) and, from
//! their first 4 and 16 bytes, as an IPv4 and an IPv6 address. Invariants:
//!
//! * an address in a range the policy refuses (checked here with the
//!   standard library's predicates and a table of special-purpose ranges,
//!   independently of `ip.rs`) is always forbidden, and an IPv4 address is
//!   judged the same when embedded in IPv6 (mapped, compatible, NAT64, 6to4);
//! * a URL accepted as an IP literal is one whose address is allowed, and it
//!   is the address the HTTP client (hyper) connects to: the host it parses
//!   from the URL's serialisation is that IP; a URL accepted as a host name
//!   is one that hyper does not take for an IP literal (it goes through the
//!   filtering resolver), and is not `localhost`;
//! * the URL hyper sees has the host and port that were checked;
//! * allowing private addresses never refuses an address, and everything the
//!   strict policy accepts the lax one accepts the same way; neither accepts
//!   a port outside `is_allowed_port`;
//! * re-parsing a URL's serialisation classifies it the same way.

#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use atelier_inputs::{
    classify_url, is_allowed_port, is_forbidden_ip, parse, ImageSource, InputError, InputPolicy, UrlHost,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(v4) = data.get(..4) {
        check_v4(Ipv4Addr::new(v4[0], v4[1], v4[2], v4[3]));
    }
    if let Some(v6) = data.get(..16) {
        let mut octets = [0u8; 16];
        octets.copy_from_slice(v6);
        check_v6(Ipv6Addr::from(octets));
    }
    let value = String::from_utf8_lossy(data);
    match parse(&value) {
        Ok(ImageSource::Url(url)) => check_url(&url),
        Ok(ImageSource::Inline(bytes)) => assert!(!bytes.is_empty(), "empty inline image"),
        Err(InputError::UnsupportedScheme(scheme)) => {
            assert!(scheme != "http" && scheme != "https", "http(s) refused as a scheme")
        }
        Err(_) => {}
    }
});

/// Ranges refused whatever `ip.rs` says, from the standard library and
/// the IANA special-purpose registry.
fn must_refuse_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_documentation()
        || ip.is_unspecified()
        || ip.is_multicast()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (b == 18 || b == 19))
        || a >= 240
}

fn check_v4(ip: Ipv4Addr) {
    let forbidden = is_forbidden_ip(ip.into());
    if must_refuse_v4(ip) {
        assert!(forbidden, "{ip} must be forbidden");
    }
    let [a, b, c, d] = ip.octets();
    let embedded = [
        ip.to_ipv6_mapped(),
        ip.to_ipv6_compatible(),
        Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, u16::from_be_bytes([a, b]), u16::from_be_bytes([c, d])),
        Ipv6Addr::new(0x2002, u16::from_be_bytes([a, b]), u16::from_be_bytes([c, d]), 0, 0, 0, 0, 1),
    ];
    for v6 in embedded {
        assert_eq!(is_forbidden_ip(v6.into()), forbidden, "{v6} judged unlike {ip}");
    }
}

fn check_v6(ip: Ipv6Addr) {
    let forbidden = is_forbidden_ip(ip.into());
    let seg = ip.segments();
    let embeds_v4 =
        seg[..5] == [0; 5] && (seg[5] == 0 || seg[5] == 0xffff) || seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0];
    if embeds_v4 {
        let [a, b] = seg[6].to_be_bytes();
        let [c, d] = seg[7].to_be_bytes();
        assert_eq!(forbidden, is_forbidden_ip(Ipv4Addr::new(a, b, c, d).into()), "{ip}");
        return;
    }
    let must_refuse = ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || seg[0] & 0xfe00 == 0xfc00 // unique local
        || seg[0] & 0xffc0 == 0xfe80 // link local
        || seg[0] & 0xe000 != 0x2000 // outside global unicast
        || (seg[0] == 0x2001 && seg[1] == 0x0db8); // documentation
    if must_refuse {
        assert!(forbidden, "{ip} must be forbidden");
    }
}

fn strict() -> InputPolicy {
    InputPolicy::default()
}

fn lax() -> InputPolicy {
    InputPolicy { allow_private_addresses: true, ..InputPolicy::default() }
}

fn check_url(url: &url::Url) {
    assert!(matches!(url.scheme(), "http" | "https"), "{url}: scheme");
    let strict_result = classify_url(url, &strict());
    let lax_result = classify_url(url, &lax());
    assert!(
        !matches!(lax_result, Err(InputError::ForbiddenAddress(_))),
        "{url}: lax policy refused an address"
    );
    if let Ok(host) = &strict_result {
        assert_eq!(lax_result.as_ref(), Ok(host), "{url}: lax policy disagrees");
    }
    if lax_result.is_ok() {
        let port = url.port_or_known_default();
        assert!(port.is_some_and(is_allowed_port), "{url}: accepted port {port:?}");
    }

    // What hyper does with the URL reqwest hands it: parse its text as an
    // `http::Uri`, strip the IPv6 brackets from the host, and connect directly
    // when the host parses as an IP address; otherwise resolve it.
    let uri: Option<http::Uri> = url.as_str().parse().ok();
    let hyper_host =
        uri.as_ref().and_then(|u| u.host()).map(|h| h.trim_start_matches('[').trim_end_matches(']'));
    let hyper_ip = hyper_host.and_then(|h| h.parse::<IpAddr>().ok());
    if let Some(uri) = &uri {
        assert_eq!(uri.host(), url.host_str(), "{url}: hyper sees another host");
        assert_eq!(uri.port_u16(), url.port(), "{url}: hyper sees another port");
    }
    match (&strict_result, &lax_result) {
        (Ok(UrlHost::Ip(ip)), _) => {
            assert!(!is_forbidden_ip(*ip), "{url}: accepted forbidden {ip}");
            match ip {
                IpAddr::V4(v4) => assert!(!must_refuse_v4(*v4), "{url}: accepted {v4}"),
                IpAddr::V6(v6) => check_v6(*v6),
            }
            if uri.is_some() {
                assert_eq!(hyper_ip, Some(*ip), "{url}: hyper connects elsewhere than {ip}");
            }
        }
        (Ok(UrlHost::Domain(name)), _) => {
            assert_eq!(hyper_ip, None, "{url}: host name {name} bypasses the resolver as an IP literal");
            let name = name.trim_end_matches('.');
            assert!(name != "localhost" && !name.ends_with(".localhost"), "{url}: localhost accepted");
        }
        (Err(_), Ok(UrlHost::Ip(ip))) => {
            if uri.is_some() {
                assert_eq!(hyper_ip, Some(*ip), "{url}: hyper connects elsewhere than {ip}");
            }
        }
        (Err(_), _) => {}
    }

    // The serialisation means the same URL.
    if let Ok(ImageSource::Url(again)) = parse(url.as_str()) {
        assert_eq!(classify_url(&again, &strict()), strict_result, "{url}: re-parsed differently");
    } else {
        panic!("{url}: its serialisation is not a URL value");
    }
}
