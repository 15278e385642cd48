//! SVG flame graphs, drawn by inferno from folded stacks.

use std::io::Write;

use inferno::flamegraph::{self, Options};

/// Writes an SVG flame graph of `folded` (lines as [`crate::stacks::fold`] makes them).
///
/// `title` says what was profiled; `count_name` is the unit of the counts ("samples",
/// "us"). Kernel frames keep their `_[k]` suffix, as in the folded file.
pub fn write_svg(
    out: &mut (impl Write + ?Sized),
    folded: &[(String, u64)],
    title: &str,
    subtitle: Option<&str>,
    count_name: &str,
) -> std::io::Result<()> {
    let lines: Vec<String> = folded
        .iter()
        .map(|(path, count)| format!("{path} {count}"))
        .collect();
    let mut options = Options::default();
    options.title = title.to_string();
    options.subtitle = subtitle.map(str::to_string);
    options.count_name = count_name.to_string();
    // The same input gives the same colours, so two runs can be compared by eye.
    options.hash = true;
    options.deterministic = true;
    if lines.is_empty() {
        // inferno refuses empty input; an empty profile still gets a valid, titled SVG.
        options.notes = "no samples".into();
        return flamegraph::from_lines(&mut options, ["[no samples] 1"], out).map_err(to_io);
    }
    flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), out).map_err(to_io)
}

fn to_io(err: impl std::error::Error + Send + Sync + 'static) -> std::io::Error {
    std::io::Error::other(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_titled_svg_with_function_names() {
        let folded = vec![
            ("burner;main;a;b;leaf".to_string(), 90),
            ("burner;main;do_syscall_64_[k]".to_string(), 10),
        ];
        let mut svg = Vec::new();
        write_svg(
            &mut svg,
            &folded,
            "tracekit profile: burner",
            None,
            "samples",
        )
        .unwrap();
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
    fn empty_profile_is_still_an_svg() {
        let mut svg = Vec::new();
        write_svg(&mut svg, &[], "empty", None, "samples").unwrap();
        assert!(
            String::from_utf8(svg)
                .unwrap()
                .trim_end()
                .ends_with("</svg>")
        );
    }
}
