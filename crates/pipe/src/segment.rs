//! The segment list: pool blocks linked from the reader's head to the
//! writer's tail, with nodes recycled by the writer (no allocation in steady
//! state).
//!
//! ```text
//!  first ... (dead) ... head (reader) -> node -> ... -> tail (writer) -> null
//!  '---- spare nodes ---'    '------------- live segments ---------------'
//! ```
//!
//! - The writer appends: it fills a node (block, base pointer, stream
//!   position of its first byte, `next = null`) and links it with a Release
//!   store to the old tail's `next`. It writes bytes only past the committed
//!   end of the tail, and never touches a node again once it is linked,
//!   except to reuse it after the reader has passed it.
//! - The reader consumes from `head`: once a node is fully consumed and has a
//!   successor, it gives the block up and moves `head` on, publishing the
//!   new head with a Release store. Giving up is one of two things: the
//!   block goes back to the pool at once, or, while the writer waits on
//!   back-pressure, it stays in the node for the writer (see "Kept
//!   blocks" below).
//! - Nodes between the writer's `first` and the reader's published head are
//!   dead: the writer reuses them (Acquire load of the head, paired with the
//!   reader's store) before it allocates. This is the node cache of Vyukov's
//!   unbounded SPSC queue; there is no ABA because only the writer recycles
//!   and only nodes the reader has published as passed.
//!
//! # Kept blocks
//!
//! A writer paused by back-pressure is about to write as many blocks as the
//! reader frees: it resumes once the reader has examined its way below
//! `resume_at`. Sent through the pool, each of those blocks would go into
//! the reader's thread cache, on to the pool's shared store, and back into
//! the writer's cache, each step on another core's lines. So a reader that
//! passes a node while the writer waits (`WRITER_WAITING` in the examined
//! word, a load of the reader's own line) leaves an owned block in it, and
//! the writer takes it out again when it links the node, before it leases
//! from the pool. The hand-off is the node's own: the reader's last touch
//! of the block happens before its Release store of the head, and the
//! writer's first after its Acquire load of it. Kept blocks are bounded by
//! what the pipe held when the writer paused; the writer gives back those
//! it does not reuse when it is closed or dropped, or when asked
//! ([`Writer::trim`](crate::Writer::trim)), and a reader that finds the
//! writer closed keeps nothing. The writer takes kept blocks before it
//! leases, from whichever spare nodes hold them (the first ones may hold
//! none: the list's first node never did, and a node passed before the
//! writer waited gave its block back), looking at each spare node once;
//! so kept and unread blocks together stay within what the pipe held when
//! the writer paused. A shared block (handed out as `Bytes`) is never
//! kept: its node lets go of its handle.
//!
//! A node's readable bytes end where its successor starts (`next.start`), or
//! at the written total when it is the tail; the reader bounds every walk
//! by the byte count it took from the `written` word, so a node linked after
//! that snapshot is never read past its committed bytes.

use core::ptr;

use falconet_pool::Block;

use crate::primitive::{AtomicPtr, Ordering, UnsafeCell};

/// A node's block: owned by the node, or shared with `Bytes` the reader
/// handed out ([`ReadGuard::bytes`](crate::ReadGuard::bytes)), in which case
/// it goes back to the pool when the node and every such `Bytes` let go.
pub(crate) enum Held {
    Owned(#[allow(dead_code, reason = "held for its drop")] Block),
    Shared(std::sync::Arc<Block>),
}

/// One segment: a pool block and where it sits in the byte stream.
pub(crate) struct Node {
    /// The block; `None` for the initial sentinel and for consumed nodes.
    /// Written by the writer before linking; after that only the reader
    /// touches it: it shares it ([`Node::share_block`]) and takes it out
    /// when the node is consumed.
    block: UnsafeCell<Option<Held>>,
    /// The block's first byte (raw, so the writer can fill the free part
    /// while the reader reads the committed part) and the stream position of
    /// that byte. Written before the node is linked, read-only after.
    base: UnsafeCell<(*mut u8, u64)>,
    /// The successor, linked by the writer with Release.
    pub(crate) next: AtomicPtr<Node>,
}

impl Node {
    /// A new boxed node without a block: a node for the writer to fill
    /// when no spare one is left.
    pub(crate) fn empty() -> *mut Node {
        Self::sentinel(0)
    }

    /// Asks the CPU to bring the line of `node`'s link into this core's
    /// cache (a read prefetch, PREFETCHT0: the write hint, PREFETCHW, is
    /// emitted only for CPUs built with `prfchw`). A hint: it reads nothing
    /// the program can observe and cannot fault, whatever the address.
    #[inline(always)]
    pub(crate) fn prefetch(node: *const Node) {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        {
            // `&raw const` computes the field's address without reading.
            // SAFETY: no access happens: the place is never read.
            let next = unsafe { &raw const (*node).next };
            // SAFETY: a prefetch never faults and has no effect the program
            // can observe (Intel SDM, PREFETCHh).
            unsafe {
                use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
                _mm_prefetch::<_MM_HINT_T0>(next.cast());
            }
        }
        #[cfg(not(all(target_arch = "x86_64", not(miri))))]
        let _ = node;
    }

    /// The list's first node: no block, and the stream's first byte (at
    /// position `start`) will be in its successor.
    pub(crate) fn sentinel(start: u64) -> *mut Node {
        Box::into_raw(Box::new(Node {
            block: UnsafeCell::new(None),
            base: UnsafeCell::new((ptr::null_mut(), start)),
            next: AtomicPtr::new(ptr::null_mut()),
        }))
    }

    /// Fills an unlinked node with `block`, which holds the bytes from
    /// stream position `start` on.
    ///
    /// # Safety
    /// The caller (the writer) owns the node: it is new, or the reader has
    /// passed it.
    pub(crate) unsafe fn fill(node: *mut Node, mut block: Block, start: u64) -> *mut u8 {
        let base = block.as_mut_ptr();
        // SAFETY: the caller owns the node.
        let node = unsafe { &*node };
        // SAFETY: the writer owns the node (above): no other access.
        node.block.with_mut(|slot| unsafe { *slot = Some(Held::Owned(block)) });
        // SAFETY: as above.
        node.base.with_mut(|slot| unsafe { *slot = (base, start) });
        // Relaxed: the node is unreachable until it is linked with Release.
        node.next.store(ptr::null_mut(), Ordering::Relaxed);
        base
    }

    /// The node's base pointer and the stream position of its first byte.
    ///
    /// # Safety
    /// The node is linked (or is the sentinel) and the caller synchronised
    /// with its link (an Acquire load of `next`, or of a later `written` word).
    #[inline]
    pub(crate) unsafe fn base(node: *const Node) -> (*mut u8, u64) {
        // SAFETY: the caller's synchronisation orders the writer's `fill`
        // before this read, and nobody writes `base` until the node is dead.
        unsafe { (*node).base.with(|slot| *slot) }
    }

    /// Takes the block out of a consumed node; it goes back to its pool when
    /// the caller drops it (and, if shared, every `Bytes` over it has).
    ///
    /// # Safety
    /// The caller (the reader) owns the node's block: the node is fully
    /// consumed and has not been published as passed yet.
    pub(crate) unsafe fn take_block(node: *mut Node) -> Option<Held> {
        // SAFETY: the caller owns the block (above).
        unsafe { (*node).block.with_mut(|slot| (*slot).take()) }
    }

    /// Gives up a consumed node's block as the reader passes the node: an
    /// owned block stays in the node for the writer when `keep` (see
    /// "Kept blocks"), otherwise it goes back to the pool now, from this
    /// thread; a shared handle is always let go.
    ///
    /// # Safety
    /// As for [`take_block`](Self::take_block).
    pub(crate) unsafe fn pass(node: *mut Node, keep: bool) {
        // SAFETY: the caller owns the block (above).
        unsafe {
            (*node).block.with_mut(|slot| {
                if !(keep && matches!(*slot, Some(Held::Owned(_)))) {
                    drop((*slot).take());
                }
            });
        }
    }

    /// Takes out the block a spare node kept for the writer, if it kept one.
    ///
    /// # Safety
    /// The caller (the writer) owns the node: the reader has published a
    /// head past it.
    pub(crate) unsafe fn take_kept(node: *mut Node) -> Option<Block> {
        // SAFETY: the writer owns a passed node (above).
        unsafe {
            (*node).block.with_mut(|slot| match (*slot).take() {
                Some(Held::Owned(block)) => Some(block),
                // A passed node holds no shared handle (`pass` let it go).
                _ => None,
            })
        }
    }

    /// The node's block as a shared handle, made shared the first time:
    /// the node keeps one handle, the caller gets another.
    ///
    /// # Safety
    /// The caller is the reader and holds a read covering bytes of this
    /// node (so the node is linked, synchronised and still has its block),
    /// with exclusive access to the read (`&mut ReadGuard`): nothing else
    /// touches the slot meanwhile (the writer never does after linking).
    pub(crate) unsafe fn share_block(node: *mut Node) -> Option<std::sync::Arc<Block>> {
        // SAFETY: exclusive reader-side access (above).
        unsafe {
            (*node).block.with_mut(|slot| {
                let shared = match (*slot).take()? {
                    Held::Owned(block) => std::sync::Arc::new(block),
                    Held::Shared(shared) => shared,
                };
                *slot = Some(Held::Shared(std::sync::Arc::clone(&shared)));
                Some(shared)
            })
        }
    }

    /// Frees a node and its block.
    ///
    /// # Safety
    /// The node was made by `empty` (boxed), nothing else refers to it,
    /// and it is not freed twice.
    pub(crate) unsafe fn free(node: *mut Node) {
        // SAFETY: the caller owns the box (above).
        drop(unsafe { Box::from_raw(node) });
    }
}
