//! What a read returns: a guard over the buffered bytes, and views of them.

use core::marker::PhantomData;
use std::io;

use bytes::{Buf, Bytes};

use crate::error::AdvanceError;
use crate::primitive::Ordering;
use crate::reader::{Reader, Snapshot};
use crate::segment::Node;

/// The bytes a read returned, held until [`advance_to`](Self::advance_to).
///
/// The bytes are the pipe's own pooled blocks, not a copy: look at them as
/// slices with [`chunks`](Self::chunks), or as a [`bytes::Buf`] cursor with
/// [`buf`](Self::buf). Then say how far you got with `advance_to(consumed,
/// examined)`: consumed bytes leave the pipe (emptied blocks go back to the
/// pool at once, or stay for a writer that waits on back-pressure: see
/// [`Writer::trim`](crate::Writer::trim)); examined bytes will not wake the next read. Examining
/// everything means "wake me only for new data". Dropping the guard without
/// advancing consumes and examines nothing.
pub struct ReadGuard<'a> {
    reader: &'a Reader,
    snapshot: Snapshot,
    released: bool,
}

// SAFETY: the guard owns the read (`HOLDING`); the bytes it shows are
// committed and immutable until it releases the read.
unsafe impl Send for ReadGuard<'_> {}
// SAFETY: `&ReadGuard` only gives `&[u8]` views.
unsafe impl Sync for ReadGuard<'_> {}

impl<'a> ReadGuard<'a> {
    pub(crate) fn new(reader: &'a Reader, snapshot: Snapshot) -> Self {
        Self { reader, snapshot, released: false }
    }

    /// Ends the guard without ending the read: the caller (an adapter) now
    /// owns it and releases it through the reader.
    pub(crate) fn into_snapshot(mut self) -> Snapshot {
        self.released = true;
        self.snapshot
    }

    /// Buffered bytes: everything from the reader's position to the end of
    /// what the writer has committed.
    pub fn len(&self) -> usize {
        self.snapshot.len
    }

    /// Whether no bytes are buffered (then the read returned because the
    /// stream is completed).
    pub fn is_empty(&self) -> bool {
        self.snapshot.len == 0
    }

    /// Whether the writer had finished when the read returned: no byte will
    /// follow these.
    pub fn is_completed(&self) -> bool {
        self.snapshot.completed
    }

    /// The writer's error, when it finished with
    /// [`close_with`](crate::Writer::close_with) or was dropped unclosed.
    pub fn error(&self) -> Option<&io::Error> {
        if self.snapshot.completed { self.reader.shared().error() } else { None }
    }

    /// The bytes as a [`bytes::Buf`] cursor; its `advance` moves only the
    /// cursor. Consumed = `len() - buf.remaining()` when you are done.
    pub fn buf(&self) -> View<'_> {
        View::new(self.snapshot.node, self.snapshot.off, self.snapshot.len)
    }

    /// The bytes as contiguous slices, one per block, in order.
    pub fn chunks(&self) -> Chunks<'_> {
        Chunks { view: self.buf() }
    }

    /// The bytes in `range` (counted from the start of this read) as a
    /// [`Bytes`]: when they lie in one block, without a copy (the `Bytes`
    /// shares the pool block, which stays out of the pool, even after the
    /// pipe is gone, until the last `Bytes` over it drops); across a block
    /// boundary, copied. `None` when `range` is not within
    /// [`len`](Self::len). The bytes stay in the pipe until
    /// [`advance_to`](Self::advance_to) consumes them.
    ///
    /// Each zero-copy `Bytes` costs one small allocation (its shared
    /// header), and the first one from a block another (the block's shared
    /// handle). A block shared with a `Bytes` counts against the pool, not
    /// against the pipe's thresholds, once consumed.
    ///
    /// ```
    /// let pool = falconet_pipe::Pool::new();
    /// let (mut writer, reader) = falconet_pipe::pipe(&pool, falconet_pipe::Options::new())?;
    /// writer.put_slice(b"\x00\x05hello\x00\x05world")?; // length-prefixed frames
    /// let mut read = reader.try_read()?.unwrap();
    /// let first = read.bytes(2..7).unwrap();
    /// let second = read.bytes(9..14).unwrap();
    /// read.consume(14)?;
    /// drop((writer, reader)); // the frames outlive the pipe
    /// assert_eq!((&first[..], &second[..]), (&b"hello"[..], &b"world"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn bytes(&mut self, range: core::ops::Range<usize>) -> Option<Bytes> {
        if range.start > range.end || range.end > self.len() {
            return None;
        }
        let len = range.end - range.start;
        if len == 0 {
            return Some(Bytes::new());
        }
        let mut view = self.buf();
        view.advance(range.start);
        if view.chunk().len() < len {
            // Across blocks: one copy.
            return Some(view.copy_to_bytes(len));
        }
        let start = view.chunk().as_ptr();
        // SAFETY: we are the reader, `&mut self` makes this read's access
        // exclusive, and the node holds bytes of the read, so its block.
        let Some(block) = (unsafe { Node::share_block(view.node.cast_mut()) }) else {
            return Some(view.copy_to_bytes(len));
        };
        Some(Bytes::from_owner(SharedSlice { _block: block, start, len }))
    }

    /// Copies the bytes into a `Vec` (for tests and slow paths).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len());
        self.chunks().for_each(|chunk| out.extend_from_slice(chunk));
        out
    }

    /// Ends the read: the first `consumed` bytes leave the pipe, and the
    /// first `examined` bytes count as examined (the next read waits for
    /// bytes beyond them). Both count from the start of this read.
    ///
    /// # Errors
    /// [`AdvanceError::ConsumedPastExamined`] or
    /// [`AdvanceError::ExaminedPastEnd`]; the read then ends with nothing
    /// consumed or examined.
    pub fn advance_to(mut self, consumed: usize, examined: usize) -> Result<(), AdvanceError> {
        let result = if consumed > examined {
            Err(AdvanceError::ConsumedPastExamined { consumed, examined })
        } else if examined > self.snapshot.len {
            Err(AdvanceError::ExaminedPastEnd { examined, len: self.snapshot.len })
        } else {
            Ok(())
        };
        let (consumed, examined) = if result.is_ok() { (consumed, examined) } else { (0, 0) };
        self.released = true;
        self.reader.release(&self.snapshot, consumed, examined);
        result
    }

    /// Consumes `n` bytes and examines everything: "I used `n`, wake me
    /// when more arrives".
    ///
    /// # Errors
    /// [`AdvanceError::ConsumedPastExamined`] when `n > len()`.
    pub fn consume(self, n: usize) -> Result<(), AdvanceError> {
        let len = self.len();
        self.advance_to(n, len)
    }
}

impl Drop for ReadGuard<'_> {
    fn drop(&mut self) {
        if !self.released {
            self.reader.release(&self.snapshot, 0, 0);
        }
    }
}

impl core::fmt::Debug for ReadGuard<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ReadGuard")
            .field("len", &self.len())
            .field("completed", &self.is_completed())
            .field("error", &self.error())
            .finish()
    }
}

/// Bytes of a shared pool block, owned by a `Bytes`.
struct SharedSlice {
    /// Keeps the block out of the pool.
    _block: std::sync::Arc<falconet_pool::Block>,
    start: *const u8,
    len: usize,
}

// SAFETY: the slice's bytes are committed and never written again (the
// writer writes only past the committed end), and the block they live in
// is kept alive by `_block`, which is `Send + Sync`.
unsafe impl Send for SharedSlice {}

impl AsRef<[u8]> for SharedSlice {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: as for `Send`: `len` committed bytes at `start`, alive and
        // immutable while `_block` is held. Only these bytes are borrowed,
        // not the block, whose free part the writer may still be filling.
        unsafe { core::slice::from_raw_parts(self.start, self.len) }
    }
}

/// A [`bytes::Buf`] cursor over a read's bytes (see [`ReadGuard::buf`]).
#[derive(Clone)]
pub struct View<'a> {
    node: *const Node,
    /// Offset of the cursor in `node`'s block.
    off: usize,
    /// Contiguous bytes at the cursor.
    chunk: usize,
    /// Bytes left in the whole view.
    remaining: usize,
    _guard: PhantomData<&'a ReadGuard<'a>>,
}

// SAFETY: a view only reads committed bytes its guard keeps alive.
unsafe impl Send for View<'_> {}
// SAFETY: as above.
unsafe impl Sync for View<'_> {}

impl View<'_> {
    pub(crate) fn new(node: *const Node, off: usize, remaining: usize) -> Self {
        let mut view = Self { node, off, chunk: 0, remaining, _guard: PhantomData };
        view.settle();
        view
    }

    /// Moves past exhausted nodes and sizes the chunk at the cursor.
    fn settle(&mut self) {
        loop {
            // Acquire pairs with the writer's link (successor's fields).
            // SAFETY: the node is live while the guard holds the read.
            let next = unsafe { (*self.node).next.load(Ordering::Acquire) };
            let in_node = if next.is_null() {
                // The tail: every remaining byte is in it.
                self.remaining
            } else {
                // SAFETY: both nodes are linked and synchronised (above).
                let (start, next_start) = unsafe { (Node::base(self.node).1, Node::base(next).1) };
                ((next_start - start) as usize - self.off).min(self.remaining)
            };
            if in_node > 0 || self.remaining == 0 {
                self.chunk = in_node;
                return;
            }
            self.node = next;
            self.off = 0;
        }
    }
}

impl Buf for View<'_> {
    #[inline]
    fn remaining(&self) -> usize {
        self.remaining
    }

    #[inline]
    fn chunk(&self) -> &[u8] {
        if self.chunk == 0 {
            return &[];
        }
        // SAFETY: the chunk's bytes are committed (counted in the snapshot),
        // inside the node's block, and not written again while the guard
        // holds the read; the block stays out of the pool until consumed.
        unsafe {
            let base = Node::base(self.node).0;
            core::slice::from_raw_parts(base.add(self.off), self.chunk)
        }
    }

    /// # Panics
    /// When `cnt > self.remaining()`, as `Buf::advance` allows.
    fn advance(&mut self, mut cnt: usize) {
        assert!(cnt <= self.remaining, "advance past the end of a pipe view");
        while cnt > 0 {
            let step = cnt.min(self.chunk);
            self.off += step;
            self.chunk -= step;
            self.remaining -= step;
            cnt -= step;
            if self.chunk == 0 {
                self.settle();
            }
        }
    }
}

impl core::fmt::Debug for View<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("View").field("remaining", &self.remaining).finish()
    }
}

/// The bytes of a read as slices, one per block (see [`ReadGuard::chunks`]).
#[derive(Clone, Debug)]
pub struct Chunks<'a> {
    view: View<'a>,
}

impl<'a> Iterator for Chunks<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.view.remaining == 0 {
            return None;
        }
        let chunk = self.view.chunk();
        // SAFETY: the slice borrows the pipe's bytes for the view's `'a` (the
        // guard's borrow), not the iterator.
        let chunk: &'a [u8] = unsafe { core::slice::from_raw_parts(chunk.as_ptr(), chunk.len()) };
        self.view.advance(chunk.len());
        Some(chunk)
    }
}
