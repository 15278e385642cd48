//! A minimal stderr logger for the `log` facade (aya logs through it too).
//!
//! Warnings and errors always print; `-vv` adds tracekit's debug messages, `-vvv` everyone's.

use log::{Level, LevelFilter, Log, Metadata, Record};

struct Logger {
    verbose: u8,
}

impl Log for Logger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        match metadata.level() {
            Level::Error | Level::Warn => true,
            Level::Info | Level::Debug => {
                self.verbose >= 3
                    || (self.verbose >= 2 && metadata.target().starts_with("tracekit"))
            }
            Level::Trace => self.verbose >= 4,
        }
    }

    fn log(&self, record: &Record<'_>) {
        if self.enabled(record.metadata()) {
            let level = match record.level() {
                Level::Error => "error",
                Level::Warn => "warning",
                Level::Info => "info",
                Level::Debug => "debug",
                Level::Trace => "trace",
            };
            eprintln!("tracekit: {level}: {}", record.args());
        }
    }

    fn flush(&self) {}
}

/// Installs the logger for verbosity `verbose` (the number of `-v`).
pub fn init(verbose: u8) {
    let logger = Box::leak(Box::new(Logger { verbose }));
    if log::set_logger(logger).is_ok() {
        log::set_max_level(if verbose >= 2 {
            LevelFilter::Trace
        } else {
            LevelFilter::Warn
        });
    }
}
