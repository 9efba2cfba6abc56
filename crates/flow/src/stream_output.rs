//! A stream's send side: its own window and its connection's, composed.
//!
//! Every DATA frame counts against both windows (RFC 9113 6.9). Go's
//! `net/http2` takes from both or neither (`takeInflows` on the receive
//! side; on the send side its write scheduler takes `min(stream,
//! connection)` from both), made atomic by running on one goroutine. Here
//! each window is its own CAS word ([`OutputWindow`]) and the connection's
//! is shared by every stream, so a grant takes two steps; this module says
//! what those two steps guarantee.
//!
//! # States and transitions
//!
//! Each window splits its credit into *free*, *held* and *sent*
//! (`output_state.rs`). The composition keeps one invariant between calls:
//! **every byte a stream holds through its [`StreamOutput`] is held on the
//! connection too**, so settling it settles both. The transitions:
//!
//! - [`try_hold(max)`](StreamOutput::try_hold): *stream hold* (take `s =
//!   min(max, stream free)` from the stream), then *connection hold* (take
//!   `c = min(s, connection free)` from the connection), then *stream
//!   return* (give the `s - c` the connection could not match back to the
//!   stream). The grant is `c`, held on both. Between the first and last
//!   step the stream holds `s - c` more than the connection: the
//!   *transient excess*, never on the shared window. If the connection is
//!   aborted, the stream return gives back all of `s` and the call fails.
//! - [`try_reserve(max)`](StreamOutput::try_reserve): the same with the
//!   connection step counting the bytes as sent, and the stream return
//!   settling `c` as sent: nothing stays held.
//! - [`sent(n)`](StreamOutput::sent): `n` held bytes went out; the stream,
//!   then the connection, count them sent.
//! - [`give_back(n)`](StreamOutput::give_back): `n` held bytes never will;
//!   the stream, then the connection, take them back as free credit.
//! - [`abort()`](StreamOutput::abort): the stream window aborts; holds and
//!   reservations on it fail from then on. Credit already held stays held
//!   until its holder settles it (a [`StreamGrant`] does on drop), so the
//!   connection gets it back exactly once.
//!
//! The stream is always settled first: it is the count that knows what
//! this stream holds, so its refusal ([`FlowError::NotHeld`]) comes before
//! the shared window is touched. The connection can then refuse only if its
//! held credit was settled directly, behind the stream's back.
//!
//! # What a grant guarantees
//!
//! Let `t1` be the instant of the stream step and `t2 > t1` that of the
//! connection step. The grant is exactly `min(max, stream free at t1,
//! connection free at t2)`. Hence:
//!
//! - **never more than the credit**: each window gives at most what it had
//!   free at its own instant, and each window's count is exact (one CAS per
//!   step, linearizable);
//! - **no credit lost or created**: when the call returns, the stream and
//!   the connection hold the same grant, and the transient excess is back;
//! - **no spurious zero**: `Ok(0)` means `max` was 0, the stream had no free
//!   credit at `t1`, or the connection none at `t2`; a call during which
//!   both windows keep free credit is granted at least 1 byte.
//!
//! It is not one atomic step: a grant may pair the stream's credit from
//! before a SETTINGS shrink with the connection's from after a
//! WINDOW_UPDATE. That is the race a single window already has (credit
//! taken just before a shrink is spent after it), which RFC 9113 6.9.3 asks
//! receivers to tolerate. With several writers on one stream, one of them
//! may find the stream short while another's transient excess is out (at
//! most until that call returns); with one writer per stream, as HTTP/2
//! servers have, the stream side is exact too. The connection is never
//! over-held, so no stream ever sees a shortage on it that is not real.
//!
//! Settle held bytes ([`sent`](StreamOutput::sent), or
//! [`StreamGrant::sent`]) before the frame can reach the peer: a
//! WINDOW_UPDATE for bytes still counted as held would be checked against a
//! window that includes them twice.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::sync::Arc;

use crate::error::FlowError;
use crate::output::{Key, OutputWindow, usable};
use crate::output_state::{Aborted, OutputState};
use crate::traits::OutputFlow;

/// A stream's send windows: its own plus a shared connection window.
///
/// A grant takes two steps, the stream then the connection, and is exactly
/// `min(max, stream free at t1, connection free at t2)` for the two
/// instants `t1 < t2` of the call: never more than either window had free,
/// no credit lost or created (any excess the stream gave is back before
/// the call returns), and `Ok(0)` only when one of the two had nothing free
/// at its instant. It is not one atomic step: a grant may pair the
/// stream's credit from before a SETTINGS shrink with the connection's
/// from after a WINDOW_UPDATE, the race a single window's reservation
/// already has. With several writers on one stream, one may find the
/// stream short while another's excess is out; the connection is never
/// held beyond what is granted. Settle held bytes before the frame can
/// reach the peer.
///
/// ```
/// use std::sync::Arc;
/// use falconet_flow::{OutputWindow, StreamOutput};
///
/// let connection = Arc::new(OutputWindow::new(65_535)?);
/// let stream = StreamOutput::new(connection.clone(), 100_000)?;
/// // min(max, stream, connection), taken from both.
/// let held = stream.try_hold(80_000)?;
/// assert_eq!(held, 65_535);
/// assert_eq!((stream.stream().available(), connection.available()), (34_465, 0));
/// stream.sent(16_384)?;                // one DATA frame went out
/// stream.give_back(held - 16_384)?;    // the rest waits for the next turn
/// assert_eq!(connection.available(), 65_535 - 16_384);
/// assert_eq!((stream.stream().held(), connection.held()), (0, 0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Waiting for credit
///
/// [`grant(max)`](Self::grant) (for the CAS windows) waits until both
/// windows have credit and takes it as [`try_grant`](Self::try_grant)
/// does: a [`StreamGrant`], held on both, given back on drop if not sent.
/// It takes nothing while it waits, so a timeout or a cancelled task
/// around it leaves both windows as they were, and it fails with
/// [`Aborted`] as soon as either window is aborted, also while it waits
/// for the other's credit.
///
/// Waiting with each window's own [`reserve`](OutputWindow::reserve), one
/// after the other, is not cancel-safe: reserved credit counts as sent, so
/// a writer cancelled between the two steps (or between two connection
/// reservations) leaves credit that nothing sent and nothing gives back,
/// on the stream and on the connection every stream shares.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use falconet_flow::{OutputWindow, StreamOutput};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build()?.block_on(async {
/// let connection = Arc::new(OutputWindow::new(0)?);
/// let output = StreamOutput::new(connection.clone(), 10)?;
/// // Nothing on the connection: a timeout ends the wait, taking nothing.
/// let waited = tokio::time::timeout(Duration::from_millis(1), output.grant(100)).await;
/// assert!(waited.is_err());
/// assert_eq!((output.stream().available(), connection.available()), (10, 0));
/// let writer = async {
///     let mut grant = output.grant(100).await?; // min(100, 10, 4)
///     let n = grant.len();
///     grant.sent(n)?; // a DATA frame of n bytes went out
///     Ok::<u32, Box<dyn std::error::Error>>(n)
/// };
/// let peer = async {
///     tokio::task::yield_now().await; // the writer waits
///     connection.increase(4)
/// };
/// let (sent, updated) = tokio::join!(writer, peer);
/// updated?;
/// assert_eq!(sent?, 4);
/// assert_eq!((output.stream().available(), connection.available()), (6, 0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Dropping
///
/// Credit taken by [`try_hold`](Self::try_hold) is a plain number: it stays
/// held on the connection until [`sent`](Self::sent) or
/// [`give_back`](Self::give_back) settles it, whatever happens to the
/// `StreamOutput` (dropping it settles nothing). A holder that may be
/// cancelled between taking credit and sending takes a
/// [`StreamGrant`] instead ([`try_grant`](Self::try_grant)), which gives
/// back on drop what it did not send. [`try_reserve`](Self::try_reserve)
/// holds nothing: what it takes counts as sent.
#[derive(Debug)]
pub struct StreamOutput<W: OutputFlow = OutputWindow> {
    connection: Arc<W>,
    stream: W,
}

impl<W: OutputFlow> StreamOutput<W> {
    /// A stream with a send window of `initial` bytes (the peer's
    /// SETTINGS_INITIAL_WINDOW_SIZE) on `connection`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use falconet_flow::{FlowError, MAX_WINDOW, OutputWindow, StreamOutput};
    ///
    /// let connection = Arc::new(OutputWindow::new(65_535)?);
    /// assert!(StreamOutput::new(connection.clone(), MAX_WINDOW).is_ok());
    /// assert_eq!(
    ///     StreamOutput::new(connection, MAX_WINDOW + 1).err(),
    ///     Some(FlowError::InitialTooLarge { initial: MAX_WINDOW + 1 })
    /// );
    /// # Ok::<(), FlowError>(())
    /// ```
    ///
    /// # Errors
    /// [`FlowError::InitialTooLarge`] above 2^31-1.
    pub fn new(connection: Arc<W>, initial: u32) -> Result<Self, FlowError> {
        Ok(Self { connection, stream: W::with_initial(initial)? })
    }

    /// Takes `min(max, stream, connection)` bytes from both windows and
    /// holds them until [`sent`](Self::sent) or
    /// [`give_back`](Self::give_back) settles them (module docs: the two
    /// steps and what they guarantee).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use falconet_flow::{Aborted, OutputWindow, StreamOutput};
    ///
    /// let connection = Arc::new(OutputWindow::new(10)?);
    /// let stream = StreamOutput::new(connection.clone(), 100)?;
    /// assert_eq!(stream.try_hold(50), Ok(10)); // the connection's 10
    /// assert_eq!(stream.try_hold(50), Ok(0));  // the connection is empty
    /// assert_eq!(stream.stream().available(), 90); // the excess came back
    /// stream.abort();
    /// assert_eq!(stream.try_hold(1), Err(Aborted));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Aborted`] when either window is aborted (nothing is held then).
    pub fn try_hold(&self, max: u32) -> Result<u32, Aborted> {
        self.take(max, W::try_hold)
    }

    /// Takes `min(max, stream, connection)` bytes from both windows,
    /// counted as sent at once (as [`OutputWindow::try_reserve`]). Use
    /// [`try_hold`](Self::try_hold) or [`try_grant`](Self::try_grant) when
    /// some of it may stay unsent.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use falconet_flow::{OutputWindow, StreamOutput};
    ///
    /// let connection = Arc::new(OutputWindow::new(1_000)?);
    /// let stream = StreamOutput::new(connection.clone(), 300)?;
    /// assert_eq!(stream.try_reserve(500), Ok(300));
    /// assert_eq!((stream.stream().available(), connection.available()), (0, 700));
    /// assert_eq!((stream.stream().held(), connection.held()), (0, 0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Aborted`] when either window is aborted (nothing is taken then).
    pub fn try_reserve(&self, max: u32) -> Result<u32, Aborted> {
        let granted = self.take(max, W::try_reserve)?;
        if granted > 0 {
            // Held on the stream by `take`: cannot be refused.
            let _ = self.stream.sent(granted);
        }
        Ok(granted)
    }

    /// [`try_hold`](Self::try_hold) as a [`StreamGrant`], which gives what
    /// it did not send back to both windows when dropped.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use falconet_flow::{OutputWindow, StreamOutput};
    ///
    /// let connection = Arc::new(OutputWindow::new(65_535)?);
    /// let stream = StreamOutput::new(connection.clone(), 65_535)?;
    /// {
    ///     let mut grant = stream.try_grant(16_384)?;
    ///     grant.sent(1_000)?;
    /// } // RST_STREAM before the rest went out: 15_384 bytes come back
    /// assert_eq!(connection.available(), 64_535);
    /// assert_eq!(stream.stream().available(), 64_535);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Aborted`] when either window is aborted.
    pub fn try_grant(&self, max: u32) -> Result<StreamGrant<'_, W>, Aborted> {
        Ok(StreamGrant { output: self, held: self.try_hold(max)? })
    }

    /// The stream step, then the connection step (`connection_take`),
    /// then the stream return; see the module docs.
    #[inline]
    fn take(
        &self,
        max: u32,
        connection_take: impl FnOnce(&W, u32) -> Result<u32, Aborted>,
    ) -> Result<u32, Aborted> {
        let held = self.stream.try_hold(max)?;
        if held == 0 {
            // No step on the connection, but an aborted connection still
            // says so: a writer waiting for stream credit would wait for
            // ever.
            return if self.connection.state().aborted { Err(Aborted) } else { Ok(0) };
        }
        let taken = connection_take(&self.connection, held);
        let granted = taken.unwrap_or(0);
        if granted < held {
            // The transient excess: held on the stream above, so the
            // stream cannot refuse it.
            let _ = self.stream.give_back(held - granted);
        }
        taken
    }

    /// `n` held bytes were sent: both windows count them sent, the stream
    /// first.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use falconet_flow::{FlowError, OutputWindow, StreamOutput};
    ///
    /// let stream = StreamOutput::new(Arc::new(OutputWindow::new(100)?), 100)?;
    /// stream.try_hold(10)?;
    /// assert_eq!(stream.sent(11), Err(FlowError::NotHeld { requested: 11, held: 10 }));
    /// stream.sent(10)?;
    /// assert_eq!(stream.connection().state().flow_window(), 90);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`FlowError::NotHeld`] when the stream holds less than `n` (nothing
    /// changes), or when the connection does, which only settling the
    /// connection directly can cause (the stream is settled then).
    pub fn sent(&self, n: u32) -> Result<(), FlowError> {
        self.stream.sent(n)?;
        self.connection.sent(n)
    }

    /// `n` held bytes will not be sent: both windows get them back as free
    /// credit, the stream first (and each wakes its waiting
    /// [`reserve`](OutputWindow::reserve), if any).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use falconet_flow::{FlowError, OutputWindow, StreamOutput};
    ///
    /// let stream = StreamOutput::new(Arc::new(OutputWindow::new(100)?), 100)?;
    /// let held = stream.try_hold(40)?;
    /// stream.give_back(held)?;
    /// assert_eq!(stream.give_back(1), Err(FlowError::NotHeld { requested: 1, held: 0 }));
    /// assert_eq!(stream.connection().available(), 100);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`sent`](Self::sent).
    pub fn give_back(&self, n: u32) -> Result<(), FlowError> {
        self.stream.give_back(n)?;
        self.connection.give_back(n)
    }

    /// The stream is gone (RST_STREAM sent or received): holds and
    /// reservations fail from now on. Credit already held stays held until
    /// its holder settles it; a [`StreamGrant`] gives it back on drop.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use falconet_flow::{Aborted, OutputWindow, StreamOutput};
    ///
    /// let connection = Arc::new(OutputWindow::new(100)?);
    /// let stream = StreamOutput::new(connection.clone(), 100)?;
    /// let grant = stream.try_grant(60)?;
    /// stream.abort();
    /// assert_eq!(stream.try_hold(1), Err(Aborted));
    /// drop(grant); // the writer notices: its credit returns to the connection
    /// assert_eq!(connection.available(), 100);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn abort(&self) {
        self.stream.abort();
    }

    /// The stream's own window (for its WINDOW_UPDATE and SETTINGS
    /// changes: `stream().increase(n)`,
    /// `stream().apply_initial_window_delta(delta)`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use falconet_flow::{OutputWindow, StreamOutput};
    ///
    /// let stream = StreamOutput::new(Arc::new(OutputWindow::new(100)?), 0)?;
    /// assert_eq!(stream.try_hold(10), Ok(0));
    /// stream.stream().increase(10)?; // WINDOW_UPDATE on the stream
    /// assert_eq!(stream.try_hold(10), Ok(10));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn stream(&self) -> &W {
        &self.stream
    }

    /// The connection window, shared with the other streams.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use falconet_flow::{OutputWindow, StreamOutput};
    ///
    /// let connection = Arc::new(OutputWindow::new(0)?);
    /// let stream = StreamOutput::new(connection.clone(), 100)?;
    /// assert!(Arc::ptr_eq(stream.connection(), &connection));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn connection(&self) -> &Arc<W> {
        &self.connection
    }
}

impl StreamOutput<OutputWindow> {
    /// Waits until both windows have credit, then takes up to `max` bytes
    /// of it from both, as [`try_grant`](Self::try_grant) does; `max` 0
    /// is an empty grant at once. Cancel-safe: nothing is taken while it
    /// waits, and a dropped future leaves no waker behind (see "Waiting
    /// for credit" above).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use falconet_flow::{Aborted, OutputWindow, StreamOutput};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
    /// let connection = Arc::new(OutputWindow::new(0)?);
    /// let output = StreamOutput::new(connection.clone(), 10)?;
    /// // The stream is reset while its writer waits for connection credit.
    /// let (granted, ()) = tokio::join!(output.grant(5), async { output.abort() });
    /// assert_eq!(granted.unwrap_err(), Aborted);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Aborted`] when either window is aborted, also while waiting.
    pub fn grant(&self, max: u32) -> Granting<'_> {
        Granting { output: self, max, stream_key: None, connection_key: None }
    }
}

/// The future of [`StreamOutput::grant`]. Dropping it before it is ready
/// cancels the wait: nothing was taken, and its wakers leave both windows
/// at once. Polled again after it was ready, it waits for and takes
/// another grant, as a [`Reserve`](crate::Reserve) polled again takes more
/// credit.
#[must_use = "futures do nothing unless polled"]
#[derive(Debug)]
pub struct Granting<'a> {
    output: &'a StreamOutput<OutputWindow>,
    max: u32,
    /// This future's waker slot in each window, once it has waited.
    stream_key: Option<Key>,
    connection_key: Option<Key>,
}

impl Granting<'_> {
    fn stop_waiting(&mut self) {
        self.output.stream.stop_waiting(&mut self.stream_key);
        self.output.connection.stop_waiting(&mut self.connection_key);
    }
}

impl<'a> Future for Granting<'a> {
    type Output = Result<StreamGrant<'a, OutputWindow>, Aborted>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let output = this.output;
        loop {
            // Only a grant that may succeed is tried: a failed one gives
            // the stream's credit back, a transition that would wake this
            // very future again, and again, while the connection has none.
            if this.max == 0 || may_grant(output.stream.state(), output.connection.state()) {
                match output.try_grant(this.max) {
                    // Taken by another stream since the look: wait.
                    Ok(grant) if grant.is_empty() && this.max > 0 => {}
                    result => {
                        this.stop_waiting();
                        return Poll::Ready(result);
                    }
                }
            }
            // Watch both windows, the one with credit too, for its abort
            // (a transition: `output.rs` module docs); each watch looks at
            // its word again after leaving the waker, so a change since
            // the look above is seen.
            let stream = output.stream.watch(cx, &mut this.stream_key);
            let connection = output.connection.watch(cx, &mut this.connection_key);
            if !may_grant(stream, connection) {
                return Poll::Pending;
            }
        }
    }
}

/// Whether a grant may be made (credit on both windows) or must fail (an
/// abort).
fn may_grant(stream: OutputState, connection: OutputState) -> bool {
    stream.aborted || connection.aborted || (usable(stream) && usable(connection))
}

impl Drop for Granting<'_> {
    fn drop(&mut self) {
        self.stop_waiting();
    }
}

/// Send credit held from a stream and its connection: settle what is sent
/// with [`sent`](Self::sent); the rest returns to both windows on drop (or
/// with [`give_back`](Self::give_back)).
///
/// ```
/// use std::sync::Arc;
/// use falconet_flow::{OutputWindow, StreamOutput};
///
/// let connection = Arc::new(OutputWindow::new(1 << 20)?);
/// let stream = StreamOutput::new(connection.clone(), 65_535)?;
/// let mut grant = stream.try_grant(16_384)?;
/// assert_eq!(grant.len(), 16_384);
/// grant.sent(grant.len())?; // the whole frame went out
/// assert!(grant.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "dropping a grant gives its credit back at once"]
#[derive(Debug)]
pub struct StreamGrant<'a, W: OutputFlow = OutputWindow> {
    output: &'a StreamOutput<W>,
    held: u32,
}

impl<'a, W: OutputFlow> StreamGrant<'a, W> {
    /// Bytes still held: granted and neither sent nor given back.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use falconet_flow::{OutputWindow, StreamOutput};
    ///
    /// let stream = StreamOutput::new(Arc::new(OutputWindow::new(5)?), 100)?;
    /// assert_eq!(stream.try_grant(8)?.len(), 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn len(&self) -> u32 {
        self.held
    }

    /// Whether nothing is held.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use falconet_flow::{OutputWindow, StreamOutput};
    ///
    /// let stream = StreamOutput::new(Arc::new(OutputWindow::new(0)?), 100)?;
    /// assert!(stream.try_grant(8)?.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.held == 0
    }

    /// `n` of the held bytes were sent: both windows count them sent.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use falconet_flow::{FlowError, OutputWindow, StreamOutput};
    ///
    /// let stream = StreamOutput::new(Arc::new(OutputWindow::new(100)?), 100)?;
    /// let mut grant = stream.try_grant(10)?;
    /// assert_eq!(grant.sent(11), Err(FlowError::NotHeld { requested: 11, held: 10 }));
    /// grant.sent(10)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`FlowError::NotHeld`] when `n` is more than the grant holds
    /// (nothing changes), or as [`StreamOutput::sent`].
    pub fn sent(&mut self, n: u32) -> Result<(), FlowError> {
        if n > self.held {
            return Err(FlowError::NotHeld { requested: n, held: self.held });
        }
        // The stream refuses before anything changes; once it accepted,
        // the bytes are settled whatever the connection says.
        self.output.stream.sent(n)?;
        self.held -= n;
        self.output.connection.sent(n)
    }

    /// Gives the rest back to both windows now (what dropping does, with
    /// the error reported).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use falconet_flow::{OutputWindow, StreamOutput};
    ///
    /// let connection = Arc::new(OutputWindow::new(100)?);
    /// let stream = StreamOutput::new(connection.clone(), 100)?;
    /// stream.try_grant(40)?.give_back()?;
    /// assert_eq!(connection.available(), 100);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`StreamOutput::give_back`] (the grant is spent either way).
    pub fn give_back(mut self) -> Result<(), FlowError> {
        let rest = core::mem::take(&mut self.held);
        if rest == 0 { Ok(()) } else { self.output.give_back(rest) }
    }

    /// Ends the token without settling: the bytes stay held on both
    /// windows, for [`StreamOutput::sent`] and [`StreamOutput::give_back`].
    /// Returns how many.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use falconet_flow::{OutputWindow, StreamOutput};
    ///
    /// let stream = StreamOutput::new(Arc::new(OutputWindow::new(100)?), 100)?;
    /// let held = stream.try_grant(30)?.detach();
    /// assert_eq!(stream.connection().held(), 30);
    /// stream.give_back(held)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use = "the detached bytes stay held until given back"]
    pub fn detach(mut self) -> u32 {
        core::mem::take(&mut self.held)
    }

    /// The stream the credit is held from.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use falconet_flow::{OutputWindow, StreamOutput};
    ///
    /// let stream = StreamOutput::new(Arc::new(OutputWindow::new(100)?), 100)?;
    /// let grant = stream.try_grant(10)?;
    /// assert_eq!(grant.output().connection().held(), 10);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn output(&self) -> &'a StreamOutput<W> {
        self.output
    }
}

impl<W: OutputFlow> Drop for StreamGrant<'_, W> {
    fn drop(&mut self) {
        if self.held > 0 {
            // Refused only if held credit was settled behind the grant's
            // back: nothing is left to return then.
            let _ = self.output.give_back(self.held);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MAX_WINDOW, OutputState, StdOutputWindow};

    fn pair(connection: u32, stream: u32) -> (Arc<OutputWindow>, StreamOutput) {
        let connection = Arc::new(OutputWindow::new(connection).unwrap());
        let stream = StreamOutput::new(connection.clone(), stream).unwrap();
        (connection, stream)
    }

    fn state(window: i32, held: u32, aborted: bool) -> OutputState {
        OutputState { window, held, aborted }
    }

    #[test]
    fn initial_windows_at_their_edges() {
        for initial in [0, 1, MAX_WINDOW] {
            let (_, stream) = pair(0, initial);
            assert_eq!(stream.stream().state(), state(initial as i32, 0, false));
        }
        let connection = Arc::new(OutputWindow::new(0).unwrap());
        for initial in [MAX_WINDOW + 1, u32::MAX] {
            assert_eq!(
                StreamOutput::new(connection.clone(), initial).err(),
                Some(FlowError::InitialTooLarge { initial })
            );
        }
    }

    #[test]
    fn holds_take_the_smallest_of_max_stream_and_connection() {
        let (connection, stream) = pair(MAX_WINDOW, MAX_WINDOW);
        assert_eq!(stream.try_hold(0), Ok(0));
        assert_eq!(stream.try_hold(1), Ok(1));
        assert_eq!(stream.try_hold(u32::MAX), Ok(MAX_WINDOW - 1));
        assert_eq!(stream.try_hold(u32::MAX), Ok(0));
        assert_eq!(connection.state(), state(0, MAX_WINDOW, false));
        assert_eq!(stream.stream().state(), state(0, MAX_WINDOW, false));
        assert_eq!(stream.give_back(MAX_WINDOW), Ok(()));
        assert_eq!(connection.state(), state(MAX_WINDOW as i32, 0, false));
        assert_eq!(stream.stream().state(), state(MAX_WINDOW as i32, 0, false));

        // The connection is the smaller: the stream's excess comes back.
        let (connection, stream) = pair(10, 100);
        assert_eq!(stream.try_hold(50), Ok(10));
        assert_eq!(stream.stream().state(), state(90, 10, false));
        assert_eq!(connection.state(), state(0, 10, false));
    }

    #[test]
    fn negative_windows_after_a_shrink_grant_nothing_and_take_nothing() {
        let (connection, stream) = pair(100, 100);
        stream.stream().apply_initial_window_delta(-150).unwrap();
        assert_eq!(stream.try_hold(10), Ok(0));
        assert_eq!(connection.state(), state(100, 0, false), "the connection is untouched");

        let (connection, stream) = pair(100, 100);
        connection.apply_initial_window_delta(-101).unwrap();
        assert_eq!(stream.try_hold(10), Ok(0));
        assert_eq!(stream.try_reserve(10), Ok(0));
        assert_eq!(stream.stream().state(), state(100, 0, false), "the stream got it back");
        assert_eq!(connection.state(), state(-1, 0, false));
    }

    #[test]
    fn an_abort_on_either_side_refuses_and_takes_nothing() {
        let (connection, stream) = pair(100, 100);
        stream.abort();
        assert_eq!(stream.try_hold(10), Err(Aborted));
        assert_eq!(stream.try_reserve(10), Err(Aborted));
        assert!(stream.try_grant(10).is_err());
        assert_eq!(connection.state(), state(100, 0, false));

        let (connection, stream) = pair(100, 100);
        connection.abort();
        assert_eq!(stream.try_hold(10), Err(Aborted));
        assert_eq!(stream.try_reserve(10), Err(Aborted));
        assert_eq!(stream.stream().state(), state(100, 0, false));
        // Also with no stream credit: a writer must not wait for ever.
        stream.stream().apply_initial_window_delta(-100).unwrap();
        assert_eq!(stream.try_hold(10), Err(Aborted));
        assert_eq!(stream.try_hold(0), Err(Aborted));
    }

    #[test]
    fn settling_more_than_is_held_changes_nothing() {
        let (connection, stream) = pair(100, 100);
        assert_eq!(stream.try_hold(30), Ok(30));
        for n in [31, MAX_WINDOW, u32::MAX] {
            let refusal = Err(FlowError::NotHeld { requested: n, held: 30 });
            assert_eq!(stream.sent(n), refusal);
            assert_eq!(stream.give_back(n), refusal);
        }
        assert_eq!(stream.sent(0), Ok(()));
        assert_eq!(stream.give_back(0), Ok(()));
        assert_eq!(stream.stream().state(), state(70, 30, false));
        assert_eq!(connection.state(), state(70, 30, false));
        assert_eq!(stream.sent(30), Ok(()));
        assert_eq!(stream.sent(1), Err(FlowError::NotHeld { requested: 1, held: 0 }));
    }

    #[test]
    fn a_connection_settled_behind_the_streams_back_is_refused_after_the_stream() {
        let (connection, stream) = pair(100, 100);
        assert_eq!(stream.try_hold(30), Ok(30));
        connection.give_back(30).unwrap(); // the caller's bug
        assert_eq!(stream.give_back(30), Err(FlowError::NotHeld { requested: 30, held: 0 }));
        assert_eq!(stream.stream().state(), state(100, 0, false));
        assert_eq!(connection.state(), state(100, 0, false), "unchanged by the refusal");
    }

    #[test]
    fn held_credit_given_back_after_an_update_to_the_maximum_fits() {
        let (connection, stream) = pair(MAX_WINDOW - 1, MAX_WINDOW - 1);
        assert_eq!(stream.try_hold(u32::MAX), Ok(MAX_WINDOW - 1));
        connection.increase(1).unwrap();
        stream.stream().increase(1).unwrap();
        let overflow = Err(FlowError::WindowOverflow { would_be: i64::from(MAX_WINDOW) + 1 });
        assert_eq!(connection.increase(1), overflow);
        assert_eq!(stream.stream().increase(1), overflow);
        assert_eq!(stream.give_back(MAX_WINDOW - 1), Ok(()));
        assert_eq!(connection.state(), state(MAX_WINDOW as i32, 0, false));
        assert_eq!(stream.stream().state(), state(MAX_WINDOW as i32, 0, false));
    }

    #[test]
    fn grants_settle_both_windows_even_after_an_abort() {
        let (connection, stream) = pair(100, 100);
        let mut grant = stream.try_grant(u32::MAX).unwrap();
        assert_eq!(grant.len(), 100);
        assert_eq!(
            grant.sent(u32::MAX),
            Err(FlowError::NotHeld { requested: u32::MAX, held: 100 })
        );
        assert_eq!(grant.sent(40), Ok(()));
        stream.abort();
        drop(grant);
        assert_eq!(stream.stream().state(), state(60, 0, true));
        assert_eq!(connection.state(), state(60, 0, false));

        let (connection, stream) = pair(100, 100);
        let grant = stream.try_grant(10).unwrap();
        assert_eq!(grant.give_back(), Ok(()));
        let held = stream.try_grant(10).unwrap().detach();
        assert_eq!((held, connection.held()), (10, 10));
        assert_eq!(stream.sent(held), Ok(()));
        assert_eq!(connection.state(), state(90, 0, false));
        assert!(stream.try_grant(0).unwrap().is_empty());
    }

    #[test]
    fn a_reservation_leaves_nothing_held() {
        let (connection, stream) = pair(50, 100);
        assert_eq!(stream.try_reserve(u32::MAX), Ok(50));
        assert_eq!(stream.stream().state(), state(50, 0, false));
        assert_eq!(connection.state(), state(0, 0, false));
        assert_eq!(stream.try_reserve(1), Ok(0));
    }

    #[test]
    fn the_lock_twins_compose_the_same_way() {
        let connection = Arc::new(StdOutputWindow::with_initial(10).unwrap());
        let stream = StreamOutput::new(connection.clone(), 100).unwrap();
        assert_eq!(stream.try_hold(50), Ok(10));
        assert_eq!(stream.stream().state(), state(90, 10, false));
        assert_eq!(stream.give_back(10), Ok(()));
        assert_eq!(connection.state(), state(10, 0, false));
    }
}
