//! What is read once of one code object (a Python code object, a Ruby iseq, a PHP
//! function, a V8 function, a HotSpot method or compiled method) to name its frames.

use super::python;

/// A code object's names and line table, read once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeInfo {
    /// Qualified name where the version has one (`Class.method`), else the name.
    pub name: String,
    /// `co_filename`.
    pub file: String,
    /// `co_firstlineno`.
    pub first_line: i32,
    /// The version's line table.
    pub linetable: Vec<u8>,
    /// `3.minor`.
    pub minor: u8,
    /// HotSpot compiled methods: each call site's offset from the blob, with its frames as
    /// symbols, outermost first, inlined methods after the method they are inlined into
    /// (sorted by offset; [`super::hotspot::compiled`]). Empty for every other code object.
    pub compiled: Vec<(u32, Vec<String>)>,
}

impl CodeInfo {
    /// The line of instruction offset `units`, else the function's first line.
    pub fn line(&self, units: u32) -> i32 {
        python::line_of(self.minor, self.first_line, &self.linetable, units)
            .unwrap_or(self.first_line)
    }
}
