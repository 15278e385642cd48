//! Group keys as the engine packs them (64-bit words, strings in 32 bytes, addresses in
//! 16), decoded for display: integers, strings, event and syscall names, disks, kernel
//! functions, cgroups, addresses.

use std::collections::BTreeMap;

use tracekit_common::engine::STR_BYTES;

use super::{maps::Aggregates, syscalls::syscall_name};

/// How a group-key part is shown.
#[derive(Clone, Debug)]
pub enum KeyKind {
    /// An integer.
    Int { signed: bool },
    /// A string.
    Str,
    /// An event, named from this table; groups of events not in it are not shown.
    Event(BTreeMap<u64, String>),
    /// A syscall number of this machine's architecture.
    Syscall,
    /// A block device (`dev_t` as the block tracepoints record it: major << 20 | minor).
    Disk,
    /// A kernel function's address, shown as its name.
    KernelFunction,
    /// A cgroup v2 id, shown as the cgroup's path ([`crate::cgroups::path`]).
    Cgroup,
    /// A softirq vector, shown as its name ([`softirq_name`]).
    Softirq,
    /// A hardware interrupt number, shown as its handlers' names ([`irq_name`]).
    Irq,
    /// An address, shown in hex (`0x7ffd1234`).
    Address,
    /// An IPv4 address read as a `u32` ([`super::addr::ipv4_text`]).
    Ipv4,
    /// A 16-byte address as raw bytes, two key words ([`super::addr::ip_text`]).
    Ip,
    /// Raw bytes other than an address (a path read with `PATH_BYTES`), this many, shown
    /// in hex; they take as many key words as they fill
    /// ([`tracekit_common::engine::Operand::key_words`]).
    Bytes(usize),
    /// A TCP state, by name ([`super::addr::tcp_state_name`]).
    TcpState,
    /// A port read in network byte order, shown in host order.
    NetPort,
    /// The local port of a socket's port pair (`skc_portpair`: `skc_num` in the high 16
    /// bits). It shares its word with the [`KeyKind::RemotePort`] column that follows it:
    /// it takes no word of its own.
    LocalPort,
    /// The remote port of a port pair (`skc_dport`, network order, in the low 16 bits).
    RemotePort,
    /// An inode's `i_mode` shown as its file type ([`file_type`]).
    FileType,
    /// A kernel stack's hash, shown as its frames' names, root first, `;`-separated (as
    /// folded stacks are), from [`Aggregates::kernel_stacks`].
    KernelStack,
}

/// One column of a group key.
#[derive(Clone, Debug)]
pub struct KeyColumn {
    /// The header (`comm`, `syscall`, `disk`).
    pub name: String,
    /// How it is shown.
    pub kind: KeyKind,
}

impl KeyColumn {
    pub(crate) fn words(&self) -> usize {
        match self.kind {
            KeyKind::Str => STR_BYTES / 8,
            KeyKind::Ip => 2,
            KeyKind::LocalPort => 0,
            KeyKind::Bytes(len) => len.div_ceil(8).clamp(1, STR_BYTES / 8),
            _ => 1,
        }
    }
}

/// One shown key value.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum KeyValue {
    /// An integer.
    Int(i128),
    /// Text.
    Text(String),
}

impl std::fmt::Display for KeyValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Int(n) => write!(f, "{n}"),
            Self::Text(s) => f.write_str(s),
        }
    }
}

impl serde::Serialize for KeyValue {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Self::Int(n) => s.serialize_i128(*n),
            Self::Text(t) => s.serialize_str(t),
        }
    }
}

/// Decodes packed key words into shown values, column by column.
pub fn decode_key(columns: &[KeyColumn], words: &[u64]) -> Vec<KeyValue> {
    let mut at = 0;
    columns
        .iter()
        .map(|column| {
            let n = column.words();
            let part = words.get(at..at + n.max(1)).unwrap_or(&[]);
            at += n;
            let first = part.first().copied().unwrap_or(0);
            match &column.kind {
                KeyKind::Int { signed: true } => KeyValue::Int(i128::from(first as i64)),
                KeyKind::Int { signed: false } => KeyValue::Int(i128::from(first)),
                KeyKind::Str => {
                    let bytes: Vec<u8> = part.iter().flat_map(|w| w.to_ne_bytes()).collect();
                    KeyValue::Text(key_text(&bytes))
                }
                KeyKind::Event(names) => KeyValue::Text(
                    names
                        .get(&first)
                        .cloned()
                        .unwrap_or_else(|| format!("event {first}")),
                ),
                KeyKind::Syscall => KeyValue::Text(syscall_name(first)),
                KeyKind::Disk => KeyValue::Text(disk_name(first)),
                KeyKind::KernelFunction => KeyValue::Text(crate::symbolize::kernel_function(first)),
                KeyKind::Cgroup => KeyValue::Text(crate::cgroups::path(first)),
                KeyKind::Softirq => KeyValue::Text(softirq_name(first)),
                KeyKind::Irq => KeyValue::Text(irq_name(first)),
                KeyKind::Address => KeyValue::Text(format!("{first:#x}")),
                KeyKind::Ipv4 => KeyValue::Text(super::addr::ipv4_text(first)),
                KeyKind::TcpState => KeyValue::Text(super::addr::tcp_state_name(first)),
                KeyKind::NetPort | KeyKind::RemotePort => {
                    KeyValue::Int(i128::from(u16::from_be(first as u16)))
                }
                KeyKind::LocalPort => KeyValue::Int(i128::from((first >> 16) as u16)),
                KeyKind::FileType => KeyValue::Text(file_type(first).into()),
                KeyKind::KernelStack => KeyValue::Int(i128::from(first)),
                KeyKind::Ip => {
                    let bytes: Vec<u8> = part.iter().flat_map(|w| w.to_ne_bytes()).collect();
                    KeyValue::Text(super::addr::ip_text(&bytes[..bytes.len().min(16)]))
                }
                KeyKind::Bytes(len) => {
                    let bytes: Vec<u8> = part.iter().flat_map(|w| w.to_ne_bytes()).collect();
                    KeyValue::Text(
                        bytes[..(*len).min(bytes.len())]
                            .iter()
                            .map(|b| format!("{b:02x}"))
                            .collect(),
                    )
                }
            }
        })
        .collect()
}

/// A string group key's text: up to its NUL; a key whose last byte is set (the kernel's
/// mark of a longer string, `engine::strings`) shows its other bytes and `...`.
fn key_text(bytes: &[u8]) -> String {
    if bytes.len() == STR_BYTES && bytes[STR_BYTES - 1] != 0 {
        let shown = &bytes[..STR_BYTES - 1];
        let end = shown.iter().position(|&b| b == 0).unwrap_or(shown.len());
        return format!("{}...", String::from_utf8_lossy(&shown[..end]));
    }
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// An inode's `i_mode` as libbpf-tools' `filetop` shows its type: `R` a regular file
/// (`S_IFREG`), `S` a socket (`S_IFSOCK`), `O` anything else (pipes, devices, ...).
pub fn file_type(mode: u64) -> &'static str {
    const S_IFMT: u64 = 0o170_000;
    match mode & S_IFMT {
        0o100_000 => "R",
        0o140_000 => "S",
        _ => "O",
    }
}

/// The softirq vectors' names, as `/proc/softirqs` and the `irq:softirq_*` tracepoints'
/// print formats write them (include/linux/interrupt.h, `softirq_to_name`).
pub const SOFTIRQ_NAMES: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

/// A softirq vector's name (`NET_RX`), or `vec N` past the known ones.
pub fn softirq_name(vec: u64) -> String {
    SOFTIRQ_NAMES
        .get(vec as usize)
        .map_or_else(|| format!("vec {vec}"), |name| name.to_string())
}

/// A hardware interrupt's name as libbpf-tools' `hardirqs` shows it, its handlers' names
/// (`/sys/kernel/irq/N/actions`, comma-separated, as `irq_handler_entry`'s `name`), or
/// `irq N` when it has none (or the interrupt went away).
pub fn irq_name(irq: u64) -> String {
    std::fs::read_to_string(format!("/sys/kernel/irq/{irq}/actions"))
        .ok()
        .map(|actions| actions.trim().to_string())
        .filter(|actions| !actions.is_empty())
        .unwrap_or_else(|| format!("irq {irq}"))
}

/// The name of a block device recorded by the block tracepoints (`dev_t` with 20 minor
/// bits, `include/linux/kdev_t.h`), from `/sys/dev/block/MAJOR:MINOR`, or `MAJOR,MINOR`.
pub fn disk_name(dev: u64) -> String {
    let (major, minor) = (dev >> 20, dev & ((1 << 20) - 1));
    std::fs::read_link(format!("/sys/dev/block/{major}:{minor}"))
        .ok()
        .and_then(|target| target.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| format!("{major},{minor}"))
}

/// The `dev` value the block tracepoints record for disk `name` (`dev_t`: major << 20 |
/// minor), from `/sys/block/NAME/dev`: the inverse of [`disk_name`].
///
/// # Errors
/// A usage error listing the disks when there is no such disk.
pub fn disk_dev(name: &str) -> crate::Result<u64> {
    let path = format!("/sys/block/{name}/dev");
    // A name, not a path into sysfs.
    let named = !name.is_empty() && !name.contains('/') && name != "." && name != "..";
    let text = named
        .then(|| std::fs::read_to_string(&path).ok())
        .flatten()
        .ok_or_else(|| {
            let mut disks: Vec<String> = std::fs::read_dir("/sys/block")
                .map(|dir| {
                    dir.flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            disks.sort();
            crate::Error::usage(format!(
                "--disk {}: no such disk; disks here: {}",
                crate::error::quote(name),
                disks.join(", ")
            ))
        })?;
    let (major, minor) = text
        .trim()
        .split_once(':')
        .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)))
        .ok_or_else(|| crate::Error::runtime(format!("{path}: unexpected contents {text:?}")))?;
    Ok(major << 20 | minor)
}

/// A kernel stack key as text: its frames named (kallsyms), root first, `;`-separated;
/// `[no stack]`, `[lost stack]` (not recorded: the stack map was full or the walk failed)
/// or `[stack 0x...]` (not read back) otherwise.
pub fn kernel_stack_text(hash: u64, stacks: &BTreeMap<u64, Vec<u64>>) -> String {
    use tracekit_common::cpu_sampler::{STACK_ERROR, STACK_NONE};
    if hash == STACK_NONE {
        return "[no stack]".into();
    }
    if hash == STACK_ERROR {
        return "[lost stack]".into();
    }
    let Some(frames) = stacks.get(&hash) else {
        return format!("[stack {hash:#x}]");
    };
    let names = crate::ksyms::names(frames).unwrap_or_default();
    frames
        .iter()
        .enumerate()
        .rev()
        .map(|(i, ip)| {
            names
                .get(i)
                .cloned()
                .flatten()
                .unwrap_or_else(|| format!("{ip:#x}"))
        })
        .collect::<Vec<_>>()
        .join(";")
}

/// One group's aggregate, slots merged.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Group {
    /// The key, one value per column.
    pub key: Vec<KeyValue>,
    /// Events.
    pub count: u64,
    /// Sum of values.
    pub sum: u64,
    /// Histogram slot counts (empty when counting).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub slots: Vec<u64>,
}

/// Groups `aggregates` by decoded key; `slots` histogram slots per group (1: counts).
pub fn groups(aggregates: &Aggregates, columns: &[KeyColumn], slots: u32) -> Vec<Group> {
    let mut by_key: BTreeMap<Vec<KeyValue>, Group> = BTreeMap::new();
    for ((words, slot), value) in &aggregates.cells {
        if let (
            Some(KeyColumn {
                kind: KeyKind::Event(names),
                ..
            }),
            Some(first),
        ) = (columns.first(), words.first())
            && !names.contains_key(first)
        {
            continue;
        }
        let mut key = decode_key(columns, words);
        for (column, value) in columns.iter().zip(key.iter_mut()) {
            if let (KeyKind::KernelStack, KeyValue::Int(hash)) = (&column.kind, &value) {
                *value = KeyValue::Text(kernel_stack_text(*hash as u64, &aggregates.kernel_stacks));
            }
        }
        let group = by_key.entry(key.clone()).or_insert_with(|| Group {
            key,
            count: 0,
            sum: 0,
            slots: if slots > 1 {
                vec![0; slots as usize]
            } else {
                Vec::new()
            },
        });
        group.count += value.count;
        group.sum = group.sum.wrapping_add(value.sum);
        if let Some(cell) = group.slots.get_mut(*slot as usize) {
            *cell += value.count;
        }
    }
    by_key.into_values().collect()
}

#[cfg(test)]
mod tests {
    use tracekit_common::engine::AggValue;

    use super::*;

    #[test]
    fn decodes_keys() {
        let columns = [
            KeyColumn {
                name: "comm".into(),
                kind: KeyKind::Str,
            },
            KeyColumn {
                name: "ret".into(),
                kind: KeyKind::Int { signed: true },
            },
            KeyColumn {
                name: "syscall".into(),
                kind: KeyKind::Syscall,
            },
        ];
        let mut words = vec![u64::from_ne_bytes(*b"dd\0\0\0\0\0\0"), 0, 0, 0];
        words.push((-5i64) as u64);
        words.push(110);
        assert_eq!(
            decode_key(&columns, &words),
            [
                KeyValue::Text("dd".into()),
                KeyValue::Int(-5),
                KeyValue::Text("getppid".into())
            ]
        );
    }

    #[test]
    fn groups_merge_slots() {
        let mut aggregates = Aggregates::default();
        aggregates
            .cells
            .insert((vec![7], 2), AggValue { count: 3, sum: 12 });
        aggregates
            .cells
            .insert((vec![7], 5), AggValue { count: 1, sum: 40 });
        let columns = [KeyColumn {
            name: "pid".into(),
            kind: KeyKind::Int { signed: false },
        }];
        assert_eq!(
            groups(&aggregates, &columns, 8),
            [Group {
                key: vec![KeyValue::Int(7)],
                count: 4,
                sum: 52,
                slots: vec![0, 0, 3, 0, 0, 1, 0, 0]
            }]
        );
    }

    /// Softirq vectors by /proc/softirqs' names, addresses in hex, interrupts without
    /// handlers by number.
    #[test]
    fn decodes_softirqs_addresses_and_irqs() {
        let columns = [
            KeyColumn {
                name: "SOFTIRQ".into(),
                kind: KeyKind::Softirq,
            },
            KeyColumn {
                name: "LOCK".into(),
                kind: KeyKind::Address,
            },
            KeyColumn {
                name: "HARDIRQ".into(),
                kind: KeyKind::Irq,
            },
        ];
        assert_eq!(
            decode_key(&columns, &[3, 0xffff_8881_ab27_c6f8, 1 << 40]),
            [
                KeyValue::Text("NET_RX".into()),
                KeyValue::Text("0xffff8881ab27c6f8".into()),
                KeyValue::Text("irq 1099511627776".into()),
            ]
        );
        assert_eq!(softirq_name(9), "RCU");
        assert_eq!(softirq_name(12), "vec 12");
    }

    /// A `__be16` port as read on a little-endian machine: 8080 is stored 0x1f 0x90.
    #[test]
    fn decodes_network_order_ports() {
        let port = [KeyColumn {
            name: "PORT".into(),
            kind: KeyKind::NetPort,
        }];
        assert_eq!(
            decode_key(&port, &[u64::from(u16::from_ne_bytes([0x1f, 0x90]))]),
            [KeyValue::Int(8080)]
        );
    }

    /// `skc_portpair` as one key word shown as two columns (local 34221 in host order in
    /// the high half, remote 8080 in network order in the low half), the columns after it
    /// reading the next word; raw bytes other than an address in hex, in the words they fill.
    #[test]
    fn decodes_port_pairs_and_raw_bytes() {
        let column = |name: &str, kind| KeyColumn {
            name: name.into(),
            kind,
        };
        let columns = [
            column("LPORT", KeyKind::LocalPort),
            column("RPORT", KeyKind::RemotePort),
            column("PID", KeyKind::Int { signed: false }),
            column("RAW", KeyKind::Bytes(3)),
            column("TID", KeyKind::Int { signed: false }),
            column("T", KeyKind::FileType),
        ];
        let pair = (34221u64 << 16) | u64::from(u16::from_ne_bytes([0x1f, 0x90]));
        assert_eq!(
            decode_key(&columns, &[pair, 42, 0x00cc_bbaa, 7, 0o100_644]),
            [
                KeyValue::Int(34221),
                KeyValue::Int(8080),
                KeyValue::Int(42),
                KeyValue::Text("aabbcc".into()),
                KeyValue::Int(7),
                KeyValue::Text("R".into()),
            ]
        );
        // A socket, a pipe, a character device, a directory.
        let types: Vec<&str> = [0o140_777, 0o010_600, 0o020_666, 0o040_755]
            .into_iter()
            .map(file_type)
            .collect();
        assert_eq!(types, ["S", "O", "O", "O"]);
    }

    #[test]
    fn string_keys_of_longer_strings_are_marked() {
        let mut bytes = [b'a'; STR_BYTES];
        bytes[STR_BYTES - 1] = 1;
        assert_eq!(key_text(&bytes), format!("{}...", "a".repeat(31)));
        bytes[STR_BYTES - 1] = 0;
        assert_eq!(key_text(&bytes), "a".repeat(31));
        assert_eq!(key_text(b"comm\0\0\0\0"), "comm");
    }
}
