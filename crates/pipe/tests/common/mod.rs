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
