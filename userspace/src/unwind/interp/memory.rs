//! Reading a traced process's memory, for naming its interpreters' code objects.

/// `length` bytes at `address` of process `pid` (`process_vm_readv`).
pub fn read_memory(pid: u32, address: u64, length: usize) -> Option<Vec<u8>> {
    let mut buffer = vec![0u8; length];
    let local = libc::iovec {
        iov_base: buffer.as_mut_ptr().cast(),
        iov_len: length,
    };
    let remote = libc::iovec {
        iov_base: address as *mut libc::c_void,
        iov_len: length,
    };
    // SAFETY: the local buffer is `length` bytes; the remote range is only read by the kernel.
    let read = unsafe { libc::process_vm_readv(pid as libc::pid_t, &local, 1, &remote, 1, 0) };
    (read == length as isize).then_some(buffer)
}
