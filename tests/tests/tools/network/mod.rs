//! The network tools: tcpconnect, tcpaccept, tcplife, tcpstates, tcptop and the others,
//! against `tk_tcp`, whose loopback connections' ports and byte counts are known (IPv4 and
//! IPv6).

mod connections;
mod tcptop;

use std::time::Duration;

use serde_json::Value;
use tracekit_tests::{fixture, scratch, tracekit};

const TIMEOUT: Duration = Duration::from_secs(120);

/// One connection as `tk_tcp` made it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Conn {
    addr: &'static str,
    client_port: u64,
    server_port: u64,
    client_sent: u64,
    server_sent: u64,
}

/// Runs `tracekit TOOL --json -- tk_tcp 100 FILE`: 100 IPv4 and 100 IPv6 connections.
/// Returns the events and the truth.
fn run_tool(test: &str, tool: &[&str]) -> (Vec<Value>, Vec<Conn>) {
    let dir = scratch(test);
    let truth = dir.join("conns.txt");
    let tk_tcp = fixture("tk_tcp");
    let mut args = tool.to_vec();
    args.extend([
        "--json",
        "--",
        tk_tcp.to_str().unwrap(),
        "100",
        truth.to_str().unwrap(),
    ]);
    let run = tracekit(&args, TIMEOUT);
    run.assert_code(0);
    let events: Vec<Value> = run
        .stdout
        .lines()
        .filter(|line| line.starts_with('{'))
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let conns: Vec<Conn> = std::fs::read_to_string(&truth)
        .unwrap()
        .lines()
        .map(|line| {
            let f: Vec<&str> = line.split(' ').collect();
            let n = |i: usize| f[i].parse::<u64>().unwrap();
            Conn {
                addr: if f[0] == "4" { "127.0.0.1" } else { "::1" },
                client_port: n(1),
                server_port: n(2),
                client_sent: n(3),
                server_sent: n(4),
            }
        })
        .collect();
    assert_eq!(conns.len(), 200, "tk_tcp made 200 connections");
    assert!(
        run.stderr.contains("Lost: nothing."),
        "nothing lost: {}",
        run.stderr
    );
    (events, conns)
}

fn text(event: &Value, field: &str) -> String {
    event[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} in {event}"))
        .to_string()
}

fn number(event: &Value, field: &str) -> u64 {
    event[field]
        .as_u64()
        .unwrap_or_else(|| panic!("{field} in {event}"))
}
