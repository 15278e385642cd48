//! Robustness.

pub(crate) mod churn;
mod hostile_input;
mod soak;
