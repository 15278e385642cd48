//! Production conditions: hostile input, process and thread churn, the ends of a run (a
//! signal, a killed tracekit, a closed pipe), least privilege, trace delivery under load,
//! and the long soak runs.

mod churn;
mod hostile_input;
mod run_lifecycle;
mod soak;
mod trace_delivery;
