//! Pipe workloads: a producer thread moves a fixed number of bytes to a
//! consumer thread in writes of one size, through each transport.
//!
//! Every transport does the same work: the producer copies `size` bytes from
//! a buffer per write and then lets back-pressure apply (flush, a bounded
//! queue, a full ring); the consumer receives every byte and touches each
//! chunk it is handed. Throughput is completed bytes (the consumer counts
//! them and the run checks the count) over the wall time of the transfer.

use std::future::Future;
use std::pin::pin;
use std::sync::mpsc;
use std::task::{Context, Waker};
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
    /// falconet-pipe polled as rtrb is: `try_read` and a flush polled with a
    /// no-op waker, yielding in between. Not a way to use the pipe (it never
    /// sleeps); it prices the blocking calls' parking and waking.
    FalconetPoll,
}

impl Transport {
    /// Every transport.
    pub const ALL: [Transport; 6] = [
        Transport::Falconet,
        Transport::LockedTwin,
        Transport::TokioSimplex,
        Transport::StdMpsc,
        Transport::Rtrb,
        Transport::FalconetPoll,
    ];

    /// The name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Falconet => "falconet-pipe",
            Transport::LockedTwin => "mutex-pipe (twin)",
            Transport::TokioSimplex => "tokio-simplex",
            Transport::StdMpsc => "std-mpsc-vec",
            Transport::Rtrb => "rtrb-chunks",
            Transport::FalconetPoll => "falconet-pipe (busy-poll)",
        }
    }

    /// Moves `total` bytes in writes of `size`; returns the wall time.
    pub fn transfer(self, pool: &Pool, size: usize, total: u64) -> Duration {
        let writes = total.div_ceil(size as u64);
        let total = writes * size as u64;
        let (elapsed, received) = match self {
            Transport::Falconet => falconet(pool, size, writes, false),
            Transport::LockedTwin => locked(pool, size, writes),
            Transport::TokioSimplex => simplex(size, writes),
            Transport::StdMpsc => mpsc_vec(size, writes),
            Transport::Rtrb => rtrb_chunks(size, writes),
            Transport::FalconetPoll => falconet(pool, size, writes, true),
        };
        assert_eq!(received, total, "{}: every byte arrives", self.name());
        elapsed
    }
}

/// Pins the calling thread (the consumer) to CPU 0 and each producer to
/// CPU 1, when there are two CPUs or more and `FALCONET_PIPE_PIN` is not
/// `0`. Unpinned, the scheduler sometimes puts both ends on one CPU (wake
/// affinity after futex wakes), and a run then measures that placement
/// rather than the transport: on the 2-vCPU build machine every
/// transport's figures swung by up to 10x between runs, in no pattern.
pub fn pin_consumer() {
    pin_to(0);
}

fn pin_producer() {
    pin_to(1);
}

fn pin_to(cpu: usize) {
    // Online CPUs, not `available_parallelism`, which counts the calling
    // thread's affinity mask: a producer inherits the consumer's (CPU 0).
    // SAFETY: sysconf only reads a system setting.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if cpus < 2 || std::env::var("FALCONET_PIPE_PIN").is_ok_and(|v| v == "0") {
        return;
    }
    // SAFETY: `set` is a plain bit set, initialised by CPU_ZERO, and the
    // call only reads it; pid 0 is the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// What the consumer does with each chunk: count it and read one byte.
#[inline]
fn touch(chunk: &[u8], received: &mut u64, checksum: &mut u8) {
    *received += chunk.len() as u64;
    *checksum ^= chunk[0];
}

/// falconet-pipe with its blocking calls, or (`busy_poll`) polled with
/// `yield_now` in between, as rtrb is.
fn falconet(pool: &Pool, size: usize, writes: u64, busy_poll: bool) -> (Duration, u64) {
    let (mut writer, reader) = pipe(pool, Options::new()).unwrap();
    let data = vec![7u8; size];
    let start = Instant::now();
    let producer = thread::spawn(move || {
        pin_producer();
        let mut cx = Context::from_waker(Waker::noop());
        for _ in 0..writes {
            writer.put_slice(&data).unwrap();
            if busy_poll {
                let mut flush = pin!(writer.flush());
                while flush.as_mut().poll(&mut cx).is_pending() {
                    thread::yield_now();
                }
            } else {
                writer.flush_blocking().unwrap();
            }
        }
        writer.close();
    });
    let (mut received, mut checksum) = (0, 0);
    loop {
        let read = if busy_poll {
            let Some(read) = reader.try_read().unwrap() else {
                thread::yield_now();
                continue;
            };
            read
        } else {
            reader.read_blocking().unwrap()
        };
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
            pin_producer();
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
        pin_producer();
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
        pin_producer();
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
        pin_producer();
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
