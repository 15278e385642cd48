//! Sums per group with one column per probe: tcptop's `RX_KB TX_KB`, from a key whose
//! first column is the probe (several probes key by it) and whose other columns are shown
//! once per row, addresses joined with their ports (`127.0.0.1:5000`) as libbpf-tools
//! prints them, some of them after the numbers (filetop's `T FILE`).

use std::collections::BTreeMap;

use crate::engine::{Group, KeyColumn, KeyValue};

/// How a [`super::Report::Split`] table is laid out.
#[derive(Clone, Debug, PartialEq)]
pub struct Split {
    /// Each probe (as the first key column shows it, `sock:sock_recv_length`) and the
    /// header of its column (`RX_KB`), in column order.
    pub probes: Vec<(String, String)>,
    /// Divides the sums shown (1024: KiB, rounded down as bcc's tcptop does).
    pub div: u64,
    /// Show only the N rows with the largest sums (all probes together).
    pub top: Option<usize>,
    /// Key columns shown as one, `ADDR:PORT` under the first's name: (address, port).
    pub joined: Vec<(String, String)>,
    /// Headers of a count column per probe, in [`Split::probes`]' order, shown before the
    /// sums (filetop's `READS WRITES`); empty: no counts (tcptop).
    pub counts: Vec<String>,
    /// Key columns shown after the numbers, in key order (filetop's `T FILE`, as
    /// libbpf-tools orders them); the others come first.
    pub after: Vec<String>,
    /// What orders the rows, largest first: the total of these values of the row, index
    /// `i < n` the sum of probe `i` of [`Split::probes`] (n of them), `n + i` its count
    /// (tcptop's `--sort sent`: `[1]`, TX bytes only; filetop's `--sort all`: every sum and
    /// count, as libbpf-tools adds them); empty: all the sums. Ties: by key, ascending.
    pub sort: Vec<usize>,
    /// Clear the terminal before each interval's table, as `top` does, when standard
    /// output is one; `false`: bcc's `-C`/`--noclear`.
    pub clear: bool,
}

/// The header and rows of `groups` (keyed by `columns`, the probe first) laid out by
/// `split`, largest first; and the groups' rows left out by `--top`.
pub fn table(
    split: &Split,
    columns: &[KeyColumn],
    groups: &[&Group],
) -> (Vec<String>, Vec<Vec<String>>, usize) {
    // Which key columns are shown, and the port each address takes along.
    let position = |name: &str| columns.iter().position(|c| c.name == name);
    let ports: Vec<usize> = split
        .joined
        .iter()
        .filter_map(|(_, port)| position(port))
        .collect();
    let shown: Vec<(usize, Option<usize>)> = (1..columns.len())
        .filter(|i| !ports.contains(i))
        .map(|i| {
            let port = split
                .joined
                .iter()
                .find(|(addr, _)| *addr == columns[i].name)
                .and_then(|(_, port)| position(port));
            (i, port)
        })
        .collect();
    let n = split.probes.len();
    // Per row: the sums, then the counts, per probe.
    let mut rows: BTreeMap<Vec<KeyValue>, Vec<u64>> = BTreeMap::new();
    for group in groups {
        let Some(probe) = group.key.first().map(ToString::to_string) else {
            continue;
        };
        let Some(column) = split.probes.iter().position(|(p, _)| *p == probe) else {
            continue;
        };
        let sums = rows
            .entry(group.key[1..].to_vec())
            .or_insert_with(|| vec![0; 2 * n]);
        sums[column] += group.sum;
        sums[n + column] += group.count;
    }
    let mut rows: Vec<(Vec<KeyValue>, Vec<u64>)> = rows.into_iter().collect();
    rows.sort_by(|a, b| {
        let total = |sums: &[u64]| -> u64 {
            if split.sort.is_empty() {
                sums[..n].iter().sum()
            } else {
                split.sort.iter().filter_map(|&i| sums.get(i)).sum()
            }
        };
        total(&b.1).cmp(&total(&a.1)).then_with(|| a.0.cmp(&b.0))
    });
    let hidden = split.top.map_or(0, |top| rows.len().saturating_sub(top));
    rows.truncate(rows.len() - hidden);
    let (after, before): (Vec<_>, Vec<_>) = shown
        .iter()
        .partition(|&&(i, _)| split.after.contains(&columns[i].name));
    let names = |shown: &[(usize, Option<usize>)]| -> Vec<String> {
        shown
            .iter()
            .map(|&(i, _)| columns[i].name.to_uppercase())
            .collect()
    };
    let mut header = names(&before);
    header.extend(split.counts.iter().cloned());
    header.extend(split.probes.iter().map(|(_, h)| h.clone()));
    header.extend(names(&after));
    let text = rows
        .iter()
        .map(|(key, sums)| {
            let cells = |shown: &[(usize, Option<usize>)]| -> Vec<String> {
                shown
                    .iter()
                    .map(|&(i, port)| match port {
                        Some(port) => format!("{}:{}", key[i - 1], key[port - 1]),
                        None => key[i - 1].to_string(),
                    })
                    .collect()
            };
            let mut row = cells(&before);
            if !split.counts.is_empty() {
                row.extend(sums[n..].iter().map(u64::to_string));
            }
            row.extend(
                sums[..n]
                    .iter()
                    .map(|sum| (sum / split.div.max(1)).to_string()),
            );
            row.extend(cells(&after));
            row
        })
        .collect();
    (header, text, hidden)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::KeyKind;

    fn column(name: &str) -> KeyColumn {
        KeyColumn {
            name: name.into(),
            kind: KeyKind::Int { signed: false },
        }
    }

    fn group(probe: &str, pid: i128, laddr: &str, lport: i128, sum: u64) -> Group {
        Group {
            key: vec![
                KeyValue::Text(probe.into()),
                KeyValue::Int(pid),
                KeyValue::Text(laddr.into()),
                KeyValue::Int(lport),
            ],
            count: 1,
            sum,
            slots: Vec::new(),
        }
    }

    /// tcptop's layout: one row per connection with RX and TX side by side, the address
    /// joined with its port, the busiest first, KiB rounded down.
    #[test]
    fn tcptop_rows() {
        let split = Split {
            probes: vec![("rx".into(), "RX_KB".into()), ("tx".into(), "TX_KB".into())],
            div: 1024,
            top: Some(2),
            joined: vec![("LADDR".into(), "LPORT".into())],
            counts: Vec::new(),
            after: Vec::new(),
            sort: Vec::new(),
            clear: true,
        };
        let columns = [
            column("EVENT"),
            column("PID"),
            column("LADDR"),
            column("LPORT"),
        ];
        let groups = [
            group("rx", 10, "127.0.0.1", 5000, 4096),
            group("tx", 10, "127.0.0.1", 5000, 2047),
            group("tx", 11, "10.0.0.1", 22, 1_048_576),
            group("rx", 12, "10.0.0.2", 80, 10),
        ];
        let refs: Vec<&Group> = groups.iter().collect();
        let (header, rows, hidden) = table(&split, &columns, &refs);
        assert_eq!(header, ["PID", "LADDR", "RX_KB", "TX_KB"]);
        assert_eq!(
            rows,
            [
                ["11", "10.0.0.1:22", "0", "1024"],
                ["10", "127.0.0.1:5000", "4", "1"]
            ]
        );
        assert_eq!(hidden, 1);
        assert_eq!(
            crate::output::hist::table(
                &header.iter().map(String::as_str).collect::<Vec<_>>(),
                &rows,
                2
            ),
            "PID  LADDR           RX_KB  TX_KB\n\
             11   10.0.0.1:22         0   1024\n\
             10   127.0.0.1:5000      4      1\n"
        );
        // Sorted by the first probe's sums alone (tcptop -s received): 12's 10 bytes
        // before 11's none, after 10's 4096.
        let by_rx = Split {
            sort: vec![0],
            top: None,
            ..split
        };
        let (_, rows, _) = table(&by_rx, &columns, &refs);
        let pids: Vec<&str> = rows.iter().map(|row| row[0].as_str()).collect();
        assert_eq!(pids, ["10", "12", "11"]);
    }

    /// filetop's layout: counts, then sums, then the key columns named in `after`
    /// (libbpf-tools' `TID READS WRITES R_KB W_KB T FILE`, here with PID for TID and
    /// LADDR for FILE).
    #[test]
    fn key_columns_after_the_numbers() {
        let split = Split {
            probes: vec![("rx".into(), "R_KB".into()), ("tx".into(), "W_KB".into())],
            div: 1024,
            top: None,
            joined: Vec::new(),
            counts: vec!["READS".into(), "WRITES".into()],
            after: vec!["LADDR".into()],
            sort: Vec::new(),
            clear: true,
        };
        let columns = [column("EVENT"), column("PID"), column("LADDR")];
        let groups = [
            Group {
                key: vec![
                    KeyValue::Text("rx".into()),
                    KeyValue::Int(10),
                    KeyValue::Text("data".into()),
                ],
                count: 2,
                sum: 8192,
                slots: Vec::new(),
            },
            Group {
                key: vec![
                    KeyValue::Text("tx".into()),
                    KeyValue::Int(10),
                    KeyValue::Text("data".into()),
                ],
                count: 3,
                sum: 3072,
                slots: Vec::new(),
            },
        ];
        let refs: Vec<&Group> = groups.iter().collect();
        let (header, rows, hidden) = table(&split, &columns, &refs);
        assert_eq!(header, ["PID", "READS", "WRITES", "R_KB", "W_KB", "LADDR"]);
        assert_eq!(rows, [["10", "2", "3", "8", "3", "data"]]);
        assert_eq!(hidden, 0);
    }
}
