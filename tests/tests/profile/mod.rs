//! Profiles.

mod cpu_profile;
pub(crate) mod pprof;
mod reports;
mod unwinding;
