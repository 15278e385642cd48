//! Tools.

mod block;
mod bpftrace_agreement;
mod filesystem;
mod interrupts;
mod kernel_function_tools;
mod memory;
mod network;
mod perf_commands;
mod scheduler;
mod snoops;
