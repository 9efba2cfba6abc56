//! `Running` dropped in the `block_on` of the handler's current-thread
//! runtime, then the runtime dropped with a request in flight: the client
//! gets its answer or a close, and the workers exit. One test per binary: it
//! counts this process's falconet worker threads.
#![cfg(all(feature = "tower", feature = "cli"))]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::get;
use falconet_server::tower::TowerHandler;
use falconet_server::{Options, Server};

fn workers_alive() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with("falconet-worke"))
        .count()
}

#[test]
fn running_then_runtime_dropped_with_a_request_in_flight() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (addr, client) = runtime.block_on(async {
        let app = Router::new().route(
            "/sleep",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                "slept"
            }),
        );
        let handler = TowerHandler::new(app, tokio::runtime::Handle::current());
        let options = Options::new().workers(2).shutdown_timeout(Duration::from_secs(1));
        let server = Server::bind("127.0.0.1:0", options, handler).unwrap();
        let addr = server.local_addr();
        let running = server.start().unwrap();
        let client = thread::spawn(move || {
            let mut tcp = TcpStream::connect(addr).unwrap();
            tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            tcp.write_all(b"GET /sleep HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
            let started = Instant::now();
            let mut got = Vec::new();
            let _ = tcp.read_to_end(&mut got);
            (String::from_utf8_lossy(&got).into_owned(), started.elapsed())
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        let started = Instant::now();
        drop(running);
        assert!(started.elapsed() < Duration::from_millis(500));
        (addr, client)
    });
    assert_eq!(workers_alive(), 2, "workers still draining");
    // The task in flight dies with the runtime, and says so.
    let logs = logged(|| drop(runtime));
    assert!(logs.contains("a request's task was dropped before it ended"), "logs: {logs:?}");
    let (answer, waited) = client.join().unwrap();
    eprintln!("client got {answer:?} after {waited:?}");
    assert!(waited < Duration::from_secs(3), "client waited {waited:?}");
    // The workers end by the shutdown deadline.
    let deadline = Instant::now() + Duration::from_secs(4);
    while workers_alive() > 0 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(workers_alive(), 0, "worker threads leaked");
    assert!(TcpStream::connect(addr).is_err(), "still listening");
}

/// What `f` logs on this thread (warnings and worse).
fn logged(f: impl FnOnce()) -> String {
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<u8>>>);

    impl Write for Capture {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    let capture = Capture::default();
    let writer = capture.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, f);
    String::from_utf8_lossy(&capture.0.lock().unwrap()).into_owned()
}
