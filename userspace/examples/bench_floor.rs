//! Attaches an empty BPF program to the raw tracepoint named on the command line until
//! stdin closes: the cost floor of that hook, for `cargo xtask bench syscount`.
//!
//! Usage: bench_floor sys_enter

use std::io::Read as _;

use aya::programs::RawTracePoint;
use tracekit::bpf::{Object, load_without_kernel_btf, object};

fn main() -> anyhow::Result<()> {
    let hook = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "sys_enter".into());
    let mut ebpf = load_without_kernel_btf(object(Object::Engine)?, |_| {})?;
    let program: &mut RawTracePoint = ebpf
        .program_mut("engine_empty")
        .expect("engine_empty in the engine object")
        .try_into()?;
    program.load()?;
    program.attach(&hook)?;
    eprintln!("attached an empty program to raw tracepoint {hook}");
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    Ok(())
}
