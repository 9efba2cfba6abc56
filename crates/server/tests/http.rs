//! The server over real TCP sockets: endpoints, keep-alive, HTTP/1.0,
//! pipelining, byte-by-byte input, bodies, `Expect: 100-continue`.

mod common;

use std::io::Write;
use std::time::Duration;

use common::{Client, Echo, echo_of, options, serve};
use falconet_server::hello::Hello;

#[test]
fn plaintext_and_json() {
    let server = serve(options(), Hello);
    let addr = server.addr;
    let mut client = Client::connect(addr);
    let plain = client.get("/plaintext");
    assert_eq!((plain.status, plain.text().as_str()), (200, "Hello, World!"));
    assert_eq!(plain.header("content-type"), Some("text/plain"));
    assert_eq!(plain.header("server"), Some("falconet"));
    let date = plain.header("date").expect("a Date header");
    assert!(date.ends_with(" GMT") && date.len() == 29, "{date}");
    let json = client.get("/json");
    assert_eq!((json.status, json.text().as_str()), (200, r#"{"message":"Hello, World!"}"#));
    assert_eq!(json.header("content-type"), Some("application/json"));
    let missing = client.get("/nope");
    assert_eq!((missing.status, missing.text().as_str()), (404, "Not Found\n"));
    client.send(b"HEAD /nope HTTP/1.1\r\nHost: t\r\n\r\n");
    let head = client.reply_to(true).unwrap();
    assert_eq!((head.status, head.header("content-length")), (404, Some("10")));
    client.send(b"HEAD /plaintext HTTP/1.1\r\nHost: t\r\n\r\n");
    let head = client.reply_to(true).unwrap();
    assert_eq!((head.status, head.header("content-length")), (200, Some("13")));
    client.send(b"DELETE /json HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(client.reply().unwrap().status, 405);
    // A method the server does not know: 501 (RFC 9110 §9.1), on any path.
    for request in [
        &b"BREW /plaintext HTTP/1.1\r\nHost: t\r\n\r\n"[..],
        b"get /json HTTP/1.1\r\nHost: t\r\n\r\n",
    ] {
        client.send(request);
        assert_eq!(client.reply().unwrap().status, 501, "{}", String::from_utf8_lossy(request));
    }
    // `OPTIONS *` asks about the server as a whole (RFC 9110 §9.3.7): 204
    // and what it serves, not 404; `OPTIONS` of a resource is its `405`.
    client.send(b"OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n");
    let options = client.reply().unwrap();
    assert_eq!((options.status, options.header("allow")), (204, Some("GET, HEAD, OPTIONS")));
    client.send(b"OPTIONS /plaintext HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(client.reply().unwrap().status, 405);
    // Still the same connection after all of that.
    assert_eq!(client.get("/plaintext").status, 200);
    server.stop();
}

#[test]
fn http_1_0_closes_unless_asked_to_keep_alive() {
    let server = serve(options(), Hello);
    let addr = server.addr;
    let mut client = Client::connect(addr);
    client.send(b"GET /plaintext HTTP/1.0\r\n\r\n");
    let reply = client.reply().unwrap();
    assert_eq!(reply.status, 200);
    assert!(reply.closes());
    client.expect_closed();

    let mut client = Client::connect(addr);
    for _ in 0..3 {
        client.send(b"GET /json HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        let reply = client.reply().unwrap();
        assert_eq!(reply.header("connection"), Some("keep-alive"));
    }
    client.send(b"GET /plaintext HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    assert!(client.reply().unwrap().closes());
    client.expect_closed();
    server.stop();
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let server = serve(options(), Echo);
    let addr = server.addr;
    let mut client = Client::connect(addr);
    let mut batch = Vec::new();
    for i in 0..200 {
        batch.extend_from_slice(format!("GET /r{i} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
        if i % 7 == 0 {
            batch.extend_from_slice(
                b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello",
            );
        }
    }
    client.send(&batch);
    for i in 0..200 {
        assert_eq!(client.reply().unwrap().text(), format!("/r{i}"));
        if i % 7 == 0 {
            assert_eq!(client.reply().unwrap().text(), echo_of(b"hello"));
        }
    }
    server.stop();
}

#[test]
fn requests_split_byte_by_byte() {
    let server = serve(options(), Echo);
    let addr = server.addr;
    let mut client = Client::connect(addr);
    client.send_bytewise(
        b"GET /first HTTP/1.1\r\nHost: t\r\nX-Long: abcdefghijklmnopqrstuvwxyz\r\n\r\n",
    );
    assert_eq!(client.reply().unwrap().text(), "/first");
    client
        .send_bytewise(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\nhello world");
    assert_eq!(client.reply().unwrap().text(), echo_of(b"hello world"));
    client.send_bytewise(b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n6\r\n world\r\n0\r\nT: 1\r\n\r\n");
    assert_eq!(client.reply().unwrap().text(), echo_of(b"hello world"));
    client.send_bytewise(b"GET /last HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(client.reply().unwrap().text(), "/last");
    server.stop();
}

/// Bodies bigger than the pipe's pause threshold stream through it (the
/// socket reader pauses and resumes), for both framings.
#[test]
fn large_bodies_stream_through_the_pipe() {
    let server = serve(options(), Echo);
    let addr = server.addr;
    let body: Vec<u8> =
        (0..3_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
    let expected = echo_of(&body);
    let mut client = Client::connect(addr);
    let mut writer = client.stream().try_clone().unwrap();
    let sent = body.clone();
    let sender = std::thread::spawn(move || {
        writer
            .write_all(
                format!("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n", sent.len())
                    .as_bytes(),
            )
            .unwrap();
        writer.write_all(&sent).unwrap();
        writer
            .write_all(b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
            .unwrap();
        for chunk in sent.chunks(70_001) {
            writer.write_all(format!("{:x}\r\n", chunk.len()).as_bytes()).unwrap();
            writer.write_all(chunk).unwrap();
            writer.write_all(b"\r\n").unwrap();
        }
        writer.write_all(b"0\r\n\r\n").unwrap();
    });
    assert_eq!(client.reply().unwrap().text(), expected);
    assert_eq!(client.reply().unwrap().text(), expected);
    sender.join().unwrap();
    server.stop();
}

#[test]
fn expect_100_continue() {
    let server = serve(options(), Echo);
    let addr = server.addr;
    let mut client = Client::connect(addr);
    client.send(
        b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n",
    );
    let interim = client.reply().unwrap();
    assert_eq!(interim.status, 100, "the server asks for the body before it arrives");
    client.send(b"body");
    assert_eq!(client.reply().unwrap().text(), echo_of(b"body"));
    // Refused before the body: 413 and no 100.
    let server2 = serve(options().max_body(10), Echo);
    let addr2 = server2.addr;
    let mut client = Client::connect(addr2);
    client.send(
        b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\nExpect: 100-continue\r\n\r\n",
    );
    let reply = client.reply().unwrap();
    assert_eq!(reply.status, 413);
    assert!(reply.closes());
    for server in [server, server2] {
        server.stop();
    }
}

/// `Expect` is a list (RFC 9110 10.1.1) whose empty elements are ignored
/// (5.6.1.2): `100-continue` among empty elements, or twice, is still
/// `100-continue`; an empty `Expect` asks nothing; any other member is 417.
#[test]
fn expect_is_a_list() {
    let server = serve(options(), Echo);
    let addr = server.addr;
    let body = echo_of(b"body");
    for (value, interim) in [
        ("100-continue,", true),
        (", 100-continue", true),
        ("100-continue, ,", true),
        ("100-continue, 100-continue", true),
        ("", false),
        (" , ", false),
    ] {
        let mut client = Client::connect(addr);
        let head = format!(
            "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nExpect: {value}\r\n\r\n"
        );
        client.send(head.as_bytes());
        if interim {
            assert_eq!(client.reply().unwrap().status, 100, "Expect: {value:?}");
        }
        client.send(b"body");
        let reply = client.reply().unwrap();
        assert_eq!((reply.status, reply.text()), (200, body.clone()), "Expect: {value:?}");
    }
    let mut client = Client::connect(addr);
    client.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nExpect: 100-continue, teapot\r\n\r\nbody");
    let reply = client.reply().unwrap();
    assert_eq!(reply.status, 417);
    assert!(reply.closes());
    server.stop();
}

#[test]
fn streamed_responses_are_chunked() {
    let server = serve(options(), Echo);
    let addr = server.addr;
    let mut client = Client::connect(addr);
    let reply = client.get("/stream?1000");
    assert_eq!(reply.header("transfer-encoding"), Some("chunked"));
    let expected: String = (0..1000).map(|i| format!("line {i}\n")).collect();
    assert_eq!(reply.text(), expected);
    // HTTP/1.0: close-delimited.
    let mut client = Client::connect(addr);
    client.send(b"GET /stream?3 HTTP/1.0\r\n\r\n");
    let reply = client.reply().unwrap();
    assert_eq!(reply.text(), "line 0\nline 1\nline 2\n");
    server.stop();
}

#[test]
fn a_panicking_handler_closes_only_its_connection() {
    let server = serve(options().workers(1), Echo);
    let addr = server.addr;
    let mut bystander = Client::connect(addr);
    assert_eq!(bystander.get("/before").text(), "/before");
    let mut client = Client::connect(addr);
    client.send(b"GET /panic HTTP/1.1\r\nHost: t\r\n\r\n");
    let reply = client.reply().unwrap();
    assert_eq!(reply.status, 500, "the panicking request gets 500");
    assert!(reply.closes());
    client.expect_closed();
    assert_eq!(bystander.get("/after").text(), "/after");
    assert_eq!(Client::connect(addr).get("/new").text(), "/new");
    server.stop();
}

#[test]
fn a_thousand_concurrent_connections() {
    let server = serve(options(), Echo);
    let addr = server.addr;
    let mut clients: Vec<Client> = (0..1000).map(|_| Client::connect(addr)).collect();
    for (i, client) in clients.iter_mut().enumerate() {
        client.send(format!("GET /c{i} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while server.handle().stats().connections < 1000 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(server.handle().stats().connections, 1000, "all 1000 open at once");
    for round in 0..3 {
        for (i, client) in clients.iter_mut().enumerate() {
            assert_eq!(client.reply().unwrap().text(), format!("/c{i}"), "round {round}");
            client.send(format!("GET /c{i} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
        }
    }
    for (i, client) in clients.iter_mut().enumerate() {
        assert_eq!(client.reply().unwrap().text(), format!("/c{i}"));
    }
    assert!(server.handle().stats().requests >= 3000);
    drop(clients);
    server.stop();
}
