//! The pipe's lock-based twin: the same pooled blocks and pause/resume
//! thresholds, with a `Mutex` + two `Condvar`s where falconet-pipe has its
//! state word. It is the simple safe-Rust design: the writer copies into the
//! tail block under the lock; the reader moves full blocks out whole and
//! copies the tail's fresh bytes out under the lock (it cannot read a block
//! the writer is still filling without `unsafe`).

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};

use falconet_pool::{Block, Pool};

/// The shared state, all under one lock.
#[derive(Default)]
struct Inner {
    /// Blocks and their filled length; the last one is the writer's tail.
    blocks: VecDeque<(Block, usize)>,
    /// Bytes of the front block the reader has taken already.
    head_off: usize,
    /// Bytes written and not yet taken.
    unread: usize,
    closed: bool,
}

/// A single-producer single-consumer byte pipe behind a mutex.
pub struct LockedPipe {
    inner: Mutex<Inner>,
    readable: Condvar,
    writable: Condvar,
    pool: Pool,
    pause_at: usize,
    resume_at: usize,
}

impl LockedPipe {
    /// A pipe over `pool`'s blocks, pausing at 64 KiB and resuming below
    /// 32 KiB, as falconet-pipe's defaults.
    pub fn new(pool: &Pool) -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            readable: Condvar::new(),
            writable: Condvar::new(),
            pool: pool.clone(),
            pause_at: 64 * 1024,
            resume_at: 32 * 1024,
        }
    }

    /// Copies `data` into the tail (and fresh blocks), and wakes the reader.
    pub fn write(&self, mut data: &[u8]) {
        let mut inner = self.inner.lock().unwrap();
        let block_size = self.pool.block_size();
        inner.unread += data.len();
        while !data.is_empty() {
            let needs_block = inner.blocks.back().is_none_or(|(_, len)| *len == block_size);
            if needs_block {
                inner.blocks.push_back((self.pool.try_lease().unwrap(), 0));
            }
            let (block, len) = inner.blocks.back_mut().unwrap();
            let n = data.len().min(block_size - *len);
            block[*len..*len + n].copy_from_slice(&data[..n]);
            *len += n;
            data = &data[n..];
        }
        drop(inner);
        self.readable.notify_one();
    }

    /// Waits while the reader is over the pause threshold.
    pub fn flush(&self) {
        let inner = self.inner.lock().unwrap();
        if inner.unread >= self.pause_at {
            drop(self.writable.wait_while(inner, |inner| inner.unread >= self.resume_at).unwrap());
        }
    }

    /// Ends the stream.
    pub fn close(&self) {
        self.inner.lock().unwrap().closed = true;
        self.readable.notify_one();
    }

    /// Waits for bytes and hands every buffered byte to `sink` (full blocks
    /// after the lock is dropped, the tail's bytes through a copy);
    /// returns `false` at the end of the stream.
    pub fn read(&self, scratch: &mut TwinScratch, mut sink: impl FnMut(&[u8])) -> bool {
        let mut inner = self
            .readable
            .wait_while(self.inner.lock().unwrap(), |inner| inner.unread == 0 && !inner.closed)
            .unwrap();
        if inner.unread == 0 {
            return false;
        }
        while inner.blocks.len() > 1 {
            let (block, len) = inner.blocks.pop_front().unwrap();
            scratch.full.push((block, inner.head_off, len));
            inner.head_off = 0;
        }
        scratch.tail.clear();
        let head_off = inner.head_off;
        if let Some((block, len)) = inner.blocks.front() {
            scratch.tail.extend_from_slice(&block[head_off..*len]);
            inner.head_off = *len;
        }
        inner.unread = 0;
        drop(inner);
        self.writable.notify_one();
        for (block, from, to) in scratch.full.drain(..) {
            if from < to {
                sink(&block[from..to]);
            }
        }
        if !scratch.tail.is_empty() {
            sink(&scratch.tail);
        }
        true
    }
}

/// The reader's reusable buffers (so a read allocates nothing).
#[derive(Default)]
pub struct TwinScratch {
    full: Vec<(Block, usize, usize)>,
    tail: Vec<u8>,
}
