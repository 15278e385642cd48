//! The filter language: parsed, then compiled against two real tracepoints (integers of
//! several widths and signs, strings). No input may panic, overflow the stack or hang;
//! errors are one short line.

#![no_main]

use libfuzzer_sys::fuzz_target;
use tracekit::{
    engine::{
        compile::{Events, compile_in},
        request::{KeyField, Request},
    },
    probe::filter,
};
use tracekit_fuzz::{TRACEFS, check_error};

fuzz_target!(|text: &str| {
    if let Err(err) = filter::parse(text) {
        check_error(text, &err);
        return;
    }
    for probe in ["raw_syscalls:sys_enter", "sched:sched_switch"] {
        let request = Request::probe(probe)
            .by(vec![KeyField::new("comm")])
            .filter(Some(text.to_string()));
        if let Err(err) = compile_in(&request, &Events::at(TRACEFS)) {
            check_error(text, &err);
        }
    }
});
