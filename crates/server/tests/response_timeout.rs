//! `Options::response_timeout`: time the application takes is its own, not
//! the client's. A handler slower than `io_timeout` is answered; one
//! slower than the response timeout gets `503` (HTTP/1.1: then close;
//! HTTP/2: that stream only), or a cut if its response had started. A
//! client that stalls a body the application reads gets `408`.
#![cfg(feature = "tokio")]

mod common;

use std::io::Read;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use common::{Client, options, serve};
use falconet_server::{Handler, Options, Request, Response, Status};

/// `/later?ms=N` answers `late` after N ms from a thread; `/never` keeps
/// its responder and never answers; `/started` sends its head and `a`,
/// then nothing; `/read` reads the body on a thread and answers its length.
struct Slow {
    /// Responders held by `/never` (kept alive until the test ends).
    kept: mpsc::Sender<falconet_server::Responder>,
}

impl Handler for Slow {
    type State = String;

    fn head(&self, request: &Request<'_>) -> String {
        if request.path() == "/read" {
            request.stream_body();
        }
        request.target().to_string()
    }

    fn respond(&self, target: String, response: &mut Response<'_>) {
        let body = response.take_body();
        let Ok(mut responder) = response.defer() else { return };
        if let Some(ms) = target.strip_prefix("/later?ms=") {
            let ms = ms.parse().unwrap();
            thread::spawn(move || {
                thread::sleep(Duration::from_millis(ms));
                let _ = responder.body(b"late");
            });
        } else if target == "/never" {
            let _ = self.kept.send(responder);
        } else if target == "/started" {
            let kept = self.kept.clone();
            thread::spawn(move || {
                let _ = responder.write_blocking(b"a");
                let _ = kept.send(responder);
            });
        } else if target == "/read" {
            thread::spawn(move || {
                let mut read = Vec::new();
                match body.map(|mut body| body.read_to_end(&mut read)) {
                    Some(Ok(n)) => {
                        let _ = responder.body(n.to_string().as_bytes());
                    }
                    _ => {
                        let _ = responder.status(Status::INTERNAL_SERVER_ERROR);
                    }
                }
            });
        } else {
            let _ = responder.body(b"now");
        }
    }
}

/// A server of [`Slow`] with `options`; the receiver keeps what `/never`
/// and `/started` hold.
fn slow(
    options: Options,
) -> (common::TestServer<Slow>, mpsc::Receiver<falconet_server::Responder>) {
    let (kept, held) = mpsc::channel();
    (serve(options, Slow { kept }), held)
}

const SHORT: Duration = Duration::from_millis(400);

/// The I/O timeout is the client's: an application that takes three of
/// them to answer is answered, over HTTP/1.1 (it used to be closed with
/// no byte sent).
#[test]
fn an_application_slower_than_the_io_timeout_is_answered() {
    let (server, _held) = slow(options().workers(1).io_timeout(SHORT));
    let mut client = Client::connect(server.addr);
    let reply = client.get("/later?ms=1200");
    assert_eq!((reply.status, reply.text().as_str()), (200, "late"));
    assert_eq!(client.get("/now").text(), "now", "the connection goes on");
    drop(client);
    server.stop();
}

/// With the response timeout off, the application may take any time.
#[test]
fn no_response_timeout_lets_the_application_take_its_time() {
    let options = options().workers(1).io_timeout(SHORT).response_timeout(None);
    let (server, _held) = slow(options);
    let mut client = Client::connect(server.addr);
    assert_eq!(client.get("/later?ms=1500").text(), "late");
    drop(client);
    server.stop();
}

/// Past the response timeout, a response not started is `503` and the
/// connection closes; the responder's later writes fail.
#[test]
fn past_the_response_timeout_an_unstarted_response_is_503() {
    let (server, held) = slow(options().workers(1).response_timeout(Some(SHORT)));
    let mut client = Client::connect(server.addr);
    let reply = client.get("/never");
    assert_eq!(reply.status, 503);
    assert!(reply.closes(), "{:?}", reply.headers);
    let responder = held.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(responder.body(b"too late").is_err(), "the responder's write must fail");
    assert!(client.reply().is_err(), "nothing follows the 503");
    drop(client);
    server.stop();
}

/// A response the application started and then stalled is cut off: the
/// connection closes (no status can follow its head).
#[test]
fn past_the_response_timeout_a_started_response_is_cut_off() {
    let (server, _held) = slow(options().workers(1).response_timeout(Some(SHORT)));
    let mut client = Client::connect(server.addr);
    client.send(b"GET /started HTTP/1.1\r\nHost: t\r\n\r\n");
    let mut seen = Vec::new();
    let read = client.reader.read_to_end(&mut seen);
    let seen = String::from_utf8_lossy(&seen);
    assert!(read.is_ok(), "closed, not reset: {read:?}");
    assert!(seen.starts_with("HTTP/1.1 200 OK\r\n"), "{seen}");
    assert!(seen.ends_with("\r\n\r\n1\r\na\r\n"), "cut after the piece it sent: {seen:?}");
    drop(client);
    server.stop();
}

/// A client that stalls a body the application is reading owes the bytes:
/// `408` after the I/O timeout, not a silent close (the application's read
/// fails, its answer comes too late).
#[test]
fn a_body_stalled_by_the_client_while_the_application_reads_is_408() {
    let (server, _held) = slow(options().workers(1).io_timeout(SHORT));
    let mut client = Client::connect(server.addr);
    client.send(b"POST /read HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc");
    let reply = client.reply().unwrap();
    assert_eq!(reply.status, 408);
    assert!(reply.closes());
    drop(client);
    server.stop();
}

/// HTTP/2: the late stream alone gets `503`; the connection and its other
/// streams go on (it used to end the whole connection with GOAWAY).
#[test]
fn over_http2_only_the_late_stream_is_answered_503() {
    let (server, _held) = slow(options().workers(1).response_timeout(Some(SHORT)));
    let addr = server.addr;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async move {
        let send = common::h2_client(addr).await;
        let request =
            |path: &str| http::Request::builder().uri(format!("http://t{path}")).body(()).unwrap();
        let mut never = send.clone().ready().await.unwrap();
        let (never, _) = never.send_request(request("/never"), true).unwrap();
        let mut later = send.clone().ready().await.unwrap();
        let (later, _) = later.send_request(request("/later?ms=100"), true).unwrap();
        let later = tokio::time::timeout(Duration::from_secs(5), later).await.unwrap().unwrap();
        assert_eq!(later.status(), 200);
        let never = tokio::time::timeout(Duration::from_secs(5), never).await.unwrap().unwrap();
        assert_eq!(never.status(), 503);
        // The connection serves on.
        let mut next = send.clone().ready().await.unwrap();
        let (next, _) = next.send_request(request("/now"), true).unwrap();
        let next = tokio::time::timeout(Duration::from_secs(5), next).await.unwrap().unwrap();
        assert_eq!(next.status(), 200);
        // A started response is reset, the connection still serves.
        let mut started = send.clone().ready().await.unwrap();
        let (started, _) = started.send_request(request("/started"), true).unwrap();
        let started = tokio::time::timeout(Duration::from_secs(5), started).await.unwrap();
        let mut body = started.unwrap().into_body();
        let ended = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                match body.data().await {
                    Some(Ok(_)) => continue,
                    Some(Err(error)) => return Some(error),
                    None => return None,
                }
            }
        })
        .await
        .expect("the stream ends");
        let error = ended.expect("reset, not ended cleanly");
        assert_eq!(error.reason(), Some(h2::Reason::INTERNAL_ERROR), "{error}");
        let mut last = send.clone().ready().await.unwrap();
        let (last, _) = last.send_request(request("/now"), true).unwrap();
        let last = tokio::time::timeout(Duration::from_secs(5), last).await.unwrap().unwrap();
        assert_eq!(last.status(), 200);
    });
    server.stop();
}
