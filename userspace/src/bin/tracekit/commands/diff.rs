//! `tracekit diff`: compares two profiles: a differential flame graph (red grew, blue
//! shrank) and the functions whose share grew and shrank most.

use std::{io::Write as _, path::PathBuf};

use clap::Args as ClapArgs;
use tracekit::{
    Error, Result,
    error::quote,
    jobs::print,
    output::{self, Format, diff, flamegraph},
};

const EXAMPLES: &str = "\
EXAMPLES:
  tracekit diff before.json after.json                 # what grew and shrank most
  tracekit diff before.json after.json -o diff.svg     # differential flame graph
  tracekit diff a.folded b.folded --normalize -o d.svg # runs of different length
  tracekit diff old.pb.gz new.pb.gz --inverted -o d.svg  # icicle graph of pprof files

BEFORE and AFTER are tracekit JSON (-o FILE.json), folded stacks or pprof profiles (.pb.gz),
told apart by content. The flame graph is as wide as AFTER has it; a frame is red where
its samples grew, blue where they shrank (inferno's differential flame graph).
--normalize scales BEFORE to AFTER's total first. The table gives shares of all samples in
percent: self (the function is the leaf) and total (it is on the stack), and the change of
the self share in percentage points. -o FILE.folded writes `stack before after` lines.";

/// `tracekit diff`.
#[derive(Debug, ClapArgs)]
#[command(about = "Compare two profiles: differential flame graph and the functions that grew and shrank most", after_help = EXAMPLES)]
pub struct Args {
    /// The profile before the change
    #[arg(value_name = "BEFORE")]
    pub before: PathBuf,
    /// The profile after the change
    #[arg(value_name = "AFTER")]
    pub after: PathBuf,
    /// Write the differential flame graph (.svg) or its folded input (.folded) to FILE
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Scale BEFORE's counts to AFTER's total (runs of different length or load)
    #[arg(long)]
    pub normalize: bool,
    /// Draw an icicle graph: roots at the top, callees below
    #[arg(long)]
    pub inverted: bool,
    /// Rows in each half of the table
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,
}

/// Runs `tracekit diff`.
pub fn run(args: Args, _verbose: u8) -> Result<()> {
    let format = args
        .output
        .as_deref()
        .map(|path| Format::from_path_among(path, &[Format::Svg, Format::Folded]))
        .transpose()?;
    if let (Some(path), Some(format)) = (&args.output, format)
        && !matches!(format, Format::Svg | Format::Folded)
    {
        return Err(Error::usage(format!(
            "-o {}: diff writes .svg (differential flame graph) or .folded",
            quote(&path.to_string_lossy())
        )));
    }
    let read = |path: &PathBuf| {
        diff::read_folded(&tracekit::output::saved::read_bytes(path)?, path)
    };
    let before = read(&args.before)?;
    let after = read(&args.after)?;
    diff::check_units((&before, &args.before), (&after, &args.after))?;

    let before_total: u64 = before.stacks.iter().map(|(_, c)| c).sum();
    let after_total: u64 = after.stacks.iter().map(|(_, c)| c).sum();
    let unit = after
        .unit
        .clone()
        .or(before.unit.clone())
        .unwrap_or_else(|| "samples".into());
    let table = diff::render_table(&diff::changes(&before.stacks, &after.stacks), args.top);
    print(&format!(
        "# {}: {before_total} {unit}; {}: {after_total} {unit}\n#\n{table}",
        args.before.display(),
        args.after.display()
    ))?;

    if let (Some(path), Some(format)) = (&args.output, format) {
        let lines = flamegraph::differential_lines(&before.stacks, &after.stacks, args.normalize)
            .map_err(|err| Error::runtime(format!("comparing the profiles: {err}")))?;
        let file_name = |path: &PathBuf| {
            path.file_name()
                .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
        };
        let title = format!(
            "tracekit diff: {} -> {}",
            file_name(&args.before),
            file_name(&args.after)
        );
        let subtitle = format!(
            "width: {}; red: grew, blue: shrank{}",
            file_name(&args.after),
            if args.normalize {
                " (before normalized to after's total)"
            } else {
                ""
            }
        );
        output::write_file(path, |out| match format {
            Format::Folded => lines.iter().try_for_each(|line| writeln!(out, "{line}")),
            _ => flamegraph::write_differential_svg(
                out,
                &lines,
                &flamegraph::SvgOptions {
                    title: &title,
                    subtitle: Some(&subtitle),
                    count_name: &unit,
                    inverted: args.inverted,
                },
            ),
        })?;
        eprintln!(
            "Wrote {} ({}).",
            path.display(),
            if format == Format::Folded {
                "differential folded stacks"
            } else {
                "differential flame graph"
            }
        );
    }
    Ok(())
}
