//! Bytes drive a pool through leases, returns (here and on a second thread),
//! trims and maintenance; after each step the pool's invariants must hold:
//! no block is leased twice or changes under its holder, the bound is a
//! typed error, and the stats add up.
#![no_main]

use std::sync::mpsc;
use std::thread;

use falconet_pool::{Block, LeaseError, Pool};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&shape, ops)) = data.split_first() else { return };
    let blocks_per_slab = usize::from(shape % 8) + 1;
    let max_slabs = usize::from((shape >> 3) % 4) + 1;
    let thread_cache = usize::from(shape >> 5) % (blocks_per_slab + 1);
    let pool = Pool::builder()
        .block_size(64)
        .blocks_per_slab(blocks_per_slab)
        .max_bytes(64 * blocks_per_slab * max_slabs)
        .thread_cache(thread_cache)
        .build()
        .expect("a valid configuration");
    let (to_helper, inbox) = mpsc::channel::<Block>();
    let (ack, acks) = mpsc::channel::<()>();
    let helper = thread::spawn(move || {
        for block in inbox {
            drop(block);
            ack.send(()).unwrap();
        }
    });
    let mut held: Vec<(Block, u8)> = Vec::new();
    for (step, &op) in ops.iter().enumerate() {
        match op % 6 {
            0 | 1 => match pool.try_lease() {
                Ok(mut block) => {
                    let tag = step as u8;
                    block.fill(tag);
                    held.push((block, tag));
                }
                Err(LeaseError::Exhausted { .. }) => {}
                Err(other) => panic!("unexpected error: {other}"),
            },
            2 if !held.is_empty() => drop(held.swap_remove(usize::from(op) % held.len())),
            3 if !held.is_empty() => {
                let (block, _) = held.swap_remove(usize::from(op) % held.len());
                to_helper.send(block).unwrap();
                acks.recv().unwrap();
            }
            4 => drop(pool.trim()),
            5 => drop(pool.maintain()),
            _ => {}
        }
        let mut addresses: Vec<usize> = held.iter().map(|(b, _)| b.as_ptr() as usize).collect();
        addresses.sort_unstable();
        addresses.dedup();
        assert_eq!(addresses.len(), held.len(), "a block was leased twice");
        for (block, tag) in &held {
            assert!(block.iter().all(|b| b == tag), "a block changed under its holder");
        }
        let stats = pool.stats();
        assert_eq!(stats.leased, held.len());
        assert_eq!(stats.leased + stats.free, stats.slabs * stats.blocks_per_slab);
        assert!(stats.slabs <= max_slabs);
    }
    drop(to_helper);
    helper.join().unwrap();
    drop(pool);
    for (block, tag) in &held {
        assert!(block.iter().all(|b| b == tag));
    }
});
