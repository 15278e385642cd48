//! Node.js.

mod chain;
mod v8_versions;
