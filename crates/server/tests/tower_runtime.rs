//! Waiting for a server around tokio runtimes. A tower service on a
//! current-thread runtime (what `#[tokio::main(flavor = "current_thread")]`
//! and `#[tokio::test]` give a new user) has its tasks run only while the
//! runtime's thread awaits: the server is waited for with
//! `Running::stopped().await`, and `join`, `run` and the drop refuse or do
//! not wait there, and only there (not in an unrelated runtime, not in
//! `spawn_blocking`). `stopped` polled again, on a multi-thread runtime, and
//! after the timer met a handler's panic.
#![cfg(feature = "tower")]

mod common;

use std::future::Future;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::pin::pin;
use std::sync::mpsc;
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::get;
use common::Client;
use falconet_server::hello::{Demo, Hello};
use falconet_server::tower::TowerHandler;
use falconet_server::{Handler, Options, Request, Response, Running, Server, ServerError};

fn app() -> Router {
    Router::new().route("/plaintext", get(|| async { "Hello, World!" })).route(
        "/sleep",
        get(|| async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            "slept"
        }),
    )
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// Starts `app` on the current (current-thread) runtime.
fn start() -> (Running<TowerHandler<Router>>, SocketAddr) {
    let handler = TowerHandler::new(app(), tokio::runtime::Handle::current());
    let server = Server::bind("127.0.0.1:0", Options::new().workers(1), handler).unwrap();
    let addr = server.local_addr();
    (server.start().unwrap(), addr)
}

/// `GET path` on a thread of its own; its reply's body comes back on the
/// channel.
fn get_later(addr: SocketAddr, path: &'static str) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut client = Client::connect(addr);
        let _ = tx.send(client.get(path).text());
    });
    rx
}

/// The body `get_later` receives, within 5 s, awaited (so the runtime
/// runs meanwhile).
async fn answer(reply: mpsc::Receiver<String>) -> Option<String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match reply.try_recv() {
            Ok(answer) => return Some(answer),
            Err(_) if Instant::now() > deadline => return None,
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

#[test]
fn a_current_thread_runtime_serves_handlers_that_await_while_stopped_is_awaited() {
    current_thread().block_on(async {
        let (mut running, addr) = start();
        let handle = running.handle().clone();
        let slept = get_later(addr, "/sleep");
        let plain = get_later(addr, "/plaintext");
        let stopper = thread::spawn(move || {
            let answers = (
                slept.recv_timeout(Duration::from_secs(5)),
                plain.recv_timeout(Duration::from_secs(5)),
            );
            handle.shutdown();
            answers
        });
        let started = Instant::now();
        running.stopped().await.expect("the workers stopped cleanly");
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
        let (slept, plain) = stopper.join().unwrap();
        assert_eq!(slept.as_deref(), Ok("slept"));
        assert_eq!(plain.as_deref(), Ok("Hello, World!"));
    });
}

/// Once `stopped().await` has returned, `join` on the runtime's thread
/// waits for nothing and says so: `Ok` (it refused with
/// `WouldBlockRuntime`, as if workers were still running).
#[test]
fn join_after_stopped_returns_ok_on_the_runtimes_thread() {
    current_thread().block_on(async {
        let (mut running, _addr) = start();
        running.handle().shutdown();
        running.stopped().await.expect("the workers stopped cleanly");
        let joined = running.join();
        assert!(joined.is_ok(), "{joined:?}");
    });
}

#[test]
fn join_on_the_runtimes_thread_refuses_at_once_and_the_request_in_flight_finishes() {
    current_thread().block_on(async {
        let (running, addr) = start();
        let slept = get_later(addr, "/sleep");
        // The request reaches the worker and its task waits on the timer.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let started = Instant::now();
        let joined = running.join();
        assert!(matches!(joined, Err(ServerError::WouldBlockRuntime)), "{joined:?}");
        assert!(started.elapsed() < Duration::from_secs(1));
        assert!(joined.unwrap_err().to_string().contains("stopped()"));
        // The shutdown started; the runtime, driven while this task awaits,
        // finishes the request in flight.
        assert_eq!(answer(slept).await.as_deref(), Some("slept"));
    });
}

#[test]
fn a_drop_on_the_runtimes_thread_does_not_wait_and_the_request_in_flight_finishes() {
    current_thread().block_on(async {
        let (running, addr) = start();
        let slept = get_later(addr, "/sleep");
        // The request reaches the worker and its task waits on the timer.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let started = Instant::now();
        drop(running);
        assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
        // The shutdown is under way; the runtime, driven here, finishes the
        // request it has in flight.
        let answer = answer(slept).await;
        assert_eq!(answer.as_deref(), Some("slept"));
    });
}

/// A task that owns the server (one that waits for a signal, say) drops
/// it: the drop must not block the task's thread, which on a
/// current-thread runtime, or a multi-thread one with one worker, is the
/// thread the handler's work needs. It used to wait out the whole
/// shutdown timeout while the request in flight got no answer.
#[test]
fn a_drop_in_a_task_does_not_wait_and_the_request_in_flight_finishes() {
    let multi_thread_one_worker =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build();
    for runtime in [current_thread(), multi_thread_one_worker.unwrap()] {
        runtime.block_on(async {
            let handler = TowerHandler::new(app(), tokio::runtime::Handle::current());
            let options = Options::new().workers(1).shutdown_timeout(Duration::from_secs(3));
            let server = Server::bind("127.0.0.1:0", options, handler).unwrap();
            let addr = server.local_addr();
            let running = server.start().unwrap();
            let slept = get_later(addr, "/sleep");
            // The request reaches the worker and its task waits on the timer.
            tokio::time::sleep(Duration::from_millis(100)).await;
            tokio::spawn(async move { drop(running) }).await.unwrap();
            assert_eq!(answer(slept).await.as_deref(), Some("slept"));
        });
    }
}

#[test]
fn a_multi_thread_runtime_or_a_plain_handler_joins_as_before() {
    // join blocks where nothing the handler needs runs on this thread.
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build();
    let runtime = runtime.unwrap();
    let handler = TowerHandler::new(app(), runtime.handle().clone());
    let server = Server::bind("127.0.0.1:0", Options::new().workers(1), handler).unwrap();
    let running = server.start().unwrap();
    let handle = running.handle().clone();
    let stopper = thread::spawn(move || {
        thread::sleep(Duration::from_millis(50));
        handle.shutdown();
    });
    runtime.block_on(async { running.join() }).expect("joined");
    stopper.join().unwrap();
    // A handler that needs no runtime joins even inside a current-thread one.
    current_thread().block_on(async {
        let server = Server::bind("127.0.0.1:0", Options::new().workers(1), Hello).unwrap();
        let running = server.start().unwrap();
        running.handle().shutdown();
        running.join().expect("joined");
    });
}

#[test]
fn a_stopped_future_dropped_early_leaves_the_server_running() {
    current_thread().block_on(async {
        let (mut running, addr) = start();
        // A select! whose other branch wins drops the wait.
        tokio::select! {
            _ = running.stopped() => panic!("stopped without a shutdown"),
            () = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
        let plain = get_later(addr, "/plaintext");
        let answer = answer(plain).await;
        assert_eq!(answer.as_deref(), Some("Hello, World!"));
        running.handle().shutdown();
        running.stopped().await.expect("stopped");
        // Awaited to the end, the threads are joined: the drop has nothing
        // left to wait for.
        drop(running);
    });
}

/// `hello::Demo` finishes work on a tokio runtime (`/delay` spawns a timer
/// task on it), as TowerHandler does: given a current-thread runtime, join
/// in its `block_on` refuses at once and starts the shutdown, and the
/// request in flight is answered while the runtime runs on.
#[test]
fn demo_on_a_current_thread_runtime_join_refuses_and_its_request_finishes() {
    current_thread().block_on(async {
        let demo = Demo::new(tokio::runtime::Handle::current());
        assert!(demo.blocking_here_stalls());
        let options = Options::new().workers(1).shutdown_timeout(Duration::from_secs(2));
        let server = Server::bind("127.0.0.1:0", options, demo).unwrap();
        let addr = server.local_addr();
        let running = server.start().unwrap();
        let delayed = get_later(addr, "/delay?ms=100");
        // The request reaches the worker and its task waits on the timer.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let started = Instant::now();
        let joined = running.join();
        assert!(started.elapsed() < Duration::from_secs(1));
        assert!(matches!(joined, Err(ServerError::WouldBlockRuntime)), "{joined:?}");
        assert_eq!(answer(delayed).await.as_deref(), Some("delayed 100 ms"));
    });
}

/// A TowerHandler on a current-thread runtime that another thread drives;
/// the caller sits in a different current-thread runtime (a
/// `#[tokio::test]`, say). Blocking the caller's runtime stops nothing the
/// server needs: join waits.
#[test]
fn join_inside_an_unrelated_current_thread_runtime_is_not_refused() {
    let (rt_tx, rt_rx) = mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let driver = thread::spawn(move || {
        let runtime = current_thread();
        rt_tx.send(runtime.handle().clone()).unwrap();
        runtime.block_on(async {
            let _ = stop_rx.await;
        });
    });
    let server_runtime = rt_rx.recv().unwrap();
    let handler = TowerHandler::new(app(), server_runtime);
    let server = Server::bind("127.0.0.1:0", Options::new().workers(1), handler).unwrap();
    let addr = server.local_addr();
    let running = server.start().unwrap();
    let handle = running.handle().clone();
    // Served by the other thread's runtime.
    assert_eq!(get_later(addr, "/sleep").recv_timeout(Duration::from_secs(5)).unwrap(), "slept");

    let joined = current_thread().block_on(async move {
        let stopper = thread::spawn(move || {
            thread::sleep(Duration::from_millis(100));
            handle.shutdown();
        });
        let joined = running.join();
        stopper.join().unwrap();
        joined
    });
    let _ = stop_tx.send(());
    driver.join().unwrap();
    assert!(joined.is_ok(), "join refused in an unrelated runtime: {joined:?}");
}

/// `spawn_blocking` on the handler's own current-thread runtime: the
/// runtime's thread is free (it awaits the blocking task), so a blocking
/// join there hangs nothing: it waits.
#[test]
fn join_in_spawn_blocking_of_the_handlers_runtime_is_not_refused() {
    let runtime = current_thread();
    let joined = runtime.block_on(async {
        let handler = TowerHandler::new(app(), tokio::runtime::Handle::current());
        let server = Server::bind("127.0.0.1:0", Options::new().workers(1), handler).unwrap();
        let addr = server.local_addr();
        let running = server.start().unwrap();
        let handle = running.handle().clone();
        let slept = get_later(addr, "/sleep");
        let blocking = tokio::task::spawn_blocking(move || {
            let stopper = thread::spawn(move || {
                let answer = slept.recv_timeout(Duration::from_secs(4));
                handle.shutdown();
                answer
            });
            let joined = running.join();
            (joined, stopper.join().unwrap())
        });
        blocking.await.unwrap()
    });
    let (joined, answer) = joined;
    assert_eq!(answer.as_deref(), Ok("slept"));
    assert!(joined.is_ok(), "refused where blocking is harmless: {joined:?}");
}

/// `Server::run` is "start, then wait"; in the `block_on` of the handler's
/// current-thread runtime it returns WouldBlockRuntime at once and leaves
/// no server behind.
#[test]
fn run_that_refuses_on_a_current_thread_runtime_leaves_no_server_behind() {
    current_thread().block_on(async {
        let handler = TowerHandler::new(app(), tokio::runtime::Handle::current());
        let server = Server::bind("127.0.0.1:0", Options::new().workers(1), handler).unwrap();
        let addr = server.local_addr();
        let ran = server.run();
        assert!(matches!(ran, Err(ServerError::WouldBlockRuntime)), "{ran:?}");
        // Nothing should answer any more.
        let served = TcpStream::connect(addr).ok().and_then(|mut tcp| {
            tcp.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
            tcp.write_all(b"GET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n").ok()?;
            let mut buf = [0u8; 64];
            let n = tcp.read(&mut buf).ok()?;
            (n > 0).then(|| String::from_utf8_lossy(&buf[..n]).into_owned())
        });
        assert_eq!(served, None, "run() returned an error but a server is still serving");
    });
}

/// stopped() awaited in a multi-thread runtime's task, the shutdown from
/// another thread.
#[test]
fn stopped_in_a_multi_thread_runtime_task() {
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build();
    let runtime = runtime.unwrap();
    let handler = TowerHandler::new(app(), runtime.handle().clone());
    let server = Server::bind("127.0.0.1:0", Options::new().workers(2), handler).unwrap();
    let addr = server.local_addr();
    let mut running = server.start().unwrap();
    let handle = running.handle().clone();
    let task = runtime.spawn(async move {
        let result = running.stopped().await;
        (result, running)
    });
    assert_eq!(get_later(addr, "/sleep").recv_timeout(Duration::from_secs(5)).unwrap(), "slept");
    let started = Instant::now();
    handle.shutdown();
    let (result, running) = runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(5), task).await })
        .expect("stopped() resolved")
        .unwrap();
    assert!(result.is_ok(), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
    // Nothing left to wait for.
    let started = Instant::now();
    drop(running);
    assert!(started.elapsed() < Duration::from_millis(200));
}

/// Polled again after Ready (allowed to do anything but must not hang or
/// panic), and join after stopped() resolved.
#[test]
fn stopped_polled_again_after_ready() {
    let server =
        Server::bind("127.0.0.1:0", Options::new().workers(2), falconet_server::hello::Hello)
            .unwrap();
    let mut running = server.start().unwrap();
    running.handle().shutdown();
    let mut cx = Context::from_waker(Waker::noop());
    let deadline = Instant::now() + Duration::from_secs(5);
    {
        let mut stopped = pin!(running.stopped());
        loop {
            match stopped.as_mut().poll(&mut cx) {
                Poll::Ready(result) => {
                    assert!(result.is_ok(), "{result:?}");
                    break;
                }
                Poll::Pending => {
                    assert!(Instant::now() < deadline, "never stopped");
                    thread::sleep(Duration::from_millis(5));
                }
            }
        }
        assert!(matches!(stopped.as_mut().poll(&mut cx), Poll::Ready(Ok(()))));
    }
    // A fresh stopped() after the end is ready at once.
    let mut again = pin!(running.stopped());
    assert!(matches!(again.as_mut().poll(&mut cx), Poll::Ready(Ok(()))));
    running.join().expect("nothing left to join");
}

/// A handler whose request state panics when dropped; the drop at a
/// connection's close may happen outside the worker's catch_unwind.
struct DropBomb;

struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        if !thread::panicking() {
            panic!("bomb state dropped");
        }
    }
}

impl Handler for DropBomb {
    type State = Option<Bomb>;
    fn head(&self, request: &Request<'_>) -> Option<Bomb> {
        (request.path() == "/bomb").then(|| Bomb)
    }
    fn respond(&self, state: Option<Bomb>, response: &mut Response<'_>) {
        // Answered: defuse.
        if let Some(bomb) = state {
            std::mem::forget(bomb);
        }
        let _ = response.body(b"ok");
    }
}

/// A request state whose drop panics, dropped by the timer's 408 (the
/// sweep runs `Conn::check` on worker 0): that connection closes, worker 0
/// (the timer's) lives on, and `stopped` resolves cleanly after the
/// shutdown. Before, the panic killed worker 0 and `stopped` reported
/// `WorkerPanicked`.
#[test]
fn a_panic_in_the_timers_408_closes_only_its_connection() {
    let options = Options::new()
        .workers(1)
        .io_timeout(Duration::from_millis(200))
        .shutdown_timeout(Duration::from_millis(500));
    let server = Server::bind("127.0.0.1:0", options, DropBomb).unwrap();
    let addr = server.local_addr();
    let mut running = server.start().unwrap();
    // A head with a body that stalls: the I/O timeout refuses it (408).
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.write_all(b"POST /bomb HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nab").unwrap();
    thread::sleep(Duration::from_millis(1000));
    let alive = TcpStream::connect(addr).ok().and_then(|mut tcp| {
        tcp.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
        tcp.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n").ok()?;
        let mut buf = [0u8; 64];
        tcp.read(&mut buf).ok().filter(|&n| n > 0)
    });
    assert!(alive.is_some(), "the server stopped serving after the timer's panic");
    running.handle().shutdown();
    let result = current_thread()
        .block_on(async { tokio::time::timeout(Duration::from_secs(5), running.stopped()).await });
    let result = result.expect("stopped() resolved");
    assert!(result.is_ok(), "{result:?}");
    drop(tcp);
}
