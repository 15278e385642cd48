//! `perf top`'s view: a title line, then rows of overhead, count and the sort keys' values.

use std::time::Duration;

/// One refresh of the view.
pub struct Screen<'a> {
    /// The title line.
    pub title: String,
    /// Column headers of the sort keys (`Shared Object`, `Symbol`).
    pub headers: &'a [&'a str],
    /// (count, key values) hottest first.
    pub rows: Vec<(u64, Vec<String>)>,
    /// The count the shares are of.
    pub total: u64,
    /// Rows shown.
    pub limit: usize,
}

/// `tracekit top HH:MM:SS: N WHAT in the last S s, SCOPE; by KEYS`; `what` is the phrase
/// for one and for many (`sample of cpu-clock`, `samples of cpu-clock`).
pub fn title(
    clock: &str,
    total: u64,
    what: [&str; 2],
    elapsed: Duration,
    scope: &str,
    sort: &[String],
) -> String {
    format!(
        "tracekit top {clock}: {} in the last {:.1} s, {scope}; by {}",
        super::plural(total, what[0], what[1]),
        elapsed.as_secs_f64(),
        sort.join(",")
    )
}

impl Screen<'_> {
    /// The view as text: title, blank line, header, the first `limit` rows.
    pub fn render(&self) -> String {
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.len()).collect();
        let shown = &self.rows[..self.rows.len().min(self.limit)];
        for (_, values) in shown {
            for (w, v) in widths.iter_mut().zip(values) {
                *w = (*w).max(v.len());
            }
        }
        let mut out = format!("{}\n\n", self.title);
        let mut header = format!("{:>9}  {:>8}", "Overhead", "Count");
        for (name, w) in self.headers.iter().zip(&widths) {
            header.push_str(&format!("  {name:<w$}"));
        }
        out.push_str(header.trim_end());
        out.push('\n');
        for (count, values) in shown {
            let share = 100.0 * *count as f64 / self.total.max(1) as f64;
            let mut line = format!("{:>8.2}%  {count:>8}", share);
            for (value, w) in values.iter().zip(&widths) {
                line.push_str(&format!("  {value:<w$}"));
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_perf_top_columns() {
        let screen = Screen {
            title: title(
                "11:33:28",
                100,
                [
                    "sample of cpu-clock at 99 Hz",
                    "samples of cpu-clock at 99 Hz",
                ],
                Duration::from_secs(2),
                "`tk_burner 3`",
                &["dso".into(), "sym".into()],
            ),
            headers: &["Shared Object", "Symbol"],
            rows: vec![
                (75, vec!["tk_burner".into(), "[.] leaf".into()]),
                (
                    25,
                    vec!["[kernel.kallsyms]".into(), "[k] do_syscall_64".into()],
                ),
            ],
            total: 100,
            limit: 20,
        };
        assert_eq!(
            screen.render(),
            "tracekit top 11:33:28: 100 samples of cpu-clock at 99 Hz in the last 2.0 s, \
             `tk_burner 3`; by dso,sym\n\n \
             Overhead     Count  Shared Object      Symbol\n   \
             75.00%        75  tk_burner          [.] leaf\n   \
             25.00%        25  [kernel.kallsyms]  [k] do_syscall_64\n"
        );
    }
}
