//! What several of the pipe's test files share.

use std::io::{self, Read};

use falconet_pool::Pool;

/// A pool of 64-byte blocks (so a few bytes span blocks), no thread cache,
/// 1 MiB at most.
#[allow(dead_code, reason = "not every test file uses it")]
pub fn small_pool() -> Pool {
    Pool::builder()
        .block_size(64)
        .blocks_per_slab(8)
        .thread_cache(0)
        .max_bytes(1 << 20)
        .build()
        .unwrap()
}

/// A source that offers `data`, at most `limit` bytes per read (a socket
/// whose receive queue holds `limit` bytes), vectored or not.
#[allow(dead_code, reason = "not every test file uses it")]
pub struct Trickle<'a> {
    pub data: &'a [u8],
    pub limit: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_vectored(&mut [io::IoSliceMut::new(buf)])
    }

    fn read_vectored(&mut self, bufs: &mut [io::IoSliceMut<'_>]) -> io::Result<usize> {
        let mut n = 0;
        for buf in bufs {
            let take = buf.len().min(self.data.len()).min(self.limit - n);
            buf[..take].copy_from_slice(&self.data[..take]);
            self.data = &self.data[take..];
            n += take;
        }
        Ok(n)
    }
}

/// The byte at stream position `pos`: its low byte mixed with a hash of its
/// 64-byte run, so whole blocks that move or repeat are caught too.
#[allow(dead_code, reason = "not every test file uses it")]
#[inline]
pub fn byte_at(pos: u64) -> u8 {
    let run = (pos >> 6).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (pos as u8) ^ (run >> 56) as u8
}

/// xorshift64*: a small deterministic generator for sizes.
#[allow(dead_code, reason = "not every test file uses it")]
pub struct Rng(pub u64);

#[allow(dead_code, reason = "not every test file uses it")]
impl Rng {
    /// A number below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}
