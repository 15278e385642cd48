//! What a function probe offers to `--value`, `--by`, `--filter` and `--print`: `arg0`..`arg5`
//! (64-bit, or with a width and sign: `arg1:u32`, `arg0:s16`), `retval` (return probes),
//! `latency` (entry to return, in ns), BTF parameter names (kernel functions), and the
//! built-ins `pid`, `tid`, `cpu`, `comm`.

use tracekit_common::engine::{Operand, SIGNED, operand};

use crate::{
    engine::{BUILTINS, FieldRef, Fields, ValueType, builtin},
    functions::Param,
};

/// The names of one function probe.
pub struct FunctionFields {
    /// For messages (`kprobe:vfs_read`).
    pub event: String,
    /// Entry probes read arguments; return probes read `retval` (and `latency`).
    pub is_return: bool,
    /// BTF parameters (kernel functions), if known.
    pub params: Vec<Param>,
}

/// Parses `argN` or `argN:TYPE` (TYPE: u8 u16 u32 u64 s8 s16 s32 s64).
pub fn parse_arg(name: &str) -> Option<(u32, u32, bool)> {
    let (head, ty) = match name.split_once(':') {
        Some((head, ty)) => (head, Some(ty)),
        None => (name, None),
    };
    let index: u32 = head.strip_prefix("arg")?.parse().ok()?;
    let (size, signed) = match ty {
        None | Some("u64") => (8, false),
        Some("s64") => (8, true),
        Some("u32") => (4, false),
        Some("s32") => (4, true),
        Some("u16") => (2, false),
        Some("s16") => (2, true),
        Some("u8") => (1, false),
        Some("s8") => (1, true),
        Some(_) => return None,
    };
    Some((index, size, signed))
}

fn int(kind: u32, offset: u32, size: u32, signed: bool) -> FieldRef {
    FieldRef {
        operand: Operand {
            kind,
            offset,
            size,
            flags: if signed { SIGNED } else { 0 },
            ..Operand::NONE
        },
        ty: ValueType::Int { signed },
    }
}

impl Fields for FunctionFields {
    fn lookup(&self, name: &str) -> Option<FieldRef> {
        if let Some(field) = builtin(name) {
            return Some(field);
        }
        if self.is_return {
            return match name {
                "retval" => Some(int(operand::RETVAL, 0, 8, true)),
                "latency" => Some(int(operand::LATENCY, 0, 8, false)),
                _ => None,
            };
        }
        if let Some((index, size, signed)) = parse_arg(name) {
            return (index < 6).then(|| int(operand::ARG, index, size, signed));
        }
        self.params
            .iter()
            .position(|p| p.name == name)
            .filter(|&index| index < 6)
            .map(|index| {
                let param = &self.params[index];
                int(operand::ARG, index as u32, param.size, param.signed)
            })
    }

    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = if self.is_return {
            vec!["retval".into(), "latency".into()]
        } else {
            let mut names: Vec<String> = (0..6).map(|i| format!("arg{i}")).collect();
            names.extend(self.params.iter().map(|p| p.name.clone()));
            names
        };
        names.extend(BUILTINS.iter().map(|b| b.to_string()));
        names
    }

    fn describe(&self) -> String {
        let own = if self.is_return {
            "retval, latency".to_string()
        } else if self.params.is_empty() {
            "arg0..arg5 (arg0:u32 etc. for a width and sign)".to_string()
        } else {
            let params: Vec<String> = self
                .params
                .iter()
                .enumerate()
                .map(|(i, p)| format!("{} (arg{i}, {})", p.name, p.c_type))
                .collect();
            format!("{}, arg0..arg5", params.join(", "))
        };
        format!("{own}; and {}", BUILTINS.join(", "))
    }

    fn event_name(&self) -> String {
        self.event.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_with_widths() {
        assert_eq!(parse_arg("arg0"), Some((0, 8, false)));
        assert_eq!(parse_arg("arg3:s32"), Some((3, 4, true)));
        assert_eq!(parse_arg("arg1:f32"), None);
        assert_eq!(parse_arg("args"), None);
    }

    #[test]
    fn btf_names_become_arguments() {
        let fields = FunctionFields {
            event: "kprobe:vfs_read".into(),
            is_return: false,
            params: vec![
                Param {
                    name: "file".into(),
                    size: 8,
                    signed: false,
                    c_type: "struct file *".into(),
                },
                Param {
                    name: "buf".into(),
                    size: 8,
                    signed: false,
                    c_type: "char *".into(),
                },
                Param {
                    name: "count".into(),
                    size: 8,
                    signed: false,
                    c_type: "size_t".into(),
                },
            ],
        };
        let count = fields.lookup("count").unwrap();
        assert_eq!(
            (count.operand.kind, count.operand.offset),
            (operand::ARG, 2)
        );
        assert!(fields.lookup("retval").is_none());
        assert!(fields.lookup("arg6").is_none());
        assert!(
            fields
                .describe()
                .starts_with("file (arg0, struct file *), buf (arg1, char *)")
        );
        let ret = FunctionFields {
            event: "kr".into(),
            is_return: true,
            params: vec![],
        };
        assert_eq!(
            ret.lookup("retval").unwrap().ty,
            ValueType::Int { signed: true }
        );
        assert!(ret.lookup("arg0").is_none());
    }
}
