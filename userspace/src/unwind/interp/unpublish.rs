//! Unpublishing the interpreters of exited processes: their `INTERP_PROCESSES` (and
//! `HOTSPOT_CODE`) entries leave the kernel, and their pids [`Interpreters`]'s tables, so that
//! both follow the processes alive, not every interpreter a run under churn saw.

use super::Interpreters;

impl Interpreters {
    /// Forgets exited process `pid` in the kernel.
    pub fn remove_process(&mut self, pid: u32) {
        if self.published.remove(&pid).is_some() {
            let _ = self.processes.remove(&pid);
            if let Some(code) = &mut self.hotspot_code {
                let _ = code.remove(&pid);
            }
        }
    }

    /// Unpublishes every published process that `exited` says is gone (its `INTERP_PROCESSES`
    /// and `HOTSPOT_CODE` entries, and its pid here); returns how many. Not only the
    /// processes whose mapping tables were published: a JIT runtime is published before its
    /// tables ([`Self::load_jit_process`]) and a JVM from the front thread's retries, and
    /// either may exit before its tables are built, which left its entry in the kernel for
    /// the rest of the run (the map filled under churn).
    pub fn forget_exited(&mut self, exited: impl Fn(u32) -> bool) -> usize {
        let gone: Vec<u32> = self
            .published
            .keys()
            .copied()
            .filter(|&pid| exited(pid))
            .collect();
        for &pid in &gone {
            self.remove_process(pid);
        }
        gone.len()
    }
}
