//! Reading one V8 process's heap objects: words, objects with their instance types,
//! strings of every shape V8 keeps ([`super`]'s docs), `ScopeInfo` names.

use super::{Version, lines, read_memory, read_memory_prefix};

/// Longest string read (characters).
const MAX_STRING: u64 = 4096;
/// Cons and thin strings followed, at most, for one string.
const MAX_STRING_DEPTH: u32 = 8;

/// Reads the objects of one process.
pub(in crate::unwind::interp) struct Reader<'a> {
    pub(super) pid: u32,
    pub(super) v: &'a Version,
}

impl Reader<'_> {
    pub(super) fn word(&self, address: u64) -> Option<u64> {
        let bytes = read_memory(self.pid, address, 8)?;
        Some(u64::from_le_bytes(bytes.try_into().ok()?))
    }

    /// The field at `offset` of the heap object at untagged `object`.
    pub(super) fn field(&self, object: u64, offset: u16) -> Option<u64> {
        self.word(object + u64::from(offset))
    }

    /// The instance type of tagged pointer `tagged`'s object, and the object (untagged): its
    /// current copy when V8 moved it ([`current_copy`]).
    pub(super) fn object(&self, tagged: u64) -> Option<(u64, u16)> {
        if tagged & 3 != 1 {
            return None;
        }
        let (object, map) =
            current_copy(tagged & !3, self.v.object_map, |address| self.word(address))?;
        let bytes = read_memory(
            self.pid,
            (map & !3) + u64::from(self.v.map_instance_type),
            2,
        )?;
        Some((object, u16::from_le_bytes(bytes.try_into().ok()?)))
    }

    /// The string at tagged `tagged` (`None`: not a string, or one not read).
    pub(super) fn string(&self, tagged: u64, depth: u32) -> Option<String> {
        self.string_limited(tagged, depth, MAX_STRING)
    }

    /// The first `limit` characters (UTF-16 units) of the string at tagged `tagged`.
    pub(super) fn string_limited(&self, tagged: u64, depth: u32, limit: u64) -> Option<String> {
        let (object, kind) = self.object(tagged)?;
        let v = self.v;
        if kind >= v.first_nonstring_type || depth > MAX_STRING_DEPTH {
            return None;
        }
        let length = u64::from(
            read_memory(self.pid, object + u64::from(v.string_length), 4)
                .and_then(|b| Some(u32::from_le_bytes(b.try_into().ok()?)))?,
        )
        .min(limit);
        let one_byte = kind & v.encoding_mask == v.one_byte_tag;
        let representation = kind & v.representation_mask;
        if representation == v.seq_tag {
            return self.chars(object, one_byte, 0, length);
        }
        if let Some(external) = v.external
            && (kind == external.one_byte_type || kind == external.two_byte_type)
        {
            // The resource's data, cached after the resource (`kResourceDataOffset`);
            // uncached external strings have other instance types and are not read.
            let data = self.field(object, external.resource + 8)?;
            return (data != 0).then(|| self.chars_at(data, one_byte, length))?;
        }
        if representation == v.cons_tag {
            let first = self.string_limited(self.field(object, v.cons_first)?, depth + 1, limit)?;
            let units = first.chars().map(|c| c.len_utf16() as u64).sum::<u64>();
            if units >= limit {
                return Some(first);
            }
            let second =
                self.string_limited(self.field(object, v.cons_second)?, depth + 1, limit - units)?;
            return Some(first + &second);
        }
        if representation == v.thin_tag {
            return self.string_limited(self.field(object, v.thin_actual)?, depth + 1, limit);
        }
        if representation == v.sliced_tag {
            let (parent, parent_kind) = self.object(self.field(object, v.sliced_parent)?)?;
            let start = self.field(object, v.sliced_offset)? >> 32;
            if parent_kind & v.representation_mask != v.seq_tag {
                return None;
            }
            let one_byte = parent_kind & v.encoding_mask == v.one_byte_tag;
            return self.chars(parent, one_byte, start, length);
        }
        None
    }

    /// Characters `start..start + length` of the sequential string at untagged `object`.
    pub(super) fn chars(
        &self,
        object: u64,
        one_byte: bool,
        start: u64,
        length: u64,
    ) -> Option<String> {
        let at = if one_byte {
            object + u64::from(self.v.seq_one_byte_chars) + start
        } else {
            object + u64::from(self.v.seq_two_byte_chars) + 2 * start
        };
        self.chars_at(at, one_byte, length)
    }

    /// `length` characters at `at`, one byte (Latin-1) or two (UTF-16) each.
    pub(super) fn chars_at(&self, at: u64, one_byte: bool, length: u64) -> Option<String> {
        if one_byte {
            let bytes = read_memory(self.pid, at, length as usize)?;
            // Latin-1.
            return Some(bytes.iter().map(|&b| b as char).collect());
        }
        let bytes = read_memory(self.pid, at, 2 * length as usize)?;
        let units: Vec<u16> = bytes
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        Some(String::from_utf16_lossy(&units))
    }

    /// The slots after the map of `ScopeInfo` `object` (untagged): the first 16, or through
    /// the few after its context locals when it has more locals than that
    /// ([`lines::after_context_locals`]); fewer when its mapping ends before them (a
    /// small `ScopeInfo` at the end of V8's heap page: its function was named `(anonymous)`
    /// with no line before).
    pub(super) fn scope_info_slots(&self, object: u64) -> Option<Vec<u64>> {
        const SLOTS: u64 = 16;
        // A function with thousands of context locals keeps its name unread.
        const MAX_SLOTS: u64 = 4096;
        let read = |count: u64| -> Option<Vec<u64>> {
            let data = read_memory_prefix(self.pid, object + 8, 8 * count as usize)?;
            Some(
                data.chunks_exact(8)
                    .map(|word| u64::from_le_bytes(word.try_into().unwrap()))
                    .collect(),
            )
        };
        let slots = read(SLOTS)?;
        let wanted = self.after_context_locals(&slots).map(|after| after + 6);
        match wanted {
            Some(wanted) if wanted > SLOTS && slots.len() == SLOTS as usize => {
                read(wanted.min(MAX_SLOTS))
            }
            _ => Some(slots),
        }
    }

    /// [`lines::slots_after_context_locals`] of `ScopeInfo` slots `slots`.
    fn after_context_locals(&self, slots: &[u64]) -> Option<u64> {
        lines::slots_after_context_locals(
            slots,
            u64::from(self.v.scope_info_first_vars),
            u64::from(self.v.scope_info_context_locals),
        )
    }

    /// The function name in a `ScopeInfo` whose slots are `slots` ([`Self::scope_info_slots`]):
    /// the first string that is not empty among the few slots after its context locals:
    /// the function variable's name,
    /// else (an anonymous function: `""` there) the name V8 inferred from where the
    /// function was assigned (`Module._load` for `Module._load = function (...) {...}`),
    /// as V8's stack traces and `--cpu-prof` name it (`SharedFunctionInfo::DebugName`).
    pub(super) fn scope_info_name(&self, slots: &[u64]) -> Option<String> {
        let first = self.after_context_locals(slots)?;
        (first..first + 4).find_map(|i| {
            self.string(*slots.get(usize::try_from(i).ok()?)?, 0)
                .filter(|name| !name.is_empty())
        })
    }
}

/// The current copy of the heap object at untagged `object` and its map (tagged); `word`
/// reads a word of the process, `object_map` is the map word's offset. A scavenge copies a
/// young object elsewhere and leaves, in the old copy's map word, the new copy's untagged
/// address (`MapWord::FromForwardingAddress`, `heap/scavenger-inl.h`) until the pointers to
/// it are updated: a pointer read meanwhile (a young script source read while the
/// process collects) is followed there, once. `None`: neither a map nor a forwarding
/// address (not a heap object, or memory V8 reused).
pub(super) fn current_copy(
    object: u64,
    object_map: u16,
    word: impl Fn(u64) -> Option<u64>,
) -> Option<(u64, u64)> {
    let map = word(object + u64::from(object_map))?;
    if map & 3 == 1 {
        return Some((object, map));
    }
    // Heap objects are 8-byte aligned.
    if map & 7 != 0 || map == 0 {
        return None;
    }
    let moved = word(map + u64::from(object_map))?;
    (moved & 3 == 1).then_some((map, moved))
}

impl lines::Objects for Reader<'_> {
    fn word(&self, address: u64) -> Option<u64> {
        Reader::word(self, address)
    }

    fn object(&self, tagged: u64) -> Option<(u64, u16)> {
        Reader::object(self, tagged)
    }

    fn string_prefix(&self, tagged: u64, limit: u64) -> Option<String> {
        self.string_limited(tagged, 0, limit)
    }

    fn pid(&self) -> u32 {
        self.pid
    }
}
