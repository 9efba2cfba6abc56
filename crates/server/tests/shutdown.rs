//! Graceful shutdown: stop accepting, answer what was received, close the
//! idle (including silent) connections, all within the deadline.

mod common;

use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{Client, Echo, FNV_START, fnv, options, serve};

#[test]
fn requests_in_flight_are_answered_and_idle_connections_closed() {
    let server = serve(options().shutdown_timeout(Duration::from_secs(10)), Echo);
    let addr = server.addr;
    let handle = server.handle().clone();
    // Silent: connected, never sent a byte.
    let mut silent: Vec<Client> = (0..20).map(|_| Client::connect(addr)).collect();
    // Idle after a request.
    let mut idle = Client::connect(addr);
    assert_eq!(idle.get("/x").status, 200);
    // In flight: half a body sent.
    let mut body_half = Client::connect(addr);
    body_half.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nhello");
    // In flight: half a head sent.
    let mut head_half = Client::connect(addr);
    head_half.send(b"GET /late HTTP/1.1\r\nHo");
    // Pipelined: answered before the shutdown, idle after.
    let mut pipelined = Client::connect(addr);
    let batch: Vec<u8> = (0..50)
        .flat_map(|i| format!("GET /p{i} HTTP/1.1\r\nHost: t\r\n\r\n").into_bytes())
        .collect();
    pipelined.send(&batch);
    for i in 0..50 {
        assert_eq!(pipelined.reply().unwrap().text(), format!("/p{i}"));
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while handle.stats().connections < 24 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(handle.stats().connections, 24);
    std::thread::sleep(Duration::from_millis(100));

    let began = Instant::now();
    handle.shutdown();
    // Silent and idle connections are closed promptly.
    for client in &mut silent {
        client.expect_closed();
    }
    idle.expect_closed();
    pipelined.expect_closed();
    assert!(began.elapsed() < Duration::from_secs(5), "idle connections closed promptly");
    // New connections are refused.
    std::thread::sleep(Duration::from_millis(50));
    let refused = TcpStream::connect(addr).map(|s| {
        let mut c = Client { reader: std::io::BufReader::new(s) };
        c.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
        c.reply().is_err()
    });
    assert!(refused.unwrap_or(true), "a connection after shutdown was served");
    // The half-sent body completes, with requests pipelined behind it in
    // the same segment: all are answered, and only the last closes.
    let mut rest = b"world".to_vec();
    rest.extend_from_slice(&batch);
    body_half.send(&rest);
    let reply = body_half.reply().unwrap();
    assert_eq!(reply.text(), format!("len=10 fnv={:x}", fnv(FNV_START, b"helloworld")));
    assert!(!reply.closes());
    for i in 0..50 {
        let reply = body_half.reply().unwrap();
        assert_eq!(reply.text(), format!("/p{i}"));
        assert_eq!(reply.closes(), i == 49, "only the last closes ({i})");
    }
    body_half.expect_closed();
    head_half.send(b"st: t\r\n\r\n");
    let reply = head_half.reply().unwrap();
    assert_eq!(reply.text(), "/late");
    assert!(reply.closes());
    head_half.expect_closed();
    server.join().unwrap();
    assert!(began.elapsed() < Duration::from_secs(10), "done before the deadline");
}

#[test]
fn the_deadline_closes_what_is_left() {
    let server = serve(options().shutdown_timeout(Duration::from_millis(300)), Echo);
    let addr = server.addr;
    let mut stuck = Client::connect(addr);
    stuck.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nhel");
    std::thread::sleep(Duration::from_millis(100));
    let began = Instant::now();
    server.stop();
    let took = began.elapsed();
    assert!(took >= Duration::from_millis(300) && took < Duration::from_secs(5), "{took:?}");
    stuck.expect_closed();
}

#[test]
fn shutdown_with_no_connections_is_immediate() {
    let server = serve(options(), Echo);
    let _addr = server.addr;
    let began = Instant::now();
    server.stop();
    assert!(began.elapsed() < Duration::from_secs(2));
}

/// Dropping `Running` without `shutdown` and `join` (an early `?` in a
/// user's `main`) stops the server: the request in flight is answered,
/// the workers are joined, and the port serves no more.
#[test]
fn dropping_running_shuts_the_server_down() {
    use falconet_server::Server;
    let options = options().shutdown_timeout(Duration::from_secs(10));
    let server = Server::bind("127.0.0.1:0", options, Echo).expect("bind");
    let addr = server.local_addr();
    let handle = server.handle();
    let running = server.start().expect("start");
    let mut client = Client::connect(addr);
    assert_eq!(client.get("/before").status, 200);
    // Half a body in flight: the graceful shutdown waits for the rest.
    client.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nab");
    let finisher = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        client.send(b"cd");
        client.reply().map(|reply| reply.text())
    });
    // Let the worker read the half request (an unread one is idle, and
    // closed at once by the shutdown).
    std::thread::sleep(Duration::from_millis(100));
    let started = Instant::now();
    drop(running);
    assert!(handle.is_shutting_down());
    let echoed = finisher.join().unwrap().unwrap();
    assert_eq!(echoed, format!("len=4 fnv={:x}", fnv(FNV_START, b"abcd")));
    assert!(started.elapsed() >= Duration::from_millis(150), "the drop waited for the workers");
    let refused = TcpStream::connect_timeout(&addr, Duration::from_secs(1));
    assert!(refused.is_err(), "nothing listens after the drop");
}

/// Drops the server's `Running` from inside its own handler (an admin
/// "/quit"), on whichever worker serves the request.
#[derive(Clone)]
struct Quit {
    slot: std::sync::Arc<std::sync::Mutex<Option<falconet_server::Running<Quit>>>>,
    dropped: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl falconet_server::Handler for Quit {
    type State = ();

    fn head(&self, _: &falconet_server::Request<'_>) {}

    fn respond(&self, (): (), response: &mut falconet_server::Response<'_>) {
        let running = self.slot.lock().unwrap().take();
        drop(running);
        self.dropped.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = response.body(b"bye");
    }
}

/// A handler that drops `Running` on a worker (an adversarial review's
/// case: the drop joined the workers from one of them and deadlocked, or
/// panicked joining itself) starts the shutdown and returns.
#[test]
fn dropping_running_on_a_worker_returns() {
    use falconet_server::Server;
    use std::sync::atomic::Ordering;
    for _ in 0..4 {
        let quit = Quit { slot: Default::default(), dropped: Default::default() };
        let options = options().workers(2).shutdown_timeout(Duration::from_secs(1));
        let server = Server::bind("127.0.0.1:0", options, quit.clone()).expect("bind");
        let addr = server.local_addr();
        let handle = server.handle();
        *quit.slot.lock().unwrap() = Some(server.start().expect("start"));
        let mut client = Client::connect(addr);
        client.send(b"GET /quit HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(client.reply().unwrap().text(), "bye");
        assert!(quit.dropped.load(Ordering::SeqCst));
        assert!(handle.is_shutting_down());
        let deadline = Instant::now() + Duration::from_secs(5);
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            assert!(Instant::now() < deadline, "still accepting after the drop");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Answers each request from a thread, `ms` milliseconds later (the path
/// `/ms`).
struct Later;

impl falconet_server::Handler for Later {
    type State = u64;

    fn head(&self, request: &falconet_server::Request<'_>) -> u64 {
        request.path().trim_start_matches('/').parse().unwrap_or(0)
    }

    fn respond(&self, ms: u64, response: &mut falconet_server::Response<'_>) {
        let responder = response.defer().unwrap();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(ms));
            let _ = responder.body(format!("after {ms} ms").as_bytes());
        });
    }
}

/// A deferred response whose head is written after the shutdown began is
/// the connection's last: it says `Connection: close`, as an answer
/// written then at once does, instead of a keep-alive head followed by the
/// close (a client would race it with its next request). Requests
/// pipelined behind it are still answered, the last one closing.
#[test]
fn a_deferred_response_during_shutdown_says_it_closes() {
    let server = serve(options().shutdown_timeout(Duration::from_secs(10)), Later);
    let handle = server.handle().clone();
    let mut alone = Client::connect(server.addr);
    alone.send(b"GET /600 HTTP/1.1\r\nHost: t\r\n\r\n");
    let mut pipelined = Client::connect(server.addr);
    pipelined.send(b"GET /600 HTTP/1.1\r\nHost: t\r\n\r\nGET /0 HTTP/1.1\r\nHost: t\r\n\r\n");
    std::thread::sleep(Duration::from_millis(150));
    handle.shutdown();
    let reply = alone.reply().unwrap();
    assert_eq!(reply.text(), "after 600 ms");
    assert!(reply.closes(), "{reply:?}");
    alone.expect_closed();
    let first = pipelined.reply().unwrap();
    assert_eq!((first.text().as_str(), first.closes()), ("after 600 ms", false), "{first:?}");
    let second = pipelined.reply().unwrap();
    assert_eq!((second.text().as_str(), second.closes()), ("after 0 ms", true), "{second:?}");
    pipelined.expect_closed();
    server.join().unwrap();
}

/// The same with the client's FIN after its pipelined requests (`nc -N`):
/// the request behind the deferred one was received but not yet read, so
/// the deferred response keeps the connection open for it, and that one
/// closes (a close asked while the input had ended dropped it).
#[test]
fn a_request_pipelined_before_the_clients_fin_is_answered_during_shutdown() {
    let server = serve(options().shutdown_timeout(Duration::from_secs(10)), Later);
    let handle = server.handle().clone();
    let mut client = Client::connect(server.addr);
    client.send(b"GET /600 HTTP/1.1\r\nHost: t\r\n\r\nGET /0 HTTP/1.1\r\nHost: t\r\n\r\n");
    client.stream().shutdown(std::net::Shutdown::Write).unwrap();
    std::thread::sleep(Duration::from_millis(150));
    handle.shutdown();
    let first = client.reply().unwrap();
    assert_eq!((first.text().as_str(), first.closes()), ("after 600 ms", false), "{first:?}");
    let second = client.reply().unwrap();
    assert_eq!((second.text().as_str(), second.closes()), ("after 0 ms", true), "{second:?}");
    client.expect_closed();
    server.join().unwrap();
}
