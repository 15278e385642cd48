//! Rendering results from neutral values: text reports, folded stacks, flame graphs, JSON,
//! pprof, Prometheus exposition.
//! Nothing here reads a map or a file other than what it writes.
//!
//! - [`aggregates`]: counts and histograms per group, and the end-of-run account;
//! - [`profile`]: stack profiles (report, folded, SVG, JSON) and their account;
//! - [`hist`]: log2 and linear histograms and tables, one renderer for every command;
//! - [`percentiles`]: p50..p99.9 and max from log-linear histograms (`--percentiles`);
//! - [`heatmap`]: latency heat maps, one column per interval (`-i` with `-o FILE.svg`);
//! - [`report`]: the hottest-functions report; [`flamegraph`]: SVG through inferno;
//! - [`lines`]: the hottest source lines of the hottest functions (`profile --by line`);
//! - [`stat`]: perf stat's layout; [`top`]: perf top's view;
//! - [`pprof`]: stack profiles as gzipped pprof (`.pb.gz`);
//! - [`saved`]: tracekit's JSON profile file, which `tracekit report` reads back;
//! - [`flamescope`]: subsecond offset heat maps of profiles (FlameScope's view);
//! - [`speedscope`]: speedscope's file format; [`chrome`]: Chrome's trace event format;
//! - [`diff`]: what grew and shrank between two profiles (`tracekit diff`);
//! - [`prometheus`]: metric families as the Prometheus (OpenMetrics) text format.
//!
//! `-o FILE` picks the format from the file's extension, the same way in every subcommand.

pub mod aggregates;
pub mod chrome;
pub mod diff;
pub mod flamegraph;
pub mod flamescope;
#[cfg(test)]
pub(crate) mod golden;
pub mod heatmap;
pub mod hist;
pub mod lines;
pub mod otlp;
pub mod pagecache;
pub mod percentiles;
pub mod pprof;
pub mod profile;
pub mod prometheus;
pub mod report;
pub mod saved;
pub mod speedscope;
pub mod stat;
pub mod top;

use std::{
    fs::File,
    io::{self, BufWriter, Write},
    path::Path,
};

use crate::{Error, Result, error::quote};

pub use crate::error::plural;

/// `n` in a report's unit: countable units agree with `n` (`1 sample`, `1 event`,
/// `1 byte`), units of measure stay (`1 us`).
///
/// ```
/// use tracekit::output::in_unit;
/// assert_eq!(in_unit(1, "samples"), "1 sample");
/// assert_eq!(in_unit(3, "events"), "3 events");
/// assert_eq!(in_unit(1, "us"), "1 us");
/// ```
pub fn in_unit(n: u64, unit: &str) -> String {
    match unit.strip_suffix('s') {
        Some(one @ ("sample" | "event" | "byte" | "stack")) => plural(n, one, unit),
        _ => format!("{n} {unit}"),
    }
}

/// A file format `-o` can write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The text report that would go to stdout (`.txt`).
    Text,
    /// Folded stacks, `comm;outer;...;leaf count` per line (`.folded`).
    Folded,
    /// An SVG flame graph (`.svg`).
    Svg,
    /// JSON (`.json`).
    Json,
    /// A gzipped pprof profile (`.pb.gz`), for stack profiles.
    Pprof,
    /// An OpenTelemetry profiles export request (`.otlp.pb`), for stack profiles.
    Otlp,
    /// A subsecond offset heat map (`.heatmap.svg`), for profiles with time slices.
    Heatmap,
    /// speedscope's file format (`.speedscope.json`), for stack profiles.
    Speedscope,
    /// Chrome's trace event format (`.trace.json`), for stack profiles.
    ChromeTrace,
}

impl Format {
    /// Extensions accepted by `-o`, with their formats; the longer of two that end alike
    /// first (`.heatmap.svg` before `.svg`).
    pub const EXTENSIONS: [(&'static str, Format); 9] = [
        ("txt", Format::Text),
        ("folded", Format::Folded),
        ("heatmap.svg", Format::Heatmap),
        ("svg", Format::Svg),
        ("speedscope.json", Format::Speedscope),
        ("trace.json", Format::ChromeTrace),
        ("json", Format::Json),
        ("pb.gz", Format::Pprof),
        ("otlp.pb", Format::Otlp),
    ];

    /// Whether only stack profiles are written in this format.
    pub fn stacks_only(self) -> bool {
        !matches!(self, Format::Text | Format::Json)
    }

    /// The format named by a path's extension; a usage error listing the valid ones otherwise.
    pub fn from_path(path: &Path) -> Result<Self> {
        Self::from_path_among(path, &Self::EXTENSIONS.map(|(_, format)| format))
    }

    /// [`Format::from_path`] where the unknown-extension error lists only `offered` (what the
    /// command writes).
    pub fn from_path_among(path: &Path, offered: &[Format]) -> Result<Self> {
        let extension = path.extension().and_then(|ext| ext.to_str()).unwrap_or("");
        let name = path
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or("")
            .to_ascii_lowercase();
        Self::EXTENSIONS
            .iter()
            .find(|(ext, _)| name.ends_with(&format!(".{ext}")))
            .map(|&(_, format)| format)
            .ok_or_else(|| {
                let valid: Vec<_> = Self::EXTENSIONS
                    .iter()
                    .filter(|(_, format)| offered.contains(format))
                    .map(|(ext, _)| format!(".{ext}"))
                    .collect();
                Error::usage(format!(
                    "-o {}: cannot tell the format from {}; use one of {}",
                    quote(&path.to_string_lossy()),
                    if extension.is_empty() {
                        "a name without an extension".to_string()
                    } else {
                        format!("the extension `.{}`", quote(extension))
                    },
                    valid.join(", ")
                ))
            })
    }
}

/// Creates (truncates) an output file, with an error naming it.
pub fn create(path: &Path) -> Result<BufWriter<File>> {
    File::create(path).map(BufWriter::new).map_err(|err| {
        Error::runtime(format!(
            "cannot write {}: {err}",
            quote(&path.to_string_lossy())
        ))
    })
}

/// Writes `content` with `write` to `path`, flushing, with errors naming the file.
pub fn write_file(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> Result<()> {
    let mut file = create(path)?;
    write(&mut file)
        .and_then(|()| file.flush())
        .map_err(|err| Error::runtime(format!("writing {}: {err}", quote(&path.to_string_lossy()))))
}

/// Writes folded stack lines (`path count`).
pub fn write_folded(out: &mut (impl Write + ?Sized), folded: &[(String, u64)]) -> io::Result<()> {
    for (path, count) in folded {
        writeln!(out, "{path} {count}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_from_extension() {
        assert_eq!(Format::from_path(Path::new("x.svg")).unwrap(), Format::Svg);
        assert_eq!(
            Format::from_path(Path::new("a/b.FOLDED")).unwrap(),
            Format::Folded
        );
        assert_eq!(
            Format::from_path(Path::new("out.png"))
                .unwrap_err()
                .to_string(),
            "-o out.png: cannot tell the format from the extension `.png`; \
             use one of .txt, .folded, .heatmap.svg, .svg, .speedscope.json, .trace.json, .json, .pb.gz, .otlp.pb"
        );
        assert_eq!(
            Format::from_path(Path::new("cpu.PB.GZ")).unwrap(),
            Format::Pprof
        );
        assert_eq!(
            Format::from_path(Path::new("a.heatmap.svg")).unwrap(),
            Format::Heatmap
        );
        assert_eq!(
            Format::from_path(Path::new("a.speedscope.json")).unwrap(),
            Format::Speedscope
        );
        assert_eq!(
            Format::from_path(Path::new("a.trace.json")).unwrap(),
            Format::ChromeTrace
        );
        assert!(Format::from_path(Path::new("cpu.gz")).is_err());
        assert_eq!(
            Format::from_path(Path::new("out")).unwrap_err().to_string(),
            "-o out: cannot tell the format from a name without an extension; \
             use one of .txt, .folded, .heatmap.svg, .svg, .speedscope.json, .trace.json, .json, .pb.gz, .otlp.pb"
        );
    }
}
