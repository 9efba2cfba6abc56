//! `BlockBuf` (feature `bytes`): a block filled through `BufMut` and frozen
//! into `Bytes` without a copy.
#![cfg(all(feature = "bytes", not(falconet_pool_loom)))]

use bytes::{Buf, BufMut, Bytes};
use falconet_pool::Pool;

fn pool() -> Pool {
    Pool::builder()
        .block_size(64)
        .blocks_per_slab(4)
        .thread_cache(0)
        .max_bytes(1 << 16)
        .build()
        .unwrap()
}

#[test]
fn fills_through_buf_mut_and_freezes_without_a_copy() {
    let pool = pool();
    let mut buf = pool.try_lease().unwrap().into_buf();
    assert_eq!((buf.len(), buf.capacity(), buf.remaining_mut()), (0, 64, 64));
    buf.put_slice(b"abc");
    buf.put_u16(0x6465);
    // By hand, as a socket read into spare capacity does.
    let spare = buf.chunk_mut();
    assert_eq!(spare.len(), 59);
    spare[..2].copy_from_slice(b"fg");
    // SAFETY: the two bytes were just written.
    unsafe { buf.advance_mut(2) };
    assert_eq!(&buf[..], b"abcdefg");
    let address = buf.as_ptr();
    let bytes = buf.freeze();
    assert_eq!(&bytes[..], b"abcdefg");
    assert_eq!(bytes.as_ptr(), address, "the Bytes is the block's memory, not a copy");
    assert_eq!(pool.stats().leased, 1);
    drop(bytes);
    assert_eq!(pool.stats().leased, 0, "the last handle gave the block back");
}

#[test]
fn the_frozen_block_outlives_the_pool_handle_and_returns_from_another_thread() {
    let pool = pool();
    let mut buf = pool.try_lease().unwrap().into_buf();
    buf.put_slice(&[7; 64]);
    let bytes = buf.freeze();
    let tail = bytes.slice(60..);
    let stats = pool.clone();
    drop(pool);
    let mut shared = bytes.clone();
    let other = std::thread::spawn(move || {
        assert_eq!(shared.remaining(), 64);
        shared.advance(10);
        assert!(shared.chunk().iter().all(|&b| b == 7));
        drop(shared); // one of three handles, dropped on another thread
    });
    other.join().unwrap();
    drop(bytes);
    assert_eq!(stats.stats().leased, 1, "a slice still holds the block");
    assert_eq!(&tail[..], [7; 4]);
    let moved: Bytes = std::thread::spawn(move || tail).join().unwrap();
    drop(moved);
    assert_eq!(stats.stats().leased, 0);
}

#[test]
fn a_put_past_the_block_panics_as_buf_mut_requires_and_leaks_nothing() {
    let pool = pool();
    let mut buf = pool.try_lease().unwrap().into_buf();
    buf.put_slice(&[1; 60]);
    let overflow = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        buf.put_slice(&[2; 5]);
    }));
    assert!(overflow.is_err(), "65 bytes do not fit a 64-byte block");
    drop(buf);
    assert_eq!(pool.stats().leased, 0);
    // advance_mut past the spare bytes panics too.
    let mut buf = pool.try_lease().unwrap().into_buf();
    let overflow = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: never reached past the check that panics.
        unsafe { buf.advance_mut(65) };
    }));
    assert!(overflow.is_err());
    assert_eq!(buf.len(), 0);
}

#[test]
fn truncate_clear_and_back_to_a_block() {
    let pool = pool();
    let mut buf = pool.try_lease().unwrap().into_buf();
    buf.put_slice(b"keep this, not that");
    buf.truncate(9);
    assert_eq!(&buf[..], b"keep this");
    buf.truncate(100);
    assert_eq!(buf.len(), 9, "truncate never grows");
    buf[0] = b'K';
    assert_eq!(&buf[..4], b"Keep");
    buf.clear();
    assert!(buf.is_empty());
    let empty = buf.freeze();
    assert!(empty.is_empty());
    assert_eq!(pool.stats().leased, 1, "an empty Bytes still owns its block");
    drop(empty);
    let block = pool.try_lease().unwrap().into_buf().into_block();
    assert_eq!(block.len(), 64);
}
