//! Pipe options: back-pressure thresholds and the socket-read rule.

use crate::error::OptionsError;
use crate::state::COUNT_MAX;

/// Default `pause_at`: the writer's flush waits once this many bytes are
/// unexamined (System.IO.Pipelines' default).
pub const DEFAULT_PAUSE_AT: u64 = 64 * 1024;
/// Default `resume_at`: a paused writer resumes below this many (half of
/// `pause_at`, as `resume_at` is derived when only `pause_at` is set).
pub const DEFAULT_RESUME_AT: u64 = DEFAULT_PAUSE_AT / 2;

/// How a pipe behaves; checked by [`pipe`](crate::pipe).
///
/// ```
/// let options = falconet_pipe::Options::new().pause_at(128 * 1024).resume_at(16 * 1024);
/// let pool = falconet_pipe::Pool::new();
/// let (_writer, _reader) = falconet_pipe::pipe(&pool, options)?;
/// # Ok::<(), falconet_pipe::OptionsError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// `None`: no back-pressure.
    pause_at: Option<u64>,
    /// `None`: half of `pause_at` (at least 1).
    resume_at: Option<u64>,
    /// `None`: a quarter of a block.
    pub(crate) min_read_space: Option<usize>,
    /// Whether emptied blocks stay for a waiting writer.
    keep_blocks: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self::new()
    }
}

impl Options {
    /// The defaults: pause at 64 KiB unexamined, resume below 32 KiB, and
    /// a minimum read space of a quarter of a block (1 KiB of 4 KiB).
    pub const fn new() -> Self {
        Self {
            pause_at: Some(DEFAULT_PAUSE_AT),
            resume_at: None,
            min_read_space: None,
            keep_blocks: true,
        }
    }

    /// The writer's [`flush`](crate::Writer::flush) waits once at least
    /// `bytes` committed bytes are unexamined by the reader. Unless
    /// [`resume_at`](Self::resume_at) is set too, the writer resumes below
    /// half of it (System.IO.Pipelines' rule). Must be at least 1. Turns
    /// back-pressure on again after
    /// [`without_back_pressure`](Self::without_back_pressure).
    pub const fn pause_at(mut self, bytes: u64) -> Self {
        self.pause_at = Some(bytes);
        self
    }

    /// A paused writer resumes once fewer than `bytes` are unexamined. Must
    /// be at least 1 (a writer waiting for "fewer than 0" would wait forever)
    /// and at most `pause_at`. Has no effect without back-pressure.
    pub const fn resume_at(mut self, bytes: u64) -> Self {
        self.resume_at = Some(bytes);
        self
    }

    /// No back-pressure: `flush` never waits. The pipe then buffers whatever
    /// the writer commits, up to what the pool can lease. A later
    /// [`resume_at`](Self::resume_at) leaves it so; a later
    /// [`pause_at`](Self::pause_at) turns back-pressure on.
    pub const fn without_back_pressure(mut self) -> Self {
        self.pause_at = None;
        self.resume_at = None;
        self
    }

    /// The pause threshold, `None` without back-pressure.
    pub const fn pause_threshold(&self) -> Option<u64> {
        self.pause_at
    }

    /// The resume threshold as it will be used: set, or derived from
    /// `pause_at` (half of it, at least 1); `None` without back-pressure.
    pub const fn resume_threshold(&self) -> Option<u64> {
        match (self.pause_at, self.resume_at) {
            (None, _) => None,
            (Some(_), Some(resume_at)) => Some(resume_at),
            (Some(pause_at), None) => Some(if pause_at / 2 > 1 { pause_at / 2 } else { 1 }),
        }
    }

    /// [`Writer::read_from`](crate::Writer::read_from) reads into the tail
    /// block while at least `bytes` of it are free, and into a fresh block
    /// otherwise, so small reads share a block and large ones get room
    /// (Kestrel's 2 KiB rule). Between 1 and the pool's block size.
    ///
    /// The default is a quarter of a block, measured
    /// (`benches/src/bin/pipe_read_space.rs`, HTTP-sized bursts into a
    /// lagging pipe): half a block (Kestrel's choice) filled blocks to 78%,
    /// a quarter to 93%, for 1.18 and 1.19 reads per burst; below that the
    /// fill gains little and the extra reads grow.
    pub const fn min_read_space(mut self, bytes: usize) -> Self {
        self.min_read_space = Some(bytes);
        self
    }

    /// Whether the blocks the reader empties while the writer waits on
    /// back-pressure stay in the pipe for the writer's next writes (the
    /// default) or go back to the pool at once, as they do when the writer
    /// does not wait. Keeping them spares each block a trip through the
    /// pool from the reader's thread to the writer's (64 KiB writes across
    /// cores about 1.2-1.4x faster, `docs/benchmarks.md`); not keeping them
    /// holds the pipe's pool use, at every moment, to the blocks of its
    /// unread bytes, the one the writer fills and the reader's last until
    /// it reads past it (an idle pipe whose bytes were all read holds one
    /// block, or two when the writer began a fresh one since), for a
    /// server that bounds memory per connection. With them kept, a
    /// writer that wakes writes into them before it leases, so the pipe's
    /// pool use stays within what it held when the writer paused; those it
    /// does not reuse stay until [`Writer::trim`](crate::Writer::trim) or
    /// the writer's close.
    pub const fn keep_blocks(mut self, keep: bool) -> Self {
        self.keep_blocks = keep;
        self
    }

    /// Checks the options against a pool's block size.
    pub(crate) fn validate(self, block_size: usize) -> Result<Config, OptionsError> {
        let (pause_at, resume_at) = match (self.pause_threshold(), self.resume_threshold()) {
            (Some(0), _) => return Err(OptionsError::PauseAtZero),
            (Some(pause_at), Some(resume_at)) => (pause_at, resume_at),
            _ => (u64::MAX, u64::MAX),
        };
        if resume_at == 0 {
            return Err(OptionsError::ResumeAtZero);
        }
        if resume_at > pause_at {
            return Err(OptionsError::ResumeAbovePause { pause_at, resume_at });
        }
        let min_read_space = self.min_read_space.unwrap_or((block_size / 4).max(1));
        if min_read_space == 0 || min_read_space > block_size {
            return Err(OptionsError::ReadSpace { requested: min_read_space, block_size });
        }
        // The unexamined count never exceeds COUNT_MAX, so a larger
        // threshold means "never".
        Ok(Config {
            pause_at: pause_at.min(COUNT_MAX + 1),
            resume_at: resume_at.min(COUNT_MAX + 1),
            min_read_space,
            block_size,
            keep_blocks: self.keep_blocks,
        })
    }
}

/// Validated options plus the pool's block size.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Config {
    pub(crate) pause_at: u64,
    pub(crate) resume_at: u64,
    pub(crate) min_read_space: usize,
    pub(crate) block_size: usize,
    pub(crate) keep_blocks: bool,
}
