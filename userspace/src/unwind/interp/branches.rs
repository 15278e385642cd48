//! Direct branches found by a byte scan of x86_64 code, and what the interpreter
//! unwinders find with them: a function with no symbol that an exported one calls (Ruby's
//! `vm_exec_core`), and the part of an eval loop's function that the compiler placed apart
//! from it. GCC moves blocks it takes as unlikely into a `FUNCTION.cold` piece in
//! `.text.unlikely`, with an unwind entry (FDE) of its own and no symbol in a stripped
//! binary. In a profile-guided build whatever the training ran little lands there: Debian's
//! CPython 3.14 keeps 84 KiB of its `_PyEval_EvalFrameDefault` (most opcode handlers) in such
//! a piece, and its 1.2 KiB exported symbol covers none of the loop. A sample in the piece is
//! in the eval loop.

/// The direct branches [`branch_targets`] looks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Branch {
    /// `e8 rel32` (call) and `e9 rel32` (jump, a tail call to another function).
    CallOrJump,
    /// `0f 80`-`0f 8f rel32`: how GCC enters a `.cold` piece of the same function.
    Conditional,
}

/// The functions (by `bounds`: `[start, end)` of every FDE, sorted, from
/// [`crate::unwind::table::function_bounds`]) that function `func` (`[start, size)` at
/// `file_offset` of `data`) reaches by a `branch`: `[start, size)` each, once, in the order
/// met. A byte scan, not a disassembly: a target counts only where an FDE other than
/// `func`'s own starts.
pub fn branch_targets(
    data: &[u8],
    bounds: &[(u64, u64)],
    func: (u64, u64),
    file_offset: u64,
    branch: Branch,
) -> Vec<(u64, u64)> {
    let Some(code) = usize::try_from(file_offset)
        .ok()
        .and_then(|start| data.get(start..start.checked_add(usize::try_from(func.1).ok()?)?))
    else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for at in 0..code.len() {
        let opcode = match branch {
            Branch::CallOrJump => matches!(code[at], 0xe8 | 0xe9).then_some(1),
            Branch::Conditional => (code[at] == 0x0f
                && code.get(at + 1).is_some_and(|b| (0x80..=0x8f).contains(b)))
            .then_some(2),
        };
        let Some(opcode) = opcode else {
            continue;
        };
        let Some(Ok(rel)) = code
            .get(at + opcode..at + opcode + 4)
            .map(|bytes| bytes.try_into().map(i32::from_le_bytes))
        else {
            continue;
        };
        let next = func.0 + (at + opcode + 4) as u64;
        let target = next.wrapping_add_signed(i64::from(rel));
        let Ok(index) = bounds.binary_search_by_key(&target, |&(begin, _)| begin) else {
            continue;
        };
        let (begin, end) = bounds[index];
        if begin != func.0 && !found.contains(&(begin, end - begin)) {
            found.push((begin, end - begin));
        }
    }
    found
}

/// Smallest piece taken as the eval loop's: a split-off error path is a few hundred bytes.
const MIN_COLD_BYTES: u64 = 16 * 1024;

/// The largest function (by `bounds`, as [`branch_targets`] takes them) that function `func`
/// (`[start, size)` at `file_offset` of `data`) enters by a conditional jump, if at least
/// [`MIN_COLD_BYTES`]: `[start, size)`. A conditional jump into another FDE's start is how
/// GCC enters a `.cold` piece (a call or tail call to a function is `e8`/`e9`). x86_64 code
/// only; `None` on other machines.
pub fn cold_part(
    data: &[u8],
    bounds: &[(u64, u64)],
    func: (u64, u64),
    file_offset: u64,
) -> Option<(u64, u64)> {
    if !cfg!(target_arch = "x86_64") {
        return None;
    }
    branch_targets(data, bounds, func, file_offset, Branch::Conditional)
        .into_iter()
        .filter(|&(_, size)| size >= MIN_COLD_BYTES)
        .max_by_key(|&(_, size)| size)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A function at 0x1000 of 64 bytes (file offset 0x10) with `je` to 0x9000 (a 20 KiB
    /// FDE), `jne` to 0x20000 (a 4 KiB one), a `jmp` (e9) to 0x30000 (a 40 KiB function it
    /// tail-calls) and a `je` inside itself.
    #[test]
    fn the_largest_piece_entered_by_a_conditional_jump() {
        let mut data = vec![0x90u8; 0x10 + 64];
        let mut put = |at: usize, bytes: &[u8], target: u64| {
            let end = 0x1000 + (at + bytes.len() + 4) as u64;
            let rel = (target as i64 - end as i64) as i32;
            data[0x10 + at..0x10 + at + bytes.len()].copy_from_slice(bytes);
            data[0x10 + at + bytes.len()..0x10 + at + bytes.len() + 4]
                .copy_from_slice(&rel.to_le_bytes());
        };
        put(0, &[0x0f, 0x84], 0x9000);
        put(8, &[0x0f, 0x85], 0x20000);
        put(16, &[0xe9], 0x30000);
        put(24, &[0x0f, 0x84], 0x1004);
        let bounds = [
            (0x1000, 0x1040),
            (0x9000, 0x9000 + 20 * 1024),
            (0x20000, 0x21000),
            (0x30000, 0x30000 + 40 * 1024),
        ];
        let found = cold_part(&data, &bounds, (0x1000, 64), 0x10);
        if cfg!(target_arch = "x86_64") {
            assert_eq!(found, Some((0x9000, 20 * 1024)));
        } else {
            assert_eq!(found, None);
        }
        // The call-or-jump scan finds only the tail call.
        assert_eq!(
            branch_targets(&data, &bounds, (0x1000, 64), 0x10, Branch::CallOrJump),
            [(0x30000, 40 * 1024)]
        );
        // Without the large piece: nothing (the tail call is no part of it).
        assert_eq!(cold_part(&data, &bounds[2..], (0x1000, 64), 0x10), None);
    }
}
