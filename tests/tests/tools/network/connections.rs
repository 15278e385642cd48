//! Each connection's events: connects, accepts (io_uring's too), lifetimes, state changes,
//! retransmissions, listens, connect latencies and dropped SYNs.

use std::{collections::BTreeSet, time::Duration};

use serde_json::Value;
use tracekit_tests::{fixture, require_root, scratch, tracekit, tracepoint_field_or_skip};

use super::{number, run_tool, text};

const TIMEOUT: Duration = Duration::from_secs(120);

/// Each of the 200 connects, with the connecting process's pid and comm, the addresses and
/// the server's port; nothing else from the fixture.
#[test]
fn network_tcpconnect_shows_each_connect() {
    require_root();
    let (events, conns) = run_tool("network_tcpconnect", &["tcpconnect"]);
    let pids: BTreeSet<u64> = events.iter().map(|e| number(e, "pid")).collect();
    assert_eq!(pids.len(), 1, "one process connects: {pids:?}");
    let seen: BTreeSet<(String, String, u64, String)> = events
        .iter()
        .map(|e| {
            (
                text(e, "saddr"),
                text(e, "daddr"),
                number(e, "dport"),
                text(e, "comm"),
            )
        })
        .collect();
    let want: BTreeSet<(String, String, u64, String)> = conns
        .iter()
        .map(|c| (c.addr.into(), c.addr.into(), c.server_port, "tk_tcp".into()))
        .collect();
    assert_eq!(events.len(), 200, "{events:#?}");
    assert_eq!(seen, want);
}

/// Each of the 200 accepted connections (100 IPv4, 100 IPv6), with the accepting
/// process's pid and comm (the fixture accepts its own connections), the IP version, both
/// ends' addresses and ports; nothing else from the fixture.
#[test]
fn network_tcpaccept_shows_each_accept() {
    require_root();
    let (events, conns) = run_tool("network_tcpaccept", &["tcpaccept"]);
    let pids: BTreeSet<u64> = events.iter().map(|e| number(e, "pid")).collect();
    assert_eq!(pids.len(), 1, "one process accepts: {pids:?}");
    type Row = (String, u64, String, u64, String, u64, String);
    let seen: BTreeSet<Row> = events
        .iter()
        .map(|e| {
            (
                text(e, "raddr"),
                number(e, "rport"),
                text(e, "laddr"),
                number(e, "lport"),
                text(e, "comm"),
                number(e, "ip"),
                e["pid"].to_string(),
            )
        })
        .collect();
    let pid = pids.first().unwrap().to_string();
    let want: BTreeSet<Row> = conns
        .iter()
        .map(|c| {
            (
                c.addr.into(),
                c.client_port,
                c.addr.into(),
                c.server_port,
                "tk_tcp".into(),
                if c.addr == "::1" { 6 } else { 4 },
                pid.clone(),
            )
        })
        .collect();
    assert_eq!(events.len(), 200, "{events:#?}");
    assert_eq!(seen, want);
}

/// Each of 50 IPv4 connections accepted through io_uring (`IORING_OP_ACCEPT`: half
/// completed inline in `io_uring_enter`, half in task work after waiting on the listener),
/// with the fixture's pid and comm and both ends' ports, as the fixture prints them
/// (`uring PID CLIENT_PORT SERVER_PORT`). Its other completions (a read whose result is a
/// regular file's descriptor, a `MSG_RING` whose result is the accepted socket's descriptor
/// but that has no request) are not shown and are no read errors: nothing is lost. Nor is
/// its last accept, into a fixed file, whose result 0 is no descriptor (the fixture's
/// descriptor 0 is then its client's socket, which reading `sock(res)` would show).
#[test]
fn network_tcpaccept_shows_io_uring_accepts() {
    require_root();
    // 5.10's io_uring_complete names no request: tcpaccept leaves io_uring accepts out and
    // says so in one line (the fixture's fixed-file accept is 5.15's besides).
    if !tracepoint_field_or_skip(
        "network_tcpaccept_shows_io_uring_accepts",
        "io_uring:io_uring_complete",
        "req",
        "5.19+",
    ) {
        let run = tracekit(["tcpaccept", "-v", "--json", "--", "true"], TIMEOUT);
        run.assert_code(0);
        assert!(
            run.stderr
                .contains("io_uring accepts left out (io_uring:io_uring_complete)"),
            "{}",
            run.stderr
        );
        return;
    }
    let dir = scratch("network_tcpaccept_uring");
    let out = dir.join("events.json");
    let tk_tcp = fixture("tk_tcp");
    let run = tracekit(
        [
            "tcpaccept",
            "-v",
            "--json",
            "-o",
            out.to_str().unwrap(),
            "--",
            tk_tcp.to_str().unwrap(),
            "--uring",
            "50",
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    assert!(
        run.stderr.contains("Lost: nothing."),
        "nothing lost: {}",
        run.stderr
    );
    assert!(!run.stderr.contains("left out"), "{}", run.stderr);
    type Row = (String, u64, String, u64, String, u64, u64);
    let want: BTreeSet<Row> = run
        .stdout
        .lines()
        .filter_map(|line| line.strip_prefix("uring "))
        .map(|line| {
            let f: Vec<u64> = line.split(' ').map(|n| n.parse().unwrap()).collect();
            let addr = "127.0.0.1".to_string();
            (addr.clone(), f[1], addr, f[2], "tk_tcp".into(), 4, f[0])
        })
        .collect();
    assert_eq!(want.len(), 50, "the fixture's connections: {}", run.stdout);
    let fixed: Vec<&str> = run
        .stdout
        .lines()
        .filter(|line| line.starts_with("fixed "))
        .collect();
    assert_eq!(fixed.len(), 1, "{}", run.stdout);
    let events: Vec<Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let seen: BTreeSet<Row> = events
        .iter()
        .map(|e| {
            (
                text(e, "raddr"),
                number(e, "rport"),
                text(e, "laddr"),
                number(e, "lport"),
                text(e, "comm"),
                number(e, "ip"),
                number(e, "pid"),
            )
        })
        .collect();
    assert_eq!(events.len(), 50, "{events:#?}");
    assert_eq!(seen, want);
}

/// `count`'s filter takes a cast: the io_uring completions of `tk_tcp --uring 20` that are
/// accepts (`(struct io_kiocb *)req->opcode == 13`) into a descriptor (`(struct io_accept
/// *)req->file_slot == 0`) are exactly its 20; its reads and `MSG_RING`s (3 completions a
/// connection, one with a NULL `req`) and its fixed-file accept fail the filter and are no
/// read errors.
#[test]
fn network_count_filters_io_uring_completions_through_a_cast() {
    require_root();
    if !tracepoint_field_or_skip(
        "network_count_filters_io_uring_completions_through_a_cast",
        "io_uring:io_uring_complete",
        "req",
        "5.19+",
    ) {
        return;
    }
    let tk_tcp = fixture("tk_tcp");
    let run = tracekit(
        [
            "count",
            "io_uring:io_uring_complete",
            "--filter",
            "(struct io_kiocb *)req->opcode == 13 && (struct io_accept *)req->file_slot == 0",
            "--json",
            "--",
            tk_tcp.to_str().unwrap(),
            "--uring",
            "20",
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    let counts: Value = run
        .stdout
        .lines()
        .find(|line| line.starts_with('{'))
        .map(|line| serde_json::from_str(line).unwrap())
        .unwrap_or_else(|| panic!("no JSON: {}", run.stdout));
    let stats = &counts["stats"];
    assert_eq!(number(stats, "counted"), 20, "{counts}");
    assert_eq!(number(stats, "read_errors"), 0, "{counts}");
    assert!(number(stats, "filtered") >= 61, "{counts}");
}

/// Each connection's two ends when they close: ports, and the bytes each sent and
/// received, exactly as the kernel counts them (`bytes_acked` counts the FIN, and the
/// connecting side's SYN; `bytes_received` the peer's FIN); the lifetime is positive and
/// the pid is the fixture's for its own connects.
#[test]
fn network_tcplife_shows_each_connection_with_bytes() {
    require_root();
    let (events, conns) = run_tool("network_tcplife", &["tcplife"]);
    type Row = (String, u64, String, u64, u64, u64);
    let seen: BTreeSet<Row> = events
        .iter()
        .map(|e| {
            assert!(number(e, "life_ns") > 0, "{e}");
            (
                text(e, "laddr"),
                number(e, "lport"),
                text(e, "raddr"),
                number(e, "rport"),
                number(e, "tx_b"),
                number(e, "rx_b"),
            )
        })
        .collect();
    let mut want = BTreeSet::new();
    for c in &conns {
        // The client: its SYN and FIN acked, the server's FIN received.
        want.insert((
            c.addr.to_string(),
            c.client_port,
            c.addr.to_string(),
            c.server_port,
            c.client_sent + 2,
            c.server_sent + 1,
        ));
        // The server: its FIN acked, the client's FIN received.
        want.insert((
            c.addr.to_string(),
            c.server_port,
            c.addr.to_string(),
            c.client_port,
            c.server_sent + 1,
            c.client_sent + 1,
        ));
    }
    assert_eq!(events.len(), 400, "{events:#?}");
    assert_eq!(seen, want);
    let pids: BTreeSet<u64> = events.iter().map(|e| number(e, "pid")).collect();
    assert_eq!(
        pids.len(),
        1,
        "the fixture began every connection: {pids:?}"
    );
}

/// Retransmissions forced: a connect() in a network namespace of its own to an address
/// behind a tun device nobody reads, so the kernel retransmits its SYN for the 3 s the
/// fixture waits (at 1 s and 2 s: `net.ipv4.tcp_syn_linear_timeouts` keeps the first SYN
/// timeouts at 1 s since Linux 6.7; a third at 3 s races the close). tcpretrans shows each,
/// as many as the kernel fired the tracepoint (counted by a tracefs instance of the test's
/// own, [`Witness`]) and at least the namespace's own counter (`RetransSegs` of
/// /proc/net/snmp), with the address, port and state SYN_SENT (by name). Where the three
/// numbers differ, the message says which: the kernel's firings or tracekit's events.
/// (`tc netem` would drop on loopback, but this kernel has no sch_netem.)
#[test]
fn network_tcpretrans_shows_each_forced_retransmission() {
    require_root();
    let dir = scratch("network_tcpretrans");
    let witness = Witness::start("tcp/tcp_retransmit_skb");
    let snmp = dir.join("snmp.txt");
    let tk_tcp = fixture("tk_tcp");
    let script = format!(
        "ip link set lo up && ip tuntap add mode tun dev tk0 && ip link set tk0 up && \
         ip addr add 10.9.9.1/24 dev tk0 && {} --unanswered 10.9.9.9 4242 3 && \
         grep '^Tcp:' /proc/net/snmp > {}",
        tk_tcp.display(),
        snmp.display()
    );
    let run = tracekit(
        [
            "tcpretrans",
            "--rport",
            "4242",
            "--json",
            "--",
            "unshare",
            "-n",
            "sh",
            "-c",
            &script,
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    let events: Vec<Value> = run
        .stdout
        .lines()
        .filter(|line| line.starts_with('{'))
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let lines = std::fs::read_to_string(&snmp).unwrap();
    let rows: Vec<Vec<&str>> = lines.lines().map(|l| l.split(' ').collect()).collect();
    let column = rows[0].iter().position(|&h| h == "RetransSegs").unwrap();
    let retrans: usize = rows[1][column].parse().unwrap();
    assert!(retrans >= 2, "the kernel retransmitted: {lines}");
    // The firings of this test's connection (a concurrent run of the fixture would show
    // in tracekit's output too: it traces every namespace).
    let fired = witness.map(|w| w.lines(&["daddr=10.9.9.9", "dport=4242"]));
    let numbers = format!(
        "tracekit printed {}, the kernel fired the tracepoint {}, RetransSegs {retrans}",
        events.len(),
        fired
            .as_ref()
            .map_or("? (no tracefs instance)".into(), |f| f.len().to_string())
    );
    let context = format!(
        "{numbers}\n{events:#?}\n{}\nfirings:\n{}",
        run.stderr,
        fired.as_deref().unwrap_or_default().join("\n")
    );
    match &fired {
        Some(fired) => {
            assert!(
                fired.len() >= retrans,
                "the kernel fired too few: {context}"
            );
            assert_eq!(
                events.len(),
                fired.len(),
                "tracekit lost or made events: {context}"
            );
        }
        None => assert_eq!(events.len(), retrans, "{context}"),
    }
    for event in &events {
        assert_eq!(
            (
                text(event, "raddr"),
                number(event, "rport"),
                text(event, "laddr"),
                text(event, "state"),
            ),
            (
                "10.9.9.9".to_string(),
                4242,
                "10.9.9.1".to_string(),
                "SYN_SENT".to_string()
            ),
            "{event}"
        );
    }
}

/// A tracefs instance of the test's own with one event enabled: the kernel's own record of
/// each time the tracepoint fired, independent of tracekit (ftrace's probe, not perf's or
/// BPF's). Removed when dropped.
struct Witness {
    dir: std::path::PathBuf,
}

impl Witness {
    /// Enables `event` (`SYSTEM/EVENT`) in a new instance; None, said on stderr, where
    /// tracefs has no instances.
    fn start(event: &str) -> Option<Witness> {
        let dir = std::path::PathBuf::from(format!(
            "/sys/kernel/tracing/instances/tracekit-test-{}",
            std::process::id()
        ));
        let made = std::fs::create_dir(&dir)
            .and_then(|()| std::fs::write(dir.join("events").join(event).join("enable"), "1"));
        match made {
            Ok(()) => Some(Witness { dir }),
            Err(err) => {
                eprintln!("no tracefs instance to witness {event}: {err}");
                let _ = std::fs::remove_dir(&dir);
                None
            }
        }
    }

    /// The lines of the instance's trace holding every one of `words`.
    fn lines(&self, words: &[&str]) -> Vec<String> {
        std::fs::read_to_string(self.dir.join("trace"))
            .unwrap_or_default()
            .lines()
            .filter(|line| !line.starts_with('#') && words.iter().all(|w| line.contains(w)))
            .map(str::to_string)
            .collect()
    }
}

impl Drop for Witness {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Each of the 200 listen()s, with the process, the port the kernel picked, the address,
/// and the backlog read from the socket through BTF (`tk_tcp` listens with backlog 1).
#[test]
fn network_solisten_shows_each_listen_with_its_backlog() {
    require_root();
    let (events, conns) = run_tool("network_solisten", &["solisten"]);
    let seen: BTreeSet<(String, u64, u64, String)> = events
        .iter()
        .map(|e| {
            (
                text(e, "addr"),
                number(e, "port"),
                number(e, "backlog"),
                text(e, "comm"),
            )
        })
        .collect();
    let want: BTreeSet<(String, u64, u64, String)> = conns
        .iter()
        .map(|c| (c.addr.into(), c.server_port, 1, "tk_tcp".into()))
        .collect();
    assert_eq!(events.len(), 200, "{events:#?}");
    assert_eq!(seen, want);
}

/// Each connect's latency from SYN_SENT to ESTABLISHED, with the connecting process's pid
/// kept from the start: 200 connects, each latency positive and under the run's length.
#[test]
fn network_tcpconnlat_times_each_connect() {
    require_root();
    let (events, conns) = run_tool("network_tcpconnlat", &["tcpconnlat"]);
    let seen: BTreeSet<(String, u64)> = events
        .iter()
        .map(|e| {
            let latency = number(e, "lat_ns");
            assert!(latency > 0 && latency < 10_000_000_000, "{e}");
            (text(e, "daddr"), number(e, "dport"))
        })
        .collect();
    let want: BTreeSet<(String, u64)> = conns
        .iter()
        .map(|c| (c.addr.into(), c.server_port))
        .collect();
    assert_eq!(events.len(), 200, "{events:#?}");
    assert_eq!(seen, want);
    let pids: BTreeSet<u64> = events.iter().map(|e| number(e, "pid")).collect();
    assert_eq!(pids.len(), 1, "{pids:?}");
}

/// Every state change of the 200 connections and their listeners, by name, in order for
/// each socket: the client's five, the accepted socket's five, the listener's two.
#[test]
fn network_tcpstates_shows_every_change_in_order() {
    require_root();
    let (events, conns) = run_tool("network_tcpstates", &["tcpstates"]);
    let mut by_socket: std::collections::BTreeMap<String, Vec<(String, String, u64, u64)>> =
        Default::default();
    for e in &events {
        by_socket.entry(text(e, "skaddr")).or_default().push((
            text(e, "oldstate"),
            text(e, "newstate"),
            number(e, "lport"),
            number(e, "rport"),
        ));
    }
    let chain = |states: &[&str]| -> Vec<(String, String)> {
        states
            .windows(2)
            .map(|w| (w[0].to_string(), w[1].to_string()))
            .collect()
    };
    let client = chain(&[
        "CLOSE",
        "SYN_SENT",
        "ESTABLISHED",
        "FIN_WAIT1",
        "FIN_WAIT2",
        "CLOSE",
    ]);
    let server = chain(&[
        "LISTEN",
        "SYN_RECV",
        "ESTABLISHED",
        "CLOSE_WAIT",
        "LAST_ACK",
        "CLOSE",
    ]);
    let listener = chain(&["CLOSE", "LISTEN", "CLOSE"]);
    // A socket's address can be reused after it closes: split each socket's changes into
    // lives, each ending at CLOSE.
    let mut lives = Vec::new();
    for changes in by_socket.values() {
        let mut life = Vec::new();
        for change in changes {
            life.push(change.clone());
            if change.1 == "CLOSE" {
                lives.push(std::mem::take(&mut life));
            }
        }
        assert!(life.is_empty(), "a socket's life ends at CLOSE: {life:?}");
    }
    let mut clients = 0;
    let mut servers = 0;
    let mut listeners = 0;
    let server_ports: BTreeSet<u64> = conns.iter().map(|c| c.server_port).collect();
    for life in &lives {
        let states: Vec<(String, String)> = life
            .iter()
            .map(|(o, n, ..)| (o.clone(), n.clone()))
            .collect();
        if states == client {
            assert!(server_ports.contains(&life.last().unwrap().3), "{life:?}");
            clients += 1;
        } else if states == server {
            assert!(server_ports.contains(&life.last().unwrap().2), "{life:?}");
            servers += 1;
        } else if states == listener {
            assert!(server_ports.contains(&life[0].2), "{life:?}");
            listeners += 1;
        } else {
            panic!("unexpected changes: {life:?}");
        }
    }
    assert_eq!((clients, servers, listeners), (200, 200, 200));
    assert_eq!(events.len(), 200 * 12);
}

/// 100 IPv4 and 100 IPv6 connects to a loopback port held by a socket that does not
/// listen: each SYN is dropped once, as `NO_SOCKET`, in `tcp_v4_rcv` or `tcp_v6_rcv`,
/// in the connecting fixture's context (loopback delivers in the sender's softirq).
#[test]
fn network_tcpdrop_shows_each_refused_syn_with_its_reason_and_stack() {
    require_root();
    let dir = scratch("tcpdrop");
    let out = dir.join("drops.json");
    let tk_tcp = fixture("tk_tcp");
    let run = tracekit(
        [
            "tcpdrop",
            "--json",
            "-o",
            out.to_str().unwrap(),
            "--",
            tk_tcp.to_str().unwrap(),
            "--refused",
            "100",
        ],
        TIMEOUT,
    );
    run.assert_code(0);
    assert!(run.stderr.contains("Lost: nothing."), "{}", run.stderr);
    assert!(run.stdout.contains("refused "), "{}", run.stdout);
    let truth: Vec<&str> = run
        .stdout
        .lines()
        .find(|line| line.starts_with("refused "))
        .unwrap()
        .split(' ')
        .collect();
    assert_eq!(
        truth[2..],
        ["100", "100"],
        "the fixture's connects were refused"
    );
    let events: Vec<Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let mut by_receiver = std::collections::BTreeMap::<String, usize>::new();
    for event in &events {
        assert_eq!(event["comm"], "tk_tcp", "{event}");
        assert_eq!(event["reason"], "NO_SOCKET", "{event}");
        let stack: Vec<&str> = event["kernel_stack"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        let receiver = stack
            .iter()
            .find(|f| ["tcp_v4_rcv", "tcp_v6_rcv"].contains(f))
            .unwrap_or_else(|| panic!("no tcp receive function in {stack:?}"));
        *by_receiver.entry(receiver.to_string()).or_default() += 1;
    }
    assert_eq!(
        by_receiver,
        [
            ("tcp_v4_rcv".to_string(), 100),
            ("tcp_v6_rcv".to_string(), 100)
        ]
        .into()
    );
}
