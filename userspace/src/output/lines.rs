//! The hottest lines of the hottest functions (`profile --by line`): perf annotate's use
//! without the disassembly, from a [`LineProfile`].
//!
//! ```text
//! # Hottest lines of the hottest functions: samples by the source line their leaf ran
//! # (a function's Overhead is of all samples, a line's of its function's samples)
//! #
//! # Overhead  Samples  Function / Line  Shared Object
//! # ........  .......  ...............  .............
//!     99.34%      302  hot              tk_lines
//!    100.00%      302    tk_lines.c:20
//! #
//! # Not attributed to a line: 2 samples ran in the kernel.
//! ```

use std::{collections::HashMap, io};

use crate::symbolize::lines::{LineProfile, SourceLine};

/// Lines shown under each function; the rest are summed in one row.
pub const LINES_PER_FUNCTION: usize = 5;

/// One function's samples and its lines, hottest first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionLines {
    /// The function (innermost, as [`SourceLine::function`]).
    pub function: String,
    /// Its module's file name (`tk_lines`, `libc.so.6`).
    pub module: String,
    /// Its samples.
    pub samples: u64,
    /// `file:line` and samples, hottest first (ties by location).
    pub lines: Vec<(String, u64)>,
}

/// The functions of `profile`, hottest first (ties by name), each with its lines.
pub fn by_function(profile: &LineProfile) -> Vec<FunctionLines> {
    let mut functions: HashMap<(String, String), HashMap<String, u64>> = HashMap::new();
    for (line, count) in &profile.lines {
        let SourceLine {
            function, module, ..
        } = line;
        let module = module
            .as_deref()
            .map(|m| m.rsplit('/').next().unwrap_or(m).to_string())
            .unwrap_or_else(|| crate::stacks::UNKNOWN_SYMBOL.to_string());
        *functions
            .entry((function.clone(), module))
            .or_default()
            .entry(line.location())
            .or_default() += count;
    }
    let mut out: Vec<FunctionLines> = functions
        .into_iter()
        .map(|((function, module), lines)| {
            let mut lines: Vec<(String, u64)> = lines.into_iter().collect();
            lines.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            FunctionLines {
                function,
                module,
                samples: lines.iter().map(|(_, n)| n).sum(),
                lines,
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.samples
            .cmp(&a.samples)
            .then_with(|| a.function.cmp(&b.function))
    });
    out
}

/// Writes the report: the `top` hottest functions of `profile`, each with its hottest
/// lines. `total` is every sample of the profile (the base of a function's Overhead).
pub fn write(
    out: &mut dyn io::Write,
    profile: &LineProfile,
    total: u64,
    top: usize,
) -> io::Result<()> {
    let functions = by_function(profile);
    let percent = |part: u64, whole: u64| 100.0 * part as f64 / whole.max(1) as f64;
    let mut rows: Vec<(String, String, String, String)> = Vec::new();
    for function in functions.iter().take(top) {
        rows.push((
            format!("{:.2}%", percent(function.samples, total)),
            function.samples.to_string(),
            function.function.clone(),
            function.module.clone(),
        ));
        for (location, count) in function.lines.iter().take(LINES_PER_FUNCTION) {
            rows.push((
                format!("{:.2}%", percent(*count, function.samples)),
                count.to_string(),
                format!("  {location}"),
                String::new(),
            ));
        }
        let rest: Vec<&(String, u64)> = function.lines.iter().skip(LINES_PER_FUNCTION).collect();
        if !rest.is_empty() {
            let count: u64 = rest.iter().map(|(_, n)| n).sum();
            rows.push((
                format!("{:.2}%", percent(count, function.samples)),
                count.to_string(),
                format!(
                    "  ({})",
                    super::plural(rest.len(), "more line", "more lines")
                ),
                String::new(),
            ));
        }
    }
    let name_width = rows
        .iter()
        .map(|r| r.2.chars().count())
        .chain(["Function / Line".len()])
        .max()
        .unwrap_or(0);
    writeln!(
        out,
        "# Hottest lines of the hottest functions: samples by the source line their leaf ran"
    )?;
    writeln!(
        out,
        "# (a function's Overhead is of all samples, a line's of its function's samples)"
    )?;
    writeln!(out, "#")?;
    writeln!(
        out,
        "# Overhead  Samples  {:<name_width$}  Shared Object",
        "Function / Line"
    )?;
    writeln!(
        out,
        "# ........  .......  {}  .............",
        ".".repeat(name_width)
    )?;
    for (overhead, samples, name, module) in &rows {
        let line = format!("{overhead:>10} {samples:>8}  {name:<name_width$}  {module}");
        writeln!(out, "{}", line.trim_end())?;
    }
    let mut unattributed = Vec::new();
    if profile.in_kernel > 0 {
        unattributed.push(format!(
            "{} in the kernel",
            super::plural(profile.in_kernel, "sample ran", "samples ran")
        ));
    }
    if profile.no_user_stack > 0 {
        unattributed.push(format!(
            "{} no user stack",
            super::plural(profile.no_user_stack, "sample had", "samples had")
        ));
    }
    if !unattributed.is_empty() {
        writeln!(
            out,
            "#\n# Not attributed to a line: {}.",
            unattributed.join(", ")
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(function: &str, file: Option<&str>, line: Option<u32>) -> SourceLine {
        SourceLine {
            function: function.into(),
            module: Some("/work/fixtures/tk_lines".into()),
            file: file.map(Into::into),
            line,
        }
    }

    #[test]
    fn hottest_lines_of_hottest_functions() {
        let mut lines = vec![
            (line("leaf", Some("/src/tk_lines.c"), Some(23)), 282),
            (line("leaf", Some("/src/tk_lines.c"), Some(22)), 14),
            (line("main", Some("/src/tk_lines.c"), Some(40)), 3),
            (line("main", None, None), 1),
        ];
        for n in 0..7 {
            lines.push((line("many", Some("m.c"), Some(n)), 1));
        }
        let profile = LineProfile {
            lines,
            in_kernel: 5,
            no_user_stack: 2,
        };
        let mut out = Vec::new();
        write(&mut out, &profile, 314, 3).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\
# Hottest lines of the hottest functions: samples by the source line their leaf ran
# (a function's Overhead is of all samples, a line's of its function's samples)
#
# Overhead  Samples  Function / Line   Shared Object
# ........  .......  ................  .............
    94.27%      296  leaf              tk_lines
    95.27%      282    tk_lines.c:23
     4.73%       14    tk_lines.c:22
     2.23%        7  many              tk_lines
    14.29%        1    m.c:0
    14.29%        1    m.c:1
    14.29%        1    m.c:2
    14.29%        1    m.c:3
    14.29%        1    m.c:4
    28.57%        2    (2 more lines)
     1.27%        4  main              tk_lines
    75.00%        3    tk_lines.c:40
    25.00%        1    ??:?
#
# Not attributed to a line: 5 samples ran in the kernel, 2 samples had no user stack.
"
        );
    }
}
