//! Python.

mod frames;
mod startup;
