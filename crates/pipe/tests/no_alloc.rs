//! A counting global allocator proves that writing, reading and advancing
//! in steady state perform no heap allocation, on one thread and with the
//! writer and the reader on two threads that sleep and wake each other.
#![cfg(not(falconet_pipe_loom))]
#![cfg(not(miri))] // Miri's own allocator bookkeeping is not what we count.

use std::thread;

use falconet_pipe::{Options, Reader, Writer, pipe};
use falconet_pool::Pool;
use falconet_testkit::{count_allocations, serial, set_under_test, start_counting, stop_counting};

#[global_allocator]
static GLOBAL: falconet_testkit::Counting = falconet_testkit::Counting;

/// One write-read-advance round on one thread: a copied write, an in-place
/// commit, a read over all chunks, a partial then a full advance.
fn round(writer: &mut Writer, reader: &Reader, size: usize, scratch: &[u8]) -> u64 {
    writer.put_slice(&scratch[..size]).unwrap();
    let buffer = writer.buffer(100).unwrap();
    buffer[..100].fill(7);
    writer.commit(100).unwrap();
    writer.flush_blocking().unwrap();
    let read = reader.try_read().unwrap().unwrap();
    let sum = read.chunks().flatten().map(|&b| u64::from(b)).sum::<u64>();
    read.advance_to(size / 2, size).unwrap();
    let read = reader.try_read().unwrap().unwrap();
    let len = read.len();
    read.consume(len).unwrap();
    sum
}

#[test]
fn steady_state_on_one_thread_allocates_nothing() {
    let _serial = serial();
    let pool = Pool::new();
    let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
    let scratch = vec![3u8; 20_000];
    let sizes = |i: usize| [1, 64, 700, 4096, 5000, 19_000][i % 6];
    let mut sum = 0;
    for i in 0..100 {
        sum += round(&mut writer, &reader, sizes(i), &scratch); // warm up: nodes, slabs
    }
    let allocations = count_allocations(|| {
        for i in 0..10_000 {
            sum += round(&mut writer, &reader, sizes(i), &scratch);
        }
    });
    assert!(sum > 0);
    assert_eq!(allocations, 0);
}

/// With the writer and the reader on two threads; see [`across_threads`].
#[test]
fn steady_state_across_threads_allocates_nothing() {
    let _serial = serial();
    let pool = Pool::new();
    across_threads(&pool, Options::new().keep_blocks(false));
}

/// The same with kept blocks (the default). A paused writer keeps the
/// blocks the reader empties, but the blocks the reader empties while the
/// writer does not wait rest in the reader's thread cache, out of the
/// writer's reach, so the pool may carve a second slab long after any
/// warm-up (2 runs in 40 without the capacity below, each a single slab:
/// the pool's growth, not the pipe's steady state). The pool is given that
/// capacity first; the pipe itself allocates nothing.
#[test]
fn steady_state_across_threads_with_kept_blocks_allocates_nothing() {
    let _serial = serial();
    let pool = Pool::new();
    let capacity: Vec<_> = (0..1024).map(|_| pool.try_lease().unwrap()).collect();
    drop(capacity);
    across_threads(&pool, Options::new());
}

/// 256 MiB written in 1,500-byte pieces to warm up (thread wakers, nodes,
/// slabs, caches), then 256 MiB counted, while the reader reads across
/// both: no allocation on either thread.
fn across_threads(pool: &Pool, options: Options) {
    let (mut writer, reader) = pipe(pool, options).unwrap();
    const PHASE: u64 = 256 << 20;
    let producer = thread::spawn(move || {
        set_under_test(true);
        let scratch = vec![1u8; 1500];
        let mut allocations = 0;
        for phase in 0..2 {
            if phase == 1 {
                start_counting();
            }
            let mut sent = 0;
            while sent < PHASE {
                writer.put_slice(&scratch).unwrap();
                writer.flush_blocking().unwrap();
                sent += scratch.len() as u64;
            }
            if phase == 1 {
                allocations = stop_counting();
            }
        }
        set_under_test(false);
        writer.close();
        allocations
    });
    set_under_test(true);
    let mut received = 0u64;
    loop {
        let read = reader.read_blocking().unwrap();
        let (len, done) = (read.len(), read.is_completed());
        received += len as u64;
        read.consume(len).unwrap();
        if done {
            break;
        }
    }
    set_under_test(false);
    let allocations = producer.join().unwrap();
    assert_eq!(received, 2 * PHASE.div_ceil(1500) * 1500);
    assert_eq!(allocations, 0, "on the writer's thread or the reader's");
}
