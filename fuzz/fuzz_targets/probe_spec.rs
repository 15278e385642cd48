//! Probe specs: parsed, turned into function probes as funccount does, and tracepoint
//! specs expanded (wildcards too) and compiled against real tracepoints. No input may
//! panic or hang; errors are one short line; quotes of the input are at most 80
//! characters.

#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use tracekit::{
    engine::{
        compile::{Events, compile_in},
        kinds::{ProbeSpec, function_probe},
        request::Request,
    },
    error::{QUOTE_CHARS, quote},
    probe::{Tracepoint, all_tracepoints, expand_tracepoints},
};
use tracekit_fuzz::{TRACEFS, check_error};

static TRACEPOINTS: LazyLock<Vec<Tracepoint>> =
    LazyLock::new(|| all_tracepoints(std::path::Path::new(TRACEFS)).expect("test tracefs"));

fuzz_target!(|text: &str| {
    assert!(quote(text).chars().count() <= QUOTE_CHARS);
    for ret in [false, true] {
        if let Err(err) = function_probe(text, ret) {
            check_error(text, &err);
        }
    }
    let spec = match ProbeSpec::parse(text) {
        Ok(spec) => spec,
        Err(err) => return check_error(text, &err),
    };
    if spec.kind.name() != "tracepoint" {
        return;
    }
    if let Err(err) = expand_tracepoints(&spec.target, &TRACEPOINTS) {
        return check_error(text, &err);
    }
    if let Err(err) = compile_in(&Request::probe(text), &Events::at(TRACEFS)) {
        check_error(text, &err);
    }
});
