//! What a new user does on day one that the docs say not to, and that must
//! end in a clear error rather than a hang.

mod common;

use std::io::Read;
use std::thread;
use std::time::Duration;

use common::{Client, options, serve};
use falconet_server::{Handler, Request, Response};

/// Reads the request body with a blocking `std::io::Read` inside
/// `respond`, on the worker's own thread (handler methods must not block),
/// and answers what it read, or the error's kind.
struct ReadsOnTheWorker;

impl Handler for ReadsOnTheWorker {
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
        let answer = match body.read_to_end(&mut read) {
            Ok(_) => read,
            Err(error) => format!("{:?} after {} bytes", error.kind(), read.len()).into_bytes(),
        };
        let _ = response.body(&answer);
    }
}

/// A blocking body read on the worker's thread used to wait for good when
/// the body had not all arrived with the head: the worker that would read
/// the rest was the one waiting, so that connection, every other one on
/// the worker and `join` all hung. It now takes what has arrived and fails
/// with `Deadlock` where it would wait; the worker goes on.
#[test]
fn a_blocking_body_read_on_the_worker_fails_instead_of_hanging() {
    let server = serve(options().workers(1), ReadsOnTheWorker);
    // The whole body with the head: read to its end, as before.
    let mut whole = Client::connect(server.addr);
    whole.send(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello");
    assert_eq!(whole.reply().unwrap().text(), "hello");

    // The head, then the body later: the read returns what came (2 bytes)
    // and then the error, and the worker is free.
    let mut split = Client::connect(server.addr);
    split.send(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhe");
    thread::sleep(Duration::from_millis(300));
    let reply = split.reply().unwrap();
    assert_eq!(reply.text(), "Deadlock after 2 bytes");
    split.send(b"llo");

    // Chunked, nothing of the body yet.
    let mut chunked = Client::connect(server.addr);
    chunked.send(
        b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(chunked.reply().unwrap().text(), "Deadlock after 0 bytes");

    // The worker serves on, and stops when asked.
    let mut after = Client::connect(server.addr);
    after.send(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nok");
    assert_eq!(after.reply().unwrap().text(), "ok");
    drop((whole, split, chunked, after));
    server.stop();
}

/// Defers its response and streams 4 MiB with `write_blocking` inside
/// `respond`, on the worker's own thread; sends what the write returned
/// (`Ok` or its error) to the test, then drops the responder.
struct WritesOnTheWorker {
    seen: std::sync::mpsc::Sender<Result<usize, falconet_server::ResponseError>>,
}

impl Handler for WritesOnTheWorker {
    type State = bool;

    fn head(&self, request: &Request<'_>) -> bool {
        request.path() == "/stream"
    }

    fn respond(&self, stream: bool, response: &mut Response<'_>) {
        if !stream {
            let _ = response.body(b"small");
            return;
        }
        let Ok(mut responder) = response.defer() else { return };
        let piece = [b'x'; 64 * 1024];
        let mut written = 0;
        let outcome = loop {
            if written == 64 {
                break Ok(written);
            }
            match responder.write_blocking(&piece) {
                Ok(()) => written += 1,
                Err(error) => break Err(error),
            }
        };
        let _ = self.seen.send(outcome.map(|_| written));
        if outcome.is_ok() {
            let _ = responder.finish();
        }
    }
}

/// A deferred response streamed with `write_blocking` inside `respond`
/// waited for good once the client was 256 KiB behind: the worker that
/// sends those bytes was the one waiting, so every connection of the
/// worker and `join` hung. It now fails with `ResponseError::Deadlock`
/// without writing; the worker goes on (the response, cut, closes its
/// connection, as a dropped responder's does).
#[test]
fn a_blocking_response_write_on_the_worker_fails_instead_of_hanging() {
    let (seen, outcome) = std::sync::mpsc::channel();
    let server = serve(options().workers(1), WritesOnTheWorker { seen });
    let mut streamed = Client::connect(server.addr);
    streamed.send(b"GET /stream HTTP/1.1\r\nHost: t\r\n\r\n");
    let Ok(outcome) = outcome.recv_timeout(Duration::from_secs(10)) else {
        // The worker is stuck for good: stopping the server would wait
        // with it, so leave it (the test process ends it).
        std::mem::forget(server);
        panic!("write_blocking on the worker hung it");
    };
    assert_eq!(outcome, Err(falconet_server::ResponseError::Deadlock));
    // Some pieces went before the pipe paused, and the client gets them,
    // then the close (no status can follow a started response).
    let mut received = Vec::new();
    streamed.reader.get_mut().set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let read = streamed.reader.read_to_end(&mut received);
    assert!(read.is_ok(), "closed, not reset or hung: {read:?}");
    assert!(received.starts_with(b"HTTP/1.1 200 OK\r\n"));
    assert!(received.len() > 64 * 1024, "the pieces before the pause: {}", received.len());
    // The worker serves on, and stops when asked.
    let mut after = Client::connect(server.addr);
    assert_eq!(after.get("/small").text(), "small");
    drop((streamed, after));
    server.stop();
}

/// The same over HTTP/2: the write fails with `Deadlock`, the cut
/// response's stream is reset, and the connection serves on.
#[test]
fn over_http2_a_blocking_response_write_on_the_worker_fails_instead_of_hanging() {
    let (seen, outcome) = std::sync::mpsc::channel();
    let server = serve(options().workers(1), WritesOnTheWorker { seen });
    let addr = server.addr;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let outcome = runtime.block_on(async move {
        let send = common::h2_client(addr).await;
        let get = |path: &str| http::Request::get(format!("http://t{path}")).body(()).unwrap();
        let (streamed, _) =
            send.clone().ready().await.unwrap().send_request(get("/stream"), true).unwrap();
        let outcome =
            tokio::task::spawn_blocking(move || outcome.recv_timeout(Duration::from_secs(10)))
                .await
                .unwrap();
        if outcome.is_ok() {
            // The head went out, then the stream was reset.
            let streamed = streamed.await.unwrap();
            assert_eq!(streamed.status(), 200);
            let mut body = streamed.into_body();
            let mut failed = false;
            while let Some(data) = body.data().await {
                match data {
                    Ok(data) => {
                        let _ = body.flow_control().release_capacity(data.len());
                    }
                    Err(_) => {
                        failed = true;
                        break;
                    }
                }
            }
            assert!(failed, "a cut response ends in a reset, not a clean end");
            let (small, _) = send.ready().await.unwrap().send_request(get("/small"), true).unwrap();
            let mut small = small.await.unwrap().into_body();
            let data = small.data().await.unwrap().unwrap();
            assert_eq!(&data[..], b"small", "the connection serves on");
        }
        outcome
    });
    let Ok(outcome) = outcome else {
        std::mem::forget(server);
        panic!("write_blocking on the worker hung it");
    };
    assert_eq!(outcome, Err(falconet_server::ResponseError::Deadlock));
    drop(runtime);
    server.stop();
}

/// Gives up on an async read of its body after 50 ms (a `timeout` around
/// it, the future dropped while it waits), then reads the body through a
/// shared reference on a blocking thread: with `&RequestBody`'s
/// `io::Read` (`/shared`) or a `try_read` loop (`/try`).
#[cfg(feature = "tokio")]
struct ReadsAgainAfterATimeout(tokio::runtime::Handle);

#[cfg(feature = "tokio")]
impl Handler for ReadsAgainAfterATimeout {
    type State = bool;

    fn head(&self, request: &Request<'_>) -> bool {
        request.stream_body();
        request.path() == "/try"
    }

    fn respond(&self, with_try_read: bool, response: &mut Response<'_>) {
        let mut body = response.take_body().unwrap();
        let responder = response.defer().unwrap();
        let handle = self.0.clone();
        self.0.spawn(async move {
            let mut buf = [0u8; 16];
            let timed_out = tokio::time::timeout(
                Duration::from_millis(50),
                tokio::io::AsyncReadExt::read(&mut body, &mut buf),
            )
            .await
            .is_err();
            let read = handle.spawn_blocking(move || {
                let body = &body;
                let mut all = Vec::new();
                let result = if with_try_read {
                    let mut piece = [0u8; 4];
                    loop {
                        match body.try_read(&mut piece) {
                            Ok(Some(0)) => break Ok(all.len()),
                            Ok(Some(n)) => all.extend_from_slice(&piece[..n]),
                            Ok(None) => thread::sleep(Duration::from_millis(5)),
                            Err(error) => break Err(error),
                        }
                    }
                } else {
                    let mut shared = body;
                    shared.read_to_end(&mut all)
                };
                format!("timed out {timed_out}: {result:?} {}", common::text(&all))
            });
            let answer = read.await.unwrap();
            let _ = responder.body(answer.as_bytes());
        });
    }
}

/// An async read cancelled while it waited left its wait holding the
/// pipe's read, and a later read through `&RequestBody` (`try_read`, or
/// `io::Read for &RequestBody`, which cannot reach the wait through `&`)
/// failed with `ConcurrentRead`: the wait is now ended first.
#[cfg(feature = "tokio")]
#[test]
fn a_shared_read_after_a_cancelled_async_read_gets_the_body() {
    let runtime = common::runtime();
    let server = serve(options(), ReadsAgainAfterATimeout(runtime.handle().clone()));
    for path in ["/shared", "/try"] {
        let mut client = Client::connect(server.addr);
        client.send(
            format!("POST {path} HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\n").as_bytes(),
        );
        // After the application gave up waiting.
        thread::sleep(Duration::from_millis(200));
        client.send(b"hello world");
        let reply = client.reply().unwrap();
        assert_eq!(reply.text(), "timed out true: Ok(11) hello world", "{path}");
    }
}
