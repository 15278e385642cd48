//! One module per subcommand: each turns parsed arguments into a traced, reported run.

pub mod profile;
pub mod session;
