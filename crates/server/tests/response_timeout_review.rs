//! An outside review of `Options::response_timeout` (its attempts to
//! break it, kept as regression tests): who the timer blames, the client
//! (the I/O timeout) or the application (the response timeout), over
//! HTTP/1.1 and HTTP/2, on the native and the tower paths.
#![cfg(feature = "tokio")]

mod common;

use std::io::Read;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use common::h2raw::{self, Raw};
use common::{Client, closed_within, options, query_arg, serve};
use falconet_server::h2::frame::kind;
use falconet_server::{Handler, Options, Request, Response};

/// Routes:
/// `/slowread?ms=N` lends the body; a thread sleeps N ms, then reads it and answers its length.
/// `/never` holds its responder.
/// `/later?ms=N` answers `late` after N ms.
/// `/drip?ms=N&n=K` streams K pieces `p`, one every N ms.
/// `/credit?n=N&ms=M` writes N bytes, sleeps M ms, writes N more, finishes.
/// `/sync` (the worker reads the body) answers `sync <len>` at once.
struct App {
    kept: mpsc::Sender<falconet_server::Responder>,
}

struct St {
    target: String,
    len: usize,
}

impl Handler for App {
    type State = St;

    fn head(&self, request: &Request<'_>) -> St {
        if request.path() == "/slowread" {
            request.stream_body();
        }
        St { target: request.target().to_string(), len: 0 }
    }

    fn body(&self, state: &mut St, chunk: &[u8]) {
        state.len += chunk.len();
    }

    fn respond(&self, st: St, response: &mut Response<'_>) {
        let target = st.target;
        if target.starts_with("/sync") {
            let _ = response.body(format!("sync {}", st.len).as_bytes());
            return;
        }
        let body = response.take_body();
        let Ok(mut responder) = response.defer() else { return };
        if target.starts_with("/slowread") {
            let ms = query_arg(&target, "ms");
            thread::spawn(move || {
                thread::sleep(Duration::from_millis(ms));
                let mut read = Vec::new();
                match body.map(|mut body| body.read_to_end(&mut read)) {
                    Some(Ok(n)) => {
                        let _ = responder.body(n.to_string().as_bytes());
                    }
                    other => {
                        let _ = responder.status(falconet_server::Status::INTERNAL_SERVER_ERROR);
                        let _ = responder.body(format!("{other:?}").as_bytes());
                    }
                }
            });
        } else if target.starts_with("/never") {
            let _ = self.kept.send(responder);
        } else if target.starts_with("/later") {
            let ms = query_arg(&target, "ms");
            thread::spawn(move || {
                thread::sleep(Duration::from_millis(ms));
                let _ = responder.body(b"late");
            });
        } else if target.starts_with("/drip") {
            let (ms, n) = (query_arg(&target, "ms"), query_arg(&target, "n"));
            thread::spawn(move || {
                for _ in 0..n {
                    if responder.write_blocking(b"p").is_err() {
                        return;
                    }
                    thread::sleep(Duration::from_millis(ms));
                }
                let _ = responder.finish();
            });
        } else if target.starts_with("/credit") {
            let (n, ms) = (query_arg(&target, "n") as usize, query_arg(&target, "ms"));
            let kept = self.kept.clone();
            thread::spawn(move || {
                let _ = responder.write_blocking(&vec![b'x'; n]);
                thread::sleep(Duration::from_millis(ms));
                let _ = responder.write_blocking(&vec![b'y'; n]);
                let _ = kept.send(responder);
            });
        } else {
            let _ = responder.body(b"now");
        }
    }
}

fn app(options: Options) -> (common::TestServer<App>, mpsc::Receiver<falconet_server::Responder>) {
    let (kept, held) = mpsc::channel();
    (serve(options, App { kept }), held)
}

const SHORT: Duration = Duration::from_millis(400);

// ---------------------------------------------------------------- HTTP/1

/// The client sent the whole (small) body; the application waits three
/// I/O timeouts before reading it. The client owes nothing: it must be
/// answered (the response timeout is long), not 408.
#[test]
fn h1_lent_body_all_sent_app_reads_late_is_answered() {
    let (server, _held) =
        app(options().workers(1).io_timeout(SHORT).response_timeout(Some(Duration::from_secs(10))));
    let mut client = Client::connect(server.addr);
    client.send(
        b"POST /slowread?ms=1500 HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n0123456789",
    );
    let reply = client.reply().unwrap();
    assert_eq!((reply.status, reply.text().as_str()), (200, "10"), "{reply:?}");
}

/// The same with a chunked body: its end is for the reader to find, so
/// bytes the application has not looked at mean it is behind.
#[test]
fn h1_chunked_lent_body_all_sent_app_reads_late_is_answered() {
    let (server, _held) =
        app(options().workers(1).io_timeout(SHORT).response_timeout(Some(Duration::from_secs(10))));
    let mut client = Client::connect(server.addr);
    client.send(
        b"POST /slowread?ms=1500 HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n0\r\n\r\n",
    );
    let reply = client.reply().unwrap();
    assert_eq!((reply.status, reply.text().as_str()), (200, "10"), "{reply:?}");
}

/// Slowloris body to the worker's handler with the response timeout off: 408.
#[test]
fn h1_slowloris_body_worker_handler_408_with_response_timeout_off() {
    let (server, _held) = app(options().workers(1).io_timeout(SHORT).response_timeout(None));
    let mut client = Client::connect(server.addr);
    client.send(b"POST /sync HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc");
    let began = Instant::now();
    let reply = client.reply().unwrap();
    assert_eq!(reply.status, 408);
    assert!(began.elapsed() < Duration::from_secs(3));
}

/// Lent body, client silent mid-body, app not reading, response timeout off: 408.
#[test]
fn h1_lent_body_client_silent_app_not_reading_408() {
    let (server, _held) = app(options().workers(1).io_timeout(SHORT).response_timeout(None));
    let mut client = Client::connect(server.addr);
    client.send(b"POST /slowread?ms=100000 HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc");
    let began = Instant::now();
    let reply = client.reply().unwrap();
    assert_eq!(reply.status, 408);
    assert!(began.elapsed() < Duration::from_secs(3));
    drop(client);
    // Do not wait for the sleeping thread: nothing to join.
    std::mem::forget(server);
}

/// A client that never reads its responses is closed, response timeout off.
#[test]
fn h1_client_never_reads_is_closed() {
    let (server, _held) =
        app(options().workers(1).io_timeout(SHORT).response_timeout(None).min_response_rate(None));
    let mut client = Client::connect(server.addr);
    client.stream().set_nonblocking(true).unwrap();
    // A streamed body of many pieces and no reads.
    use std::io::Write;
    let request = b"GET /drip?ms=0&n=20000000 HTTP/1.1\r\nHost: t\r\n\r\n";
    client.reader.get_mut().write_all(request).unwrap();
    assert!(closed_within(&server, Duration::from_secs(6)).is_some(), "never closed");
}

/// A streamed response making progress (gaps below the response timeout,
/// total well above it) is not cut.
#[test]
fn h1_streamed_response_making_progress_not_cut() {
    let (server, _held) = app(options().workers(1).response_timeout(Some(SHORT)));
    let mut client = Client::connect(server.addr);
    let reply = client.get("/drip?ms=150&n=12");
    assert_eq!(reply.text(), "p".repeat(12));
    assert_eq!(client.get("/now").text(), "now");
}

/// A pipelined request behind a deferred one answered in time: both answered.
#[test]
fn h1_pipelined_behind_deferred_within_timeout() {
    let (server, _held) =
        app(options().workers(1).io_timeout(SHORT).response_timeout(Some(Duration::from_secs(1))));
    let mut client = Client::connect(server.addr);
    client.send(b"GET /later?ms=700 HTTP/1.1\r\nHost: t\r\n\r\nGET /later?ms=700 HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(client.reply().unwrap().text(), "late");
    assert_eq!(client.reply().unwrap().text(), "late");
}

/// 503 with a pipelined request behind: 503 with close, the next not
/// answered (connection closes cleanly, documented).
#[test]
fn h1_503_with_pipelined_request_behind() {
    let (server, held) = app(options().workers(1).response_timeout(Some(SHORT)));
    let mut client = Client::connect(server.addr);
    client.send(b"GET /never HTTP/1.1\r\nHost: t\r\n\r\nGET /now HTTP/1.1\r\nHost: t\r\n\r\n");
    let reply = client.reply().unwrap();
    assert_eq!(reply.status, 503);
    assert!(reply.closes());
    let rest = client.read_to_end().unwrap();
    assert!(rest.is_empty(), "{:?}", String::from_utf8_lossy(&rest));
    let mut responder = held.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(responder.write_blocking(b"x").is_err());
    assert!(responder.finish().is_err());
}

/// A started response's later writes fail after the cut (no panic), and the
/// server keeps serving.
#[test]
fn h1_cut_started_response_later_write_fails() {
    let (server, held) = app(options().workers(1).response_timeout(Some(SHORT)));
    let mut client = Client::connect(server.addr);
    client.send(b"GET /credit?n=10&ms=1500 HTTP/1.1\r\nHost: t\r\n\r\n");
    let seen = client.read_to_end().unwrap();
    assert!(seen.starts_with(b"HTTP/1.1 200"), "{:?}", String::from_utf8_lossy(&seen));
    let responder = held.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(responder.finish().is_err());
    let mut next = Client::connect(server.addr);
    assert_eq!(next.get("/now").text(), "now");
}

/// Graceful shutdown with the response timeout off and a handler that
/// never answers: shutdown_timeout ends it.
#[test]
fn shutdown_with_response_timeout_off_and_never_answering() {
    let (server, _held) = app(options()
        .workers(1)
        .response_timeout(None)
        .shutdown_timeout(Duration::from_millis(800)));
    let mut client = Client::connect(server.addr);
    client.send(b"GET /never HTTP/1.1\r\nHost: t\r\n\r\n");
    thread::sleep(Duration::from_millis(200));
    let began = Instant::now();
    let (done, finished) = mpsc::channel();
    thread::spawn(move || {
        server.stop();
        let _ = done.send(());
    });
    finished.recv_timeout(Duration::from_secs(8)).expect("join within the shutdown timeout");
    assert!(began.elapsed() < Duration::from_secs(4), "{:?}", began.elapsed());
}

// ---------------------------------------------------------------- HTTP/2

fn until(
    raw: &mut Raw,
    within: Duration,
    want: impl Fn(&h2raw::Frame) -> bool,
) -> Option<h2raw::Frame> {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        let frame = raw.next_frame(left)?;
        if want(&frame) {
            return Some(frame);
        }
    }
}

/// The client withholds credit (initial window 100 bytes, no
/// WINDOW_UPDATE): the response waits on the client, whose I/O timeout
/// must close it even with the response timeout off.
#[test]
fn h2_client_withholding_credit_is_closed_with_response_timeout_off() {
    let (server, _held) =
        app(options().workers(1).io_timeout(SHORT).response_timeout(None).min_response_rate(None));
    let mut raw = Raw::handshake(server.addr, &[(0x4, 100)]);
    raw.headers(1, &h2raw::req("GET", "/credit?n=100&ms=200"), true);
    let began = Instant::now();
    let ended = until(&mut raw, Duration::from_secs(6), |f| {
        f.kind == kind::GOAWAY || f.kind == kind::RST_STREAM
    });
    assert!(
        ended.is_some(),
        "nothing ended the stream or connection within 6 s (io_timeout 400 ms); elapsed {:?}",
        began.elapsed()
    );
}

/// Same, with a response timeout: the io timeout (client's) should fire,
/// not the response timeout (which blames the application and resets).
#[test]
fn h2_client_withholding_credit_is_the_clients_timeout() {
    let (server, _held) = app(options()
        .workers(1)
        .io_timeout(SHORT)
        .response_timeout(Some(Duration::from_secs(3)))
        .min_response_rate(None));
    let mut raw = Raw::handshake(server.addr, &[(0x4, 100)]);
    raw.headers(1, &h2raw::req("GET", "/credit?n=100&ms=200"), true);
    let began = Instant::now();
    let ended = until(&mut raw, Duration::from_secs(6), |f| {
        f.kind == kind::GOAWAY || f.kind == kind::RST_STREAM
    });
    let elapsed = began.elapsed();
    assert!(elapsed < Duration::from_secs(2), "ended by {ended:?} after {elapsed:?}");
}

/// A stream open (HEADERS without END_STREAM) and nothing more, response
/// timeout off: the I/O timeout ends it.
#[test]
fn h2_stream_open_no_exchange_closed() {
    let (server, _held) = app(options().workers(1).io_timeout(SHORT).response_timeout(None));
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &h2raw::req("POST", "/sync"), false);
    let ended = until(&mut raw, Duration::from_secs(5), |f| f.kind == kind::GOAWAY);
    assert!(ended.is_some());
}

/// The app takes longer than io_timeout to start reading a body larger
/// than the stream window: the client cannot send (no credit), the
/// application holds it back. It must be answered (response timeout long).
#[test]
fn h2_lent_body_held_back_by_app_is_answered() {
    let (server, _held) =
        app(options().workers(1).io_timeout(SHORT).response_timeout(Some(Duration::from_secs(10))));
    let addr = server.addr;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async move {
        let send = common::h2_client(addr).await;
        let mut ready = send.clone().ready().await.unwrap();
        let request = http::Request::builder()
            .method("POST")
            .uri("http://t/slowread?ms=1500")
            .body(())
            .unwrap();
        let (response, mut body) = ready.send_request(request, false).unwrap();
        let data = bytes::Bytes::from(vec![b'z'; 3 << 19]); // 1.5 MiB
        body.send_data(data, true).unwrap();
        let response = tokio::time::timeout(Duration::from_secs(8), response)
            .await
            .expect("an answer within 8 s")
            .expect("a response, not a GOAWAY");
        assert_eq!(response.status(), 200);
    });
}

/// HTTP/2 refused (503) stream; the app's responder then fails; a lent body
/// whose request has ended is still readable; the connection serves on.
#[test]
fn h2_503_then_responder_fails_and_connection_serves() {
    let (server, held) = app(options().workers(1).response_timeout(Some(SHORT)));
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &h2raw::req("GET", "/never"), true);
    let headers = until(&mut raw, Duration::from_secs(5), |f| f.stream == 1).expect("an answer");
    assert_eq!(headers.kind, kind::HEADERS);
    assert!(headers.end_stream(), "503 with END_STREAM");
    let mut responder = held.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(responder.write_blocking(b"x").is_err());
    assert!(responder.finish().is_err());
    // Nothing more for stream 1 (no frame for a removed stream, no second END_STREAM).
    raw.headers(3, &h2raw::req("GET", "/now"), true);
    let mut seen = Vec::new();
    while let Some(frame) = raw.next_frame(Duration::from_millis(800)) {
        seen.push((frame.kind, frame.stream, frame.flags));
    }
    assert!(seen.iter().all(|&(_, s, _)| s != 1), "{seen:?}");
    assert!(seen.iter().any(|&(k, s, _)| k == kind::HEADERS && s == 3), "{seen:?}");
}

/// An HTTP/2 stream with a lent body, request ended, app never answers:
/// 503, and the app reading the body afterwards gets it (or an error), not a hang.
#[test]
fn h2_lent_body_request_ended_expired() {
    let (server, _held) = app(options().workers(1).response_timeout(Some(SHORT)));
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &h2raw::req("POST", "/slowread?ms=1500"), false);
    raw.data(1, b"hello", true);
    let frame = until(&mut raw, Duration::from_secs(5), |f| f.stream == 1).expect("an answer");
    assert_eq!(frame.kind, kind::HEADERS);
    assert!(frame.end_stream());
    raw.headers(3, &h2raw::req("GET", "/now"), true);
    let mut seen = Vec::new();
    while let Some(frame) = raw.next_frame(Duration::from_millis(2000)) {
        seen.push((frame.kind, frame.stream, frame.flags));
    }
    assert!(seen.iter().all(|&(_, s, _)| s != 1), "{seen:?}");
    assert!(seen.iter().any(|&(k, s, _)| k == kind::HEADERS && s == 3), "{seen:?}");
}

/// HTTP/2: a stream streaming with progress (gaps below the timeout) while
/// another is with the application briefly: neither is cut.
#[test]
fn h2_streamed_with_progress_not_cut() {
    let (server, _held) = app(options().workers(1).response_timeout(Some(SHORT)));
    let addr = server.addr;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async move {
        let send = common::h2_client(addr).await;
        let request =
            |path: &str| http::Request::builder().uri(format!("http://t{path}")).body(()).unwrap();
        let mut a = send.clone().ready().await.unwrap();
        let (drip, _) = a.send_request(request("/drip?ms=150&n=12"), true).unwrap();
        let mut b = send.clone().ready().await.unwrap();
        let (later, _) = b.send_request(request("/later?ms=300"), true).unwrap();
        let drip = tokio::time::timeout(Duration::from_secs(5), drip).await.unwrap().unwrap();
        let mut body = drip.into_body();
        let mut got = Vec::new();
        while let Some(chunk) = body.data().await {
            let chunk = chunk.expect("not reset");
            let _ = body.flow_control().release_capacity(chunk.len());
            got.extend_from_slice(&chunk);
        }
        assert_eq!(got, b"p".repeat(12));
        let later = tokio::time::timeout(Duration::from_secs(5), later).await.unwrap().unwrap();
        assert_eq!(later.status(), 200);
    });
}

// ---------------------------------------------------------------- tower

#[cfg(feature = "tower")]
mod tower_path {
    use super::*;
    use axum::Router;
    use axum::routing::get;
    use falconet_server::tower::TowerHandler;
    use std::future::Future as _;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
    }

    fn router() -> Router {
        Router::new()
            .route(
                "/sleep",
                get(|| async {
                    tokio::time::sleep(Duration::from_millis(1500)).await;
                    "slept"
                }),
            )
            .route("/gaps", get(|| async { axum::body::Body::new(Gaps { sent: 0, sleep: None }) }))
            .route("/now", get(|| async { "now" }))
    }

    /// Three pieces, 1200 ms apart.
    struct Gaps {
        sent: u32,
        sleep: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
    }

    impl http_body::Body for Gaps {
        type Data = bytes::Bytes;
        type Error = std::convert::Infallible;
        fn poll_frame(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<http_body::Frame<bytes::Bytes>, Self::Error>>> {
            use std::task::Poll;
            if self.sent == 3 {
                return Poll::Ready(None);
            }
            if let Some(sleep) = &mut self.sleep
                && sleep.as_mut().poll(cx).is_pending()
            {
                return Poll::Pending;
            }
            self.sleep = Some(Box::pin(tokio::time::sleep(Duration::from_millis(1200))));
            let i = self.sent;
            self.sent += 1;
            Poll::Ready(Some(Ok(http_body::Frame::data(bytes::Bytes::from(format!("piece{i}"))))))
        }
    }

    #[test]
    fn axum_handler_slower_than_response_timeout_is_503() {
        let rt = runtime();
        let server = serve(
            Options::new().workers(1).response_timeout(Some(SHORT)),
            TowerHandler::new(router(), rt.handle().clone()),
        );
        let mut client = Client::connect(server.addr);
        let began = Instant::now();
        let reply = client.get("/sleep");
        assert_eq!(reply.status, 503, "{reply:?}");
        assert!(began.elapsed() < Duration::from_millis(1400));
        let mut next = Client::connect(server.addr);
        assert_eq!(next.get("/now").text(), "now");
        // Let the task finish and write into a forgotten responder.
        thread::sleep(Duration::from_millis(1500));
        let mut next = Client::connect(server.addr);
        assert_eq!(next.get("/now").text(), "now");
    }

    #[test]
    fn axum_streamed_body_with_gaps_longer_than_timeout_is_cut() {
        let rt = runtime();
        let server = serve(
            Options::new().workers(1).response_timeout(Some(SHORT)),
            TowerHandler::new(router(), rt.handle().clone()),
        );
        let mut client = Client::connect(server.addr);
        client.send(b"GET /gaps HTTP/1.1\r\nHost: t\r\n\r\n");
        let began = Instant::now();
        let seen = client.read_to_end().unwrap();
        let seen = String::from_utf8_lossy(&seen);
        eprintln!("gaps over h1: {:?} after {:?}", seen, began.elapsed());
        assert!(seen.starts_with("HTTP/1.1 200"), "{seen}");
        assert!(began.elapsed() < Duration::from_millis(1200));
        let mut next = Client::connect(server.addr);
        assert_eq!(next.get("/now").text(), "now");
    }

    #[test]
    fn axum_handler_slower_over_h2_is_503() {
        let rt = runtime();
        let server = serve(
            Options::new().workers(1).response_timeout(Some(SHORT)),
            TowerHandler::new(router(), rt.handle().clone()),
        );
        let mut raw = Raw::handshake(server.addr, &[]);
        raw.headers(1, &h2raw::req("GET", "/sleep"), true);
        raw.headers(3, &h2raw::req("GET", "/gaps"), true);
        let mut seen = Vec::new();
        while let Some(frame) = raw.next_frame(Duration::from_millis(3000)) {
            seen.push((frame.kind, frame.stream, frame.flags, frame.payload.len()));
        }
        eprintln!("h2 tower: {seen:?}");
        let ends = |id| {
            seen.iter()
                .filter(|&&(k, s, f, _)| {
                    s == id
                        && ((k == kind::HEADERS || k == kind::DATA) && f & 1 != 0
                            || k == kind::RST_STREAM)
                })
                .count()
        };
        assert_eq!(ends(1), 1, "{seen:?}");
        assert_eq!(ends(3), 1, "{seen:?}");
        assert!(seen.iter().all(|&(k, _, _, _)| k != kind::GOAWAY), "{seen:?}");
    }
}

// ---------------------------------------------------------------- refined

/// Defect B, on raw frames: the application has not yet read a lent body
/// larger than the stream's window (1 MiB); the client has used all its
/// credit and cannot send the rest. The server blames the client: after
/// io_timeout it ends the whole connection with GOAWAY.
#[test]
fn h2_raw_lent_body_held_back_by_app_goaway() {
    let (server, _held) =
        app(options().workers(1).io_timeout(SHORT).response_timeout(Some(Duration::from_secs(10))));
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &h2raw::req("POST", "/slowread?ms=1500"), false);
    let piece = vec![b'z'; 16384];
    for _ in 0..64 {
        raw.data(1, &piece, false); // 1 MiB: the stream's whole window
    }
    let began = Instant::now();
    let mut seen = Vec::new();
    let mut ended = false;
    while let Some(frame) = raw.next_frame(Duration::from_secs(4)) {
        let code = if frame.kind == kind::GOAWAY { Some(frame.code()) } else { None };
        seen.push((began.elapsed().as_millis(), frame.kind, frame.stream, frame.flags, code));
        if frame.kind == kind::WINDOW_UPDATE && frame.stream == 1 && !ended {
            // The application read: the client sends the rest.
            raw.data(1, b"tail", true);
            ended = true;
        }
        if frame.kind == kind::GOAWAY || (frame.kind == kind::HEADERS && frame.stream == 1) {
            break;
        }
    }
    let last = seen.last().copied();
    assert!(
        matches!(last, Some((_, k, 1, _, _)) if k == kind::HEADERS),
        "frames (ms, kind, stream, flags, goaway code): {seen:?}"
    );
}

/// Defect D: a started HTTP/1 response cut by the response timeout: the
/// responder's later writes still succeed (the CHANGELOG says they fail)
/// while the connection lingers, and write_blocking of more than the pipe
/// holds blocks until the linger ends.
#[test]
fn h1_cut_response_responder_writes_do_not_fail() {
    let (server, held) = app(options()
        .workers(1)
        .response_timeout(Some(SHORT))
        .linger_timeout(Duration::from_secs(5)));
    let mut client = Client::connect(server.addr);
    client.send(b"GET /credit?n=10&ms=1000 HTTP/1.1\r\nHost: t\r\n\r\n");
    // The client stays connected (does not close its side).
    let mut head = [0u8; 12];
    client.reader.read_exact(&mut head).unwrap();
    let mut responder = held.recv_timeout(Duration::from_secs(5)).unwrap();
    // ~1 s after the cut at ~400 ms.
    let closed = responder.is_closed();
    let wrote = responder.write_blocking(b"after the cut");
    let began = Instant::now();
    let big = responder.write_blocking(&vec![b'q'; 1 << 20]);
    let big_more = responder.write_blocking(b"more");
    eprintln!(
        "is_closed {closed}, write {wrote:?}, 1 MiB write {big:?} then {big_more:?} returned after {:?}",
        began.elapsed()
    );
    assert!(closed || wrote.is_err(), "the responder's later write should fail: {wrote:?}");
}

/// 100-continue over HTTP/1 with a deferred answer slower than io_timeout
/// but within response_timeout: answered.
#[test]
fn h1_100_continue_deferred_slower_than_io() {
    let (server, _held) =
        app(options().workers(1).io_timeout(SHORT).response_timeout(Some(Duration::from_secs(3))));
    let mut client = Client::connect(server.addr);
    client.send(b"POST /later?ms=1200 HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n");
    let cont = client.reply().unwrap();
    assert_eq!(cont.status, 100);
    client.send(b"abc");
    let reply = client.reply().unwrap();
    assert_eq!((reply.status, reply.text().as_str()), (200, "late"));
}
