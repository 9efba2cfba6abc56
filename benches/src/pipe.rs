//! Pipe workloads: a producer thread moves a fixed number of bytes to a
//! consumer thread in writes of one size, through each transport.
//!
//! Every transport does the same work: the producer copies `size` bytes from
//! a buffer per write and then lets back-pressure apply (flush, a bounded
//! queue, a full ring); the consumer receives every byte and touches each
//! chunk it is handed. Throughput is completed bytes (the consumer counts
//! them and the run checks the count) over the wall time of the transfer.

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use falconet_pipe::{Options, pipe};
use falconet_pool::Pool;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::locked_pipe::{LockedPipe, TwinScratch};

/// Bytes in flight before back-pressure, for every transport that has a knob.
pub const WINDOW: usize = 64 * 1024;

/// The transports compared, in report order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// falconet-pipe: `put_slice` + `flush_blocking`, `read_blocking` + `consume`.
    Falconet,
    /// The same pooled blocks behind a `Mutex` + `Condvar` (`LockedPipe`).
    LockedTwin,
    /// `tokio::io::simplex(64 KiB)` on a current-thread runtime per side.
    TokioSimplex,
    /// `std::sync::mpsc::sync_channel` of `Vec<u8>` (one allocation per write).
    StdMpsc,
    /// `rtrb::RingBuffer<u8>` of 64 KiB through its chunk API, yielding when
    /// full or empty (rtrb does not block).
    Rtrb,
}

impl Transport {
    /// Every transport.
    pub const ALL: [Transport; 5] = [
        Transport::Falconet,
        Transport::LockedTwin,
        Transport::TokioSimplex,
        Transport::StdMpsc,
        Transport::Rtrb,
    ];

    /// The name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Falconet => "falconet-pipe",
            Transport::LockedTwin => "mutex-pipe (twin)",
            Transport::TokioSimplex => "tokio-simplex",
            Transport::StdMpsc => "std-mpsc-vec",
            Transport::Rtrb => "rtrb-chunks",
        }
    }

    /// Moves `total` bytes in writes of `size`; returns the wall time.
    pub fn transfer(self, pool: &Pool, size: usize, total: u64) -> Duration {
        let writes = total.div_ceil(size as u64);
        let total = writes * size as u64;
        let (elapsed, received) = match self {
            Transport::Falconet => falconet(pool, size, writes),
            Transport::LockedTwin => locked(pool, size, writes),
            Transport::TokioSimplex => simplex(size, writes),
            Transport::StdMpsc => mpsc_vec(size, writes),
            Transport::Rtrb => rtrb_chunks(size, writes),
        };
        assert_eq!(received, total, "{}: every byte arrives", self.name());
        elapsed
    }
}

/// What the consumer does with each chunk: count it and read one byte.
#[inline]
fn touch(chunk: &[u8], received: &mut u64, checksum: &mut u8) {
    *received += chunk.len() as u64;
    *checksum ^= chunk[0];
}

fn falconet(pool: &Pool, size: usize, writes: u64) -> (Duration, u64) {
    let (mut writer, reader) = pipe(pool, Options::new()).unwrap();
    let data = vec![7u8; size];
    let start = Instant::now();
    let producer = thread::spawn(move || {
        for _ in 0..writes {
            writer.put_slice(&data).unwrap();
            writer.flush_blocking().unwrap();
        }
        writer.close();
    });
    let (mut received, mut checksum) = (0, 0);
    loop {
        let read = reader.read_blocking().unwrap();
        read.chunks().for_each(|chunk| touch(chunk, &mut received, &mut checksum));
        let (len, done) = (read.len(), read.is_completed());
        read.consume(len).unwrap();
        if done {
            break;
        }
    }
    producer.join().unwrap();
    std::hint::black_box(checksum);
    (start.elapsed(), received)
}

fn locked(pool: &Pool, size: usize, writes: u64) -> (Duration, u64) {
    let pipe = std::sync::Arc::new(LockedPipe::new(pool));
    let data = vec![7u8; size];
    let start = Instant::now();
    let producer = {
        let pipe = pipe.clone();
        thread::spawn(move || {
            for _ in 0..writes {
                pipe.write(&data);
                pipe.flush();
            }
            pipe.close();
        })
    };
    let (mut received, mut checksum) = (0, 0);
    let mut scratch = TwinScratch::default();
    while pipe.read(&mut scratch, |chunk| touch(chunk, &mut received, &mut checksum)) {}
    producer.join().unwrap();
    std::hint::black_box(checksum);
    (start.elapsed(), received)
}

fn simplex(size: usize, writes: u64) -> (Duration, u64) {
    let (mut rx, mut tx) = tokio::io::simplex(WINDOW);
    let data = vec![7u8; size];
    let runtime = || tokio::runtime::Builder::new_current_thread().build().unwrap();
    let start = Instant::now();
    let producer = thread::spawn(move || {
        runtime().block_on(async move {
            for _ in 0..writes {
                tx.write_all(&data).await.unwrap();
            }
            tx.shutdown().await.unwrap();
        })
    });
    let (mut received, mut checksum) = (0, 0);
    let mut buffer = vec![0u8; WINDOW];
    runtime().block_on(async {
        loop {
            let n = rx.read(&mut buffer).await.unwrap();
            if n == 0 {
                break;
            }
            touch(&buffer[..n], &mut received, &mut checksum);
        }
    });
    producer.join().unwrap();
    std::hint::black_box(checksum);
    (start.elapsed(), received)
}

fn mpsc_vec(size: usize, writes: u64) -> (Duration, u64) {
    let (tx, rx) = mpsc::sync_channel::<Vec<u8>>((WINDOW / size).max(1));
    let data = vec![7u8; size];
    let start = Instant::now();
    let producer = thread::spawn(move || {
        for _ in 0..writes {
            tx.send(data.clone()).unwrap();
        }
    });
    let (mut received, mut checksum) = (0, 0);
    for message in rx {
        touch(&message, &mut received, &mut checksum);
    }
    producer.join().unwrap();
    std::hint::black_box(checksum);
    (start.elapsed(), received)
}

fn rtrb_chunks(size: usize, writes: u64) -> (Duration, u64) {
    let (mut tx, mut rx) = rtrb::RingBuffer::<u8>::new(WINDOW);
    let data = vec![7u8; size];
    let total = writes * size as u64;
    let start = Instant::now();
    let producer = thread::spawn(move || {
        for _ in 0..writes {
            let mut left = &data[..];
            while !left.is_empty() {
                let n = left.len().min(tx.slots());
                if n == 0 {
                    thread::yield_now();
                    continue;
                }
                let mut chunk = tx.write_chunk(n).unwrap();
                let (first, second) = chunk.as_mut_slices();
                first.copy_from_slice(&left[..first.len()]);
                second.copy_from_slice(&left[first.len()..n]);
                chunk.commit_all();
                left = &left[n..];
            }
        }
    });
    let (mut received, mut checksum) = (0, 0);
    while received < total {
        let n = rx.slots();
        if n == 0 {
            thread::yield_now();
            continue;
        }
        let chunk = rx.read_chunk(n).unwrap();
        let (first, second) = chunk.as_slices();
        for part in [first, second] {
            if !part.is_empty() {
                touch(part, &mut received, &mut checksum);
            }
        }
        chunk.commit_all();
    }
    producer.join().unwrap();
    std::hint::black_box(checksum);
    (start.elapsed(), received)
}
