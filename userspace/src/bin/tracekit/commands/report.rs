//! `tracekit report`: re-renders a profile tracekit saved as JSON into any other output,
//! with no new tracing (`perf report` reading `perf.data`).

use std::{io::Write as _, path::PathBuf};

use clap::Args as ClapArgs;
use tracekit::{
    Error, Result,
    error::quote,
    jobs::print,
    output::{self, Format, flamescope, profile::Header, saved},
};

const EXAMPLES: &str = "\
EXAMPLES:
  tracekit report p.json                        # the text report of a saved profile
  tracekit report p.json -o p.svg -o p.pb.gz    # flame graph and pprof from the same data
  tracekit report p.json -o p.speedscope.json   # for speedscope (speedscope.app)
  tracekit report p.json -o p.trace.json        # Chrome trace event format (Perfetto)
  tracekit report p.json --from 3.1 --to 3.3 -o slice.svg
                                                # flame graph of 200 ms of it (--heatmap)
  tracekit report p.json --inverted -o icicle.svg   # icicle graph

  tracekit report run.json -o heat.svg         # a histogram's heat map, from hist (or
                                                # biolatency, runqlat...) -i 1 -o run.json

FILE is what `tracekit profile -o FILE.json` (or stackcount, offcpu) wrote, or a
histogram command's -o FILE.json: its text, or with -i its heat map (-o FILE.svg). Outputs by -o
FILE's extension, as in profile: .txt .folded .svg .json .pb.gz .heatmap.svg
.speedscope.json .trace.json. --from/--to take seconds from the start of the first second
sampled, as the heat map's cells name them; they need a profile taken with --heatmap.";

/// `tracekit report`.
#[derive(Debug, ClapArgs)]
#[command(about = "Re-render a saved JSON profile or histogram as a report, flame graph, heat map, pprof, speedscope or Chrome trace", after_help = EXAMPLES)]
pub struct Args {
    /// The JSON file tracekit wrote (-o FILE.json)
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Write FILE in the format its extension names; may be given several times. Without
    /// it, the text report goes to stdout
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Vec<PathBuf>,
    /// Only the samples from SECONDS on (needs time slices: profile --heatmap)
    #[arg(long, value_name = "SECONDS", value_parser = crate::cli::parse_seconds_from_zero)]
    pub from: Option<f64>,
    /// Only the samples before SECONDS (needs time slices: profile --heatmap)
    #[arg(long, value_name = "SECONDS", value_parser = crate::cli::parse_seconds_from_zero)]
    pub to: Option<f64>,
    /// Rows in the text report
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub top: usize,
    /// Draw flame graphs as icicle graphs: roots at the top, callees below
    #[arg(long)]
    pub inverted: bool,
}

/// Runs `tracekit report`.
pub fn run(args: Args, _verbose: u8) -> Result<()> {
    let outputs: Vec<(PathBuf, Format)> = args
        .output
        .iter()
        .map(|path| Ok((path.clone(), Format::from_path(path)?)))
        .collect::<Result<_>>()?;
    let bytes = saved::read_bytes(&args.file)?;
    // Dispatch on what the file holds; each kind has its own renderers.
    match saved::kind(&bytes, &args.file)? {
        saved::SavedKind::Profile => profile(&args, &bytes, &outputs),
        saved::SavedKind::Histogram => histogram(&args, &bytes, &outputs),
        saved::SavedKind::Counts => Err(Error::usage(format!(
            "{}: holds counts; report re-renders profiles and histograms in this version",
            quote(&args.file.to_string_lossy()),
        ))),
    }
}

/// A saved histogram: its text, and the heat map of its intervals (`.svg`).
fn histogram(args: &Args, bytes: &[u8], outputs: &[(PathBuf, Format)]) -> Result<()> {
    let name = quote(&args.file.to_string_lossy());
    let saved = saved::parse_histogram(bytes, &args.file)?;
    if args.from.is_some() || args.to.is_some() || args.inverted {
        return Err(Error::usage(format!(
            "{name}: holds a histogram; --from, --to and --inverted are for profiles"
        )));
    }
    for (path, format) in outputs {
        match format {
            Format::Text => {}
            Format::Svg | Format::Heatmap if saved.intervals.is_none() => {
                return Err(Error::usage(format!(
                    "-o {}: the heat map needs the run's intervals, and {name} has none: \
                     save the run with -i SECONDS -o FILE.json",
                    quote(&path.to_string_lossy())
                )));
            }
            Format::Svg | Format::Heatmap => {}
            _ => {
                return Err(Error::usage(format!(
                    "-o {}: a histogram is written as .txt or .svg (its heat map)",
                    quote(&path.to_string_lossy())
                )));
            }
        }
    }
    let title = saved.title();
    for (path, format) in outputs {
        output::write_file(path, |out| match (format, &saved.intervals) {
            (Format::Svg | Format::Heatmap, Some(intervals)) => out.write_all(
                output::heatmap::svg(&intervals.map(&title, &saved.unit)).as_bytes(),
            ),
            _ => out.write_all(saved.text().as_bytes()),
        })?;
    }
    if outputs.is_empty() {
        print(&saved.text())?;
    }
    for (path, format) in outputs {
        let what = if *format == Format::Text {
            "histogram"
        } else {
            "heat map"
        };
        eprintln!("Wrote {} ({what}).", path.display());
    }
    Ok(())
}

fn profile(args: &Args, bytes: &[u8], outputs: &[(PathBuf, Format)]) -> Result<()> {
    let name = quote(&args.file.to_string_lossy());
    let saved = saved::parse(bytes, &args.file)?;
    let mut profile = saved.profile.clone();
    let mut header = Header {
        inverted: args.inverted,
        saved_as: Some(&args.file),
        ..saved.header()
    };
    let range;
    if args.from.is_some() || args.to.is_some() {
        let Some(slice_ns) = saved.time_slice_ns else {
            return Err(Error::usage(format!(
                "{name}: --from/--to need time slices, and this profile has none; take it \
                 with tracekit profile --heatmap"
            )));
        };
        let from = args.from.unwrap_or(0.0);
        let to = args.to.unwrap_or(f64::MAX);
        if to <= from {
            return Err(Error::usage(format!(
                "--from {from} --to {to}: the range is empty; --to must be after --from"
            )));
        }
        profile = flamescope::select(&profile, slice_ns, from, to);
        range = flamescope::range_scope(&saved.scope, from, args.to);
        header.scope = &range;
        // The cut has no time slices left: a heat map of it makes no sense.
        header.time_slice_ns = None;
    }
    if let Some((path, _)) = outputs.iter().find(|(_, f)| *f == Format::Heatmap)
        && header.time_slice_ns.is_none()
    {
        return Err(Error::usage(format!(
            "-o {}: a heat map needs the whole profile's time slices{}",
            quote(&path.to_string_lossy()),
            if saved.time_slice_ns.is_some() {
                "; leave out --from/--to"
            } else {
                ", and this one has none: take it with tracekit profile --heatmap"
            }
        )));
    }
    let mut heatmap_cells = None;
    for (path, format) in outputs {
        if *format == Format::Heatmap {
            heatmap_cells = Some(flamescope::write_file(path, &profile, &header)?);
            continue;
        }
        output::write_file(path, |out| {
            output::profile::write(out, *format, &profile, &header, args.top)
        })?;
    }
    if outputs.is_empty() {
        let mut text = Vec::new();
        output::profile::write(&mut text, Format::Text, &profile, &header, args.top)
            .map_err(|err| Error::runtime(format!("rendering the report: {err}")))?;
        print(&String::from_utf8_lossy(&text))?;
    }
    for (path, format) in outputs {
        match format {
            Format::Heatmap if let Some(cells) = heatmap_cells => {
                eprintln!("{}", flamescope::written(path, cells));
            }
            _ => eprintln!("{}", output::profile::written(path, *format)),
        }
    }
    Ok(())
}
