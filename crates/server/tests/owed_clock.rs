//! The I/O timeout's clock for a lent request body starts when the client
//! comes to owe bytes, not at its last progress: while the application
//! had bytes it had not read, the client owed nothing, and the time the
//! application took must not count against the client once it reads them.
//! (It did: an application that read 1 s after the first piece arrived
//! left the client no time at all for the next one, over HTTP/1.1 and
//! HTTP/2 alike, the next tick answered 408 or GOAWAY.)

mod common;

use std::io::{Read, Write};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use common::h2raw::{self, Raw};
use common::{options, serve};
use falconet_server::h2::frame::kind;
use falconet_server::{Handler, Request, Response};

/// The I/O timeout of these tests.
const IO_TIMEOUT: Duration = Duration::from_millis(400);
/// How long the application leaves a lent body unread: far past the I/O
/// timeout.
const APP_DELAY: Duration = Duration::from_millis(1200);
/// How long after the application's first read the client sends the rest:
/// well within the I/O timeout.
const CLIENT_DELAY: Duration = Duration::from_millis(150);

/// Lends every body. A thread sleeps [`APP_DELAY`], reads one piece, says
/// so on `read`, then reads to the end and answers `got <n>`.
struct Slow {
    read: mpsc::SyncSender<usize>,
}

impl Handler for Slow {
    type State = ();

    fn head(&self, request: &Request<'_>) {
        request.stream_body();
    }

    fn body(&self, (): &mut (), _: &[u8]) {}

    fn respond(&self, (): (), response: &mut Response<'_>) {
        let body = response.take_body();
        let Ok(responder) = response.defer() else { return };
        let read = self.read.clone();
        thread::spawn(move || {
            let Some(mut body) = body else { return };
            thread::sleep(APP_DELAY);
            let mut piece = [0u8; 64];
            let Ok(first) = body.read(&mut piece) else { return };
            let _ = read.send(first);
            let mut rest = Vec::new();
            if let Ok(more) = body.read_to_end(&mut rest) {
                let _ = responder.body(format!("got {}", first + more).as_bytes());
            }
        });
    }
}

/// An HTTP/1.1 request whose chunked body has sent its first piece.
const CHUNKED_HELLO: &[u8] =
    b"POST /up HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n";

fn server() -> (common::TestServer<Slow>, mpsc::Receiver<usize>) {
    let (read, reads) = mpsc::sync_channel(4);
    let options = options().workers(1).io_timeout(IO_TIMEOUT);
    (serve(options, Slow { read }), reads)
}

#[test]
fn http1_client_gets_its_io_timeout_after_the_application_reads() {
    let (server, reads) = server();
    let mut client = common::Client::connect(server.addr);
    // Chunked: a sized body's client owes its rest whatever the
    // application does, as the server reads on until the pipe pauses; a
    // chunked one's only once the application has looked at all that came.
    client.send(CHUNKED_HELLO);
    let first = reads.recv_timeout(Duration::from_secs(10)).expect("the application read");
    assert_eq!(first, 5);
    thread::sleep(CLIENT_DELAY);
    // The rest, within the I/O timeout of the application's read.
    let _ = client.stream().write_all(b"5\r\nworld\r\n0\r\n\r\n");
    let reply = client.reply().expect("an answer");
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.text(), "got 10");
}

#[test]
fn h2_client_gets_its_io_timeout_after_the_application_reads() {
    let (server, reads) = server();
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &h2raw::req("POST", "/up"), false);
    raw.data(1, b"hello", false);
    let first = reads.recv_timeout(Duration::from_secs(10)).expect("the application read");
    assert_eq!(first, 5);
    thread::sleep(CLIENT_DELAY);
    raw.data(1, b"world", true);
    let mut body = Vec::new();
    let mut seen = Vec::new();
    while let Some(frame) = raw.next_frame(Duration::from_secs(5)) {
        seen.push((frame.kind, frame.stream, frame.flags));
        if frame.kind == kind::GOAWAY || frame.kind == kind::RST_STREAM {
            panic!("the stream or connection was ended: {seen:?}");
        }
        if frame.kind == kind::DATA && frame.stream == 1 {
            body.extend_from_slice(&frame.payload);
            if frame.end_stream() {
                break;
            }
        }
    }
    assert_eq!(body, b"got 10", "{seen:?}");
}

/// The clock starts at the application's read, it is not switched off:
/// a client that then sends nothing is still timed out.
#[test]
fn a_client_silent_after_the_application_reads_is_timed_out() {
    let (server, reads) = server();
    let mut client = common::Client::connect(server.addr);
    client.send(CHUNKED_HELLO);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &h2raw::req("POST", "/up"), false);
    raw.data(1, b"hello", false);
    for _ in 0..2 {
        assert_eq!(reads.recv_timeout(Duration::from_secs(10)), Ok(5));
    }
    let read_at = std::time::Instant::now();
    let reply = client.reply().expect("an answer");
    assert_eq!(reply.status, 408, "{}", reply.text());
    let h1_after = read_at.elapsed();
    let frames = h2raw::frames_until(&mut raw, Duration::from_secs(5), |f| f.kind == kind::GOAWAY);
    assert!(frames.iter().any(|f| f.kind == kind::GOAWAY), "no GOAWAY: {frames:?}");
    // Not before the client had its time: the clock starts at the last
    // tick that found the application holding the body, at most a tick
    // (a quarter of the I/O timeout) before its read.
    assert!(h1_after >= IO_TIMEOUT / 2, "408 only {h1_after:?} after the read");
    // And well within a few I/O timeouts of the reads.
    let elapsed = read_at.elapsed();
    assert!(elapsed < Duration::from_secs(4), "{elapsed:?}");
}
