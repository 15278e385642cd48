//! One module per subcommand: each turns parsed arguments into a traced, reported run.

pub mod agg;
pub mod biolatency;
pub mod bitesize;
pub mod compile;
pub mod funccount;
pub mod funclatency;
pub mod hist;
pub mod list;
pub mod offcpu;
pub mod profile;
pub mod runqlat;
pub mod session;
pub mod stackcount;
pub mod stat;
pub mod syscount;
pub mod top;
pub mod trace;
