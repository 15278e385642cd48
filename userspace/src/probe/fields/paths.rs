//! Fields reached through BTF paths ([`crate::probe::btf_path`]) as operands: from the
//! current task, a record's pointer field, or the socket or file at a
//! descriptor field (`sock(ret)->...`, [`operand::FD_PATH`]).

use tracekit_common::engine::{FD_INT32, Operand, PATH_BYTES, SIGNED, operand};

use super::{FieldRef, Hint, ValueType};

/// Why a path cannot be read on a kernel without BTF: a runtime error (exit 1), the others
/// are usage errors.
pub const NO_BTF: &str =
    "paths need the kernel's BTF (/sys/kernel/btf/vmlinux), which this kernel does not have";

/// A pointer field of a record by name: its offset and the struct its C type points to.
pub type PointerField<'a> = dyn Fn(&str) -> Option<(u32, Option<String>)> + 'a;

/// A field reached through BTF ([`crate::probe::btf_path`]): `task->...` from the current
/// task, `(struct NAME *)FIELD->...` from a record's pointer field. `pointer` gives a
/// pointer field's record offset and the struct its C type points to (`struct sock *`:
/// `sock`). `None` when `name` is no path.
pub fn path_ref(
    name: &str,
    pointer: &PointerField<'_>,
) -> Option<std::result::Result<FieldRef, String>> {
    path_ref_in(name, pointer, &|_| None)
}

/// An integer field of a record by name, of 8 bytes (`ret` of `syscalls:sys_exit_accept4`)
/// or 4 and signed (`res` of `io_uring:io_uring_complete`): its offset and width (the
/// descriptor of `sock(FIELD)` and `file(FIELD)` paths).
pub type FdField<'a> = dyn Fn(&str) -> Option<(u32, u32)> + 'a;

/// [`path_ref`] where `fd_field` finds the descriptor fields of `sock(FIELD)` and
/// `file(FIELD)` bases ([`operand::FD_PATH`]).
pub fn path_ref_in(
    name: &str,
    pointer: &PointerField<'_>,
    fd_field: &FdField<'_>,
) -> Option<std::result::Result<FieldRef, String>> {
    use crate::probe::btf_path;
    let expr = match btf_path::parse(name)? {
        Ok(expr) => expr,
        Err(e) => return Some(Err(e)),
    };
    Some((|| {
        if let Some((what, field)) = btf_path::fd_base(&expr.base) {
            let (offset, width) = fd_field(field).ok_or_else(|| {
                format!(
                    "`{field}` is not an 8-byte or 4-byte signed integer field of this event; \
                     {what}(FIELD) takes a descriptor (`ret` of syscalls:sys_exit_accept4)"
                )
            })?;
            let btf = btf_path::kernel_btf().ok_or_else(|| NO_BTF.to_string())?;
            let (files_fdt, fd_max, start, mut path) = btf_path::fd_walk(btf, what)?;
            let start = expr.cast.clone().unwrap_or_else(|| start.to_string());
            let resolved = btf_path::resolve(btf, &start, &expr.steps)?;
            path.extend_from_slice(&resolved.path);
            if path.len() > tracekit_common::engine::MAX_PATH {
                return Err(format!(
                    "`{name}` follows {} pointers with the descriptor's own; at most {} are \
                     followed",
                    path.len() - 1,
                    tracekit_common::engine::MAX_PATH - 1
                ));
            }
            let mut field = path_field(&expr, &resolved, operand::FD_PATH, offset, &path);
            field.operand.index_offset = files_fdt;
            field.operand.index_shift = fd_max;
            // A 4-byte descriptor is read as such and sign-extended (-EAGAIN reads as 0).
            if width == 4 {
                field.operand.flags |= FD_INT32;
            }
            return Ok(field);
        }
        let (kind, offset, start) = match (&expr.cast, pointer(&expr.base)) {
            (None, _) if expr.base == "task" => (operand::TASK_PATH, 0, "task_struct".to_string()),
            (Some(cast), Some((offset, _))) => (operand::FIELD_PATH, offset, cast.clone()),
            (None, Some((offset, Some(pointee)))) => (operand::FIELD_PATH, offset, pointee),
            (None, Some((_, None))) => {
                return Err(format!(
                    "`{}` points to no struct type; cast it: (struct NAME *){}->...",
                    expr.base, expr.base
                ));
            }
            (_, None) => {
                return Err(format!(
                    "`{}` is not a pointer field of this event; a path starts at `task` (the \
                     current task) or at a pointer field",
                    expr.base
                ));
            }
        };
        let btf = btf_path::kernel_btf().ok_or_else(|| NO_BTF.to_string())?;
        let resolved = btf_path::resolve(btf, &start, &expr.steps)?;
        Ok(path_field(&expr, &resolved, kind, offset, &resolved.path))
    })())
}

/// The operand of a resolved path: `kind` from `offset`, through `path`'s offsets.
fn path_field(
    expr: &crate::probe::btf_path::PathExpr,
    resolved: &crate::probe::btf_path::Resolved,
    kind: u32,
    offset: u32,
    offsets: &[u32],
) -> FieldRef {
    use crate::probe::btf_path;
    let last = match expr.steps.last() {
        Some(btf_path::Step::Arrow(name) | btf_path::Step::Dot(name)) => name.as_str(),
        None => "",
    };
    let mut path = [0; tracekit_common::engine::MAX_PATH];
    path[..offsets.len()].copy_from_slice(offsets);
    let operand = Operand {
        kind,
        offset,
        size: resolved.size,
        flags: if resolved.signed { SIGNED } else { 0 },
        aux: offsets.len() as u32,
        path,
        ..Operand::NONE
    };
    if resolved.bytes {
        // Raw bytes: a 16-byte member named for an address (`skc_v6_daddr`: struct
        // in6_addr) is shown as IPv6 (IPv4 when IPv4-mapped).
        let hint = if resolved.size == 16 && last.contains("addr") {
            Hint::Ip
        } else {
            Hint::Plain
        };
        return FieldRef::new(
            Operand {
                flags: PATH_BYTES,
                ..operand
            },
            ValueType::Str,
        )
        .hinted(hint);
    }
    // A 4-byte member named for an address (`skc_daddr`, `skc_rcv_saddr`: __be32) is shown
    // as IPv4, as the tracepoints' 4-byte address fields are.
    // A 2-byte member named for a port (`sin_port`, `skc_dport`: __be16) is in network byte
    // order (`skc_num` is not, and is not matched).
    let hint = if resolved.size == 4 && !resolved.signed && last.contains("addr") {
        Hint::Ipv4
    } else if resolved.size == 2
        && ["_port", "dport", "sport"]
            .iter()
            .any(|p| last.ends_with(p))
    {
        Hint::NetPort
    } else if resolved.size == 4 && last == "skc_portpair" {
        Hint::PortPair
    } else {
        Hint::Plain
    };
    FieldRef::new(
        operand,
        ValueType::Int {
            signed: resolved.signed,
        },
    )
    .hinted(hint)
}
