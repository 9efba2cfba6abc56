//! `Expect: 100-continue` on a body the application reads itself (a tower
//! service's, or a handler's `take_body`): the `100 (Continue)` goes out
//! when the application first reads the body, as hyper sends it, so a
//! request refused unread does not cost its client the upload (RFC 9110
//! 10.1.1). A response given without the 100 closes the connection: the
//! client, told nothing, may or may not send the body.
#![cfg(feature = "tower")]

mod common;

use std::io::Read;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use axum::Router;
use axum::body::{Body as AxumBody, to_bytes};
use axum::http::StatusCode;
use axum::routing::post;
use common::{Client, options, serve};
use falconet_server::tower::TowerHandler;
use falconet_server::{Handler, Request, Response, Status};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
}

fn app() -> Router {
    Router::new()
        .route(
            "/echo",
            post(|body: AxumBody| async move { AxumBody::from_stream(body.into_data_stream()) }),
        )
        // Refuses without looking at the body.
        .route("/locked", post(|| async { StatusCode::UNAUTHORIZED }))
        // Refuses after a while, without looking at the body.
        .route(
            "/slow-locked",
            post(|| async {
                tokio::time::sleep(Duration::from_millis(600)).await;
                StatusCode::UNAUTHORIZED
            }),
        )
        // Waits first (the answer is deferred), then reads the whole body.
        .route(
            "/later",
            post(|body: AxumBody| async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                let bytes = to_bytes(body, 1 << 20).await.unwrap();
                format!("later {}", bytes.len())
            }),
        )
}

const HEAD: &str = "HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n";

fn expecting(path: &str) -> Vec<u8> {
    format!("POST {path} {HEAD}").into_bytes()
}

/// The client waits for the 100, then sends the body; the answer follows
/// and the connection stays open.
fn continued(client: &mut Client, path: &str, answer: &str) {
    client.send(&expecting(path));
    let interim = client.reply().unwrap();
    assert_eq!(interim.status, 100, "{path}: the body is asked for");
    client.send(b"hello");
    let reply = client.reply().unwrap();
    assert_eq!((reply.status, reply.text().as_str()), (200, answer), "{path}");
    assert!(!reply.closes(), "{path}: the connection stays open");
}

/// Refused unread: no 100, the answer says `Connection: close`, and the
/// connection closes.
fn refused_unread(client: &mut Client, path: &str, status: u16) {
    client.send(&expecting(path));
    let reply = client.reply().unwrap();
    assert_eq!(reply.status, status, "{path}: answered without asking for the body");
    assert!(reply.closes(), "{path}: the body was never asked for, so the connection closes");
    client.expect_closed();
}

#[test]
fn axum_asks_for_the_body_only_when_it_reads_it() {
    let runtime = runtime();
    let server = serve(options(), TowerHandler::new(app(), runtime.handle().clone()));
    let mut client = Client::connect(server.addr);
    // The worker polls the echoed body: the 100 goes in front of its head.
    continued(&mut client, "/echo", "hello");
    // A task reads the body after a wait: the worker sends the 100 then.
    continued(&mut client, "/later", "later 5");
    // Still the same connection.
    continued(&mut client, "/echo", "hello");
    refused_unread(&mut Client::connect(server.addr), "/locked", 401);
    refused_unread(&mut Client::connect(server.addr), "/no-such-route", 404);
    // A client that sends the body without waiting is not waiting for a
    // 100: none comes, and its connection stays open (the body drained).
    let mut eager = Client::connect(server.addr);
    for _ in 0..2 {
        let mut request = expecting("/locked");
        request.extend_from_slice(b"hello");
        eager.send(&request);
        let reply = eager.reply().unwrap();
        assert_eq!(reply.status, 401);
        assert!(!reply.closes());
    }
    let mut request = expecting("/echo");
    request.extend_from_slice(b"hello");
    eager.send(&request);
    assert_eq!(eager.reply().unwrap().text(), "hello");
}

/// While the 100 is owed the client owes nothing: a slow refusal is the
/// application's time (`response_timeout`), not the client's
/// (`io_timeout`, which would have answered 408).
#[test]
fn a_client_waiting_for_the_100_is_not_timed_out() {
    let runtime = runtime();
    let options = options().io_timeout(Duration::from_millis(200));
    let server = serve(options, TowerHandler::new(app(), runtime.handle().clone()));
    refused_unread(&mut Client::connect(server.addr), "/slow-locked", 401);
    // And once asked, the client owes the body again.
    let mut client = Client::connect(server.addr);
    client.send(&expecting("/later"));
    assert_eq!(client.reply().unwrap().status, 100);
    let stalled = client.reply().unwrap();
    assert_eq!(stalled.status, 408, "the body never came");
}

/// A handler that reads its body itself: on a thread, after the head and
/// fields of its answer are set (the 100 must not wait for the answer's
/// head), or not at all (answered now, or later from a thread: a day-one
/// handler that asked for the body and forgot it must not hang).
struct Reads;

impl Handler for Reads {
    type State = &'static str;

    fn head(&self, request: &Request<'_>) -> &'static str {
        request.stream_body();
        match request.target() {
            "/read" => "read",
            "/forgotten" => "forgotten",
            _ => "other",
        }
    }

    fn respond(&self, what: &'static str, response: &mut Response<'_>) {
        if what == "forgotten" {
            let mut responder = response.defer().unwrap();
            thread::spawn(move || {
                thread::sleep(Duration::from_millis(50));
                let _ = responder.status(Status::new(403).unwrap());
                let _ = responder.body(b"no");
            });
            return;
        }
        if what == "other" {
            let _ = response.status(Status::new(403).unwrap()).and_then(|r| r.body(b"no"));
            return;
        }
        let mut body = response.take_body().unwrap();
        let mut responder = response.defer().unwrap();
        thread::spawn(move || {
            // The head begins before the body is read.
            let _ = responder.header("x-before", "read");
            let mut all = Vec::new();
            let result = body.read_to_end(&mut all);
            let _ =
                responder.body(format!("{result:?} {}", String::from_utf8_lossy(&all)).as_bytes());
        });
    }
}

#[test]
fn a_handler_that_reads_its_body_on_a_thread_gets_it() {
    let server = serve(options(), Reads);
    let mut client = Client::connect(server.addr);
    continued(&mut client, "/read", "Ok(5) hello");
    continued(&mut client, "/read", "Ok(5) hello");
    refused_unread(&mut client, "/other", 403);
    refused_unread(&mut Client::connect(server.addr), "/forgotten", 403);
}

/// The read and the answer race on two threads: whichever wins, the wire
/// is right. Either the 100 comes, before the final answer, and the
/// connection stays open; or no 100, and the answer closes the connection.
struct Race;

impl Handler for Race {
    type State = ();

    fn head(&self, request: &Request<'_>) {
        request.stream_body();
    }

    fn respond(&self, (): (), response: &mut Response<'_>) {
        let body = response.take_body().unwrap();
        let responder = response.defer().unwrap();
        let (read, answered) = mpsc::channel();
        thread::spawn(move || {
            let mut byte = [0u8; 1];
            let _ = body.try_read(&mut byte);
            let _ = read.send(());
            // Keeps the body until the answer went: a body dropped
            // earlier is drained, which is another path.
            thread::sleep(Duration::from_millis(5));
        });
        thread::spawn(move || {
            let _ = responder.body(b"raced");
            let _ = answered.recv();
        });
    }
}

#[test]
fn a_read_racing_the_answer_never_puts_a_100_after_it() {
    let server = serve(options(), Race);
    let (mut with, mut without) = (0, 0);
    for _ in 0..200 {
        let mut client = Client::connect(server.addr);
        client.send(&expecting("/race"));
        let first = client.reply().unwrap();
        if first.status == 100 {
            with += 1;
            client.send(b"hello");
            let reply = client.reply().unwrap();
            assert_eq!((reply.status, reply.text().as_str()), (200, "raced"));
        } else {
            without += 1;
            assert_eq!((first.status, first.text().as_str()), (200, "raced"));
            assert!(first.closes(), "an answer without the 100 closes the connection");
            client.expect_closed();
        }
    }
    eprintln!("200 races: {with} with the 100, {without} without");
}
