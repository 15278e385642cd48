//! The error type shared by tracekit's library modules.
//!
//! Every error renders as one line. [`Error::Usage`] is bad input (the binary exits 2);
//! everything else is a failure at run time (exit 1).

use std::fmt::Display;

/// A tracekit error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input: the message names the bad part and what would be valid. Exit status 2.
    #[error("{0}")]
    Usage(String),
    /// The process lacks a privilege it needs; the message names it. Exit status 1.
    #[error("{0}")]
    Privilege(String),
    /// A failure at run time. Exit status 1.
    #[error("{what}")]
    Runtime {
        /// What failed, e.g. "attaching to cpu-clock on cpu 3".
        what: String,
        /// Why, when there is an underlying error.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    },
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A usage error with the given one-line message.
    pub fn usage(message: impl Display) -> Self {
        Self::Usage(message.to_string())
    }

    /// A run-time error without an underlying cause.
    pub fn runtime(what: impl Display) -> Self {
        Self::Runtime {
            what: what.to_string(),
            source: None,
        }
    }

    /// The process exit status this error maps to (2 for usage errors, else 1).
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Usage(_) => 2,
            Self::Privilege(_) | Self::Runtime { .. } => 1,
        }
    }
}

/// Adds "what failed" context to foreign errors, turning them into [`Error::Runtime`].
pub trait Context<T> {
    /// Wraps the error with a description of what was being done.
    fn context(self, what: impl Display) -> Result<T>;
    /// Like [`Context::context`], with a lazily built description.
    fn with_context<D: Display>(self, what: impl FnOnce() -> D) -> Result<T>;
}

impl<T, E> Context<T> for std::result::Result<T, E>
where
    E: std::error::Error + Send + Sync + 'static,
{
    fn context(self, what: impl Display) -> Result<T> {
        self.map_err(|err| Error::Runtime {
            what: what.to_string(),
            source: Some(Box::new(err)),
        })
    }

    fn with_context<D: Display>(self, what: impl FnOnce() -> D) -> Result<T> {
        self.map_err(|err| Error::Runtime {
            what: what().to_string(),
            source: Some(Box::new(err)),
        })
    }
}
