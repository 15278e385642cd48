//! Stack profiles (`profile`, `stackcount`, `offcpu`) in every format: the report of the
//! hottest functions, folded stacks, a flame graph, JSON; and the end-of-run account of
//! what was sampled and what was lost.

use std::{
    collections::HashMap,
    io,
    path::Path,
    time::{Duration, SystemTime},
};

use super::{Format, chrome, flamegraph, flamescope, plural, report, saved, speedscope};
use crate::{
    cpu_sampler::{SHORT_STACK_FRAMES, SymbolizedProfile},
    stacks,
};

/// What a stack profile covered, for titles and headers, and how to draw it.
#[derive(Clone, Copy, Debug)]
pub struct Header<'a> {
    /// The subcommand (`profile`, `stackcount`, `offcpu`).
    pub tool: &'a str,
    /// The event counted (`cpu-clock`, `software:page-faults`).
    pub event: &'a str,
    /// What a count is (`samples`, `events`, `us`).
    pub unit: &'a str,
    /// The scope as messages show it.
    pub scope: &'a str,
    /// Sampling rate, when sampling.
    pub hz: Option<u64>,
    /// How long it covered.
    pub elapsed: Duration,
    /// CPUs sampled.
    pub cpus: usize,
    /// When it started (wall clock; pprof's `time_nanos`).
    pub start: SystemTime,
    /// The length of a time slice in ns, when the stacks carry time slices (`--heatmap`).
    pub time_slice_ns: Option<u64>,
    /// The cgroups of the processes, as saved (`None`: read from /proc when written).
    pub cgroups: Option<&'a HashMap<u32, String>>,
    /// Draw flame graphs as icicle graphs, roots at the top (`--inverted`).
    pub inverted: bool,
    /// The JSON file the same profile is saved to, which heat map cells name in their
    /// `tracekit report` commands.
    pub saved_as: Option<&'a Path>,
    /// The runtimes found whose frames were not named, and why (JSON's
    /// `runtimes_not_named`).
    pub runtimes_not_named: &'a [crate::runtimes::RuntimeNotNamed],
}

impl<'a> Header<'a> {
    /// A header with no rate, no duration, no CPUs, the epoch as start, no time slices.
    pub fn new(tool: &'a str, event: &'a str, unit: &'a str, scope: &'a str) -> Self {
        Self {
            tool,
            event,
            unit,
            scope,
            hz: None,
            elapsed: Duration::ZERO,
            cpus: 0,
            start: SystemTime::UNIX_EPOCH,
            time_slice_ns: None,
            cgroups: None,
            inverted: false,
            saved_as: None,
            runtimes_not_named: &[],
        }
    }

    /// The cgroup of `pid`: as saved, or read from /proc now.
    pub fn cgroup(&self, pid: u32) -> Option<String> {
        match self.cgroups {
            Some(saved) => saved.get(&pid).cloned(),
            None => crate::mappings::read_cgroup(pid),
        }
    }

    fn rate(&self) -> String {
        self.hz.map(|hz| format!(" at {hz} Hz")).unwrap_or_default()
    }

    /// The flame graph's title.
    pub fn title(&self) -> String {
        if self.tool == "profile" {
            return format!(
                "tracekit profile: {}, {:.1} s{}",
                self.scope,
                self.elapsed.as_secs_f64(),
                self.rate()
            );
        }
        format!(
            "tracekit {}: {}, {}, {:.1} s",
            self.tool,
            self.event,
            self.scope,
            self.elapsed.as_secs_f64()
        )
    }
}

/// Writes a stack profile in `format`: the report of the `top` hottest functions (for
/// `offcpu`, the heaviest stacks), folded stacks, a flame graph, or JSON.
pub fn write(
    out: &mut dyn io::Write,
    format: Format,
    profile: &SymbolizedProfile,
    header: &Header<'_>,
    top: usize,
) -> io::Result<()> {
    match format {
        Format::Text if header.tool == "offcpu" => {
            let folded = stacks::fold(&profile.stacks);
            let total: u64 = folded.iter().map(|(_, c)| c).sum();
            let line = format!(
                "{:.3} s off CPU over {:.1} s, {}",
                total as f64 / 1e6,
                header.elapsed.as_secs_f64(),
                header.scope
            );
            out.write_all(report::render_stacks(&line, &folded, header.unit, top).as_bytes())
        }
        Format::Text if header.tool == "offwaketime" => {
            let folded = stacks::fold(&profile.stacks);
            let total: u64 = folded.iter().map(|(_, c)| c).sum();
            let line = format!(
                "{:.3} s blocked over {:.1} s, {}",
                total as f64 / 1e6,
                header.elapsed.as_secs_f64(),
                header.scope
            );
            out.write_all(report::render_pairs(&line, &folded, header.unit, top).as_bytes())
        }
        Format::Text => {
            let (ranked, total) = stacks::hottest(&profile.stacks);
            let line = format!(
                "{} of {}{} over {:.1} s, {}, {}",
                super::in_unit(total, header.unit),
                header.event,
                header.rate(),
                header.elapsed.as_secs_f64(),
                header.scope,
                plural(header.cpus, "CPU", "CPUs")
            );
            out.write_all(report::render(&line, &ranked, total, top).as_bytes())
        }
        Format::Folded => super::write_folded(out, &stacks::fold(&profile.stacks)),
        Format::Svg => {
            let folded = stacks::fold(&profile.stacks);
            let total: u64 = folded.iter().map(|(_, count)| count).sum();
            let subtitle = format!(
                "{} on {}; kernel frames end in _[k]",
                super::in_unit(total, header.unit),
                plural(header.cpus, "CPU", "CPUs")
            );
            flamegraph::write_svg(
                out,
                &folded,
                &flamegraph::SvgOptions {
                    title: &header.title(),
                    subtitle: Some(&subtitle),
                    count_name: header.unit,
                    inverted: header.inverted,
                },
            )
        }
        Format::Heatmap => flamescope::write_profile(out, profile, header),
        Format::Speedscope => speedscope::write(out, profile, header),
        Format::ChromeTrace => chrome::write(out, profile, header),
        Format::Pprof => {
            use super::pprof::{self, PprofOptions, SampleKind};
            let kind = match (header.tool, header.hz) {
                ("offcpu", _) => SampleKind::OffCpuMicros,
                (_, Some(hz)) => SampleKind::Cpu { hz },
                _ => SampleKind::Events,
            };
            let cgroup = |pid| header.cgroup(pid);
            let options = PprofOptions {
                cgroup: &cgroup,
                comments: vec![header.title()],
                ..PprofOptions::new(kind, header.start, header.elapsed)
            };
            out.write_all(&pprof::encode(&pprof::build(&profile.stacks, &options)))
        }
        Format::Otlp => {
            use super::{
                otlp::{self, OtlpOptions},
                pprof::SampleKind,
            };
            let kind = match (header.tool, header.hz) {
                ("offcpu", _) => SampleKind::OffCpuMicros,
                (_, Some(hz)) => SampleKind::Cpu { hz },
                _ => SampleKind::Events,
            };
            let process = |pid| crate::containers::ProcessInfo {
                cgroup: header.cgroup(pid),
                ..crate::containers::ProcessInfo::read(pid)
            };
            let options = OtlpOptions {
                kind,
                start: header.start,
                duration: header.elapsed,
                host: crate::containers::hostname(),
                process: &process,
            };
            otlp::write(out, &profile.stacks, &options)
        }
        Format::Json => saved::write(out, profile, header),
    }
}

/// The processes a profile's stacks come from.
pub fn processes(profile: &SymbolizedProfile) -> usize {
    let pids: std::collections::HashSet<u32> = profile.stacks.iter().map(|s| s.pid).collect();
    pids.len()
}

/// The end-of-run account of a CPU profile: what was sampled from how many `processes` and
/// why it stopped (`reason`), everything lost, and the processes whose user stacks look
/// broken (with `hints`, by pid, saying why where the DWARF unwinder knows; otherwise the
/// frame-pointer advice).
pub fn summary(
    profile: &SymbolizedProfile,
    header: &Header<'_>,
    reason: &str,
    processes: usize,
    hints: &std::collections::HashMap<u32, String>,
) -> String {
    let stats = &profile.stats;
    let mut out = format!(
        "Collected {} from {} in {:.2} s at {} Hz on {} ({reason}).\n",
        plural(stats.samples, "sample", "samples"),
        plural(processes, "process", "processes"),
        header.elapsed.as_secs_f64(),
        header.hz.unwrap_or(0),
        plural(header.cpus, "CPU", "CPUs")
    );
    let mut lost = Vec::new();
    if stats.count_map_full > 0 {
        lost.push(format!(
            "{} to a full count map (raise --count-map-size)",
            plural(stats.count_map_full, "sample", "samples")
        ));
    }
    if stats.stack_map_full > 0 {
        lost.push(format!(
            "{} to a full stack map (raise --stack-storage-size)",
            plural(stats.stack_map_full, "stack", "stacks")
        ));
    }
    let errors = stats.kernel_stack_errors + stats.user_stack_errors;
    if errors > 0 {
        lost.push(format!(
            "{} the kernel could not walk ({} kernel, {} user)",
            plural(errors, "stack", "stacks"),
            stats.kernel_stack_errors,
            stats.user_stack_errors
        ));
    }
    if profile.unwalked > 0 {
        lost.push(format!(
            "{} with no stack at all",
            plural(profile.unwalked, "sample", "samples")
        ));
    }
    if stats.events_lost > 0 {
        lost.push(format!(
            "{} to a full ring buffer (their symbols may not resolve if they exited)",
            plural(
                stats.events_lost,
                "new-process notice",
                "new-process notices"
            )
        ));
    }
    out.push_str(&super::aggregates::lost_line(&lost));
    for broken in &profile.broken {
        if let Some(hint) = hints.get(&broken.pid) {
            out.push_str(&format!(
                "tracekit: warning: pid {} ({}): {} of its {} {} fewer than {} frames; {hint}\n",
                broken.pid,
                broken.comm,
                broken.short,
                plural(broken.samples, "user stack", "user stacks"),
                if broken.short == 1 { "has" } else { "have" },
                SHORT_STACK_FRAMES
            ));
            continue;
        }
        out.push_str(&format!(
            "tracekit: warning: pid {} ({}): {} of its {} {} fewer than {} frames; \
             its stacks look broken, likely built without frame pointers \
             (C/C++: -fno-omit-frame-pointer; Rust: -C force-frame-pointers=yes)\n",
            broken.pid,
            broken.comm,
            broken.short,
            plural(broken.samples, "user stack", "user stacks"),
            if broken.short == 1 { "has" } else { "have" },
            SHORT_STACK_FRAMES
        ));
    }
    out
}

/// The user stacks the DWARF unwinder walked before their process's unwind tables were
/// in: with `-a` the machine's tables are built while sampling runs (seconds on a busy
/// machine), and until then a process is walked by frame pointers only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BeforeTables {
    /// User stacks walked with no table for their process.
    pub stacks: u64,
    /// User stacks walked.
    pub of: u64,
    /// How long building the tables took over the run.
    pub build: std::time::Duration,
}

/// Why a process whose stacks look broken had them so, when it had no tables by the end.
pub const NO_TABLES_YET: &str = "its unwind tables were not built yet when it was sampled \
     (they are built while sampling runs), so only frame pointers walked its stacks";

/// The summary's note when more than 1% of the user stacks were walked before their
/// process's tables were in; empty otherwise.
pub fn before_tables_line(before: &BeforeTables) -> String {
    if before.stacks * 100 <= before.of {
        return String::new();
    }
    format!(
        "tracekit: note: {} of {} user stacks ({:.0}%) were walked before their process's \
         unwind tables were built ({:.1} s of building), by frame pointers only: callers may \
         be missing. A longer run has fewer; -p PID and -- CMD build the tables first.\n",
        before.stacks,
        before.of,
        100.0 * before.stacks as f64 / before.of as f64,
        before.build.as_secs_f64()
    )
}

/// What `-o FILE` received, for stderr after the summary: `Wrote x.svg (flame graph).`
pub fn written(path: &std::path::Path, format: Format) -> String {
    format!(
        "Wrote {} ({}).",
        path.display(),
        match format {
            Format::Text => "report",
            Format::Folded => "folded stacks",
            Format::Svg => "flame graph",
            Format::Json => "JSON",
            Format::Pprof => "pprof profile",
            Format::Otlp => "OTLP profiles",
            Format::Heatmap => "subsecond heat map",
            Format::Speedscope => "speedscope profile",
            Format::ChromeTrace => "Chrome trace",
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        cpu_sampler::{BrokenStacks, Stats},
        stacks::{Frame, FrameKind, Stack},
    };

    fn profile() -> SymbolizedProfile {
        let stack = |symbols: &[&str], count| Stack {
            pid: 42,
            comm: "tk_burner".into(),
            cgroup: None,
            frames: symbols
                .iter()
                .map(|s| Frame::user(*s, Some("/bin/tk_burner")))
                .collect(),
            count,
            time_slice: None,
        };
        SymbolizedProfile {
            stacks: vec![
                stack(&["main", "a", "b", "leaf"], 297),
                stack(&["main", "a"], 3),
            ],
            stats: Stats {
                samples: 300,
                ..Stats::default()
            },
            unwalked: 0,
            broken: Vec::new(),
        }
    }

    fn header() -> Header<'static> {
        Header {
            hz: Some(99),
            elapsed: Duration::from_secs(3),
            cpus: 2,
            ..Header::new("profile", "cpu-clock", "samples", "`tk_burner 3`")
        }
    }

    fn render(format: Format) -> String {
        let mut out = Vec::new();
        write(&mut out, format, &profile(), &header(), 20).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn report_and_folded() {
        assert_eq!(
            render(Format::Text),
            "# 300 samples of cpu-clock at 99 Hz over 3.0 s, `tk_burner 3`, 2 CPUs\n\
             #\n\
             # Overhead  Samples  Command    Shared Object  Symbol\n\
             # ........  .......  .........  .............  ......\n\
             \x20   99.00%      297  tk_burner  tk_burner      [.] leaf\n\
             \x20    1.00%        3  tk_burner  tk_burner      [.] a\n"
        );
        assert_eq!(
            render(Format::Folded),
            "tk_burner;main;a 3\ntk_burner;main;a;b;leaf 297\n"
        );
    }

    #[test]
    fn json_carries_the_losses() {
        let json: serde_json::Value = serde_json::from_str(&render(Format::Json)).unwrap();
        assert_eq!(json["samples"], 300);
        assert_eq!(json["frequency_hz"], 99);
        assert_eq!(json["lost"]["count_map_full"], 0);
        assert_eq!(json["lost"]["unwalked_stacks"], 0);
        // 300 samples were counted, none lost: `lost` must not carry a count of samples.
        assert_eq!(json["lost"].get("samples"), None, "{}", json["lost"]);
        assert_eq!(json["stacks"][0]["frames"][3]["symbol"], "leaf");
    }

    #[test]
    fn summary_names_losses_and_broken_stacks() {
        let mut profile = profile();
        profile.stats.stack_map_full = 2;
        profile.unwalked = 1;
        profile.broken.push(BrokenStacks {
            pid: 7,
            comm: "xz".into(),
            samples: 10,
            short: 9,
        });
        assert_eq!(
            summary(
                &profile,
                &header(),
                "command exited",
                processes(&profile),
                &Default::default()
            ),
            "Collected 300 samples from 1 process in 3.00 s at 99 Hz on 2 CPUs (command exited).\n\
             Lost: 2 stacks to a full stack map (raise --stack-storage-size); 1 sample with no \
             stack at all.\n\
             tracekit: warning: pid 7 (xz): 9 of its 10 user stacks have fewer than 3 frames; its \
             stacks look broken, likely built without frame pointers (C/C++: \
             -fno-omit-frame-pointer; Rust: -C force-frame-pointers=yes)\n"
        );
        // The DWARF unwinder names why instead.
        let hints = [(
            7,
            "these mappings had no unwind table: /x (no .eh_frame)".to_string(),
        )];
        let text = summary(
            &profile,
            &header(),
            "command exited",
            processes(&profile),
            &hints.into_iter().collect(),
        );
        assert!(
            text.ends_with(
                "tracekit: warning: pid 7 (xz): 9 of its 10 user stacks have fewer than 3 \
                 frames; these mappings had no unwind table: /x (no .eh_frame)\n"
            ),
            "{text}"
        );
        // One of each: every noun agrees with its number.
        let mut one = profile.clone();
        one.stacks.truncate(1);
        one.stats.samples = 1;
        one.stats.stack_map_full = 1;
        one.stats.kernel_stack_errors = 1;
        one.unwalked = 0;
        one.broken = vec![BrokenStacks {
            pid: 7,
            comm: "xz".into(),
            samples: 1,
            short: 1,
        }];
        let header = Header {
            cpus: 1,
            ..header()
        };
        assert_eq!(
            summary(&one, &header, "command exited", 1, &Default::default()),
            "Collected 1 sample from 1 process in 3.00 s at 99 Hz on 1 CPU (command exited).\n\
             Lost: 1 stack to a full stack map (raise --stack-storage-size); 1 stack the kernel \
             could not walk (1 kernel, 0 user).\n\
             tracekit: warning: pid 7 (xz): 1 of its 1 user stack has fewer than 3 frames; its \
             stacks look broken, likely built without frame pointers (C/C++: \
             -fno-omit-frame-pointer; Rust: -C force-frame-pointers=yes)\n"
        );
        let _ = FrameKind::User;
    }

    /// More than 1% of the user stacks walked before their tables: one note, with the
    /// counts and the build time; 1% or less: nothing.
    #[test]
    fn stacks_walked_before_their_tables_are_noted_above_one_percent() {
        let before = |stacks, of| BeforeTables {
            stacks,
            of,
            build: std::time::Duration::from_millis(3361),
        };
        assert_eq!(
            before_tables_line(&before(1318, 1559)),
            "tracekit: note: 1318 of 1559 user stacks (85%) were walked before their \
             process's unwind tables were built (3.4 s of building), by frame pointers only: \
             callers may be missing. A longer run has fewer; -p PID and -- CMD build the \
             tables first.\n"
        );
        assert_eq!(before_tables_line(&before(10, 1000)), "");
        assert_eq!(before_tables_line(&before(0, 0)), "");
    }
}
