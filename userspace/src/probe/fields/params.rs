//! Paths from a kernel function's pointer parameters: `sk->sk_ack_backlog` (one pointer
//! deep, [`operand::ARG_DEREF`]), `iocb->ki_filp->f_pos` (deeper, [`operand::ARG_PATH`]).

use tracekit_common::engine::{Operand, operand};

use super::{FieldRef, FunctionFields, path_ref, pointee_struct};

impl FunctionFields {
    /// A pointer parameter's index and the struct it points to (`sk`, `const struct sock *`:
    /// `sock`), for paths; `argN` too (cast it where the parameters are unknown or differ
    /// between the functions probed: `(struct kiocb *)arg0->ki_pos`).
    fn pointer_param(&self, name: &str) -> Option<(u32, Option<String>)> {
        if self.is_return {
            return None;
        }
        if let Some((index, 8, false)) = super::parse_arg(name) {
            let pointee = self
                .params
                .get(index as usize)
                .and_then(|p| pointee_struct(&p.c_type));
            return (index < 6).then_some((index, pointee));
        }
        let index = self.params.iter().position(|p| p.name == name)?;
        let param = &self.params[index];
        if index >= 6 || param.size != 8 || !param.c_type.ends_with('*') {
            return None;
        }
        Some((index as u32, pointee_struct(&param.c_type)))
    }

    /// `PARAM->MEMBER` (`sk->sk_ack_backlog`): an integer member of the struct a pointer
    /// parameter points to, read at the argument plus the member's offset in the running
    /// kernel's BTF ([`operand::ARG_DEREF`]); deeper paths (`iocb->ki_filp->f_pos`, up to 3
    /// pointers followed) read as [`operand::ARG_PATH`].
    pub(super) fn param_path(&self, name: &str) -> Option<std::result::Result<FieldRef, String>> {
        let path = path_ref(name, &|base| self.pointer_param(base))?;
        Some(path.and_then(|field| {
            let op = field.operand;
            if op.kind != operand::FIELD_PATH {
                return Err(format!(
                    "`{name}`: a kernel function's path starts at one of its pointer \
                     parameters"
                ));
            }
            let operand = if op.aux == 1 {
                Operand {
                    kind: operand::ARG_DEREF,
                    offset: op.offset,
                    aux: op.path[0],
                    size: op.size,
                    flags: op.flags,
                    ..Operand::NONE
                }
            } else {
                Operand {
                    kind: operand::ARG_PATH,
                    ..op
                }
            };
            Ok(FieldRef { operand, ..field })
        }))
    }
}
