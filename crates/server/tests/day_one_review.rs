//! An outside tester's day one: the things a new user does in the "wrong"
//! place, or in an order the docs do not show, that must end in a clear,
//! typed error (or a correct answer), never a hang, a panic or lost data.
//!
//! Every step that might hang runs behind a timeout; when it hangs, the
//! server is forgotten (its stuck worker cannot be joined) and the test
//! fails with a message instead of hanging the run.
#![cfg(feature = "tower")]

mod common;

use std::collections::VecDeque;
use std::future::Future;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::pin::Pin;
use std::sync::{Arc, Mutex, mpsc};
use std::task::{Context, Poll};
use std::thread;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body as AxumBody;
use axum::http::{HeaderValue, StatusCode, header};
use axum::routing::{get, post};
use bytes::Bytes;
use common::{
    Client, Echo, End, block_on, connect, current_thread, options, read_for, runtime, serve, text,
};
use falconet_server::tower::TowerHandler;
use falconet_server::{
    Accept, Handler, Options, Request, RequestBody, Responder, Response, ResponseError, Server,
    Status,
};
use http_body::Frame;

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// How a user drives a future inside `respond`.
#[derive(Clone, Copy, Debug)]
enum Driver {
    /// A hand-made `block_on` (what `futures::executor::block_on` does).
    Park,
    /// A fresh current-thread tokio runtime's `block_on`.
    Tokio,
}

impl Driver {
    fn run<F: Future>(self, future: F) -> F::Output {
        match self {
            Self::Park => block_on(future),
            Self::Tokio => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(future),
        }
    }
}

/// A client whose reads give up after `secs`.
fn client(addr: SocketAddr, secs: u64) -> Client {
    let client = Client::connect(addr);
    client.stream().set_read_timeout(Some(Duration::from_secs(secs))).unwrap();
    client
}

// ---------------------------------------------------------------------------
// 1. Async writes and reads driven by a block_on inside `respond`
// ---------------------------------------------------------------------------

/// Defers, then streams 4 MiB with the *async* `Responder::write`, each
/// write driven to completion by a `block_on` inside `respond` (the
/// worker's thread). Reports what the writes returned.
struct BlockOnWrite {
    driver: Driver,
    seen: Mutex<mpsc::Sender<Result<usize, ResponseError>>>,
}

impl Handler for BlockOnWrite {
    type State = ();

    fn head(&self, _: &Request<'_>) {}

    fn respond(&self, (): (), response: &mut Response<'_>) {
        let Ok(mut responder) = response.defer() else { return };
        let piece = vec![b'x'; 64 * 1024];
        let mut written = 0;
        let outcome = loop {
            if written == 64 {
                break Ok(written);
            }
            match self.driver.run(responder.write(&piece)) {
                Ok(()) => written += 1,
                Err(error) => break Err(error),
            }
        };
        let _ = self.seen.lock().unwrap().send(outcome);
        if outcome.is_ok() {
            let _ = responder.finish();
        }
    }
}

fn block_on_write_in_respond(driver: Driver) {
    let (seen, outcome) = mpsc::channel();
    let server = serve(options().workers(1), BlockOnWrite { driver, seen: Mutex::new(seen) });
    let mut stream = connect(server.addr);
    stream.write_all(b"GET /stream HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    // The client reads all along: the only thing that can stop the writes
    // is the worker that sends them being the thread that waits.
    let reader = {
        let mut stream = stream.try_clone().unwrap();
        thread::spawn(move || read_for(&mut stream, Duration::from_secs(4)).0.len())
    };
    let Ok(outcome) = outcome.recv_timeout(Duration::from_secs(3)) else {
        std::mem::forget(server);
        panic!(
            "{driver:?}: the async Responder::write driven by block_on inside respond hung the \
             worker for good (the sync write_blocking fails with ResponseError::Deadlock here)"
        );
    };
    // Not hung: a typed error (as write_blocking's Deadlock) or the body.
    assert!(matches!(outcome, Err(ResponseError::Deadlock) | Ok(64)), "{driver:?}: {outcome:?}");
    drop(stream);
    let _ = reader.join();
    server.stop();
}

#[test]
fn async_responder_write_in_block_on_inside_respond_is_a_deadlock_error() {
    block_on_write_in_respond(Driver::Park);
}

#[test]
fn async_responder_write_in_tokio_block_on_inside_respond_is_a_deadlock_error() {
    block_on_write_in_respond(Driver::Tokio);
}

/// Takes the body and reads it with tokio's `AsyncRead`, driven by a
/// `block_on` inside `respond`.
struct BlockOnRead {
    driver: Driver,
    seen: Mutex<mpsc::Sender<Result<usize, io::ErrorKind>>>,
}

impl Handler for BlockOnRead {
    type State = ();

    fn head(&self, request: &Request<'_>) {
        request.stream_body();
    }

    fn respond(&self, (): (), response: &mut Response<'_>) {
        let Some(mut body) = response.take_body() else {
            let _ = response.body(b"no body");
            return;
        };
        let mut read = Vec::new();
        let outcome = self
            .driver
            .run(tokio::io::AsyncReadExt::read_to_end(&mut body, &mut read))
            .map_err(|error| error.kind());
        let _ = self.seen.lock().unwrap().send(outcome);
        let _ = response.body(format!("{outcome:?}").as_bytes());
    }
}

fn block_on_read_in_respond(driver: Driver) {
    let (seen, outcome) = mpsc::channel();
    let server = serve(options().workers(1), BlockOnRead { driver, seen: Mutex::new(seen) });
    let mut stream = connect(server.addr);
    // The head first, the body a moment later (as curl sends a large one).
    stream.write_all(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\n").unwrap();
    thread::sleep(Duration::from_millis(200));
    stream.write_all(b"hello").unwrap();
    let Ok(outcome) = outcome.recv_timeout(Duration::from_secs(3)) else {
        std::mem::forget(server);
        panic!(
            "{driver:?}: RequestBody's AsyncRead driven by block_on inside respond hung the \
             worker for good (the sync Read fails with io::ErrorKind::Deadlock here)"
        );
    };
    assert!(matches!(outcome, Err(io::ErrorKind::Deadlock) | Ok(5)), "{driver:?}: {outcome:?}");
    drop(stream);
    server.stop();
}

#[test]
fn async_body_read_in_block_on_inside_respond_is_a_deadlock_error() {
    block_on_read_in_respond(Driver::Park);
}

#[test]
fn async_body_read_in_tokio_block_on_inside_respond_is_a_deadlock_error() {
    block_on_read_in_respond(Driver::Tokio);
}

// ---------------------------------------------------------------------------
// 2. Waiting for the server from inside a handler
// ---------------------------------------------------------------------------

type Stopper = Box<dyn FnOnce() -> String + Send>;

/// An admin endpoint that stops the server and waits for it, with what
/// the test put in its slot (the `Running`, in a closure).
#[derive(Clone)]
struct StopsInside {
    slot: Arc<Mutex<Option<Stopper>>>,
}

impl Handler for StopsInside {
    type State = ();

    fn head(&self, _: &Request<'_>) {}

    fn respond(&self, (): (), response: &mut Response<'_>) {
        let stop = self.slot.lock().unwrap().take();
        let answer = match stop {
            Some(stop) => stop(),
            None => "nothing to stop".to_string(),
        };
        let _ = response.body(answer.as_bytes());
    }
}

/// `handle.shutdown(); running.join()` in a handler (an admin `/quit`
/// endpoint that owns the server). `Running`'s drop there is documented
/// not to wait; `join` panicked ("Resource deadlock avoided") and now
/// returns `ServerError::OnWorker`.
#[test]
fn join_inside_a_handler_is_a_typed_error() {
    let handler = StopsInside { slot: Arc::default() };
    let slot = Arc::clone(&handler.slot);
    let server = Server::bind("127.0.0.1:0", Options::new().workers(1), handler).unwrap();
    let addr = server.local_addr();
    let running = server.start().unwrap();
    *slot.lock().unwrap() = Some(Box::new(move || {
        running.handle().shutdown();
        format!("{:?}", running.join())
    }));
    let mut stream = connect(addr);
    stream.write_all(b"GET /quit HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let (got, end) = read_for(&mut stream, Duration::from_secs(3));
    let got = text(&got);
    assert_ne!(end, End::Quiet, "join inside the handler hung: {got:?}");
    assert!(
        got.starts_with("HTTP/1.1 200") && got.contains("Err("),
        "expected an answer carrying join's typed error; got {got:?} then {end:?} \
         (join on a worker's own thread panics: std's JoinHandle::join of the current thread)"
    );
}

/// The async wait, `running.stopped()`, driven by `block_on` in a
/// handler: the worker waited for itself; now `ServerError::OnWorker`.
#[test]
fn stopped_awaited_inside_a_handler_is_a_typed_error() {
    let handler = StopsInside { slot: Arc::default() };
    let slot = Arc::clone(&handler.slot);
    let server = Server::bind("127.0.0.1:0", Options::new().workers(1), handler).unwrap();
    let addr = server.local_addr();
    let mut running = server.start().unwrap();
    let handle = running.handle().clone();
    *slot.lock().unwrap() = Some(Box::new(move || {
        running.handle().shutdown();
        let stopped = block_on(running.stopped());
        format!("{stopped:?}")
    }));
    let mut stream = connect(addr);
    stream.write_all(b"GET /quit HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let (got, end) = read_for(&mut stream, Duration::from_secs(3));
    if end == End::Quiet {
        // The worker waits for itself for good.
        std::mem::forget(handle);
        panic!("block_on(running.stopped()) inside a handler hung its worker for good");
    }
    let got = text(&got);
    assert!(got.contains("Err("), "expected a typed error, got {got:?} then {end:?}");
}

// ---------------------------------------------------------------------------
// 3. Panics in head, body and respond
// ---------------------------------------------------------------------------

/// Two requests pipelined in one write, the second one's `respond`
/// panicking: the first was answered (its response sat in the output
/// buffer) before the panic, and used to be lost with the connection. It
/// is delivered, then `500` for the request that panicked, then the close.
#[test]
fn a_panic_in_respond_does_not_lose_the_pipelined_answers_before_it() {
    let server = serve(options().workers(1), Echo);
    let mut stream = connect(server.addr);
    stream
        .write_all(b"GET /first HTTP/1.1\r\nHost: t\r\n\r\nGET /panic HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let (got, end) = read_for(&mut stream, Duration::from_secs(3));
    let got = text(&got);
    assert_eq!(end, End::Eof, "closed after the panic: {got:?}");
    let (first, rest) = got.split_once("/first").expect("the answer to /first");
    assert!(first.starts_with("HTTP/1.1 200 OK\r\n"), "{got:?}");
    assert!(rest.starts_with("HTTP/1.1 500 Internal Server Error\r\n"), "{got:?}");
    assert!(rest.contains("Connection: close\r\n") && rest.ends_with("\r\n\r\n"), "{got:?}");
    drop(stream);
    server.stop();
}

/// Panics in `head` for `/head`, in `body` for `/body`.
struct PanicsEarly;

impl Handler for PanicsEarly {
    type State = bool;

    fn head(&self, request: &Request<'_>) -> bool {
        assert!(request.path() != "/head", "head panicked on purpose");
        request.path() == "/body"
    }

    fn body(&self, panics: &mut bool, _: &[u8]) {
        assert!(!*panics, "body panicked on purpose");
    }

    fn respond(&self, _: bool, response: &mut Response<'_>) {
        let _ = response.body(b"ok");
    }
}

/// A panic in `head` or `body` (not only `respond`): HTTP/1 closes that
/// connection (documented), HTTP/2 answers the stream; nothing hangs and
/// the server serves on.
#[test]
fn a_panic_in_head_or_body_ends_only_its_request() {
    let server = serve(options().workers(1), PanicsEarly);
    for request in [
        &b"GET /head HTTP/1.1\r\nHost: t\r\n\r\n"[..],
        b"POST /body HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello",
    ] {
        let mut stream = connect(server.addr);
        stream.write_all(request).unwrap();
        let (got, end) = read_for(&mut stream, Duration::from_secs(3));
        assert_ne!(end, End::Quiet, "hung after a panic: {:?}", text(&got));
    }
    assert_eq!(client(server.addr, 3).get("/fine").text(), "ok");

    let addr = server.addr;
    let outcome = current_thread().block_on(async move {
        tokio::time::timeout(Duration::from_secs(5), async move {
            let send = common::h2_client(addr).await;
            let mut statuses = Vec::new();
            for (path, body) in [("/head", None), ("/body", Some("hello")), ("/fine", None)] {
                let request = http::Request::post(format!("http://t{path}")).body(()).unwrap();
                let mut send = send.clone().ready().await.unwrap();
                let (answer, mut stream) = send.send_request(request, body.is_none()).unwrap();
                if let Some(body) = body {
                    stream.send_data(Bytes::from_static(body.as_bytes()), true).unwrap();
                }
                statuses.push(answer.await.map(|a| a.status().as_u16()).map_err(|e| e.to_string()));
            }
            statuses
        })
        .await
    });
    let statuses = outcome.expect("HTTP/2: a panic in head or body hung its stream");
    assert_eq!(statuses[2], Ok(200), "HTTP/2 serves on: {statuses:?}");
    assert!(statuses[..2].iter().all(|s| s != &Ok(200)), "{statuses:?}");
    server.stop();
}

// ---------------------------------------------------------------------------
// 4. A 1xx status as the final answer
// ---------------------------------------------------------------------------

/// Answers with the status in its path (`/100`): `response.status(...)`
/// with a 1xx code, then a body. Reports `status`'s error in the body.
struct Informational;

impl Handler for Informational {
    type State = u16;

    fn head(&self, request: &Request<'_>) -> u16 {
        request.path().trim_start_matches('/').parse().unwrap_or(200)
    }

    fn respond(&self, code: u16, response: &mut Response<'_>) {
        let status = Status::new(code).unwrap();
        match response.status(status) {
            Ok(_) => {
                let _ = response.body(b"final");
            }
            Err(error) => {
                let _ = response.body(format!("{error:?}").as_bytes());
            }
        }
    }
}

/// The status line of the first response in `bytes`.
fn first_status(bytes: &[u8]) -> Option<u16> {
    text(bytes).strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
}

/// A 1xx is interim (RFC 9110 §15.2): a client reads on for the final
/// response. Sent as the final (and only) answer, the client waits for
/// good. `response.status(..)` took it; it is now refused
/// (`ResponseError::InformationalStatus`), and a service's 1xx is `500`.
#[test]
fn a_1xx_status_is_never_sent_as_the_final_answer() {
    let server = serve(options().workers(1), Informational);
    let runtime = runtime();
    let app = Router::new().route(
        "/{code}",
        get(|axum::extract::Path(code): axum::extract::Path<u16>| async move {
            (StatusCode::from_u16(code).unwrap(), "final")
        }),
    );
    let tower = serve(options().workers(1), TowerHandler::new(app, runtime.handle().clone()));
    let mut wrong = Vec::new();
    for (name, addr) in [("Handler", server.addr), ("TowerHandler", tower.addr)] {
        for code in [100, 101, 103] {
            let mut stream = connect(addr);
            stream
                .write_all(format!("GET /{code} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes())
                .unwrap();
            let (got, end) = read_for(&mut stream, Duration::from_millis(800));
            match first_status(&got) {
                Some(status) if status >= 200 => {}
                _ => wrong.push(format!("{name} {code}: {:?} then {end:?}", text(&got))),
            }
        }
    }
    // Pipelined behind it: the next request's answer is what a client
    // takes for the final answer to the first.
    let mut stream = connect(server.addr);
    stream
        .write_all(b"GET /100 HTTP/1.1\r\nHost: t\r\n\r\nGET /200 HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let (got, _) = read_for(&mut stream, Duration::from_millis(800));
    let got = text(&got);
    if got.matches("HTTP/1.1 ").count() == 2 && got.starts_with("HTTP/1.1 100") {
        wrong.push(format!("pipelined /100 then /200: {got:?}"));
    }
    // HTTP/2: what the h2 client makes of it.
    let addr = server.addr;
    let h2 = current_thread().block_on(async move {
        tokio::time::timeout(Duration::from_secs(2), async move {
            let send = common::h2_client(addr).await;
            let request = http::Request::get("http://t/100").body(()).unwrap();
            let (answer, _) = send.ready().await.unwrap().send_request(request, true).unwrap();
            answer.await.map(|a| a.status().as_u16()).map_err(|e| e.to_string())
        })
        .await
    });
    match h2 {
        Ok(Ok(status)) if status >= 200 => {}
        other => wrong.push(format!("HTTP/2 Handler 100: {other:?}")),
    }
    assert!(
        wrong.is_empty(),
        "1xx sent as the final response (a client waits for the real one for good):\n{}",
        wrong.join("\n")
    );
    server.stop();
    tower.stop();
}

// ---------------------------------------------------------------------------
// 5. tower: Content-Length that disagrees with the body, body errors
// ---------------------------------------------------------------------------

enum Step {
    Data(&'static [u8]),
    Sleep(Duration),
    Fail,
}

/// A response body played from a script.
struct Script {
    steps: VecDeque<Step>,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

fn script(steps: Vec<Step>) -> AxumBody {
    AxumBody::new(Script { steps: steps.into(), sleep: None })
}

impl http_body::Body for Script {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = &mut *self;
        loop {
            if let Some(sleep) = &mut this.sleep {
                std::task::ready!(sleep.as_mut().poll(cx));
                this.sleep = None;
            }
            match this.steps.pop_front() {
                None => return Poll::Ready(None),
                Some(Step::Data(data)) => {
                    return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(data)))));
                }
                Some(Step::Sleep(time)) => this.sleep = Some(Box::pin(tokio::time::sleep(time))),
                Some(Step::Fail) => {
                    return Poll::Ready(Some(Err(io::Error::other("the body failed on purpose"))));
                }
            }
        }
    }
}

fn with_length(length: &'static str, body: AxumBody) -> axum::response::Response {
    let mut response = axum::response::Response::new(body);
    response.headers_mut().insert(header::CONTENT_LENGTH, HeaderValue::from_static(length));
    response
}

/// Each lying route and the body it really returns.
const LYING_CASES: [(&str, &str); 6] = [
    ("/short", "hello"),
    ("/long", "hello, twenty bytes!"),
    ("/stream-short", "hello"),
    ("/stream-long", "hello"),
    ("/ready-short", "hello"),
    ("/later-short", "hello"),
];

fn lying_app() -> Router {
    let ms = Duration::from_millis(30);
    Router::new()
        .route("/plain", get(|| async { "plain" }))
        .route("/short", get(|| async { with_length("10", AxumBody::from("hello")) }))
        .route("/long", get(|| async { with_length("3", AxumBody::from("hello, twenty bytes!")) }))
        .route(
            "/stream-short",
            get(move || async move {
                with_length(
                    "10",
                    script(vec![Step::Data(b"hel"), Step::Sleep(ms), Step::Data(b"lo")]),
                )
            }),
        )
        .route(
            "/stream-long",
            get(move || async move {
                with_length(
                    "2",
                    script(vec![Step::Data(b"hel"), Step::Sleep(ms), Step::Data(b"lo")]),
                )
            }),
        )
        .route(
            "/ready-short",
            get(|| async {
                with_length("10", script(vec![Step::Data(b"hel"), Step::Data(b"lo")]))
            }),
        )
        .route(
            "/later-short",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                with_length("10", AxumBody::from("hello"))
            }),
        )
}

/// RFC 9112 §6.3: the message must not lie about its length. A service
/// that sets `content-length` different from the body it returns (10 for
/// 5 bytes, 3 for 20, streamed or not, answered at once or later): what
/// the client receives is framed by what is sent, and the connection
/// stays usable.
#[test]
fn a_service_content_length_that_disagrees_with_its_body_never_reaches_the_wire() {
    let runtime = runtime();
    let server =
        serve(options().workers(1), TowerHandler::new(lying_app(), runtime.handle().clone()));
    let cases = LYING_CASES;
    for (path, body) in cases {
        let mut get = client(server.addr, 3);
        get.send(
            format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\nGET /plain HTTP/1.1\r\nHost: t\r\n\r\n")
                .as_bytes(),
        );
        let reply = get.reply().unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(reply.text(), body, "{path}");
        if let Some(length) = reply.header("content-length") {
            assert_eq!(length, body.len().to_string(), "{path}: the length sent lies");
        }
        let next = get.reply().unwrap_or_else(|e| panic!("{path}: the next response: {e}"));
        assert_eq!(next.text(), "plain", "{path}: the next response is misframed");
    }

    // HTTP/2: the h2 client checks content-length against the DATA.
    let addr = server.addr;
    let outcome = current_thread().block_on(async move {
        tokio::time::timeout(Duration::from_secs(10), async move {
            let send = common::h2_client(addr).await;
            let mut wrong = Vec::new();
            for (path, body) in cases {
                let request = http::Request::get(format!("http://t{path}")).body(()).unwrap();
                let (answer, _) =
                    send.clone().ready().await.unwrap().send_request(request, true).unwrap();
                let answer = answer.await.unwrap();
                let length = answer.headers().get("content-length").cloned();
                let mut data = answer.into_body();
                let mut got = Vec::new();
                let mut failed = None;
                while let Some(piece) = data.data().await {
                    match piece {
                        Ok(piece) => {
                            let _ = data.flow_control().release_capacity(piece.len());
                            got.extend_from_slice(&piece);
                        }
                        Err(error) => {
                            failed = Some(error.to_string());
                            break;
                        }
                    }
                }
                if got != body.as_bytes() || failed.is_some() {
                    wrong.push(format!("{path}: {length:?} {:?} {failed:?}", text(&got)));
                }
            }
            wrong
        })
        .await
    });
    let wrong = outcome.expect("HTTP/2 hung");
    assert!(wrong.is_empty(), "HTTP/2: {wrong:?}");
    server.stop();
}

fn failing_app() -> Router {
    let ms = Duration::from_millis(30);
    Router::new()
        .route("/plain", get(|| async { "plain" }))
        .route("/fail-first", get(|| async { script(vec![Step::Fail]) }))
        .route("/fail-ready", get(|| async { script(vec![Step::Data(b"part"), Step::Fail]) }))
        .route(
            "/fail-later",
            get(move || async move { script(vec![Step::Data(b"part"), Step::Sleep(ms), Step::Fail]) }),
        )
        .route(
            "/fail-in-task",
            get(move || async move {
                tokio::time::sleep(ms).await;
                script(vec![Step::Data(b"part"), Step::Sleep(ms), Step::Fail])
            }),
        )
        .route(
            "/panic-later",
            get(move || async move {
                tokio::time::sleep(ms).await;
                if ms > Duration::ZERO {
                    panic!("the service panicked on purpose");
                }
                "never"
            }),
        )
}

/// A response body that errors: before anything went out, a `500`;
/// midway, a cut response (chunked without its last chunk, then a close),
/// never a complete-looking one. And a service that panics after awaiting
/// gets a `500`.
#[test]
fn a_service_body_that_fails_midway_is_cut_never_complete() {
    let runtime = runtime();
    let server =
        serve(options().workers(1), TowerHandler::new(failing_app(), runtime.handle().clone()));
    for path in ["/fail-first", "/fail-ready", "/panic-later"] {
        let mut client = client(server.addr, 3);
        client.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
        assert_eq!(client.reply().unwrap().status, 500, "{path}");
    }
    for path in ["/fail-later", "/fail-in-task"] {
        let mut stream = connect(server.addr);
        stream.write_all(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes()).unwrap();
        let (got, end) = read_for(&mut stream, Duration::from_secs(3));
        let got = text(&got);
        assert_ne!(end, End::Quiet, "{path}: not closed after the body failed: {got:?}");
        assert!(got.starts_with("HTTP/1.1 200"), "{path}: {got:?}");
        assert!(got.contains("chunked"), "{path}: {got:?}");
        assert!(!got.ends_with("0\r\n\r\n"), "{path}: a cut body looks complete: {got:?}");
    }
    server.stop();
}

// ---------------------------------------------------------------------------
// 6. tower: request bodies the service does not read, or keeps
// ---------------------------------------------------------------------------

/// A service that answers without reading a 3 MiB upload: the server
/// drains it and answers the request pipelined behind it.
#[test]
fn a_service_that_never_reads_the_body_still_serves_the_next_request() {
    let runtime = runtime();
    let app = Router::new()
        .route("/ignore", post(|| async { "ignored" }))
        .route("/plain", get(|| async { "plain" }));
    let server = serve(options().workers(1), TowerHandler::new(app, runtime.handle().clone()));
    let mut client = client(server.addr, 5);
    let size = 3 << 20;
    let writer = {
        let mut stream = client.stream().try_clone().unwrap();
        thread::spawn(move || {
            stream
                .write_all(
                    format!("POST /ignore HTTP/1.1\r\nHost: t\r\nContent-Length: {size}\r\n\r\n")
                        .as_bytes(),
                )
                .unwrap();
            stream.write_all(&vec![b'x'; size]).unwrap();
            stream.write_all(b"GET /plain HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
        })
    };
    assert_eq!(client.reply().expect("the first answer").text(), "ignored");
    assert_eq!(client.reply().expect("the request behind the unread body").text(), "plain");
    writer.join().unwrap();
    drop(client);
    server.stop();
}

/// A service that answers `202 Accepted` at once and hands the request
/// body to a background task that gets to it later: documented to hold up
/// that connection's next request until the body is read or dropped. The
/// wait is bounded by `response_timeout` (1 s here; 30 s by default), but
/// then the waiting request got no answer at all, only the close, where
/// the README's table promises `503` when "the application keeps a request
/// waiting for response_timeout, the client owing nothing". It gets 503.
#[test]
fn a_request_queued_behind_a_body_the_application_holds_gets_a_503() {
    let runtime = runtime();
    let app = Router::new()
        .route(
            "/accept",
            post(|body: AxumBody| async move {
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_secs(6)).await;
                    drop(body);
                });
                StatusCode::ACCEPTED
            }),
        )
        .route("/plain", get(|| async { "plain" }));
    let options = options()
        .workers(1)
        .response_timeout(Some(Duration::from_secs(1)))
        .shutdown_timeout(Duration::from_secs(1));
    let server = serve(options, TowerHandler::new(app, runtime.handle().clone()));
    let mut client = client(server.addr, 5);
    client.send(b"POST /accept HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello");
    assert_eq!(client.reply().unwrap().status, 202);
    let started = Instant::now();
    client.send(b"GET /plain HTTP/1.1\r\nHost: t\r\n\r\n");
    let (got, end) = read_for(client.reader.get_mut(), Duration::from_secs(3));
    let waited = started.elapsed();
    drop(client);
    runtime.shutdown_background();
    server.stop();
    let got = text(&got);
    assert_ne!(end, End::Quiet, "unbounded: nothing after {waited:?}");
    assert!(
        got.starts_with("HTTP/1.1 503") || got.ends_with("plain"),
        "the request behind the held body got {got:?} then {end:?} after {waited:?}"
    );
}

// ---------------------------------------------------------------------------
// 7. tower: runtimes nobody drives, or gone
// ---------------------------------------------------------------------------

/// A current-thread runtime built only to get a handle (as the `PeerAddr`
/// doc example builds one), never driven by a `block_on`: a handler that
/// awaits anything is spawned on it and never runs. The server cannot tell
/// (`TowerHandler::new` documents it); what it guarantees is the bound:
/// the request gets `503` at `response_timeout` (2 s here), never a hang,
/// and inline answers still work.
#[test]
fn a_current_thread_runtime_nobody_drives_is_bounded_by_the_response_timeout() {
    let runtime = current_thread();
    let app = Router::new().route("/plain", get(|| async { "plain" })).route(
        "/sleep",
        get(|| async {
            tokio::time::sleep(Duration::from_millis(10)).await;
            "slept"
        }),
    );
    let options = options().workers(1).response_timeout(Some(Duration::from_secs(2)));
    let server = serve(options, TowerHandler::new(app, runtime.handle().clone()));
    // Answered inline: fine.
    assert_eq!(client(server.addr, 3).get("/plain").text(), "plain");
    let mut client = client(server.addr, 10);
    client.send(b"GET /sleep HTTP/1.1\r\nHost: t\r\n\r\n");
    let reply = client.reply();
    drop(client);
    server.stop();
    let reply = reply.expect("an answer at response_timeout, not a hang");
    assert_eq!(reply.status, 503, "the task was spawned on a runtime nobody runs");
    assert!(reply.closes());
}

/// The runtime dropped before the requests come: an inline answer still
/// works, one that needs the runtime gets a `500` at once, never a hang.
#[test]
fn a_runtime_dropped_before_requests_gives_500_not_a_hang() {
    let runtime = runtime();
    let app = Router::new()
        .route("/plain", get(|| async { "plain" }))
        .route(
            "/sleep",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(10)).await;
                "slept"
            }),
        )
        .route(
            "/yield",
            get(|| async {
                tokio::task::yield_now().await;
                "yielded"
            }),
        );
    let server = serve(options().workers(1), TowerHandler::new(app, runtime.handle().clone()));
    drop(runtime);
    let mut answers = Vec::new();
    for path in ["/plain", "/sleep", "/yield"] {
        let started = Instant::now();
        let reply = client(server.addr, 4).get(path);
        answers.push((path, reply.status, started.elapsed()));
    }
    server.stop();
    assert_eq!(answers[0].1, 200, "{answers:?}");
    for (path, status, waited) in &answers[1..] {
        assert!(
            matches!(status, 500 | 503) && *waited < Duration::from_secs(2),
            "{path}: {answers:?}"
        );
    }
}

// ---------------------------------------------------------------------------
// 8. Response / Responder / RequestBody misuse
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Misuse {
    DeferTwice,
    TakeTwice,
    TakeWithoutStream,
    StreamWithoutTake,
    StreamDeferWithoutTake,
    TakeToThreadAnswerNow,
    Next,
}

/// Each route misuses `Response` a different way and answers what it saw.
struct Misuser {
    read_later: Mutex<mpsc::Sender<io::Result<usize>>>,
}

impl Handler for Misuser {
    type State = Misuse;

    fn head(&self, request: &Request<'_>) -> Misuse {
        let route = match request.path() {
            "/defer-twice" => Misuse::DeferTwice,
            "/take-twice" => Misuse::TakeTwice,
            "/take-without-stream" => Misuse::TakeWithoutStream,
            "/stream-without-take" => Misuse::StreamWithoutTake,
            "/stream-defer-without-take" => Misuse::StreamDeferWithoutTake,
            "/take-to-thread" => Misuse::TakeToThreadAnswerNow,
            _ => Misuse::Next,
        };
        if !matches!(route, Misuse::TakeWithoutStream | Misuse::DeferTwice | Misuse::Next) {
            request.stream_body();
        }
        route
    }

    fn respond(&self, route: Misuse, response: &mut Response<'_>) {
        match route {
            Misuse::DeferTwice => {
                let Ok(first) = response.defer() else { return };
                let second = response.defer().map(drop);
                let _ = first.body(format!("{second:?}").as_bytes());
            }
            Misuse::TakeTwice => {
                let first = response.take_body().is_some();
                let second = response.take_body().is_some();
                let _ = response.body(format!("{first} {second}").as_bytes());
            }
            Misuse::TakeWithoutStream => {
                let taken = response.take_body().is_some();
                let _ = response.body(format!("{taken}").as_bytes());
            }
            Misuse::StreamWithoutTake => {
                let _ = response.body(b"not taken");
            }
            Misuse::StreamDeferWithoutTake => {
                let Ok(responder) = response.defer() else { return };
                thread::spawn(move || {
                    thread::sleep(Duration::from_millis(100));
                    let _ = responder.body(b"deferred, not taken");
                });
            }
            Misuse::TakeToThreadAnswerNow => {
                let body = response.take_body();
                let read_later = self.read_later.lock().unwrap().clone();
                thread::spawn(move || {
                    thread::sleep(Duration::from_millis(100));
                    let read = body.map_or(Ok(0), |mut body| {
                        let mut all = Vec::new();
                        body.read_to_end(&mut all).map(|_| all.len())
                    });
                    let _ = read_later.send(read);
                });
                let _ = response.body(b"answered now");
            }
            Misuse::Next => {
                let _ = response.body(b"next");
            }
        }
    }
}

/// Each misuse answers with a typed error or a sensible default, and the
/// request pipelined behind it (the body partly sent with the head, the
/// rest later) is answered: no hang, no lost bytes.
#[test]
fn response_misuse_is_typed_and_the_connection_serves_on() {
    let (read_later, reads) = mpsc::channel();
    let server = serve(options().workers(1), Misuser { read_later: Mutex::new(read_later) });
    let size = 100_000;
    let cases = [
        ("/defer-twice", "Err(CannotDefer)"),
        ("/take-twice", "true false"),
        ("/take-without-stream", "false"),
        ("/stream-without-take", "not taken"),
        ("/stream-defer-without-take", "deferred, not taken"),
        ("/take-to-thread", "answered now"),
    ];
    for (path, expected) in cases {
        let mut client = client(server.addr, 5);
        client.send(
            format!("POST {path} HTTP/1.1\r\nHost: t\r\nContent-Length: {size}\r\n\r\n0123456789")
                .as_bytes(),
        );
        let rest = {
            let mut stream = client.stream().try_clone().unwrap();
            thread::spawn(move || {
                thread::sleep(Duration::from_millis(50));
                stream.write_all(&vec![b'x'; size - 10]).unwrap();
                stream.write_all(b"GET /next HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
            })
        };
        let first = client.reply().unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(first.text(), expected, "{path}");
        let next = client.reply().unwrap_or_else(|e| panic!("{path}: the next request: {e}"));
        assert_eq!(next.text(), "next", "{path}");
        rest.join().unwrap();
    }
    let read = reads.recv_timeout(Duration::from_secs(5)).expect("the thread's read hung");
    assert_eq!(read.unwrap(), size, "the body read after the answer");
    server.stop();
}

/// Keeps each request's `Responder` and body for the test.
struct Keeps {
    kept: Mutex<mpsc::Sender<(Responder, Option<RequestBody>)>>,
}

impl Handler for Keeps {
    type State = ();

    fn head(&self, request: &Request<'_>) {
        request.stream_body();
    }

    fn respond(&self, (): (), response: &mut Response<'_>) {
        let body = response.take_body();
        let Ok(responder) = response.defer() else { return };
        let _ = self.kept.lock().unwrap().send((responder, body));
    }
}

/// A `Responder` and a `RequestBody` kept past the server's shutdown and
/// join (a worker pool that outlives the server): their use afterwards
/// fails with `Closed` / an `io::Error`, never blocks.
#[test]
fn a_responder_and_body_outliving_the_server_fail_instead_of_blocking() {
    let (kept, kept_rx) = mpsc::channel();
    let options = Options::new().workers(2).shutdown_timeout(Duration::from_millis(500));
    let server = Server::bind("127.0.0.1:0", options, Keeps { kept: Mutex::new(kept) }).unwrap();
    let addr = server.local_addr();
    let running = server.start().unwrap();
    let mut stream = connect(addr);
    stream.write_all(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc").unwrap();
    let (mut responder, body) = kept_rx.recv_timeout(Duration::from_secs(3)).expect("respond ran");
    running.handle().shutdown();
    let joined = {
        let (done, joined) = mpsc::channel();
        thread::spawn(move || {
            let _ = done.send(running.join());
        });
        joined.recv_timeout(Duration::from_secs(4))
    };
    assert!(matches!(joined, Ok(Ok(()))), "join: {joined:?}");
    let after = {
        let (done, after) = mpsc::channel();
        thread::spawn(move || {
            let mut all = Vec::new();
            let read = body.map(|mut body| body.read_to_end(&mut all).map_err(|e| e.kind()));
            let piece = vec![b'x'; 1 << 20];
            let writes: Vec<_> = (0..4).map(|_| responder.write_blocking(&piece)).collect();
            let _ = done.send((read, writes));
        });
        after.recv_timeout(Duration::from_secs(3))
    };
    let (read, writes) = after.expect("a read or write after the server stopped blocked for good");
    assert!(matches!(read, Some(Err(_))), "the body's read: {read:?}");
    assert_eq!(writes.last(), Some(&Err(ResponseError::Closed)), "{writes:?}");
    drop(stream);
}

// ---------------------------------------------------------------------------
// 9. Lifecycle
// ---------------------------------------------------------------------------

/// `Handle` cloned onto many threads, `shutdown` called many times (and
/// once before `start`), `local_addr` with port 0 and `ReusePort`: all
/// fine, and `join` returns promptly.
#[test]
fn handles_cloned_and_shutdown_many_times_and_port_zero() {
    let server =
        Server::bind("127.0.0.1:0", Options::new().workers(3).accept(Accept::ReusePort), Echo)
            .unwrap();
    let addr = server.local_addr();
    assert_ne!(addr.port(), 0);
    let running = server.start().unwrap();
    for i in 0..6 {
        assert_eq!(client(addr, 3).get(&format!("/c{i}")).text(), format!("/c{i}"));
    }
    let handle = running.handle().clone();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let handle = handle.clone();
            thread::spawn(move || {
                for _ in 0..100 {
                    handle.shutdown();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    assert!(handle.is_shutting_down());
    let (done, joined) = mpsc::channel();
    thread::spawn(move || {
        let _ = done.send(running.join());
    });
    let joined = joined.recv_timeout(Duration::from_secs(5)).expect("join hung");
    assert!(joined.is_ok(), "{joined:?}");
    assert!(TcpStream::connect(addr).is_err(), "still listening after join");
    handle.shutdown();

    // Shut down before it starts: start, then join at once.
    let server = Server::bind("127.0.0.1:0", Options::new().workers(2), Echo).unwrap();
    server.handle().shutdown();
    let running = server.start().unwrap();
    let (done, joined) = mpsc::channel();
    thread::spawn(move || {
        let _ = done.send(running.join());
    });
    let joined =
        joined.recv_timeout(Duration::from_secs(3)).expect("join after an early shutdown hung");
    assert!(joined.is_ok(), "{joined:?}");
}
