//! The bcc-style tools, each against a fixture or workload whose truth is known: snoops,
//! network, block, filesystem, scheduler, interrupts, locks, memory, the kernel-function
//! tools, perf's everyday commands, and the tools side by side with bpftrace's own.

mod block;
mod bpftrace_agreement;
mod filesystem;
mod interrupts;
mod kernel_function_tools;
mod locks;
mod memory;
mod network;
mod perf_commands;
mod scheduler;
mod snoops;
