//! A user stack with interpreter frames spliced among its native ones.

use tracekit_common::interp::{hotspot::decode_fingerprint, python::decode_generation};

use super::{frames, is_frame};
use crate::stacks::Frame;

/// The frames (outermost first) of a user stack `leaf_first` of `pid` holding interpreter
/// frames: each run of native addresses goes to `native` (the symbolizer), each interpreter
/// frame to [`frames`] (a HotSpot interpreted frame with the fingerprint word after it, a
/// CPython frame with its generation word). A
/// run is symbolized as a stack of its own, whose first address is looked up as is: a run
/// after the leaf starts at a return address, so it is passed minus one (inside the call),
/// as the symbolizer does with the return addresses it sees.
pub fn splice(
    pid: u32,
    leaf_first: &[u64],
    mut native: impl FnMut(&[u64]) -> Vec<Frame>,
) -> Vec<Frame> {
    let mut frames = Vec::with_capacity(leaf_first.len());
    let mut end = leaf_first.len();
    // Outermost first: walk the stack from its end.
    while end > 0 {
        if is_frame(leaf_first[end - 1]) {
            // A HotSpot method's fingerprint word, a CPython code object's generation word,
            // is named with the frame before it.
            let word = leaf_first[end - 1];
            if decode_fingerprint(word).is_none() && decode_generation(word).is_none() {
                let next = leaf_first.get(end).copied();
                frames.extend(self::frames(pid, leaf_first[end - 1], next, end == 1));
            }
            end -= 1;
            continue;
        }
        let mut start = end - 1;
        while start > 0 && !is_frame(leaf_first[start - 1]) {
            start -= 1;
        }
        if start == 0 {
            frames.extend(native(&leaf_first[start..end]));
        } else {
            let mut run = leaf_first[start..end].to_vec();
            run[0] = run[0].saturating_sub(1);
            frames.extend(native(&run));
        }
        end = start;
    }
    frames
}
