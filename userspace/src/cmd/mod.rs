//! One module per subcommand: each turns parsed arguments into a traced, reported run.

pub mod agg;
pub mod biolatency;
pub mod bitesize;
pub mod hist;
pub mod profile;
pub mod session;
pub mod syscount;
