//! `str(PATH)` and `str(PATH, N)`: the kernel string a BTF path's last `char *` points to
//! (`str(iocb->ki_filp->f_path.dentry->d_name.name)`), read by the kernel engine as
//! [`operand::PATH_STR`]. `N` (1 to [`STR_MAX`], default [`STR_BYTES`] in aggregates and
//! start stages, the whole name in `trace`) caps the bytes read, the NUL included (group
//! keys and filters see the first [`STR_BYTES`]): a start stage saves a string of 32 bytes
//! beside two numbers
//! (`start.str(PATH)` with `start.iocb->ki_pos`), one of at most 16 beside four.

use tracekit_common::engine::{MAX_PATH, Operand, PTR_FROM_ARG, STR_BYTES, STR_MAX, operand};

use super::{FieldRef, FunctionFields, ValueType, parse_arg};

/// `str(INNER)` or `str(INNER, N)` when INNER is a path (has `->`): INNER and N.
pub(super) fn string_call(name: &str) -> Option<(&str, Option<&str>)> {
    let inner = name.strip_prefix("str(")?.strip_suffix(')')?;
    let (path, size) = match inner.rsplit_once(',') {
        Some((path, size)) if !size.contains("->") => (path.trim(), Some(size.trim())),
        _ => (inner.trim(), None),
    };
    path.contains("->").then_some((path, size))
}

/// The string at the end of the path `name` (`str(PATH)`, `str(PATH, N)`), its integer
/// path resolved by `resolve` (the event's own path rules); `None` when `name` is no
/// `str()` of a path.
///
/// # Errors
/// The path's own error; a path whose value is not a pointer (8 bytes, unsigned); an `N`
/// that is no number from 1 to [`STR_BYTES`].
pub(super) fn path_string(
    name: &str,
    resolve: &dyn Fn(&str) -> Option<Result<FieldRef, String>>,
) -> Option<Result<FieldRef, String>> {
    let (path, size) = string_call(name)?;
    Some((|| {
        let size = match size {
            None => STR_BYTES as u32,
            Some(text) => match text.parse::<u32>() {
                Ok(n) if (1..=STR_MAX as u32).contains(&n) => n,
                _ => {
                    return Err(format!(
                        "`{name}`: the string's size `{text}` is not a number from 1 to \
                         {STR_MAX}"
                    ));
                }
            },
        };
        let field = resolve(path).unwrap_or_else(|| Err(format!("`{path}` is no path")))?;
        let op = field.operand;
        if op.size != 8 || matches!(field.ty, ValueType::Int { signed: true }) {
            return Err(format!(
                "`{name}`: `{path}` is not a pointer; str() reads the string a `char *` \
                 member points to"
            ));
        }
        // Where the path starts, and its offsets.
        let (base, offsets, path_offsets) = match op.kind {
            operand::TASK_PATH | operand::FIELD_PATH | operand::ARG_PATH => {
                (op.kind, op.aux, op.path)
            }
            operand::ARG_DEREF => {
                let mut one = [0; MAX_PATH];
                one[0] = op.aux;
                (operand::ARG_PATH, 1, one)
            }
            _ => return Err(format!("`{path}` is no path")),
        };
        Ok(FieldRef::new(
            Operand {
                kind: operand::PATH_STR,
                offset: op.offset,
                size,
                aux: offsets,
                index_offset: base,
                path: path_offsets,
                ..Operand::NONE
            },
            ValueType::Str,
        ))
    })())
}

impl FunctionFields {
    /// `str(argN)` (entry) or `str(retval)` (return): the string the pointer points to,
    /// at most [`STR_BYTES`] bytes, from user memory in user functions.
    pub(super) fn string_arg(&self, inner: &str) -> Option<FieldRef> {
        let index = if self.is_return {
            (inner == "retval").then_some(7)?
        } else {
            let (index, _, _) = parse_arg(inner).or_else(|| {
                self.params
                    .iter()
                    .position(|p| p.name == inner)
                    .map(|i| (i as u32, 8, false))
            })?;
            (index < 6).then_some(index)?
        };
        Some(FieldRef::new(
            Operand {
                kind: if self.user {
                    operand::USER_STR
                } else {
                    operand::KERNEL_STR
                },
                offset: index,
                size: STR_BYTES as u32,
                flags: PTR_FROM_ARG,
                ..Operand::NONE
            },
            ValueType::Str,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_calls_split_the_path_and_the_size() {
        assert_eq!(
            string_call("str(iocb->ki_filp->f_path.dentry->d_name.name, 16)"),
            Some(("iocb->ki_filp->f_path.dentry->d_name.name", Some("16")))
        );
        assert_eq!(
            string_call("str(dentry->d_name.name)"),
            Some(("dentry->d_name.name", None))
        );
        assert_eq!(string_call("str(arg0)"), None);
        assert_eq!(string_call("str(arg0, 8)"), None);
        assert_eq!(string_call("dentry->d_name.name"), None);
    }

    fn path(kind: u32, aux: u32, size: u32, signed: bool) -> FieldRef {
        FieldRef::new(
            Operand {
                kind,
                offset: 1,
                size,
                aux,
                path: [24, 8, 40, 0],
                ..Operand::NONE
            },
            ValueType::Int { signed },
        )
    }

    #[test]
    fn strings_at_paths_keep_the_base_and_offsets() {
        let deep = |_: &str| Some(Ok(path(operand::ARG_PATH, 3, 8, false)));
        let field = path_string("str(a->b->c.d, 16)", &deep).unwrap().unwrap();
        assert_eq!(
            (
                field.operand.kind,
                field.operand.index_offset,
                field.operand.offset,
                field.operand.aux,
                field.operand.path,
                field.operand.size,
                field.ty
            ),
            (
                operand::PATH_STR,
                operand::ARG_PATH,
                1,
                3,
                [24, 8, 40, 0],
                16,
                ValueType::Str
            )
        );
        // One pointer deep (ARG_DEREF): its offset is the path's one.
        let one = |_: &str| Some(Ok(path(operand::ARG_DEREF, 40, 8, false)));
        let field = path_string("str(a->name)", &one).unwrap().unwrap();
        assert_eq!(
            (
                field.operand.index_offset,
                field.operand.aux,
                field.operand.path[0],
                field.operand.size
            ),
            (operand::ARG_PATH, 1, 40, STR_BYTES as u32)
        );
        let int = |_: &str| Some(Ok(path(operand::TASK_PATH, 2, 4, false)));
        assert_eq!(
            path_string("str(task->x->y)", &int).unwrap().unwrap_err(),
            "`str(task->x->y)`: `task->x->y` is not a pointer; str() reads the string a \
             `char *` member points to"
        );
        assert_eq!(
            path_string("str(a->b, 4097)", &deep).unwrap().unwrap_err(),
            "`str(a->b, 4097)`: the string's size `4097` is not a number from 1 to 4096"
        );
        assert!(path_string("str(arg1)", &deep).is_none());
    }
}
