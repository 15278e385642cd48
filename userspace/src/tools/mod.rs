//! One file per command: its flags, its examples, and a `run` that builds a request (or
//! options) and hands it to a job of the library. Adding a command is a file here and one
//! line in the registry below; no command imports another.

/// Declares the tool modules and the subcommand enum, and dispatches to each `run`.
macro_rules! registry {
    ($($module:ident => $variant:ident),* $(,)?) => {
        $(pub mod $module;)*

        /// The subcommands, in `--help` order.
        #[derive(Debug, clap::Subcommand)]
        pub enum Command {
            $($variant($module::Args),)*
        }

        impl Command {
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
    bitesize => Bitesize,
    biolatency => Biolatency,
    runqlat => Runqlat,
    syscount => Syscount,
    funccount => Funccount,
    funclatency => Funclatency,
    trace => Trace,
    stackcount => Stackcount,
    stat => Stat,
    list => List,
    top => Top,
    offcpu => Offcpu,
    report => Report,
    diff => Diff,
    exporter => Exporter,
}
