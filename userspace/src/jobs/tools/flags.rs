//! A tool's flags: what it declares ([`Flag`], the shared ones as constants) and the
//! values one run gives them ([`FlagValues`]).
//!
//! A tool reads only the flags it declares: reading another (a misspelt name, a shared flag
//! left out of `flags`) panics in tests and debug builds, naming the tool and the flag;
//! the table's tests build every tool's plan, so they find any such read.

use std::collections::BTreeMap;

use super::{LatencyUnit, Tool};
use crate::{
    Result,
    engine::request::{MapSizes, Target},
    session::Scope,
};

/// One flag of a tool: `--LONG` (and `-SHORT`), or a positional argument.
#[derive(Clone, Copy, Debug)]
pub struct Flag {
    /// The long name (`per-disk`); a positional's name in [`FlagValues`].
    pub long: &'static str,
    /// The short name (`-L`), where bcc's tool has one.
    pub short: Option<char>,
    /// The `--help` line (no final period).
    pub help: &'static str,
    /// What it takes.
    pub kind: FlagKind,
}

/// What a [`Flag`] takes.
#[derive(Clone, Copy, Debug)]
pub enum FlagKind {
    /// Nothing: on or off.
    Switch,
    /// A string, `--disk NAME`.
    Text {
        /// `NAME`.
        value_name: &'static str,
    },
    /// A whole number, `--top N`.
    Number {
        /// `N`.
        value_name: &'static str,
        /// Its value when not given, in digits (as `--help` shows it).
        default: Option<&'static str>,
    },
    /// One of a few words, `--unit ms`.
    Choice {
        /// `UNIT`.
        value_name: &'static str,
        /// The words and their help.
        choices: &'static [(&'static str, &'static str)],
        /// The word when not given.
        default: Option<&'static str>,
    },
    /// An optional positional whole number with a default (fsslower's `MIN_MS`).
    NumberArg {
        /// `MIN_MS`.
        value_name: &'static str,
        /// Its value when not given, in digits.
        default: &'static str,
    },
    /// A required positional argument (one, or one or more).
    Positional {
        /// `PATTERN`.
        value_name: &'static str,
        /// One or more.
        many: bool,
    },
}

impl Flag {
    /// `--LONG`, on or off.
    pub const fn switch(long: &'static str, help: &'static str) -> Self {
        Self {
            long,
            short: None,
            help,
            kind: FlagKind::Switch,
        }
    }

    /// `--LONG VALUE_NAME`, a string.
    pub const fn text(long: &'static str, value_name: &'static str, help: &'static str) -> Self {
        Self {
            long,
            short: None,
            help,
            kind: FlagKind::Text { value_name },
        }
    }

    /// `--LONG N`, a whole number with an optional default.
    pub const fn number(
        long: &'static str,
        value_name: &'static str,
        default: Option<&'static str>,
        help: &'static str,
    ) -> Self {
        Self {
            long,
            short: None,
            help,
            kind: FlagKind::Number {
                value_name,
                default,
            },
        }
    }

    /// A required positional argument (`many`: one or more).
    pub const fn positional(
        name: &'static str,
        value_name: &'static str,
        many: bool,
        help: &'static str,
    ) -> Self {
        Self {
            long: name,
            short: None,
            help,
            kind: FlagKind::Positional { value_name, many },
        }
    }

    /// An optional positional whole number, `default` when not given.
    pub const fn number_arg(
        name: &'static str,
        value_name: &'static str,
        default: &'static str,
        help: &'static str,
    ) -> Self {
        Self {
            long: name,
            short: None,
            help,
            kind: FlagKind::NumberArg {
                value_name,
                default,
            },
        }
    }

    /// The same flag with a short name too.
    pub const fn short(mut self, short: char) -> Self {
        self.short = Some(short);
        self
    }

    /// The same flag with the tool's own `--help` line (a shared flag, said for the tool).
    pub const fn help(mut self, help: &'static str) -> Self {
        self.help = help;
        self
    }
}

/// `-x`/`--failures`: only calls that failed, as bcc's `-x` (say what failing is for the
/// tool with [`Flag::help`]).
pub const FAILURES: Flag = Flag::switch("failures", "Only calls that failed").short('x');

/// `-n`/`--name COMM`: only tasks of this command name, as bcc's `-n`
/// ([`FlagValues::comm_filter`]).
pub const NAME: Flag =
    Flag::text("name", "COMM", "Only tasks whose command name is COMM").short('n');

/// `--noclear`: interval tables do not clear the screen first (bcc's top tools' `-C`; no
/// short flag: `-C` is hardirqs' and softirqs' `--count`). Only on a terminal do they.
pub const NOCLEAR: Flag = Flag::switch(
    "noclear",
    "Do not clear the screen before each interval's table (bcc -C)",
);

/// `--unit ns|us|ms`, microseconds by default, as bcc's `-m` is milliseconds.
pub const UNIT: Flag = Flag {
    long: "unit",
    short: None,
    help: "Unit of the histogram",
    kind: FlagKind::Choice {
        value_name: "UNIT",
        choices: &[
            ("ns", "Nanoseconds"),
            ("us", "Microseconds"),
            ("ms", "Milliseconds"),
        ],
        default: Some("us"),
    },
};

/// `--by comm|pid`: also group by the calling process's name or pid.
pub const BY_PROCESS: Flag = Flag {
    long: "by",
    short: None,
    help: "Also group by process name or pid",
    kind: FlagKind::Choice {
        value_name: "BY",
        choices: &[
            ("comm", "The calling thread's command name"),
            ("pid", "The calling process"),
        ],
        default: None,
    },
};

/// A value given to a tool's flag.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A switch.
    Switch(bool),
    /// A string or a choice.
    Text(String),
    /// A number.
    Number(u64),
    /// A positional argument's values.
    List(Vec<String>),
}

/// The flags of one run of a tool: its own, by long name, and what its plan needs of the
/// shared groups.
#[derive(Clone, Debug)]
pub struct FlagValues {
    /// The tool's name, for the message when it reads a flag it does not declare.
    tool: &'static str,
    /// The flags it declares.
    declared: &'static [Flag],
    own: BTreeMap<&'static str, Value>,
    /// `-a`, `-p`, `-- CMD` (a plan may refuse one, as `runqlat` refuses `-p`).
    pub scope: Scope,
    /// `--cgroup PATH` was given (a plan that cannot select tasks refuses it as `-p`).
    pub cgroup: bool,
    /// Kernel map sizes.
    pub maps: MapSizes,
    /// How kernel functions attach, and the pid uprobes are limited to.
    pub target: Target,
    /// `--percentiles`' precision, when asked for.
    pub percentiles: Option<u32>,
}

impl FlagValues {
    /// The flag that selects tasks, `-p` or `--cgroup`, when one was given: plans whose
    /// events do not run in the task they are about refuse it.
    pub fn task_flag(&self) -> Option<&'static str> {
        match (&self.scope, self.cgroup) {
            (Scope::Pids(_), _) => Some("-p"),
            (_, true) => Some("--cgroup"),
            _ => None,
        }
    }

    /// Every flag of `tool` at its default, for the whole machine (what the exporter runs).
    pub fn defaults(tool: &Tool) -> Self {
        let mut own = BTreeMap::new();
        for flag in tool.flags {
            let value = match flag.kind {
                FlagKind::Switch => Some(Value::Switch(false)),
                FlagKind::Number { default, .. } => default.map(|digits| {
                    Value::Number(digits.parse().expect("a number's default is digits"))
                }),
                FlagKind::Choice { default, .. } => default.map(|d| Value::Text(d.into())),
                FlagKind::NumberArg { default, .. } => Some(Value::Number(
                    default.parse().expect("a number's default is digits"),
                )),
                FlagKind::Text { .. } | FlagKind::Positional { .. } => None,
            };
            if let Some(value) = value {
                own.insert(flag.long, value);
            }
        }
        Self {
            tool: tool.name,
            declared: tool.flags,
            own,
            scope: Scope::All,
            cgroup: false,
            maps: MapSizes::default(),
            target: Target::default(),
            percentiles: None,
        }
    }

    /// Whether the tool declares flag `long` (helpers that apply the shared flags a tool
    /// takes, as [`super::EventsJob::with_flags`], ask before they read one).
    pub fn declares(&self, long: &str) -> bool {
        self.declared.iter().any(|flag| flag.long == long)
    }

    /// The value of flag `long`, which the tool must declare: reading another is a bug (a
    /// misspelt name, a shared flag missing from [`Tool::flags`]) that would read as "not
    /// given", so tests and debug builds panic on it.
    fn value(&self, long: &str) -> Option<&Value> {
        debug_assert!(
            self.declares(long),
            "tool {} reads flag {long:?}, which it does not declare (its flags: {:?})",
            self.tool,
            self.declared
                .iter()
                .map(|flag| flag.long)
                .collect::<Vec<_>>()
        );
        self.own.get(long)
    }

    /// Sets flag `long` (a flag of the tool: another panics in tests and debug builds) to
    /// `value`.
    pub fn set(&mut self, long: &'static str, value: Value) {
        debug_assert!(
            self.declares(long),
            "tool {} is given flag {long:?}, which it does not declare",
            self.tool
        );
        self.own.insert(long, value);
    }

    /// Whether switch `long` is on.
    pub fn switch(&self, long: &str) -> bool {
        matches!(self.value(long), Some(Value::Switch(true)))
    }

    /// The string (or choice, or a positional's first value) given to `long`.
    pub fn text(&self, long: &str) -> Option<&str> {
        match self.value(long)? {
            Value::Text(text) => Some(text),
            Value::List(list) => list.first().map(String::as_str),
            _ => None,
        }
    }

    /// The number given to `long` (or its default).
    pub fn number(&self, long: &str) -> Option<u64> {
        match self.value(long)? {
            Value::Number(n) => Some(*n),
            _ => None,
        }
    }

    /// A positional's values.
    pub fn list(&self, long: &str) -> Vec<String> {
        match self.value(long) {
            Some(Value::List(list)) => list.clone(),
            Some(Value::Text(text)) => vec![text.clone()],
            _ => Vec::new(),
        }
    }

    /// `comm == "COMM"` for [`NAME`] (`-n COMM`), in the filter language (whose strings
    /// have no escapes: quoted with whichever quote COMM does not hold).
    ///
    /// # Errors
    /// A usage error for a COMM holding both quotes.
    pub fn comm_filter(&self) -> Result<Option<String>> {
        let Some(comm) = self.text(NAME.long) else {
            return Ok(None);
        };
        let quote = match (comm.contains('"'), comm.contains('\'')) {
            (false, _) => '"',
            (true, false) => '\'',
            (true, true) => {
                return Err(crate::Error::usage(format!(
                    "--name {}: a command name with both quote characters cannot be matched",
                    crate::error::quote(comm)
                )));
            }
        };
        Ok(Some(format!("comm == {quote}{comm}{quote}")))
    }

    /// `--unit` ([`UNIT`]): microseconds unless given.
    pub fn unit(&self) -> LatencyUnit {
        match self.text("unit") {
            Some("ns") => LatencyUnit {
                ns: 1,
                header: "nsecs",
            },
            Some("ms") => LatencyUnit {
                ns: 1_000_000,
                header: "msecs",
            },
            _ => LatencyUnit::US,
        }
    }
}
