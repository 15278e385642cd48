//! `tcptop`: bytes per connection, per family, its table's columns and its sort orders.

use std::{collections::BTreeSet, time::Duration};

use tracekit_tests::{require_root, tracekit};

use super::{number, run_tool, text};

const TIMEOUT: Duration = Duration::from_secs(120);

/// tcptop: each of `tk_tcp`'s 100 IPv4 and 100 IPv6 connections twice, its client end and
/// its server end (one process holds both), with the addresses, the ports and the bytes
/// each end received and sent exactly (the client sends 100 + i and reads 50 + i; the
/// server the other way round); no other connection of the fixture.
#[test]
fn network_tcptop_counts_each_connections_bytes() {
    assert_tcptop("network_tcptop", &["tcptop"], None);
}

/// tcptop -4 and -6: the same, of one family only.
#[test]
fn network_tcptop_one_family() {
    assert_tcptop("network_tcptop_4", &["tcptop", "-4"], Some("127.0.0.1"));
    assert_tcptop("network_tcptop_6", &["tcptop", "--ipv6"], Some("::1"));
}

/// Runs `tool` on `tk_tcp` and checks its groups are exactly both ends of each
/// connection (of the `only` address's family, if given), rx and tx.
fn assert_tcptop(test: &str, tool: &[&str], only: Option<&str>) {
    require_root();
    let (results, conns) = run_tool(test, tool);
    assert_eq!(results.len(), 1, "{results:#?}");
    let mut seen: BTreeSet<(String, u64, u64, &str, u64)> = BTreeSet::new();
    for group in results[0]["groups"].as_array().unwrap() {
        let key = &group["key"];
        if text(key, "COMM") != "tk_tcp" {
            continue;
        }
        let way = match text(key, "event").as_str() {
            "sock:sock_recv_length" => "rx",
            "sock:sock_send_length" => "tx",
            other => panic!("event {other} in {group}"),
        };
        assert_eq!(text(key, "LADDR"), text(key, "RADDR"), "{group}");
        assert!(
            seen.insert((
                text(key, "LADDR"),
                number(key, "LPORT"),
                number(key, "RPORT"),
                way,
                number(group, "sum"),
            )),
            "{group}"
        );
    }
    let mut want = BTreeSet::new();
    for c in conns
        .iter()
        .filter(|c| only.is_none_or(|addr| c.addr == addr))
    {
        let addr = || c.addr.to_string();
        want.insert((addr(), c.client_port, c.server_port, "tx", c.client_sent));
        want.insert((addr(), c.client_port, c.server_port, "rx", c.server_sent));
        want.insert((addr(), c.server_port, c.client_port, "rx", c.client_sent));
        want.insert((addr(), c.server_port, c.client_port, "tx", c.server_sent));
    }
    assert_eq!(want.len(), if only.is_some() { 400 } else { 800 });
    assert_eq!(seen, want);
}

/// Python: one IPv4 and one IPv6 loopback connection, 300 KiB from the client to the
/// server and 100 KiB back over each; prints `ADDRESS CLIENT_PORT SERVER_PORT` per
/// connection.
const TWO_CONNECTIONS: &str = "import socket\n\
             for family, addr in ((socket.AF_INET, '127.0.0.1'), (socket.AF_INET6, '::1')):\n\
             \x20   l = socket.socket(family); l.bind((addr, 0)); l.listen()\n\
             \x20   c = socket.create_connection(l.getsockname()[:2]); s, _ = l.accept()\n\
             \x20   c.sendall(b'x' * 307200); n = 0\n\
             \x20   while n < 307200: n += len(s.recv(65536))\n\
             \x20   s.sendall(b'y' * 102400); n = 0\n\
             \x20   while n < 102400: n += len(c.recv(65536))\n\
             \x20   print(addr, c.getsockname()[1], l.getsockname()[1])";

/// tcptop's table: `PID COMM LADDR RADDR RX_KB TX_KB`, one row per connection end, the
/// addresses joined to their ports as libbpf-tools prints them (`::1:PORT` for IPv6); 300
/// KiB sent one way and 100 KiB back over one IPv4 and one IPv6 connection show as 300
/// and 100 on each end.
#[test]
fn network_tcptop_table_has_libbpf_tools_columns() {
    require_root();
    let run = tracekit(
        [
            "tcptop",
            "--top",
            "1000",
            "--",
            "python3",
            "-c",
            TWO_CONNECTIONS,
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    let header = run
        .stdout
        .lines()
        .find(|line| line.starts_with("PID"))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["PID", "COMM", "LADDR", "RADDR", "RX_KB", "TX_KB"]
    );
    let rows: Vec<Vec<&str>> = run
        .stdout
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .collect();
    let connections: Vec<&Vec<&str>> = rows.iter().filter(|cells| cells.len() == 3).collect();
    assert_eq!(connections.len(), 2, "{}", run.stdout);
    for connection in connections {
        let (addr, client, server) = (connection[0], connection[1], connection[2]);
        let row = |local: &str, remote: &str| -> &Vec<&str> {
            let (local, remote) = (format!("{addr}:{local}"), format!("{addr}:{remote}"));
            rows.iter()
                .find(|cells| cells.len() == 6 && cells[2] == local && cells[3] == remote)
                .unwrap_or_else(|| panic!("{local} -> {remote} in\n{}", run.stdout))
        };
        assert_eq!(row(client, server)[4..], ["100", "300"]);
        assert_eq!(row(server, client)[4..], ["300", "100"]);
        assert_eq!(row(client, server)[1], "python3");
    }
}

/// tcptop --sort sent / received: of the fixture's four connection ends, the two client
/// ends (300 KiB sent each) come first under `--sort sent`, the two server ends (300 KiB
/// received each) under `--sort received` (other processes' rows may come between).
#[test]
fn network_tcptop_sorts_by_one_direction() {
    require_root();
    for (sort, first) in [("sent", ["100", "300"]), ("received", ["300", "100"])] {
        let run = tracekit(
            [
                "tcptop",
                "--sort",
                sort,
                "-r",
                "1000",
                "--",
                "python3",
                "-c",
                TWO_CONNECTIONS,
            ],
            TIMEOUT,
        );
        run.assert_code(0);
        let lines: Vec<Vec<&str>> = run
            .stdout
            .lines()
            .map(|line| line.split_whitespace().collect::<Vec<_>>())
            .collect();
        // The fixture's local ends, `ADDRESS:PORT`, from its `ADDRESS CLIENT SERVER` lines.
        let ends: Vec<String> = lines
            .iter()
            .filter(|cells| cells.len() == 3)
            .flat_map(|c| [format!("{}:{}", c[0], c[1]), format!("{}:{}", c[0], c[2])])
            .collect();
        assert_eq!(ends.len(), 4, "{}", run.stdout);
        let ours: Vec<&[&str]> = lines
            .iter()
            .filter(|cells| cells.len() == 6 && ends.contains(&cells[2].to_string()))
            .map(|cells| &cells[4..])
            .collect();
        let last = [first[1], first[0]];
        assert_eq!(
            ours,
            [first, first, last, last],
            "--sort {sort}: {}",
            run.stdout
        );
    }
}
