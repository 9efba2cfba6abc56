//! The demo binary's `POST /echo` holds memory in step with what its
//! clients send (its own test binary: it counts the process's live heap
//! bytes, which other tests would disturb).
#![cfg(feature = "tokio")]

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::h2raw::{Raw, block};
use common::serve;
use falconet_server::Options;
use falconet_server::hello::Demo;

/// The system allocator, counting the bytes allocated and not yet freed.
struct Live;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is the system allocator's, with the caller's
// arguments; the count is bookkeeping beside it.
unsafe impl GlobalAlloc for Live {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Live = Live;

/// Heap bytes allocated and not freed (pool slabs included).
fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// An outside HTTP/2 probe (2026-12-05) opened 100 echo streams per
/// connection, each a HEADERS frame of about 60 bytes and no body: every
/// stream's echo task took a 64 KiB buffer before any byte arrived, 2 GB
/// of RSS for 260 such connections. Four connections here: 400 stalled
/// echoes held 25 MiB of heap that way; with buffers that grow with what
/// arrives, the streams' own state.
#[test]
fn stalled_echo_streams_hold_no_read_buffer() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).build().unwrap();
    let server = serve(Options::new().workers(1), Demo::new(runtime.handle().clone()));
    let head = block(&[
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/echo"),
        (":authority", "t"),
        ("content-length", "1048576"),
    ]);
    // Warm up: the worker's and the runtime's first allocations (one
    // stalled echo: a hundred would leave freed buffers for the next).
    let mut warm = Raw::handshake(server.addr, &[]);
    warm.headers(1, &head, false);
    std::thread::sleep(Duration::from_millis(300));
    let before = live();
    let stalled: Vec<Raw> = (0..4)
        .map(|_| {
            let mut raw = Raw::handshake(server.addr, &[]);
            for i in 0..100 {
                raw.headers(1 + 2 * i, &head, false);
            }
            raw
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let grew = live().saturating_sub(before);
    eprintln!("400 stalled echoes hold {} KiB of heap", grew >> 10);
    assert!(grew < 8 << 20, "400 stalled echoes hold {} KiB of heap", grew >> 10);
    drop((stalled, warm));
}
