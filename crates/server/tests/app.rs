//! The application side over real TCP: deferred responses and request
//! bodies read on application threads (`hello::Demo` on a tokio runtime,
//! and test handlers on plain threads).
#![cfg(feature = "tokio")]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use common::{Client, options, serve};
use falconet_server::hello::Demo;
use falconet_server::{Handler, Options, Request, Response};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_time().build().unwrap()
}

#[test]
fn a_thousand_delays_on_one_worker_are_answered_together() {
    let runtime = runtime();
    let server = serve(Options::new().workers(1), Demo::new(runtime.handle().clone()));
    let mut clients: Vec<Client> = (0..1000).map(|_| Client::connect(server.addr)).collect();
    let start = Instant::now();
    for client in &mut clients {
        client.send(b"GET /delay?ms=200 HTTP/1.1\r\nHost: t\r\n\r\n");
    }
    for client in &mut clients {
        let reply = client.reply().unwrap();
        assert_eq!((reply.status, reply.text().as_str()), (200, "delayed 200 ms"));
    }
    let took = start.elapsed();
    // Answered one after another this would take 200 s; the bound only
    // proves they waited together (the goal is 2 s; CI machines
    // are slower than that, the note records the figure).
    assert!(took < Duration::from_secs(20), "took {took:?}");
    eprintln!("1000 x /delay?ms=200 on one worker: {took:?}");
    // The worker stayed responsive meanwhile, and keeps serving.
    assert_eq!(clients[0].get("/plaintext").text(), "Hello, World!");
}

#[test]
fn delay_queries_are_checked() {
    let runtime = runtime();
    let server = serve(options(), Demo::new(runtime.handle().clone()));
    let mut client = Client::connect(server.addr);
    for bad in
        ["/delay", "/delay?ms=", "/delay?ms=10001", "/delay?ms=-1", "/delay?ms=1x", "/delay?n=1"]
    {
        assert_eq!(client.get(bad).status, 400, "{bad}");
    }
    let bad = client.get("/delay?ms=10001");
    assert_eq!(bad.header("content-type"), Some("text/plain"), "a body says its type");
    assert_eq!(client.get("/delay?ms=0").text(), "delayed 0 ms");
    assert_eq!(client.get("/delay?ms=10").text(), "delayed 10 ms");
    // Other parameters (a client's cache-buster) are ignored; an escaped
    // digit is a digit (RFC 3986 §2.3); `ms` twice is ambiguous.
    assert_eq!(client.get("/delay?ms=10&_=1700000000").text(), "delayed 10 ms");
    assert_eq!(client.get("/delay?i=7&ms=%31%30").text(), "delayed 10 ms");
    assert_eq!(client.get("/delay?ms=10&ms=20").status, 400);
    // `OPTIONS *` (RFC 9110 §9.3.7): what the demo serves, POST included.
    client.send(b"OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n");
    let options = client.reply().unwrap();
    assert_eq!((options.status, options.header("allow")), (204, Some("GET, HEAD, POST, OPTIONS")));
}

#[test]
fn pipelined_requests_behind_a_delayed_one_are_answered_in_order() {
    let runtime = runtime();
    let server = serve(options(), Demo::new(runtime.handle().clone()));
    let mut client = Client::connect(server.addr);
    let mut batch = String::new();
    for i in 0..30 {
        let path = match i % 3 {
            0 => format!("/delay?ms={}", 30 - i),
            1 => "/plaintext".to_string(),
            _ => "/nothing".to_string(),
        };
        batch.push_str(&format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n"));
    }
    client.send(batch.as_bytes());
    for i in 0..30 {
        let reply = client.reply().unwrap();
        match i % 3 {
            0 => assert_eq!(reply.text(), format!("delayed {} ms", 30 - i)),
            1 => assert_eq!(reply.text(), "Hello, World!"),
            _ => assert_eq!(reply.status, 404),
        }
    }
}

/// Sends a `len`-byte body to `/echo` (chunked or sized) from one thread
/// while this one reads the echo; checks it byte for byte. Returns the
/// most pool memory the server held meanwhile.
fn echo_round_trip(server: &common::TestServer<Demo>, len: usize, chunked: bool) -> usize {
    let stream = TcpStream::connect(server.addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let producer = thread::spawn(move || {
        let framing = if chunked {
            "Transfer-Encoding: chunked".to_string()
        } else {
            format!("Content-Length: {len}")
        };
        write!(writer, "POST /echo HTTP/1.1\r\nHost: t\r\n{framing}\r\n\r\n").unwrap();
        let mut sent = 0;
        let mut piece = vec![0u8; 61_000];
        while sent < len {
            let n = piece.len().min(len - sent);
            for (i, b) in piece[..n].iter_mut().enumerate() {
                *b = pattern(sent + i);
            }
            if chunked {
                write!(writer, "{n:x}\r\n").unwrap();
                writer.write_all(&piece[..n]).unwrap();
                writer.write_all(b"\r\n").unwrap();
            } else {
                writer.write_all(&piece[..n]).unwrap();
            }
            sent += n;
        }
        if chunked {
            writer.write_all(b"0\r\n\r\n").unwrap();
        }
    });
    let peak = Arc::new(AtomicU64::new(0));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let (handle, peak, done) = (server.handle().clone(), peak.clone(), done.clone());
        thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let pool = handle.stats().pool;
                peak.fetch_max((pool.leased * pool.block_size) as u64, Ordering::Relaxed);
                thread::sleep(Duration::from_millis(2));
            }
        })
    };
    let mut client = Client { reader: std::io::BufReader::new(stream) };
    let reply = client.reply().unwrap();
    done.store(true, Ordering::Relaxed);
    producer.join().unwrap();
    watcher.join().unwrap();
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body.len(), len, "the whole body came back");
    let first_wrong = reply.body.iter().enumerate().position(|(i, &b)| b != pattern(i));
    assert_eq!(first_wrong, None, "byte-exact");
    peak.load(Ordering::Relaxed) as usize
}

fn pattern(i: usize) -> u8 {
    (i % 251) as u8 ^ (i >> 12) as u8
}

#[test]
fn a_256_mib_echo_sized_and_chunked_is_byte_exact_with_bounded_pool_use() {
    let runtime = runtime();
    let len = 256 << 20;
    let server =
        serve(Options::new().workers(1).max_body(1 << 40), Demo::new(runtime.handle().clone()));
    for chunked in [false, true] {
        let peak = echo_round_trip(&server, len, chunked);
        eprintln!(
            "echo of {} MiB (chunked: {chunked}): peak pool use {} KiB",
            len >> 20,
            peak >> 10
        );
        // The input pipe pauses reads at 256 KiB unexamined, and one read
        // takes at most a block's tail and 256 KiB more; the output pipe
        // pauses the echo at 256 KiB unsent, and a 256 KiB piece may follow:
        // about 1 MiB whatever the body's size.
        assert!(peak <= (1 << 20) + (16 << 10), "peak pool use {peak} bytes");
    }
}

/// A handler whose application thread reads its body once `gate` opens.
struct Slow {
    done: mpsc::Sender<std::io::Result<u64>>,
    gate: Arc<Gate>,
}

/// A door the test opens.
#[derive(Default)]
struct Gate {
    open: std::sync::Mutex<bool>,
    opened: std::sync::Condvar,
}

impl Gate {
    fn opened() -> Arc<Self> {
        Arc::new(Self { open: std::sync::Mutex::new(true), opened: std::sync::Condvar::new() })
    }

    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }

    fn wait(&self) {
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.opened.wait(open).unwrap();
        }
    }
}

impl Handler for Slow {
    type State = ();

    fn head(&self, request: &Request<'_>) {
        request.stream_body();
    }

    fn respond(&self, (): (), response: &mut Response<'_>) {
        let Some(mut body) = response.take_body() else {
            let _ = response.body(b"no body");
            return;
        };
        let responder = response.defer().unwrap();
        let (done, gate) = (self.done.clone(), self.gate.clone());
        thread::spawn(move || {
            gate.wait();
            let mut total = 0u64;
            let mut buf = vec![0u8; 4096];
            let result = loop {
                match body.read(&mut buf) {
                    Ok(0) => break Ok(total),
                    Ok(n) => total += n as u64,
                    Err(error) => break Err(error),
                }
            };
            let answer = format!("{result:?}");
            done.send(result).unwrap();
            let _ = responder.body(answer.as_bytes());
        });
    }
}

#[test]
fn a_slow_application_pushes_the_client_back_with_bounded_memory() {
    let (done, results) = mpsc::channel();
    let gate = Arc::new(Gate::default());
    let server =
        serve(Options::new().workers(1).max_body(1 << 30), Slow { done, gate: gate.clone() });
    let mut stream = TcpStream::connect(server.addr).unwrap();
    let len = 64 << 20;
    write!(stream, "POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: {len}\r\n\r\n").unwrap();
    // The application does not read yet: write until TCP pushes back (no
    // progress for 200 ms).
    stream.set_write_timeout(Some(Duration::from_millis(200))).unwrap();
    let mut sent = 0usize;
    let chunk = vec![7u8; 64 * 1024];
    while sent < len {
        match stream.write(&chunk[..chunk.len().min(len - sent)]) {
            Ok(n) => sent += n,
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(error) => panic!("{error}"),
        }
    }
    assert!(sent < len, "the client was never pushed back");
    let pool = server.handle().stats().pool;
    let held = pool.leased * pool.block_size;
    eprintln!("pushed back after {} KiB; the server holds {} KiB of it", sent >> 10, held >> 10);
    // The socket buffers hold the rest; the server's own share is its
    // pipe's pause threshold (256 KiB) and one read past it (a block's tail
    // and 256 KiB).
    assert!(held <= (512 + 8) << 10, "{held} bytes held");
    // The application reads: the client goes on, and every byte arrives.
    gate.open();
    stream.set_write_timeout(None).unwrap();
    while sent < len {
        sent += stream.write(&chunk[..chunk.len().min(len - sent)]).unwrap();
    }
    let result =
        results.recv_timeout(Duration::from_secs(60)).expect("the application's read ended");
    assert_eq!(result.unwrap(), len as u64);
    let mut client = Client { reader: std::io::BufReader::new(stream) };
    assert_eq!(client.reply().unwrap().status, 200);
}

/// How a connection that ends mid-body fails the application's read: the
/// client's reset is `ConnectionReset`, its FIN `UnexpectedEof`, a client
/// that stalls past `io_timeout` `TimedOut` (not a pipe dropped unclosed,
/// `BrokenPipe`). The server goes on.
#[test]
fn a_connection_ended_mid_body_fails_the_applications_read_with_why() {
    let (done, results) = mpsc::channel();
    let options = options().io_timeout(Duration::from_millis(300));
    let server = serve(options, Slow { done, gate: Gate::opened() });
    for (end, kind) in [
        ("reset", std::io::ErrorKind::ConnectionReset),
        ("fin", std::io::ErrorKind::UnexpectedEof),
        ("stall", std::io::ErrorKind::TimedOut),
    ] {
        let stream = TcpStream::connect(server.addr).unwrap();
        (&stream)
            .write_all(b"POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\nabc")
            .unwrap();
        thread::sleep(Duration::from_millis(50));
        let _open = match end {
            "reset" => {
                // A reset, not a clean close: linger 0.
                socket2::SockRef::from(&stream).set_linger(Some(Duration::ZERO)).unwrap();
                drop(stream);
                None
            }
            "fin" => {
                stream.shutdown(std::net::Shutdown::Write).unwrap();
                Some(stream)
            }
            _ => Some(stream),
        };
        let result = results.recv_timeout(Duration::from_secs(30)).expect("the read returned");
        assert_eq!(result.expect_err(end).kind(), kind, "{end}");
    }
    assert_eq!(Client::connect(server.addr).get("/x").status, 200);
}

/// The same over HTTP/2: a connection reset while a stream's body is read
/// on an application thread fails that read with `ConnectionReset`.
#[test]
fn an_h2_connection_reset_mid_body_fails_the_applications_read_with_why() {
    let (done, results) = mpsc::channel();
    let server = serve(options(), Slow { done, gate: Gate::opened() });
    common::current_thread().block_on(async {
        let socket = TcpStream::connect(server.addr).unwrap();
        socket2::SockRef::from(&socket).set_linger(Some(Duration::ZERO)).unwrap();
        socket.set_nonblocking(true).unwrap();
        let tcp = tokio::net::TcpStream::from_std(socket).unwrap();
        let (send, connection) = h2::client::handshake(tcp).await.unwrap();
        let connection = tokio::spawn(connection);
        let mut send = send.ready().await.unwrap();
        let request = http::Request::post("http://t/x").body(()).unwrap();
        let (_response, mut stream) = send.send_request(request, false).unwrap();
        stream.send_data(bytes::Bytes::from_static(b"abc"), false).unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        // The socket drops with the connection's task: a reset.
        connection.abort();
        let _ = connection.await;
    });
    let result = results.recv_timeout(Duration::from_secs(30)).expect("the read returned");
    assert_eq!(result.expect_err("reset").kind(), std::io::ErrorKind::ConnectionReset);
}

/// An HTTP/2 client that sends requests the application answers later and
/// then ends its side (HTTP/2 has no half-close; a client that did this
/// and closed its socket, over and over, made the server hold every such
/// connection with its streams until their answers came: 2 GB in 10 s):
/// the application's work is given up at once (its tasks end, told by
/// `closed()`), a client that only half-closed learns which streams were
/// (RST_STREAM CANCEL), and the connection closes.
#[test]
fn an_h2_client_that_ends_its_side_gives_up_what_the_application_owes() {
    use falconet_server::h2::frame::{ErrorCode, kind};
    const STREAMS: u32 = 10;
    let runtime = runtime();
    let server = serve(Options::new().workers(1), Demo::new(runtime.handle().clone()));
    let started = Instant::now();
    let mut raw = common::h2raw::Raw::handshake(server.addr, &[]);
    for i in 0..STREAMS {
        raw.headers(2 * i + 1, &common::h2raw::req("GET", "/delay?ms=10000"), true);
    }
    let alive = || runtime.metrics().num_alive_tasks();
    while alive() < STREAMS as usize {
        assert!(started.elapsed() < Duration::from_secs(5), "the delays never started");
        thread::sleep(Duration::from_millis(5));
    }
    raw.tcp.shutdown(std::net::Shutdown::Write).unwrap();
    // Every frame until the server closes (or the test's patience ends).
    let frames = common::h2raw::frames_until(&mut raw, Duration::from_secs(8), |_| false);
    let cancelled = frames
        .iter()
        .filter(|f| f.kind == kind::RST_STREAM && ErrorCode::from(f.code()) == ErrorCode::CANCEL)
        .count();
    assert_eq!(
        cancelled,
        STREAMS as usize,
        "{:?}",
        frames.iter().map(|f| f.kind).collect::<Vec<_>>()
    );
    let closed = started.elapsed();
    assert!(closed < Duration::from_secs(5), "closed after {closed:?}, not before the delays");
    while alive() > 0 {
        assert!(started.elapsed() < Duration::from_secs(5), "{} delay tasks left", alive());
        thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn shutdown_waits_for_a_hundred_delayed_requests() {
    let runtime = runtime();
    let server = serve(
        Options::new().workers(2).shutdown_timeout(Duration::from_secs(10)),
        Demo::new(runtime.handle().clone()),
    );
    let mut clients: Vec<Client> = (0..100).map(|_| Client::connect(server.addr)).collect();
    for client in &mut clients {
        client.send(b"GET /delay?ms=300 HTTP/1.1\r\nHost: t\r\n\r\n");
    }
    // Wait until the server has them all, then stop it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.handle().stats().requests < 100 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(5));
    }
    server.handle().shutdown();
    for client in &mut clients {
        let reply = client.reply().unwrap();
        assert_eq!(reply.text(), "delayed 300 ms");
    }
    // Answered, then closed for the shutdown (idle connections close).
    for client in &mut clients {
        client.expect_closed();
    }
    server.stop();
}

/// A handler whose application task panics.
struct Panicky;

impl Handler for Panicky {
    type State = bool;

    fn head(&self, request: &Request<'_>) -> bool {
        request.path() == "/panic"
    }

    fn respond(&self, panic: bool, response: &mut Response<'_>) {
        if !panic {
            let _ = response.body(b"fine");
            return;
        }
        let responder = response.defer().unwrap();
        thread::spawn(move || {
            let _keep = responder;
            panic!("the application task panicked on purpose");
        });
    }
}

#[test]
fn a_panicking_application_task_gets_its_request_a_500_and_nothing_else() {
    let server = serve(options(), Panicky);
    let mut client = Client::connect(server.addr);
    let other = Client::connect(server.addr).get("/ok");
    assert_eq!(other.text(), "fine");
    assert_eq!(client.get("/panic").status, 500);
    assert_eq!(Client::connect(server.addr).get("/ok").text(), "fine");
}

/// Sends `request` on a fresh connection and reads until the server
/// closes: the whole answer (empty if the server said nothing).
fn answer_then_close(addr: std::net::SocketAddr, request: &[u8]) -> String {
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    tcp.write_all(request).unwrap();
    let mut answer = Vec::new();
    let _ = tcp.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

/// A body read on an application thread that the client framed wrongly
/// is the client's error, as it is for a body read on the loop: 400 for a
/// malformed chunk, 413 past `max_body`, then the connection closes. (The
/// echo's responder used to drop with a 500, or the connection closed
/// before it, saying nothing.)
#[test]
fn a_lent_body_the_client_framed_wrongly_gets_400_or_413_then_a_close() {
    let runtime = runtime();
    let server = serve(Options::new().workers(1).max_body(10), Demo::new(runtime.handle().clone()));
    let head = "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
    let cases: [(&str, &str); 5] = [
        (" 5\r\nhello\r\n0\r\n\r\n", "400"),
        ("10000000000000005\r\nhello\r\n0\r\n\r\n", "400"),
        ("5\nhello\r\n0\r\n\r\n", "400"),
        ("5\r\nhelloXX\r\n0\r\n\r\n", "400"),
        ("b\r\nhello world\r\n0\r\n\r\n", "413"),
    ];
    for (body, status) in cases {
        for _ in 0..10 {
            let answer = answer_then_close(server.addr, format!("{head}{body}").as_bytes());
            assert!(answer.starts_with(&format!("HTTP/1.1 {status} ")), "{body:?}: {answer:?}");
        }
    }
    // A well-framed body still echoes, on a connection that stays open.
    let mut client = Client::connect(server.addr);
    client.send(format!("{head}5\r\nhello\r\n0\r\n\r\n").as_bytes());
    let reply = client.reply().unwrap();
    assert_eq!((reply.status, reply.text().as_str()), (200, "hello"));
}

/// A client that half-closes right behind its requests (`nc`, HTTP/1.0
/// clients): a request answered later must still be answered, before the
/// connection closes (its response was dropped when the FIN came in the
/// same read as the request).
#[test]
fn deferred_answers_survive_a_fin_that_arrives_with_the_requests() {
    let runtime = runtime();
    let server = serve(Options::new().workers(1), Demo::new(runtime.handle().clone()));
    let delay = "GET /delay?ms=100 HTTP/1.1\r\nHost: t\r\n\r\n";
    let cases: [(String, usize); 5] = [
        (delay.to_string(), 1),
        ("GET /delay?ms=100 HTTP/1.0\r\n\r\n".to_string(), 1),
        ("HEAD /delay?ms=100 HTTP/1.1\r\nHost: t\r\n\r\n".to_string(), 1),
        (delay.repeat(3), 3),
        (format!("{delay}GET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n"), 2),
    ];
    for (requests, expected) in cases {
        let mut tcp = TcpStream::connect(server.addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        tcp.write_all(requests.as_bytes()).unwrap();
        tcp.shutdown(std::net::Shutdown::Write).unwrap();
        let mut answer = Vec::new();
        let _ = tcp.read_to_end(&mut answer);
        let answer = String::from_utf8_lossy(&answer);
        assert_eq!(answer.matches(" 200 OK\r\n").count(), expected, "{requests:?}: {answer:?}");
    }
}

/// Sends `request` (with `Connection: close` where it is HTTP/1.1) and
/// returns the answer's head and body as sent (chunked framing included).
fn head_and_body(addr: std::net::SocketAddr, request: &str) -> (String, Vec<u8>) {
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    tcp.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    tcp.read_to_end(&mut answer).unwrap();
    let at = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    (String::from_utf8_lossy(&answer[..at]).into_owned(), answer[at..].to_vec())
}

/// De-chunks `body`, checking its framing.
fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let line = body.windows(2).position(|w| w == b"\r\n").unwrap();
        let size = usize::from_str_radix(std::str::from_utf8(&body[..line]).unwrap(), 16).unwrap();
        body = &body[line + 2..];
        if size == 0 {
            assert_eq!(body, b"\r\n", "the last chunk, then the end");
            return out;
        }
        out.extend_from_slice(&body[..size]);
        assert_eq!(&body[size..size + 2], b"\r\n");
        body = &body[size + 2..];
    }
}

/// The streamed `/bytes` at the edges of `n` (0, 1, a piece, a piece and
/// one, the largest), over HTTP/1.1 (chunked), HTTP/1.0 (to the close),
/// and HEAD (no body).
#[test]
fn streamed_bytes_at_the_edges_of_n() {
    let runtime = runtime();
    let server = serve(Options::new().workers(1), Demo::new(runtime.handle().clone()));
    for n in [0usize, 1, 16 * 1024, 16 * 1024 + 1, 64 << 20] {
        let (head, body) = head_and_body(
            server.addr,
            &format!("GET /bytes?n={n} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"),
        );
        assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
        let body = if head.contains("Transfer-Encoding: chunked") { dechunk(&body) } else { body };
        assert!(body.len() == n && body.iter().all(|&b| b == b'x'), "n={n}: {} bytes", body.len());
        let (head, body) =
            head_and_body(server.addr, &format!("GET /bytes?n={n} HTTP/1.0\r\n\r\n"));
        assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
        assert_eq!(body.len(), n, "HTTP/1.0, n={n}");
        let (head, body) = head_and_body(
            server.addr,
            &format!("HEAD /bytes?n={n} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"),
        );
        assert!(head.starts_with("HTTP/1.1 200 ") && body.is_empty(), "HEAD n={n}: {head}");
    }
    let (head, _) = head_and_body(server.addr, "GET /bytes?n=67108865 HTTP/1.0\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 400 "), "{head}");
}

/// Reads each body to its end on a thread that then stays alive and quiet,
/// and drops the body and answers on another (as a task moves between a
/// runtime's threads).
struct ReadHereDropThere {
    quiet: std::sync::Mutex<Vec<mpsc::Sender<()>>>,
}

impl Handler for ReadHereDropThere {
    type State = ();

    fn head(&self, request: &Request<'_>) {
        request.stream_body();
    }

    fn respond(&self, (): (), response: &mut Response<'_>) {
        let (Some(mut body), Ok(responder)) = (response.take_body(), response.defer()) else {
            return;
        };
        let (release, quiet) = mpsc::channel::<()>();
        self.quiet.lock().unwrap().push(release);
        thread::spawn(move || {
            let mut read = Vec::new();
            let outcome = body.read_to_end(&mut read).map(|n| format!("read {n}"));
            thread::spawn(move || {
                drop(body);
                let _ = responder.body(outcome.unwrap_or_else(|e| e.to_string()).as_bytes());
            })
            .join()
            .unwrap();
            let _ = quiet.recv();
        });
    }
}

/// At the smallest pool, a body read to its end on a thread that then goes
/// quiet leaves none of its blocks in that thread's cache, whichever thread
/// drops it: with 20 such threads the server serves on (at round 15 every
/// free block sat in their caches and every connection was reset).
#[test]
fn bodies_read_to_their_end_on_quiet_threads_give_their_blocks_back() {
    let handler = ReadHereDropThere { quiet: std::sync::Mutex::new(Vec::new()) };
    let options = Options::new().workers(1).max_pool_bytes(falconet_server::MIN_POOL_BYTES);
    let server = serve(options, handler);
    let body = vec![b'q'; 200_000];
    for round in 0..20 {
        let mut client = Client::connect(server.addr);
        let head =
            format!("POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n", body.len());
        client.send(head.as_bytes());
        client.send(&body);
        let reply = client.reply().unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert_eq!(reply.text(), "read 200000", "round {round}");
        common::only_the_worker_caches(&server, &format!("round {round}"));
    }
}

/// Answers `202` at once (or deferred, answered from another thread before
/// the body is read: `/later`), hands the request body to a thread that
/// reads it after the answer went out, and reports what that thread read.
struct AcceptThenRead {
    read: std::sync::Mutex<mpsc::Sender<std::io::Result<(usize, u64)>>>,
}

impl Handler for AcceptThenRead {
    type State = bool;

    fn head(&self, request: &Request<'_>) -> bool {
        request.stream_body();
        request.path() == "/later"
    }

    fn respond(&self, later: bool, response: &mut Response<'_>) {
        let Some(mut body) = response.take_body() else {
            // No body (the keep-alive case's follow-up request).
            return response.body(b"no body").unwrap();
        };
        let report = self.read.lock().unwrap().clone();
        let responder = if later {
            Some(response.defer().expect("deferred"))
        } else {
            response.status(falconet_server::Status::new(202).unwrap()).unwrap();
            response.body(b"accepted").unwrap();
            None
        };
        thread::spawn(move || {
            if let Some(mut responder) = responder {
                responder.status(falconet_server::Status::new(202).unwrap()).unwrap();
                responder.body(b"accepted").unwrap();
            }
            // The answer is on its way (or out) before the body is read.
            thread::sleep(Duration::from_millis(100));
            let mut got = (0, common::FNV_START);
            let mut buf = [0u8; 8192];
            let result = loop {
                match body.read(&mut buf) {
                    Ok(0) => break Ok(got),
                    Ok(n) => got = (got.0 + n, common::fnv(got.1, &buf[..n])),
                    Err(error) => break Err(error),
                }
            };
            let _ = report.send(result);
        });
    }
}

/// A response that ends the connection (`Connection: close` asked, or an
/// HTTP/1.0 client) while the application still reads the request body:
/// the body is the application's to read to its end, not the linger's to
/// discard, and the connection closes once it is back.
#[test]
fn a_body_read_after_a_closing_response_arrives_whole() {
    let (read, reports) = mpsc::channel();
    let server = serve(options(), AcceptThenRead { read: std::sync::Mutex::new(read) });
    let body: Vec<u8> = (0..300_000).map(pattern).collect();
    let expected = (body.len(), common::fnv(common::FNV_START, &body));
    for (path, version, close) in [
        ("/now", "1.1", "Connection: close\r\n"),
        ("/later", "1.1", "Connection: close\r\n"),
        ("/now", "1.0", ""),
        ("/later", "1.0", ""),
        // Keep-alive: the next request waits for the body, as before.
        ("/now", "1.1", ""),
    ] {
        let case = format!("{path} HTTP/{version} {close:?}");
        let mut stream = TcpStream::connect(server.addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let head = format!(
            "POST {path} HTTP/{version}\r\nHost: t\r\n{close}Content-Length: {}\r\n\r\n",
            body.len()
        );
        let mut pieces = vec![head.into_bytes(), body.clone()];
        if close.is_empty() && version == "1.1" {
            pieces.push(b"GET /now HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".to_vec());
        }
        let writer = common::trickle(&stream, pieces, Duration::ZERO);
        let report = reports.recv_timeout(Duration::from_secs(30)).expect(&case);
        assert_eq!(report.unwrap_or_else(|e| panic!("{case}: {e}")), expected, "{case}");
        writer.join().unwrap();
        let mut reply = Vec::new();
        stream.read_to_end(&mut reply).expect("the connection closes");
        let reply = String::from_utf8_lossy(&reply);
        assert!(reply.starts_with("HTTP/1.1 202 Accepted\r\n"), "{case}: {reply}");
        assert!(reply.contains("\r\n\r\naccepted"), "{case}: {reply}");
    }
}
