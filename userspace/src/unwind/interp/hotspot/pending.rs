//! JVMs found before they can be read. A JVM is announced (and loaded) when `libjvm.so` is
//! mapped: at the `exec` of `-- CMD`, or at the next sample after the launcher's `dlopen`.
//! Then its serviceability tables are not filled and its template interpreter is not
//! generated yet ([`hotspot::NotRead::may_change`]), and nothing else announces it again
//! reliably (a `-Xint` JVM maps no more executable code). Such a JVM is probed again
//! here, from the front thread's poll ([`Interpreters::read_announced`]), after
//! [`FIRST_WAIT`], then at doubling waits up to [`LONGEST_WAIT`], for at most [`RETRY_FOR`];
//! then (or when it exits first) the report says it kept native frames, and why.

use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

use tracekit_common::interp::InterpStat;

use crate::unwind::interp::{Interpreters, hotspot};
use crate::unwind::process::ExecMapping;

/// The wait before the first retry.
const FIRST_WAIT: Duration = Duration::from_millis(20);
/// The longest wait between retries.
const LONGEST_WAIT: Duration = Duration::from_millis(200);
/// How long a JVM is retried after its first probe.
const RETRY_FOR: Duration = Duration::from_secs(60);

/// The runtime's name in the report.
const PUBLISHED: &str = "HotSpot (interpreted frames)";

/// One JVM waiting to be probed again.
#[derive(Debug)]
pub(in crate::unwind::interp) struct Pending {
    path: String,
    binary: hotspot::Binary,
    mapping: ExecMapping,
    /// The last probe's error.
    reason: String,
    /// The layout and its summary, once the tables were read (the interpreter is generated
    /// after them): the next probe reads only the interpreter's code.
    layout: Option<(hotspot::Layout, String)>,
    since: Instant,
    next: Instant,
    wait: Duration,
}

/// JVMs waiting, by pid.
pub(in crate::unwind::interp) type PendingJvms = HashMap<u32, Pending>;

impl Interpreters {
    /// Probes JVM `pid` (its `libjvm.so` at `mapping`) and publishes its interpreted
    /// frames; a JVM still starting is kept for [`Interpreters::retry_hotspot`]. Returns
    /// whether it is published. A JVM published already is not probed again (reading its
    /// tables takes thousands of reads, and it is loaded again at every library it maps);
    /// its pid is forgotten when it exits ([`Interpreters::remove_process`]).
    pub(in crate::unwind::interp) fn load_hotspot(
        &mut self,
        pid: u32,
        path: &str,
        binary: &hotspot::Binary,
        mapping: &ExecMapping,
    ) -> bool {
        if self.published.get(&pid).map(String::as_str) == Some(PUBLISHED) {
            return true;
        }
        let pending = self.hotspot_pending.remove(&pid);
        let since = pending.as_ref().map(|p| (p.since, p.wait));
        let read = pending
            .filter(|p| p.mapping == *mapping)
            .and_then(|p| p.layout);
        let mut layout_read = None;
        let probed = match read {
            Some((layout, summary)) => {
                layout_read = Some((layout, summary.clone()));
                hotspot::with_interpreter(pid, layout, summary)
            }
            None => hotspot::read_layout(pid, binary, mapping).and_then(|(layout, summary)| {
                layout_read = Some((layout, summary.clone()));
                hotspot::with_interpreter(pid, layout, summary)
            }),
        };
        let reason = match probed {
            Ok((layout, summary)) => match layout.process() {
                Some(process) => {
                    let name = PUBLISHED.to_string();
                    let code_cache = layout.code_cache;
                    self.publish(pid, process, name, layout);
                    if let (Some(cache), Some(map)) = (code_cache, &mut self.hotspot_code)
                        && let Err(err) = map.insert(pid, cache, 0)
                    {
                        *self
                            .errors
                            .entry(format!("publishing a JVM's code cache: {err}"))
                            .or_default() += 1;
                    }
                    log::debug!("interpreters: JVM {pid}: {summary}");
                    if code_cache.is_none() {
                        self.keep_native(path, hotspot::not_named(summary), pid);
                    }
                    return true;
                }
                None => format!("{summary}, but a frame slot does not fit"),
            },
            Err(not_read) if not_read.may_change => {
                let now = Instant::now();
                let (since, wait) = since.unwrap_or((now, FIRST_WAIT));
                if now.duration_since(since) < RETRY_FOR {
                    log::debug!(
                        "interpreters: JVM {pid} not readable yet: {}",
                        not_read.reason
                    );
                    let pending = Pending {
                        path: path.to_string(),
                        binary: binary.clone(),
                        mapping: mapping.clone(),
                        reason: not_read.reason,
                        layout: layout_read,
                        since,
                        next: now + wait,
                        wait: (wait * 2).min(LONGEST_WAIT),
                    };
                    self.hotspot_pending.insert(pid, pending);
                    return false;
                }
                format!("{} (for {RETRY_FOR:?} of retries)", not_read.reason)
            }
            Err(not_read) => not_read.reason,
        };
        self.keep_native(path, hotspot::not_named(reason), pid);
        false
    }

    /// Probes again the JVMs whose time has come (see the module's docs). Cheap when none
    /// is waiting.
    pub(in crate::unwind::interp) fn retry_hotspot(&mut self) {
        if self.hotspot_pending.is_empty() {
            return;
        }
        let now = Instant::now();
        let due: Vec<u32> = self
            .hotspot_pending
            .iter()
            .filter(|(_, pending)| pending.next <= now)
            .map(|(&pid, _)| pid)
            .collect();
        for pid in due {
            if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                if let Some(pending) = self.hotspot_pending.remove(&pid) {
                    let reason = format!("{} (it exited first)", pending.reason);
                    self.keep_native(&pending.path, hotspot::not_named(reason), pid);
                }
                continue;
            }
            let Some(pending) = self.hotspot_pending.get(&pid) else {
                continue;
            };
            let (path, binary, mapping) = (
                pending.path.clone(),
                pending.binary.clone(),
                pending.mapping.clone(),
            );
            self.load_hotspot(pid, &path, &binary, &mapping);
        }
    }

    /// For the report: the compiled frames recorded when a JVM was published, then a line
    /// per JVM still waiting, each after a newline.
    pub(in crate::unwind::interp) fn pending_report(&self) -> String {
        let counters = self.counters();
        let compiled = if self.published.values().any(|name| name == PUBLISHED) {
            format!(
                "\nHotSpot: {} code cache frames recorded (compiled methods and stubs), {} \
                 code cache pcs kept native (their blob was not found)",
                counters[InterpStat::CompiledFrames as usize],
                counters[InterpStat::CompiledMisses as usize],
            )
        } else {
            String::new()
        };
        let mut lines: Vec<String> = self
            .hotspot_pending
            .iter()
            .map(|(pid, pending)| {
                format!(
                    "\nnative frames for {} ({}) in process {pid}, still starting after {:.1} s",
                    pending.path,
                    pending.reason,
                    pending.since.elapsed().as_secs_f64()
                )
            })
            .collect();
        lines.sort();
        compiled + &lines.concat()
    }
}
