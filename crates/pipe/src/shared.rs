//! The state both ends share: the readiness word, the two waker slots, the
//! reader's published head and the writer's close error.

use std::io;

use crossbeam_utils::CachePadded;

use crate::options::Config;
use crate::primitive::{AtomicPtr, AtomicU64, Ordering, UnsafeCell};
use crate::segment::Node;
use crate::state::{WRITER_WAITING, has};
use crate::waker::WakerSlot;

/// `reader_news`: the reader was dropped (after `READER_CLOSED`).
pub(crate) const NEWS_READER_GONE: u64 = 1;
/// `reader_news`, added per event: a read gave back the credit it had lent
/// (the unexamined count went up without a commit).
pub(crate) const NEWS_CREDIT_RETURNED: u64 = 2;

pub(crate) struct Shared {
    /// The readiness word (`crate::state`); written by both ends.
    pub(crate) state: CachePadded<AtomicU64>,
    /// The reader's published head: nodes before it are the writer's to reuse.
    pub(crate) head: CachePadded<AtomicPtr<Node>>,
    /// What the reader did that can raise the writer's back-pressure, on a
    /// line of its own that changes rarely (`NEWS_*`): the writer's flush
    /// reads it instead of the state word, whose line the reader keeps
    /// writing. Set after the state word changes, with Release.
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
    pub(crate) fn new(config: Config) -> Self {
        let sentinel = Node::empty();
        Self {
            state: CachePadded::new(AtomicU64::new(0)),
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

    /// Moves the state word from `current` to `new`, or returns the word
    /// that is there instead. Every transition the two ends decide from a
    /// word they read goes through here. AcqRel on success: Release
    /// publishes what the caller did before (bytes, `local`, a waker
    /// registration) to whoever reads the word next; Acquire orders what the
    /// previous writers of the word did before the caller's next steps.
    /// Acquire on failure: the caller judges again from the word returned.
    #[inline]
    pub(crate) fn transition(&self, current: u64, new: u64) -> Result<u64, u64> {
        self.state.compare_exchange_weak(current, new, Ordering::AcqRel, Ordering::Acquire)
    }

    /// Clears `bit` (a waiting flag another RMW saw set) and wakes `slot`.
    #[cold]
    pub(crate) fn wake(&self, bit: u64, slot: &WakerSlot) {
        // AcqRel: Acquire orders the sleeper's registration before our wake.
        self.state.fetch_and(!bit, Ordering::AcqRel);
        slot.wake();
    }

    /// Tells the writer's flush that the unexamined count rose (credit
    /// came back), after the state word's update.
    #[inline]
    pub(crate) fn credit_returned(&self, credit: u64) {
        if credit > 0 {
            // Release: the count's rise happens before a flush that sees this.
            self.reader_news.fetch_add(NEWS_CREDIT_RETURNED, Ordering::Release);
        }
    }

    /// Wakes the writer if `old` (the word before a reader's update that
    /// cleared `WRITER_WAITING`) had it waiting.
    #[inline]
    pub(crate) fn wake_writer_if(&self, old: u64, new: u64) {
        if has(old, WRITER_WAITING) && !has(new, WRITER_WAITING) {
            self.writer_waker.wake();
        }
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
