//! What several of the pipe's test files share.

use std::io::{self, Read};

/// A source that offers `data`, at most `limit` bytes per read (a socket
/// whose receive queue holds `limit` bytes), vectored or not.
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
