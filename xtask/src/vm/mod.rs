//! `cargo xtask test --vm`: the kernel test matrix. Boots stock Debian kernels (x86_64:
//! Debian 11's 5.10 LTS, 6.1 LTS, 6.12 LTS; arm64: 6.1 and 6.12; `--kernel` and `--arch`
//! pick some) under qemu with an initramfs per architecture holding static builds of
//! tracekit, the integration tests and their fixtures, runs the tests that need what the
//! development machine's kernel lacks (kprobes, BPF trampolines, older kernels' paths,
//! another architecture), and reads a verdict line from the console. Kernel packages and the
//! initramfs are cached under `target/vm/`.
//!
//! x86_64 guests use KVM when `/dev/kvm` works; otherwise, and for arm64 guests always, TCG
//! emulation (nested KVM fails on the development machines), where everything runs 2-10x
//! slower.

mod image;
mod init;
mod java;
mod kernels;

use std::{
    io::{BufRead as _, BufReader},
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context as _, Result};

use self::{
    image::{build_initramfs, busybox, pack},
    init::SMOKE_INIT,
    kernels::{KERNELS, Kernel, fetch_kernel, selected_kernels},
};
use crate::{
    arch::{self, Arch, X86_64},
    setup::{apt_install, cross_toolchain},
    util::{find_program, workspace_root},
};

const VERDICT: &str = "TRACEKIT-VM-RESULT";

/// The tests run in each x86_64 kernel.
pub const VM_TESTS: &[&str] = &[
    "kfunc_",
    // The kernel-function tools' one-line refusals (tests/tests/tools/kernel_function_tools.rs).
    "kernel_function_tools_say_what_is_missing",
    "mdflush_says_what_is_missing",
    "engine_exact_syscall_counts",
    // Raw tracepoints, their fast paths and the classic fallback agree.
    "hooks_",
    "ufunc_funccount_exact",
    "unwind_nofp",
    "unwind_leaf",
    // pyenv's 3.12 is in the image (add_python); the other versions say they are not.
    "python_chain_3_",
    // tcpaccept's descriptor walk (sock(ret)) against 6.1's and 6.12's layouts,
    // and its io_uring accepts (sock(res), io_kiocb and io_accept through casts).
    "network_tcpaccept_",
    "network_count_filters_io_uring",
    // offcpu's exact attribution on every kernel of the matrix (5.10's first of all: no
    // bpf_loop, no bpf_task_pt_regs).
    "everyday_offcpu_sleep_attributed",
    // biolatency on the ext4 loop device (TRACEKIT_BLOCK_DIR): block_rq_issue/complete.
    "engine_biolatency_command_counts_its_io",
    // runqlat's sched_wakeup/sched_switch pairing (BTF task_struct fields by kernel).
    "engine_runqlat_counts_wakeups_and_preemptions",
];

/// The tests run in each arm64 kernel: under TCG each takes several times its x86_64 time,
/// so the list is the engine's exact counts, the kernel-function and user-function probes,
/// the unwinders, and one raw-syscall hook test (the syscall number is arm64's). Left out:
/// `kfunc_fentry_and_kprobe_agree` (6.1 refuses BPF trampolines on arm64:
/// `bpf_raw_tracepoint_open` fails; 6.12 passes it), `kfunc_wildcard_attach_detach_is_fast` (a time bound set
/// for x86_64's emulation; failed once of two runs), the other `hooks_` tests and the
/// kernel-function tools (they passed, but take minutes each: the list ran past 900 s).
pub const ARM64_VM_TESTS: &[&str] = &[
    "engine_exact_syscall_counts",
    "ufunc_funccount_exact",
    "kfunc_funccount_vfs_read",
    "kfunc_kretprobe_retval_bucket",
    "kfunc_btf_argument_by_name",
    "kfunc_several_functions_counted_apart",
    "kfunc_funclatency_counts_calls",
    "unwind_leaf",
    "unwind_nofp",
    "hooks_by_comm_by_thread_as_the_string_key",
    // Debian's arm64 CPython 3.11, nodejs.org's Node 22 and Debian's OpenJDK 17 are in the
    // image (add_debian_python, add_node, add_java), and Debian's arm64 xz and perf.
    "python_chain_debian_3_11",
    "node22_chain_pid",
    "jvm_compiled_frames_are_named",
    "unwind_debian_xz_as_deep_as_perf",
];

/// The tests of `arch`'s kernels.
fn tests_of(arch: &Arch) -> &'static [&'static str] {
    if arch == &X86_64 {
        VM_TESTS
    } else {
        ARM64_VM_TESTS
    }
}

/// Runs the matrix (the kernels `only` names, or all, of the architectures `arches` names,
/// or all); returns whether every kernel passed.
pub fn run(extra_filter: Option<&str>, only: &[String], arches: &[String]) -> Result<bool> {
    let root = workspace_root();
    let dir = root.join("target/vm");
    std::fs::create_dir_all(&dir)?;
    let arches = arch::selected(arches)?;
    let kernels = selected_kernels(only, &arches)?;
    let mut results = Vec::new();
    let mut kvm = kvm_available();
    for arch in arches {
        let kernels: Vec<&Kernel> = kernels.iter().copied().filter(|k| k.arch == arch).collect();
        if kernels.is_empty() {
            continue;
        }
        let tier = Instant::now();
        prerequisites(arch)?;
        // The kernels first: the image carries each one's filesystem modules (add_ext4).
        let vmlinuzes = kernels
            .iter()
            .map(|kernel| fetch_kernel(&dir, kernel))
            .collect::<Result<Vec<_>>>()?;
        let initramfs = build_initramfs(&dir, arch)?;
        let built = tier.elapsed();
        let filters: Vec<String> = match extra_filter {
            // `a,b`: the tests whose names hold either, as libtest's several filters.
            Some(filter) => filter.split(',').map(str::to_string).collect(),
            None => tests_of(arch).iter().map(|s| s.to_string()).collect(),
        };
        for (kernel, vmlinuz) in kernels.iter().zip(vmlinuzes) {
            let name = kernel.name();
            // KVM runs guests of the host's architecture only.
            let native = arch == &X86_64 && kvm;
            eprintln!(
                "xtask: vm {name}: booting {} ({})",
                vmlinuz.display(),
                if native { "KVM" } else { "TCG emulation" }
            );
            let started = Instant::now();
            let mut outcome = boot(arch, &vmlinuz, &initramfs, &filters, &name, native)?;
            if native && outcome == Boot::NoInit {
                eprintln!(
                    "xtask: vm: KVM does not boot here (nested KVM?); using TCG emulation from now on"
                );
                kvm = false;
                outcome = boot(arch, &vmlinuz, &initramfs, &filters, &name, false)?;
            }
            if outcome == Boot::Timeout {
                // A TCG guest has hung once after an RCU stall ("rcu_preempt detected stalls")
                // in a test that passed in every run before it: one more boot tells a
                // hung emulator from a test that hangs.
                eprintln!("xtask: vm {name}: the guest gave no verdict; booting it once more");
                outcome = boot(arch, &vmlinuz, &initramfs, &filters, &name, native && kvm)?;
            }
            if outcome == Boot::Oops && !(native && kvm) {
                // Under TCG a 6.12 guest oopsed twice on the int3 of a jump label being
                // patched (`syscall_trace_enter`, the sys_enter tracepoint's key, as tests
                // attach and detach): a vCPU ran the patch's int3 after the patch was done,
                // which hardware does not. One more boot tells the emulator from a test.
                eprintln!(
                    "xtask: vm {name}: the guest oopsed under emulation (above); booting it once \
                     more"
                );
                outcome = boot(arch, &vmlinuz, &initramfs, &filters, &name, false)?;
            }
            let passed = outcome == Boot::Verdict(true);
            eprintln!(
                "xtask: vm {name}: {} in {:.0} s",
                if passed { "PASS" } else { "FAIL" },
                started.elapsed().as_secs_f64()
            );
            results.push((name, passed));
        }
        eprintln!(
            "xtask: vm {}: {:.0} s in all ({:.0} s of it building the image)",
            arch.name,
            tier.elapsed().as_secs_f64(),
            built.as_secs_f64()
        );
    }
    eprintln!("xtask: kernel matrix:");
    for (name, passed) in &results {
        eprintln!("  linux {name}: {}", if *passed { "pass" } else { "FAIL" });
    }
    Ok(results.iter().all(|(_, passed)| *passed))
}

/// Installs what booting `arch`'s guests and building their image needs, when missing.
fn prerequisites(arch: &Arch) -> Result<()> {
    let mut missing = Vec::new();
    if find_program(arch.qemu).is_none() {
        missing.push(arch.qemu_package);
    }
    if arch == &X86_64 && !Path::new("/bin/busybox").exists() {
        missing.push("busybox-static");
    }
    if find_program("cpio").is_none() {
        missing.push("cpio");
    }
    if !missing.is_empty() {
        apt_install(&missing)?;
    }
    cross_toolchain(arch)
}

/// Boots `arch`'s 6.1 kernel of the matrix with only busybox and `binary` (a static
/// tracekit of that architecture), which runs `profile -a -d 2` and
/// `count raw_syscalls:sys_enter -d 1`; returns whether both ran and printed what they count.
pub fn smoke(binary: &Path, arch: &'static Arch) -> Result<bool> {
    let dir = workspace_root().join("target/vm");
    std::fs::create_dir_all(&dir)?;
    prerequisites(arch)?;
    let image = dir.join(format!("smoke-image-{}", arch.name));
    let _ = std::fs::remove_dir_all(&image);
    for sub in ["bin", "proc", "sys", "dev", "tmp", "root"] {
        std::fs::create_dir_all(image.join(sub))?;
    }
    std::fs::copy(busybox(&dir, arch)?, image.join("bin/busybox"))?;
    std::fs::copy(binary, image.join("bin/tracekit"))?;
    let initramfs = dir.join(format!("smoke-{}.cpio", arch.name));
    pack(&image, SMOKE_INIT, &initramfs)?;
    let kernel = KERNELS
        .iter()
        .find(|k| k.label == "6.1" && k.arch == arch)
        .expect("each architecture has 6.1 in the matrix");
    let vmlinuz = fetch_kernel(&dir, kernel)?;
    let name = kernel.name();
    let kvm = arch == &X86_64 && kvm_available();
    eprintln!(
        "xtask: vm {name}: static binary smoke test ({})",
        if kvm { "KVM" } else { "TCG emulation" }
    );
    let mut outcome = boot(arch, &vmlinuz, &initramfs, &[], &name, kvm)?;
    if kvm && outcome == Boot::NoInit {
        outcome = boot(arch, &vmlinuz, &initramfs, &[], &name, false)?;
    }
    Ok(outcome == Boot::Verdict(true))
}

/// Whether `/dev/kvm` opens (`TRACEKIT_VM_NO_KVM` set: do not try).
fn kvm_available() -> bool {
    std::env::var_os("TRACEKIT_VM_NO_KVM").is_none()
        && std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/kvm")
            .is_ok()
}

/// How a boot ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Boot {
    /// The tests ran; did they pass.
    Verdict(bool),
    /// `/init` never started (KVM that does not work hangs silently).
    NoInit,
    /// `/init` started, but no verdict came in time.
    Timeout,
    /// The guest kernel oopsed before a verdict (its trace is on the console).
    Oops,
}

/// Boots `vmlinuz` (of `arch`) with the initramfs, echoing test lines.
fn boot(
    arch: &Arch,
    vmlinuz: &Path,
    initramfs: &Path,
    filters: &[String],
    label: &str,
    kvm: bool,
) -> Result<Boot> {
    let accel = if kvm { "kvm" } else { "tcg,thread=multi" };
    let cpu = if kvm { "host" } else { "max" };
    // x86_64's TSC is reliable under qemu; without saying so every clock read of 6.1 is a
    // syscall.
    let tsc = if arch == &X86_64 { " tsc=reliable" } else { "" };
    // The initramfs is unpacked into the guest's root, a tmpfs of half its memory: arm64's
    // (300 MB, a JVM's in it) left a profile no room to be written in 1024 MB. 2048 MB
    // makes the guest a JVM's "server class machine" (2 CPUs, 1792 MB), whose default
    // collector (G1) keeps safepoints in counted loops, as on the machines it runs on.
    let memory = if arch == &X86_64 { "1024" } else { "2048" };
    let mut child = Command::new(arch.qemu)
        .args(arch.machine)
        .args(["-accel", accel, "-cpu", cpu, "-m", memory, "-smp", "2"])
        .args(["-nographic", "-no-reboot", "-kernel"])
        .arg(vmlinuz)
        .arg("-initrd")
        .arg(initramfs)
        .arg("-append")
        .arg(format!(
            "console={} panic=-1 quiet{tsc} tracekit.tests={} tracekit.emulated={}",
            arch.console,
            filters.join(","),
            u8::from(!kvm)
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {}", arch.qemu))?;
    let stdout = child.stdout.take().expect("piped");
    let (sender, receiver) = std::sync::mpsc::channel();
    let (init_sender, init_receiver) = std::sync::mpsc::channel();
    let tag = label.to_string();
    let reader = std::thread::spawn(move || {
        let mut verdict = None;
        // After an oops the kernel's own lines are shown too: its trace is the answer.
        let mut oopsed = false;
        for line in BufReader::new(stdout)
            .lines()
            .map_while(std::result::Result::ok)
        {
            let line = line.trim_end().to_string();
            // Kernel messages may share the console line: look anywhere in it.
            if line.contains("TRACEKIT-VM-KERNEL") {
                let _ = init_sender.send(());
            }
            oopsed |= ["Oops", "BUG:", "Kernel panic"]
                .iter()
                .any(|sign| line.contains(sign));
            if let Some(at) = line.find(VERDICT) {
                verdict = Some(line[at + VERDICT.len()..].trim_start().starts_with("PASS"));
            } else if oopsed {
                eprintln!("  [{tag}] {line}");
            } else if !line.is_empty() && !line.starts_with('[') && !line.contains("\x1b") {
                // The tests' own output (kernel messages start with "[  time]").
                eprintln!("  [{tag}] {line}");
            }
        }
        let _ = sender.send(match verdict {
            Some(passed) => Some(Boot::Verdict(passed)),
            None if oopsed => Some(Boot::Oops),
            None => None,
        });
    });
    let boot_limit = Duration::from_secs(if kvm { 30 } else { 300 });
    if init_receiver.recv_timeout(boot_limit).is_err() {
        let _ = child.kill();
        let _ = child.wait();
        let _ = reader.join();
        eprintln!("xtask: vm {label}: /init did not start within {boot_limit:?}");
        return Ok(Boot::NoInit);
    }
    let limit = Duration::from_secs(if kvm { 300 } else { 900 });
    let outcome = match receiver.recv_timeout(limit) {
        Ok(Some(outcome)) => outcome,
        Ok(None) => Boot::Verdict(false),
        Err(_) => {
            eprintln!("xtask: vm {label}: no verdict within {limit:?}");
            Boot::Timeout
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    let _ = reader.join();
    Ok(outcome)
}
