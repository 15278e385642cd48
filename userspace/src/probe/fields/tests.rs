use super::*;
use tracekit_common::engine::{FD_INT32, PTR_FROM_ARG};

#[test]
fn usdt_arguments_from_the_note() {
    let site = crate::probe::usdt::ProbeSite {
        binary: "/bin/app".into(),
        provider: "tk".into(),
        name: "tick".into(),
        address: 0x1000,
        file_offset: 0x1000,
        semaphore: None,
        semaphore_file_offset: None,
        arg_specs: "-4@%edi 8@-16(%rbp) 8@8(%rip)".into(),
        args: crate::probe::usdt::parse_note_args("-4@%edi 8@-16(%rbp) 8@8(%rip)"),
    };
    let fields = UsdtFields::of("usdt:tk:tick", &site);
    let arg0 = fields.lookup("arg0").unwrap();
    assert_eq!(
        (arg0.operand.kind, arg0.operand.size, arg0.ty),
        (operand::REG, 4, ValueType::Int { signed: true })
    );
    let narrowed = fields.lookup("arg1:u16").unwrap();
    assert_eq!(
        (
            narrowed.operand.kind,
            narrowed.operand.size,
            narrowed.operand.flags
        ),
        (operand::USER_MEM, 2, 0)
    );
    assert!(fields.lookup("arg3").is_none());
    // What cannot be read names the probe and the spec as the note writes it.
    assert_eq!(
        fields.arg("arg2").unwrap_err().to_string(),
        "arg2: usdt:tk:tick cannot read its argument `8@8(%rip)`: a RIP-relative operand \
         without a symbol (its distance from the probe is unknown)"
    );
    assert_eq!(
        fields.describe(),
        "arg0 (signed, 4 bytes, -4@%edi), arg1 (8 bytes, 8@-16(%rbp)), arg2 (8 bytes, \
         8@8(%rip), unreadable: a RIP-relative operand without a symbol (its distance from \
         the probe is unknown)); and pid, tid, cpu, comm, cgroup"
    );
}

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
        user: false,
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
        user: false,
    };
    assert_eq!(
        ret.lookup("retval").unwrap().ty,
        ValueType::Int { signed: true }
    );
    assert!(ret.lookup("arg0").is_none());
    // Strings behind pointers: `str(buf)` is arg1's, `str(retval)` the return value's.
    let buf = fields.lookup("str(buf)").unwrap();
    assert_eq!(
        (
            buf.operand.kind,
            buf.operand.offset,
            buf.operand.flags,
            buf.ty
        ),
        (operand::KERNEL_STR, 1, PTR_FROM_ARG, ValueType::Str)
    );
    assert!(fields.lookup("str(arg6)").is_none());
    let user_ret = FunctionFields { user: true, ..ret };
    let line = user_ret.lookup("str(retval)").unwrap();
    assert_eq!(
        (line.operand.kind, line.operand.offset),
        (operand::USER_STR, 7)
    );
}

/// `sk->sk_ack_backlog` of a function whose first parameter is `struct sock *sk`: the
/// member's offset in this kernel's BTF past argument 0; two pointers deep is a path from
/// the argument.
#[test]
fn kernel_function_parameters_are_followed_through_btf() {
    let Some(btf) = crate::probe::btf_path::kernel_btf() else {
        eprintln!("skipped: no /sys/kernel/btf/vmlinux");
        return;
    };
    let fields = FunctionFields {
        event: "kprobe:tcp_v4_syn_recv_sock".into(),
        is_return: false,
        params: vec![Param {
            name: "sk".into(),
            size: 8,
            signed: false,
            c_type: "struct sock *".into(),
        }],
        user: false,
    };
    let steps = crate::probe::btf_path::parse("sk->sk_ack_backlog")
        .unwrap()
        .unwrap()
        .steps;
    let member = crate::probe::btf_path::resolve(btf, "sock", &steps).unwrap();
    let backlog = fields.lookup("sk->sk_ack_backlog").unwrap();
    assert_eq!(
        (
            backlog.operand.kind,
            backlog.operand.offset,
            backlog.operand.aux,
            backlog.operand.size
        ),
        (operand::ARG_DEREF, 0, member.path[0], 4)
    );
    let port = fields.lookup("sk->__sk_common.skc_num").unwrap();
    assert_eq!(
        (port.operand.kind, port.operand.size),
        (operand::ARG_DEREF, 2)
    );
    let steps = crate::probe::btf_path::parse("sk->sk_socket->state")
        .unwrap()
        .unwrap()
        .steps;
    let deep = crate::probe::btf_path::resolve(btf, "sock", &steps).unwrap();
    let state = fields.lookup("sk->sk_socket->state").unwrap();
    assert_eq!(
        (
            state.operand.kind,
            state.operand.offset,
            state.operand.aux,
            &state.operand.path[..2],
            state.operand.size
        ),
        (operand::ARG_PATH, 0, 2, &deep.path[..], deep.size)
    );
    assert_eq!(
        fields.why_not("nope->x").unwrap(),
        "`nope` is not a pointer field of this event; a path starts at `task` (the current \
         task) or at a pointer field"
    );
}

/// `str(iocb->ki_filp->f_path.dentry->d_name.name, 16)` of a function whose first
/// parameter is `struct kiocb *iocb`: the file's name, three offsets from argument 0 in
/// this kernel's BTF, 16 bytes at most; not a pointer at the end is refused.
#[test]
fn strings_are_read_at_the_end_of_parameter_paths() {
    let Some(btf) = crate::probe::btf_path::kernel_btf() else {
        eprintln!("skipped: no /sys/kernel/btf/vmlinux");
        return;
    };
    let fields = FunctionFields {
        event: "kprobe:vfs_iocb_iter_read".into(),
        is_return: false,
        params: vec![Param {
            name: "iocb".into(),
            size: 8,
            signed: false,
            c_type: "struct kiocb *".into(),
        }],
        user: false,
    };
    let path = "iocb->ki_filp->f_path.dentry->d_name.name";
    let steps = crate::probe::btf_path::parse(path).unwrap().unwrap().steps;
    let resolved = crate::probe::btf_path::resolve(btf, "kiocb", &steps).unwrap();
    assert_eq!(resolved.path.len(), 3);
    let name = fields.lookup(&format!("str({path}, 16)")).unwrap();
    assert_eq!(
        (
            name.operand.kind,
            name.operand.index_offset,
            name.operand.offset,
            name.operand.aux,
            &name.operand.path[..3],
            name.operand.size,
            name.ty
        ),
        (
            operand::PATH_STR,
            operand::ARG_PATH,
            0,
            3,
            &resolved.path[..],
            16,
            ValueType::Str
        )
    );
    assert!(fields.lookup("str(iocb->ki_pos)").is_none());
    assert_eq!(
        fields.why_not("str(iocb->ki_pos)").unwrap(),
        "`str(iocb->ki_pos)`: `iocb->ki_pos` is not a pointer; str() reads the string a \
         `char *` member points to"
    );
}

/// At a return, `retval:s32` reads the low 4 bytes, signed (an `int` function's -errno).
#[test]
fn return_values_take_a_width() {
    let fields = FunctionFields {
        event: "kretprobe:inet_bind".into(),
        is_return: true,
        params: Vec::new(),
        user: false,
    };
    let ret = fields.lookup("retval:s32").unwrap();
    assert_eq!(
        (ret.operand.kind, ret.operand.size, ret.ty),
        (operand::RETVAL, 4, ValueType::Int { signed: true })
    );
    assert!(fields.lookup("retval:s128").is_none());
}

/// `(struct sockaddr_in *)uaddr->...` of `inet_bind(sock, uaddr, addr_len)`: the port is
/// shown in host order, the address as IPv4.
#[test]
fn parameter_paths_take_casts_and_show_ports_and_addresses() {
    if crate::probe::btf_path::kernel_btf().is_none() {
        eprintln!("skipped: no /sys/kernel/btf/vmlinux");
        return;
    }
    let fields = FunctionFields {
        event: "kprobe:inet_bind".into(),
        is_return: false,
        params: ["sock", "uaddr"]
            .iter()
            .zip(["struct socket *", "struct sockaddr *"])
            .map(|(name, c_type)| Param {
                name: (*name).into(),
                size: 8,
                signed: false,
                c_type: c_type.into(),
            })
            .collect(),
        user: false,
    };
    let port = fields
        .lookup("(struct sockaddr_in *)uaddr->sin_port")
        .unwrap();
    assert_eq!(
        (
            port.operand.kind,
            port.operand.offset,
            port.operand.aux,
            port.hint
        ),
        (operand::ARG_DEREF, 1, 2, Hint::NetPort)
    );
    let addr = fields
        .lookup("(struct sockaddr_in *)uaddr->sin_addr.s_addr")
        .unwrap();
    assert_eq!(
        (addr.operand.aux, addr.operand.size, addr.hint),
        (4, 4, Hint::Ipv4)
    );
}

/// `sock(ret)->...`: a path from the socket at the descriptor in field `ret`, its walk's
/// offsets packed in the operand; a 16-byte address is raw bytes shown as an address.
#[test]
fn descriptor_paths_read_from_the_descriptors_socket() {
    if crate::probe::btf_path::kernel_btf().is_none() {
        eprintln!("skipped: no /sys/kernel/btf/vmlinux");
        return;
    }
    let fd_field = |name: &str| match name {
        "ret" => Some((16, 8)),
        "res" => Some((32, 4)),
        _ => None,
    };
    let addr = super::path_ref_in("sock(ret)->__sk_common.skc_v6_daddr", &|_| None, &fd_field)
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            addr.operand.kind,
            addr.operand.offset,
            addr.operand.aux,
            addr.operand.size,
            addr.operand.flags,
            addr.ty,
            addr.hint
        ),
        (
            operand::FD_PATH,
            16,
            3,
            16,
            tracekit_common::engine::PATH_BYTES,
            ValueType::Str,
            Hint::Ip
        )
    );
    assert!(addr.operand.is_string());
    assert_ne!(addr.operand.index_offset, 0);
    let port = super::path_ref_in("sock(ret)->__sk_common.skc_dport", &|_| None, &fd_field)
        .unwrap()
        .unwrap();
    assert_eq!(
        (port.operand.kind, port.operand.size, port.hint),
        (operand::FD_PATH, 2, Hint::NetPort)
    );
    let file = super::path_ref_in("file(ret)->f_flags", &|_| None, &fd_field)
        .unwrap()
        .unwrap();
    assert_eq!((file.operand.aux, file.operand.size), (1, 4));
    assert_eq!(
        super::path_ref_in("sock(fd)->__sk_common.skc_num", &|_| None, &fd_field)
            .unwrap()
            .unwrap_err(),
        "`fd` is not an 8-byte or 4-byte signed integer field of this event; sock(FIELD) \
         takes a descriptor (`ret` of syscalls:sys_exit_accept4)"
    );
    // An 8-byte descriptor is read as 8 bytes; a 4-byte one (`res` of
    // io_uring:io_uring_complete) as an `int`, sign-extended.
    assert_eq!(port.operand.flags & FD_INT32, 0);
    let uring = super::path_ref_in("sock(res)->__sk_common.skc_dport", &|_| None, &fd_field)
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            uring.operand.kind,
            uring.operand.offset,
            uring.operand.flags,
            uring.operand.index_offset,
            uring.operand.index_shift,
            uring.operand.path,
        ),
        (
            operand::FD_PATH,
            32,
            FD_INT32,
            port.operand.index_offset,
            port.operand.index_shift,
            port.operand.path,
        )
    );
}
