//! The unwinder's maps in the kernel (`UNWIND_SHARDS`, `UNWIND_MAPPINGS`, `UNWIND_PROCESSES`,
//! `UNWIND_STATS`; layout in [`tracekit_common::unwind`]): rows copied into memory-mapped
//! shards created on demand, per-process mapping ranges, and the walk's counters.

use std::{
    collections::BTreeMap,
    os::fd::{AsFd as _, AsRawFd as _, BorrowedFd, FromRawFd as _, OwnedFd},
    ptr::NonNull,
    sync::OnceLock,
};

use aya::{
    Ebpf,
    maps::{Array, ArrayOfMaps, HashMap as BpfHashMap, MapData, PerCpuArray},
};
use aya_obj::generated::{BPF_F_MMAPABLE, bpf_attr, bpf_cmd, bpf_map_type};
use tracekit_common::unwind::{
    MAX_MAPPINGS, MAX_PROCESSES, MAX_SHARDS, Mapping, ProcessMappings, SHARD_ROWS,
    UNWIND_STAT_COUNT, UnwindRow, UnwindStat,
};

use crate::{Error, Result, bpf::names::unwind as names, error::Context as _};

/// Bytes of kernel memory one shard holds.
pub const SHARD_BYTES: u64 = SHARD_ROWS as u64 * size_of::<UnwindRow>() as u64;

/// Kernel memory of the maps that exist whatever is loaded: the mapping array, the process
/// hash map (key, value and the kernel's ~48-byte element header), in bytes.
pub const FIXED_BYTES: u64 = MAX_MAPPINGS as u64 * size_of::<Mapping>() as u64
    + MAX_PROCESSES as u64 * (4 + 4 + size_of::<ProcessMappings>() as u64 + 48);

/// One shard: its map, and a writable view of its rows.
struct Shard {
    _map: MapData,
    rows: NonNull<UnwindRow>,
}

// SAFETY: the rows are a private mapping this Shard alone owns and writes (through &mut
// self); moving it to another thread moves that ownership with it.
unsafe impl Send for Shard {}

impl Drop for Shard {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what Shard::create mapped.
        unsafe { libc::munmap(self.rows.as_ptr().cast(), SHARD_BYTES as usize) };
    }
}

/// BTF for a shard's key and value (`u32`, and an 8-byte struct), loaded once. The kernel
/// lets a map into an array of maps only if it matches the template the loader created from
/// the object's BTF; before 6.2 the match includes offsets found by parsing the value's BTF
/// type (`timer_off`), which differ between a map with a struct value type and one without
/// BTF. `None` when the kernel takes no BTF.
fn shard_btf() -> Option<BorrowedFd<'static>> {
    static BTF: OnceLock<Option<OwnedFd>> = OnceLock::new();
    BTF.get_or_init(|| {
        let strings = b"\0u32\0u64\0tk_unwind_row\0bits\0";
        let words: [u32; 14] = [
            // [1] INT u32: name, kind INT, size 4, 32 bits.
            1,
            1 << 24,
            4,
            32,
            // [2] INT u64.
            5,
            1 << 24,
            8,
            64,
            // [3] STRUCT tk_unwind_row, one member, size 8.
            9,
            (4 << 24) | 1,
            8,
            // member "bits": u64 at bit 0.
            23,
            2,
            0,
        ];
        let types: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let mut blob = Vec::new();
        blob.extend_from_slice(&0xeb9f_u16.to_le_bytes());
        blob.extend_from_slice(&[1, 0]);
        for word in [
            24u32,
            0,
            types.len() as u32,
            types.len() as u32,
            strings.len() as u32,
        ] {
            blob.extend_from_slice(&word.to_le_bytes());
        }
        blob.extend_from_slice(&types);
        blob.extend_from_slice(strings);
        // SAFETY: an all-zero bpf_attr is valid; the fields set are BPF_BTF_LOAD's.
        let mut attr: bpf_attr = unsafe { std::mem::zeroed() };
        // SAFETY: the union's BPF_BTF_LOAD member; every bit pattern of it is valid.
        let load = unsafe { &mut attr.__bindgen_anon_7 };
        load.btf = blob.as_ptr() as u64;
        load.btf_size = blob.len() as u32;
        match crate::bpf::sys_bpf(bpf_cmd::BPF_BTF_LOAD, &mut attr) {
            // SAFETY: BPF_BTF_LOAD returns a new fd this process owns.
            Ok(fd) => Some(unsafe { OwnedFd::from_raw_fd(fd as i32) }),
            Err(err) => {
                log::debug!("loading the unwind shards' BTF: {err}");
                None
            }
        }
    })
    .as_ref()
    .map(|fd| fd.as_fd())
}

/// Creates one shard's map: an mmapable array of `SHARD_ROWS` rows, typed by
/// [`shard_btf`] when there is one.
fn create_shard_map() -> Result<MapData> {
    // SAFETY: an all-zero bpf_attr is valid; the fields set are BPF_MAP_CREATE's.
    let mut attr: bpf_attr = unsafe { std::mem::zeroed() };
    // SAFETY: the union's BPF_MAP_CREATE member; every bit pattern of it is valid.
    let create = unsafe { &mut attr.__bindgen_anon_1 };
    create.map_type = bpf_map_type::BPF_MAP_TYPE_ARRAY as u32;
    create.key_size = size_of::<u32>() as u32;
    create.value_size = size_of::<UnwindRow>() as u32;
    create.max_entries = SHARD_ROWS;
    create.map_flags = BPF_F_MMAPABLE;
    for (slot, byte) in create.map_name.iter_mut().zip(b"tk_unwind_rows") {
        *slot = *byte as std::ffi::c_char;
    }
    if let Some(btf) = shard_btf() {
        create.btf_fd = btf.as_raw_fd() as u32;
        create.btf_key_type_id = 1;
        create.btf_value_type_id = 3;
    }
    let fd = crate::bpf::sys_bpf(bpf_cmd::BPF_MAP_CREATE, &mut attr)
        .context("creating an unwind table shard")?;
    // SAFETY: BPF_MAP_CREATE returns a new fd this process owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    MapData::from_fd(fd).context("opening an unwind table shard")
}

impl Shard {
    fn create() -> Result<Self> {
        let map = create_shard_map()?;
        // SAFETY: mmap(2) of a BPF_F_MMAPABLE array's fd, its exact size, shared.
        let address = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                SHARD_BYTES as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                map.fd().as_fd().as_raw_fd(),
                0,
            )
        };
        if address == libc::MAP_FAILED {
            return Err(Error::runtime(format!(
                "mapping an unwind table shard into memory: {}",
                std::io::Error::last_os_error()
            )));
        }
        Ok(Self {
            _map: map,
            rows: NonNull::new(address.cast()).expect("mmap returned a mapping"),
        })
    }

    fn write(&mut self, slot: usize, rows: &[UnwindRow]) {
        assert!(slot + rows.len() <= SHARD_ROWS as usize);
        // SAFETY: the mapping is SHARD_ROWS rows long and only this process writes it; the
        // kernel reads rows only after userspace publishes their range.
        unsafe {
            std::ptr::copy_nonoverlapping(rows.as_ptr(), self.rows.as_ptr().add(slot), rows.len())
        };
    }
}

/// The counters of the kernel walk, summed over CPUs. See [`UnwindStat`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct WalkStats {
    pub stacks: u64,
    pub complete: u64,
    pub truncated: u64,
    pub no_process: u64,
    pub dwarf_frames: u64,
    pub no_table_frames: u64,
    pub no_mapping_frames: u64,
    pub unsupported_frames: u64,
    pub read_errors: u64,
    pub in_exec: u64,
}

/// First-fit allocator of ranges of `UNWIND_MAPPINGS` slots.
#[derive(Debug)]
pub struct RangeAllocator {
    /// Free ranges, start to length, never adjacent.
    free: BTreeMap<u32, u32>,
}

impl RangeAllocator {
    /// All of `0..len` free.
    pub fn new(len: u32) -> Self {
        Self {
            free: BTreeMap::from([(0, len)]),
        }
    }

    /// The start of `len` free slots, now taken.
    pub fn allocate(&mut self, len: u32) -> Option<u32> {
        let (&start, &free) = self.free.iter().find(|&(_, &free)| free >= len)?;
        self.free.remove(&start);
        if free > len {
            self.free.insert(start + len, free - len);
        }
        Some(start)
    }

    /// Gives back `start..start + len`.
    pub fn release(&mut self, start: u32, len: u32) {
        let (mut start, mut len) = (start, len);
        if let Some((&before, &before_len)) = self.free.range(..start).next_back()
            && before + before_len == start
        {
            self.free.remove(&before);
            start = before;
            len += before_len;
        }
        if let Some(&after_len) = self.free.get(&(start + len)) {
            self.free.remove(&(start + len));
            len += after_len;
        }
        self.free.insert(start, len);
    }
}

/// The unwinder's maps of one loaded BPF object.
pub struct KernelTables {
    shards: ArrayOfMaps<MapData>,
    shard_maps: Vec<Shard>,
    mappings: Array<MapData, Mapping>,
    processes: BpfHashMap<MapData, u32, ProcessMappings>,
    stats: PerCpuArray<MapData, u64>,
    /// The interpreter unwinders' maps, when the object has them.
    pub interp: Option<crate::unwind::interp::Interpreters>,
    /// Rows handed out so far, in the global row index space.
    next_row: u64,
    slots: RangeAllocator,
}

impl KernelTables {
    /// Takes the unwinder's maps out of `ebpf`.
    pub fn take(ebpf: &mut Ebpf) -> Result<Self> {
        let mut take = |name: &str| {
            ebpf.take_map(name)
                .ok_or_else(|| Error::runtime(format!("the BPF object has no {name} map")))
        };
        Ok(Self {
            shards: ArrayOfMaps::try_from(take(names::SHARDS)?).context("opening UNWIND_SHARDS")?,
            mappings: Array::try_from(take(names::MAPPINGS)?).context("opening UNWIND_MAPPINGS")?,
            processes: BpfHashMap::try_from(take(names::PROCESSES)?)
                .context("opening UNWIND_PROCESSES")?,
            stats: PerCpuArray::try_from(take(names::STATS)?).context("opening UNWIND_STATS")?,
            interp: crate::unwind::interp::Interpreters::take(ebpf),
            shard_maps: Vec::new(),
            next_row: 0,
            slots: RangeAllocator::new(MAX_MAPPINGS),
        })
    }

    /// Rows loaded so far.
    pub fn rows(&self) -> u64 {
        self.next_row
    }

    /// Kernel memory of the shards created so far, in bytes.
    pub fn shard_bytes(&self) -> u64 {
        self.shard_maps.len() as u64 * SHARD_BYTES
    }

    /// Kernel memory the shards would take with `more` rows loaded, in bytes.
    pub fn shard_bytes_with(&self, more: u64) -> u64 {
        (self.next_row + more).div_ceil(u64::from(SHARD_ROWS)) * SHARD_BYTES
    }

    /// Loads a binary's rows; returns the first one's global index.
    pub fn add_rows(&mut self, rows: &[UnwindRow]) -> Result<u32> {
        let first = self.next_row;
        let end = first + rows.len() as u64;
        if end > u64::from(MAX_SHARDS) * u64::from(SHARD_ROWS) {
            return Err(Error::runtime("the unwind table shards are all used"));
        }
        let mut index = first;
        let mut rest = rows;
        while !rest.is_empty() {
            let shard = (index / u64::from(SHARD_ROWS)) as usize;
            let slot = (index % u64::from(SHARD_ROWS)) as usize;
            while self.shard_maps.len() <= shard {
                let created = Shard::create()?;
                self.shards
                    .set(self.shard_maps.len() as u32, &created._map, 0)
                    .context("adding a shard to UNWIND_SHARDS")?;
                self.shard_maps.push(created);
            }
            let count = rest.len().min(SHARD_ROWS as usize - slot);
            self.shard_maps[shard].write(slot, &rest[..count]);
            rest = &rest[count..];
            index += count as u64;
        }
        self.next_row = end;
        Ok(first as u32)
    }

    /// Publishes `mappings` (sorted, not overlapping) as process `pid`'s; returns the range
    /// the process had before, to release with [`KernelTables::release`] once no sample can
    /// be reading it.
    pub fn set_process(
        &mut self,
        pid: u32,
        mappings: &[Mapping],
    ) -> Result<Option<ProcessMappings>> {
        let count = mappings.len() as u32;
        let first = self
            .slots
            .allocate(count)
            .ok_or_else(|| Error::runtime("the mapping table is full"))?;
        for (i, mapping) in mappings.iter().enumerate() {
            self.mappings
                .set(first + i as u32, mapping, 0)
                .context("writing UNWIND_MAPPINGS")?;
        }
        let old = self.processes.get(&pid, 0).ok();
        if let Err(err) = self
            .processes
            .insert(pid, ProcessMappings { first, count }, 0)
        {
            self.slots.release(first, count);
            return Err(Error::runtime(format!(
                "adding pid {pid} to UNWIND_PROCESSES: {err}"
            )));
        }
        Ok(old)
    }

    /// Forgets process `pid`; returns its range.
    pub fn remove_process(&mut self, pid: u32) -> Option<ProcessMappings> {
        let old = self.processes.get(&pid, 0).ok();
        let _ = self.processes.remove(&pid);
        old
    }

    /// Frees a range of the mapping table.
    pub fn release(&mut self, range: ProcessMappings) {
        if range.count > 0 {
            self.slots.release(range.first, range.count);
        }
    }

    /// The walk's counters, summed over CPUs.
    pub fn walk_stats(&self) -> Result<WalkStats> {
        let mut counters = [0u64; UNWIND_STAT_COUNT as usize];
        for (index, counter) in counters.iter_mut().enumerate() {
            *counter = self
                .stats
                .get(&(index as u32), 0)
                .context("reading UNWIND_STATS")?
                .iter()
                .sum();
        }
        Ok(WalkStats {
            stacks: counters[UnwindStat::Stacks as usize],
            complete: counters[UnwindStat::Complete as usize],
            truncated: counters[UnwindStat::Truncated as usize],
            no_process: counters[UnwindStat::NoProcess as usize],
            dwarf_frames: counters[UnwindStat::DwarfFrames as usize],
            no_table_frames: counters[UnwindStat::NoTableFrames as usize],
            no_mapping_frames: counters[UnwindStat::NoMappingFrames as usize],
            unsupported_frames: counters[UnwindStat::UnsupportedFrames as usize],
            read_errors: counters[UnwindStat::ReadErrors as usize],
            in_exec: counters[UnwindStat::InExec as usize],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_reused_and_merged() {
        let mut slots = RangeAllocator::new(100);
        assert_eq!(slots.allocate(30), Some(0));
        assert_eq!(slots.allocate(30), Some(30));
        assert_eq!(slots.allocate(30), Some(60));
        assert_eq!(slots.allocate(30), None);
        slots.release(0, 30);
        assert_eq!(slots.allocate(20), Some(0));
        slots.release(30, 30);
        // 20..60 is free again, in one piece.
        assert_eq!(slots.allocate(40), Some(20));
        slots.release(60, 30);
        slots.release(20, 40);
        slots.release(0, 20);
        assert_eq!(slots.free, BTreeMap::from([(0, 100)]));
    }
}
