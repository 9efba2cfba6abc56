//! Adversarial review: cancellation and drop at every await point a tokio
//! user can hit (a `timeout` around a read or a write, a `select!`, an
//! aborted task, a dropped runtime), on falconet-server's public async
//! surface: `RequestBody` as `AsyncRead`, `tower::Body` as
//! `http_body::Body`, `Responder::write`, `Responder::closed`. All held
//! (2026-12-06) but one: `closed()` woke only its last waiter (one waker
//! kept); now each `closed()` future keeps its own slot.
#![cfg(feature = "tokio")]

mod common;

use std::io::Write;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Client, serve};
use falconet_server::{Handler, Options, Request, RequestBody, Responder, Response};
use tokio::io::AsyncReadExt;
use tokio::time::timeout;

type Parked = (Responder, Option<RequestBody>);

/// Hands every request's responder (and its body, for `/body...`) to the
/// test, which answers from its own runtime.
struct Park {
    tx: Mutex<mpsc::Sender<Parked>>,
}

fn park() -> (Park, mpsc::Receiver<Parked>) {
    let (tx, rx) = mpsc::channel();
    (Park { tx: Mutex::new(tx) }, rx)
}

impl Handler for Park {
    type State = ();

    fn head(&self, request: &Request<'_>) {
        if request.path().starts_with("/body") {
            request.stream_body();
        }
    }

    fn respond(&self, (): (), response: &mut Response<'_>) {
        let body = response.take_body();
        let responder = response.defer().unwrap();
        let _ = self.tx.lock().unwrap().send((responder, body));
    }
}

/// A one-worker server whose handler parks each request (its responder
/// and body) in the channel returned.
fn parking_server() -> (common::TestServer<Park>, mpsc::Receiver<Parked>) {
    let (park, rx) = park();
    (serve(Options::new().workers(1), park), rx)
}

fn rt(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap()
}

fn byte_at(i: usize) -> u8 {
    (i % 251) as u8
}

fn parked(rx: &mpsc::Receiver<Parked>) -> Parked {
    rx.recv_timeout(Duration::from_secs(10)).expect("the handler never ran")
}

/// Sends the body `bytes` on a clone of `stream` in `n` pieces, one every
/// `every` (chunked framing if asked).
fn trickle_body(
    stream: &std::net::TcpStream,
    bytes: Vec<u8>,
    pieces: usize,
    every: Duration,
    chunked: bool,
) -> std::thread::JoinHandle<()> {
    let mut stream = stream.try_clone().unwrap();
    std::thread::spawn(move || {
        let size = bytes.len().div_ceil(pieces);
        for piece in bytes.chunks(size) {
            std::thread::sleep(every);
            if chunked {
                stream.write_all(format!("{:x}\r\n", piece.len()).as_bytes()).unwrap();
                stream.write_all(piece).unwrap();
                stream.write_all(b"\r\n").unwrap();
            } else {
                stream.write_all(piece).unwrap();
            }
        }
        if chunked {
            stream.write_all(b"0\r\n\r\n").unwrap();
        }
    })
}

/// The connection still serves a next request (the body was drained and
/// the parser resumed).
fn next_request_answered(client: &mut Client, rx: &mpsc::Receiver<Parked>) {
    client.send(b"GET /next HTTP/1.1\r\nHost: x\r\n\r\n");
    let (responder, _) = parked(rx);
    responder.body(b"next").unwrap();
    let reply = client.reply().expect("the next request's reply");
    assert_eq!((reply.status, reply.text()), (200, "next".to_string()));
}

/// `AsyncReadExt::read` is cancel-safe per tokio; on a `RequestBody` a
/// read dropped by a `timeout` loses and duplicates nothing, whether the
/// body then goes on with async reads or with a blocking `Read` on
/// another thread, for a `Content-Length` and a chunked body.
#[test]
fn body_reads_cancelled_by_timeouts_lose_and_duplicate_nothing() {
    for chunked in [false, true] {
        for blocking_after in [false, true] {
            let (server, rx) = parking_server();
            let mut client = Client::connect(server.addr);
            let len = 200_000;
            let body: Vec<u8> = (0..len).map(byte_at).collect();
            let head = if chunked {
                "POST /body HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".to_string()
            } else {
                format!("POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: {len}\r\n\r\n")
            };
            client.send(head.as_bytes());
            let (responder, request_body) = parked(&rx);
            let mut request_body = request_body.expect("a body");
            let sender =
                trickle_body(client.stream(), body.clone(), 40, Duration::from_millis(5), chunked);
            let runtime = rt(2);
            let (got, cancels, request_body) = runtime.block_on(async move {
                let mut got = Vec::new();
                let mut cancels = 0;
                let mut buf = vec![0u8; 3000];
                let deadline = Instant::now() + Duration::from_secs(20);
                loop {
                    assert!(Instant::now() < deadline, "the body never ended");
                    match timeout(
                        Duration::from_micros(700),
                        AsyncReadExt::read(&mut request_body, &mut buf),
                    )
                    .await
                    {
                        Err(_) => {
                            cancels += 1;
                            if blocking_after && cancels > 3 {
                                break;
                            }
                        }
                        Ok(Ok(0)) => break,
                        Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
                        Ok(Err(e)) => panic!("read failed after {} bytes: {e}", got.len()),
                    }
                }
                (got, cancels, request_body)
            });
            let got = if blocking_after {
                // The rest, with std's Read on a plain thread, after the
                // cancelled async read.
                std::thread::spawn(move || {
                    let mut request_body = request_body;
                    let mut got = got;
                    std::io::Read::read_to_end(&mut request_body, &mut got)
                        .expect("blocking read after cancel");
                    got
                })
                .join()
                .unwrap()
            } else {
                drop(request_body);
                got
            };
            sender.join().unwrap();
            assert!(cancels > 0, "no read was cancelled: the test proves nothing");
            assert_eq!(got.len(), body.len(), "chunked={chunked} blocking_after={blocking_after}");
            assert!(got == body, "bytes reordered or duplicated (chunked={chunked})");
            responder.body(b"ok").unwrap();
            let reply = client.reply().expect("reply");
            assert_eq!(reply.status, 200);
            next_request_answered(&mut client, &rx);
        }
    }
}

/// A task reading the body is aborted while its read waits
/// (`JoinHandle::abort`); the responder, elsewhere, answers; the body's
/// rest (sent after the abort) is drained and the connection serves the
/// next request.
#[test]
fn aborted_body_task_then_answer_keeps_the_connection() {
    let (server, rx) = parking_server();
    let mut client = Client::connect(server.addr);
    client.send(b"POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab");
    let (responder, body) = parked(&rx);
    let mut body = body.expect("a body");
    let runtime = rt(1);
    let task = runtime.spawn(async move {
        let mut all = Vec::new();
        AsyncReadExt::read_to_end(&mut body, &mut all).await.map(|_| all)
    });
    std::thread::sleep(Duration::from_millis(100));
    task.abort();
    let aborted = runtime.block_on(task);
    assert!(aborted.unwrap_err().is_cancelled());
    client.send(b"cdefghij");
    responder.body(b"done").unwrap();
    let reply = client.reply().expect("reply");
    assert_eq!((reply.status, reply.text()), (200, "done".to_string()));
    next_request_answered(&mut client, &rx);
}

/// `Responder::write` documents: the wait comes before the piece, which
/// goes in whole "or not at all, if the future is dropped while it
/// waits". A `timeout` around writes to a client that does not read: the
/// piece whose write timed out is absent, every other piece arrives once,
/// in order, and the response stays well framed.
#[test]
fn responder_write_cancelled_while_paused_drops_exactly_that_piece() {
    let (server, rx) = parking_server();
    let mut client = Client::connect(server.addr);
    client.send(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n");
    let (mut responder, _) = parked(&rx);
    let runtime = rt(1);
    let piece = |i: usize| format!("<{i:06}>").repeat(8 * 1024).into_bytes(); // 64 KiB
    let (sent, cancelled, mut responder) = runtime.block_on(async move {
        let mut sent = Vec::new();
        for i in 0..2000 {
            match timeout(Duration::from_millis(300), responder.write(&piece(i))).await {
                Ok(result) => {
                    result.expect("write");
                    sent.push(i);
                }
                Err(_) => return (sent, i, responder),
            }
        }
        panic!("the writes never waited (no back-pressure?)");
    });
    let reader = std::thread::spawn(move || client.reply());
    let more: Vec<usize> = (cancelled + 1..cancelled + 6).collect();
    runtime.block_on(async {
        for &i in &more {
            timeout(Duration::from_secs(20), responder.write(&piece(i)))
                .await
                .expect("a write after the cancelled one hung")
                .expect("write");
        }
    });
    responder.finish().unwrap();
    let reply = reader.join().unwrap().expect("a well-framed reply");
    assert_eq!(reply.status, 200);
    let expected: Vec<usize> = sent.iter().chain(more.iter()).copied().collect();
    let got: Vec<usize> = reply
        .body
        .chunks(64 * 1024)
        .map(|c| {
            let text = std::str::from_utf8(&c[1..7]).unwrap();
            assert!(c == piece(text.parse().unwrap()), "a torn piece");
            text.parse().unwrap()
        })
        .collect();
    assert_eq!(reply.body.len() % (64 * 1024), 0);
    assert!(!got.contains(&cancelled), "the cancelled piece {cancelled} went out");
    assert_eq!(got, expected);
}

/// A runtime dropped while its tasks hold a pending body read and the
/// responder: the client gets the documented `500` (nothing was sent),
/// and the server keeps serving.
#[test]
fn runtime_dropped_with_a_pending_body_read_and_a_responder() {
    let (server, rx) = parking_server();
    let mut client = Client::connect(server.addr);
    client.send(b"POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab");
    let (responder, body) = parked(&rx);
    let mut body = body.expect("a body");
    let runtime = rt(1);
    runtime.spawn(async move {
        let _responder = responder;
        let mut all = Vec::new();
        let _ = AsyncReadExt::read_to_end(&mut body, &mut all).await;
        std::future::pending::<()>().await;
    });
    std::thread::sleep(Duration::from_millis(100));
    drop(runtime);
    let reply = client.reply().expect("an answer for the dropped responder");
    assert_eq!(reply.status, 500);
    let mut other = Client::connect(server.addr);
    other.send(b"GET /other HTTP/1.1\r\nHost: x\r\n\r\n");
    let (responder, _) = parked(&rx);
    responder.body(b"alive").unwrap();
    assert_eq!(other.reply().expect("reply").text(), "alive");
}

/// HTTP/2: reads cancelled by timeouts release no credit twice and lose
/// none: an upload many windows long goes through (lost credit would
/// stall it), every byte once.
#[test]
fn h2_body_reads_cancelled_by_timeouts_keep_the_window_flowing() {
    let (server, rx) = parking_server();
    let addr = server.addr;
    let len = 1_000_000;
    let body: Vec<u8> = (0..len).map(byte_at).collect();
    let upload = body.clone();
    let client = std::thread::spawn(move || {
        let rt = common::current_thread();
        rt.block_on(async move {
            let mut send = common::h2_client(addr).await;
            let request = http::Request::post("http://x/body").body(()).unwrap();
            let (response, mut stream) = send.send_request(request, false).unwrap();
            for piece in upload.chunks(10_000) {
                stream.send_data(bytes::Bytes::copy_from_slice(piece), false).unwrap();
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            stream.send_data(bytes::Bytes::new(), true).unwrap();
            let response = timeout(Duration::from_secs(30), response)
                .await
                .expect("the upload stalled (lost flow credit?)")
                .unwrap();
            let mut body = response.into_body();
            let mut got = Vec::new();
            while let Some(data) = body.data().await {
                let data = data.unwrap();
                let _ = body.flow_control().release_capacity(data.len());
                got.extend_from_slice(&data);
            }
            String::from_utf8(got).unwrap()
        })
    });
    let (responder, request_body) = parked(&rx);
    let mut request_body = request_body.expect("a body");
    let runtime = rt(2);
    let (got, cancels) = runtime.block_on(async move {
        let mut got = Vec::new();
        let mut cancels = 0;
        let mut buf = vec![0u8; 7000];
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            assert!(Instant::now() < deadline, "the body never ended after {} bytes", got.len());
            match timeout(
                Duration::from_micros(500),
                AsyncReadExt::read(&mut request_body, &mut buf),
            )
            .await
            {
                Err(_) => cancels += 1,
                Ok(Ok(0)) => break,
                Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
                Ok(Err(e)) => panic!("read failed after {} bytes: {e}", got.len()),
            }
        }
        (got, cancels)
    });
    assert!(cancels > 0, "no read was cancelled");
    assert_eq!(got.len(), body.len());
    assert!(got == body);
    responder.body(format!("len={}", got.len()).as_bytes()).unwrap();
    assert_eq!(client.join().unwrap(), format!("len={len}"));
}

/// The tower path: `BodyExt::frame()` (whose future borrows the body) in
/// a `timeout`, again and again, as a service that reads with a deadline
/// writes it: every byte once, in order.
#[cfg(feature = "tower")]
#[test]
fn tower_body_frames_cancelled_by_timeouts_lose_nothing() {
    use axum::Router;
    use axum::routing::post;
    use http_body_util::BodyExt;

    let app = Router::new().route(
        "/t",
        post(|request: axum::extract::Request| async move {
            let mut body = request.into_body();
            let mut got = Vec::new();
            let mut cancels = 0u32;
            loop {
                match timeout(Duration::from_micros(700), body.frame()).await {
                    Err(_) => cancels += 1,
                    Ok(None) => break,
                    Ok(Some(Ok(frame))) => {
                        if let Ok(data) = frame.into_data() {
                            got.extend_from_slice(&data);
                        }
                    }
                    Ok(Some(Err(e))) => return format!("error {e} after {}", got.len()),
                }
            }
            let expected: Vec<u8> = (0..got.len()).map(byte_at).collect();
            format!("len={} intact={} cancels>0={}", got.len(), got == expected, cancels > 0)
        }),
    );
    let (server, _rt) = common::serve_tower(Options::new().workers(1), app);
    for chunked in [false, true] {
        let mut client = Client::connect(server.addr);
        let len = 150_000;
        let body: Vec<u8> = (0..len).map(byte_at).collect();
        let head = if chunked {
            "POST /t HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".to_string()
        } else {
            format!("POST /t HTTP/1.1\r\nHost: x\r\nContent-Length: {len}\r\n\r\n")
        };
        client.send(head.as_bytes());
        let sender = trickle_body(client.stream(), body, 30, Duration::from_millis(5), chunked);
        let reply = client.reply().expect("reply");
        sender.join().unwrap();
        assert_eq!(
            (reply.status, reply.text()),
            (200, format!("len={len} intact=true cancels>0=true")),
            "chunked={chunked}"
        );
    }
}

/// The pattern `closed()`'s docs suggest, around a body read: `select!`
/// between `body.read` and `responder.closed()` while an HTTP/2 client
/// resets its stream mid-body. One of them ends within seconds (the read
/// with `ConnectionReset`, or `closed()`), the losing one is dropped, and
/// the connection serves its next stream.
#[test]
fn h2_select_read_against_closed_when_the_client_resets() {
    let (server, rx) = parking_server();
    let addr = server.addr;
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let client = std::thread::spawn(move || {
        let rt = common::current_thread();
        rt.block_on(async move {
            let mut send = common::h2_client(addr).await;
            let request = http::Request::post("http://x/body").body(()).unwrap();
            let (response, mut stream) = send.send_request(request, false).unwrap();
            stream.send_data(bytes::Bytes::from_static(b"partial"), false).unwrap();
            tokio::task::spawn_blocking(move || go_rx.recv().unwrap()).await.unwrap();
            // The client gives up: RST_STREAM(CANCEL).
            stream.send_reset(h2::Reason::CANCEL);
            drop(response);
            tokio::task::spawn_blocking(move || done_rx.recv().unwrap()).await.unwrap();
            // The connection still works.
            send = send.ready().await.expect("the connection still takes streams");
            let request = http::Request::get("http://x/next").body(()).unwrap();
            let (response, _) = send.send_request(request, true).unwrap();
            let response = timeout(Duration::from_secs(10), response).await.unwrap().unwrap();
            let mut body = response.into_body();
            let mut got = Vec::new();
            while let Some(data) = body.data().await {
                got.extend_from_slice(&data.unwrap());
            }
            String::from_utf8(got).unwrap()
        })
    });
    let (responder, body) = parked(&rx);
    let mut body = body.expect("a body");
    let runtime = rt(2);
    let outcome = runtime.block_on(async {
        let mut buf = vec![0u8; 1000];
        let mut got = 0;
        let mut told = false;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            if got >= 7 && !told {
                go_tx.send(()).unwrap();
                told = true;
            }
            tokio::select! {
                read = AsyncReadExt::read(&mut body, &mut buf) => match read {
                    Ok(0) => return format!("a clean end after a reset ({got} bytes)"),
                    Ok(n) => got += n,
                    Err(e) => return format!("read error {:?}", e.kind()),
                },
                () = responder.closed() => return "closed".to_string(),
                () = tokio::time::sleep_until(deadline) => return "hung".to_string(),
            }
        }
    });
    assert!(
        outcome == "closed" || outcome == "read error ConnectionReset",
        "after the client's reset: {outcome}"
    );
    drop((body, responder));
    done_tx.send(()).unwrap();
    let (next, _) = parked(&rx);
    next.body(b"next").unwrap();
    assert_eq!(client.join().unwrap(), "next");
}

/// `Running::stopped()` in a `select!`/`timeout` that gives it up while
/// the server runs, then awaited again after `shutdown`: the dropped
/// wait's waker does not swallow the last worker's wake.
#[test]
fn stopped_cancelled_then_awaited_again_after_shutdown() {
    let (park, _rx) = park();
    let server = falconet_server::Server::bind("127.0.0.1:0", Options::new().workers(2), park)
        .expect("bind");
    let handle = server.handle();
    let mut running = server.start().expect("start");
    let runtime = rt(1);
    runtime.block_on(async {
        for _ in 0..3 {
            assert!(timeout(Duration::from_millis(30), running.stopped()).await.is_err());
        }
    });
    handle.shutdown();
    runtime
        .block_on(async { timeout(Duration::from_secs(10), running.stopped()).await })
        .expect("stopped() after a cancelled one never resolved")
        .expect("workers stopped cleanly");
}

/// `Responder::write` cancelled while an HTTP/2 stream's window is spent
/// (the client does not release capacity): that piece is absent, every
/// other arrives once, in order, and the stream ends cleanly.
#[test]
fn h2_responder_write_cancelled_at_a_spent_window_drops_exactly_that_piece() {
    let (server, rx) = parking_server();
    let addr = server.addr;
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let client = std::thread::spawn(move || {
        let rt = common::current_thread();
        rt.block_on(async move {
            let mut send = common::h2_client(addr).await;
            let request = http::Request::get("http://x/stream").body(()).unwrap();
            let (response, _) = send.send_request(request, true).unwrap();
            let response = timeout(Duration::from_secs(10), response).await.unwrap().unwrap();
            tokio::task::spawn_blocking(move || go_rx.recv().unwrap()).await.unwrap();
            let mut body = response.into_body();
            let mut got = Vec::new();
            while let Some(data) = timeout(Duration::from_secs(20), body.data()).await.unwrap() {
                let data = data.unwrap();
                let _ = body.flow_control().release_capacity(data.len());
                got.extend_from_slice(&data);
            }
            got
        })
    });
    let (mut responder, _) = parked(&rx);
    let piece = |i: usize| format!("<{i:06}>").repeat(2 * 1024).into_bytes(); // 16 KiB
    let runtime = rt(1);
    let (sent, cancelled) = runtime.block_on(async {
        let mut sent = Vec::new();
        for i in 0..2000 {
            match timeout(Duration::from_millis(300), responder.write(&piece(i))).await {
                Ok(result) => {
                    result.expect("write");
                    sent.push(i);
                }
                Err(_) => return (sent, i),
            }
        }
        panic!("the writes never waited");
    });
    go_tx.send(()).unwrap();
    let more: Vec<usize> = (cancelled + 1..cancelled + 6).collect();
    runtime.block_on(async {
        for &i in &more {
            timeout(Duration::from_secs(20), responder.write(&piece(i)))
                .await
                .expect("a write after the cancelled one hung")
                .expect("write");
        }
    });
    responder.finish().unwrap();
    let body = client.join().unwrap();
    assert_eq!(body.len() % (16 * 1024), 0, "a torn piece");
    let got: Vec<usize> = body
        .chunks(16 * 1024)
        .map(|c| {
            let i: usize = std::str::from_utf8(&c[1..7]).unwrap().parse().unwrap();
            assert!(c == piece(i), "a torn piece");
            i
        })
        .collect();
    let expected: Vec<usize> = sent.iter().chain(more.iter()).copied().collect();
    assert!(!got.contains(&cancelled), "the cancelled piece {cancelled} went out");
    assert_eq!(got, expected);
}

/// The tower path: a service reads part of its body with `frame()` in a
/// `timeout`, gives up at the first timeout (drops the body mid-stream)
/// and answers; the body's rest, sent afterwards, is drained and the
/// connection serves the next request.
#[cfg(feature = "tower")]
#[test]
fn tower_body_dropped_after_a_cancelled_frame_keeps_the_connection() {
    use axum::Router;
    use axum::routing::{get, post};
    use http_body_util::BodyExt;

    let app = Router::new()
        .route(
            "/t",
            post(|request: axum::extract::Request| async move {
                let mut body = request.into_body();
                let mut got = 0;
                loop {
                    match timeout(Duration::from_millis(50), body.frame()).await {
                        Err(_) => return format!("gave up after {got}"),
                        Ok(Some(Ok(frame))) => {
                            got += frame.into_data().map(|d| d.len()).unwrap_or(0);
                        }
                        Ok(other) => return format!("ended early: {:?}", other.is_none()),
                    }
                }
            }),
        )
        .route("/next", get(|| async { "next" }));
    let (server, _rt) = common::serve_tower(Options::new().workers(1), app);
    let mut client = Client::connect(server.addr);
    client.send(b"POST /t HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n0123456789");
    let reply = client.reply().expect("reply");
    assert_eq!((reply.status, reply.text()), (200, "gave up after 10".to_string()));
    client.send(b"abcdefghij");
    let reply = client.get("/next");
    assert_eq!((reply.status, reply.text()), (200, "next".to_string()));
}

/// `closed()` documents "it closed (a reset, ...)": an HTTP/1.1 client
/// that resets its connection while the application waits on `closed()`
/// alone (nothing written yet, no `response_timeout`) is noticed.
#[test]
fn h1_closed_resolves_on_a_client_reset_without_a_write() {
    let (server, rx) = parking_server();
    let stream = std::net::TcpStream::connect(server.addr).unwrap();
    (&stream).write_all(b"GET /wait HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let (responder, _) = parked(&rx);
    socket2::SockRef::from(&stream).set_linger(Some(Duration::ZERO)).unwrap();
    drop(stream);
    let runtime = rt(1);
    let began = Instant::now();
    let seen =
        runtime.block_on(async { timeout(Duration::from_secs(5), responder.closed()).await });
    assert!(seen.is_ok(), "closed() never saw the reset ({:?})", began.elapsed());
    assert!(responder.is_closed());
}

/// HTTP/2: a body whose read was cancelled while it waited, then given
/// more bytes and dropped unread, gives their credit back to the
/// connection: a second stream's upload, larger than the connection
/// window, goes through.
#[test]
fn h2_body_dropped_after_a_cancelled_read_returns_its_credit() {
    let (server, rx) = parking_server();
    let addr = server.addr;
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (sent_tx, sent_rx) = mpsc::channel::<()>();
    let (dropped_tx, dropped_rx) = mpsc::channel::<()>();
    let client = std::thread::spawn(move || {
        let rt = common::current_thread();
        rt.block_on(async move {
            let send = common::h2_client(addr).await;
            let mut first_send = send.clone();
            let request = http::Request::post("http://x/body1").body(()).unwrap();
            let (_first, mut first) = first_send.send_request(request, false).unwrap();
            first.send_data(bytes::Bytes::from_static(b"hello"), false).unwrap();
            tokio::task::spawn_blocking(move || go_rx.recv().unwrap()).await.unwrap();
            first.reserve_capacity(60_000);
            first.send_data(bytes::Bytes::from(vec![b'u'; 60_000]), false).unwrap();
            tokio::time::sleep(Duration::from_millis(300)).await;
            sent_tx.send(()).unwrap();
            tokio::task::spawn_blocking(move || dropped_rx.recv().unwrap()).await.unwrap();
            // A second stream uploads well past the connection's window.
            let mut send = send.ready().await.unwrap();
            let request = http::Request::post("http://x/body2").body(()).unwrap();
            let (response, mut stream) = send.send_request(request, false).unwrap();
            for piece in vec![b'v'; 400_000].chunks(16_000) {
                stream.send_data(bytes::Bytes::copy_from_slice(piece), false).unwrap();
            }
            stream.send_data(bytes::Bytes::new(), true).unwrap();
            let response = timeout(Duration::from_secs(10), response)
                .await
                .expect("the second upload stalled: the dropped body's credit was lost")
                .unwrap();
            let mut body = response.into_body();
            let mut got = Vec::new();
            while let Some(data) = body.data().await {
                got.extend_from_slice(&data.unwrap());
            }
            drop(first);
            String::from_utf8(got).unwrap()
        })
    });
    let (first_responder, first_body) = parked(&rx);
    let mut first_body = first_body.expect("a body");
    let runtime = rt(2);
    runtime.block_on(async {
        let mut buf = vec![0u8; 100];
        let n = AsyncReadExt::read(&mut first_body, &mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"hello");
        assert!(
            timeout(Duration::from_millis(50), AsyncReadExt::read(&mut first_body, &mut buf))
                .await
                .is_err()
        );
    });
    go_tx.send(()).unwrap();
    sent_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    drop(first_body);
    dropped_tx.send(()).unwrap();
    let (second_responder, second_body) = parked(&rx);
    let mut second_body = second_body.expect("a body");
    let len = runtime.block_on(async {
        let mut all = Vec::new();
        timeout(Duration::from_secs(15), AsyncReadExt::read_to_end(&mut second_body, &mut all))
            .await
            .expect("the second body stalled")
            .unwrap();
        all.len()
    });
    second_responder.body(format!("len={len}").as_bytes()).unwrap();
    assert_eq!(client.join().unwrap(), "len=400000");
    drop(first_responder);
}

/// `Expect: 100-continue`: the application's first read asks for the
/// `100`, a `timeout` cancels it before the client sends, and the
/// application drops the body and answers. The client that got the 100
/// and sent its body afterwards gets the answer, and the connection
/// serves the next request (the late body was drained, not parsed as a
/// request).
#[test]
fn expect_continue_read_cancelled_then_body_dropped() {
    let (server, rx) = parking_server();
    let mut client = Client::connect(server.addr);
    client.send(
        b"POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n",
    );
    let (responder, body) = parked(&rx);
    let mut body = body.expect("a body");
    let runtime = rt(1);
    runtime.block_on(async {
        let mut buf = [0u8; 10];
        assert!(
            timeout(Duration::from_millis(100), AsyncReadExt::read(&mut body, &mut buf))
                .await
                .is_err()
        );
    });
    drop(body);
    let first = client.reply().expect("a reply");
    let status = if first.status == 100 {
        client.send(b"0123456789");
        responder.body(b"done").unwrap();
        client.reply().expect("the final reply")
    } else {
        responder.body(b"done").unwrap();
        first
    };
    assert_eq!((status.status, status.text()), (200, "done".to_string()));
    if !status.closes() {
        next_request_answered(&mut client, &rx);
    }
}

/// HTTP/2: "the FIN gives up every response the application still owes
/// on that connection". A responder whose write was cancelled at a spent
/// window (its flush left a waker in the output pipe), then the client's
/// connection closes: `closed()` resolves, and a write fails with
/// `Closed` instead of waiting.
#[test]
fn h2_closed_after_a_cancelled_write_when_the_client_leaves() {
    let (server, rx) = parking_server();
    let addr = server.addr;
    let (leave_tx, leave_rx) = mpsc::channel::<()>();
    let client = std::thread::spawn(move || {
        let rt = common::current_thread();
        rt.block_on(async move {
            let mut send = common::h2_client(addr).await;
            let request = http::Request::get("http://x/wait").body(()).unwrap();
            let (response, _) = send.send_request(request, true).unwrap();
            let _response = response.await.unwrap();
            tokio::task::spawn_blocking(move || leave_rx.recv().unwrap()).await.unwrap();
        });
        drop(rt); // the connection's task and socket go
    });
    let (mut responder, _) = parked(&rx);
    let runtime = rt(1);
    let piece = vec![b'w'; 16 * 1024];
    runtime.block_on(async {
        let mut cancelled = false;
        for _ in 0..200 {
            if timeout(Duration::from_millis(200), responder.write(&piece)).await.is_err() {
                cancelled = true;
                break;
            }
        }
        assert!(cancelled, "the writes never waited");
    });
    leave_tx.send(()).unwrap();
    client.join().unwrap();
    let outcome = runtime.block_on(async {
        let closed = timeout(Duration::from_secs(5), responder.closed()).await.is_ok();
        let write = timeout(Duration::from_secs(5), responder.write(&piece)).await;
        (closed, write)
    });
    assert!(outcome.0, "closed() did not resolve after the client's FIN");
    assert_eq!(outcome.1, Ok(Err(falconet_server::ResponseError::Closed)));
}

/// `closed()` takes `&self` and returns a `Send` future: two tasks may
/// wait on it at once (an `Arc<Responder>` shared with a watchdog and a
/// worker task, or two `closed()` futures in a `FuturesUnordered`). Each
/// must be woken when the response is given up (here by
/// `response_timeout`), as tokio's `Notify`/`CancellationToken` wake every
/// waiter.
#[test]
fn closed_wakes_every_waiter_not_only_the_last() {
    let (park, rx) = park();
    let options = Options::new().workers(1).response_timeout(Some(Duration::from_millis(500)));
    let server = serve(options, park);
    let mut client = Client::connect(server.addr);
    client.send(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n");
    let (responder, _) = parked(&rx);
    let responder = Arc::new(responder);
    let runtime = rt(2);
    let first = runtime.spawn({
        let responder = Arc::clone(&responder);
        async move { responder.closed().await }
    });
    std::thread::sleep(Duration::from_millis(50));
    let second = runtime.spawn({
        let responder = Arc::clone(&responder);
        async move { responder.closed().await }
    });
    let reply = client.reply().expect("response_timeout's answer");
    assert_eq!(reply.status, 503);
    let (first, second) = runtime.block_on(async {
        let second = timeout(Duration::from_secs(5), second).await.is_ok();
        let first = timeout(Duration::from_secs(5), first).await.is_ok();
        (first, second)
    });
    assert!(responder.is_closed());
    assert!(second, "the last waiter of closed() was not woken");
    assert!(first, "the first waiter of closed() was never woken (only the last waker is kept)");
}

/// The same with one task: two `closed()` futures polled with different
/// wakers, as `FuturesUnordered`, `JoinSet`-less combinators and
/// hand-written executors poll them (each child has its own waker).
#[test]
fn closed_futures_with_distinct_wakers_all_complete() {
    let (park, rx) = park();
    let options = Options::new().workers(1).response_timeout(Some(Duration::from_millis(300)));
    let server = serve(options, park);
    let mut client = Client::connect(server.addr);
    client.send(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n");
    let (responder, _) = parked(&rx);
    struct Flag(std::sync::atomic::AtomicBool);
    impl std::task::Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
    let (a, b) = (
        Arc::new(Flag(std::sync::atomic::AtomicBool::new(false))),
        Arc::new(Flag(std::sync::atomic::AtomicBool::new(false))),
    );
    let (wa, wb) = (std::task::Waker::from(a.clone()), std::task::Waker::from(b.clone()));
    let mut fa = Box::pin(responder.closed());
    let mut fb = Box::pin(responder.closed());
    assert!(fa.as_mut().poll(&mut std::task::Context::from_waker(&wa)).is_pending());
    assert!(fb.as_mut().poll(&mut std::task::Context::from_waker(&wb)).is_pending());
    let reply = client.reply().expect("response_timeout's answer");
    assert_eq!(reply.status, 503);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !(a.0.load(std::sync::atomic::Ordering::SeqCst)
        && b.0.load(std::sync::atomic::Ordering::SeqCst))
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(b.0.load(std::sync::atomic::Ordering::SeqCst), "the last registration not woken");
    assert!(
        a.0.load(std::sync::atomic::Ordering::SeqCst),
        "the first closed() future's waker was dropped without a wake: a lost wakeup"
    );
}
