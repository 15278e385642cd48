//! Subsecond offset heat maps of a CPU profile, FlameScope's view: one column per second of
//! `CLOCK_MONOTONIC`, one row per [`SLICE_NS`] slice of it (offset 0 at the top), each cell
//! coloured by the samples counted in that slice. Patterns inside a second (a burst every
//! second, a stall) show up as rows. Each cell's tooltip gives its time range and the
//! `tracekit report FILE.json --from T1 --to T2` that draws the flame graph of just that time
//! from the saved profile ([`select`] is that cut).
//!
//! Times are seconds from the start of the first second sampled, the same in the heat map
//! and in `report --from/--to`.

use std::{collections::HashMap, fmt::Write as _, io};

use super::profile::Header;
use crate::{profile::Profile, stacks::Stack};

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
pub fn origin_slice(profile: &Profile, slice_ns: u64) -> Option<u64> {
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
pub fn select(profile: &Profile, slice_ns: u64, from_s: f64, to_s: f64) -> Profile {
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
    Profile {
        stacks,
        ..profile.clone()
    }
}

/// Writes the heat map of `profile` as SVG. An `InvalidInput` error when its stacks carry no
/// time slices (it was taken without `--heatmap`).
pub fn write_profile(
    out: &mut dyn io::Write,
    profile: &Profile,
    header: &Header<'_>,
) -> io::Result<()> {
    let (Some(slice_ns), Some(origin)) = (
        header.time_slice_ns,
        header
            .time_slice_ns
            .and_then(|ns| origin_slice(profile, ns)),
    ) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the profile has no time slices; take it with tracekit profile --heatmap",
        ));
    };
    out.write_all(render(profile, header, slice_ns, origin).as_bytes())
}

fn render(profile: &Profile, header: &Header<'_>, slice_ns: u64, origin: u64) -> String {
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
    // Wide enough for the title however few seconds (Verdana 15 px: ~9 px a character).
    let width = (LEFT + columns * CELL_W + 20).max(title.chars().count() * 9 + 40);
    let height = TOP + rows * CELL_H + 50;

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r##"<?xml version="1.0" standalone="no"?>
<svg version="1.1" width="{width}" height="{height}" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg" font-family="Verdana, sans-serif" font-size="11">
<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>
<text x="{}" y="20" font-size="15" text-anchor="middle">{}</text>
<text x="{}" y="38" text-anchor="middle" fill="#555555">{}</text>"##,
        width / 2,
        escape(&title),
        width / 2,
        escape(&format!(
            "{total} {} in {columns} s; a column is a second, a row {} ms of it; hottest cell {} {}",
            header.unit,
            slice_ns / 1_000_000,
            hottest,
            header.unit
        )),
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
            let _ = writeln!(
                svg,
                r#"<rect class="cell" x="{}" y="{}" width="{CELL_W}" height="{CELL_H}" fill="{}" data-second="{column}" data-row="{row}" data-samples="{samples}" data-from="{from:.3}" data-to="{to:.3}"><title>{from:.3}-{to:.3} s: {samples} {}; its flame graph: tracekit report {} --from {from:.3} --to {to:.3} -o slice.svg</title></rect>"#,
                LEFT + column * CELL_W,
                TOP + row * CELL_H,
                colour(samples, hottest),
                header.unit,
                escape(&saved),
            );
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

    fn profile() -> Profile {
        // Seconds 100 and 101 (slices 5000..5100): hot at 0-20 ms, one sample at 980 ms.
        Profile {
            stacks: vec![
                stack("hot", 5000, 7),
                stack("hot", 5050, 5),
                stack("cold", 5049, 1),
                stack("other", 5051, 2),
            ],
            ..Profile::default()
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
        let err = write_profile(&mut Vec::new(), &Profile::default(), &header).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }
}
