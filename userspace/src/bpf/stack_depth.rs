//! The BPF stack each embedded program's deepest call chain uses, as the verifier counts it,
//! checked against the kernel's limit in the unit tier (no root, no VM).
//!
//! `check_max_stack_depth` (kernel/bpf/verifier.c) walks each program from its entry through
//! its BPF-to-BPF calls and the callbacks it hands to helpers (`bpf_loop`'s: a `ld_imm64` of
//! a function), adds each frame's stack rounded up to 32 bytes (at least 32), and refuses a
//! chain over `MAX_BPF_STACK` (512): "combined stack size of N calls is M. Too large". Which
//! chain a kernel reaches depends on the kernel (Debian 6.1 counts the unwinder's callback and
//! a `memset` it calls; newer kernels inline `bpf_loop`), so the check here takes every chain
//! the object has, the worst case: it failed on the build whose unwinder step grew to 144
//! bytes and called `memset` (32 + 320 + 160 + 32 = 544 on 6.1), which the host kernel
//! loaded and only the 6.1 VM refused.
//!
//! A frame's stack is the deepest `r10` offset its instructions reach, directly or through a
//! register holding `r10` plus a constant (a pointer to a stack buffer handed to a helper):
//! an upper bound of what the verifier records along the paths it explores.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use aya_obj::generated::{
    BPF_ADD, BPF_ALU, BPF_ALU64, BPF_CALL, BPF_JMP, BPF_LD, BPF_LDX, BPF_MOV, BPF_PSEUDO_CALL,
    BPF_PSEUDO_FUNC, BPF_ST, BPF_STX, BPF_SUB, BPF_X, bpf_insn,
};

/// `MAX_BPF_STACK` (include/linux/filter.h).
pub const MAX_BPF_STACK: u32 = 512;

/// `MAX_CALL_FRAMES` (include/linux/bpf_verifier.h).
pub const MAX_CALL_FRAMES: usize = 8;

/// The frame pointer register.
const FP: usize = 10;

/// A program's deepest call chain: each frame's instruction index in the linked program, its
/// name (the function whose instructions start there), and its stack in bytes, unrounded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chain {
    pub frames: Vec<(usize, String, u32)>,
}

impl Chain {
    /// The chain's combined stack as the verifier adds it (each frame rounded up to 32).
    pub fn bytes(&self) -> u32 {
        self.frames
            .iter()
            .map(|(_, _, depth)| rounded(*depth))
            .sum()
    }
}

impl std::fmt::Display for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .frames
            .iter()
            .map(|(_, name, depth)| format!("{name} ({depth} -> {})", rounded(*depth)))
            .collect();
        write!(f, "{} bytes: {}", self.bytes(), parts.join(" -> "))
    }
}

/// A frame as the verifier counts it: `round_up(max(depth, 1), 32)`.
fn rounded(depth: u32) -> u32 {
    depth.max(1).div_ceil(32) * 32
}

/// The deepest chain of every program in `object` (an ELF BPF object), by program name.
/// Errors: the object does not parse, or its calls do not link (aya-obj's message).
pub fn deepest_chains(object: &[u8]) -> Result<BTreeMap<String, Chain>, String> {
    let mut obj = aya_obj::Object::parse(object).map_err(|e| e.to_string())?;
    // Named before linking: each function's length and first instructions.
    let originals: Vec<(String, Vec<bpf_insn>)> = obj
        .functions
        .values()
        .map(|function| (function.name.clone(), function.instructions.clone()))
        .collect();
    let text_sections: HashSet<usize> = obj.functions.keys().map(|(section, _)| *section).collect();
    obj.relocate_calls(&text_sections)
        .map_err(|e| e.to_string())?;
    let mut chains = BTreeMap::new();
    for (name, program) in &obj.programs {
        let function = &obj.functions[&program.function_key()];
        let mut chain = deepest_chain(&function.instructions, &originals)?;
        // Entry trampolines look alike: the entry is named as the program's own function.
        chain.frames[0].1 = function.name.clone();
        chains.insert(name.clone(), chain);
    }
    Ok(chains)
}

/// The deepest chain of one linked program (its entry at instruction 0).
fn deepest_chain(
    insns: &[bpf_insn],
    originals: &[(String, Vec<bpf_insn>)],
) -> Result<Chain, String> {
    // Subprograms start at the entry and at every call's or function reference's target.
    let mut starts = BTreeSet::from([0usize]);
    for (at, insn) in insns.iter().enumerate() {
        if let Some(target) = callee(insns, at, insn)? {
            starts.insert(target);
        }
    }
    let starts: Vec<usize> = starts.into_iter().collect();
    let end_of = |start: usize| {
        starts
            .iter()
            .find(|&&other| other > start)
            .copied()
            .unwrap_or(insns.len())
    };
    let depth_of: BTreeMap<usize, u32> = starts
        .iter()
        .map(|&start| (start, frame_depth(&insns[start..end_of(start)])))
        .collect();
    // Depth-first over the calls (BPF has no recursion: the verifier refuses it).
    fn walk(
        start: usize,
        insns: &[bpf_insn],
        depth_of: &BTreeMap<usize, u32>,
        end_of: &dyn Fn(usize) -> usize,
        level: usize,
    ) -> Result<Vec<(usize, u32)>, String> {
        if level >= MAX_CALL_FRAMES {
            return Err(format!(
                "more than {MAX_CALL_FRAMES} frames deep at instruction {start}"
            ));
        }
        let mut best: Vec<(usize, u32)> = Vec::new();
        for at in start..end_of(start) {
            if let Some(target) = callee(insns, at, &insns[at])? {
                let below = walk(target, insns, depth_of, end_of, level + 1)?;
                let bytes = |chain: &[(usize, u32)]| -> u32 {
                    chain.iter().map(|(_, depth)| rounded(*depth)).sum()
                };
                if bytes(&below) > bytes(&best) {
                    best = below;
                }
            }
        }
        let mut chain = vec![(start, depth_of[&start])];
        chain.extend(best);
        Ok(chain)
    }
    let chain = walk(0, insns, &depth_of, &end_of, 0)?;
    Ok(Chain {
        frames: chain
            .into_iter()
            .map(|(start, depth)| {
                (
                    start,
                    name_at(insns, start, end_of(start), originals),
                    depth,
                )
            })
            .collect(),
    })
}

/// The instruction a call (`call` to a BPF function) or function reference (`ld_imm64` of
/// a callback) at `at` leads to; `None` for any other instruction.
fn callee(insns: &[bpf_insn], at: usize, insn: &bpf_insn) -> Result<Option<usize>, String> {
    let class = u32::from(insn.code & 0x07);
    let op = u32::from(insn.code & 0xf0);
    let src = u32::from(insn.src_reg());
    let pseudo_call = class == BPF_JMP && op == BPF_CALL && src == BPF_PSEUDO_CALL;
    // ld_imm64: BPF_LD | BPF_IMM | BPF_DW.
    let pseudo_func = insn.code == 0x18 && src == BPF_PSEUDO_FUNC;
    if !pseudo_call && !pseudo_func {
        return Ok(None);
    }
    let target = at as i64 + i64::from(insn.imm) + 1;
    if target < 0 || target as usize >= insns.len() {
        return Err(format!(
            "instruction {at} calls {target}, outside the program's {} instructions",
            insns.len()
        ));
    }
    Ok(Some(target as usize))
}

/// The deepest byte below `r10` the instructions reach: loads and stores off `r10`, and
/// `r10` plus a constant held in a register (tracked along the instructions in order; a
/// register written any other way stops holding it, as do r0-r5 at a call).
fn frame_depth(insns: &[bpf_insn]) -> u32 {
    let mut deepest = 0i64;
    // Registers holding r10 + offset.
    let mut from_fp: [Option<i64>; 11] = [None; 11];
    from_fp[FP] = Some(0);
    let mut reach = |base: Option<i64>, off: i16| {
        if let Some(base) = base {
            deepest = deepest.max(-(base + i64::from(off)));
        }
    };
    let mut skip = false;
    for insn in insns {
        if skip {
            skip = false;
            continue;
        }
        let class = u32::from(insn.code & 0x07);
        let (dst, src) = (usize::from(insn.dst_reg()), usize::from(insn.src_reg()));
        if dst > FP || src > FP {
            continue;
        }
        match class {
            BPF_ST | BPF_STX => reach(from_fp[dst], insn.off),
            BPF_LDX => {
                reach(from_fp[src], insn.off);
                from_fp[dst] = None;
            }
            BPF_LD => {
                // ld_imm64 takes two instruction slots.
                skip = insn.code == 0x18;
                from_fp[dst] = None;
            }
            BPF_ALU64 => {
                let op = u32::from(insn.code & 0xf0);
                let by_reg = u32::from(insn.code & 0x08) == BPF_X;
                from_fp[dst] = match (op, by_reg) {
                    (BPF_MOV, true) => from_fp[src],
                    (BPF_ADD, false) => from_fp[dst].map(|base| base + i64::from(insn.imm)),
                    (BPF_SUB, false) => from_fp[dst].map(|base| base - i64::from(insn.imm)),
                    _ => None,
                };
                if dst != FP {
                    reach(from_fp[dst], 0);
                }
            }
            BPF_ALU => from_fp[dst] = None,
            BPF_JMP if u32::from(insn.code & 0xf0) == BPF_CALL => {
                for reg in from_fp.iter_mut().take(6) {
                    *reg = None;
                }
            }
            _ => {}
        }
        from_fp[FP] = Some(0);
    }
    deepest.max(0) as u32
}

/// The name of the function whose instructions the linked program holds at `start..end`:
/// the original function of that length whose instructions match but for call targets.
fn name_at(
    insns: &[bpf_insn],
    start: usize,
    end: usize,
    originals: &[(String, Vec<bpf_insn>)],
) -> String {
    let linked = &insns[start..end];
    let same = |a: &bpf_insn, b: &bpf_insn| {
        a.code == b.code && a.off == b.off && a.dst_reg() == b.dst_reg()
    };
    originals
        .iter()
        .find(|(_, original)| {
            original.len() == linked.len() && original.iter().zip(linked).all(|(a, b)| same(a, b))
        })
        .map(|(name, _)| name.clone())
        .unwrap_or_else(|| format!("<instruction {start}>"))
}

#[cfg(test)]
mod tests {
    use aya_obj::generated::BPF_K;

    use super::*;
    use crate::bpf::{Object, object};

    /// Every program of every embedded object has no call chain over the verifier's 512
    /// bytes, on any kernel: the chain Debian 6.1 refused is caught here, in the unit tier.
    /// The engine's deepest chain runs from a tracepoint's entry through the engine and the
    /// unwinder's step (at least 3 frames), so the walk does follow calls and callbacks.
    #[test]
    fn no_program_needs_more_than_the_kernels_512_bytes_of_stack() {
        let mut over = Vec::new();
        let mut engine_deepest = 0;
        for which in [Object::CpuSampler, Object::Engine, Object::Ksyms] {
            let Ok(bytes) = object(which) else {
                eprintln!("skipped: this build has no kernel programs");
                return;
            };
            let chains = deepest_chains(bytes).unwrap();
            let deepest = chains
                .iter()
                .max_by_key(|(_, chain)| chain.bytes())
                .unwrap();
            eprintln!("{which:?}: deepest: {}: {}", deepest.0, deepest.1);
            if which == Object::Engine {
                engine_deepest = deepest.1.frames.len();
            }
            for (name, chain) in &chains {
                if chain.bytes() > MAX_BPF_STACK {
                    over.push(format!("{which:?} {name}: {chain}"));
                }
            }
        }
        assert!(
            over.is_empty(),
            "over {MAX_BPF_STACK} bytes:\n{}",
            over.join("\n")
        );
        assert!(engine_deepest >= 3, "{engine_deepest} frames");
    }

    /// The stack of hand-made instructions: direct `r10` stores and loads, a pointer to a
    /// stack buffer, and a copy of it.
    #[test]
    fn a_frame_reaches_its_deepest_r10_offset() {
        let insn = |code: u32, dst: u8, src: u8, off: i16, imm: i32| {
            // SAFETY: a plain-data struct of integers, all zero a valid instruction.
            let mut insn: bpf_insn = unsafe { std::mem::zeroed() };
            insn.code = code as u8;
            insn.off = off;
            insn.imm = imm;
            insn.set_dst_reg(dst);
            insn.set_src_reg(src);
            insn
        };
        let stxdw = BPF_STX | 0x18 | 0x60; // BPF_MEM | BPF_DW
        let ldxdw = BPF_LDX | 0x18 | 0x60;
        let mov = BPF_ALU64 | BPF_MOV | BPF_X;
        let add = BPF_ALU64 | BPF_ADD | BPF_K;
        let call = BPF_JMP | BPF_CALL;
        // *(u64 *)(r10 - 8) = r1; r1 = *(u64 *)(r10 - 24)
        assert_eq!(
            frame_depth(&[insn(stxdw, 10, 1, -8, 0), insn(ldxdw, 1, 10, -24, 0)]),
            24
        );
        // r2 = r10; r2 += -72; r3 = r2; *(u64 *)(r3 + 8) = r1
        assert_eq!(
            frame_depth(&[
                insn(mov, 2, 10, 0, 0),
                insn(add, 2, 0, 0, -72),
                insn(mov, 3, 2, 0, 0),
                insn(stxdw, 3, 1, 8, 0),
            ]),
            72
        );
        // A call clobbers r1-r5: r1 no longer points into the stack.
        assert_eq!(
            frame_depth(&[
                insn(mov, 1, 10, 0, 0),
                insn(call, 0, 0, 0, 6),
                insn(add, 1, 0, 0, -400),
            ]),
            0
        );
        assert_eq!(rounded(0), 32);
        assert_eq!(rounded(144), 160);
        assert_eq!(rounded(320), 320);
    }
}
