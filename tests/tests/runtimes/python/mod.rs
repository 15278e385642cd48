//! Python: CPython's frames unwound in the kernel with no flags, named from a process's
//! first samples on, and the perf trampolines of `-X perf`.

mod frames;
mod names;
mod perf_trampolines;
mod real_programs;
mod startup;
