//! A block being filled (feature `bytes`): a filled prefix grown through
//! `bytes::BufMut`, frozen into a `bytes::Bytes` that shares the block.
//!
//! ```text
//!   Block --into_buf()--> BlockBuf { filled | spare }
//!                           put / chunk_mut + advance_mut grow `filled`
//!                           freeze() --> Bytes over `filled`, no copy:
//!                             the block goes back to its pool when the
//!                             last clone of the Bytes (or a slice) drops
//! ```

use core::fmt;
use core::ops::{Deref, DerefMut};

use bytes::buf::UninitSlice;
use bytes::{BufMut, Bytes};

use crate::Block;

/// A [`Block`] with a filled length, like a `BytesMut` of fixed capacity:
/// it dereferences to the filled bytes, grows through [`bytes::BufMut`]
/// (never past the block: a `put` that does not fit panics, as `BufMut`
/// requires, so check [`BufMut::remaining_mut`] or use
/// [`BufMut::chunk_mut`]), and [`freeze`](Self::freeze)s into a
/// [`Bytes`] without a copy.
///
/// ```
/// use bytes::BufMut;
///
/// let pool = falconet_pool::Pool::new();
/// let mut buf = pool.try_lease()?.into_buf();
/// buf.put_slice(b"HTTP/1.1 200 OK\r\n");
/// buf.put_u8(b'\r');
/// buf.put_u8(b'\n');
/// let bytes = buf.freeze(); // the block is now shared by `bytes`
/// assert_eq!(&bytes[..], b"HTTP/1.1 200 OK\r\n\r\n");
/// let status = bytes.slice(9..12); // another handle on the same block
/// drop(bytes);
/// assert_eq!(&status[..], b"200");
/// assert_eq!(pool.stats().leased, 1); // still out, until `status` drops
/// drop(status);
/// assert_eq!(pool.stats().leased, 0);
/// # Ok::<(), falconet_pool::LeaseError>(())
/// ```
pub struct BlockBuf {
    block: Block,
    /// Bytes filled, from the block's start; at most its length.
    len: usize,
}

impl Block {
    /// This block as a [`BlockBuf`] with nothing filled yet.
    pub fn into_buf(self) -> BlockBuf {
        BlockBuf { block: self, len: 0 }
    }
}

impl BlockBuf {
    /// Bytes filled.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is filled.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The block's size: the most it can hold.
    pub fn capacity(&self) -> usize {
        self.block.len()
    }

    /// Forgets the filled bytes (the block is kept).
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Keeps the first `len` filled bytes; does nothing when `len` is not
    /// below [`len`](Self::len).
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// The filled bytes as a [`Bytes`] that owns the block: no copy, no
    /// allocation beyond the `Bytes`' shared header. Clones and slices of
    /// it share the block, which goes back to its pool when the last of
    /// them drops (from any thread).
    pub fn freeze(self) -> Bytes {
        Bytes::from_owner(self)
    }

    /// The block, its filled length forgotten.
    pub fn into_block(self) -> Block {
        self.block
    }
}

impl Deref for BlockBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.block[..self.len]
    }
}

impl DerefMut for BlockBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.block[..self.len]
    }
}

impl AsRef<[u8]> for BlockBuf {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

// SAFETY: `chunk_mut` is the block past the filled prefix, all of it
// initialised memory the handle owns; `advance_mut` only moves `len` within
// the block (it panics past it), so `len` bytes are always initialised.
unsafe impl BufMut for BlockBuf {
    fn remaining_mut(&self) -> usize {
        self.capacity() - self.len
    }

    /// Counts `cnt` more bytes of the block as filled.
    ///
    /// # Panics
    /// If `cnt` is more than [`remaining_mut`](BufMut::remaining_mut), as
    /// `bytes` asks of implementations: past the block, the bytes would
    /// be neither written nor initialised.
    unsafe fn advance_mut(&mut self, cnt: usize) {
        let remaining = self.remaining_mut();
        assert!(cnt <= remaining, "advance_mut({cnt}) past the block's {remaining} spare bytes");
        self.len += cnt;
    }

    fn chunk_mut(&mut self) -> &mut UninitSlice {
        let len = self.len;
        UninitSlice::new(&mut self.block[len..])
    }
}

impl fmt::Debug for BlockBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockBuf")
            .field("len", &self.len)
            .field("capacity", &self.capacity())
            .finish()
    }
}
