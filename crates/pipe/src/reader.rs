//! The reading end: the parser side, and the one-read-at-a-time rule.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use crate::error::ReadError;
use crate::park;
use crate::primitive::{Arc, Ordering, UnsafeCell};
use crate::segment::Node;
use crate::shared::{NEWS_READER_GONE, Shared};
use crate::state::{
    CONFLICT, HOLDING, PENDING, READER_CLOSED, READER_WAITING, WRITER_CLOSED, WRITER_WAITING,
    bytes, count, distance, has,
};
use crate::view::ReadGuard;

/// The reading end of a pipe (the parser side).
///
/// Reads take `&self`, so a `Reader` can be shared (it is `Sync`), but only
/// one read may be outstanding at a time: from the moment a read is first
/// polled (or a blocking or `try_` read starts) until its [`ReadGuard`] is
/// advanced or dropped. The rule, exactly:
///
/// - a read that starts while another read is **pending** (polled, no bytes
///   returned yet) fails with [`ReadError::ConcurrentRead`], and the pending
///   read is woken and fails with the same error;
/// - a read that starts while another read **holds** its bytes (a live
///   `ReadGuard`) fails with [`ReadError::ConcurrentRead`]; the holder is
///   not disturbed and its `advance_to` applies as usual;
/// - neither failure consumes or examines a byte, and once no read is
///   outstanding the next read works normally.
///
/// Kestrel answered a second concurrent read the same way ("Concurrent
/// reads are not supported"), which caught real bugs in user code.
pub struct Reader {
    shared: Arc<Shared>,
    /// Where the reader is; touched only by the owner of the current read
    /// (`PENDING`/`HOLDING` in the `read` word).
    local: UnsafeCell<Position>,
}

// SAFETY: `local` and the node pointers in it are handed from read to read
// by the CAS protocol on the `read` word (`crate::state`): one owner at a
// time, with Release when a read ends and Acquire when the next begins.
unsafe impl Send for Reader {}
// SAFETY: as above; every `&self` method either owns the read or fails.
unsafe impl Sync for Reader {}

/// The reader's place in the stream.
#[derive(Clone, Copy)]
struct Position {
    head: *mut Node,
    /// Bytes of `head` already consumed.
    head_off: usize,
    /// Stream bytes consumed so far.
    consumed: u64,
    /// Stream bytes examined so far: the caller's mark, set by
    /// `advance_to`, never moving back.
    examined: u64,
    /// Bytes past `examined` that a waiting `read_at_least` added to the
    /// published examined count (so the writer is not paused by bytes it
    /// waits past). Lent, not given: the wait's end takes them back (when
    /// the read becomes ready, or when it is cancelled), so the `examined`
    /// word always counts `examined + credit`, and the examined mark is
    /// only ever the caller's. Zero unless a `read_at_least` is waiting.
    credit: u64,
}

impl Position {
    /// The read's view at `written` word `word`: everything buffered from
    /// here.
    fn snapshot(&self, word: u64) -> Snapshot {
        Snapshot {
            node: self.head,
            off: self.head_off,
            // Buffered bytes sit in pool blocks: they fit in the address space.
            len: distance(count(word), self.consumed) as usize,
            completed: has(word, WRITER_CLOSED),
        }
    }

    /// Committed bytes at `written` word `word` that no read examined (nor
    /// lent itself).
    fn fresh(&self, word: u64) -> u64 {
        distance(count(word), self.examined + self.credit)
    }
}

/// What a successful read returned: the buffered bytes from the reader's
/// position, and whether the writer had finished.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Snapshot {
    pub(crate) node: *const Node,
    pub(crate) off: usize,
    pub(crate) len: usize,
    pub(crate) completed: bool,
}

impl Reader {
    pub(crate) fn new(shared: Arc<Shared>, start: u64) -> Self {
        let head = shared.sentinel();
        Self {
            shared,
            local: UnsafeCell::new(Position {
                head,
                head_off: 0,
                consumed: start,
                examined: start,
                credit: 0,
            }),
        }
    }

    /// Waits for bytes the reader has not examined (or the end of the
    /// stream) and returns everything buffered.
    ///
    /// # Errors
    /// [`ReadError::ConcurrentRead`] (see the type's rule).
    pub fn read(&self) -> ReadFuture<'_> {
        ReadFuture { reader: self, min: None, began: false }
    }

    /// Waits until at least `n` bytes are buffered (or the stream ended) and
    /// returns everything buffered. While it waits it counts every buffered
    /// byte as examined, so the writer is never paused by bytes this read is
    /// waiting past: `n` above the pause threshold cannot deadlock. That is
    /// a loan: when the read ends, the examined mark is where the caller
    /// puts it with [`advance_to`](ReadGuard::advance_to) (or where it was,
    /// if the guard is dropped), and a read future dropped while it waits
    /// (a timeout, a `select!`) leaves it where it found it, so the next
    /// [`read`](Self::read) or [`try_read`](Self::try_read) returns the
    /// buffered bytes at once.
    ///
    /// An `n` of 0 counts as 1: an empty read means the end of the stream
    /// ([`ReadGuard::is_empty`]), so no read returns one before it.
    ///
    /// # Errors
    /// [`ReadError::ConcurrentRead`] (see the type's rule).
    pub fn read_at_least(&self, n: usize) -> ReadFuture<'_> {
        ReadFuture { reader: self, min: Some(n.max(1)), began: false }
    }

    /// [`read`](Self::read), blocking the thread.
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
    /// As [`read`](Self::read).
    pub fn read_blocking(&self) -> Result<ReadGuard<'_>, ReadError> {
        park::block_on(self.read())
    }

    /// [`read_at_least`](Self::read_at_least), blocking the thread (not
    /// on an async runtime's thread: see [`read_blocking`](Self::read_blocking)).
    ///
    /// # Errors
    /// As [`read`](Self::read).
    pub fn read_at_least_blocking(&self, n: usize) -> Result<ReadGuard<'_>, ReadError> {
        park::block_on(self.read_at_least(n))
    }

    /// Returns what [`read`](Self::read) would return now, or `None` if it
    /// would wait.
    ///
    /// # Errors
    /// As [`read`](Self::read).
    pub fn try_read(&self) -> Result<Option<ReadGuard<'_>>, ReadError> {
        if let Some(result) = self.read_now() {
            return result.map(|snapshot| Some(ReadGuard::new(self, snapshot)));
        }
        self.begin()?;
        match self.poll_read(None, None) {
            Poll::Ready(result) => result.map(|snapshot| Some(ReadGuard::new(self, snapshot))),
            // It would wait: the read was given up.
            Poll::Pending => Ok(None),
        }
    }

    /// Whether the writer has finished (closed, with or without an error,
    /// or dropped). Buffered bytes may remain.
    pub fn is_writer_closed(&self) -> bool {
        // Relaxed: a hint; reads re-check with Acquire.
        has(self.shared.written.load(Ordering::Relaxed), WRITER_CLOSED)
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    /// The fast path of `read` and `try_read`: when no read is outstanding
    /// and there are unexamined bytes (or the stream ended), idle ->
    /// `HOLDING` in one CAS on the reader's own line, skipping `PENDING`.
    /// `Some(Err)`: a second read ran into this one while it looked, and
    /// this one, finding nothing after all, fails as that one did.
    #[inline]
    pub(crate) fn read_now(&self) -> Option<Result<Snapshot, ReadError>> {
        let shared = &*self.shared;
        // Acquire: commits (bytes, links) and the close error happen before.
        let word = shared.written.load(Ordering::Acquire);
        // Relaxed: our own count, a hint (a stale one, or one with a loan
        // of an outstanding read in it, only costs the check after the
        // CAS, which fails or re-checks against `local`).
        let examined = shared.examined.load(Ordering::Relaxed);
        if count(word) == count(examined) && !has(word, WRITER_CLOSED) {
            return None;
        }
        // Acquire pairs with the Release that ended the previous read: its
        // updates of `local` happen before ours. A failed CAS (a read is
        // outstanding) takes the general path, which applies the rule.
        shared.read.compare_exchange(0, HOLDING, Ordering::Acquire, Ordering::Relaxed).ok()?;
        // Again, now that the reads before ours happen before: one of them
        // may have consumed past what the first load saw (a race of
        // readers). Acquire, as above.
        let word = shared.written.load(Ordering::Acquire);
        // SAFETY: the CAS made this read the owner of `local`.
        let at = self.local.with(|local| unsafe { *local });
        if at.fresh(word) == 0 && !has(word, WRITER_CLOSED) {
            // A racing read examined these bytes since our look: give the
            // read back untouched (Release hands `local` on). A read that
            // ran into ours meanwhile failed, expecting ours to hold bytes
            // or fail: with no bytes, ours fails too.
            if has(shared.read.swap(0, Ordering::Release), CONFLICT) {
                return Some(Err(ReadError::ConcurrentRead));
            }
            return None;
        }
        Some(Ok(at.snapshot(word)))
    }

    /// Starts a read: idle -> `PENDING`, or the concurrent-read rule.
    pub(crate) fn begin(&self) -> Result<(), ReadError> {
        let read = &self.shared.read;
        let mut current = read.load(Ordering::Relaxed);
        loop {
            let (new, result) = if !has(current, PENDING | HOLDING) {
                (current | PENDING, Ok(()))
            } else if !has(current, CONFLICT) {
                // Fail the pending read too: flag it and wake it. A holding
                // read ignores the flag, unless it is a fast read about to
                // find no bytes after all (`read_now`), which then fails.
                (current | CONFLICT, Err(ReadError::ConcurrentRead))
            } else {
                return Err(ReadError::ConcurrentRead);
            };
            // Acquire pairs with the Release that ended the previous read:
            // its updates of `local` happen before ours. Release when
            // flagging a conflict: the pending read that registers its
            // waker after our wake sees the flag.
            match read.compare_exchange_weak(current, new, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => {
                    if has(current, PENDING) && result.is_err() {
                        self.shared.reader_waker.wake();
                    }
                    return result;
                }
                Err(actual) => current = actual,
            }
        }
    }

    /// Gives up a read that returned no bytes (cancelled, failed or empty
    /// `try_read`): takes back the credit a waiting `read_at_least` lent
    /// itself, clears its sleep bit, and `PENDING` -> idle. The caller owns
    /// the read (`PENDING`). Returns whether a second read had flagged it
    /// (`CONFLICT`) first: a read that gives up then fails as that one did.
    pub(crate) fn cancel(&self) -> bool {
        // SAFETY: the caller owns PENDING, hence `local`.
        let credit = self.local.with_mut(|local| unsafe { core::mem::take(&mut (*local).credit) });
        let shared = &*self.shared;
        // The bytes lent while waiting are unexamined again: the next read
        // returns them at once. That can only make the writer pause later,
        // never miss a wake, so no one needs waking.
        self.give_back(credit);
        // Relaxed: only this read sets the bit, and only the writer's wake
        // clears it otherwise; clearing it here spares the writer a wake.
        if has(shared.written.load(Ordering::Relaxed), READER_WAITING) {
            shared.written.fetch_and(!READER_WAITING, Ordering::Relaxed);
        }
        // AcqRel: Release hands `local` to the next read.
        has(shared.read.swap(0, Ordering::AcqRel), CONFLICT)
    }

    /// Takes back `credit` bytes a wait lent itself, and says so to the
    /// writer's flush (`Shared::reader_news`).
    fn give_back(&self, credit: u64) {
        if credit > 0 {
            // Relaxed: the news (Release, after) publishes it to the flush.
            self.shared.examined.fetch_sub(bytes(credit), Ordering::Relaxed);
            self.shared.credit_returned();
        }
    }

    /// Polls a begun read. A snapshot moves the read to `HOLDING`; an
    /// error gives it up. `Pending` with a context means the waker is
    /// registered; without one (`try_read`), that the read would wait and
    /// was given up.
    pub(crate) fn poll_read(
        &self,
        cx: Option<&mut Context<'_>>,
        min: Option<usize>,
    ) -> Poll<Result<Snapshot, ReadError>> {
        let shared = &*self.shared;
        // Acquire: commits (bytes, links) and the close error happen before.
        let mut word = shared.written.load(Ordering::Acquire);
        let mut cx = cx;
        loop {
            // SAFETY: this read owns PENDING, hence `local`.
            let at = self.local.with(|local| unsafe { *local });
            let fresh = at.fresh(word);
            let ready = has(word, WRITER_CLOSED)
                || match min {
                    None => fresh > 0,
                    Some(n) => distance(count(word), at.consumed) >= n as u64,
                };
            if ready {
                // PENDING -> HOLDING, unless a second read flagged this one
                // (then the CAS fails and this read fails too). Acquire, as
                // in `begin`.
                if shared
                    .read
                    .compare_exchange(PENDING, HOLDING, Ordering::Acquire, Ordering::Relaxed)
                    .is_err()
                {
                    self.cancel();
                    return Poll::Ready(Err(ReadError::ConcurrentRead));
                }
                // The loan ends with the wait: its bytes are unexamined again
                // (the caller's `advance_to` says what it examined), so the
                // writer's back-pressure sees them while the read is held.
                self.give_back(at.credit);
                if has(word, READER_WAITING) {
                    // Woken by someone else (or polled early): our sleep
                    // bit would cost the writer a wake.
                    shared.written.fetch_and(!READER_WAITING, Ordering::Relaxed);
                }
                // SAFETY: this read owns the read (now HOLDING), hence `local`.
                self.local.with_mut(|local| unsafe { (*local).credit = 0 });
                return Poll::Ready(Ok(at.snapshot(word)));
            }
            let Some(cx) = cx.as_deref_mut() else {
                // A second read that flagged this one failed at once,
                // expecting this one to fail too: it does, rather than report
                // "nothing yet" (a caller polling until a read conflicts
                // would wait forever).
                if self.cancel() {
                    return Poll::Ready(Err(ReadError::ConcurrentRead));
                }
                return Poll::Pending;
            };
            shared.reader_waker.register(cx.waker());
            // Sleep only if nothing was committed or closed since we judged
            // "not ready": a commit or close in between fails the CAS.
            // Release orders the registration before the bit for whoever
            // clears it.
            match shared.written.compare_exchange_weak(
                word,
                word | READER_WAITING,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    if min.is_some() && fresh > 0 {
                        // read_at_least examines everything while it waits
                        // (once asleep: what the writer does next wakes us),
                        // so the writer is never paused by bytes we are
                        // waiting past.
                        // SAFETY: this read owns PENDING, hence `local`.
                        self.local.with_mut(|local| unsafe { (*local).credit += fresh });
                        // AcqRel: Acquire orders a sleeping writer's
                        // registration before our wake.
                        let old = shared.examined.fetch_add(bytes(fresh), Ordering::AcqRel);
                        if has(old, WRITER_WAITING) {
                            shared.wake_writer();
                        }
                    }
                    // A second read that flagged this one before our
                    // registration woke an empty slot: look once more.
                    // Acquire: if its wake ran before our registration,
                    // that registration's Acquire ordered the flag before.
                    if has(shared.read.load(Ordering::Acquire), CONFLICT) {
                        self.cancel();
                        return Poll::Ready(Err(ReadError::ConcurrentRead));
                    }
                    return Poll::Pending;
                }
                Err(actual) => word = actual,
            }
        }
    }

    /// Ends a read that returned `snapshot`: consumes `consumed` bytes
    /// (returning emptied blocks to the pool, or keeping them for a writer
    /// that waits: `segment`, "Kept blocks"), marks `examined` bytes
    /// examined, and moves `HOLDING` -> idle, waking a paused writer when
    /// the unexamined count falls below `resume_at`. The caller checked
    /// `consumed <= examined <= snapshot.len`. Returns whether a second
    /// read ran into this one while it held (`CONFLICT`): a holder of bytes
    /// ignores that, a `Readable` (which holds for a moment and returns no
    /// bytes) fails with it.
    pub(crate) fn release(&self, snapshot: &Snapshot, consumed: usize, examined: usize) -> bool {
        debug_assert!(consumed <= examined && examined <= snapshot.len);
        // SAFETY: this read owns HOLDING, hence `local`.
        let (newly_examined, unexamined) = self.local.with_mut(|local| unsafe {
            let local = &mut *local;
            // The snapshot's end: at least what is committed now.
            let end = local.consumed + snapshot.len as u64;
            let newly_examined = self.consume(local, consumed, examined, snapshot.completed);
            (newly_examined, end - local.examined)
        });
        let shared = &*self.shared;
        if newly_examined > 0 {
            // One RMW on the reader's own line (the writer loads it only
            // near the pause threshold). Release publishes the examined
            // mark; Acquire orders a sleeping writer's registration before
            // our wake.
            let old = shared.examined.fetch_add(bytes(newly_examined), Ordering::AcqRel);
            // The writer sleeps (it set the bit with a CAS against a count
            // at least resume_at short of what it had written) and may go on
            // now: what is unexamined is at least our figure, since more
            // may have been committed since the snapshot.
            if has(old, WRITER_WAITING) && unexamined < shared.config.resume_at {
                shared.wake_writer();
            }
        }
        // Release hands `local` to the next read. While HOLDING, others
        // only add `CONFLICT`, which this clears. A store would do in the
        // memory model (a flag's CAS expects HOLDING, so it either comes
        // first and is overwritten, or reads 0 and fails), but loom 0.7
        // lets a store slip between the read and the write of a concurrent
        // RMW (tokio-rs/loom#254), and `two_readers_race` then fails
        // spuriously; the swap keeps the models meaningful, and on the
        // reader's own line, which the writer never touches, it is cheap.
        has(shared.read.swap(0, Ordering::Release), CONFLICT)
    }

    /// Moves `local` past `consumed` bytes and `examined` bytes; returns how
    /// many bytes became examined. `completed`: the writer had finished
    /// when the read began (it will link no more blocks).
    ///
    /// # Safety
    /// The caller owns the read (`HOLDING`, so no credit is lent), and
    /// `consumed` bytes are buffered.
    unsafe fn consume(
        &self,
        local: &mut Position,
        consumed: usize,
        examined: usize,
        completed: bool,
    ) -> u64 {
        debug_assert_eq!(local.credit, 0);
        let examined_to = (local.consumed + examined as u64).max(local.examined);
        let newly_examined = examined_to - local.examined;
        local.examined = examined_to;
        local.consumed += consumed as u64;
        let old_head = local.head;
        let mut left = consumed;
        // Whether emptied blocks stay for the writer (`segment`, "Kept
        // blocks"): asked once, at the first block emptied.
        let mut keep = None;
        let mut keep = || {
            *keep.get_or_insert_with(|| {
                // Relaxed, both: hints (a block's hand-off is ordered by the
                // head's store). The sleep bit is on the reader's own line;
                // the writer's line is loaded only when it is set, to keep
                // nothing for a writer that has closed since the read began
                // (its close gave back what was kept before).
                let shared = &self.shared;
                shared.config.keep_blocks
                    && !completed
                    && has(shared.examined.load(Ordering::Relaxed), WRITER_WAITING)
                    && !has(shared.written.load(Ordering::Relaxed), WRITER_CLOSED)
            })
        };
        loop {
            // Acquire pairs with the writer's link: the successor's fields
            // happen before our reads of them.
            // SAFETY: the head is a live node of the list.
            let next = unsafe { (*local.head).next.load(Ordering::Acquire) };
            if next.is_null() {
                local.head_off += left;
                if local.head_off == self.shared.config.block_size && !keep() {
                    // A full tail is never written again: its block can go
                    // back now (the node stays, for the writer's next link).
                    // Kept, it stays until the reader passes the node.
                    // SAFETY: the writer does not touch a linked node's
                    // block, and a full tail's bytes are all consumed.
                    drop(unsafe { Node::take_block(local.head) });
                }
                break;
            }
            // SAFETY: both nodes are linked and synchronised (above).
            let (start, next_start) = unsafe { (Node::base(local.head).1, Node::base(next).1) };
            let available = (next_start - start) as usize - local.head_off;
            if left < available {
                local.head_off += left;
                break;
            }
            left -= available;
            // The node is consumed and not the tail: its block goes back to
            // the pool now, from this thread, unless the writer waits on
            // back-pressure and will want it.
            let keep = keep();
            // SAFETY: the reader owns a consumed node's block until it
            // publishes a head past it.
            unsafe { Node::pass(local.head, keep) };
            local.head = next;
            local.head_off = 0;
        }
        if local.head != old_head {
            // Release pairs with the writer's Acquire in `spare_node`: our
            // last uses of the passed nodes happen before their reuse.
            self.shared.head.store(local.head, Ordering::Release);
        }
        newly_examined
    }
}

/// Waits until a read of a shared [`Reader`] would return at once
/// (unexamined bytes, or the end of the stream), without taking the bytes:
/// then call [`try_read`](Reader::try_read). An owned future, for a reader
/// shared through an `Arc` whose waiting is polled from a struct that also
/// holds the reader (an event loop, a body adapter), where
/// [`read`](Reader::read)'s borrowing future cannot live.
///
/// While it waits it is a pending read (see [`Reader`]'s rule): a read
/// begun meanwhile fails with [`ReadError::ConcurrentRead`] and fails this
/// wait too. Dropping it gives the wait up; nothing is examined or
/// consumed either way.
///
/// # Errors
/// [`ReadError::ConcurrentRead`] (see [`Reader`]'s rule).
#[must_use = "futures do nothing unless polled"]
pub struct Readable {
    reader: Arc<Reader>,
    /// The wait has begun (owns `PENDING`) and not finished.
    began: bool,
}

impl Readable {
    /// A wait on `reader`.
    pub fn new(reader: &Arc<Reader>) -> Self {
        Self { reader: Arc::clone(reader), began: false }
    }
}

impl Future for Readable {
    type Output = Result<(), ReadError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if !this.began {
            let shared = &*this.reader.shared;
            // Acquire, in this order: the read that ended last published
            // its examined count before it cleared the read word, and
            // commits happen before the written word we load.
            if shared.read.load(Ordering::Acquire) == 0 {
                let examined = shared.examined.load(Ordering::Acquire);
                let word = shared.written.load(Ordering::Acquire);
                if count(word) != count(examined) || has(word, WRITER_CLOSED) {
                    return Poll::Ready(Ok(()));
                }
            }
            this.reader.begin()?;
            this.began = true;
        }
        let result = match this.reader.poll_read(Some(cx), None) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(result) => result,
        };
        this.began = false;
        // Ready: give the bytes back untouched (no credit: `min` is None).
        // A read begun while this wait held them failed; so does the wait.
        Poll::Ready(result.and_then(|snapshot| {
            if this.reader.release(&snapshot, 0, 0) {
                return Err(ReadError::ConcurrentRead);
            }
            Ok(())
        }))
    }
}

impl Drop for Readable {
    fn drop(&mut self) {
        if self.began {
            self.reader.cancel();
        }
    }
}

impl core::fmt::Debug for Readable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Readable").field("began", &self.began).finish_non_exhaustive()
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        let shared = &*self.shared;
        // AcqRel: Release orders our last reads before the writer's reuse of
        // anything. On `written`, so the next commit fails; on `examined`,
        // to fail a sleeping flush's CAS or wake it (Acquire orders its
        // registration before our wake).
        shared.written.fetch_or(READER_CLOSED, Ordering::AcqRel);
        let old = shared.examined.fetch_or(READER_CLOSED, Ordering::AcqRel);
        // Release: a flush that sees this sees READER_CLOSED.
        shared.reader_news.fetch_or(NEWS_READER_GONE, Ordering::Release);
        if has(old, WRITER_WAITING) {
            shared.wake_writer();
        }
    }
}

impl core::fmt::Debug for Reader {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Reader")
            .field("writer_closed", &self.is_writer_closed())
            .finish_non_exhaustive()
    }
}

/// The future of [`Reader::read`] and [`Reader::read_at_least`]. Dropping
/// it after it was polled gives the read up (nothing consumed).
#[must_use = "futures do nothing unless polled"]
pub struct ReadFuture<'a> {
    reader: &'a Reader,
    min: Option<usize>,
    /// The read has begun (owns `PENDING`) and not finished.
    began: bool,
}

impl<'a> Future for ReadFuture<'a> {
    type Output = Result<ReadGuard<'a>, ReadError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if !this.began {
            if this.min.is_none()
                && let Some(result) = this.reader.read_now()
            {
                return Poll::Ready(result.map(|snapshot| ReadGuard::new(this.reader, snapshot)));
            }
            this.reader.begin()?;
            this.began = true;
        }
        let result = match this.reader.poll_read(Some(cx), this.min) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(result) => result,
        };
        this.began = false;
        Poll::Ready(result.map(|snapshot| ReadGuard::new(this.reader, snapshot)))
    }
}

impl Drop for ReadFuture<'_> {
    fn drop(&mut self) {
        if self.began {
            self.reader.cancel();
        }
    }
}

impl core::fmt::Debug for ReadFuture<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ReadFuture").field("min", &self.min).field("began", &self.began).finish()
    }
}
