//! Names of Rust and C++ functions as their source spells them.

use std::borrow::Cow;

/// Demangles Rust (legacy `_ZN...E` and v0 `_R...`, without the hash) and C++ (`_Z...`)
/// symbol names; any other name is returned as it is.
///
/// ```
/// use tracekit::symbolize::demangle;
/// assert_eq!(demangle("b"), "b");
/// assert_eq!(demangle("_ZN3foo3bar17h0123456789abcdefE"), "foo::bar");
/// assert_eq!(demangle("_Z3fooi"), "foo(int)");
/// ```
pub fn demangle(name: &str) -> Cow<'_, str> {
    if (name.starts_with("_R") || name.starts_with("_ZN"))
        && let Ok(demangled) = rustc_demangle::try_demangle(name)
    {
        return Cow::Owned(format!("{demangled:#}"));
    }
    if name.starts_with("_Z")
        && let Some(demangled) = cpp_demangle::Symbol::new(name)
            .ok()
            .and_then(|symbol| symbol.demangle().ok())
    {
        return Cow::Owned(demangled);
    }
    Cow::Borrowed(name)
}
