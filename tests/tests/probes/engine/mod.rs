//! The engine.

mod counts;
