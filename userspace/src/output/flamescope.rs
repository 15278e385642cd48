//! Subsecond offset heat maps of a CPU profile, FlameScope's view: one column per second of
//! `CLOCK_MONOTONIC`, one row per [`SLICE_NS`] slice of it (offset 0 at the top), each cell
//! coloured by the samples counted in that slice. Patterns inside a second (a burst every
//! second, a stall) show up as rows. Each cell's tooltip gives its time range and the
//! `tracekit report FILE.json --from T1 --to T2` that draws the flame graph of just that time
//! from the saved profile ([`select`] is that cut).
//!
//! Written to a file ([`write_file`]), each cell with samples is also a link to that flame
//! graph, drawn beside the heat map: `p.heatmap.svg`'s cells link to
//! `p.heatmap/T1-T2.svg` ([`cells_dir`]), the same SVG as
//! `tracekit report p.json --from T1 --to T2 -o T1-T2.svg`; so a click on a cell shows
//! what ran then, as in FlameScope.
//!
//! Times are seconds from the start of the first second sampled, the same in the heat map
//! and in `report --from/--to`.

use std::{
    collections::HashMap,
    fmt::Write as _,
    io,
    path::{Path, PathBuf},
};

use super::{Format, profile::Header};
use crate::{Error, Result, cpu_sampler::SymbolizedProfile, error::quote, stacks::Stack};

/// The length of a time slice, in ns: 20 ms, FlameScope's row (50 rows a second).
pub const SLICE_NS: u64 = 20_000_000;

const CELL_W: usize = 14;
const CELL_H: usize = 8;
const LEFT: usize = 70;
const TOP: usize = 60;

/// Samples per time slice of `stacks` (those with one).
fn per_slice(stacks: &[Stack]) -> HashMap<u32, u64> {
    let mut counts = HashMap::new();
    for stack in stacks {
        if let Some(slice) = stack.time_slice {
            *counts.entry(slice).or_default() += stack.count;
        }
    }
    counts
}

/// The first slice of the first second sampled: time 0 of the heat map and of
/// `report --from/--to`. `None` when no stack has a time slice.
pub fn origin_slice(profile: &SymbolizedProfile, slice_ns: u64) -> Option<u64> {
    let per_second = (1_000_000_000 / slice_ns.max(1)).max(1);
    profile
        .stacks
        .iter()
        .filter_map(|s| s.time_slice)
        .min()
        .map(|first| u64::from(first) / per_second * per_second)
}

/// The stacks of `profile` sampled from `from_s` (inclusive) to `to_s` (exclusive) seconds
/// after the heat map's time 0, slices dropped (`report --from --to`).
pub fn select(
    profile: &SymbolizedProfile,
    slice_ns: u64,
    from_s: f64,
    to_s: f64,
) -> SymbolizedProfile {
    let origin = origin_slice(profile, slice_ns).unwrap_or(0);
    let from_ns = (from_s * 1e9).round() as i128;
    let to_ns = (to_s * 1e9).round() as i128;
    let stacks = profile
        .stacks
        .iter()
        .filter(|stack| {
            stack.time_slice.is_some_and(|slice| {
                let at = (i128::from(slice) - i128::from(origin)) * i128::from(slice_ns);
                at >= from_ns && at < to_ns
            })
        })
        .map(|stack| Stack {
            time_slice: None,
            ..stack.clone()
        })
        .collect();
    SymbolizedProfile {
        stacks,
        ..profile.clone()
    }
}

/// The scope of a cut from `from` to `to` seconds (`None`: the end), as `report --from --to`
/// and the cells' flame graphs title it.
pub fn range_scope(scope: &str, from: f64, to: Option<f64>) -> String {
    format!(
        "{scope}, {from} to {} s",
        to.map_or("the end".to_string(), |t| t.to_string())
    )
}

/// The directory of the flame graphs a heat map's cells link to: the heat map's path
/// without `.svg` (`p.heatmap.svg`: `p.heatmap/`).
pub fn cells_dir(heatmap: &Path) -> PathBuf {
    let name = heatmap
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let lower = name.to_ascii_lowercase();
    let stem = match lower.strip_suffix(".svg") {
        Some(stem) if !stem.is_empty() => name[..stem.len()].to_string(),
        _ => format!("{name}.cells"),
    };
    heatmap.with_file_name(stem)
}

/// The file name of the flame graph of the cell from `from` to `to` seconds.
fn cell_file(from: &str, to: &str) -> String {
    format!("{from}-{to}.svg")
}

/// Whether `name` is a cell flame graph's file name (`3.200-3.220.svg`): the only files
/// [`write_file`] removes from an old cells directory.
fn is_cell_file(name: &str) -> bool {
    let Some((from, to)) = name
        .strip_suffix(".svg")
        .and_then(|range| range.split_once('-'))
    else {
        return false;
    };
    let seconds = |t: &str| {
        t.split_once('.').is_some_and(|(whole, ms)| {
            !whole.is_empty()
                && whole.bytes().all(|b| b.is_ascii_digit())
                && ms.len() == 3
                && ms.bytes().all(|b| b.is_ascii_digit())
        })
    };
    seconds(from) && seconds(to)
}

/// The most cells that get a flame graph each (~20 KiB or more apiece); a heat map with
/// more cells with samples links each cell to its second's flame graph instead.
pub const MAX_CELL_GRAPHS: usize = 1000;

/// What [`write_file`] wrote beside the heat map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CellGraphs {
    /// Flame graphs written.
    pub graphs: usize,
    /// Whether each is a whole second's (more than [`MAX_CELL_GRAPHS`] cells had samples)
    /// rather than one cell's.
    pub per_second: bool,
}

/// Writes the heat map of `profile` to `path` with each cell that has samples linking to
/// its flame graph, and those flame graphs into [`cells_dir`]`(path)` (created; cell
/// graphs of an earlier run there are replaced, other files left alone). Past
/// [`MAX_CELL_GRAPHS`] cells with samples, a cell links to its second's flame graph. A
/// runtime error when the profile has no time slices (none sampled, or not `--heatmap`),
/// as [`write_profile`]'s through [`super::write_file`].
pub fn write_file(
    path: &Path,
    profile: &SymbolizedProfile,
    header: &Header<'_>,
) -> Result<CellGraphs> {
    let (slice_ns, origin) = slices(profile, header).map_err(|err| {
        Error::runtime(format!("writing {}: {err}", quote(&path.to_string_lossy())))
    })?;
    let dir = cells_dir(path);
    let dir_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let cannot = |what: &str, err: io::Error| {
        Error::runtime(format!(
            "cannot {what} {}: {err}",
            quote(&dir.to_string_lossy())
        ))
    };
    std::fs::create_dir_all(&dir).map_err(|err| cannot("create", err))?;
    let old = std::fs::read_dir(&dir).map_err(|err| cannot("read", err))?;
    for entry in old.flatten() {
        if entry.file_name().to_str().is_some_and(is_cell_file) {
            std::fs::remove_file(entry.path()).map_err(|err| cannot("clean", err))?;
        }
    }
    let rows = (1_000_000_000 / slice_ns).max(1);
    let per_second = cells(profile, slice_ns, origin, 1).len() > MAX_CELL_GRAPHS;
    let group = if per_second { rows } else { 1 };
    super::write_file(path, |out| {
        let svg = render(profile, header, slice_ns, origin, Some((&dir_name, group)));
        io::Write::write_all(out, svg.as_bytes())
    })?;
    let cells = cells(profile, slice_ns, origin, group);
    // Each graph's stacks, in the profile's order, found in one pass (not one per cell):
    // the same cut as `select`, which `report --from --to` makes.
    let mut by_group: HashMap<u64, Vec<Stack>> = HashMap::new();
    for stack in &profile.stacks {
        if let Some(slice) = stack.time_slice
            && u64::from(slice) >= origin
        {
            by_group
                .entry((u64::from(slice) - origin) / group)
                .or_default()
                .push(Stack {
                    time_slice: None,
                    ..stack.clone()
                });
        }
    }
    let empty = SymbolizedProfile {
        stacks: Vec::new(),
        ..profile.clone()
    };
    for (from, to) in &cells {
        let (from_s, to_s): (f64, f64) = (
            from.parse().expect("formatted seconds"),
            to.parse().expect("formatted seconds"),
        );
        let n = (from_s * 1e9 / slice_ns as f64).round() as u64 / group;
        let cut = SymbolizedProfile {
            stacks: by_group.remove(&n).unwrap_or_default(),
            ..empty.clone()
        };
        let scope = range_scope(header.scope, from_s, Some(to_s));
        let cell_header = Header {
            scope: &scope,
            time_slice_ns: None,
            ..*header
        };
        super::write_file(&dir.join(cell_file(from, to)), |out| {
            super::profile::write(out, Format::Svg, &cut, &cell_header, 0)
        })?;
    }
    Ok(CellGraphs {
        graphs: cells.len(),
        per_second,
    })
}

/// The line that says a heat map was written, and where its cells' flame graphs are.
pub fn written(path: &Path, cells: CellGraphs) -> String {
    format!(
        "Wrote {} (subsecond heat map; its cells link to {} in {}/{}).",
        path.display(),
        super::plural(cells.graphs, "flame graph", "flame graphs"),
        cells_dir(path).display(),
        if cells.per_second {
            format!(", one per second: more than {MAX_CELL_GRAPHS} cells had samples")
        } else {
            String::new()
        }
    )
}

/// The range (`from`, `to` seconds, formatted as the heat map names them) of the flame
/// graph of the `group` slices from slice `n` (from time 0) rounded down to a multiple.
fn group_range(n: u64, group: u64, slice_ns: u64) -> (String, String) {
    let slice_s = slice_ns as f64 / 1e9;
    let start = n / group * group;
    (
        format!("{:.3}", start as f64 * slice_s),
        format!("{:.3}", (start + group) as f64 * slice_s),
    )
}

/// The ranges of the flame graphs of `group` slices each that hold samples, in time order.
fn cells(
    profile: &SymbolizedProfile,
    slice_ns: u64,
    origin: u64,
    group: u64,
) -> Vec<(String, String)> {
    let mut groups: Vec<u64> = per_slice(&profile.stacks)
        .into_iter()
        .filter(|&(slice, count)| count > 0 && u64::from(slice) >= origin)
        .map(|(slice, _)| (u64::from(slice) - origin) / group)
        .collect();
    groups.sort_unstable();
    groups.dedup();
    groups
        .into_iter()
        .map(|n| group_range(n * group, group, slice_ns))
        .collect()
}

/// The slice length and time 0 of a profile's heat map; why not when it has none.
fn slices(
    profile: &SymbolizedProfile,
    header: &Header<'_>,
) -> std::result::Result<(u64, u64), String> {
    match (
        header.time_slice_ns,
        header
            .time_slice_ns
            .and_then(|ns| origin_slice(profile, ns)),
    ) {
        (Some(slice_ns), Some(origin)) => Ok((slice_ns, origin)),
        _ => Err("the profile has no time slices; take it with tracekit profile --heatmap".into()),
    }
}

/// Writes the heat map of `profile` as SVG, its cells not linking anywhere ([`write_file`]
/// writes the linked one). An `InvalidInput` error when its stacks carry no time slices
/// (it was taken without `--heatmap`).
pub fn write_profile(
    out: &mut dyn io::Write,
    profile: &SymbolizedProfile,
    header: &Header<'_>,
) -> io::Result<()> {
    let (slice_ns, origin) =
        slices(profile, header).map_err(|err| io::Error::new(io::ErrorKind::InvalidInput, err))?;
    out.write_all(render(profile, header, slice_ns, origin, None).as_bytes())
}

/// The SVG; with `links` (a directory, slices per flame graph), the cells with samples link
/// to `DIR/FROM-TO.svg`.
fn render(
    profile: &SymbolizedProfile,
    header: &Header<'_>,
    slice_ns: u64,
    origin: u64,
    links: Option<(&str, u64)>,
) -> String {
    let rows = (1_000_000_000 / slice_ns).max(1) as usize;
    let counts = per_slice(&profile.stacks);
    let last = counts.keys().copied().max().map_or(origin, u64::from);
    let columns = ((last - origin) / rows as u64 + 1) as usize;
    let hottest = counts.values().copied().max().unwrap_or(0).max(1);
    let total: u64 = counts.values().sum();
    let slice_s = slice_ns as f64 / 1e9;
    let saved = header.saved_as.map_or_else(
        || "PROFILE.json".to_string(),
        |path| path.display().to_string(),
    );
    let title = format!("Subsecond heat map: {}", header.title());
    let subtitle = format!(
        "{total} {} in {columns} s; a column is a second, a row {} ms of it; hottest cell {} {}{}",
        header.unit,
        slice_ns / 1_000_000,
        hottest,
        header.unit,
        match links {
            Some((_, 1)) => "; click a cell for its flame graph",
            Some(_) => "; click a cell for its second's flame graph",
            None => "",
        }
    );
    // Wide enough for the titles however few seconds (Verdana 15 px: ~9 px a character,
    // 11 px: ~7).
    let width = (LEFT + columns * CELL_W + 20)
        .max(title.chars().count() * 9 + 40)
        .max(subtitle.chars().count() * 7 + 40);
    let height = TOP + rows * CELL_H + 50;

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r##"<?xml version="1.0" standalone="no"?>
<svg version="1.1" width="{width}" height="{height}" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" font-family="Verdana, sans-serif" font-size="11">
<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>
<text x="{}" y="20" font-size="15" text-anchor="middle">{}</text>
<text x="{}" y="38" text-anchor="middle" fill="#555555">{}</text>"##,
        width / 2,
        escape(&title),
        width / 2,
        escape(&subtitle),
    );
    // Row labels every 100 ms, column labels every 5 s.
    for row in (0..rows).step_by((100_000_000 / slice_ns).max(1) as usize) {
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="end">{} ms</text>"#,
            LEFT - 6,
            TOP + row * CELL_H + CELL_H,
            row as u64 * slice_ns / 1_000_000
        );
    }
    for column in (0..columns).step_by(5) {
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="middle">{column} s</text>"#,
            LEFT + column * CELL_W + CELL_W / 2,
            TOP + rows * CELL_H + 16
        );
    }
    for column in 0..columns {
        for row in 0..rows {
            let slice = origin + (column * rows + row) as u64;
            let samples = u32::try_from(slice)
                .ok()
                .and_then(|s| counts.get(&s))
                .copied()
                .unwrap_or(0);
            let from = (column * rows + row) as f64 * slice_s;
            let to = from + slice_s;
            let link = match links {
                Some((dir, group)) if samples > 0 => {
                    let (from, to) = group_range((column * rows + row) as u64, group, slice_ns);
                    let href = escape(&format!("{}/{}", url_escape(dir), cell_file(&from, &to)));
                    let _ = writeln!(
                        svg,
                        r#"<a href="{href}" xlink:href="{href}" target="_top">"#
                    );
                    true
                }
                _ => false,
            };
            let _ = writeln!(
                svg,
                r#"<rect class="cell" x="{}" y="{}" width="{CELL_W}" height="{CELL_H}" fill="{}" data-second="{column}" data-row="{row}" data-samples="{samples}" data-from="{from:.3}" data-to="{to:.3}"><title>{from:.3}-{to:.3} s: {samples} {}; its flame graph: tracekit report {} --from {from:.3} --to {to:.3} -o slice.svg</title></rect>"#,
                LEFT + column * CELL_W,
                TOP + row * CELL_H,
                colour(samples, hottest),
                header.unit,
                escape(&saved),
            );
            if link {
                svg.push_str("</a>\n");
            }
        }
    }
    svg.push_str("</svg>\n");
    svg
}

/// White for none, through orange to dark red for the hottest cell.
fn colour(samples: u64, hottest: u64) -> String {
    if samples == 0 {
        return "rgb(248,248,248)".into();
    }
    let heat = samples as f64 / hottest as f64;
    let lerp = |from: f64, to: f64| (from + (to - from) * heat).round() as u8;
    format!(
        "rgb({},{},{})",
        lerp(255.0, 190.0),
        lerp(230.0, 20.0),
        lerp(200.0, 0.0)
    )
}

/// `text` percent-encoded for a relative URL path segment (unreserved bytes kept).
fn url_escape(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stacks::Frame;

    fn stack(leaf: &str, slice: u32, count: u64) -> Stack {
        Stack {
            pid: 1,
            comm: "x".into(),
            cgroup: None,
            frames: vec![Frame::user("main", None), Frame::user(leaf, None)],
            count,
            time_slice: Some(slice),
        }
    }

    fn profile() -> SymbolizedProfile {
        // Seconds 100 and 101 (slices 5000..5100): hot at 0-20 ms, one sample at 980 ms.
        SymbolizedProfile {
            stacks: vec![
                stack("hot", 5000, 7),
                stack("hot", 5050, 5),
                stack("cold", 5049, 1),
                stack("other", 5051, 2),
            ],
            ..SymbolizedProfile::default()
        }
    }

    #[test]
    fn cells_count_slices_from_the_first_second() {
        let header = Header {
            time_slice_ns: Some(SLICE_NS),
            ..Header::new("profile", "cpu-clock", "samples", "pid 1")
        };
        let mut out = Vec::new();
        write_profile(&mut out, &profile(), &header).unwrap();
        let svg = String::from_utf8(out).unwrap();
        let cells: Vec<(usize, usize, u64)> = svg
            .lines()
            .filter(|l| l.starts_with("<rect class=\"cell\""))
            .map(|l| {
                let attr = |name: &str| {
                    let at = l.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
                    l[at..at + l[at..].find('"').unwrap()].to_string()
                };
                (
                    attr("data-second").parse().unwrap(),
                    attr("data-row").parse().unwrap(),
                    attr("data-samples").parse().unwrap(),
                )
            })
            .filter(|c| c.2 > 0)
            .collect();
        assert_eq!(cells, [(0, 0, 7), (0, 49, 1), (1, 0, 5), (1, 1, 2)]);
        assert_eq!(svg.matches("<rect class=\"cell\"").count(), 100);
        assert!(svg.contains(
            "1.000-1.020 s: 5 samples; its flame graph: tracekit report PROFILE.json \
             --from 1.000 --to 1.020 -o slice.svg"
        ));
    }

    /// Written to a file, the cells with samples link to their flame graphs, which exist
    /// beside it and hold the cell's stacks only; an old run's cell graphs go, other files
    /// stay.
    #[test]
    fn file_cells_link_to_their_flame_graphs() {
        let dir = std::env::temp_dir().join(format!("tk-flamescope-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("p.heatmap")).unwrap();
        std::fs::write(dir.join("p.heatmap/9.000-9.020.svg"), "old").unwrap();
        std::fs::write(dir.join("p.heatmap/notes.txt"), "mine").unwrap();
        let header = Header {
            time_slice_ns: Some(SLICE_NS),
            ..Header::new("profile", "cpu-clock", "samples", "pid 1")
        };
        let path = dir.join("p.heatmap.svg");
        let graphs = write_file(&path, &profile(), &header).unwrap();
        assert_eq!(
            graphs,
            CellGraphs {
                graphs: 4,
                per_second: false
            }
        );
        assert_eq!(
            written(&path, graphs),
            format!(
                "Wrote {} (subsecond heat map; its cells link to 4 flame graphs in {}/).",
                path.display(),
                dir.join("p.heatmap").display()
            )
        );
        let svg = std::fs::read_to_string(&path).unwrap();
        let hrefs: Vec<&str> = svg
            .lines()
            .filter_map(|l| l.strip_prefix("<a href=\""))
            .map(|rest| &rest[..rest.find('"').unwrap()])
            .collect();
        assert_eq!(
            hrefs,
            [
                "p.heatmap/0.000-0.020.svg",
                "p.heatmap/0.980-1.000.svg",
                "p.heatmap/1.000-1.020.svg",
                "p.heatmap/1.020-1.040.svg"
            ]
        );
        assert!(svg.contains("hottest cell 7 samples; click a cell for its flame graph</text>"));
        // Each link wraps its cell.
        assert!(svg.contains(
            "<a href=\"p.heatmap/1.000-1.020.svg\" xlink:href=\"p.heatmap/1.000-1.020.svg\" \
             target=\"_top\">\n<rect class=\"cell\" x=\"84\" y=\"60\""
        ));
        let mut files: Vec<String> = std::fs::read_dir(dir.join("p.heatmap"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        assert_eq!(
            files,
            [
                "0.000-0.020.svg",
                "0.980-1.000.svg",
                "1.000-1.020.svg",
                "1.020-1.040.svg",
                "notes.txt"
            ]
        );
        let cell = std::fs::read_to_string(dir.join("p.heatmap/1.000-1.020.svg")).unwrap();
        assert!(cell.contains("<title>hot (5 samples"), "{cell}");
        assert!(
            !cell.contains("<title>other") && !cell.contains("<title>cold"),
            "{cell}"
        );
        assert!(cell.contains("pid 1, 1 to 1.02 s"), "{cell}");

        // Past MAX_CELL_GRAPHS cells with samples, one graph per second.
        let busy = SymbolizedProfile {
            stacks: (0..MAX_CELL_GRAPHS as u32 + 1)
                .map(|n| stack("hot", 5000 + n, 1))
                .collect(),
            ..SymbolizedProfile::default()
        };
        let graphs = write_file(&path, &busy, &header).unwrap();
        assert_eq!(
            graphs,
            CellGraphs {
                graphs: 21,
                per_second: true
            }
        );
        let svg = std::fs::read_to_string(&path).unwrap();
        assert_eq!(svg.matches("<a href=").count(), MAX_CELL_GRAPHS + 1);
        assert!(svg.contains("; click a cell for its second's flame graph</text>"));
        assert_eq!(
            svg.matches("<a href=\"p.heatmap/3.000-4.000.svg\"").count(),
            50
        );
        let second = std::fs::read_to_string(dir.join("p.heatmap/3.000-4.000.svg")).unwrap();
        assert!(second.contains("<title>hot (50 samples"), "{second}");
        assert_eq!(
            std::fs::read_dir(dir.join("p.heatmap")).unwrap().count(),
            22
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn cells_dir_and_cell_names() {
        assert_eq!(
            cells_dir(Path::new("a/p.heatmap.svg")),
            Path::new("a/p.heatmap")
        );
        assert_eq!(
            cells_dir(Path::new("P.HEATMAP.SVG")),
            Path::new("P.HEATMAP")
        );
        assert_eq!(cells_dir(Path::new("x")), Path::new("x.cells"));
        assert!(is_cell_file("12.340-12.360.svg"));
        for other in [
            "a-b.svg",
            "1.2-1.3.svg",
            "1.000-1.020.svg.bak",
            "flame.svg",
            "-.svg",
        ] {
            assert!(!is_cell_file(other), "{other}");
        }
        assert_eq!(url_escape("my heat&map"), "my%20heat%26map");
    }

    #[test]
    fn select_cuts_a_time_range() {
        let cut = select(&profile(), SLICE_NS, 1.0, 1.02);
        assert_eq!(cut.stacks.len(), 1);
        assert_eq!(
            (cut.stacks[0].frames[1].symbol.as_str(), cut.stacks[0].count),
            ("hot", 5)
        );
        assert_eq!(cut.stacks[0].time_slice, None);
        let cut = select(&profile(), SLICE_NS, 0.0, 1.0);
        let counts: u64 = cut.stacks.iter().map(|s| s.count).sum();
        assert_eq!(counts, 8);
    }

    #[test]
    fn no_slices_is_an_error() {
        let header = Header::new("profile", "cpu-clock", "samples", "pid 1");
        let err =
            write_profile(&mut Vec::new(), &SymbolizedProfile::default(), &header).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }
}
