//! `std::io` (and, with the `tokio` feature, `tokio::io`) adapters.

use core::task::{Context, Poll};
use std::io;

use bytes::Buf;

use crate::error::WriteError;
use crate::reader::{Reader, Snapshot};
use crate::view::View;
use crate::writer::Writer;

/// A [`Reader`] as a byte stream: `std::io::Read` and `BufRead` (blocking),
/// and with the `tokio` feature `AsyncRead` and `AsyncBufRead`. Made by
/// [`Reader::into_io`].
///
/// The `std::io` traits block the thread (see [`Reader::read_blocking`]:
/// not on an async runtime's thread); with both `std::io::Read` and
/// tokio's `AsyncReadExt` in scope, name the one you mean
/// (`AsyncReadExt::read(&mut io, buf)`): the blocking one is what a
/// compiler's suggestion may pick.
///
/// Bytes are consumed as they are read. `fill_buf` shows one chunk (the
/// rest of a pool block) and `consume` takes at most that chunk, as std's
/// `BufReader` does: a larger `amt` (against the `BufRead` contract) never
/// drops bytes that were not shown. After the last byte, the writer's
/// [`close_with`](crate::Writer::close_with) error (if any) is returned,
/// with its kind and message; a clean close is end of stream (`Ok(0)`).
#[derive(Debug)]
pub struct IoReader {
    reader: Reader,
    /// The read this adapter holds between `fill_buf` and `consume`.
    held: Option<Snapshot>,
    /// An async read has begun (owns `PENDING`).
    began: bool,
}

// SAFETY: the snapshot's pointers are into the pipe this adapter owns (through
// its `Reader`), and the read it belongs to is this adapter's.
unsafe impl Send for IoReader {}
// SAFETY: every method takes `&mut self`.
unsafe impl Sync for IoReader {}

impl Reader {
    /// This reader as an `io::Read`/`BufRead` (and tokio `AsyncRead`/
    /// `AsyncBufRead`) stream.
    ///
    /// The examined mark carries over: bytes an earlier
    /// [`advance_to`](crate::ReadGuard::advance_to) examined without
    /// consuming stay examined, so the adapter's first read waits for
    /// bytes beyond them, as the reader's own next read would, and then
    /// returns them with the new ones. Consume what was examined (or
    /// examine only what was consumed) before converting, to have those
    /// bytes returned at once.
    pub fn into_io(self) -> IoReader {
        IoReader { reader: self, held: None, began: false }
    }
}

impl IoReader {
    /// The reader back (a held read is released, nothing consumed).
    pub fn into_inner(mut self) -> Reader {
        self.release(0);
        if self.began {
            self.reader.cancel();
            self.began = false;
        }
        // SAFETY: `self` is forgotten right after, so `reader` is moved out
        // exactly once and `Drop` does not run.
        let reader = unsafe { core::ptr::read(&self.reader) };
        core::mem::forget(self);
        reader
    }

    /// Holds a read's bytes, or ends the stream: `None` after a clean
    /// close, the writer's error (kind and message) after `close_with`.
    fn hold(&mut self, snapshot: Snapshot) -> io::Result<Option<Snapshot>> {
        if snapshot.len > 0 {
            self.held = Some(snapshot);
            return Ok(Some(snapshot));
        }
        // End of stream: nothing to hold.
        self.reader.release(&snapshot, 0, 0);
        match self.reader.shared().error() {
            Some(error) => Err(io::Error::new(error.kind(), error.to_string())),
            None => Ok(None),
        }
    }

    /// The held read, or a new one, waiting for it on this thread. An
    /// async read this adapter began and whose future was dropped while it
    /// waited (a timeout) is still its own: it goes on with that one, as
    /// the next async read would, instead of beginning a second that would
    /// collide with it (`ConcurrentRead`, for good).
    fn fill_blocking(&mut self) -> io::Result<Option<Snapshot>> {
        if let Some(snapshot) = self.held {
            return Ok(Some(snapshot));
        }
        let snapshot = if self.began {
            let result = crate::park::block_on(core::future::poll_fn(|cx| {
                self.reader.poll_read(Some(cx), None)
            }));
            self.began = false;
            result?
        } else {
            self.reader.read_blocking()?.into_snapshot()
        };
        self.hold(snapshot)
    }

    /// Releases the held read, consuming (and examining) `n` bytes.
    fn release(&mut self, n: usize) {
        if let Some(snapshot) = self.held.take() {
            let n = n.min(snapshot.len);
            self.reader.release(&snapshot, n, n);
        }
    }

    /// `BufRead::consume`: at most what `fill_buf` showed (the first
    /// chunk), as std's `BufReader` caps it. A larger `amt` breaks the
    /// trait's contract; consuming it whole would drop bytes the caller
    /// never saw.
    fn consume_shown(&mut self, amt: usize) {
        let shown = self.first_chunk().len();
        self.release(amt.min(shown));
    }

    fn first_chunk(&self) -> &[u8] {
        match &self.held {
            Some(s) => {
                let view = View::new(s.node, s.off, s.len);
                let chunk = view.chunk();
                // SAFETY: the bytes stay put while the read is held, which
                // lasts until `&mut self` is next used (`consume`, `read`).
                unsafe { core::slice::from_raw_parts(chunk.as_ptr(), chunk.len()) }
            }
            None => &[],
        }
    }

    fn copy_out(&mut self, out: &mut [u8]) -> usize {
        let Some(s) = self.held else { return 0 };
        let n = out.len().min(s.len);
        View::new(s.node, s.off, s.len).copy_to_slice(&mut out[..n]);
        self.release(n);
        n
    }
}

impl Drop for IoReader {
    fn drop(&mut self) {
        self.release(0);
        if self.began {
            self.reader.cancel();
        }
    }
}

impl io::Read for IoReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        Ok(match self.fill_blocking()? {
            Some(_) => self.copy_out(out),
            None => 0,
        })
    }
}

impl io::BufRead for IoReader {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        Ok(match self.fill_blocking()? {
            Some(_) => self.first_chunk(),
            None => &[],
        })
    }

    fn consume(&mut self, amt: usize) {
        self.consume_shown(amt);
    }
}

/// Copies into the pipe; waits (blocking) while the reader is over the
/// pause threshold, as a socket's send buffer would, and takes at most
/// what brings the pipe up to that threshold (at least one byte): a large
/// buffer goes in over several calls (`write_all` makes them), so the
/// pipe never holds much more than the threshold. Once a write brings it
/// there, the next waits until the reader is below `resume_at`. As with an OS
/// pipe, one thread that writes more than the threshold before it reads
/// waits for good: read on another thread, or use [`Writer::put_slice`],
/// which never waits. A write the pool can
/// only partly hold returns `Ok(n)` for the bytes that went in, and the next
/// write returns the error (`OutOfMemory` for an exhausted pool,
/// `BrokenPipe` once the reader is gone): `Err` always means nothing was
/// written, as `std::io::Write` requires.
///
/// Blocking, so not for an async runtime's thread (see
/// [`Writer::flush_blocking`]); there, use `AsyncWrite` (with the `tokio`
/// feature) or [`Writer::put_slice`] and [`Writer::flush`].
impl io::Write for Writer {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if data.is_empty() {
            return Ok(0);
        }
        crate::park::block_on(core::future::poll_fn(|cx| self.poll_io_flush(cx)))?;
        // `Ok(n)` for a partial write: `Err` must mean nothing was written,
        // or a caller that retries would duplicate the prefix.
        Ok(self.put_some(data)?)
    }

    /// [`Writer::flush_blocking`]: waits only while the pipe is at the
    /// pause threshold (the next `write` may wait longer, for `resume_at`).
    fn flush(&mut self) -> io::Result<()> {
        self.flush_blocking().map_err(io::Error::from)
    }
}

#[cfg(feature = "tokio")]
mod tokio_io {
    use core::pin::Pin;
    use core::task::{Context, Poll, ready};
    use std::io;

    use tokio::io::{AsyncBufRead, AsyncRead, AsyncWrite, ReadBuf};

    use super::IoReader;
    use crate::reader::Snapshot;
    use crate::writer::Writer;

    impl IoReader {
        /// The held read, or a new one, polling for it.
        fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<Option<Snapshot>>> {
            if let Some(snapshot) = self.held {
                return Poll::Ready(Ok(Some(snapshot)));
            }
            if !self.began {
                self.reader.begin()?;
                self.began = true;
            }
            let snapshot = ready!(self.reader.poll_read(Some(cx), None));
            self.began = false;
            Poll::Ready(self.hold(snapshot?))
        }
    }

    impl AsyncRead for IoReader {
        fn poll_read(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let this = self.get_mut();
            if buf.remaining() == 0 {
                return Poll::Ready(Ok(()));
            }
            if ready!(this.poll_fill(cx))?.is_some() {
                let out = buf.initialize_unfilled();
                let n = this.copy_out(out);
                buf.advance(n);
            }
            Poll::Ready(Ok(()))
        }
    }

    impl AsyncBufRead for IoReader {
        fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
            let this = self.get_mut();
            match ready!(this.poll_fill(cx))? {
                Some(_) => Poll::Ready(Ok(this.first_chunk())),
                None => Poll::Ready(Ok(&[])),
            }
        }

        fn consume(self: Pin<&mut Self>, amt: usize) {
            self.get_mut().consume_shown(amt);
        }
    }

    impl Writer {
        /// Reads once from a tokio `AsyncRead` (a socket) straight into pool
        /// memory, as [`read_from`](Writer::read_from) does from a
        /// `std::io::Read`: into the tail block when at least
        /// `min_read_space` bytes are free there, else into a fresh block,
        /// and commits what arrived. First waits while the reader is over
        /// the pause threshold (as [`flush`](Writer::flush)), so a loop of
        /// these reads is back-pressured: the socket is not read while the
        /// pipe is full, and TCP pushes the peer back. Returns the bytes
        /// read; 0 is the end of the stream (the pipe is not closed for
        /// you).
        ///
        /// ```
        /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
        /// let pool = falconet_pipe::Pool::new();
        /// let (mut writer, reader) = falconet_pipe::pipe(&pool, falconet_pipe::Options::new())?;
        /// let mut socket: &[u8] = b"GET / HTTP/1.1\r\n\r\n"; // any AsyncRead
        /// while writer.read_from_async(&mut socket).await? > 0 {}
        /// writer.close();
        /// assert_eq!(reader.read().await?.to_vec(), b"GET / HTTP/1.1\r\n\r\n");
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// # }).unwrap();
        /// ```
        ///
        /// # Errors
        /// The source's error (nothing is committed), or a [`WriteError`]
        /// converted to `io::Error` ([`WriteError::ReaderClosed`] also while
        /// waiting).
        ///
        /// [`WriteError`]: crate::WriteError
        /// [`WriteError::ReaderClosed`]: crate::WriteError::ReaderClosed
        pub async fn read_from_async<R: AsyncRead + Unpin + ?Sized>(
            &mut self,
            source: &mut R,
        ) -> io::Result<usize> {
            core::future::poll_fn(|cx| self.poll_read_from(cx, Pin::new(&mut *source))).await
        }

        /// [`read_from_async`](Self::read_from_async) as a poll function,
        /// for hand-written futures. `Pending` until the pipe has room and
        /// the source has bytes; nothing is committed before then.
        ///
        /// # Errors
        /// As [`read_from_async`](Self::read_from_async).
        pub fn poll_read_from<R: AsyncRead + ?Sized>(
            &mut self,
            cx: &mut Context<'_>,
            source: Pin<&mut R>,
        ) -> Poll<io::Result<usize>> {
            ready!(self.poll_io_flush(cx))?;
            let buffer = self.buffer(self.min_read_space())?;
            let mut read = ReadBuf::new(buffer);
            ready!(source.poll_read(cx, &mut read))?;
            let n = read.filled().len();
            self.commit(n)?;
            Poll::Ready(Ok(n))
        }
    }

    /// Copies into the pipe; `Pending` while the reader is over the pause
    /// threshold, and at most what brings the pipe up to it (at least one
    /// byte), as for `io::Write` (so one task that writes past the
    /// threshold before it reads waits for good, as with
    /// `tokio::io::simplex`). A partial write is `Ok(n)` and `Err` means nothing was
    /// written, as for `io::Write`; an empty write is `Ok(0)` at once,
    /// whatever the pipe's state. `poll_shutdown` closes the stream (other
    /// writes then fail with `BrokenPipe`).
    impl AsyncWrite for Writer {
        fn poll_write(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            data: &[u8],
        ) -> Poll<io::Result<usize>> {
            if data.is_empty() {
                // As `io::Write::write`: nothing to write waits for nothing.
                return Poll::Ready(Ok(0));
            }
            let this = self.get_mut();
            ready!(this.poll_io_flush(cx))?;
            // As `io::Write::write`: a partial write is `Ok(n)`.
            Poll::Ready(Ok(this.put_some(data)?))
        }

        fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            self.get_mut().poll_io_flush(cx).map_err(io::Error::from)
        }

        fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            self.get_mut().finish(None);
            Poll::Ready(Ok(()))
        }
    }
}

impl Writer {
    /// Back-pressure for the adapters, with the hysteresis kept in the
    /// writer between calls.
    pub(crate) fn poll_io_flush(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), WriteError>> {
        let mut paused = self.io_paused;
        let result = self.poll_flush(cx, &mut paused);
        self.io_paused = paused;
        result
    }
}
