//! Directories by the kernel's dentries ([`operand::DIR_PATH`](crate::engine::operand::DIR_PATH)):
//! the path of the directory at a descriptor (or the cwd), walked up in the kernel as
//! `d_path` does, so it is right when the process has exited or moved since.

/// [`Operand::flags`](crate::engine::Operand::flags) bit of
/// [`operand::DIR_PATH`](crate::engine::operand::DIR_PATH): its descriptor is a value the
/// start stage saved, so it is walked once the start is found.
pub const AFTER_START: u32 = 256;

/// [`TraceRecord::str_flags`](crate::engine::TraceRecord::str_flags) bit: the string is a
/// directory's names from the leaf up, each with its NUL (`c\0b\0a\0` for `/a/b/c`; none for
/// `/`); [`STR_CUT`](crate::engine::STR_CUT) when the walk stopped before the root.
pub const STR_DIR: u32 = 16;

/// Most steps of a walk (a name, or a mount crossed): deeper directories are cut at the top.
pub const DIR_DEPTH: u32 = 64;

/// Most bytes a directory's name takes with its NUL: `NAME_MAX` 255, and the NUL.
pub const NAME_BYTES: u32 = 256;

/// Byte offsets of the kernel's structs for [`operand::DIR_PATH`](crate::engine::operand::DIR_PATH),
/// from its BTF at load time (the engine's global `ENGINE_DENTRY_WALK`). The walk: the
/// `struct path` of the cwd (`task->fs->pwd`) or of the descriptor's file
/// (`task->files->fdt->fd[FD]->f_path`); then up by `dentry->d_parent`, naming each by
/// `dentry->d_name.name`, until the task's root (`task->fs->root`); at a mount's root
/// (`vfsmount->mnt_root`), on to where it is mounted (`mount->mnt_mountpoint` in
/// `mount->mnt_parent`, `struct mount` holding its `struct vfsmount` at `mount_mnt`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DentryWalk {
    /// `task_struct.fs`.
    pub task_fs: u32,
    /// `fs_struct.pwd`.
    pub fs_pwd: u32,
    /// `fs_struct.root`.
    pub fs_root: u32,
    /// `path.mnt`.
    pub path_mnt: u32,
    /// `path.dentry`.
    pub path_dentry: u32,
    /// `task_struct.files | files_struct.fdt << 16`.
    pub files_fdt: u32,
    /// `fdtable.fd | fdtable.max_fds << 16`.
    pub fd_max: u32,
    /// `file.f_path`.
    pub file_path: u32,
    /// `dentry.d_parent`.
    pub d_parent: u32,
    /// `dentry.d_name.name`.
    pub d_name: u32,
    /// `mount.mnt`: where a `struct mount` holds its `struct vfsmount`.
    pub mount_mnt: u32,
    /// `mount.mnt_parent`.
    pub mnt_parent: u32,
    /// `mount.mnt_mountpoint`.
    pub mnt_mountpoint: u32,
    /// `vfsmount.mnt_root`.
    pub mnt_root: u32,
}

impl DentryWalk {
    /// No walk: the global's value when no plan reads a directory.
    pub const EMPTY: DentryWalk = DentryWalk {
        task_fs: 0,
        fs_pwd: 0,
        fs_root: 0,
        path_mnt: 0,
        path_dentry: 0,
        files_fdt: 0,
        fd_max: 0,
        file_path: 0,
        d_parent: 0,
        d_name: 0,
        mount_mnt: 0,
        mnt_parent: 0,
        mnt_mountpoint: 0,
        mnt_root: 0,
    };
}
