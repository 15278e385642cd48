//! Socket addresses as the network tracepoints record them (`sock:inet_sock_set_state`,
//! `tcp:tcp_retransmit_skb`: `__u8 saddr[4]`, `__u8 saddr_v6[16]`, in network byte order),
//! shown as text: `127.0.0.1`, `::1`, `2001:db8::1`.
//!
//! The tracepoints fill the 16-byte fields of an IPv4 socket with the IPv4-mapped address
//! (`TP_STORE_ADDRS`: `ipv6_addr_set_v4mapped`), so one 16-byte field serves both families:
//! an IPv4-mapped address (`::ffff:a.b.c.d`) is shown as the IPv4 address `a.b.c.d`, as
//! libbpf-tools shows an `AF_INET` socket's.

use std::net::{Ipv4Addr, Ipv6Addr};

/// A 4-byte address field read as the engine reads it: a native-endian (x86_64: little)
/// `u32` of the field's bytes, which are in network order.
pub fn ipv4_text(raw: u64) -> String {
    Ipv4Addr::from((raw as u32).to_le_bytes()).to_string()
}

/// The engine's value of the IPv4 address `text` (the inverse of [`ipv4_text`]), for
/// filters (`daddr == 127.0.0.1`); `None` if `text` is not an IPv4 address.
pub fn ipv4_value(text: &str) -> Option<u64> {
    let address: Ipv4Addr = text.parse().ok()?;
    Some(u64::from(u32::from_le_bytes(address.octets())))
}

/// A 16-byte address field: IPv6 in its shortest form (RFC 5952), or IPv4 when it is an
/// IPv4-mapped address. Fewer than 16 bytes are zero-padded.
pub fn ip_text(bytes: &[u8]) -> String {
    let mut octets = [0u8; 16];
    let n = bytes.len().min(16);
    octets[..n].copy_from_slice(&bytes[..n]);
    let address = Ipv6Addr::from(octets);
    match address.to_ipv4_mapped() {
        Some(v4) => v4.to_string(),
        None => address.to_string(),
    }
}

/// The name of TCP state `state` (include/net/tcp_states.h), as the network tracepoints
/// print it without the `TCP_` prefix (`ESTABLISHED`), or the number when unknown.
pub fn tcp_state_name(state: u64) -> String {
    const NAMES: [&str; 13] = [
        "",
        "ESTABLISHED",
        "SYN_SENT",
        "SYN_RECV",
        "FIN_WAIT1",
        "FIN_WAIT2",
        "TIME_WAIT",
        "CLOSE",
        "CLOSE_WAIT",
        "LAST_ACK",
        "LISTEN",
        "CLOSING",
        "NEW_SYN_RECV",
    ];
    match NAMES.get(state as usize) {
        Some(name) if !name.is_empty() => name.to_string(),
        _ => state.to_string(),
    }
}

/// The number of TCP state `name` (`ESTABLISHED` or `TCP_ESTABLISHED`), for filters
/// (`newstate == ESTABLISHED`): the inverse of [`tcp_state_name`].
pub fn tcp_state_value(name: &str) -> Option<u64> {
    let name = name.strip_prefix("TCP_").unwrap_or(name);
    (1..=12).find(|&state| tcp_state_name(state) == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--by daddr_v6,newstate,daddr`: a 16-byte address takes two key words, a state and a
    /// 4-byte address one each.
    #[test]
    fn address_and_state_keys_decode() {
        use crate::engine::keys::{KeyColumn, KeyKind, KeyValue, decode_key};
        let column = |name: &str, kind| KeyColumn {
            name: name.into(),
            kind,
        };
        let columns = [
            column("daddr_v6", KeyKind::Ip),
            column("newstate", KeyKind::TcpState),
            column("daddr", KeyKind::Ipv4),
        ];
        let mut v6 = [0u8; 16];
        v6.copy_from_slice(&[
            0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01,
        ]);
        let mut words: Vec<u64> = v6
            .chunks(8)
            .map(|c| u64::from_ne_bytes(c.try_into().unwrap()))
            .collect();
        words.extend([10, 0x0100_007f]);
        assert_eq!(
            decode_key(&columns, &words),
            [
                KeyValue::Text("2001:db8::1".into()),
                KeyValue::Text("LISTEN".into()),
                KeyValue::Text("127.0.0.1".into()),
            ]
        );
    }

    #[test]
    fn tcp_states_by_name() {
        assert_eq!(tcp_state_name(1), "ESTABLISHED");
        assert_eq!(tcp_state_name(7), "CLOSE");
        assert_eq!(tcp_state_name(12), "NEW_SYN_RECV");
        assert_eq!(tcp_state_name(0), "0");
        assert_eq!(tcp_state_name(13), "13");
        assert_eq!(tcp_state_value("ESTABLISHED"), Some(1));
        assert_eq!(tcp_state_value("TCP_LISTEN"), Some(10));
        assert_eq!(tcp_state_value("NEW_SYN_RECV"), Some(12));
        assert_eq!(tcp_state_value("OPEN"), None);
    }

    #[test]
    fn ipv4_fields_read_as_native_u32() {
        // 127.0.0.1 in network order, read as a little-endian u32.
        assert_eq!(ipv4_text(0x0100_007f), "127.0.0.1");
        assert_eq!(ipv4_text(0x0a01_a8c0), "192.168.1.10");
        assert_eq!(ipv4_text(0), "0.0.0.0");
        assert_eq!(ipv4_value("127.0.0.1"), Some(0x0100_007f));
        assert_eq!(ipv4_value("192.168.1.10"), Some(0x0a01_a8c0));
        assert_eq!(ipv4_value("::1"), None);
        assert_eq!(ipv4_value("localhost"), None);
    }

    #[test]
    fn sixteen_byte_fields_show_both_families() {
        let mut loopback = [0u8; 16];
        loopback[15] = 1;
        assert_eq!(ip_text(&loopback), "::1");
        let doc: [u8; 16] = [
            0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01,
        ];
        assert_eq!(ip_text(&doc), "2001:db8::1");
        let full: [u8; 16] = [0xfe, 0x80, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7];
        assert_eq!(ip_text(&full), "fe80:1:2:3:4:5:6:7");
        // An IPv4 socket's address, as TP_STORE_ADDRS stores it.
        let mapped: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1];
        assert_eq!(ip_text(&mapped), "127.0.0.1");
        assert_eq!(ip_text(&[0u8; 16]), "::");
        // A string slot holds 32 bytes: only the first 16 are the address.
        let mut slot = [0u8; 32];
        slot[..16].copy_from_slice(&doc);
        slot[20] = 0xaa;
        assert_eq!(ip_text(&slot[..16]), "2001:db8::1");
    }
}
