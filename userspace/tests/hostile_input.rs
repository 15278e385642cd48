//! Property tests of the parsers users feed by hand: the filter language (parsed, and
//! compiled against real tracepoint formats), probe specs, and the quoting of inputs in
//! errors. Random, deep and long inputs must never panic, overflow the stack or hang, and
//! every error must be one short line that quotes at most 80 characters of any input.
//! (`cargo xtask fuzz` runs the same parsers under libFuzzer.)

mod support {
    pub mod error_shape;
}

use proptest::prelude::*;
use support::error_shape::assert_short_usage;
use tracekit::{
    engine::{
        compile::{Events, compile_in},
        kinds::{ProbeSpec, function_probe},
        request::{KeyField, Request},
    },
    error::{QUOTE_CHARS, quote, quote_at},
    probe::{all_tracepoints, expand_tracepoints, filter},
};

/// The tracefs tree of kernel 6.18 checked into the tests.
const TRACEFS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tracefs-6.18");

/// Words of the filter language and near misses, to build filters that get far.
fn filter_word() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("(".to_string()),
        Just(")".to_string()),
        Just("!".to_string()),
        Just("&&".to_string()),
        Just("||".to_string()),
        Just("&".to_string()),
        Just("|".to_string()),
        Just("==".to_string()),
        Just("!=".to_string()),
        Just("<".to_string()),
        Just(">=".to_string()),
        Just("~".to_string()),
        Just("!~".to_string()),
        Just("id".to_string()),
        Just("pid".to_string()),
        Just("comm".to_string()),
        Just("cpu".to_string()),
        Just("\"".to_string()),
        Just("'".to_string()),
        Just("\"bash*\"".to_string()),
        Just("'*sh'".to_string()),
        Just("-".to_string()),
        Just("0x".to_string()),
        Just("-9223372036854775809".to_string()),
        Just("18446744073709551616".to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| format!("{n:#x}")),
        "[a-z_][a-z0-9_]{0,12}",
        "\\PC{1,4}",
        Just("\n".to_string()),
        Just("\u{1b}[2J".to_string()),
    ]
}

/// Filters: token soup, arbitrary text, and the deep and long shapes that once crashed.
fn filter_text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::collection::vec(filter_word(), 0..40).prop_map(|words| words.join(" ")),
        2 => any::<String>(),
        1 => (1usize..20_000, prop::sample::select(vec!["(", "!", "!(", "(!"]))
            .prop_map(|(n, open)| format!("{}id == 1", open.repeat(n))),
        1 => (1usize..3_000).prop_map(|n| vec!["id > 1"; n].join(" && ")),
        1 => (1usize..100_000).prop_map(|n| format!("{} == 1", "x".repeat(n))),
        1 => (1usize..100_000).prop_map(|n| format!("comm == \"{}\"", "s".repeat(n))),
        1 => (1usize..100_000).prop_map(|n| format!("id == {}", "9".repeat(n))),
    ]
}

/// Probe specs: near-valid ones, arbitrary text, long and odd ones.
fn probe_text() -> impl Strategy<Value = String> {
    let kind = prop::sample::select(vec![
        "",
        "t:",
        "tracepoint:",
        "rt:",
        "k:",
        "kr:",
        "f:",
        "u:",
        "uprobe:",
        "s:",
        "h:",
        "x:",
    ]);
    prop_oneof![
        4 => (kind, "[a-z_:*?/.+0-9]{0,40}").prop_map(|(k, rest)| format!("{k}{rest}")),
        2 => any::<String>(),
        1 => (1usize..100_000).prop_map(|n| format!("tracepoint:{}:x", "a".repeat(n))),
        1 => (1usize..100_000).prop_map(|n| format!("uprobe:/{}:malloc", "d/".repeat(n))),
        1 => (1usize..100_000).prop_map(|n| ":".repeat(n)),
        1 => (1usize..2_000).prop_map(|n| format!("sched:{}", "*?".repeat(n))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn filters_parse_or_fail_in_one_short_line(text in filter_text()) {
        if let Err(err) = filter::parse(&text) {
            assert_short_usage(&text, &err);
            prop_assert!(err.to_string().starts_with("--filter '"));
        }
    }

    #[test]
    fn filters_compile_or_fail_in_one_short_line(text in filter_text()) {
        let request = Request::probe("raw_syscalls:sys_enter")
            .by(vec![KeyField::new("comm")])
            .filter(Some(text.clone()));
        if let Err(err) = compile_in(&request, &Events::at(TRACEFS)) {
            assert_short_usage(&text, &err);
        }
    }

    #[test]
    fn probe_specs_parse_or_fail_in_one_short_line(text in probe_text()) {
        match ProbeSpec::parse(&text) {
            Ok(spec) => prop_assert!(spec.text == text),
            Err(err) => assert_short_usage(&text, &err),
        }
        if let Err(err) = function_probe(&text, false) {
            assert_short_usage(&text, &err);
        }
    }

    #[test]
    fn tracepoint_specs_resolve_or_fail_in_one_short_line(text in probe_text()) {
        let all = all_tracepoints(std::path::Path::new(TRACEFS)).unwrap();
        if let Ok(spec) = ProbeSpec::parse(&text)
            && let Err(err) = expand_tracepoints(&spec.target, &all)
        {
            assert_short_usage(&text, &err);
        }
        let request = Request::probe(text.clone());
        if ProbeSpec::parse(&text).is_ok_and(|spec| {
            spec.kind.name() == "tracepoint"
        }) && let Err(err) = compile_in(&request, &Events::at(TRACEFS))
        {
            assert_short_usage(&text, &err);
        }
    }

    #[test]
    fn quotes_are_short_and_one_line(text in any::<String>(), column in 0usize..200_000) {
        for quoted in [quote(&text), quote_at(&text, column)] {
            prop_assert!(quoted.chars().count() <= QUOTE_CHARS);
            prop_assert!(!quoted.chars().any(char::is_control));
        }
        if text.chars().count() <= QUOTE_CHARS && !text.chars().any(char::is_control) {
            prop_assert_eq!(quote(&text), text.clone());
            prop_assert_eq!(quote_at(&text, column), text);
        }
    }

    #[test]
    fn long_quotes_keep_both_ends(head in "[a-z]{60}", middle in "[0-9]{30,5000}", tail in "[A-Z]{30}") {
        let text = format!("{head}{middle}{tail}");
        let quoted = quote(&text);
        prop_assert_eq!(quoted.chars().count(), QUOTE_CHARS);
        prop_assert!(quoted.starts_with(&head[..53]));
        prop_assert!(quoted.ends_with(&tail[4..]));
    }
}

/// Deeply nested and very long filters, one case each: the error names the limit.
#[test]
fn deep_and_long_filters_name_the_limit() {
    for open in ["(", "!"] {
        let text = format!("{}id == 1", open.repeat(1_000));
        let err = filter::parse(&text).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "--filter '{}…': more than 32 levels of `(` and `!`; filters nest at most 32 \
                 deep at column 33",
                open.repeat(79)
            )
        );
    }
    let deeper = format!("{}id == 1", "(".repeat(10_000));
    assert_eq!(
        filter::parse(&deeper).unwrap_err().to_string(),
        format!(
            "--filter '{}…{}id == 1': 10007 bytes long; a filter is at most 4096 bytes",
            "(".repeat(53),
            "(".repeat(19)
        )
    );
    let long = format!("id == {}", "1 ".repeat(50_000));
    assert_eq!(
        filter::parse(&long).unwrap_err().to_string(),
        format!(
            "--filter 'id == {}1…{}': 100006 bytes long; a filter is at most 4096 bytes",
            "1 ".repeat(23),
            "1 ".repeat(13)
        )
    );
}
