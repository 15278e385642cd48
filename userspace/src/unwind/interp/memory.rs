//! Reading a traced process's memory, for naming its interpreters' code objects.

/// `length` bytes at `address` of process `pid` (`process_vm_readv`); `None` unless all of
/// them were read.
pub fn read_memory(pid: u32, address: u64, length: usize) -> Option<Vec<u8>> {
    let buffer = read_memory_prefix(pid, address, length)?;
    (buffer.len() == length).then_some(buffer)
}

/// Up to `length` bytes at `address` of process `pid`: the bytes before the first page
/// that cannot be read (`process_vm_readv` stops there). For reads of a fixed size past a
/// small object, which may end where its mapping ends. `None` when none was read of a
/// `length` over 0.
pub fn read_memory_prefix(pid: u32, address: u64, length: usize) -> Option<Vec<u8>> {
    if length == 0 {
        return Some(Vec::new());
    }
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
    let read = usize::try_from(read).ok().filter(|&read| read > 0)?;
    buffer.truncate(read);
    Some(buffer)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A read that runs past the end of a mapping gives the bytes before it.
    #[test]
    fn reads_stop_at_the_end_of_a_mapping() {
        let page = 4096;
        // SAFETY: a fresh anonymous mapping of two pages; the second is unmapped at once,
        // the first freed at the end.
        let base = unsafe {
            let base = libc::mmap(
                std::ptr::null_mut(),
                2 * page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(base, libc::MAP_FAILED);
            assert_eq!(libc::munmap(base.cast::<u8>().add(page).cast(), page), 0);
            std::ptr::write_bytes(base.cast::<u8>().add(page - 32), 0xab, 32);
            base as u64
        };
        let pid = std::process::id();
        let end = base + page as u64;
        assert_eq!(read_memory_prefix(pid, end - 32, 128), Some(vec![0xab; 32]));
        assert_eq!(read_memory(pid, end - 32, 128), None);
        assert_eq!(read_memory(pid, end - 32, 32), Some(vec![0xab; 32]));
        assert_eq!(read_memory_prefix(pid, end, 8), None);
        // Nothing to read is read, wherever.
        assert_eq!(read_memory(pid, end, 0), Some(Vec::new()));
        // SAFETY: the page mapped above.
        assert_eq!(unsafe { libc::munmap(base as *mut libc::c_void, page) }, 0);
    }
}
