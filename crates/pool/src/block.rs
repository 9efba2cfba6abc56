//! The leased block handle.

use core::fmt;
use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;

use crate::cache;
use crate::slot::{BlockRef, Slab};

/// A leased block of pool memory: an owned handle, like a `Box<[u8]>`.
///
/// It dereferences to its bytes ([`Pool::block_size`](crate::Pool::block_size)
/// of them, all usable, 64-byte aligned), can be sent to any thread, and goes
/// back to its pool when dropped, from whichever thread drops it. It stays
/// valid after every [`Pool`](crate::Pool) handle is gone.
///
/// ```
/// let pool = falconet_pool::Pool::new();
/// let mut block = pool.try_lease()?;
/// block.fill(0xAB);
/// let block = std::thread::spawn(move || {
///     assert!(block.iter().all(|&b| b == 0xAB));
///     block // or drop it here: it returns to the pool from this thread
/// })
/// .join()
/// .unwrap();
/// assert_eq!(block.len(), 4096);
/// # Ok::<(), falconet_pool::LeaseError>(())
/// ```
pub struct Block {
    ptr: NonNull<u8>,
    /// Where the block goes back; its slot knows the pool and the size.
    place: BlockRef,
}

// SAFETY: a `Block` owns its bytes exclusively, like a `Box<[u8]>`, and the
// pool state it points to is `Sync` and kept alive by the block's reference.
unsafe impl Send for Block {}
// SAFETY: `&Block` only gives `&[u8]`, which is `Sync`.
unsafe impl Sync for Block {}

impl Block {
    /// # Safety
    /// The block at `place` is out of the store, owned by the caller, and
    /// carries one reference to its pool.
    #[inline]
    pub(crate) unsafe fn from_place(place: BlockRef) -> Self {
        // SAFETY: the caller owns the block, so its slab is present.
        let slab = unsafe { place.slot() }.slab();
        // SAFETY: the bit is below blocks_per_slab, so the offset stays
        // inside the slab allocation at `base`, which is not null.
        let ptr = unsafe {
            NonNull::new_unchecked(slab.base.add(place.bit() as usize * slab.block_size))
        };
        Self { ptr, place }
    }

    /// A raw pointer to the block's first byte, valid for reads of
    /// [`Pool::block_size`](crate::Pool::block_size) bytes while the block is alive, like
    /// [`Vec::as_ptr`]. Unlike `&**self`, it creates no reference to the
    /// bytes, so code that shares a block between a writer and a reader (each
    /// touching its own range) can take slices of just its part.
    #[inline]
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// A raw pointer to the block's first byte, valid for reads and writes of
    /// [`Pool::block_size`](crate::Pool::block_size) bytes while the block is alive, like
    /// [`Vec::as_mut_ptr`]; see [`as_ptr`](Self::as_ptr).
    #[inline]
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The block's slab description (base, pool, block size).
    #[inline]
    fn slab(&self) -> Slab {
        // SAFETY: the block is owned by this handle.
        unsafe { self.place.slot() }.slab()
    }
}

impl Deref for Block {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        let len = self.slab().block_size;
        // SAFETY: the block owns `len` bytes at `ptr`, initialised (slabs are
        // zeroed when allocated) and not aliased by any other handle; its
        // slab cannot be freed while the block is out of the store.
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), len) }
    }
}

impl DerefMut for Block {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        let len = self.slab().block_size;
        // SAFETY: as in `deref`, and `&mut self` makes the access exclusive.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr(), len) }
    }
}

impl AsRef<[u8]> for Block {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl AsMut<[u8]> for Block {
    fn as_mut(&mut self) -> &mut [u8] {
        self
    }
}

impl fmt::Debug for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Block").field("addr", &self.ptr).field("len", &self.len()).finish()
    }
}

impl Drop for Block {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the block is out of the store and owns one reference; the
        // handle is gone after this.
        unsafe { cache::give_back(self.place) };
    }
}
