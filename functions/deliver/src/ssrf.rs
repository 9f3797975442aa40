//! The SSRF guard: which addresses a delivery may connect to, decided on the RESOLVED address at
//! connect time (never on the name: a public name resolving to `127.0.0.1` or `169.254.169.254`
//! is refused, and the address checked is the one connected to, so DNS rebinding gains nothing).
//!
//! Only globally routable unicast addresses pass. Refused: loopback, unspecified, private
//! (10/8, 172.16/12, 192.168/16), shared (100.64/10), link-local (169.254/16 with the cloud
//! metadata address 169.254.169.254; fe80::/10), unique-local (fc00::/7, with AWS's IPv6
//! metadata address fd00:ec2::254), multicast, broadcast, documentation, benchmarking and
//! reserved ranges, and IPv6 forms that embed an IPv4 address (mapped, compatible, NAT64, 6to4)
//! when the embedded address is refused. With the local setting (`DELIVERY_ALLOW_LOOPBACK`),
//! loopback passes, and plain `http://` is allowed to loopback only.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{addr} is {kind}: deliveries go only to public addresses")]
pub struct Refusal {
    pub addr: IpAddr,
    pub kind: &'static str,
}

/// Where deliveries may connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressPolicy {
    /// Loopback allowed (local testing only).
    pub allow_loopback: bool,
}

impl AddressPolicy {
    /// `Ok` for an address a delivery may connect to.
    pub fn check(&self, addr: IpAddr) -> Result<(), Refusal> {
        match classify(addr) {
            None => Ok(()),
            Some("loopback") if self.allow_loopback => Ok(()),
            Some(kind) => Err(Refusal { addr, kind }),
        }
    }
}

/// The kind of a non-public address, `None` for a public one.
pub fn classify(addr: IpAddr) -> Option<&'static str> {
    match addr {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(a: Ipv4Addr) -> Option<&'static str> {
    let [o0, o1, o2, _] = a.octets();
    if a == Ipv4Addr::new(169, 254, 169, 254) {
        return Some("the cloud metadata address");
    }
    if a.is_loopback() {
        return Some("loopback");
    }
    let kind = match (o0, o1, o2) {
        (0, _, _) => "unspecified or \"this network\"",
        (10, _, _) | (192, 168, _) => "private",
        (172, b, _) if (16..32).contains(&b) => "private",
        (100, b, _) if (64..128).contains(&b) => "shared (carrier-grade NAT)",
        (169, 254, _) => "link-local",
        (192, 0, 0) => "reserved for protocol assignments",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "documentation",
        (198, 18..=19, _) => "benchmarking",
        (224..=239, _, _) => "multicast",
        (240..=255, _, _) => "reserved or broadcast",
        _ => return None,
    };
    Some(kind)
}

fn classify_v6(a: Ipv6Addr) -> Option<&'static str> {
    let s = a.segments();
    if a == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
        return Some("the cloud metadata address");
    }
    if a.is_loopback() {
        return Some("loopback");
    }
    if a.is_unspecified() {
        return Some("unspecified");
    }
    // IPv4 embedded: mapped (::ffff:a.b.c.d), compatible (::a.b.c.d), NAT64 (64:ff9b::/96).
    if let Some(v4) = a.to_ipv4_mapped() {
        return classify_v4(v4);
    }
    let embedded = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    if s[..6] == [0, 0, 0, 0, 0, 0] {
        // IPv4-compatible (deprecated): never a real destination.
        return Some(classify_v4(embedded).unwrap_or("reserved (IPv4-compatible)"));
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        // NAT64: reaches the embedded IPv4 address.
        return classify_v4(embedded);
    }
    if s[0] == 0x2002 {
        // 6to4: the IPv4 address in the next 32 bits.
        let v4 = Ipv4Addr::new((s[1] >> 8) as u8, s[1] as u8, (s[2] >> 8) as u8, s[2] as u8);
        if let Some(kind) = classify_v4(v4) {
            return Some(kind);
        }
    }
    let kind = match s[0] {
        x if x & 0xfe00 == 0xfc00 => "unique-local (private)",
        x if x & 0xffc0 == 0xfe80 => "link-local",
        x if x & 0xffc0 == 0xfec0 => "site-local (deprecated private)",
        x if x & 0xff00 == 0xff00 => "multicast",
        0x2001 if s[1] == 0x0db8 => "documentation",
        0x0100 if s[1..4] == [0, 0, 0] => "discard-only",
        _ => return None,
    };
    Some(kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(text: &str) -> Option<&'static str> {
        classify(text.parse().unwrap())
    }

    #[test]
    fn public_addresses_pass() {
        for ok in [
            "8.8.8.8",
            "1.1.1.1",
            "52.94.236.248",
            "172.15.255.255",
            "172.32.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "169.253.1.1",
            "2606:4700:4700::1111",
            "2a00:1450:4001:80b::200e",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert_eq!(kind(ok), None, "{ok}");
        }
    }

    #[test]
    fn every_private_kind_is_refused() {
        let cases = [
            ("127.0.0.1", "loopback"),
            ("127.255.0.9", "loopback"),
            ("::1", "loopback"),
            ("0.0.0.0", "unspecified or \"this network\""),
            ("::", "unspecified"),
            ("10.0.0.1", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("100.64.0.1", "shared (carrier-grade NAT)"),
            ("169.254.169.254", "the cloud metadata address"),
            ("169.254.0.1", "link-local"),
            ("fd00:ec2::254", "the cloud metadata address"),
            ("fe80::1", "link-local"),
            ("fc00::1", "unique-local (private)"),
            ("fd12:3456::1", "unique-local (private)"),
            ("fec0::1", "site-local (deprecated private)"),
            ("ff02::1", "multicast"),
            ("224.0.0.1", "multicast"),
            ("255.255.255.255", "reserved or broadcast"),
            ("240.0.0.1", "reserved or broadcast"),
            ("192.0.2.1", "documentation"),
            ("2001:db8::1", "documentation"),
            ("198.18.0.1", "benchmarking"),
            ("192.0.0.8", "reserved for protocol assignments"),
            // IPv4 hidden in IPv6.
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:169.254.169.254", "the cloud metadata address"),
            ("::ffff:10.1.2.3", "private"),
            ("::10.1.2.3", "private"),
            ("::8.8.8.8", "reserved (IPv4-compatible)"),
            ("64:ff9b::a9fe:a9fe", "the cloud metadata address"),
            ("64:ff9b::7f00:1", "loopback"),
            ("2002:a9fe:a9fe::1", "the cloud metadata address"),
            ("2002:c0a8:101::1", "private"),
            ("100::1", "discard-only"),
        ];
        for (addr, expected) in cases {
            assert_eq!(kind(addr), Some(expected), "{addr}");
        }
    }

    #[test]
    fn the_local_setting_allows_loopback_only() {
        let strict = AddressPolicy {
            allow_loopback: false,
        };
        let local = AddressPolicy {
            allow_loopback: true,
        };
        for lo in ["127.0.0.1", "::1", "::ffff:127.0.0.1"] {
            let a: IpAddr = lo.parse().unwrap();
            assert!(strict.check(a).is_err(), "{lo}");
            assert!(local.check(a).is_ok(), "{lo}");
        }
        for never in ["10.0.0.1", "169.254.169.254", "fd00:ec2::254", "0.0.0.0"] {
            let a: IpAddr = never.parse().unwrap();
            assert!(local.check(a).is_err(), "{never}");
        }
        let e = strict
            .check("169.254.169.254".parse().unwrap())
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "169.254.169.254 is the cloud metadata address: deliveries go only to public addresses"
        );
    }
}
