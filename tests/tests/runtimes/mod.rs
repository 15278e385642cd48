//! Runtimes.

mod java;
mod node;
mod python;
mod ruby;
mod whole_machine;
