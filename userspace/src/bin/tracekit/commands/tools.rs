//! The tools of the library's table ([`tracekit::jobs::tools`]) as subcommands: a tool's
//! own flags become clap arguments, its groups the shared flag groups of [`crate::cli`],
//! and a run turns the parsed flags back into [`FlagValues`] for the tool's plan.

use clap::{
    Arg, ArgAction, ArgMatches, Args as _, FromArgMatches as _,
    builder::{PossibleValue, PossibleValuesParser},
};
use tracekit::{
    Result,
    jobs::{
        RunOptions, aggregate,
        tools::{Flag, FlagKind, FlagValues, Group, Tool, ToolPlan, Value},
        trace,
    },
};

use crate::cli::{Common, MapArgs, PercentileArgs, ProbeArgs};

/// The subcommand of `tool`: summary, examples, its own flags, then its groups'.
pub fn command(tool: &'static Tool) -> clap::Command {
    let mut cmd = clap::Command::new(tool.name);
    for flag in tool.flags {
        cmd = cmd.arg(arg(flag));
    }
    for group in tool.groups {
        cmd = match group {
            Group::Common => Common::augment_args(cmd),
            Group::Maps => MapArgs::augment_args(cmd),
            Group::Probing => ProbeArgs::augment_args(cmd),
            Group::Percentiles => PercentileArgs::augment_args(cmd),
        };
    }
    // After the groups, whose doc comments would otherwise be the summary.
    cmd.about(tool.summary)
        .long_about(None)
        .after_help(format!("EXAMPLES:\n{}", tool.examples))
}

/// The clap argument of a flag; its id is the long name.
fn arg(flag: &Flag) -> Arg {
    let arg = Arg::new(flag.long).help(flag.help);
    if let FlagKind::Positional { value_name, many } = flag.kind {
        let arg = arg.value_name(value_name).required(true);
        return if many {
            arg.num_args(1..).action(ArgAction::Append)
        } else {
            arg.action(ArgAction::Set)
        };
    }
    if let FlagKind::NumberArg {
        value_name,
        default,
    } = flag.kind
    {
        return arg
            .value_name(value_name)
            .value_parser(clap::value_parser!(u64))
            .default_value(default)
            .action(ArgAction::Set);
    }
    let mut arg = arg.long(flag.long);
    if let Some(short) = flag.short {
        arg = arg.short(short);
    }
    match flag.kind {
        FlagKind::Switch => arg.action(ArgAction::SetTrue),
        FlagKind::Text { value_name } => arg.value_name(value_name).action(ArgAction::Set),
        FlagKind::Number {
            value_name,
            default,
        } => {
            let arg = arg
                .value_name(value_name)
                .value_parser(clap::value_parser!(u64))
                .action(ArgAction::Set);
            match default {
                Some(default) => arg.default_value(default),
                None => arg,
            }
        }
        FlagKind::Choice {
            value_name,
            choices,
            default,
        } => {
            let arg = arg
                .value_name(value_name)
                .value_parser(PossibleValuesParser::new(
                    choices
                        .iter()
                        .map(|(name, help)| PossibleValue::new(*name).help(*help)),
                ))
                .action(ArgAction::Set);
            match default {
                Some(default) => arg.default_value(default),
                None => arg,
            }
        }
        FlagKind::Positional { .. } | FlagKind::NumberArg { .. } => {
            unreachable!("handled above")
        }
    }
}

/// Runs `tool` with the flags of `matches`.
pub fn run(tool: &'static Tool, matches: &ArgMatches, verbose: u8) -> Result<()> {
    let (values, options) = values(tool, matches, verbose)?;
    match (tool.plan)(&values)? {
        ToolPlan::Aggregate(job) => aggregate::run(job, &options),
        ToolPlan::Events(job) => trace::run_events(&job, &options),
        ToolPlan::Memleak(job) => tracekit::jobs::outstanding::run(&job, &options),
    }
}

/// The flags of `matches` as the tool's plan takes them, and the run options of its
/// common group.
fn values(
    tool: &'static Tool,
    matches: &ArgMatches,
    verbose: u8,
) -> Result<(FlagValues, RunOptions)> {
    let mut values = FlagValues::defaults(tool);
    for flag in tool.flags {
        let value = match flag.kind {
            FlagKind::Switch => Some(Value::Switch(matches.get_flag(flag.long))),
            FlagKind::Number { .. } | FlagKind::NumberArg { .. } => matches
                .get_one::<u64>(flag.long)
                .copied()
                .map(Value::Number),
            FlagKind::Text { .. } | FlagKind::Choice { .. } => matches
                .get_one::<String>(flag.long)
                .cloned()
                .map(Value::Text),
            FlagKind::Positional { .. } => matches
                .get_many::<String>(flag.long)
                .map(|many| Value::List(many.cloned().collect())),
        };
        if let Some(value) = value {
            values.set(flag.long, value);
        }
    }
    let parse_error = |err: clap::Error| tracekit::Error::usage(err.to_string());
    let mut options = None;
    for group in tool.groups {
        match group {
            Group::Common => {
                let common = Common::from_arg_matches(matches).map_err(parse_error)?;
                options = Some(common.run_options(verbose)?);
            }
            Group::Maps => {
                let maps = MapArgs::from_arg_matches(matches).map_err(parse_error)?;
                values.maps = maps.sizes();
            }
            Group::Probing => {
                let probing = ProbeArgs::from_arg_matches(matches).map_err(parse_error)?;
                values.maps = probing.maps.sizes();
                values.target = probing.target.target(&probing.common.scope);
                options = Some(probing.run_options(verbose)?);
            }
            Group::Percentiles => {
                let percentiles = PercentileArgs::from_arg_matches(matches).map_err(parse_error)?;
                values.percentiles = percentiles.precision();
            }
        }
    }
    // `every_tool_is_a_subcommand` checks that each tool takes one of the two.
    let options = options.expect("every tool takes Common or Probing");
    values.scope = options.scope.clone();
    values.cgroup = options.cgroup.is_some();
    Ok((values, options))
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};
    use tracekit::{
        engine::request::KeyField, jobs::tools::TOOLS, output::aggregates::Report, session::Scope,
    };

    use super::*;
    use crate::{Cli, commands::Command};

    /// Every tool of the table is a subcommand with its summary, examples and own flags, and
    /// takes exactly one group with the common flags.
    #[test]
    fn every_tool_is_a_subcommand() {
        let mut cli = Cli::command();
        cli.build();
        for tool in TOOLS {
            let sub = cli.find_subcommand(tool.name).expect(tool.name);
            assert_eq!(sub.get_about().unwrap().to_string(), tool.summary);
            let help = sub.clone().render_long_help().to_string();
            assert!(help.contains(&format!("EXAMPLES:\n  tracekit {}", tool.name)));
            for flag in tool.flags {
                assert!(
                    sub.get_arguments().any(|arg| arg.get_id() == flag.long),
                    "{}: --{}",
                    tool.name,
                    flag.long
                );
            }
            let common = tool
                .groups
                .iter()
                .filter(|g| matches!(g, Group::Common | Group::Probing))
                .count();
            assert_eq!(common, 1, "{}", tool.name);
        }
    }

    fn parsed(args: &[&str]) -> (&'static Tool, FlagValues, RunOptions) {
        let cli = Cli::try_parse_from(args).unwrap();
        let Command::Tool(tool, matches) = cli.command else {
            panic!("{args:?} is no tool");
        };
        let (values, options) = values(tool, &matches, 0).unwrap();
        (tool, values, options)
    }

    /// Own flags, shared groups and positionals reach the plan.
    #[test]
    fn flags_reach_the_plan() {
        let (tool, values, options) = parsed(&[
            "tracekit",
            "syscount",
            "-L",
            "--by",
            "comm",
            "--top",
            "5",
            "-p",
            "7",
            "--max-groups",
            "99",
        ]);
        assert_eq!(options.scope, Scope::Pids(vec![7]));
        let ToolPlan::Aggregate(job) = (tool.plan)(&values).unwrap() else {
            panic!("syscount aggregates");
        };
        assert_eq!(
            job.request.by,
            [
                KeyField::labeled("syscall", "start.id"),
                KeyField::new("comm")
            ]
        );
        assert_eq!(job.request.maps.max_groups, 99);
        assert_eq!(
            job.report,
            Report::Counts {
                clear: false,
                sum: Some(("TIME(us)".into(), 1000.0)),
                top: Some(5)
            }
        );
        let (tool, values, _) = parsed(&[
            "tracekit",
            "funclatency",
            "--unit",
            "ms",
            "--percentiles",
            "--kprobe",
            "-p",
            "3",
            "vfs_read",
        ]);
        assert_eq!(values.text("function"), Some("vfs_read"));
        assert_eq!(values.percentiles, Some(4));
        assert_eq!(values.target.pid, Some(3));
        let ToolPlan::Aggregate(job) = (tool.plan)(&values).unwrap() else {
            panic!("funclatency aggregates");
        };
        assert_eq!(job.request.value_div, 1_000_000);
        let (_, values, _) = parsed(&["tracekit", "funccount", "vfs_*", "tcp_*"]);
        assert_eq!(values.list("patterns"), ["vfs_*", "tcp_*"]);
    }
}
