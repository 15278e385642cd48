//! Pointer fields read as strings: which `const char *` fields of `syscalls:*` print as
//! the string they point to (as `perf trace` prints paths), and the `NAME[I]` form.

/// `const char *` fields of `syscalls:*` that name paths or strings, printed as strings
/// (as `perf trace` does); other pointers stay numbers unless read with `str(NAME)`.
pub const STRING_POINTERS: [&str; 18] = [
    "filename",
    "pathname",
    "oldname",
    "newname",
    "path",
    "name",
    "specialfile",
    "special",
    "type",
    "_type",
    "_description",
    "dir_name",
    "dev_name",
    "to_pathname",
    "from_pathname",
    "put_old",
    "new_root",
    "_fs_name",
];

/// Whether a C type is a pointer to `char`s (`const char *`).
pub(crate) fn is_char_pointer(c_type: &str) -> bool {
    matches!(c_type, "const char *" | "char *" | "const unsigned char *")
}

/// Whether a C type is a pointer to an array of `char` pointers (`const char *const *`,
/// `argv`).
pub(crate) fn is_char_pointer_array(c_type: &str) -> bool {
    matches!(
        c_type,
        "const char *const *" | "const char **" | "char **" | "char *const *"
    )
}

/// `NAME[INDEX]`, split.
pub(crate) fn indexed(name: &str) -> Option<(&str, u32)> {
    let (base, rest) = name.split_once('[')?;
    let index = rest.strip_suffix(']')?.parse().ok()?;
    Some((base, index))
}
