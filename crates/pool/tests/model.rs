//! A proptest state machine: random leases, returns (here and on a helper
//! thread), trims and maintenance against a sequential model of what the
//! pool promises. After every step: no block is leased twice (addresses are
//! distinct and every leased block still holds the pattern its holder
//! wrote), none is lost (the bound is reached exactly when the model says),
//! and the stats add up.
#![cfg(not(falconet_pool_loom))]

use std::collections::HashSet;
use std::sync::mpsc;
use std::thread;

use falconet_pool::{Block, LeaseError, Pool};
use proptest::prelude::*;

mod common;

#[derive(Debug, Clone)]
enum Op {
    Lease,
    /// Return the leased block at this index (modulo the count) here.
    Return(usize),
    /// Return it on the helper thread, into the helper's cache.
    ReturnRemote(usize),
    /// The helper flushes its cache (its own `trim`).
    HelperFlush,
    Trim,
    Maintain,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::Lease),
        2 => any::<usize>().prop_map(Op::Return),
        2 => any::<usize>().prop_map(Op::ReturnRemote),
        1 => Just(Op::HelperFlush),
        1 => Just(Op::Trim),
        1 => Just(Op::Maintain),
    ]
}

#[derive(Debug, Clone, Copy)]
struct Shape {
    block_size: usize,
    blocks_per_slab: usize,
    max_slabs: usize,
    thread_cache: usize,
}

fn shape() -> impl Strategy<Value = Shape> {
    (prop_oneof![Just(64usize), Just(192), Just(4096)], 1..=6usize, 1..=4usize).prop_flat_map(
        |(block_size, blocks_per_slab, max_slabs)| {
            (0..=blocks_per_slab).prop_map(move |thread_cache| Shape {
                block_size,
                blocks_per_slab,
                max_slabs,
                thread_cache,
            })
        },
    )
}

enum HelperCmd {
    Drop(Block),
    Flush,
}

/// A thread that drops blocks (and flushes its cache) on command, acking each.
struct Helper {
    commands: mpsc::Sender<HelperCmd>,
    acks: mpsc::Receiver<()>,
    thread: thread::JoinHandle<()>,
}

impl Helper {
    fn spawn(pool: Pool) -> Self {
        let (commands, inbox) = mpsc::channel();
        let (ack, acks) = mpsc::channel();
        let thread = thread::spawn(move || {
            for command in inbox {
                match command {
                    HelperCmd::Drop(block) => drop(block),
                    HelperCmd::Flush => drop(pool.trim()),
                }
                ack.send(()).unwrap();
            }
        });
        Self { commands, acks, thread }
    }

    fn run(&self, command: HelperCmd) {
        self.commands.send(command).unwrap();
        self.acks.recv().unwrap();
    }
}

/// What the model knows: the leased blocks with their tags, and how many
/// free blocks sit in the helper's cache (unreachable from this thread).
struct Model {
    shape: Shape,
    leased: Vec<(Block, u8)>,
    helper_cached: usize,
    next_tag: u8,
}

impl Model {
    fn max_blocks(&self) -> usize {
        self.shape.blocks_per_slab * self.shape.max_slabs
    }

    /// The helper's cache after one return: it flushes its older half when full.
    fn helper_push(&mut self) {
        let capacity = self.shape.thread_cache;
        if capacity == 0 {
            return;
        }
        if self.helper_cached == capacity {
            self.helper_cached -= capacity.div_ceil(2);
        }
        self.helper_cached += 1;
    }

    fn check(&self, pool: &Pool) {
        let mut addresses = HashSet::new();
        for (block, tag) in &self.leased {
            assert!(addresses.insert(block.as_ptr() as usize), "a block was leased twice");
            assert_eq!(block.len(), self.shape.block_size);
            assert!(block.iter().all(|b| b == tag), "a leased block changed under its holder");
        }
        let stats = pool.stats();
        let n = self.shape.blocks_per_slab;
        assert_eq!(stats.leased, self.leased.len(), "{stats:?}");
        assert_eq!(stats.leased + stats.free, stats.slabs * n, "{stats:?}");
        assert!(stats.cached >= self.helper_cached, "{stats:?}");
        assert!(stats.slabs <= self.shape.max_slabs, "{stats:?}");
        let in_use = self.leased.len() + self.helper_cached;
        assert!(stats.slabs * n >= in_use, "{stats:?}");
    }
}

fn run(shape: Shape, ops: Vec<Op>) {
    let pool =
        common::pool(shape.block_size, shape.blocks_per_slab, shape.max_slabs, shape.thread_cache);
    let helper = Helper::spawn(pool.clone());
    let mut model = Model { shape, leased: Vec::new(), helper_cached: 0, next_tag: 1 };
    for op in ops {
        match op {
            Op::Lease => {
                let available = model.leased.len() + model.helper_cached < model.max_blocks();
                match pool.try_lease() {
                    Ok(mut block) => {
                        assert!(available, "leased past the bound");
                        let tag = model.next_tag;
                        model.next_tag = model.next_tag.wrapping_add(1).max(1);
                        block.fill(tag);
                        model.leased.push((block, tag));
                    }
                    Err(error) => {
                        assert!(!available, "a free block was lost: {error}");
                        let max_bytes = shape.block_size * model.max_blocks();
                        assert_eq!(error, LeaseError::Exhausted { max_bytes });
                    }
                }
            }
            Op::Return(i) if !model.leased.is_empty() => {
                let i = i % model.leased.len();
                drop(model.leased.swap_remove(i));
            }
            Op::ReturnRemote(i) if !model.leased.is_empty() => {
                let i = i % model.leased.len();
                let (block, _) = model.leased.swap_remove(i);
                helper.run(HelperCmd::Drop(block));
                model.helper_push();
            }
            Op::HelperFlush => {
                helper.run(HelperCmd::Flush);
                model.helper_cached = 0;
            }
            Op::Trim => {
                pool.trim();
                let stats = pool.stats();
                let in_use = model.leased.len() + model.helper_cached;
                // Every slab left holds a leased or helper-cached block.
                assert!(stats.slabs <= in_use, "trim left an all-free slab: {stats:?}");
                assert_eq!(stats.cached, model.helper_cached, "trim flushes this thread's cache");
            }
            Op::Maintain => {
                pool.maintain();
            }
            Op::Return(_) | Op::ReturnRemote(_) => {}
        }
        model.check(&pool);
    }
    // The pool goes first; the leased blocks stay intact until dropped.
    let Helper { commands, acks: _acks, thread } = helper;
    drop(commands);
    thread.join().unwrap();
    drop(pool);
    model.helper_cached = 0;
    for (block, tag) in &model.leased {
        assert!(block.iter().all(|b| b == tag));
    }
}

/// Operations per case; fewer under Miri, which interprets every step.
fn max_ops() -> usize {
    if cfg!(miri) { 24 } else { 80 }
}

fn config() -> ProptestConfig {
    if cfg!(miri) {
        ProptestConfig { cases: 8, failure_persistence: None, ..ProptestConfig::default() }
    } else {
        ProptestConfig { cases: 512, ..ProptestConfig::default() }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_pool_matches_its_model(shape in shape(), ops in prop::collection::vec(op(), 1..max_ops())) {
        run(shape, ops);
    }
}
