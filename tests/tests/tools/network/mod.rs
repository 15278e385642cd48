//! Network tools.

mod connections;
