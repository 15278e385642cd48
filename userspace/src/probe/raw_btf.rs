//! A small reader of raw BTF (the kernel's `/sys/kernel/btf/vmlinux`) for
//! [`crate::probe::btf_path`]: the bytes, read once, and where each type starts. Types are
//! decoded on demand; a struct is found by one scan of the type section comparing names.
//!
//! Why not btf-rs (kept for kernel-function parameters, [`crate::probe::functions`]): its
//! parse reads the file with a seek per type and builds name maps of every type, 0.13 s of
//! CPU and 40 MiB of peak memory for one `task->real_parent->tgid` (the startup of
//! `execsnoop`). This one costs one read of the file (6 MiB here)
//! and one pass over the ~150,000 types.
//!
//! Format: the kernel's `Documentation/bpf/btf.rst`. A header (magic `0xeb9f`), a type
//! section of `struct btf_type` (12 bytes: `name_off`, `info`, `size`/`type`) each followed
//! by its kind's extra data, and a string section. Type ids count from 1 in file order; 0 is
//! `void`.

/// The raw BTF of one object (the kernel's).
pub struct Btf {
    data: Vec<u8>,
    /// Where the string section starts in `data`, and its length.
    strings: (usize, usize),
    /// Where each type's `struct btf_type` starts in `data`; index 0 (void) is unused.
    starts: Vec<u32>,
}

/// One decoded type, enough for member paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Type {
    /// Id 0, or a kind paths do not look into (arrays, functions, floats, ...).
    Other,
    /// An integer of `size` bytes.
    Int {
        /// Width in bytes.
        size: u32,
        /// Whether BTF marks it signed.
        signed: bool,
    },
    /// A pointer to type `.0`.
    Ptr(u32),
    /// A struct (`union == false`) or union of `size` bytes with `vlen` members; the members
    /// are read with [`Btf::members`] on the type's id.
    Composite {
        /// Whether it is a union.
        union: bool,
        /// Size in bytes.
        size: u32,
    },
    /// An enum (32- or 64-bit) of `size` bytes.
    Enum {
        /// Width in bytes.
        size: u32,
    },
    /// A typedef, `const`, `volatile`, `restrict` or type tag of type `.0`.
    Alias(u32),
}

/// One member of a struct or union.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member<'a> {
    /// Its name; empty for an anonymous struct or union.
    pub name: &'a str,
    /// Its type's id.
    pub ty: u32,
    /// Offset from the start of the container, in bits.
    pub bit_offset: u32,
    /// Bitfield width in bits; 0 when it is not a bitfield.
    pub bitfield_size: u32,
}

const KIND_INT: u32 = 1;
const KIND_PTR: u32 = 2;
const KIND_STRUCT: u32 = 4;
const KIND_UNION: u32 = 5;
const KIND_ENUM: u32 = 6;
const KIND_ENUM64: u32 = 19;

impl Btf {
    /// Reads and indexes the BTF at `path`.
    ///
    /// # Errors
    /// The file cannot be read, or is not BTF or is cut short (named in the message).
    pub fn from_file(path: &str) -> Result<Btf, String> {
        let data = std::fs::read(path).map_err(|e| format!("reading {path}: {e}"))?;
        Btf::parse(data).map_err(|e| format!("{path}: {e}"))
    }

    /// Indexes raw BTF `data` (little-endian, as the kernel writes it on x86_64).
    ///
    /// # Errors
    /// Not BTF (no magic `0xeb9f`), or a section or a type past the end of `data`.
    pub fn parse(data: Vec<u8>) -> Result<Btf, String> {
        let word = |at: usize| word_at(&data, at).ok_or("the BTF is cut short");
        if data.get(0..2) != Some(&[0x9f, 0xeb]) {
            return Err("not BTF (no magic 0xeb9f)".into());
        }
        let header = word(4)? as usize;
        let types = header + word(8)? as usize;
        let types_end = types + word(12)? as usize;
        let strings = (header + word(16)? as usize, word(20)? as usize);
        if types_end > data.len() || strings.0 + strings.1 > data.len() {
            return Err("a section runs past the end of the BTF".into());
        }
        let mut starts = vec![0u32];
        let mut at = types;
        while at < types_end {
            let info = word(at + 4)?;
            let vlen = (info & 0xffff) as usize;
            let extra = match (info >> 24) & 0x1f {
                1 | 14 | 17 => 4,             // int encoding, var linkage, decl tag index
                3 => 12,                      // array
                4 | 5 | 15 | 19 => vlen * 12, // members, datasec entries, enum64 values
                6 | 13 => vlen * 8,           // enum values, function parameters
                _ => 0,
            };
            starts.push(u32::try_from(at).map_err(|_| "the BTF is over 4 GiB")?);
            at += 12 + extra;
        }
        if at != types_end {
            return Err("the last type runs past the type section".into());
        }
        Ok(Btf {
            data,
            strings,
            starts,
        })
    }

    /// How many types there are, void included (ids `0..len()`).
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// Whether only void is there.
    pub fn is_empty(&self) -> bool {
        self.starts.len() <= 1
    }

    fn word(&self, at: usize) -> u32 {
        word_at(&self.data, at).unwrap_or(0)
    }

    /// The string at `offset` of the string section; empty when out of range or not UTF-8.
    fn string(&self, offset: u32) -> &str {
        let (start, len) = self.strings;
        let Some(rest) = self.data.get(start + offset as usize..start + len) else {
            return "";
        };
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        std::str::from_utf8(&rest[..end]).unwrap_or("")
    }

    /// `(start, info, size_or_type)` of type `id`, `None` for void or an unknown id.
    fn header(&self, id: u32) -> Option<(usize, u32, u32)> {
        let start = *self.starts.get(id as usize).filter(|_| id != 0)? as usize;
        Some((start, self.word(start + 4), self.word(start + 8)))
    }

    /// Type `id`'s name; empty for void, an anonymous type or an unknown id.
    pub fn name(&self, id: u32) -> &str {
        match self.starts.get(id as usize) {
            Some(&start) if id != 0 => self.string(self.word(start as usize)),
            _ => "",
        }
    }

    /// Type `id`, decoded; [`Type::Other`] for void and unknown ids.
    pub fn get(&self, id: u32) -> Type {
        let Some((start, info, size_or_type)) = self.header(id) else {
            return Type::Other;
        };
        match (info >> 24) & 0x1f {
            KIND_INT => Type::Int {
                size: size_or_type,
                signed: (self.word(start + 12) >> 24) & 1 != 0,
            },
            KIND_PTR => Type::Ptr(size_or_type),
            KIND_STRUCT | KIND_UNION => Type::Composite {
                union: (info >> 24) & 0x1f == KIND_UNION,
                size: size_or_type,
            },
            KIND_ENUM | KIND_ENUM64 => Type::Enum { size: size_or_type },
            8..=11 | 18 => Type::Alias(size_or_type),
            _ => Type::Other,
        }
    }

    /// Type `id` through typedefs and qualifiers: the id of the type they name.
    pub fn strip(&self, mut id: u32) -> u32 {
        for _ in 0..32 {
            match self.get(id) {
                Type::Alias(inner) => id = inner,
                _ => return id,
            }
        }
        id
    }

    /// The members of struct or union `id`, in order; none for any other type.
    pub fn members(&self, id: u32) -> impl Iterator<Item = Member<'_>> + '_ {
        let (start, info) = match self.header(id) {
            Some((start, info, _)) if matches!((info >> 24) & 0x1f, KIND_STRUCT | KIND_UNION) => {
                (start, info)
            }
            _ => (0, 0),
        };
        let bitfields = info >> 31 != 0;
        (0..(info & 0xffff) as usize).map(move |i| {
            let at = start + 12 + i * 12;
            let offset = self.word(at + 8);
            let (bit_offset, bitfield_size) = if bitfields {
                (offset & 0xff_ffff, offset >> 24)
            } else {
                (offset, 0)
            };
            Member {
                name: self.string(self.word(at)),
                ty: self.word(at + 4),
                bit_offset,
                bitfield_size,
            }
        })
    }

    /// The first struct or union named `name`, by id.
    pub fn composite_named(&self, name: &str) -> Option<u32> {
        (1..self.starts.len() as u32).find(|&id| {
            let start = self.starts[id as usize] as usize;
            matches!(
                (self.word(start + 4) >> 24) & 0x1f,
                KIND_STRUCT | KIND_UNION
            ) && self.string(self.word(start)) == name
        })
    }
}

fn word_at(data: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(data.get(at..at + 4)?.try_into().ok()?))
}

/// Raw BTF written type by type, for tests: [`Builder::finish`] gives the bytes.
#[cfg(test)]
pub(crate) mod builder {
    /// Types and strings of a BTF blob under construction.
    #[derive(Default)]
    pub struct Builder {
        types: Vec<u8>,
        strings: Vec<u8>,
        next: u32,
    }

    impl Builder {
        pub fn new() -> Builder {
            Builder {
                types: Vec::new(),
                strings: vec![0],
                next: 1,
            }
        }

        fn name(&mut self, name: &str) -> u32 {
            if name.is_empty() {
                return 0;
            }
            let at = self.strings.len() as u32;
            self.strings.extend_from_slice(name.as_bytes());
            self.strings.push(0);
            at
        }

        /// A type: name, kind, kind_flag, vlen, size or type, and its extra words.
        fn push(
            &mut self,
            name: &str,
            kind: u32,
            flag: bool,
            vlen: u32,
            st: u32,
            extra: &[u32],
        ) -> u32 {
            let name = self.name(name);
            let info = vlen | kind << 24 | u32::from(flag) << 31;
            for w in [name, info, st].iter().chain(extra) {
                self.types.extend_from_slice(&w.to_le_bytes());
            }
            self.next += 1;
            self.next - 1
        }

        pub fn int(&mut self, name: &str, size: u32, signed: bool) -> u32 {
            self.push(
                name,
                1,
                false,
                0,
                size,
                &[(u32::from(signed) << 24) | (size * 8)],
            )
        }

        pub fn ptr(&mut self, to: u32) -> u32 {
            self.push("", 2, false, 0, to, &[])
        }

        pub fn typedef(&mut self, name: &str, to: u32) -> u32 {
            self.push(name, 8, false, 0, to, &[])
        }

        pub fn array(&mut self, of: u32, index: u32, n: u32) -> u32 {
            self.push("", 3, false, 0, 0, &[of, index, n])
        }

        /// A struct (or union) whose members are (name, type, bit offset, bitfield bits).
        pub fn composite(
            &mut self,
            union: bool,
            name: &str,
            size: u32,
            members: &[(&str, u32, u32, u32)],
        ) -> u32 {
            let bitfields = members.iter().any(|m| m.3 != 0);
            let mut extra = Vec::new();
            for &(member, ty, bits, width) in members {
                extra.push(self.name(member));
                extra.push(ty);
                extra.push(if bitfields { bits | width << 24 } else { bits });
            }
            let kind = if union { 5 } else { 4 };
            self.push(name, kind, bitfields, members.len() as u32, size, &extra)
        }

        pub fn finish(self) -> Vec<u8> {
            let mut out = Vec::new();
            let words = [
                0xeb9f_u32 | 1 << 16, // magic, version 1, flags 0
                24,
                0,
                self.types.len() as u32,
                self.types.len() as u32,
                self.strings.len() as u32,
            ];
            out.extend_from_slice(&0xeb9f_u16.to_le_bytes());
            out.extend_from_slice(&[1, 0]);
            for w in &words[1..] {
                out.extend_from_slice(&w.to_le_bytes());
            }
            out.extend_from_slice(&self.types);
            out.extend_from_slice(&self.strings);
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::builder::Builder;
    use super::*;

    #[test]
    fn types_and_members_decode_exactly() {
        let mut b = Builder::new();
        let int = b.int("int", 4, true);
        let u16_ = b.int("unsigned short", 2, false);
        let pid_t = b.typedef("pid_t", int);
        let arr = b.array(int, int, 4);
        let inner = b.composite(false, "", 4, &[("lo", u16_, 0, 0), ("hi", u16_, 16, 0)]);
        let task = b.composite(
            false,
            "task_struct",
            64,
            &[
                ("tgid", pid_t, 0, 0),
                ("", inner, 32, 0),
                ("flags", int, 64, 3),
                ("v", arr, 128, 0),
            ],
        );
        let ptr = b.ptr(task);
        let btf = Btf::parse(b.finish()).unwrap();
        assert_eq!(btf.len(), 8);
        assert_eq!(
            btf.get(int),
            Type::Int {
                size: 4,
                signed: true
            }
        );
        assert_eq!(
            btf.get(u16_),
            Type::Int {
                size: 2,
                signed: false
            }
        );
        assert_eq!(btf.get(pid_t), Type::Alias(int));
        assert_eq!(btf.strip(pid_t), int);
        assert_eq!(btf.get(arr), Type::Other);
        assert_eq!(btf.get(ptr), Type::Ptr(task));
        assert_eq!(btf.get(0), Type::Other);
        assert_eq!(btf.get(99), Type::Other);
        assert_eq!(
            btf.get(task),
            Type::Composite {
                union: false,
                size: 64
            }
        );
        assert_eq!(
            (btf.name(task), btf.name(inner), btf.name(0)),
            ("task_struct", "", "")
        );
        assert_eq!(btf.composite_named("task_struct"), Some(task));
        assert_eq!(btf.composite_named("int"), None, "an int is no struct");
        let members: Vec<_> = btf.members(task).collect();
        assert_eq!(
            members,
            [
                Member {
                    name: "tgid",
                    ty: pid_t,
                    bit_offset: 0,
                    bitfield_size: 0
                },
                Member {
                    name: "",
                    ty: inner,
                    bit_offset: 32,
                    bitfield_size: 0
                },
                Member {
                    name: "flags",
                    ty: int,
                    bit_offset: 64,
                    bitfield_size: 3
                },
                Member {
                    name: "v",
                    ty: arr,
                    bit_offset: 128,
                    bitfield_size: 0
                },
            ]
        );
        assert_eq!(btf.members(int).count(), 0);
    }

    #[test]
    fn bad_btf_is_named() {
        assert_eq!(
            Btf::parse(vec![1, 2, 3]).err().as_deref(),
            Some("not BTF (no magic 0xeb9f)")
        );
        let mut data = Builder::new();
        data.int("int", 4, true);
        let mut data = data.finish();
        data.truncate(30);
        assert_eq!(
            Btf::parse(data).err().as_deref(),
            Some("a section runs past the end of the BTF")
        );
    }

    /// Against this machine's kernel: every member of structs the tools read agrees with
    /// btf-rs's full parse (name, offset, bitfield width, type id).
    #[test]
    fn kernel_btf_agrees_with_btf_rs() {
        let Ok(raw) = Btf::from_file("/sys/kernel/btf/vmlinux") else {
            eprintln!("skipped: no /sys/kernel/btf/vmlinux");
            return;
        };
        let full = btf_rs::Btf::from_file("/sys/kernel/btf/vmlinux").unwrap();
        for name in [
            "task_struct",
            "sock_common",
            "sock",
            "file",
            "fdtable",
            "cfs_rq",
        ] {
            let id = raw.composite_named(name).unwrap();
            let found = full
                .resolve_types_by_name(name)
                .unwrap()
                .into_iter()
                .find_map(|t| match t {
                    btf_rs::Type::Struct(s) | btf_rs::Type::Union(s) => Some(s),
                    _ => None,
                })
                .unwrap();
            assert_eq!(raw.members(id).count(), found.members.len(), "{name}");
            for (m, theirs) in raw.members(id).zip(&found.members) {
                use btf_rs::BtfType as _;
                let their_name = full.resolve_name(theirs).unwrap_or_default();
                assert_eq!(m.name, their_name, "{name}");
                assert_eq!(m.bit_offset, theirs.bit_offset(), "{name}.{}", m.name);
                assert_eq!(
                    m.bitfield_size,
                    theirs.bitfield_size().unwrap_or(0),
                    "{name}.{}",
                    m.name
                );
                assert_eq!(Some(m.ty), theirs.get_type_id(), "{name}.{}", m.name);
            }
        }
    }
}
