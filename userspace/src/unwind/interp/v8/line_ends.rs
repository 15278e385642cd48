//! Scripts' line terminators, found once per script and kept: every function of a script
//! has its lines looked up in them ([`super::lines::script_lines`]).
//!
//! Why kept: a compiler from npm is one script of several MB with tens of thousands of
//! functions, and V8 leaves `Script::line_ends` undefined until something asks for a line,
//! so each function's lines were counted in its script's source, read again up to the
//! function (6 MB of TypeScript's `_tsc.js`: 20 to 750 ms a function). The unwind thread
//! then fell behind the code objects the kernel announced, and read most of them after V8
//! had moved them or the process had exited (their frames `[unknown]`). V8's own
//! `line_ends`, when it has them, are a `FixedArray` of Smis read in one piece.
//!
//! An entry is keyed by the process, the `Script`'s address and the words of its `source`
//! and `line_ends` fields: a script V8 moved, or whose `line_ends` it computed since, is
//! looked at anew.

use std::{
    collections::HashMap,
    sync::{Arc, LazyLock, Mutex},
};

use super::{
    lines::{LineLayout, MAX_LINES, MAX_SOURCE, Objects, smi, source_ends},
    read_memory,
};

/// Terminator offsets kept in all, at most (4 bytes each): past it the cache starts over.
const MAX_CACHED_ENDS: usize = 8 << 20;

/// The line terminators of one script.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct ScriptEnds {
    /// The UTF-16 offsets of the script's line terminators, ascending.
    pub ends: Vec<u32>,
    /// The source units they cover: all of them (`u64::MAX`) when read from V8's
    /// `line_ends`, else the prefix of the source read (at most [`MAX_SOURCE`]).
    pub covered: u64,
}

impl ScriptEnds {
    /// Whether the lines of offsets up to `offset` are known (past [`MAX_SOURCE`], the
    /// lines are counted up to it).
    pub fn covers(&self, offset: u32) -> bool {
        self.covered >= u64::from(offset).min(MAX_SOURCE)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    pid: u32,
    script: u64,
    source: u64,
    line_ends: u64,
}

#[derive(Default)]
struct Cache {
    scripts: HashMap<Key, Arc<ScriptEnds>>,
    /// Terminator offsets held by `scripts`.
    held: usize,
}

static CACHE: LazyLock<Mutex<Cache>> = LazyLock::new(Mutex::default);

fn cache() -> std::sync::MutexGuard<'static, Cache> {
    CACHE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The line terminators of the `Script` at untagged `script`: V8's `line_ends` when it
/// computed them, else counted in its source; from the cache when read before. `None`:
/// neither can be read.
pub(super) fn of_script(
    objects: &impl Objects,
    layout: &LineLayout,
    script: u64,
) -> Option<Arc<ScriptEnds>> {
    let line_ends = objects.word(script + u64::from(layout.script_line_ends))?;
    let source = objects.word(script + u64::from(layout.script_source))?;
    let key = Key {
        pid: objects.pid(),
        script,
        source,
        line_ends,
    };
    if let Some(found) = cache().scripts.get(&key) {
        return Some(found.clone());
    }
    let read = Arc::new(read_ends(objects, layout, line_ends, source)?);
    let mut cache = cache();
    if cache.held + read.ends.len() > MAX_CACHED_ENDS {
        cache.scripts.clear();
        cache.held = 0;
    }
    cache.held += read.ends.len();
    cache.scripts.insert(key, read.clone());
    Some(read)
}

/// Forgets the scripts of process `pid` (exited).
pub(in crate::unwind::interp) fn forget(pid: u32) {
    let mut cache = cache();
    cache.scripts.retain(|key, _| key.pid != pid);
    cache.held = cache.scripts.values().map(|ends| ends.ends.len()).sum();
}

/// Scripts whose line terminators are cached (for tests).
#[cfg(test)]
pub(super) fn cached(pid: u32) -> usize {
    cache().scripts.keys().filter(|key| key.pid == pid).count()
}

/// Reads the terminators: from `line_ends` (tagged) when it is a `FixedArray`, else from
/// `source` (a tagged string).
fn read_ends(
    objects: &impl Objects,
    layout: &LineLayout,
    line_ends: u64,
    source: u64,
) -> Option<ScriptEnds> {
    if let Some((array, kind)) = objects.object(line_ends)
        && kind == layout.type_fixed_array
    {
        let count = smi(objects.word(array + u64::from(layout.array_length))?)?;
        let count = u64::try_from(count).ok()?.min(MAX_LINES);
        let bytes = read_memory(
            objects.pid(),
            array + u64::from(layout.array_data),
            usize::try_from(count * 8).ok()?,
        )?;
        let ends = bytes
            .chunks_exact(8)
            .map(|word| {
                let value = smi(u64::from_le_bytes(word.try_into().ok()?))?;
                u32::try_from(value).ok()
            })
            .collect::<Option<Vec<u32>>>()?;
        return Some(ScriptEnds {
            ends,
            covered: u64::MAX,
        });
    }
    let text = objects.string_prefix(source, MAX_SOURCE)?;
    let covered = text.chars().map(|c| c.len_utf16() as u64).sum();
    Some(ScriptEnds {
        ends: source_ends(&text),
        covered,
    })
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    /// A process of one script: its `line_ends` (`None`: undefined) and source; counts the
    /// source's reads.
    struct Fake {
        pid: u32,
        source: String,
        line_ends_at: Option<u64>,
        source_reads: Cell<u32>,
    }

    const SCRIPT: u64 = 0x1000;
    const SOURCE_WORD: u64 = 0x2001;
    const UNDEFINED: u64 = 0x3001;
    const FIXED_ARRAY_TYPE: u16 = 7;

    fn layout() -> LineLayout {
        LineLayout {
            function_data: None,
            array_length: 8,
            array_data: 16,
            bytecode_positions: 0,
            bytecode_data: 0,
            script_source: 8,
            script_line_ends: 16,
            type_byte_array: 6,
            type_fixed_array: FIXED_ARRAY_TYPE,
            fixed_positions: false,
        }
    }

    impl Objects for Fake {
        fn word(&self, address: u64) -> Option<u64> {
            match address {
                a if a == SCRIPT + 8 => Some(SOURCE_WORD),
                a if a == SCRIPT + 16 => Some(self.line_ends_at.map_or(UNDEFINED, |at| at | 1)),
                _ => None,
            }
        }
        fn object(&self, tagged: u64) -> Option<(u64, u16)> {
            Some((tagged & !3, if tagged == UNDEFINED { 1 } else { 2 }))
        }
        fn string_prefix(&self, tagged: u64, limit: u64) -> Option<String> {
            assert_eq!(tagged, SOURCE_WORD);
            self.source_reads.set(self.source_reads.get() + 1);
            Some(self.source.chars().take(limit as usize).collect())
        }
        fn pid(&self) -> u32 {
            self.pid
        }
    }

    /// A script with no `line_ends` has its source read once for all its functions, not
    /// once a function (which made a large script's functions too slow to read).
    #[test]
    fn a_scripts_source_is_read_once() {
        let fake = Fake {
            pid: u32::MAX - 7,
            source: "a\nbb\r\ncc\rd\u{2028}e\n".repeat(1000),
            line_ends_at: None,
            source_reads: Cell::new(0),
        };
        let layout = layout();
        let first = of_script(&fake, &layout, SCRIPT).unwrap();
        assert_eq!(&first.ends[..5], &[1, 5, 8, 10, 12]);
        assert_eq!(first.ends.len(), 5000);
        assert!(first.covers(13_000) && !first.covers(13_001));
        for _ in 0..100 {
            assert_eq!(of_script(&fake, &layout, SCRIPT).unwrap(), first);
        }
        assert_eq!(fake.source_reads.get(), 1);
        assert_eq!(cached(fake.pid), 1);
        forget(fake.pid);
        assert_eq!(cached(fake.pid), 0);
        of_script(&fake, &layout, SCRIPT).unwrap();
        assert_eq!(fake.source_reads.get(), 2);
        forget(fake.pid);
    }
}
