//! SVG flame graphs, drawn by inferno from folded stacks: single profiles, and differential
//! flame graphs of two (`tracekit diff`).

use std::io::{BufRead, Write};

use inferno::{
    differential,
    flamegraph::{self, Direction, Options},
};

/// How a flame graph is labelled and drawn.
#[derive(Clone, Copy, Debug)]
pub struct SvgOptions<'a> {
    /// What was profiled.
    pub title: &'a str,
    /// A second line under the title.
    pub subtitle: Option<&'a str>,
    /// The unit of the counts ("samples", "us").
    pub count_name: &'a str,
    /// An icicle graph: roots at the top, callees below (`--inverted`).
    pub inverted: bool,
}

/// Writes an SVG flame graph of `folded` (lines as [`crate::stacks::fold`] makes them).
///
/// Kernel frames keep their `_[k]` suffix, as in the folded file.
pub fn write_svg(
    out: &mut (impl Write + ?Sized),
    folded: &[(String, u64)],
    svg: &SvgOptions<'_>,
) -> std::io::Result<()> {
    let lines: Vec<String> = folded
        .iter()
        .map(|(path, count)| format!("{path} {count}"))
        .collect();
    draw(out, lines.iter().map(String::as_str), svg)
}

fn draw<'l>(
    out: &mut (impl Write + ?Sized),
    lines: impl Iterator<Item = &'l str>,
    svg: &SvgOptions<'_>,
) -> std::io::Result<()> {
    let mut lines = lines.peekable();
    let mut options = Options::default();
    options.title = svg.title.to_string();
    options.subtitle = svg.subtitle.map(str::to_string);
    options.count_name = svg.count_name.to_string();
    if svg.inverted {
        options.direction = Direction::Inverted;
    }
    // The same input gives the same colours, so two runs can be compared by eye.
    options.hash = true;
    options.deterministic = true;
    if lines.peek().is_none() {
        // inferno refuses empty input; an empty profile still gets a valid, titled SVG.
        options.notes = "no samples".into();
        return flamegraph::from_lines(&mut options, ["[no samples] 1"], out).map_err(to_io);
    }
    flamegraph::from_lines(&mut options, lines, out).map_err(to_io)
}

/// Folded stacks of two profiles side by side, `path before after` per line, from inferno's
/// differential module: the input of a differential flame graph. With `normalize`, the
/// before counts are scaled to the after total (runs of different length).
pub fn differential_lines(
    before: &[(String, u64)],
    after: &[(String, u64)],
    normalize: bool,
) -> std::io::Result<Vec<String>> {
    let text = |folded: &[(String, u64)]| {
        folded
            .iter()
            .map(|(path, count)| format!("{path} {count}\n"))
            .collect::<String>()
    };
    let (before, after) = (text(before), text(after));
    let mut out = Vec::new();
    differential::from_readers(
        differential::Options {
            normalize,
            strip_hex: false,
        },
        before.as_bytes(),
        after.as_bytes(),
        &mut out,
    )?;
    out.lines().collect()
}

/// Writes a differential flame graph of `lines` (from [`differential_lines`]): frames are
/// as wide as the after profile has them, red where they grew, blue where they shrank
/// (inferno's differential colouring).
pub fn write_differential_svg(
    out: &mut (impl Write + ?Sized),
    lines: &[String],
    svg: &SvgOptions<'_>,
) -> std::io::Result<()> {
    draw(out, lines.iter().map(String::as_str), svg)
}

fn to_io(err: impl std::error::Error + Send + Sync + 'static) -> std::io::Error {
    std::io::Error::other(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(title: &str) -> SvgOptions<'_> {
        SvgOptions {
            title,
            subtitle: None,
            count_name: "samples",
            inverted: false,
        }
    }

    #[test]
    fn draws_titled_svg_with_function_names() {
        let folded = vec![
            ("burner;main;a;b;leaf".to_string(), 90),
            ("burner;main;do_syscall_64_[k]".to_string(), 10),
        ];
        let mut svg = Vec::new();
        write_svg(&mut svg, &folded, &options("tracekit profile: burner")).unwrap();
        let svg = String::from_utf8(svg).unwrap();
        assert!(svg.starts_with("<?xml"), "{}", &svg[..40]);
        for needle in [
            "tracekit profile: burner",
            ">leaf<",
            "do_syscall_64",
            "90 samples",
        ] {
            assert!(svg.contains(needle), "missing {needle}");
        }
    }

    #[test]
    fn inverted_draws_an_icicle_graph() {
        let folded = vec![("burner;main;leaf".to_string(), 9)];
        let mut svg = Vec::new();
        let inverted = SvgOptions {
            inverted: true,
            ..options("icicle")
        };
        write_svg(&mut svg, &folded, &inverted).unwrap();
        // inferno's script learns the direction from this flag.
        assert!(
            String::from_utf8(svg)
                .unwrap()
                .contains("var inverted = true;")
        );
    }

    #[test]
    fn differential_lines_pair_counts_and_normalize() {
        let before = [("p;main;a".to_string(), 80), ("p;main;b".to_string(), 20)];
        let after = [("p;main;a".to_string(), 40), ("p;main;b".to_string(), 160)];
        let mut lines = differential_lines(&before, &after, false).unwrap();
        lines.sort();
        assert_eq!(lines, ["p;main;a 80 40", "p;main;b 20 160"]);
        let mut lines = differential_lines(&before, &after, true).unwrap();
        lines.sort();
        assert_eq!(lines, ["p;main;a 160 40", "p;main;b 40 160"]);
    }

    #[test]
    fn empty_profile_is_still_an_svg() {
        let mut svg = Vec::new();
        write_svg(&mut svg, &[], &options("empty")).unwrap();
        assert!(
            String::from_utf8(svg)
                .unwrap()
                .trim_end()
                .ends_with("</svg>")
        );
    }
}
