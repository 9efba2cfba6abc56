//! The state both ends share: the three words of `crate::state`, the two
//! waker slots, the reader's published head and the writer's close error.

use std::io;

use crossbeam_utils::CachePadded;

use crate::options::Config;
use crate::primitive::{AtomicPtr, AtomicU64, Ordering, UnsafeCell};
use crate::segment::Node;
use crate::state::{READER_WAITING, WRITER_WAITING, bytes};
use crate::waker::WakerSlot;

/// `reader_news`: the reader was dropped (after `READER_CLOSED`).
pub(crate) const NEWS_READER_GONE: u64 = 1;
/// `reader_news`, added per event: a read gave back the credit it had lent
/// (the unexamined count went up without a commit).
pub(crate) const NEWS_CREDIT_RETURNED: u64 = 2;

pub(crate) struct Shared {
    /// Committed bytes and the writer's flags (`crate::state`): written
    /// by the writer on every commit, loaded by the reader.
    pub(crate) written: CachePadded<AtomicU64>,
    /// Examined (and lent) bytes and the writer's sleep bit: written by
    /// the reader when a read examines bytes, loaded by a flush that is
    /// near the pause threshold.
    pub(crate) examined: CachePadded<AtomicU64>,
    /// The one-read-at-a-time bits: touched by readers only.
    pub(crate) read: CachePadded<AtomicU64>,
    /// The reader's published head: nodes before it are the writer's to reuse.
    pub(crate) head: CachePadded<AtomicPtr<Node>>,
    /// What the reader did that can raise the writer's back-pressure, on a
    /// line of its own that changes rarely (`NEWS_*`): while it is
    /// unchanged, the examined count has only grown since the writer last
    /// loaded it, so a flush that was below the threshold then is below it
    /// now without a look at the reader's line. Set after the examined
    /// word changes, with Release.
    pub(crate) reader_news: CachePadded<AtomicU64>,
    pub(crate) reader_waker: CachePadded<WakerSlot>,
    pub(crate) writer_waker: CachePadded<WakerSlot>,
    /// The writer's close error: written once before `WRITER_CLOSED` is set,
    /// read only after it is seen.
    pub(crate) error: UnsafeCell<Option<io::Error>>,
    /// The oldest node, stored by the writer when it is dropped; every node
    /// is reachable from it, so the last owner frees the list from here.
    pub(crate) first: UnsafeCell<*mut Node>,
    pub(crate) config: Config,
}

// SAFETY: the raw node pointers are owned by the pipe and handed between the
// ends by the protocols in `state` and `segment`; the cells are accessed
// only as those protocols allow.
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

impl Shared {
    /// The shared state of a pipe whose stream starts at position `start`.
    pub(crate) fn new(config: Config, start: u64) -> Self {
        let sentinel = Node::sentinel(start);
        Self {
            written: CachePadded::new(AtomicU64::new(bytes(start))),
            examined: CachePadded::new(AtomicU64::new(bytes(start))),
            read: CachePadded::new(AtomicU64::new(0)),
            head: CachePadded::new(AtomicPtr::new(sentinel)),
            reader_news: CachePadded::new(AtomicU64::new(0)),
            reader_waker: CachePadded::new(WakerSlot::new()),
            writer_waker: CachePadded::new(WakerSlot::new()),
            error: UnsafeCell::new(None),
            first: UnsafeCell::new(sentinel),
            config,
        }
    }

    /// The first node of the list, for the writer's start.
    pub(crate) fn sentinel(&self) -> *mut Node {
        // SAFETY: read once by the constructor's owner before any sharing.
        self.first.with(|first| unsafe { *first })
    }

    /// Clears `READER_WAITING` (an RMW on `written` saw it set) and wakes
    /// the reader.
    #[cold]
    pub(crate) fn wake_reader(&self) {
        // AcqRel: Acquire orders the sleeper's registration before our wake.
        self.written.fetch_and(!READER_WAITING, Ordering::AcqRel);
        self.reader_waker.wake();
    }

    /// Clears `WRITER_WAITING` (an RMW on `examined` saw it set) and wakes
    /// the writer.
    #[cold]
    pub(crate) fn wake_writer(&self) {
        // AcqRel: Acquire orders the sleeper's registration before our wake.
        self.examined.fetch_and(!WRITER_WAITING, Ordering::AcqRel);
        self.writer_waker.wake();
    }

    /// Tells the writer's flush that the unexamined count rose (a loan
    /// came back), after the examined word's update.
    #[inline]
    pub(crate) fn credit_returned(&self) {
        // Release: the count's fall happens before a flush that sees this.
        self.reader_news.fetch_add(NEWS_CREDIT_RETURNED, Ordering::Release);
    }

    /// The writer's error, once `WRITER_CLOSED` has been seen with Acquire.
    pub(crate) fn error(&self) -> Option<&io::Error> {
        // SAFETY: the caller saw WRITER_CLOSED (Acquire), which the writer
        // set (Release) after its only write to the slot.
        self.error.with(|error| unsafe { (*error).as_ref() })
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // Both ends are gone (`Arc` ordered their last accesses before this).
        let mut node = self.first.with(|first| {
            // SAFETY: exclusive access in drop.
            unsafe { *first }
        });
        while !node.is_null() {
            // SAFETY: the list is exclusively ours; each node is visited once.
            let next = unsafe { (*node).next.load(Ordering::Relaxed) };
            // SAFETY: every node was boxed by `Node::empty`, and nothing
            // refers to it any more.
            unsafe { Node::free(node) };
            node = next;
        }
    }
}
