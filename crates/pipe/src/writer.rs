//! The writing end: the socket side.

use core::future::Future;
use core::pin::Pin;
use core::ptr;
use core::task::{Context, Poll};
use std::io;

use falconet_pool::{Block, Pool};

use crate::error::{PutError, WriteError};
use crate::park;
use crate::primitive::{Arc, Ordering};
use crate::segment::Node;
use crate::shared::Shared;
use crate::state::{
    READER_CLOSED, READER_WAITING, WRITER_CLOSED, WRITER_WAITING, bytes, count, distance, has,
};

/// The most fresh blocks one [`Writer::read_vectored_from`] reads into
/// (with the tail, 65 `iovec`s: far below any system's `IOV_MAX`).
pub const MAX_READ_BLOCKS: usize = 64;

/// What one [`Writer::read_vectored_from`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VectoredRead {
    /// Bytes read and committed; 0 is the end of the stream.
    pub read: usize,
    /// Bytes of room the read was offered.
    pub offered: usize,
}

impl VectoredRead {
    /// Whether the read filled all the room it was offered: the source
    /// may hold more (read an edge-triggered socket again before waiting).
    pub fn filled(&self) -> bool {
        self.read == self.offered
    }
}

/// The writing end of a pipe (the socket side). Not `Clone`: one writer.
///
/// Bytes go in two ways: straight into pool memory with
/// [`buffer`](Self::buffer) + [`commit`](Self::commit) (or
/// [`read_from`](Self::read_from), which does both around one `read(2)`,
/// and [`read_vectored_from`](Self::read_vectored_from), one `readv(2)`
/// into the tail and fresh blocks for bulk input), or copied with
/// [`put_slice`](Self::put_slice). Committed bytes are visible
/// to the reader at once; [`flush`](Self::flush) is where the writer waits
/// for back-pressure. Finish with [`close`](Self::close) or
/// [`close_with`](Self::close_with); dropping an unclosed writer closes the
/// pipe with a `BrokenPipe` error, so the reader never mistakes a lost
/// writer for a clean end of stream.
pub struct Writer {
    shared: Arc<Shared>,
    pool: Pool,
    /// The oldest node the writer owns (the start of the spare nodes).
    first: *mut Node,
    /// The reader's head as last seen: nodes from `first` up to it are spare.
    head_seen: *mut Node,
    /// Where the spare nodes that may hold a kept block start: those from
    /// `first` up to it hold none (looked at, or emptied, by the writer; the
    /// reader never touches a node again once it is passed). Between
    /// `first` and `head_seen`; it spares `take_kept_ahead` walking a node
    /// twice.
    unkept: *mut Node,
    /// The writer has set its sleep bit, and `take_kept_ahead` has not
    /// since walked to the reader's head with the bit clear: blocks may be
    /// kept in any spare node, so the next look walks as far as it must.
    /// Otherwise it looks at one node, the one `link` reuses next, as the
    /// pipe did before kept blocks could sit further along: no walk over
    /// nodes whose lines the reader has just written, when nothing can be
    /// kept in them.
    kept_ahead: bool,
    tail: *mut Node,
    /// The tail block's first byte; null for the sentinel.
    tail_base: *mut u8,
    /// Committed bytes in the tail block.
    tail_len: usize,
    /// The tail block's size (0 for the sentinel).
    tail_cap: usize,
    /// Total bytes placed in the pipe (committed, or copied by a
    /// `put_slice` that is about to publish them): the stream position of
    /// the next byte, and so of the next node's first byte.
    written: u64,
    /// The examined count at this writer's last look at the reader's
    /// word, and the reader's news just before it (`Shared::reader_news`).
    /// While the news is unchanged, the reader has only examined more
    /// since: `written - examined_seen` is at least the unexamined count,
    /// so a flush it puts below the pause threshold needs no fresh look at
    /// the reader's line.
    examined_seen: u64,
    news_seen: u64,
    closed: bool,
    /// The reader is gone, as a commit or a flush found: every later write
    /// fails at once, without leasing or copying anything.
    reader_gone: bool,
    /// The adapters' flush hysteresis (`io.rs`): paused until the reader
    /// is below `resume_at`.
    pub(crate) io_paused: bool,
}

// SAFETY: the writer's raw pointers are into nodes and blocks the pipe owns;
// the `segment` protocol lets the writer touch them from any one thread.
unsafe impl Send for Writer {}
// SAFETY: every method that touches the raw state takes `&mut self`.
unsafe impl Sync for Writer {}

impl Writer {
    pub(crate) fn new(shared: Arc<Shared>, pool: Pool, start: u64) -> Self {
        let sentinel = shared.sentinel();
        Self {
            shared,
            pool,
            first: sentinel,
            head_seen: sentinel,
            unkept: sentinel,
            kept_ahead: false,
            tail: sentinel,
            tail_base: ptr::null_mut(),
            tail_len: 0,
            tail_cap: 0,
            written: start,
            examined_seen: count(bytes(start)),
            news_seen: 0,
            closed: false,
            reader_gone: false,
            io_paused: false,
        }
    }

    /// Writable space at the end of the pipe, at least `min` bytes (at least
    /// 1 when `min` is 0): the rest of the tail block, or a fresh block when
    /// the tail has less room. Fill a prefix and [`commit`](Self::commit) it;
    /// uncommitted bytes are ignored (the next call returns the same space).
    ///
    /// # Errors
    /// [`WriteError::TooLarge`] when `min` exceeds a block,
    /// [`WriteError::Lease`] when the pool has no block,
    /// [`WriteError::Closed`] after `poll_shutdown`,
    /// [`WriteError::ReaderClosed`] once the writer has seen the reader
    /// gone (it looks when it needs a fresh block: space left in the tail
    /// block is still returned, and [`commit`](Self::commit) then fails).
    #[inline]
    pub fn buffer(&mut self, min: usize) -> Result<&mut [u8], WriteError> {
        if self.closed | self.reader_gone {
            return Err(self.ended());
        }
        if self.tail_cap - self.tail_len < min.max(1) {
            self.grow(min)?;
        }
        // SAFETY: the tail block has `tail_cap` bytes at `tail_base`; the
        // reader reads only the committed prefix `..tail_len`, the writer
        // (this `&mut self`) is the only one touching the rest.
        Ok(unsafe {
            core::slice::from_raw_parts_mut(
                self.tail_base.add(self.tail_len),
                self.tail_cap - self.tail_len,
            )
        })
    }

    /// Makes the first `n` bytes of the last [`buffer`](Self::buffer)
    /// visible to the reader, and wakes it if it sleeps.
    ///
    /// # Errors
    /// [`WriteError::CommitPastBuffer`] when `n` is more than the buffer
    /// held (nothing is committed), [`WriteError::ReaderClosed`] when the
    /// reader is gone (the bytes are dropped with the pipe),
    /// [`WriteError::Closed`] after `poll_shutdown`.
    #[inline]
    pub fn commit(&mut self, n: usize) -> Result<(), WriteError> {
        if self.closed | self.reader_gone {
            // Bytes after "completed" would break the reader's contract.
            return Err(self.ended());
        }
        let available = self.tail_cap - self.tail_len;
        if n > available {
            return Err(WriteError::CommitPastBuffer { committed: n, available });
        }
        self.tail_len += n;
        self.written += n as u64;
        self.publish(n)
    }

    /// Copies `data` into the pipe: into the tail block as far as it fits,
    /// then into fresh blocks, so small writes share a block. One atomic
    /// update publishes the whole write.
    ///
    /// # Errors
    /// [`PutError`], which says how many bytes were committed before the
    /// failure ([`PutError::committed`]): they are in the pipe and the reader
    /// will see them, so a caller that retries must retry only the rest.
    /// The cause ([`PutError::error`]) is as for [`buffer`](Self::buffer)
    /// and [`commit`](Self::commit): the pool ran out midway
    /// ([`WriteError::Lease`]; what fit is committed), the reader is gone
    /// ([`WriteError::ReaderClosed`]; the bytes are dropped with the pipe),
    /// or the writer was shut down ([`WriteError::Closed`]; nothing
    /// committed).
    #[inline]
    pub fn put_slice(&mut self, mut data: &[u8]) -> Result<(), PutError> {
        if self.closed | self.reader_gone {
            return Err(PutError { committed: 0, error: self.ended() });
        }
        let mut copied = 0;
        while !data.is_empty() {
            if self.tail_len == self.tail_cap
                && let Err(error) = self.grow(1)
            {
                let error = self.publish(copied).err().unwrap_or(error);
                return Err(PutError { committed: copied, error });
            }
            let n = data.len().min(self.tail_cap - self.tail_len);
            // SAFETY: `n` bytes fit in the tail past its committed end, which
            // only the writer touches; `data` cannot overlap pool memory we
            // have not handed out.
            unsafe {
                ptr::copy_nonoverlapping(data.as_ptr(), self.tail_base.add(self.tail_len), n);
            }
            self.tail_len += n;
            self.written += n as u64;
            copied += n;
            data = &data[n..];
        }
        self.publish(copied).map_err(|error| PutError { committed: copied, error })
    }

    /// As much of `data` as the pipe takes now, as `std::io::Write::write`
    /// and tokio's `poll_write` need it: `Ok(n)` with `n > 0` when some
    /// bytes went in (the failure, if any, shows on the next call), `Err`
    /// only when nothing did.
    ///
    /// At most what brings the unexamined bytes up to the pause threshold,
    /// counted from the writer's last look at the reader (which has
    /// examined more since, unless a `read_at_least` loan ended: then
    /// this overshoots by what the loan had counted, as a flush between
    /// them would have), and at least one byte: called after a flush that
    /// found the pipe below the threshold, so a large buffer goes in a
    /// threshold's worth per call, each waiting for the reader, as a
    /// socket's send buffer takes it. Without the cap one call would lease
    /// blocks for all of it, whatever the back-pressure. A write that
    /// brings the pipe up to the threshold leaves the adapters paused: the
    /// next waits until the reader is below `resume_at`, not for the
    /// first sliver it examines (a write the pool cut short does not).
    pub(crate) fn put_some(&mut self, data: &[u8]) -> Result<usize, WriteError> {
        let pause_at = self.shared.config.pause_at;
        let room = pause_at.saturating_sub(distance(self.written, self.examined_seen)).max(1);
        let data = &data[..data.len().min(usize::try_from(room).unwrap_or(usize::MAX))];
        let put = match self.put_slice(data) {
            Ok(()) => Ok(data.len()),
            Err(PutError { committed: 0, error }) => Err(error),
            Err(PutError { committed, .. }) => Ok(committed),
        };
        if distance(self.written, self.examined_seen) >= pause_at {
            self.io_paused = true;
        }
        put
    }

    /// Reads once from `source` (a socket) straight into pool memory and
    /// commits what arrived: the tail block when at least `min_read_space`
    /// bytes are free there, a fresh block otherwise. Returns the bytes read;
    /// 0 is end of stream (the pipe is not closed for you).
    ///
    /// # Errors
    /// The source's error (`WouldBlock` for a non-blocking socket with
    /// nothing to read), or a [`WriteError`] converted to `io::Error`.
    pub fn read_from<R: io::Read + ?Sized>(&mut self, source: &mut R) -> io::Result<usize> {
        let buffer = self.buffer(self.min_read_space())?;
        let n = source.read(buffer)?;
        self.commit(n)?;
        Ok(n)
    }

    /// Reads once from `source` with one vectored read into the tail
    /// block's free space and, past it, into fresh blocks for up to `max`
    /// more bytes (at most [`MAX_READ_BLOCKS`] blocks), and commits what
    /// arrived. Fresh blocks the read did not reach go back to the pool at
    /// once. Returns the bytes read (0 is end of stream; the pipe is not
    /// closed for you) and the room offered.
    ///
    /// For bulk input, such as a large request body: one system call per
    /// `max` bytes instead of one per block (as [`read_from`](Self::read_from)
    /// makes), and no copy (as a read into a spare buffer followed by
    /// [`put_slice`](Self::put_slice) makes). Each call leases and returns
    /// blocks, so small reads are cheaper with `read_from`.
    ///
    /// # Errors
    /// The source's error (nothing is committed, the fresh blocks go back);
    /// [`WriteError::Lease`] when the pool has no block and the tail no
    /// room (fewer blocks than asked is no error: the read is shorter);
    /// [`WriteError::CommitPastBuffer`] when the source claims to have read
    /// more than it was offered (nothing is committed);
    /// [`WriteError::ReaderClosed`], [`WriteError::Closed`]; each a
    /// [`WriteError`] converted to `io::Error`.
    pub fn read_vectored_from<R: io::Read + ?Sized>(
        &mut self,
        source: &mut R,
        max: usize,
    ) -> io::Result<VectoredRead> {
        if self.closed | self.reader_gone {
            return Err(self.ended().into());
        }
        // No blocks, and nothing taken from the source, for a reader that
        // is gone (it does not go through `grow`).
        self.check_reader()?;
        let block_size = self.shared.config.block_size;
        let tail_space = self.tail_cap - self.tail_len;
        let mut fresh: [Option<Block>; MAX_READ_BLOCKS] = [const { None }; MAX_READ_BLOCKS];
        let mut leased = 0;
        // At least one block when the tail is full: a read into nothing
        // would look like the end of the stream.
        let wanted = max.div_ceil(block_size).max(usize::from(tail_space == 0));
        // Blocks the spare nodes kept come first, then the pool's.
        let keeps = self.shared.config.keep_blocks && self.has_spare();
        for slot in fresh.iter_mut().take(wanted) {
            let block = match keeps.then(|| self.take_kept_ahead()).flatten() {
                Some(block) => Ok(block),
                // A dry pool: a block kept past the head seen will do.
                None => {
                    self.pool.try_lease().or_else(|error| self.kept_from_fresh_head().ok_or(error))
                }
            };
            match block {
                Ok(block) => *slot = Some(block),
                Err(error) if leased == 0 && tail_space == 0 => {
                    return Err(WriteError::from(error).into());
                }
                Err(_) => break,
            }
            leased += 1;
        }
        let mut slices: [io::IoSliceMut<'_>; MAX_READ_BLOCKS + 1] =
            core::array::from_fn(|_| io::IoSliceMut::new(&mut []));
        let mut count = 0;
        if tail_space > 0 {
            // SAFETY: as in `buffer`: the tail block's bytes past its
            // committed prefix are the writer's alone (`&mut self`).
            let tail = unsafe {
                core::slice::from_raw_parts_mut(self.tail_base.add(self.tail_len), tail_space)
            };
            slices[0] = io::IoSliceMut::new(tail);
            count = 1;
        }
        for block in fresh[..leased].iter_mut().flatten() {
            slices[count] = io::IoSliceMut::new(&mut block[..]);
            count += 1;
        }
        let offered = slices[..count].iter().map(|slice| slice.len()).sum();
        let n = source.read_vectored(&mut slices[..count])?;
        if n > offered {
            // A source that claims more than it was given (a safe `Read`
            // may lie): committing it would publish bytes past the blocks.
            return Err(WriteError::CommitPastBuffer { committed: n, available: offered }.into());
        }
        // The read filled the tail, then the fresh blocks in order: link
        // each block it reached (its bytes written before the link, as
        // `put_slice` writes before it publishes), then publish all at once.
        let in_tail = n.min(tail_space);
        self.tail_len += in_tail;
        self.written += in_tail as u64;
        let mut left = n - in_tail;
        for slot in &mut fresh[..leased] {
            let Some(block) = slot.take().filter(|_| left > 0) else { break };
            let filled = left.min(block_size);
            self.link(block);
            self.tail_len = filled;
            self.written += filled as u64;
            left -= filled;
        }
        // The blocks left in `fresh` drop here, back to the pool.
        self.publish(n)?;
        Ok(VectoredRead { read: n, offered })
    }

    /// The pipe's `min_read_space` (see [`Options::min_read_space`](crate::Options::min_read_space)).
    pub(crate) fn min_read_space(&self) -> usize {
        self.shared.config.min_read_space
    }

    /// Waits while the reader is over the pause threshold: returns at once
    /// when fewer than `pause_at` bytes are unexamined, otherwise once fewer
    /// than `resume_at` are. Nothing else needs flushing: committed bytes
    /// are already visible. When the examined count the writer last loaded
    /// puts it below the threshold, and the reader has only examined more
    /// since, that is enough to return; otherwise it loads the reader's
    /// count afresh.
    ///
    /// With tokio's `AsyncWriteExt` in scope, `writer.flush()` is still
    /// this method (an inherent method wins over a trait's): it resolves
    /// to a [`WriteError`], which `?` turns into an `io::Error` (`From` is
    /// implemented); name the trait's (`AsyncWriteExt::flush(&mut writer)`)
    /// to have its `io::Result` directly. Both wait the same way.
    ///
    /// # Errors
    /// [`WriteError::ReaderClosed`] when the reader is gone (also while
    /// waiting).
    pub fn flush(&mut self) -> Flush<'_> {
        Flush { writer: self, paused: false }
    }

    /// [`flush`](Self::flush), blocking the thread.
    ///
    /// # Not on an async runtime's thread
    /// This parks the thread until the other side acts. Called from a task
    /// on an async runtime (tokio, ...), it blocks that runtime's worker, and
    /// on a current-thread runtime it waits for good when the other side is
    /// a task of the same runtime, which can then never run. Use the async
    /// method there, or call this from a thread that may block (in tokio,
    /// `spawn_blocking` or `block_in_place`). The pipe cannot tell the two
    /// apart (a runtime's blocking threads are in its context too), so it
    /// does not refuse the call.
    ///
    /// # Errors
    /// As [`flush`](Self::flush).
    pub fn flush_blocking(&mut self) -> Result<(), WriteError> {
        park::block_on(self.flush())
    }

    /// Whether the examined count last loaded puts the writer below the
    /// pause threshold, with nothing since that could have lowered it.
    #[inline]
    fn below_pause_as_last_seen(&self) -> bool {
        // Acquire: pairs with the reader's Release of its news.
        distance(self.written, self.examined_seen) < self.shared.config.pause_at
            && self.shared.reader_news.load(Ordering::Acquire) == self.news_seen
    }

    /// Bytes committed that the reader has not examined yet: what
    /// back-pressure counts. A snapshot, for a caller deciding who holds
    /// a stream up (the server's timer: a reader with bytes to look at is
    /// behind; one with none waits on the writer's source). The reader
    /// may examine more at any moment. It examines less only when a
    /// [`read_at_least`](crate::Reader::read_at_least) loan ends: that
    /// read counts every buffered byte as examined while it waits, and
    /// the count goes back to the caller's mark when it returns or is
    /// dropped.
    ///
    /// ```
    /// use falconet_pipe::{Options, pipe};
    /// use falconet_pipe::Pool;
    ///
    /// let pool = Pool::new();
    /// let (mut writer, reader) = pipe(&pool, Options::new())?;
    /// writer.put_slice(b"hello")?;
    /// assert_eq!(writer.unexamined(), 5);
    /// let read = reader.try_read()?.expect("bytes");
    /// read.advance_to(2, 5)?; // consumed 2, looked at all 5
    /// assert_eq!(writer.unexamined(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn unexamined(&self) -> u64 {
        // Acquire: pairs with the reader's Release of its examined count,
        // so the bytes it examined are counted as such.
        distance(self.written, count(self.shared.examined.load(Ordering::Acquire)))
    }

    /// Whether the reader has been dropped.
    pub fn is_reader_closed(&self) -> bool {
        // Relaxed: a hint; operations that depend on it re-read the word.
        has(self.shared.written.load(Ordering::Relaxed), READER_CLOSED)
    }

    /// Ends the stream: the reader sees every committed byte and then
    /// "completed".
    pub fn close(mut self) {
        self.finish(None);
    }

    /// Ends the stream with an error (the socket failed): the reader sees
    /// every committed byte, then "completed" with `error`.
    pub fn close_with(mut self, error: io::Error) {
        self.finish(Some(error));
    }

    /// Total bytes committed so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Publishes `n` committed bytes: one RMW on the writer's own word
    /// (`written`), plus a wake when the reader sleeps.
    #[inline]
    fn publish(&mut self, n: usize) -> Result<(), WriteError> {
        if n == 0 {
            return Ok(());
        }
        // Release publishes the bytes and any node linked for them; Acquire
        // pairs with the reader's CAS that set READER_WAITING after it
        // registered its waker.
        let old = self.shared.written.fetch_add(bytes(n as u64), Ordering::AcqRel);
        if has(old, READER_WAITING | READER_CLOSED) {
            return self.publish_slow(old);
        }
        Ok(())
    }

    #[cold]
    fn publish_slow(&mut self, old: u64) -> Result<(), WriteError> {
        if has(old, READER_CLOSED) {
            self.reader_gone = true;
            return Err(WriteError::ReaderClosed);
        }
        self.shared.wake_reader();
        Ok(())
    }

    /// Why nothing more can be written: the writer's close, or the
    /// reader's.
    #[cold]
    fn ended(&self) -> WriteError {
        if self.closed { WriteError::Closed } else { WriteError::ReaderClosed }
    }

    /// Before leasing blocks: fails (and remembers) if the reader is gone.
    /// Our own word: the reader's drop sets the bit with AcqRel, and this
    /// Acquire pairs with it (a bit set later is found by the commit's RMW).
    fn check_reader(&mut self) -> Result<(), WriteError> {
        if has(self.shared.written.load(Ordering::Acquire), READER_CLOSED) {
            self.reader_gone = true;
            return Err(WriteError::ReaderClosed);
        }
        Ok(())
    }

    /// Links a fresh block at the tail.
    #[cold]
    fn grow(&mut self, min: usize) -> Result<(), WriteError> {
        let block_size = self.shared.config.block_size;
        if min > block_size {
            return Err(WriteError::TooLarge { requested: min, block_size });
        }
        self.check_reader()?;
        let kept = if self.shared.config.keep_blocks && self.has_spare() {
            self.take_kept_ahead()
        } else {
            None
        };
        let block = match kept {
            Some(block) => block,
            // A dry pool: a block kept past the head seen will do.
            None => {
                self.pool.try_lease().or_else(|error| self.kept_from_fresh_head().ok_or(error))?
            }
        };
        self.link(block);
        Ok(())
    }

    /// The next block kept in a spare node, whichever node holds it: the
    /// first spare nodes need not hold one (the list's first node never
    /// did, and a node passed before the writer waited gave its block
    /// back), and leasing for them while kept blocks sit further along
    /// would add those to the pipe's pool use. Each spare node is looked at
    /// once (`unkept`), so a write pays at most one node's look on average;
    /// past the first node, only after a wait (`kept_ahead`), up to the
    /// reader's head looked at afresh, until a look finds the sleep bit
    /// clear. The caller checked that the pipe keeps blocks.
    fn take_kept_ahead(&mut self) -> Option<Block> {
        loop {
            if self.unkept == self.head_seen {
                if !self.kept_ahead {
                    return None;
                }
                // The sleep bit first: the reader keeps blocks only while it
                // is set, and clears it (waking us) after its head's store,
                // so once it is seen clear (Acquire, pairing with that
                // clearing RMW) the head loaded next covers every node a
                // block was kept in. While it is set (a flush polled once
                // and dropped leaves it until the reader is below
                // `resume_at`), the reader may keep more: look again next
                // time.
                let waiting = has(self.shared.examined.load(Ordering::Acquire), WRITER_WAITING);
                // Acquire pairs with the reader's Release store of its head,
                // as in `has_spare`.
                let head = self.shared.head.load(Ordering::Acquire);
                if head == self.head_seen {
                    self.kept_ahead = waiting;
                    return None;
                }
                self.head_seen = head;
            }
            let node = self.unkept;
            // SAFETY: `node` lies between `first` and the head seen (whose
            // Acquire load paired with the reader's Release store): passed,
            // so ours, with its link written before the reader passed it.
            unsafe {
                self.unkept = (*node).next.load(Ordering::Relaxed);
                if let Some(block) = Node::take_kept(node) {
                    return Some(block);
                }
            }
            if !self.kept_ahead {
                return None;
            }
        }
    }

    /// [`take_kept_ahead`](Self::take_kept_ahead) walking every spare node
    /// up to the reader's head, looked at afresh: for when the pool has no
    /// block, and for `trim`.
    #[cold]
    fn kept_from_fresh_head(&mut self) -> Option<Block> {
        if !self.shared.config.keep_blocks {
            return None;
        }
        self.kept_ahead = true;
        self.take_kept_ahead()
    }

    /// Gives back to the pool the blocks the pipe keeps for this writer:
    /// blocks the reader finished with while the writer waited on
    /// back-pressure stay in the pipe for its next writes, not to make
    /// their way back through the pool (see the crate's "Kept blocks").
    /// They are bounded by what the pipe held when the writer paused;
    /// [`close`](Self::close) and dropping the writer give them back too.
    /// Call it when the input goes quiet (a socket read would block) to
    /// hold no more than the unread bytes' blocks, the one being filled
    /// and the reader's last (an idle pipe keeps one or two: see
    /// [`Options::keep_blocks`](crate::Options::keep_blocks)). Returns how
    /// many blocks went back.
    pub fn trim(&mut self) -> usize {
        let mut trimmed = 0;
        while let Some(block) = self.kept_from_fresh_head() {
            drop(block);
            trimmed += 1;
        }
        trimmed
    }

    /// Whether a spare node (one the reader has passed) is left, looking
    /// at the reader's head afresh only when none was left at the last look.
    fn has_spare(&mut self) -> bool {
        if self.first == self.head_seen {
            // Acquire pairs with the reader's Release store of its head:
            // the reader's last uses of the nodes before it happen before
            // ours.
            self.head_seen = self.shared.head.load(Ordering::Acquire);
        }
        self.first != self.head_seen
    }

    /// Links `block` at the tail, empty: its first byte is the stream's
    /// next (`written`).
    fn link(&mut self, block: Block) {
        let block_size = self.shared.config.block_size;
        let node = self.spare_node();
        // `spare_node` may look at the reader's head afresh and reuse a
        // node passed since the caller looked for kept blocks, with its
        // block still kept: `fill` drops that one, back to the pool from
        // this thread (in the writer's thread cache, leased again next), so
        // the pipe holds no more blocks than before this link.
        // SAFETY: `spare_node` returned a node the writer owns.
        let base = unsafe { Node::fill(node, block, self.written) };
        // SAFETY: the tail is linked and only the writer writes `next`.
        // Release publishes the node's fields to the reader, who loads
        // `next` with Acquire.
        unsafe { (*self.tail).next.store(node, Ordering::Release) };
        self.tail = node;
        self.tail_base = base;
        self.tail_len = 0;
        self.tail_cap = block_size;
    }

    /// A node to link: a spare one the reader has passed, or a new one.
    fn spare_node(&mut self) -> *mut Node {
        if !self.has_spare() {
            return Node::empty();
        }
        let node = self.first;
        // SAFETY: `first` is before the reader's head, so it is linked, dead
        // and ours; its `next` was written before the reader passed it.
        self.first = unsafe { (*node).next.load(Ordering::Relaxed) };
        if self.unkept == node {
            self.unkept = self.first;
        }
        if self.first != self.head_seen {
            // The next spare node's line sits in the reader's cache (it
            // walked the node and took its block): start fetching it now,
            // while this block fills, not when the next block is needed.
            // (perf put three quarters of `grow` on this miss.)
            Node::prefetch(self.first);
        }
        node
    }

    /// Sets `WRITER_CLOSED` (with the error, if any) and wakes the reader.
    pub(crate) fn finish(&mut self, error: Option<io::Error>) {
        if self.closed {
            return;
        }
        self.closed = true;
        // SAFETY: the slot is written only here, once, before WRITER_CLOSED;
        // the reader reads it only after seeing the bit.
        self.shared.error.with_mut(|slot| unsafe { *slot = error });
        // Release publishes the error (and every commit); Acquire pairs with
        // a sleeping reader's registration.
        let old = self.shared.written.fetch_or(WRITER_CLOSED, Ordering::AcqRel);
        if has(old, READER_WAITING) {
            self.shared.wake_reader();
        }
        // No more writes: the kept blocks go back. After the close bit, so
        // that a reader keeps blocks after this trim only if it looked at
        // the bit before it was set (`Reader::consume`): a narrow race whose
        // blocks go back when the pipe is dropped.
        self.trim();
    }

    /// Polls for back-pressure; `paused` is the flush's hysteresis.
    pub(crate) fn poll_flush(
        &mut self,
        cx: &mut Context<'_>,
        paused: &mut bool,
    ) -> Poll<Result<(), WriteError>> {
        let config = self.shared.config;
        if self.reader_gone {
            return Poll::Ready(Err(WriteError::ReaderClosed));
        }
        if !*paused && self.below_pause_as_last_seen() {
            // Below the threshold at our last look at the reader's word,
            // and since then the reader has only examined more (no loan
            // came back) and is still there: nothing to wait for.
            return Poll::Ready(Ok(()));
        }
        // Acquire, news first: a loan given back (or the reader's drop)
        // that the news shows is in the word loaded after it.
        self.news_seen = self.shared.reader_news.load(Ordering::Acquire);
        let mut word = self.shared.examined.load(Ordering::Acquire);
        loop {
            if has(word, READER_CLOSED) {
                // Remembered: the news just stored includes the drop, so
                // the fast path above would otherwise answer Ok next time.
                self.reader_gone = true;
                return Poll::Ready(Err(WriteError::ReaderClosed));
            }
            self.examined_seen = count(word);
            let limit = if *paused { config.resume_at } else { config.pause_at };
            if distance(self.written, self.examined_seen) < limit {
                *paused = false;
                return Poll::Ready(Ok(()));
            }
            *paused = true;
            self.shared.writer_waker.register(cx.waker());
            // Sleep only if the word is unchanged since we judged it: any
            // advance or reader drop in between fails the CAS and is seen.
            // Release orders the registration before the bit for whoever
            // clears it; Acquire (both ways) sees the reader's latest word.
            match self.shared.examined.compare_exchange_weak(
                word,
                word | WRITER_WAITING,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    // The reader may keep blocks from now on.
                    self.kept_ahead = true;
                    return Poll::Pending;
                }
                Err(actual) => word = actual,
            }
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if !self.closed {
            self.finish(Some(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "pipe writer dropped without close",
            )));
        }
        // Hand the list's start to whoever frees the shared state last.
        let first = self.first;
        // SAFETY: only the writer writes `first`, once, here; the `Arc`
        // drop orders it before `Shared::drop` reads it.
        self.shared.first.with_mut(|slot| unsafe { *slot = first });
    }
}

impl core::fmt::Debug for Writer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Writer")
            .field("written", &self.written)
            .field("closed", &self.closed)
            .finish()
    }
}

/// The future of [`Writer::flush`].
#[must_use = "futures do nothing unless polled"]
#[derive(Debug)]
pub struct Flush<'a> {
    writer: &'a mut Writer,
    paused: bool,
}

impl Future for Flush<'_> {
    type Output = Result<(), WriteError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        this.writer.poll_flush(cx, &mut this.paused)
    }
}
