//! A day-one tokio user's programs against falconet-registry (outside review).
//!
//! Not under Miri: real sockets and multi-thread runtimes, which it does
//! not run (the unsafe paths these programs drive are Miri's in the
//! crate's other tests). Not under ThreadSanitizer (`scripts/tsan.sh`
//! sets `falconet_tsan`): tokio's I/O driver hands its readiness over
//! through epoll, which TSan cannot see, and reports races inside tokio
//! (tokio itself stopped running TSan for them: tokio-rs/tokio#7299).
#![cfg(all(not(falconet_registry_loom), not(miri), not(falconet_tsan)))]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use falconet_registry::{ConnectionId, Options, Registry};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(30);

fn multi(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap()
}

struct Conn {
    last_ms: AtomicU64,
    bytes: AtomicU64,
    _closer: oneshot::Sender<()>,
}

/// A tokio echo server with a connection registry: insert on accept
/// (`vacant_entry`, the task knows its id), a lookup per read from every
/// connection task, a `for_each` stats task and an idle sweep from a
/// periodic task, `remove` on close. Half the clients go silent and must
/// be swept; the rest close themselves. Everything ends, nothing leaks.
#[test]
fn tokio_echo_server_with_registry_lookups_sweep_and_remove() {
    const CLIENTS: usize = 40;
    multi(2).block_on(async {
        timeout(LIMIT, async {
            let start = Instant::now();
            let now_ms = move || start.elapsed().as_millis() as u64;
            let registry = Arc::new(
                Registry::<Conn>::with_options(Options::new().max_connections(1000)).unwrap(),
            );
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let swept = Arc::new(AtomicUsize::new(0));
            let sweeper = tokio::spawn({
                let (registry, swept) = (Arc::clone(&registry), Arc::clone(&swept));
                async move {
                    loop {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        let now = now_ms();
                        swept.fetch_add(
                            registry.sweep(|_, c| now - c.last_ms.load(Ordering::Relaxed) < 150),
                            Ordering::Relaxed,
                        );
                        let mut total = 0;
                        registry.for_each(|_, c| total += c.bytes.load(Ordering::Relaxed));
                        let _ = total;
                    }
                }
            });
            let server = tokio::spawn({
                let registry = Arc::clone(&registry);
                async move {
                    let mut tasks = Vec::new();
                    for _ in 0..CLIENTS {
                        let (mut socket, _) = listener.accept().await.unwrap();
                        let entry = registry.vacant_entry().unwrap();
                        let id = entry.id();
                        let (closer, closed) = oneshot::channel();
                        entry.insert(Conn {
                            last_ms: AtomicU64::new(now_ms()),
                            bytes: AtomicU64::new(0),
                            _closer: closer,
                        });
                        let registry = Arc::clone(&registry);
                        tasks.push(tokio::spawn(async move {
                            let mut buf = [0; 512];
                            let echo = async {
                                while let Ok(n @ 1..) = socket.read(&mut buf).await {
                                    if let Some(c) = registry.get(id) {
                                        c.last_ms.store(now_ms(), Ordering::Relaxed);
                                        c.bytes.fetch_add(n as u64, Ordering::Relaxed);
                                    }
                                    if socket.write_all(&buf[..n]).await.is_err() {
                                        break;
                                    }
                                }
                            };
                            tokio::select! {
                                () = echo => {}
                                _ = closed => {}
                            }
                            registry.remove(id);
                        }));
                    }
                    for t in tasks {
                        t.await.unwrap();
                    }
                }
            });
            let mut clients = Vec::new();
            for c in 0..CLIENTS {
                clients.push(tokio::spawn(async move {
                    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
                    for i in 0..5u8 {
                        s.write_all(&[i; 100]).await.unwrap();
                        let mut back = [0; 100];
                        s.read_exact(&mut back).await.unwrap();
                        assert_eq!(back, [i; 100]);
                    }
                    if c % 2 == 0 {
                        s.shutdown().await.unwrap(); // closes itself
                    }
                    // Odd ones go silent: the sweep closes them.
                    let mut byte = [0; 1];
                    assert_eq!(s.read(&mut byte).await.unwrap(), 0);
                }));
            }
            for c in clients {
                c.await.unwrap();
            }
            server.await.unwrap();
            sweeper.abort();
            assert_eq!(registry.len(), 0);
            assert!(swept.load(Ordering::Relaxed) >= CLIENTS / 2, "the silent half was swept");
        })
        .await
        .expect("the registry server hung");
    });
}

/// The documented `Ref`/`VacantEntry` auto traits, as a tokio user meets
/// them: `Ref` is `Sync` (so `&Ref` may go to a scoped thread), `VacantEntry`
/// and the registry are `Send`, so an id can be reserved and the value
/// inserted after an `.await` in a spawned task.
#[test]
fn vacant_entry_held_across_await_in_a_spawned_task_and_dropped_by_abort() {
    fn send<T: Send>(_: &T) {}
    fn sync<T: Sync>(_: &T) {}
    multi(2).block_on(async {
        let registry = Arc::new(Registry::<String>::new());
        {
            let id = registry.insert("x".into()).unwrap();
            let r = registry.get(id).unwrap();
            sync(&r);
            let entry = registry.vacant_entry().unwrap();
            send(&entry);
        }
        let done = tokio::spawn({
            let registry = Arc::clone(&registry);
            async move {
                let entry = registry.vacant_entry().unwrap();
                let id = entry.id();
                tokio::time::sleep(Duration::from_millis(5)).await; // a handshake
                entry.insert("conn".into());
                id
            }
        });
        let id = done.await.unwrap();
        assert_eq!(registry.get(id).as_deref().map(String::as_str), Some("conn"));
        let len = registry.len();
        let (tx, rx) = oneshot::channel();
        let stalled = tokio::spawn({
            let registry = Arc::clone(&registry);
            async move {
                let entry = registry.vacant_entry().unwrap();
                tx.send(entry.id()).unwrap();
                std::future::pending::<()>().await;
                entry.insert("never".into());
            }
        });
        let reserved: ConnectionId = rx.await.unwrap();
        assert_eq!(registry.len(), len + 1);
        stalled.abort();
        let _ = stalled.await;
        assert_eq!(registry.len(), len, "the aborted task's reservation went back");
        assert!(registry.get(reserved).is_none());
    });
}

/// A value that counts its drops.
struct Loud(Arc<AtomicUsize>);

impl Drop for Loud {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// On a current-thread runtime a task may keep a `Ref` across `.await`
/// (the future need not be `Send`); the docs say another task's `remove`
/// of that entry on the same thread is then a discard (`None`), and the
/// value drops with the `Ref`. Nothing hangs.
#[test]
fn ref_across_await_on_a_current_thread_runtime_turns_remove_into_discard() {
    let drops = Arc::new(AtomicUsize::new(0));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let local = tokio::task::LocalSet::new();
    let registry = Arc::new(Registry::new());
    let id = registry.insert(Loud(Arc::clone(&drops))).unwrap();
    local.block_on(&rt, async {
        timeout(LIMIT, async {
            let holder = tokio::task::spawn_local({
                let registry = Arc::clone(&registry);
                async move {
                    let r = registry.get(id).unwrap();
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    drop(r);
                }
            });
            tokio::task::yield_now().await;
            assert!(registry.remove(id).is_none(), "a discard on this thread");
            assert!(registry.get(id).is_none());
            assert_eq!(drops.load(Ordering::SeqCst), 0, "the Ref still holds the value");
            holder.await.unwrap();
            assert_eq!(drops.load(Ordering::SeqCst), 1);
        })
        .await
        .expect("hung");
    });
}

/// A multi-thread runtime's `block_on` future need not be `Send`, so a
/// `Ref` held there across an `.await` compiles. A task on the runtime's
/// one worker that then called `remove` of that entry (as the README's
/// tokio server does on close) would spin on the worker until the `Ref`
/// drops, while the timer the `block_on` future waits on needs that worker:
/// the program hangs (an outside review's finding; `remove` now documents
/// that its wait blocks a runtime's worker, and names `discard`). The same
/// program with `discard`, as documented: the removal never waits, lookups
/// stop finding the entry at once, and the value drops with the `Ref`.
#[test]
fn discard_in_a_task_while_block_on_holds_a_ref_across_a_timer_await() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = multi(1);
        let drops = Arc::new(AtomicUsize::new(0));
        let registry = Arc::new(Registry::new());
        let id = registry.insert(Loud(Arc::clone(&drops))).unwrap();
        rt.block_on(async {
            let r = registry.get(id).unwrap();
            let remover = tokio::spawn({
                let registry = Arc::clone(&registry);
                async move { (registry.discard(id), registry.get(id).is_none()) }
            });
            tokio::time::sleep(Duration::from_millis(20)).await; // parse, then let go
            let (removed, gone) = remover.await.unwrap();
            let dropped_while_held = drops.load(Ordering::SeqCst);
            drop(r);
            tx.send((removed, gone, dropped_while_held, drops.load(Ordering::SeqCst))).unwrap();
        });
    });
    match rx.recv_timeout(Duration::from_secs(5)) {
        Ok(seen) => {
            assert_eq!(seen, (true, true, 0, 1), "(removed, gone, drops held, drops after)")
        }
        Err(_) => panic!("discard waited on the only worker"),
    }
}

/// A value whose `Drop` uses the registry (inserts a replacement, removes
/// another entry) run by a `sweep` in a periodic task: "no user code, not
/// even a value's Drop, runs under a lock".
#[test]
fn a_values_drop_that_uses_the_registry_during_a_sweep_in_a_task() {
    struct Node {
        registry: &'static Registry<Node>,
        other: Option<ConnectionId>,
        reinsert: bool,
    }
    impl Drop for Node {
        fn drop(&mut self) {
            if let Some(other) = self.other {
                let _ = self.registry.remove(other);
            }
            if self.reinsert {
                self.registry
                    .insert(Node { registry: self.registry, other: None, reinsert: false })
                    .unwrap();
            }
        }
    }
    let registry: &'static Registry<Node> = Box::leak(Box::new(Registry::new()));
    multi(2).block_on(async {
        let mut ids = Vec::new();
        for i in 0..200 {
            let other = ids.last().copied().filter(|_| i % 2 == 1);
            ids.push(registry.insert(Node { registry, other, reinsert: i % 3 == 0 }).unwrap());
        }
        let sweeps = tokio::spawn(async move {
            let mut total = 0;
            for _ in 0..5 {
                total += registry.sweep(|_, n| n.other.is_none() && !n.reinsert);
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            total
        });
        let lookups = tokio::spawn(async move {
            for _ in 0..1000 {
                for &id in &ids {
                    if let Some(n) = registry.get(id) {
                        let _ = n.other;
                    }
                }
                tokio::task::yield_now().await;
            }
        });
        timeout(LIMIT, async {
            sweeps.await.unwrap();
            lookups.await.unwrap();
        })
        .await
        .expect("a sweep whose drops use the registry hung");
    });
    let _ = registry.drain().count();
}
