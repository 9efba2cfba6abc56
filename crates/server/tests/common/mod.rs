//! Helpers shared by the integration tests: a server on a free port, a
//! test handler that reads bodies, and a small HTTP/1.1 client.

#![allow(dead_code)]

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

pub mod h2raw;
#[cfg(feature = "tower")]
pub mod tbody;
pub mod timed_app;

use falconet_server::{Handle, Handler, Options, Request, Response, Running, Server, Status};

/// A server on 127.0.0.1 with a free port, shut down gracefully (and
/// joined) when dropped, so a failing test never leaves one running.
pub struct TestServer<H: Handler> {
    running: Option<Running<H>>,
    handle: Handle<H>,
    pub addr: SocketAddr,
}

impl<H: Handler> TestServer<H> {
    pub fn handle(&self) -> &Handle<H> {
        &self.handle
    }

    /// Waits for the workers (after a shutdown started elsewhere).
    pub fn join(mut self) -> Result<(), falconet_server::ServerError> {
        self.running.take().map_or(Ok(()), Running::join)
    }

    /// Shuts down and waits for the workers; panics if one failed.
    pub fn stop(mut self) {
        self.handle.shutdown();
        if let Some(running) = self.running.take() {
            running.join().expect("the workers stopped cleanly");
        }
    }
}

impl<H: Handler> Drop for TestServer<H> {
    fn drop(&mut self) {
        self.handle.shutdown();
        if let Some(running) = self.running.take() {
            // Not while unwinding from a failed assertion: a second panic
            // would abort the test binary.
            let joined = running.join();
            if !std::thread::panicking() {
                joined.expect("the workers stopped cleanly");
            }
        }
    }
}

/// An HTTP/2 client (the `h2` crate) connected to `addr`, its connection
/// driven by a task on the current runtime.
pub async fn h2_client(addr: SocketAddr) -> h2::client::SendRequest<bytes::Bytes> {
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (send, connection) = h2::client::handshake(tcp).await.expect("h2 handshake");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    send
}

/// How long until `server` has no connection open, once it has one (None:
/// still one after `within`).
pub fn closed_within<H: Handler>(server: &TestServer<H>, within: Duration) -> Option<Duration> {
    let opened = Instant::now() + Duration::from_secs(5);
    while server.handle().stats().connections == 0 {
        assert!(Instant::now() < opened, "the connection never opened");
        std::thread::sleep(Duration::from_millis(5));
    }
    let began = Instant::now();
    while server.handle().stats().connections > 0 {
        if began.elapsed() > within {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(began.elapsed())
}

/// Asserts that, within 10 s, the server's pool keeps no more blocks in
/// thread caches than one slab (its one worker's cache): the application
/// threads gave theirs back. Waited for, not read once: a responder gives
/// its blocks back when it is done, which may be after the client already
/// has every byte of the answer.
pub fn only_the_worker_caches<H: Handler>(server: &TestServer<H>, context: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let stats = server.handle().stats().pool;
        if stats.cached <= stats.blocks_per_slab {
            return;
        }
        assert!(Instant::now() < deadline, "{context}: only the worker keeps blocks: {stats:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Sends `pieces` on a clone of `stream`, one every `every`, from a
/// thread; stops at the first failed write (the server closed). Returns
/// how many went.
pub fn trickle(
    stream: &TcpStream,
    pieces: Vec<Vec<u8>>,
    every: Duration,
) -> std::thread::JoinHandle<usize> {
    let mut stream = stream.try_clone().unwrap();
    std::thread::spawn(move || {
        let mut sent = 0;
        for piece in pieces {
            std::thread::sleep(every);
            if stream.write_all(&piece).is_err() {
                break;
            }
            sent += 1;
        }
        sent
    })
}

/// `n` pieces of `size` bytes each.
pub fn pieces(n: usize, size: usize) -> Vec<Vec<u8>> {
    vec![vec![b'x'; size]; n]
}

/// How the server's side of a connection ended, as the client saw it.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum End {
    /// End of stream.
    Eof,
    /// A reset.
    Reset,
    /// Nothing more within the time allowed (the connection is still open).
    Quiet,
}

/// Reads `stream` into `buf` until `marker` has arrived `count` times
/// (each answer's body carries it once), allocating nothing: the
/// allocation-counting tests' client.
pub fn read_markers(stream: &mut TcpStream, marker: &[u8], count: usize, buf: &mut [u8]) {
    let mut seen = 0;
    let mut carry = 0; // bytes of a marker split across reads
    while seen < count {
        let n = stream.read(&mut buf[carry..]).unwrap();
        assert!(n > 0, "closed");
        let end = carry + n;
        let mut i = 0;
        while i + marker.len() <= end {
            if &buf[i..i + marker.len()] == marker {
                seen += 1;
                i += marker.len();
            } else {
                i += 1;
            }
        }
        let keep = end.saturating_sub(i).min(marker.len() - 1);
        buf.copy_within(end - keep..end, 0);
        carry = keep;
    }
    assert_eq!(seen, count, "more answers than asked for");
}

/// Reads what comes on `stream` for up to `limit`, and how it ended.
pub fn read_for(stream: &mut TcpStream, limit: Duration) -> (Vec<u8>, End) {
    let deadline = Instant::now() + limit;
    let mut got = Vec::new();
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return (got, End::Quiet);
        }
        stream.set_read_timeout(Some(left.max(Duration::from_millis(1)))).unwrap();
        match stream.read(&mut buf) {
            Ok(0) => return (got, End::Eof),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                return (got, End::Quiet);
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return (got, End::Reset),
            Err(e) => panic!("read failed: {e}"),
        }
    }
}

/// Sends `request` on a new connection and reads until the server closes
/// it (`true`) or sends nothing for `quiet` (`false`).
pub fn exchange(addr: SocketAddr, request: &[u8], quiet: Duration) -> (Vec<u8>, bool) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_nodelay(true).unwrap();
    stream.write_all(request).unwrap();
    stream.set_read_timeout(Some(quiet)).unwrap();
    let mut got = Vec::new();
    let mut buf = vec![0; 1 << 16];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return (got, true),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                return (got, false);
            }
            Err(_) => return (got, true),
        }
    }
}

/// A raw TCP connection to `addr`, with Nagle off.
pub fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).expect("connect");
    stream.set_nodelay(true).unwrap();
    stream
}

/// Bytes as text, lossily.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `block_on` as a user writes it (what `futures::executor::block_on`
/// does): polls on this thread, parks until woken.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        std::thread::park();
    }
}

/// A tokio runtime of one worker thread, with every driver.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
}

/// A current-thread tokio runtime, with every driver.
pub fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// An external tool a test drives (curl) is not installed: the test is
/// skipped, unless `FALCONET_REQUIRE_TOOLS=1` (`scripts/test.sh` sets it
/// once it has installed them), where a skip would let a test that never
/// ran pass.
pub fn skip_without(tool: &str) {
    let required = std::env::var_os("FALCONET_REQUIRE_TOOLS").is_some_and(|v| v == "1");
    assert!(!required, "{tool} is not installed, and FALCONET_REQUIRE_TOOLS=1 requires it");
    eprintln!("{tool} not installed: skipped");
}

/// A server on 127.0.0.1 with a free port.
pub fn serve<H: Handler>(options: Options, handler: H) -> TestServer<H> {
    let server = Server::bind("127.0.0.1:0", options, handler).expect("bind");
    let addr = server.local_addr();
    let handle = server.handle();
    TestServer { running: Some(server.start().expect("start")), handle, addr }
}

/// `service` served by a [`falconet_server::tower::TowerHandler`] on a
/// one-worker runtime ([`runtime`]), returned beside it: the tuple drops
/// the server first, then the runtime its services ran on.
#[cfg(feature = "tower")]
pub fn serve_tower<S>(
    options: Options,
    service: S,
) -> (TestServer<falconet_server::tower::TowerHandler<S>>, tokio::runtime::Runtime)
where
    falconet_server::tower::TowerHandler<S>: Handler,
{
    let rt = runtime();
    let server =
        serve(options, falconet_server::tower::TowerHandler::new(service, rt.handle().clone()));
    (server, rt)
}

/// Options for tests: two workers, short timeouts where a test wants them.
pub fn options() -> Options {
    Options::new().workers(2)
}

/// The number after `name=` in `target`'s query (0 if none).
pub fn query_arg(target: &str, name: &str) -> u64 {
    let query = target.split_once('?').map_or("", |(_, q)| q);
    query
        .split('&')
        .find_map(|kv| kv.strip_prefix(name).and_then(|v| v.strip_prefix('=')))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// FNV-1a, to check that a body arrived intact.
pub fn fnv(hash: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(hash, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}
pub const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

/// What [`Echo`] answers to a `POST /echo` carrying `body`.
pub fn echo_of(body: &[u8]) -> String {
    format!("len={} fnv={:x}", body.len(), fnv(FNV_START, body))
}

/// Test routes: `/echo` answers `len=<body bytes> fnv=<hash>`; `/stream`
/// streams `n` numbered lines (`/stream?n`); `/panic` panics in the
/// handler; `/authority` answers the request's authority; anything else
/// answers its target.
#[derive(Clone, Copy, Debug, Default)]
pub struct Echo;

#[derive(Debug)]
pub struct EchoState {
    route: Route,
    len: u64,
    hash: u64,
    path: [u8; 32],
    path_len: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Echo,
    Stream(u32),
    Panic,
    Path,
}

impl Handler for Echo {
    type State = EchoState;

    fn head(&self, request: &Request<'_>) -> EchoState {
        let route = match request.path() {
            "/echo" => Route::Echo,
            "/stream" => Route::Stream(
                request.target().split_once('?').and_then(|(_, n)| n.parse().ok()).unwrap_or(3),
            ),
            "/panic" => Route::Panic,
            _ => Route::Path,
        };
        let shown =
            if request.path() == "/authority" { request.authority() } else { request.target() };
        let mut path = [0u8; 32];
        let path_len = shown.len().min(32);
        path[..path_len].copy_from_slice(&shown.as_bytes()[..path_len]);
        EchoState { route, len: 0, hash: FNV_START, path, path_len }
    }

    fn body(&self, state: &mut EchoState, chunk: &[u8]) {
        state.len += chunk.len() as u64;
        state.hash = fnv(state.hash, chunk);
    }

    fn respond(&self, state: EchoState, response: &mut Response<'_>) {
        match state.route {
            Route::Echo => {
                let text = format!("len={} fnv={:x}", state.len, state.hash);
                response.body(text.as_bytes()).unwrap();
            }
            Route::Stream(n) => {
                for i in 0..n {
                    response.write(format!("line {i}\n").as_bytes()).unwrap();
                }
            }
            Route::Panic => panic!("the handler panicked on purpose"),
            Route::Path => {
                response.status(Status::OK).unwrap();
                response.body(&state.path[..state.path_len]).unwrap();
            }
        }
    }
}

/// A parsed response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn closes(&self) -> bool {
        self.header("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A client connection.
pub struct Client {
    pub reader: BufReader<TcpStream>,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        stream.set_nodelay(true).unwrap();
        Self { reader: BufReader::new(stream) }
    }

    pub fn stream(&self) -> &TcpStream {
        self.reader.get_ref()
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.reader.get_mut().write_all(bytes).expect("send");
    }

    /// Sends a byte at a time, each in its own segment.
    pub fn send_bytewise(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.reader.get_mut().write_all(std::slice::from_ref(b)).expect("send");
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    pub fn get(&mut self, path: &str) -> Reply {
        self.send(format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").as_bytes());
        self.reply().expect("reply")
    }

    /// Reads one response (for a request that was not HEAD).
    pub fn reply(&mut self) -> io::Result<Reply> {
        self.reply_to(false)
    }

    pub fn reply_to(&mut self, head: bool) -> io::Result<Reply> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let status: u16 = line
            .strip_prefix("HTTP/1.1 ")
            .and_then(|rest| rest.get(..3))
            .and_then(|code| code.parse().ok())
            .ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidData, format!("status line {line:?}"))
            })?;
        let mut headers = Vec::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line)?;
            let trimmed = line.trim_end_matches(['\r', '\n']);
            if trimmed.is_empty() {
                break;
            }
            let (name, value) = trimmed.split_once(':').expect("header line");
            headers.push((name.to_string(), value.trim().to_string()));
        }
        let mut reply = Reply { status, headers, body: Vec::new() };
        if head || status == 100 || status == 204 || status == 304 {
            return Ok(reply);
        }
        if let Some(length) = reply.header("content-length") {
            let mut body = vec![0; length.parse().expect("length")];
            self.reader.read_exact(&mut body)?;
            reply.body = body;
        } else if reply.header("transfer-encoding") == Some("chunked") {
            loop {
                line.clear();
                self.reader.read_line(&mut line)?;
                let size = usize::from_str_radix(line.trim_end(), 16).expect("chunk size");
                let mut chunk = vec![0; size + 2];
                self.reader.read_exact(&mut chunk)?;
                if size == 0 {
                    break;
                }
                reply.body.extend_from_slice(&chunk[..size]);
            }
        } else {
            self.reader.read_to_end(&mut reply.body)?;
        }
        Ok(reply)
    }

    /// Reads until the server closes; returns what came.
    pub fn read_to_end(&mut self) -> io::Result<Vec<u8>> {
        let mut rest = Vec::new();
        self.reader.read_to_end(&mut rest)?;
        Ok(rest)
    }

    /// Asserts that the server closes the connection next (EOF, or a reset).
    pub fn expect_closed(&mut self) {
        let mut rest = Vec::new();
        match self.reader.read_to_end(&mut rest) {
            Ok(_) => assert!(
                rest.is_empty(),
                "unexpected bytes before close: {:?}",
                String::from_utf8_lossy(&rest)
            ),
            Err(error) => assert_eq!(error.kind(), io::ErrorKind::ConnectionReset, "{error}"),
        }
    }
}

/// Sends `request` on a new connection, expects `status` with
/// `Connection: close`, then the server's end of stream (a graceful close:
/// nothing more, no reset).
pub fn refused(addr: SocketAddr, request: &[u8], status: u16) {
    let mut client = Client::connect(addr);
    client.send(request);
    let reply =
        client.reply().unwrap_or_else(|e| panic!("{e} for {:?}", String::from_utf8_lossy(request)));
    assert_eq!(reply.status, status, "for {:?}", String::from_utf8_lossy(request));
    assert!(reply.closes(), "{status} closes the connection");
    client.expect_closed();
}

/// An HTTP/2 client (the `h2` crate, prior knowledge) on `addr`, with
/// stream and connection windows of `window` bytes; its connection runs
/// in a task of the current runtime.
pub async fn h2_client_window(
    addr: SocketAddr,
    window: u32,
) -> h2::client::SendRequest<bytes::Bytes> {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (send, connection) = h2::client::Builder::new()
        .initial_window_size(window)
        .initial_connection_window_size(window)
        .handshake(tcp)
        .await
        .unwrap();
    tokio::spawn(async move {
        let _ = connection.await;
    });
    send
}
