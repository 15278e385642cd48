//! Snoops.

mod processes;
