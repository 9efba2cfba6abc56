//! The pipe's errors, one type per operation.

use core::fmt;

use falconet_pool::LeaseError;

/// Why [`pipe`](crate::pipe) refused its [`Options`](crate::Options).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OptionsError {
    /// `pause_at` is 0: every flush would wait, with nothing to wait for.
    PauseAtZero,
    /// `resume_at` is 0: a paused writer would wait for "fewer than zero
    /// unexamined bytes" forever (dotnet/runtime 75166).
    ResumeAtZero,
    /// `resume_at` is above `pause_at`.
    ResumeAbovePause {
        /// The pause threshold.
        pause_at: u64,
        /// The resume threshold.
        resume_at: u64,
    },
    /// `min_read_space` is 0 or larger than a block.
    ReadSpace {
        /// The requested minimum.
        requested: usize,
        /// The pool's block size.
        block_size: usize,
    },
}

impl fmt::Display for OptionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::PauseAtZero => f.write_str("pause_at must be at least 1"),
            Self::ResumeAtZero => f.write_str("resume_at must be at least 1"),
            Self::ResumeAbovePause { pause_at, resume_at } => {
                write!(
                    f,
                    "resume_at ({resume_at}) is above pause_at ({pause_at}); set resume_at lower, or leave it unset to resume below half of pause_at"
                )
            }
            Self::ReadSpace { requested, block_size } => {
                write!(f, "min_read_space {requested} is not in 1..={block_size} (the block size)")
            }
        }
    }
}

impl std::error::Error for OptionsError {}

/// Why a read failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadError {
    /// Another read was pending or had not advanced yet. A pending read that
    /// a second read ran into fails with this error too; no byte is consumed
    /// by either failure, and the next read (once no read is outstanding)
    /// works normally.
    ConcurrentRead,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ConcurrentRead => f.write_str("concurrent reads are not supported"),
        }
    }
}

impl std::error::Error for ReadError {}

/// Why [`ReadGuard::advance_to`](crate::ReadGuard::advance_to) refused its
/// positions. The read is released with nothing consumed or examined, so no
/// byte is lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AdvanceError {
    /// `consumed` is past `examined`.
    ConsumedPastExamined {
        /// Bytes consumed.
        consumed: usize,
        /// Bytes examined.
        examined: usize,
    },
    /// `examined` is past the end of the read.
    ExaminedPastEnd {
        /// Bytes examined.
        examined: usize,
        /// Bytes the read returned.
        len: usize,
    },
}

impl fmt::Display for AdvanceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::ConsumedPastExamined { consumed, examined } => {
                write!(f, "consumed ({consumed}) is past examined ({examined})")
            }
            Self::ExaminedPastEnd { examined, len } => {
                write!(f, "examined ({examined}) is past the end of the read ({len} bytes)")
            }
        }
    }
}

impl std::error::Error for AdvanceError {}

/// Why a write, commit or flush failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WriteError {
    /// The reader was dropped: nobody will read what is written.
    ReaderClosed,
    /// The writer was closed (by `AsyncWrite::poll_shutdown`).
    Closed,
    /// The pool could not lease a block.
    Lease(LeaseError),
    /// [`Writer::buffer`](crate::Writer::buffer) was asked for more
    /// contiguous bytes than a block holds.
    TooLarge {
        /// The requested minimum.
        requested: usize,
        /// The pool's block size.
        block_size: usize,
    },
    /// [`Writer::commit`](crate::Writer::commit) was given more bytes than
    /// the buffer it returned.
    CommitPastBuffer {
        /// The bytes committed.
        committed: usize,
        /// The bytes available in the buffer.
        available: usize,
    },
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::ReaderClosed => f.write_str("the pipe's reader is closed"),
            Self::Closed => f.write_str("the pipe's writer is closed"),
            Self::Lease(error) => write!(f, "no block for the pipe: {error}"),
            Self::TooLarge { requested, block_size } => {
                write!(f, "{requested} contiguous bytes requested; a block holds {block_size}")
            }
            Self::CommitPastBuffer { committed, available } => {
                write!(f, "committed {committed} bytes; the buffer holds {available}")
            }
        }
    }
}

impl std::error::Error for WriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Lease(error) => Some(error),
            _ => None,
        }
    }
}

/// Why [`Writer::put_slice`](crate::Writer::put_slice) stopped, and how
/// far it got: the first [`committed`](Self::committed) bytes are in the
/// pipe (the reader will see them, unless it is gone), the rest of the
/// slice is not. A caller that retries must start at `committed`. With
/// [`WriteError::ReaderClosed`] the committed bytes were written into a
/// pipe nobody reads: committed, not delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PutError {
    pub(crate) committed: usize,
    pub(crate) error: WriteError,
}

impl PutError {
    /// Bytes of the slice committed before the failure (a prefix).
    pub fn committed(&self) -> usize {
        self.committed
    }

    /// What stopped the write.
    pub fn error(&self) -> WriteError {
        self.error
    }
}

impl fmt::Display for PutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (after committing {} bytes)", self.error, self.committed)
    }
}

impl std::error::Error for PutError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// The cause alone, for callers that close the pipe on any failure.
impl From<PutError> for WriteError {
    fn from(error: PutError) -> Self {
        error.error
    }
}

/// The cause's kind, with the whole error (and its count) as the payload.
impl From<PutError> for std::io::Error {
    fn from(error: PutError) -> Self {
        std::io::Error::new(std::io::Error::from(error.error).kind(), error)
    }
}

impl From<LeaseError> for WriteError {
    fn from(error: LeaseError) -> Self {
        Self::Lease(error)
    }
}

impl From<WriteError> for std::io::Error {
    fn from(error: WriteError) -> Self {
        let kind = match error {
            WriteError::ReaderClosed | WriteError::Closed => std::io::ErrorKind::BrokenPipe,
            WriteError::Lease(_) => std::io::ErrorKind::OutOfMemory,
            WriteError::TooLarge { .. } | WriteError::CommitPastBuffer { .. } => {
                std::io::ErrorKind::InvalidInput
            }
        };
        std::io::Error::new(kind, error)
    }
}

impl From<ReadError> for std::io::Error {
    fn from(error: ReadError) -> Self {
        std::io::Error::other(error)
    }
}
