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
