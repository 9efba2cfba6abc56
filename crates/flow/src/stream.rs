//! A stream's receive side: its own window and its connection's, composed.
//!
//! Every DATA frame counts against both windows (RFC 9113 6.9). The rules
//! that keep the connection's credit exact:
//!
//! - the connection is advanced first: a frame over the connection window
//!   is a connection error, and nothing changes;
//! - then the stream: if the stream refuses the frame (a stream error) or is
//!   aborted (its reader is gone), the bytes will never be consumed, so
//!   they go straight back to the connection (a release, which may ask for
//!   a connection WINDOW_UPDATE). Either way the windows end as if both
//!   counted the frame or neither did;
//! - `abort` returns the stream's unread bytes to the connection exactly
//!   once (the stream window's own abort returns them once), and a release
//!   that comes after the abort gives nothing to the connection.

use std::sync::Arc;

use crate::error::FlowError;
use crate::input::InputWindow;
use crate::input_state::{Advance, Release};
use crate::traits::InputFlow;

/// Which window an error belongs to: it decides between GOAWAY
/// (connection) and RST_STREAM (stream).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The connection window: a connection error.
    Connection,
    /// The stream window: a stream error.
    Stream,
}

/// A refused DATA frame, with the connection WINDOW_UPDATE to send if the
/// refused bytes were given back to the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamFlowError {
    /// Which window refused the frame.
    pub scope: Scope,
    /// Why.
    pub error: FlowError,
    /// A connection WINDOW_UPDATE increment to send, if any.
    pub connection_update: Option<u32>,
}

impl core::fmt::Display for StreamFlowError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{:?} flow control: {}", self.scope, self.error)
    }
}

impl std::error::Error for StreamFlowError {}

/// What a stream's [`release`](StreamInput::release) asks the caller to send:
/// the WINDOW_UPDATE increments for the stream and the connection.
/// ([`try_advance`](StreamInput::try_advance) returns the frame's [`Advance`]
/// and the connection's increment alone.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Updates {
    /// A stream WINDOW_UPDATE increment.
    pub stream: Option<u32>,
    /// A connection WINDOW_UPDATE increment.
    pub connection: Option<u32>,
}

fn update(release: Release) -> Option<u32> {
    match release {
        Release::Update(n) => Some(n),
        Release::Pending | Release::Aborted => None,
    }
}

/// A stream's receive windows: its own plus a shared connection window.
///
/// ```
/// use std::sync::Arc;
/// use falconet_flow::{Advance, InputWindow, StreamInput};
///
/// let connection = Arc::new(InputWindow::new(1 << 20)?);
/// let stream = StreamInput::new(connection.clone(), 65_535)?;
/// assert_eq!(stream.try_advance(16_384).unwrap().0, Advance::Accepted);
/// assert_eq!(connection.available(), (1 << 20) - 16_384);
/// // The reader goes away: its unread bytes return to the connection.
/// stream.abort()?;
/// assert_eq!(connection.available(), 1 << 20);
/// # Ok::<(), falconet_flow::FlowError>(())
/// ```
///
/// # Dropping
///
/// Dropping a `StreamInput` does not abort it: bytes the stream received
/// and nobody released stay counted against the connection, for good.
/// Whoever owns the stream calls [`abort`](Self::abort) (or
/// [`reset`](Self::reset)) when it ends, however its reader went away (a
/// cancelled task, a panic), and sends the connection WINDOW_UPDATE that
/// returns. A `Drop` could give the bytes back to the connection's window
/// but could not announce them, and a peer never told of credit never
/// uses it: the same stall, hidden. ([`Grant`](crate::Grant) and
/// [`StreamGrant`](crate::StreamGrant) give credit back on drop because
/// send credit is ours alone: nothing is owed to the peer.)
///
/// ```
/// use std::sync::Arc;
/// use falconet_flow::{InputWindow, StreamInput};
///
/// // Announces credit past 16 KiB.
/// let connection = Arc::new(InputWindow::with_threshold(65_535, 16_384)?);
/// let stream = StreamInput::new(connection.clone(), 65_535)?;
/// stream.try_advance(40_000).unwrap();
/// drop(stream); // its reader was cancelled, and nobody aborted it
/// assert_eq!(connection.available(), 25_535); // the 40,000 bytes are lost
///
/// let stream = StreamInput::new(connection.clone(), 65_535)?;
/// stream.try_advance(20_000).unwrap();
/// // Its owner aborts it and sends the connection WINDOW_UPDATE due.
/// assert_eq!(stream.abort()?, Some(20_000));
/// assert_eq!(connection.available(), 25_535);
/// # Ok::<(), falconet_flow::FlowError>(())
/// ```
#[derive(Debug)]
pub struct StreamInput<W: InputFlow = InputWindow> {
    connection: Arc<W>,
    stream: W,
}

impl<W: InputFlow> StreamInput<W> {
    /// A stream of `initial` bytes on `connection`, announcing credit past
    /// half its window.
    ///
    /// # Errors
    /// [`FlowError::InitialTooLarge`] above 2^31-1.
    pub fn new(connection: Arc<W>, initial: u32) -> Result<Self, FlowError> {
        Self::with_threshold(connection, initial, initial / 2)
    }

    /// A stream of `initial` bytes on `connection` that announces credit
    /// once strictly more than `threshold` bytes are pending (see
    /// [`InputFlow::with_threshold`]).
    ///
    /// # Errors
    /// [`FlowError::InitialTooLarge`] above 2^31-1,
    /// [`FlowError::ThresholdTooLarge`] unless `threshold < initial` (or
    /// both are 0).
    pub fn with_threshold(
        connection: Arc<W>,
        initial: u32,
        threshold: u32,
    ) -> Result<Self, FlowError> {
        Ok(Self { connection, stream: W::with_threshold(initial, threshold)? })
    }

    /// A DATA frame of `n` bytes for this stream. Returns what the stream
    /// did with it and a connection WINDOW_UPDATE to send, if any.
    ///
    /// # Errors
    /// [`StreamFlowError`] with the scope of the window that refused it.
    pub fn try_advance(&self, n: u32) -> Result<(Advance, Option<u32>), StreamFlowError> {
        let counted = self.connection.try_advance(n).map_err(|error| StreamFlowError {
            scope: Scope::Connection,
            error,
            connection_update: None,
        })?;
        if counted == Advance::Aborted {
            // The connection is gone: nothing more to account.
            return Ok((Advance::Aborted, None));
        }
        let give_back = |this: &Self| this.connection.release(n).map(update);
        let (counted, abort_took_it) = self.stream.try_advance_counting_abort(n);
        match counted {
            Ok(Advance::Accepted) => Ok((Advance::Accepted, None)),
            Ok(Advance::Aborted) => {
                let connection_update = give_back(self).map_err(|error| StreamFlowError {
                    scope: Scope::Connection,
                    error,
                    connection_update: None,
                })?;
                Ok((Advance::Aborted, connection_update))
            }
            Err(error) => {
                // Unless a racing abort already returned the frame's bytes.
                let connection_update =
                    if abort_took_it { None } else { give_back(self).ok().flatten() };
                Err(StreamFlowError { scope: Scope::Stream, error, connection_update })
            }
        }
    }

    /// The application consumed `n` bytes of this stream: both windows get
    /// them back. After the stream's abort this gives nothing (the abort
    /// already returned them).
    ///
    /// # Errors
    /// [`FlowError::OverRelease`] when more is released than this stream
    /// consumed (nothing changes), or when the connection refuses what the
    /// stream took back: its accounting disagrees because bytes of this
    /// stream were released on the connection directly, a caller's bug.
    /// The stream's window keeps its part then (the two steps are not one
    /// atomic change; no stream WINDOW_UPDATE is reported), as for
    /// [`abort`](Self::abort).
    pub fn release(&self, n: u32) -> Result<Updates, FlowError> {
        let stream = self.stream.release(n)?;
        if stream == Release::Aborted {
            return Ok(Updates::default());
        }
        let connection = update(self.connection.release(n)?);
        Ok(Updates { stream: update(stream), connection })
    }

    /// The stream's reader is gone: its unread bytes return to the
    /// connection, exactly once. Returns a connection WINDOW_UPDATE to send,
    /// if any.
    ///
    /// # Errors
    /// [`FlowError::OverRelease`] if the connection's accounting disagrees.
    pub fn abort(&self) -> Result<Option<u32>, FlowError> {
        match self.stream.abort() {
            0 => Ok(None),
            unread => Ok(update(self.connection.release(unread)?)),
        }
    }

    /// END_STREAM seen: no more stream WINDOW_UPDATEs.
    pub fn disable_updates(&self) {
        self.stream.disable_updates();
    }

    /// Makes this stream's side new again for another stream of the same
    /// connection (`initial` bytes, as [`new`](Self::new)): a connection
    /// reuses the allocation of a stream whose handles are all gone. The
    /// old stream is aborted first, as by [`abort`](Self::abort): bytes it
    /// received and nobody consumed go back to the connection, and the
    /// connection WINDOW_UPDATE that may make due is returned, to send.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use falconet_flow::{InputWindow, StreamInput};
    ///
    /// let connection = Arc::new(InputWindow::new(100)?);
    /// let mut stream = StreamInput::new(connection.clone(), 100)?;
    /// stream.try_advance(60).unwrap(); // never read: its reader is gone
    /// // The 60 bytes are the connection's again (past half its window).
    /// assert_eq!(stream.reset(100)?, Some(60));
    /// assert_eq!(connection.state().window, 100);
    /// # Ok::<(), falconet_flow::FlowError>(())
    /// ```
    ///
    /// # Errors
    /// [`FlowError::InitialTooLarge`] above 2^31-1 (nothing changes);
    /// [`FlowError::OverRelease`] as [`abort`](Self::abort)'s, when the
    /// connection's accounting disagrees (the stream is new all the same).
    pub fn reset(&mut self, initial: u32) -> Result<Option<u32>, FlowError> {
        self.reset_with_threshold(initial, initial / 2)
    }

    /// [`reset`](Self::reset) to a window that announces credit past
    /// `threshold` pending bytes.
    ///
    /// # Errors
    /// As [`with_threshold`](Self::with_threshold) (the stream is
    /// unchanged then), or as [`reset`](Self::reset).
    pub fn reset_with_threshold(
        &mut self,
        initial: u32,
        threshold: u32,
    ) -> Result<Option<u32>, FlowError> {
        let fresh = W::with_threshold(initial, threshold)?;
        let returned = self.abort();
        self.stream = fresh;
        returned
    }

    /// The stream's own window.
    pub fn stream(&self) -> &W {
        &self.stream
    }

    /// The connection window.
    pub fn connection(&self) -> &Arc<W> {
        &self.connection
    }
}
