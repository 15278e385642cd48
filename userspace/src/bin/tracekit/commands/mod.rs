//! The commands: the tools of the library's table ([`tracekit::jobs::tools`], one file of
//! data each, made subcommands by [`table`]), and the commands with flags of their own
//! (`profile`, `hist`, `trace`, ...), one file each here plus a line in the registry below.
//! No command imports another.

pub mod tools;

/// Declares the command modules and the enum of the commands with files here.
macro_rules! registry {
    ($($module:ident => $variant:ident),* $(,)?) => {
        $(pub mod $module;)*

        /// The commands with files here, in `--help` order.
        #[derive(Debug, clap::Subcommand)]
        pub enum Builtin {
            $($variant($module::Args),)*
        }

        impl Builtin {
            /// Runs the subcommand.
            pub fn run(self, verbose: u8) -> tracekit::Result<()> {
                match self {
                    $(Self::$variant(args) => $module::run(args, verbose),)*
                }
            }
        }
    };
}

registry! {
    profile => Profile,
    hist => Hist,
    count => Count,
    trace => Trace,
    stackcount => Stackcount,
    stat => Stat,
    list => List,
    top => Top,
    offcpu => Offcpu,
    wakeuptime => Wakeuptime,
    offwaketime => Offwaketime,
    report => Report,
    diff => Diff,
    exporter => Exporter,
}

/// The command whose subcommands the table's tools follow in `--help`.
const TOOLS_AFTER: &str = "count";

/// A subcommand: one with a file here, or a tool of the table with its parsed flags.
#[derive(Debug)]
// One value per run, parsed once: its size does not matter.
#[allow(clippy::large_enum_variant)]
pub enum Command {
    /// `profile`, `hist`, ...
    Builtin(Builtin),
    /// `biolatency`, `syscount`, ...
    Tool(&'static tracekit::jobs::tools::Tool, clap::ArgMatches),
}

impl Command {
    /// Runs the subcommand.
    pub fn run(self, verbose: u8) -> tracekit::Result<()> {
        match self {
            Self::Builtin(builtin) => builtin.run(verbose),
            Self::Tool(tool, matches) => tools::run(tool, &matches, verbose),
        }
    }
}

impl clap::FromArgMatches for Command {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        if let Some((name, sub)) = matches.subcommand()
            && let Some(tool) = tracekit::jobs::tools::find(name)
        {
            return Ok(Self::Tool(tool, sub.clone()));
        }
        Builtin::from_arg_matches(matches).map(Self::Builtin)
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl clap::Subcommand for Command {
    fn augment_subcommands(mut cmd: clap::Command) -> clap::Command {
        let builtins = Builtin::augment_subcommands(clap::Command::new("tracekit"));
        let mut order = 0;
        let mut add = |cmd: clap::Command, sub: clap::Command| {
            order += 1;
            cmd.subcommand(sub.display_order(order))
        };
        for builtin in builtins.get_subcommands() {
            cmd = add(cmd, builtin.clone());
            if builtin.get_name() == TOOLS_AFTER {
                for tool in tracekit::jobs::tools::TOOLS {
                    cmd = add(cmd, tools::command(tool));
                }
            }
        }
        cmd
    }

    fn augment_subcommands_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_subcommands(cmd)
    }

    fn has_subcommand(name: &str) -> bool {
        tracekit::jobs::tools::find(name).is_some() || Builtin::has_subcommand(name)
    }
}
