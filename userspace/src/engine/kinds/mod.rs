//! One module per probe kind: how a spec of that kind compiles to engine specs.

pub mod function;
pub mod raw_tracepoint;
pub mod software;
pub mod tracepoint;
pub mod usdt;
