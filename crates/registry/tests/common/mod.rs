//! Shared by the integration tests.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A value that counts its drops, so tests see every value leave once.
#[derive(Debug)]
pub struct Tracked {
    pub tag: u64,
    drops: Arc<AtomicUsize>,
}

impl Tracked {
    pub fn new(tag: u64, drops: &Arc<AtomicUsize>) -> Self {
        Self { tag, drops: Arc::clone(drops) }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

pub fn drops() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

pub fn count(drops: &Arc<AtomicUsize>) -> usize {
    drops.load(Ordering::SeqCst)
}
