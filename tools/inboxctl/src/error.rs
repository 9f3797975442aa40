//! The CLI's error: a usage problem (exit 2, like clap's own errors) or an operational failure
//! (exit 1). Operational errors print their whole cause chain on one line.

use std::fmt;
use std::process::ExitCode;

/// Why a command did not succeed.
#[derive(Debug)]
pub enum Error {
    /// The command line is incomplete or contradictory (a missing table name, a bad value).
    Usage(String),
    /// The command ran but something failed (the store, a queue, a file, the endpoint).
    Failed(anyhow::Error),
}

/// The result of a command.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Self::Usage(_) => ExitCode::from(2),
            Self::Failed(_) => ExitCode::from(1),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Usage(m) => f.write_str(m),
            // The cause chain: "the store rejected the request: …: Requested resource not found".
            Self::Failed(e) => f.write_str(&inbox_core::error::one_line(e.as_ref())),
        }
    }
}

impl<E> From<E> for Error
where
    E: std::error::Error + Send + Sync + 'static,
{
    fn from(e: E) -> Self {
        Self::Failed(anyhow::Error::new(e))
    }
}

/// Adds context to an operational error ("reading FILE: …").
pub trait Context<T> {
    fn context(self, what: impl fmt::Display) -> Result<T>;
}

impl<T, E> Context<T> for std::result::Result<T, E>
where
    E: std::error::Error + Send + Sync + 'static,
{
    fn context(self, what: impl fmt::Display) -> Result<T> {
        self.map_err(|e| Error::Failed(anyhow::Error::new(e).context(what.to_string())))
    }
}

/// A usage error.
pub fn usage(message: impl Into<String>) -> Error {
    Error::Usage(message.into())
}

/// An operational failure with a plain message.
pub fn failed(message: impl fmt::Display) -> Error {
    Error::Failed(anyhow::anyhow!("{message}"))
}
