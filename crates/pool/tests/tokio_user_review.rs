//! A day-one tokio user's programs against falconet-pool (outside review).
//!
//! Not under Miri: real sockets and multi-thread runtimes, which it does
//! not run (the unsafe paths these programs drive are Miri's in the
//! crate's other tests). Not under ThreadSanitizer (`scripts/tsan.sh`
//! sets `falconet_tsan`): tokio's I/O driver hands its readiness over
//! through epoll, which TSan cannot see, and reports races inside tokio
//! (tokio itself stopped running TSan for them: tokio-rs/tokio#7299).
#![cfg(all(not(falconet_pool_loom), not(miri), not(falconet_tsan)))]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use falconet_pool::{LeaseError, Pool};
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(30);

fn multi(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap()
}

/// Blocks leased in one task, filled, sent through a channel to a task on
/// another worker, checked there and dropped there; a periodic task trims
/// and maintains meanwhile. No block is handed out twice (each carries its
/// owner's stamp), and every block is back at the end.
#[test]
fn blocks_cross_workers_while_a_periodic_task_trims_and_maintains() {
    let pool = Pool::builder().blocks_per_slab(8).build().unwrap();
    let rt = multi(2);
    rt.block_on(async {
        timeout(LIMIT, async {
            let (tx, mut rx) = tokio::sync::mpsc::channel::<(u64, falconet_pool::Block)>(64);
            let stop = Arc::new(AtomicBool::new(false));
            let trimmer = tokio::spawn({
                let (pool, stop) = (pool.clone(), Arc::clone(&stop));
                async move {
                    let mut freed = 0;
                    while !stop.load(Ordering::Relaxed) {
                        freed += pool.trim() + pool.maintain();
                        tokio::time::sleep(Duration::from_micros(200)).await;
                    }
                    freed
                }
            });
            let mut producers = Vec::new();
            for p in 0..4u64 {
                let (pool, tx) = (pool.clone(), tx.clone());
                producers.push(tokio::spawn(async move {
                    for i in 0..5_000u64 {
                        let mut block = pool.try_lease().expect("default bound is 1 GiB");
                        let stamp = (p << 32) | i;
                        for word in block.chunks_exact_mut(8) {
                            word.copy_from_slice(&stamp.to_le_bytes());
                        }
                        if i % 7 == 0 {
                            tokio::task::yield_now().await;
                        }
                        tx.send((stamp, block)).await.unwrap();
                    }
                }));
            }
            drop(tx);
            let checker = tokio::spawn(async move {
                let mut n = 0;
                let mut held = Vec::new();
                while let Some((stamp, block)) = rx.recv().await {
                    tokio::task::yield_now().await;
                    assert!(
                        block.chunks_exact(8).all(|w| w == stamp.to_le_bytes()),
                        "block of {stamp:#x} was overwritten while leased"
                    );
                    held.push((stamp, block));
                    if held.len() > 20 {
                        // Drop some on this worker, some from a blocking thread.
                        let batch: Vec<_> = held.drain(..10).collect();
                        if n % 3 == 0 {
                            tokio::task::spawn_blocking(move || drop(batch)).await.unwrap();
                        } else {
                            drop(batch);
                        }
                    }
                    n += 1;
                }
                for (stamp, block) in &held {
                    assert!(block.chunks_exact(8).all(|w| w == stamp.to_le_bytes()));
                }
                n
            });
            for p in producers {
                p.await.unwrap();
            }
            assert_eq!(checker.await.unwrap(), 20_000);
            stop.store(true, Ordering::Relaxed);
            trimmer.await.unwrap();
        })
        .await
        .expect("hung");
    });
    drop(rt); // the workers exit and flush their caches
    let stats = pool.stats();
    assert_eq!(stats.leased, 0, "{stats:?}");
    assert_eq!(stats.cached, 0, "worker threads exited: nothing cached, {stats:?}");
    pool.trim();
    assert_eq!(pool.stats().slabs, 0, "{:?}", pool.stats());
}

/// The docs' sizing rule: blocks cached by other threads count as used,
/// "up to one slab per thread", so `max_bytes` with one slab of headroom
/// per thread that returns blocks never reports `Exhausted` while the
/// live blocks fit. Here: 2 workers + the `block_on` thread, 4 live blocks
/// at most (a semaphore), slabs of 4 blocks, 4 slabs.
#[test]
fn headroom_of_one_slab_per_thread_is_enough_on_a_runtime() {
    let pool =
        Pool::builder().block_size(64).blocks_per_slab(4).max_bytes(4 * 4 * 64).build().unwrap();
    let rt = multi(2);
    let exhausted = Arc::new(AtomicUsize::new(0));
    rt.block_on(async {
        let permits = Arc::new(tokio::sync::Semaphore::new(4));
        let mut tasks = Vec::new();
        for t in 0..8 {
            let (pool, permits, exhausted) =
                (pool.clone(), Arc::clone(&permits), Arc::clone(&exhausted));
            tasks.push(tokio::spawn(async move {
                for i in 0..2000 {
                    let _permit = permits.acquire().await.unwrap();
                    match pool.try_lease() {
                        Ok(block) => {
                            if (t + i) % 3 == 0 {
                                tokio::task::yield_now().await; // may resume on the other worker
                            }
                            drop(block);
                        }
                        Err(LeaseError::Exhausted { .. }) => {
                            exhausted.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
            }));
        }
        timeout(LIMIT, async {
            for t in tasks {
                t.await.unwrap();
            }
        })
        .await
        .expect("hung");
    });
    assert_eq!(exhausted.load(Ordering::Relaxed), 0, "Exhausted within the documented headroom");
}

/// The last `Pool` handle dropped while tasks on other workers still hold
/// blocks: they stay valid and writable until dropped there.
#[test]
fn pool_dropped_while_tasks_hold_blocks() {
    let rt = multi(2);
    rt.block_on(async {
        let pool = Pool::builder().blocks_per_slab(4).build().unwrap();
        let blocks: Vec<_> = (0..10).map(|_| pool.try_lease().unwrap()).collect();
        let (go_tx, go_rx) = tokio::sync::watch::channel(false);
        let mut tasks = Vec::new();
        for (i, mut block) in blocks.into_iter().enumerate() {
            let mut go = go_rx.clone();
            tasks.push(tokio::spawn(async move {
                block.fill(i as u8);
                go.wait_for(|g| *g).await.unwrap();
                tokio::time::sleep(Duration::from_millis(1)).await;
                assert!(block.iter().all(|&b| b == i as u8));
                block.fill(0xEE);
                drop(block);
            }));
        }
        drop(pool); // the last handle, blocks still out
        go_tx.send(true).unwrap();
        timeout(LIMIT, async {
            for t in tasks {
                t.await.unwrap();
            }
        })
        .await
        .expect("hung");
    });
}

/// `BlockBuf` (feature `bytes`): a socket read into pool memory with
/// tokio's `read_buf`, frozen, and the `Bytes` dropped on another worker:
/// "the block goes back to its pool when the last clone drops, on any thread".
#[cfg(feature = "bytes")]
#[test]
fn frozen_block_bufs_dropped_on_other_workers_go_back() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let pool = Pool::new();
    let rt = multi(2);
    rt.block_on(async {
        timeout(LIMIT, async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let client = tokio::spawn(async move {
                let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
                for i in 0..200u32 {
                    s.write_all(&[i as u8; 1000]).await.unwrap();
                }
                s.shutdown().await.unwrap();
            });
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut frames = Vec::new();
            loop {
                let mut buf = pool.try_lease().unwrap().into_buf();
                let n = socket.read_buf(&mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                frames.push(buf.freeze());
            }
            client.await.unwrap();
            let total: usize = frames.iter().map(|f| f.len()).sum();
            assert_eq!(total, 200_000);
            let mut tasks = Vec::new();
            for f in frames {
                let clone = f.slice(..f.len() / 2);
                tasks.push(tokio::spawn(async move { drop(f) }));
                tasks.push(tokio::task::spawn_blocking(move || drop(clone)));
            }
            for t in tasks {
                t.await.unwrap();
            }
        })
        .await
        .expect("hung");
    });
    assert_eq!(pool.stats().leased, 0);
}
