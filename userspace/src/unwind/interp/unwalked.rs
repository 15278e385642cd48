//! Runtimes found in a process whose stacks tracekit does not walk (Perl, Erlang's BEAM): their
//! processes keep native frames, and the run's summary says so in one line
//! (`perl 5.40.1 (pid 4242): Perl frames not named: ...`), as it does for a version of a walked
//! runtime with no layout.

use std::path::Path;

use super::runtime::Unsupported;

/// A runtime tracekit recognises but does not walk.
pub(crate) struct Unwalked {
    /// Its name in the summary and JSON, lower case.
    pub name: &'static str,
    /// The language of its frames, as the summary says it.
    pub language: &'static str,
    /// Whether a mapped file named `name` (no directory) is it.
    claims: fn(&str) -> bool,
    /// Its version, from the file's path or, opened as `file`, its contents.
    version: fn(path: &str, file: &Path) -> Option<String>,
}

/// The runtimes tracekit recognises and does not walk.
pub(crate) static UNWALKED: &[Unwalked] = &[
    // Debian's /usr/bin/perl holds the interpreter (perl-base must work alone); an embedding
    // program maps libperl.so.5.N.
    Unwalked {
        name: "perl",
        language: "Perl",
        claims: |name| {
            name == "perl" || name.starts_with("perl5.") || name.starts_with("libperl.so")
        },
        version: |_, file| perl_version(&std::fs::read(file).ok()?),
    },
    // The emulator is `erts-VSN/bin/beam.smp` (OTP's install layout), the version of the
    // runtime system, not of OTP.
    Unwalked {
        name: "erlang",
        language: "Erlang",
        claims: |name| name == "beam.smp" || name == "beam",
        version: |path, _| erts_version(path),
    },
];

/// Why their frames stay native.
const REASON: &str = "tracekit walks Python, Ruby, PHP, Node.js and Java, not this runtime";

/// The runtime that mapped file `path` (named `name`, opened as `file`) is, if tracekit
/// recognises it and does not walk it, as the summary reports it.
pub(crate) fn detect(name: &str, path: &str, file: &Path) -> Option<Unsupported> {
    let runtime = UNWALKED.iter().find(|runtime| (runtime.claims)(name))?;
    Some(Unsupported {
        runtime: runtime.name,
        version: (runtime.version)(path, file),
        reason: REASON.to_string(),
    })
}

/// The language of unwalked runtime `name`.
pub(crate) fn language(name: &str) -> Option<&'static str> {
    UNWALKED
        .iter()
        .find(|runtime| runtime.name == name)
        .map(|runtime| runtime.language)
}

/// Perl's version in its binary: the NUL-terminated `v5.N.M` string `perl -v` prints
/// (`PERL_API_VERSION_STRING`'s neighbour in perl.c's data), without its `v`.
fn perl_version(binary: &[u8]) -> Option<String> {
    binary
        .split(|&byte| byte == 0)
        .filter_map(|text| text.strip_prefix(b"v5."))
        .find(|rest| {
            let parts: Vec<&[u8]> = rest.split(|&byte| byte == b'.').collect();
            parts.len() == 2
                && parts.iter().all(|part| {
                    !part.is_empty() && part.len() <= 3 && part.iter().all(u8::is_ascii_digit)
                })
        })
        .map(|rest| format!("5.{}", String::from_utf8_lossy(rest)))
}

/// `erts-15.2` of `/usr/lib/erlang/erts-15.2/bin/beam.smp`.
fn erts_version(path: &str) -> Option<String> {
    path.split('/')
        .find(|part| {
            part.strip_prefix("erts-")
                .is_some_and(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.'))
        })
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perl_version_from_its_string() {
        let binary = b"\x7fELF\0/usr/share/perl/5.36\0v5.36.0\0This is perl\0";
        assert_eq!(perl_version(binary).as_deref(), Some("5.36.0"));
        assert_eq!(perl_version(b"v5.\0v5.x.1\0v5.40\0"), None);
    }

    #[test]
    fn erts_version_from_the_path() {
        assert_eq!(
            erts_version("/usr/lib/erlang/erts-15.2/bin/beam.smp").as_deref(),
            Some("erts-15.2")
        );
        assert_eq!(erts_version("/opt/beam.smp"), None);
    }

    #[test]
    fn perl_and_beam_are_claimed_by_name() {
        let claimed = |name: &str| UNWALKED.iter().find(|r| (r.claims)(name)).map(|r| r.name);
        assert_eq!(claimed("perl"), Some("perl"));
        assert_eq!(claimed("perl5.40.1"), Some("perl"));
        assert_eq!(claimed("libperl.so.5.36.0"), Some("perl"));
        assert_eq!(claimed("beam.smp"), Some("erlang"));
        assert_eq!(claimed("perldoc"), None);
        assert_eq!(claimed("python3"), None);
    }

    /// The machine's own perl (Debian's), when it has one.
    #[test]
    fn this_machines_perl_has_a_version() {
        let perl = Path::new("/usr/bin/perl");
        if !perl.is_file() {
            eprintln!("skipped: /usr/bin/perl is not installed here");
            return;
        }
        let found = detect("perl", "/usr/bin/perl", perl).expect("perl claimed");
        let version = found.version.expect("a version");
        assert!(version.starts_with("5."), "{version}");
    }
}
