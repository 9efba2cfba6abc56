//! Independent review: tower bodies over HTTP/2, whose frames are now
//! shared pieces (`h2/serve/pump.rs` `pump`, `Step::Frame`).
#![cfg(feature = "tower")]

mod common;

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body as AxumBody;
use axum::http::StatusCode;
use axum::routing::get;
use bytes::Bytes;
use common::serve;
use falconet_server::Options;
use falconet_server::tower::TowerHandler;
use http_body::Frame;

/// `frames` frames of `size` bytes, ready back to back (or each after
/// a wake when `yield_each`), numbered so order shows.
struct Many {
    frames: usize,
    size: usize,
    sent: usize,
    yield_each: bool,
    yielded: bool,
}

impl http_body::Body for Many {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.sent == self.frames {
            return Poll::Ready(None);
        }
        if self.yield_each && !self.yielded {
            self.yielded = true;
            let waker = cx.waker().clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(1));
                waker.wake();
            });
            return Poll::Pending;
        }
        self.yielded = false;
        let start = self.sent * self.size;
        self.sent += 1;
        let data: Vec<u8> = (start..start + self.size).map(|i| (i % 251) as u8).collect();
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(data)))))
    }
}

fn many(frames: usize, size: usize, yield_each: bool) -> AxumBody {
    AxumBody::new(Many { frames, size, sent: 0, yield_each, yielded: false })
}

fn app() -> Router {
    Router::new()
        .route(
            "/echo",
            axum::routing::post(|body: AxumBody| async move {
                AxumBody::from_stream(body.into_data_stream())
            }),
        )
        .route("/many", get(|| async { many(200, 10, false) }))
        .route("/few", get(|| async { many(20, 10, false) }))
        .route("/slow", get(|| async { many(40, 10, true) }))
        .route("/nocontent", get(|| async { (StatusCode::NO_CONTENT, many(5, 10, false)) }))
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

async fn fetch(
    send: &h2::client::SendRequest<Bytes>,
    method: http::Method,
    path: &str,
) -> Result<(u16, Vec<u8>), String> {
    let mut send = send.clone().ready().await.unwrap();
    let request = http::Request::builder()
        .method(method)
        .uri(format!("http://localhost{path}"))
        .body(())
        .unwrap();
    let (response, _) = send.send_request(request, true).unwrap();
    let mut len = 0;
    let mut body = Vec::new();
    let mut status = 0;
    let got = tokio::time::timeout(Duration::from_secs(3), async {
        let response = response.await.unwrap();
        status = response.status().as_u16();
        let mut incoming = response.into_body();
        while let Some(piece) = incoming.data().await {
            let piece = piece.unwrap();
            incoming.flow_control().release_capacity(piece.len()).unwrap();
            len += piece.len();
            body.extend_from_slice(&piece);
        }
    })
    .await;
    match got {
        Ok(()) => Ok((status, body)),
        Err(_) => Err(format!("{path}: stalled after {len} bytes")),
    }
}

fn with_server(test: impl AsyncFnOnce(h2::client::SendRequest<Bytes>)) {
    let app_rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let server =
        serve(Options::new().workers(1), TowerHandler::new(app(), app_rt.handle().clone()));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let send = common::h2_client(server.addr).await;
        test(send).await;
    });
}

/// Few frames, frames woken one at a time, HEAD and 204: all whole.
#[test]
fn tower_bodies_over_h2() {
    with_server(async |send| {
        assert_eq!(fetch(&send, http::Method::GET, "/few").await, Ok((200, pattern(200))));
        assert_eq!(fetch(&send, http::Method::GET, "/slow").await, Ok((200, pattern(400))));
        assert_eq!(fetch(&send, http::Method::HEAD, "/few").await, Ok((200, vec![])));
        assert_eq!(fetch(&send, http::Method::GET, "/nocontent").await, Ok((204, vec![])));
    });
}

/// 200 ready frames of 10 bytes: more DATA frames than one writev takes.
#[test]
fn many_small_tower_frames_over_h2() {
    with_server(async |send| {
        assert_eq!(fetch(&send, http::Method::GET, "/many").await, Ok((200, pattern(2000))));
    });
}

/// An axum echo whose client grants no credit at all is held to
/// `min_response_rate` like any response waiting on its client: GOAWAY
/// (ENHANCE_YOUR_CALM) after about a grace period. (An outside probe's
/// zero-window axum echo, python `h2` sending 1 MiB of body, was held
/// 30 s, to the response timeout: its body, left unpolled for want of
/// credit with nothing staged, did not count as waiting on the client.
/// This test's schedule stages a frame first and passed before the fix
/// too; it holds the contract, the probe's script was the repro.)
#[test]
fn a_zero_window_client_of_a_polled_body_is_closed_by_the_rate() {
    use common::h2raw::{Event, Raw, req};
    use falconet_server::MinDataRate;
    use falconet_server::h2::frame::{ErrorCode, kind, setting};
    use std::time::Instant;

    let app_rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let options = Options::new()
        .workers(1)
        .io_timeout(Duration::from_secs(60))
        .min_response_rate(Some(MinDataRate::new(240, Duration::from_secs(1))));
    let server = serve(options, TowerHandler::new(app(), app_rt.handle().clone()));
    let mut raw = Raw::handshake(server.addr, &[(setting::INITIAL_WINDOW_SIZE, 0)]);
    raw.headers(1, &req("POST", "/echo"), false);
    for _ in 0..16 {
        raw.data(1, &[b'x'; 16_384], false);
    }
    let began = Instant::now();
    let fate = loop {
        assert!(began.elapsed() < Duration::from_secs(10), "still open after 10 s");
        match raw.next(Duration::from_millis(500)) {
            Event::Frame(f) if f.kind == kind::GOAWAY => break f.code(),
            Event::Eof => panic!("closed without a GOAWAY"),
            _ => {}
        }
    };
    assert_eq!(fate, u32::from(ErrorCode::ENHANCE_YOUR_CALM));
    assert!(began.elapsed() < Duration::from_secs(5), "closed after {:?}", began.elapsed());
}

/// A client whose stream window is exactly the echoed body's length owes
/// no more credit: the body's end (an empty DATA with END_STREAM, which
/// needs none, RFC 9113 §6.9.1) goes out without any WINDOW_UPDATE, and
/// the rate guard does not close the connection. (Review, 2026-12-06: the
/// polled body was not polled again at zero credit, so its end waited for
/// a byte of credit, and the guard closed the connection after 5 s.)
#[test]
fn a_body_that_fills_the_window_ends_without_more_credit() {
    use common::h2raw::{Raw, req_with};
    use falconet_server::h2::frame::{kind, setting};
    use std::time::Instant;

    let app_rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let server =
        serve(Options::new().workers(1), TowerHandler::new(app(), app_rt.handle().clone()));
    for (round, size) in [100usize, 20_000, 65_535].into_iter().enumerate() {
        let mut raw = Raw::handshake(server.addr, &[(setting::INITIAL_WINDOW_SIZE, size as u32)]);
        // Connection credit to spare: only the stream's window binds.
        raw.window_update(0, 1 << 20);
        let length = size.to_string();
        raw.headers(1, &req_with("POST", "/echo", &[("content-length", &length)]), false);
        // The last piece a moment later: the end comes after the echo
        // has sent every byte (the case that waited).
        let body = pattern(size);
        let (first, last) = body.split_at(size / 2);
        for piece in first.chunks(16_384) {
            raw.data(1, piece, false);
        }
        std::thread::sleep(Duration::from_millis(50));
        let mut pieces = last.chunks(16_384).peekable();
        while let Some(piece) = pieces.next() {
            raw.data(1, piece, pieces.peek().is_none());
        }
        let began = Instant::now();
        let mut echoed = 0;
        let ended = loop {
            let Some(frame) = raw.next_frame(Duration::from_secs(2)) else { break false };
            assert_ne!(
                frame.kind,
                kind::GOAWAY,
                "round {round}: closed after {:?}",
                began.elapsed()
            );
            if frame.stream == 1 && frame.kind == kind::DATA {
                echoed += frame.payload.len();
            }
            if frame.stream == 1 && frame.end_stream() {
                break true;
            }
        };
        assert!(ended, "round {round}: {echoed} of {size} bytes echoed, then no END_STREAM");
        assert_eq!(echoed, size, "round {round}");
    }
}
