//! A tower service on a current-thread tokio runtime (what
//! `#[tokio::main(flavor = "current_thread")]` and `#[tokio::test]` give a
//! new user): its tasks run only while the runtime's thread awaits, so the
//! server must be waited for with `Running::stopped().await`, and the
//! blocking waits must not hang there.
#![cfg(feature = "tower")]

mod common;

use std::net::SocketAddr;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::get;
use common::Client;
use falconet_server::hello::Hello;
use falconet_server::tower::TowerHandler;
use falconet_server::{Options, Running, Server, ServerError};

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
