//! `tracekit memleak`: allocations not freed, by stack (bcc's and libbpf-tools' `memleak`),
//! on the engine's outstanding-allocation stage: libc's allocators of one process (`-p PID`,
//! `-- CMD`), or the kernel's (`kmem:kmalloc`, `kmem:kmem_cache_alloc` and their frees)
//! without one. The report runs in [`crate::jobs::outstanding`].

use super::{Flag, Group, ToolPlan, Tool};
use crate::jobs::outstanding::OutstandingJob;

/// `tracekit memleak`.
pub const TOOL: Tool = Tool {
    name: "memleak",
    summary: "Outstanding allocations by stack, user (libc) or kernel (bcc memleak)",
    examples: "  tracekit memleak -p 1234              # libc allocations 1234 has not freed, at Ctrl-C
  tracekit memleak -p 1234 -i 5          # the report every 5 seconds
  tracekit memleak -- ./app              # what ./app had not freed when it exited
  tracekit memleak --older 5000 -p 1234  # only allocations older than 5 s
  tracekit memleak -d 10                 # kernel: kmalloc and kmem_cache_alloc not freed
  tracekit memleak --kernel -p 1234 -d 10  # kernel allocations made by 1234's system calls

With -p or -- CMD, the process's libc is probed: malloc, calloc, realloc, posix_memalign,
aligned_alloc, valloc, memalign and pvalloc at their entry (the size, per thread) and their
return (the address, stored with the user stack), free and realloc at their entry (the
address, deleted). What is left is grouped by stack, biggest first. User stacks are walked
by frame pointers: build the program with -fno-omit-frame-pointer. Without either, the
kernel's kmem tracepoints are traced with kernel stacks. Allocations the outstanding map or
the stack map had no room for are reported on stderr.",
    flags: &[
        Flag::number("top", "N", Some("10"), "Show the N stacks with the most bytes outstanding (bcc memleak -T)"),
        Flag::number("older", "MS", None, "Only allocations at least MS milliseconds old (bcc memleak -o)"),
        Flag::number("min-size", "BYTES", None, "Only allocations of at least BYTES (bcc memleak -z)").short('z'),
        Flag::number("max-size", "BYTES", None, "Only allocations of at most BYTES (bcc memleak -Z)").short('Z'),
        Flag::switch("show-allocs", "Also list each allocation's address and size (bcc memleak -a)"),
        Flag::switch("kernel", "Kernel allocations also with -p or -- CMD: those made in its context"),
    ],
    groups: &[Group::Common],
    plan: |values| {
        let job = OutstandingJob {
            top: values.number("top").unwrap_or(10) as usize,
            older_ms: values.number("older"),
            min_size: values.number("min-size"),
            max_size: values.number("max-size"),
            show_allocs: values.switch("show-allocs"),
            kernel: values.switch("kernel"),
        };
        if let (Some(min), Some(max)) = (job.min_size, job.max_size)
            && min > max
        {
            return Err(crate::Error::usage(format!(
                "-z {min} -Z {max}: the minimum size is above the maximum"
            )));
        }
        Ok(ToolPlan::Memleak(job))
    },
    metric: None,
};
