//! The I/O timeout's clock for a lent request body starts when the client
//! comes to owe bytes, not at its last progress: while the application
//! had bytes it had not read, the client owed nothing, and the time the
//! application took must not count against it once it reads them. (It
//! did: an application that read 1 s after a piece came left the client
//! no time at all for the next one, over HTTP/1.1 and HTTP/2 alike; then,
//! fixed from the tick before the read, up to a tick too little.)
//!
//! Eight connections each, their applications' reads staggered across a
//! tick, so that some read just after a tick and some just before one.

mod common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use common::h2raw::{self, Event, Raw};
use common::{Client, options, query_arg, serve};
use falconet_server::h2::frame::kind;
use falconet_server::{Handler, Request, Response};

/// The I/O timeout of these tests (the timer ticks every quarter of it).
/// 1.2 s, not less: a client thread of eight, on two busy cores, must
/// send within it after each read (at 400 ms, 60 ms of slack was left).
const IO_TIMEOUT: Duration = Duration::from_millis(1_200);
/// Connections per test.
const CONNS: u64 = 8;
/// Pieces each client sends after its first, each after a late read.
const ROUNDS: usize = 3;
/// How long after each application read the client sends its next piece:
/// within the I/O timeout, by less than a tick.
const CLIENT_AFTER_READ: Duration = Duration::from_millis(1_000);

/// Each connection's read notices: when the application's read returned.
type Reads = Arc<Mutex<HashMap<u64, mpsc::Sender<Instant>>>>;

/// `/late?id=K&first=MS&gap=MS` lends the body: a thread sleeps `first`
/// ms, then reads one piece at a time, telling connection K's channel
/// after each and sleeping `gap` ms before the next, to the end; answers
/// `got <n>`.
struct Late {
    reads: Reads,
}

impl Handler for Late {
    type State = String;

    fn head(&self, request: &Request<'_>) -> String {
        request.stream_body();
        request.target().to_string()
    }

    fn body(&self, _: &mut String, _: &[u8]) {}

    fn respond(&self, target: String, response: &mut Response<'_>) {
        let body = response.take_body();
        let Ok(responder) = response.defer() else { return };
        let tell = self.reads.lock().unwrap().get(&query_arg(&target, "id")).cloned();
        let (first, gap) = (query_arg(&target, "first"), query_arg(&target, "gap"));
        thread::spawn(move || {
            let Some(mut body) = body else { return };
            thread::sleep(Duration::from_millis(first));
            let mut total = 0;
            let mut piece = [0u8; 4096];
            loop {
                let n = match body.read(&mut piece) {
                    Ok(n) => n,
                    Err(error) => {
                        let _ = responder.body(format!("read failed: {error}").as_bytes());
                        return;
                    }
                };
                if let Some(tell) = &tell {
                    let _ = tell.send(Instant::now());
                }
                if n == 0 {
                    break;
                }
                total += n;
                thread::sleep(Duration::from_millis(gap));
            }
            let _ = responder.body(format!("got {total}").as_bytes());
        });
    }
}

/// A server of [`Late`] with one worker, and its read notices.
fn server() -> (common::TestServer<Late>, Reads) {
    let reads = Reads::default();
    let server = serve(options().workers(1).io_timeout(IO_TIMEOUT), Late { reads: reads.clone() });
    (server, reads)
}

fn listen(reads: &Reads, id: u64) -> mpsc::Receiver<Instant> {
    let (tell, told) = mpsc::channel();
    reads.lock().unwrap().insert(id, tell);
    told
}

/// Connection K's target: its application first reads after 1800 + 39K
/// ms (so the connections' reads fall at every phase of the timer's tick).
fn target(k: u64, gap: u64) -> String {
    format!("/late?id={k}&first={}&gap={gap}", 1_800 + 39 * k)
}

/// Runs `client` on [`CONNS`] connections to one server at once; its
/// `Err`s are the failures.
fn on_each(client: impl Fn(SocketAddr, u64, mpsc::Receiver<Instant>) -> Result<(), String> + Sync) {
    let (server, reads) = server();
    let failures: Vec<String> = thread::scope(|scope| {
        let runs: Vec<_> = (0..CONNS)
            .map(|k| {
                let (told, client, addr) = (listen(&reads, k), &client, server.addr);
                scope.spawn(move || client(addr, k, told).map_err(|e| format!("conn {k}: {e}")))
            })
            .collect();
        runs.into_iter().filter_map(|run| run.join().unwrap().err()).collect()
    });
    assert!(failures.is_empty(), "{} of {CONNS}: {failures:?}", failures.len());
}

/// The next read notice.
fn read(told: &mpsc::Receiver<Instant>) -> Result<Instant, String> {
    told.recv_timeout(Duration::from_secs(10)).map_err(|_| "no read within 10 s".to_string())
}

/// The status of stream `id`'s final HEADERS, or `None` for a GOAWAY, the
/// connection's end or the time running out.
fn h2_status(raw: &mut Raw, id: u32, timeout: Duration) -> Option<u16> {
    let deadline = Instant::now() + timeout;
    loop {
        let Event::Frame(frame) = raw.next(deadline.saturating_duration_since(Instant::now()))
        else {
            return None;
        };
        if frame.kind == kind::GOAWAY {
            return None;
        }
        if frame.kind == kind::HEADERS {
            let mut status = 0;
            let _ = raw.decoder.decode(&frame.payload, |field| {
                if field.name == b":status" {
                    status = String::from_utf8_lossy(field.value).parse().unwrap_or(0);
                }
            });
            if frame.stream == id && status >= 200 {
                return Some(status);
            }
        }
    }
}

#[test]
fn http1_client_sending_within_its_time_after_each_late_read_is_served() {
    on_each(|addr, k, told| {
        let mut client = Client::connect(addr);
        let head = format!("POST {} HTTP/1.1\r\nHost: t\r\n", target(k, 1_800));
        // Chunked: a sized body's client owes its rest whatever the
        // application does, as the server reads on until the pipe
        // pauses; a chunked one's only once the application has looked
        // at all that came.
        client.send(format!("{head}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n").as_bytes());
        for round in 0..ROUNDS {
            read(&told)?;
            thread::sleep(CLIENT_AFTER_READ);
            let last = round + 1 == ROUNDS;
            let piece: &[u8] = if last { b"5\r\nworld\r\n0\r\n\r\n" } else { b"5\r\nworld\r\n" };
            client.stream().write_all(piece).map_err(|e| format!("round {round}: {e}"))?;
        }
        match client.reply() {
            Ok(reply) if reply.status == 200 && reply.text() == "got 20" => Ok(()),
            Ok(reply) => Err(format!("{} {}", reply.status, reply.text())),
            Err(error) => Err(error.to_string()),
        }
    });
}

#[test]
fn h2_client_sending_within_its_time_after_each_late_read_is_served() {
    on_each(|addr, k, told| {
        let mut raw = Raw::handshake(addr, &[]);
        raw.headers(1, &h2raw::req("POST", &target(k, 1_800)), false);
        // Pieces too small for a WINDOW_UPDATE, whose write would restart
        // the clock.
        raw.data(1, b"hello", false);
        for round in 0..ROUNDS {
            read(&told)?;
            thread::sleep(CLIENT_AFTER_READ);
            let end = u8::from(round + 1 == ROUNDS);
            raw.try_send(&h2raw::frame_bytes(kind::DATA, end, 1, b"world"))
                .map_err(|e| format!("round {round}: {e}"))?;
        }
        match h2_status(&mut raw, 1, Duration::from_secs(10)) {
            Some(200) => Ok(()),
            other => Err(format!("stream 1 ended with {other:?}")),
        }
    });
}

/// The clock starts at the application's read, it is not switched off: a
/// client silent after it is timed out, and no sooner than the I/O
/// timeout after the read.
#[test]
fn http1_client_silent_after_a_late_read_is_timed_out_no_sooner_than_its_time() {
    on_each(|addr, k, told| {
        let mut client = Client::connect(addr);
        let head = format!("POST {} HTTP/1.1\r\nHost: t\r\n", target(k, 0));
        client.send(format!("{head}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n").as_bytes());
        let read_at = read(&told)?;
        let reply = client.reply().map_err(|e| e.to_string())?;
        let after = read_at.elapsed();
        if reply.status != 408 {
            return Err(format!("{} {}", reply.status, reply.text()));
        }
        // (Less a little for the notice's own way here.)
        if after < IO_TIMEOUT - Duration::from_millis(10) {
            return Err(format!("408 only {after:?} after the read"));
        }
        Ok(())
    });
}

#[test]
fn h2_client_silent_after_a_late_read_is_timed_out_no_sooner_than_its_time() {
    on_each(|addr, k, told| {
        let mut raw = Raw::handshake(addr, &[]);
        raw.headers(1, &h2raw::req("POST", &target(k, 0)), false);
        raw.data(1, b"hello", false);
        let read_at = read(&told)?;
        let frames =
            h2raw::frames_until(&mut raw, Duration::from_secs(5), |f| f.kind == kind::GOAWAY);
        let after = read_at.elapsed();
        if !frames.iter().any(|f| f.kind == kind::GOAWAY) {
            return Err(format!("no GOAWAY: {frames:?}"));
        }
        if after < IO_TIMEOUT - Duration::from_millis(10) {
            return Err(format!("GOAWAY only {after:?} after the read"));
        }
        Ok(())
    });
}
