//! A counting global allocator proves that writing, reading and advancing
//! in steady state perform no heap allocation, on one thread and with the
//! writer and the reader on two threads that sleep and wake each other.
#![cfg(not(falconet_pipe_loom))]
#![cfg(not(miri))] // Miri's own allocator bookkeeping is not what we count.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;

use falconet_pipe::{Options, Reader, Writer, pipe};
use falconet_pool::Pool;

struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Only the threads under test count: the test harness allocates on its
    /// own threads (spawning the next test, printing) at any time.
    static UNDER_TEST: Cell<bool> = const { Cell::new(false) };
}

fn counted() -> bool {
    COUNTING.load(Ordering::Relaxed) && UNDER_TEST.with(Cell::get)
}
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if counted() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if counted() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if counted() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The tests share the global counters, so they run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Counts allocations made by this thread (and any other thread that set
/// `UNDER_TEST`) while `f` runs.
fn count_allocations(f: impl FnOnce()) -> usize {
    UNDER_TEST.with(|flag| flag.set(true));
    ALLOCATIONS.store(0, Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
    f();
    COUNTING.store(false, Ordering::SeqCst);
    UNDER_TEST.with(|flag| flag.set(false));
    ALLOCATIONS.load(Ordering::SeqCst)
}

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
    let _serial = SERIAL.lock().unwrap_or_else(|poison| poison.into_inner());
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

#[test]
fn steady_state_across_threads_allocates_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|poison| poison.into_inner());
    let pool = Pool::new();
    let (mut writer, reader) = pipe(&pool, Options::new()).unwrap();
    const PHASE: u64 = 256 << 20;
    ALLOCATIONS.store(0, Ordering::SeqCst);
    let producer = thread::spawn(move || {
        UNDER_TEST.with(|flag| flag.set(true));
        let scratch = vec![1u8; 1500];
        // Phase 1 warms up (thread wakers, nodes, slabs, caches); phase 2
        // is counted. The reader keeps reading across both.
        for phase in 0..2 {
            if phase == 1 {
                COUNTING.store(true, Ordering::SeqCst);
            }
            let mut sent = 0;
            while sent < PHASE {
                writer.put_slice(&scratch).unwrap();
                writer.flush_blocking().unwrap();
                sent += scratch.len() as u64;
            }
        }
        COUNTING.store(false, Ordering::SeqCst);
        UNDER_TEST.with(|flag| flag.set(false));
        writer.close();
    });
    UNDER_TEST.with(|flag| flag.set(true));
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
    UNDER_TEST.with(|flag| flag.set(false));
    producer.join().unwrap();
    assert_eq!(received, 2 * PHASE.div_ceil(1500) * 1500);
    assert_eq!(ALLOCATIONS.load(Ordering::SeqCst), 0);
}
