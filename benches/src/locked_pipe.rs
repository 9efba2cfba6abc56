//! The pipe's lock-based twin: the same pooled blocks and pause/resume
//! thresholds, with a `Mutex` + two `Condvar`s where falconet-pipe has its
//! state word. It is the simple safe-Rust design: the writer copies into the
//! tail block under the lock; the reader moves full blocks out whole and
//! copies the tail's fresh bytes out under the lock (it cannot read a block
//! the writer is still filling without `unsafe`). A side notifies the other
//! only when it waits, as a careful lock-based pipe would; it does not spin
//! before waiting (falconet-pipe spins up to 30 us).

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
    /// A side waits on its condvar: notify only then (std's `notify_one`
    /// is a futex system call even with no waiter).
    reader_waiting: bool,
    writer_waiting: bool,
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
        let wake = std::mem::take(&mut inner.reader_waiting);
        drop(inner);
        if wake {
            self.readable.notify_one();
        }
    }

    /// Waits while the reader is over the pause threshold.
    pub fn flush(&self) {
        let inner = self.inner.lock().unwrap();
        if inner.unread >= self.pause_at {
            let waited = self.writable.wait_while(inner, |inner| {
                inner.writer_waiting = inner.unread >= self.resume_at;
                inner.writer_waiting
            });
            drop(waited.unwrap());
        }
    }

    /// Ends the stream.
    pub fn close(&self) {
        self.inner.lock().unwrap().closed = true;
        self.readable.notify_all();
    }

    /// Waits for bytes and hands every buffered byte to `sink` (full blocks
    /// after the lock is dropped, the tail's bytes through a copy);
    /// returns `false` at the end of the stream.
    pub fn read(&self, scratch: &mut TwinScratch, mut sink: impl FnMut(&[u8])) -> bool {
        let mut inner = self
            .readable
            .wait_while(self.inner.lock().unwrap(), |inner| {
                inner.reader_waiting = inner.unread == 0 && !inner.closed;
                inner.reader_waiting
            })
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
        let wake = std::mem::take(&mut inner.writer_waiting);
        drop(inner);
        if wake {
            self.writable.notify_one();
        }
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
