//! Man pages and shell completions, generated from the clap definitions by `cargo xtask
//! dist` into `target/dist/man` and `target/dist/completions`, which its .deb installs;
//! neither is kept in the repository.
//!
//! [`tests::every_dist_file_generates`] generates them in memory and checks there is a page
//! per command and a script per shell; with `TRACEKIT_DIST_DIR=DIR` it also writes them
//! under `DIR`, which is how `cargo xtask dist` makes them. Test code only: the binary
//! carries neither generator.

use std::ffi::OsStr;

use clap::{
    Command, CommandFactory as _,
    builder::{PossibleValue, TypedValueParser},
};
use clap_complete::{Generator, Shell};
use clap_mangen::{
    Man,
    roff::{Roff, bold, roman},
};

use crate::Cli;

/// The arguments that take a probe spec, by subcommand and argument id: the completions
/// offer the probe kinds (`t:`, `tracepoint:`, `k:`, ...) for them.
const PROBE_ARGS: &[(&str, &str)] = &[
    ("count", "probes"),
    ("hist", "probe"),
    ("trace", "probes"),
    ("stackcount", "probe"),
    ("top", "event"),
    ("list", "fields"),
];

/// Every generated file: its path under the output directory (`man/NAME.1`,
/// `completions/NAME`) and its contents.
pub fn files() -> Vec<(String, Vec<u8>)> {
    let mut files = man_pages(&Cli::command());
    files.extend(completions());
    files
}

/// One page per command, `tracekit.1` and `tracekit-SUBCOMMAND.1`, as `man/NAME.1`.
pub fn man_pages(cli: &Command) -> Vec<(String, Vec<u8>)> {
    let mut cli = cli.clone().disable_help_subcommand(true);
    cli.build();
    let subcommands: Vec<&Command> = cli.get_subcommands().filter(|s| !s.is_hide_set()).collect();
    let mut pages = vec![page(&cli, &subcommands)];
    pages.extend(subcommands.iter().map(|sub| page(sub, &[&cli])));
    pages
}

/// A man page: clap_mangen's sections, then the `--help` EXAMPLES (in no-fill mode, as
/// written; clap_mangen would fill them into one paragraph) and SEE ALSO.
fn page(cmd: &Command, see_also: &[&Command]) -> (String, Vec<u8>) {
    let man = Man::new(cmd.clone()).source(format!("tracekit {}", env!("CARGO_PKG_VERSION")));
    let mut out = Vec::new();
    let write = |out: &mut Vec<u8>,
                 render: fn(&Man, &mut dyn std::io::Write) -> std::io::Result<()>| {
        render(&man, out).expect("writing to memory")
    };
    write(&mut out, Man::render_title);
    write(&mut out, Man::render_name_section);
    write(&mut out, Man::render_synopsis_section);
    write(&mut out, Man::render_description_section);
    write(&mut out, Man::render_options_section);
    if cmd.has_subcommands() {
        write(&mut out, Man::render_subcommands_section);
    }
    let mut roff = Roff::new();
    if let Some(after) = cmd.get_after_help() {
        let text = after.to_string();
        let examples = text.strip_prefix("EXAMPLES:\n").unwrap_or(&text);
        roff.control("SH", ["EXAMPLES"]).control("nf", []);
        for line in examples.lines() {
            roff.text([roman(line)]);
        }
        roff.control("fi", []);
    }
    roff.control("SH", ["SEE ALSO"]);
    let names: Vec<String> = see_also.iter().map(|c| display_name(c)).collect();
    for (i, name) in names.iter().enumerate() {
        let comma = if i + 1 < names.len() { "," } else { "" };
        roff.text([bold(name.as_str()), roman(format!("(1){comma}"))]);
    }
    // Repeats the preamble that defines \*(Aq (straight apostrophes for copy and paste).
    roff.to_writer(&mut out).expect("writing to memory");
    if cmd.get_version().is_some() {
        write(&mut out, Man::render_version_section);
    }
    (format!("man/{}.1", display_name(cmd)), out)
}

fn display_name(cmd: &Command) -> String {
    cmd.get_display_name()
        .unwrap_or_else(|| cmd.get_name())
        .to_string()
}

/// Completion scripts for bash, zsh and fish, as `completions/NAME`.
pub fn completions() -> Vec<(String, Vec<u8>)> {
    let mut cli = with_probe_kinds(Cli::command());
    [Shell::Bash, Shell::Zsh, Shell::Fish]
        .into_iter()
        .map(|shell| {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cli, "tracekit", &mut script);
            (
                format!("completions/{}", shell.file_name("tracekit")),
                script,
            )
        })
        .collect()
}

/// `cli` with the probe kinds as the values the probe arguments complete to.
fn with_probe_kinds(cli: Command) -> Command {
    PROBE_ARGS.iter().fold(cli, |cli, &(sub, id)| {
        cli.mut_subcommand(sub, |sub| {
            assert!(
                sub.get_arguments().any(|arg| arg.get_id() == id),
                "{} has no argument {id}",
                sub.get_name()
            );
            // In place: `mut_arg` would move a positional after the others.
            sub.mut_args(|arg| {
                if arg.get_id() == id {
                    arg.value_parser(ProbeKinds)
                } else {
                    arg
                }
            })
        })
    })
}

/// Takes any probe spec, and names the kinds of [`tracekit::engine::kinds::KINDS`] (`KIND:`) as
/// possible values, for completion only.
#[derive(Clone, Copy, Debug)]
struct ProbeKinds;

impl TypedValueParser for ProbeKinds {
    type Value = String;

    fn parse_ref(
        &self,
        _cmd: &Command,
        _arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<String, clap::Error> {
        Ok(value.to_string_lossy().into_owned())
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(tracekit::engine::kinds::KINDS.iter().flat_map(
            |kind| {
                kind.names().iter().map(move |name| {
                    // clap's values are 'static without its `string` feature; a test's few
                    // dozen bytes.
                    let value: &'static str = Box::leak(format!("{name}:").into_boxed_str());
                    PossibleValue::new(value).help(kind.name())
                })
            },
        )))
    }
}

#[cfg(test)]
mod tests {
    use std::process::Command as Process;

    use super::*;

    /// A page for the command and each subcommand, and a completion script for each of
    /// bash, zsh and fish, none empty; `TRACEKIT_DIST_DIR=DIR` writes them under `DIR`
    /// (`man/`, `completions/`), as `cargo xtask dist` asks.
    #[test]
    fn every_dist_file_generates() {
        let mut cli = Cli::command().disable_help_subcommand(true);
        cli.build();
        let files = files();
        let names: Vec<&str> = files.iter().map(|(name, _)| name.as_str()).collect();
        let subcommands = cli.get_subcommands().filter(|s| !s.is_hide_set());
        let mut want = vec!["man/tracekit.1".to_string()];
        want.extend(subcommands.map(|sub| format!("man/tracekit-{}.1", sub.get_name())));
        want.extend(
            ["tracekit.bash", "_tracekit", "tracekit.fish"].map(|s| format!("completions/{s}")),
        );
        assert_eq!(names, want);
        for (name, contents) in &files {
            assert!(contents.len() > 100, "{name}: {} bytes", contents.len());
        }
        if let Some(dir) = std::env::var_os("TRACEKIT_DIST_DIR") {
            let dir = std::path::Path::new(&dir);
            for (name, contents) in files {
                let path = dir.join(name);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, contents).unwrap();
            }
        }
    }

    /// Every command's page lists each of its flags and its `--help` examples, line by line.
    #[test]
    fn man_pages_hold_every_flag_and_example() {
        let mut cli = Cli::command().disable_help_subcommand(true);
        cli.build();
        let pages = man_pages(&cli);
        assert_eq!(pages.len(), 1 + cli.get_subcommands().count());
        for sub in cli.get_subcommands() {
            let name = format!("man/tracekit-{}.1", sub.get_name());
            let (_, page) = pages.iter().find(|(n, _)| *n == name).expect(&name);
            let page = String::from_utf8(page.clone()).unwrap();
            for arg in sub.get_arguments().filter(|a| !a.is_hide_set()) {
                if let Some(long) = arg.get_long() {
                    let escaped = format!("\\-\\-{}", long.replace('-', "\\-"));
                    assert!(page.contains(&escaped), "{name}: no --{long}");
                }
            }
            // The EXAMPLES section, unescaped, is the --help text after "EXAMPLES:".
            let section = page.split(".SH EXAMPLES\n.nf\n").nth(1).expect(&name);
            let section = section.split("\n.fi\n").next().unwrap();
            let examples = section
                .replace("\\-", "-")
                .replace("\\*(Aq", "'")
                .replace("\\&", "");
            let help = sub.get_after_help().unwrap().to_string();
            assert_eq!(
                Some(examples.as_str()),
                help.strip_prefix("EXAMPLES:\n").map(str::trim_end),
                "{name}"
            );
            assert!(
                page.contains(".SH \"SEE ALSO\"\n\\fBtracekit\\fR(1)"),
                "{name}"
            );
        }
        let (_, root) = &pages[0];
        let root = String::from_utf8(root.clone()).unwrap();
        assert!(root.contains("\\fBtracekit\\-profile\\fR(1),"), "{root}");
    }

    /// What bash completes `tracekit WORDS...` to, with the generated script sourced.
    fn bash_complete(words: &[&str]) -> Vec<String> {
        let (_, script) = completions()
            .into_iter()
            .find(|(name, _)| name == "completions/tracekit.bash")
            .unwrap();
        let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
        let cword = words.len() - 1;
        let program = format!(
            "{}\nCOMP_WORDS=({})\nCOMP_CWORD={cword}\n_tracekit tracekit '{}' '{}'\n\
             printf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
            String::from_utf8(script).unwrap(),
            quoted.join(" "),
            words[cword],
            words[cword - 1],
        );
        // On stdin: the script is longer than one argument may be (128 KiB).
        let mut child = Process::new("bash")
            .args(["--norc", "--noprofile", "-s"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("running bash");
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), program.as_bytes()).unwrap();
        let out = child.wait_with_output().expect("running bash");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Bash completes subcommands, their flags, value enums and probe kinds.
    #[test]
    fn bash_completes_commands_and_probe_kinds() {
        let commands = bash_complete(&["tracekit", ""]);
        for want in ["profile", "hist", "count", "offcpu", "exporter"] {
            assert!(commands.contains(&want.to_string()), "{commands:?}");
        }
        assert_eq!(bash_complete(&["tracekit", "pro"]), ["profile"]);
        assert_eq!(
            bash_complete(&["tracekit", "count", "t"]),
            ["tracepoint:", "t:"]
        );
        let kinds = bash_complete(&["tracekit", "hist", ""]);
        for want in ["kprobe:", "k:", "uprobe:", "usdt:", "U:", "rawtracepoint:"] {
            assert!(kinds.contains(&want.to_string()), "{kinds:?}");
        }
        assert_eq!(
            bash_complete(&["tracekit", "top", "-e", "u"]),
            ["uprobe:", "u:", "uretprobe:", "ur:", "usdt:"]
        );
        assert_eq!(
            bash_complete(&["tracekit", "profile", "--call-graph", ""]),
            ["fp", "dwarf"]
        );
        assert_eq!(
            bash_complete(&["tracekit", "profile", "--fre"]),
            ["--frequency"]
        );
    }
}
