//! CPU profiles: `tracekit profile`, the user-stack unwinders, the naming of frames, and
//! the reports and formats a profile is written in.

mod cpu_profile;
mod pprof;
mod reports;
mod symbols;
mod unwinding;
