//! A request's trailer fields reach the application that reads the body:
//! a chunked body's trailer section (RFC 9112 §7.1.2) and an HTTP/2
//! stream's trailing HEADERS (RFC 9113 §8.1), through
//! `RequestBody::take_trailers` after the body's end, never before it and
//! never after a failed body. (The tower half, `tower::Body`'s trailers
//! frame, is in `tower_request_trailers.rs`.)

mod common;

use std::io::Read;
use std::sync::mpsc;
use std::time::Duration;

use common::h2raw::{Raw, block, frames_until, req_with};
use falconet_server::h2::frame::kind;
use falconet_server::{Handler, Request, RequestBody, Responder, Response};

/// Takes every request's body and hands it, with a responder, to a
/// thread that reads it to its end and answers with what it read:
/// `"<body> | name=value; ..."`, or `"<body> | none"`, or the read's
/// error kind.
struct Reads;

impl Handler for Reads {
    type State = ();

    fn head(&self, request: &Request<'_>) {
        request.stream_body();
    }

    fn body(&self, _: &mut (), _: &[u8]) {}

    fn respond(&self, (): (), response: &mut Response<'_>) {
        let Some(body) = response.take_body() else {
            let _ = response.body(b"no body");
            return;
        };
        let responder = response.defer().expect("defer");
        std::thread::spawn(move || answer(body, responder));
    }
}

fn answer(mut body: RequestBody, responder: Responder) {
    let early = body.take_trailers();
    let mut data = Vec::new();
    let text = match body.read_to_end(&mut data) {
        Ok(_) => {
            let trailers = body.take_trailers();
            let again = body.take_trailers();
            let listed = match &trailers {
                None => "none".to_string(),
                Some(t) => t
                    .iter()
                    .map(|(n, v)| format!("{n}={}", String::from_utf8_lossy(v)))
                    .collect::<Vec<_>>()
                    .join("; "),
            };
            assert!(early.is_none() && again.is_none(), "only once, and only at the end");
            format!("{} | {listed}", String::from_utf8_lossy(&data))
        }
        Err(error) => {
            assert_eq!(body.take_trailers(), None, "none after a failed body");
            format!("failed: {:?}", error.kind())
        }
    };
    let _ = responder.body(text.as_bytes());
}

fn http1(request: &[u8], bytewise: bool) -> String {
    let server = common::serve(common::options().workers(1), Reads);
    let mut client = common::Client::connect(server.addr);
    if bytewise {
        client.send_bytewise(request);
    } else {
        client.send(request);
    }
    client.reply().expect("a reply").text()
}

const CHUNKED: &[u8] = b"POST /t HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";

#[test]
fn a_chunked_bodys_trailers_follow_its_end() {
    let mut request = CHUNKED.to_vec();
    request.extend_from_slice(b"5\r\nhello\r\n0\r\nChecksum: c0ffee\r\nx-Count:\t 2 \r\n\r\n");
    for bytewise in [false, true] {
        assert_eq!(http1(&request, bytewise), "hello | Checksum=c0ffee; x-Count=2", "{bytewise}");
    }
}

#[test]
fn bodies_without_a_trailer_section_have_none() {
    let mut chunked = CHUNKED.to_vec();
    chunked.extend_from_slice(b"5\r\nhello\r\n0\r\n\r\n");
    assert_eq!(http1(&chunked, false), "hello | none");
    let sized = b"POST /t HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello";
    assert_eq!(http1(sized, false), "hello | none");
}

/// The most the decoder keeps (64 fields, 8 KiB) arrives whole; one field
/// more is a malformed body (`400` territory), whose read fails and which
/// leaves no trailers behind.
#[test]
fn trailers_at_their_bounds() {
    let fields = |n: usize| (0..n).map(|i| format!("X-{i}: v{i}\r\n")).collect::<String>();
    let mut request = CHUNKED.to_vec();
    request.extend_from_slice(format!("1\r\na\r\n0\r\n{}\r\n", fields(64)).as_bytes());
    let text = http1(&request, false);
    let expected: Vec<String> = (0..64).map(|i| format!("X-{i}=v{i}")).collect();
    assert_eq!(text, format!("a | {}", expected.join("; ")));

    let mut request = CHUNKED.to_vec();
    request.extend_from_slice(format!("1\r\na\r\n0\r\n{}\r\n", fields(65)).as_bytes());
    assert_eq!(http1(&request, false), "failed: InvalidData");
}

/// Two requests on one connection: the second's body has no trailers,
/// and does not see the first's.
#[test]
fn trailers_belong_to_their_own_request() {
    let server = common::serve(common::options().workers(1), Reads);
    let mut client = common::Client::connect(server.addr);
    let mut first = CHUNKED.to_vec();
    first.extend_from_slice(b"1\r\na\r\n0\r\nA: 1\r\n\r\n");
    client.send(&first);
    assert_eq!(client.reply().unwrap().text(), "a | A=1");
    let mut second = CHUNKED.to_vec();
    second.extend_from_slice(b"1\r\nb\r\n0\r\n\r\n");
    client.send(&second);
    assert_eq!(client.reply().unwrap().text(), "b | none");
}

/// HTTP/2 over frames of our own: HEADERS, DATA, then a HEADERS with
/// END_STREAM carrying the trailers (also when `content-length` was
/// declared and reached, and when they come in a CONTINUATION); a stream
/// that ends with DATA has none.
#[test]
fn an_http2_streams_trailers_follow_its_end() {
    let server = common::serve(common::options().workers(1), Reads);
    let mut raw = Raw::handshake(server.addr, &[]);
    let head = |length: Option<&str>| match length {
        Some(length) => req_with("POST", "/t", &[("content-length", length)]),
        None => req_with("POST", "/t", &[]),
    };
    let trailers = block(&[("checksum", "c0ffee"), ("x-count", "2")]);
    // Stream 1: trailers after DATA.
    raw.headers(1, &head(None), false);
    raw.data(1, b"hello", false);
    raw.headers(1, &trailers, true);
    // Stream 3: the declared length reached, then trailers.
    raw.headers(3, &head(Some("5")), false);
    raw.data(3, b"hello", false);
    raw.headers(3, &trailers, true);
    // Stream 5: trailers split into HEADERS + CONTINUATION.
    raw.headers(5, &head(None), false);
    raw.data(5, b"hello", false);
    let (a, b) = trailers.split_at(3);
    raw.frame(kind::HEADERS, 0x1, 5, a); // END_STREAM, no END_HEADERS
    raw.frame(kind::CONTINUATION, 0x4, 5, b);
    // Stream 7: ends with its DATA.
    raw.headers(7, &head(None), false);
    raw.data(7, b"hello", true);
    // Stream 9: `content-length: 0`, no DATA at all, then trailers (a
    // body of length 0, still open: found by the review).
    raw.headers(9, &head(Some("0")), false);
    std::thread::sleep(Duration::from_millis(50));
    raw.headers(9, &trailers, true);
    let answers = bodies(&mut raw, &[1, 3, 5, 7, 9]);
    assert_eq!(answers[0], "hello | checksum=c0ffee; x-count=2");
    assert_eq!(answers[1], "hello | checksum=c0ffee; x-count=2");
    assert_eq!(answers[2], "hello | checksum=c0ffee; x-count=2");
    assert_eq!(answers[3], "hello | none");
    assert_eq!(answers[4], " | checksum=c0ffee; x-count=2");
}

/// HTTP/2 trailers have HTTP/1.1's bounds (64 fields; 8 KiB, a field
/// counted as `name:value`): at them they arrive whole; one past them
/// resets the stream with PROTOCOL_ERROR (a malformed request, RFC 9113
/// 8.1.1) where HTTP/1.1's body read fails (`trailers_at_their_bounds`);
/// the connection goes on.
#[test]
fn http2_trailers_have_http1s_bounds() {
    let server = common::serve(common::options().workers(1), Reads);
    let mut raw = Raw::handshake(server.addr, &[]);
    let names: Vec<String> = (0..65).map(|i| format!("x-{i}")).collect();
    let fields = |n: usize| names[..n].iter().map(|name| (name.as_str(), "v")).collect::<Vec<_>>();
    let value = "b".repeat(8192 - "x-big:".len());
    let longer = format!("{value}b");
    let cases = [
        (1, fields(64)),
        (3, fields(65)),
        (5, vec![("x-big", value.as_str())]),
        (7, vec![("x-big", longer.as_str())]),
    ];
    for (id, trailers) in &cases {
        raw.headers(*id, &req_with("POST", "/t", &[]), false);
        raw.data(*id, b"a", false);
        raw.headers(*id, &block(trailers), true);
    }
    raw.headers(9, &req_with("POST", "/t", &[]), false);
    raw.data(9, b"z", true);
    let pending = std::cell::RefCell::new(vec![1, 3, 5, 7, 9]);
    let frames = frames_until(&mut raw, Duration::from_secs(10), |f| {
        if f.end_stream() || f.kind == kind::RST_STREAM {
            pending.borrow_mut().retain(|&id| id != f.stream);
        }
        pending.borrow().is_empty()
    });
    assert!(pending.borrow().is_empty(), "unanswered: {:?}", pending.borrow());
    let reset = |id: u32| {
        frames.iter().any(|f| f.kind == kind::RST_STREAM && f.stream == id && f.code() == 1)
    };
    let body = |id: u32| {
        let data = frames.iter().filter(|f| f.kind == kind::DATA && f.stream == id);
        String::from_utf8(data.flat_map(|f| f.payload.clone()).collect()).unwrap()
    };
    let listed: Vec<String> = (0..64).map(|i| format!("x-{i}=v")).collect();
    assert_eq!(body(1), format!("a | {}", listed.join("; ")));
    assert!(reset(3) && body(3).is_empty(), "65 fields: {}", body(3));
    assert_eq!(body(5), format!("a | x-big={value}"));
    assert!(reset(7) && body(7).is_empty(), "8,193 bytes: {}", body(7));
    assert_eq!(body(9), "z | none");
}

/// Each stream's answer body, by stream id, once every one has ended.
fn bodies(raw: &mut Raw, ids: &[u32]) -> Vec<String> {
    let mut bodies = vec![Vec::new(); ids.len()];
    let ended = std::cell::RefCell::new(vec![false; ids.len()]);
    let frames = frames_until(raw, Duration::from_secs(10), |f| {
        let mut ended = ended.borrow_mut();
        if let Some(i) = ids.iter().position(|&id| id == f.stream)
            && f.end_stream()
        {
            ended[i] = true;
        }
        ended.iter().all(|&e| e)
    });
    for f in frames {
        if f.kind == kind::DATA
            && let Some(i) = ids.iter().position(|&id| id == f.stream)
        {
            bodies[i].extend_from_slice(&f.payload);
        }
    }
    bodies.into_iter().map(|b| String::from_utf8(b).unwrap()).collect()
}

/// `take_trailers` on a body still arriving is `None`, also when the
/// worker has already decoded the stream's trailers (the read has not
/// reached the end): they wait for the read that ends the body.
#[test]
fn trailers_wait_for_the_read_that_ends_the_body() {
    let (tx, rx) = mpsc::channel();
    struct Hands(mpsc::Sender<(RequestBody, Responder)>);
    impl Handler for Hands {
        type State = ();
        fn head(&self, request: &Request<'_>) {
            request.stream_body();
        }
        fn body(&self, _: &mut (), _: &[u8]) {}
        fn respond(&self, (): (), response: &mut Response<'_>) {
            let body = response.take_body().expect("a body");
            let _ = self.0.send((body, response.defer().expect("defer")));
        }
    }
    let server = common::serve(common::options().workers(1), Hands(tx));
    let mut raw = Raw::handshake(server.addr, &[]);
    let head =
        block(&[(":method", "POST"), (":scheme", "http"), (":path", "/"), (":authority", "x")]);
    raw.headers(1, &head, false);
    raw.data(1, b"abc", false);
    raw.headers(1, &block(&[("a", "1")]), true);
    let (mut body, responder) = rx.recv_timeout(Duration::from_secs(5)).expect("the body");
    // Let the worker decode the trailers before the first read.
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(body.take_trailers(), None, "the body has not been read yet");
    let mut first = [0u8; 2];
    body.read_exact(&mut first).unwrap();
    assert_eq!(body.take_trailers(), None, "one byte still to read");
    let mut rest = Vec::new();
    body.read_to_end(&mut rest).unwrap();
    assert_eq!(rest, b"c");
    let trailers = body.take_trailers().expect("the end read");
    assert_eq!(trailers.iter().collect::<Vec<_>>(), [("a", &b"1"[..])]);
    responder.body(b"ok").unwrap();
    assert!(common::h2raw::answered_within(&mut raw, 1, Duration::from_secs(5)));
}

/// Answers with trailers from a thread of its own, by path: `/stream`
/// writes `hello` first, `/now` writes nothing (HTTP/1.1 then streams
/// chunked for them), `/none` has no fields to send, `/204` has no body.
struct Trails;

impl Handler for Trails {
    type State = String;

    fn head(&self, request: &Request<'_>) -> String {
        request.path().to_string()
    }

    fn respond(&self, path: String, response: &mut Response<'_>) {
        if path == "/204" {
            response.status(falconet_server::Status::NO_CONTENT).unwrap();
        }
        let mut responder = response.defer().expect("defer");
        std::thread::spawn(move || {
            let mut trailers = falconet_server::Trailers::new();
            if path != "/none" {
                trailers.append("Grpc-Status", b"0").unwrap();
                trailers.append("content-type", b"text/plain").unwrap(); // left out
                trailers.append("x-checksum", b" c0ffee ").unwrap();
            }
            if path == "/stream" {
                responder.write_blocking(b"hello").unwrap();
            }
            responder.finish_with_trailers(&trailers).unwrap();
        });
    }
}

/// Sends `request` (which says `Connection: close`) and returns all that
/// comes back, the head's `Date` line taken out.
fn exchange(request: &str) -> String {
    let server = common::serve(common::options().workers(1), Trails);
    let mut tcp = common::connect(server.addr);
    std::io::Write::write_all(&mut tcp, request.as_bytes()).unwrap();
    let (bytes, end) = common::read_for(&mut tcp, Duration::from_secs(10));
    assert_eq!(end, common::End::Eof, "{}", String::from_utf8_lossy(&bytes));
    let text = String::from_utf8(bytes).unwrap();
    text.split("\r\n").filter(|line| !line.starts_with("Date: ")).collect::<Vec<_>>().join("\r\n")
}

#[test]
fn a_responders_trailers_end_an_http11_chunked_body() {
    let get = |path: &str| format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let head = "HTTP/1.1 200 OK\r\nServer: falconet\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    let trailers = "0\r\nGrpc-Status: 0\r\nx-checksum: c0ffee\r\n\r\n";
    assert_eq!(exchange(&get("/stream")), format!("{head}5\r\nhello\r\n{trailers}"));
    assert_eq!(exchange(&get("/now")), format!("{head}{trailers}"));
    // Nothing to send: an ordinary empty body.
    let empty =
        "HTTP/1.1 200 OK\r\nServer: falconet\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    assert_eq!(exchange(&get("/none")), empty);
}

/// Where HTTP/1 has no place for them they are dropped: `HEAD`, a `204`,
/// HTTP/1.0 (whose streamed body ends with the connection).
#[test]
fn trailers_without_a_place_are_dropped() {
    let head_request = "HEAD /now HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let answer = exchange(head_request);
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n") && answer.ends_with("\r\n\r\n"), "{answer}");
    assert!(!answer.contains("Grpc-Status") && !answer.contains("chunked"), "{answer}");
    let no_content = exchange("GET /204 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert!(no_content.starts_with("HTTP/1.1 204 No Content\r\n"), "{no_content}");
    assert!(no_content.ends_with("\r\n\r\n") && !no_content.contains("Grpc"), "{no_content}");
    let old = exchange("GET /stream HTTP/1.0\r\n\r\n");
    assert!(old.ends_with("\r\n\r\nhello"), "{old}");
    assert!(!old.contains("Grpc") && !old.contains("chunked"), "{old}");
}

/// Over HTTP/2: the head, the data, then a HEADERS frame with END_STREAM
/// and the fields (names in lower case, the left-out one absent); with no
/// data, the trailers follow the head at once.
#[test]
fn a_responders_trailers_end_an_http2_stream() {
    let server = common::serve(common::options().workers(1), Trails);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &common::h2raw::req("GET", "/stream"), true);
    raw.headers(3, &common::h2raw::req("GET", "/now"), true);
    // Each stream's frame kinds, and the fields of its last HEADERS.
    let mut kinds: [Vec<u8>; 2] = [Vec::new(), Vec::new()];
    let mut fields: [Vec<String>; 2] = [Vec::new(), Vec::new()];
    let mut ended = 0;
    while ended < 2 {
        let f = raw.next_frame(Duration::from_secs(10)).expect("a frame");
        let i = match f.stream {
            1 => 0,
            3 => 1,
            _ => continue,
        };
        assert!(!kinds[i].is_empty() || f.kind == kind::HEADERS, "stream {}", f.stream);
        kinds[i].push(f.kind);
        if f.kind == kind::HEADERS {
            let mut block = Vec::new();
            raw.decoder
                .decode(&f.payload, |field| {
                    block.push(format!(
                        "{}: {}",
                        String::from_utf8_lossy(field.name),
                        String::from_utf8_lossy(field.value)
                    ));
                })
                .unwrap();
            fields[i] = block;
        }
        if f.end_stream() {
            assert_eq!(f.kind, kind::HEADERS, "the trailers end stream {}", f.stream);
            ended += 1;
        }
    }
    assert_eq!(kinds[0], [kind::HEADERS, kind::DATA, kind::HEADERS]);
    assert_eq!(kinds[1], [kind::HEADERS, kind::HEADERS]);
    for block in fields {
        assert_eq!(block, ["grpc-status: 0", "x-checksum: c0ffee"]);
    }
}

/// The client's SETTINGS_MAX_HEADER_LIST_SIZE is advisory (RFC 9113
/// §6.5.2) and not applied to what the server sends, as nghttp2, nginx,
/// Envoy and Netty decide: a client advising 1 byte still gets its
/// head, body and trailers (were it honoured, such a client could have
/// every answer refused).
#[test]
fn a_clients_max_header_list_size_is_advisory() {
    let server = common::serve(common::options().workers(1), Trails);
    let mut raw = Raw::handshake(server.addr, &[(0x6, 1)]);
    raw.headers(1, &common::h2raw::req("GET", "/stream"), true);
    let frames =
        frames_until(&mut raw, Duration::from_secs(10), |f| f.stream == 1 && f.end_stream());
    let kinds: Vec<u8> = frames.iter().filter(|f| f.stream == 1).map(|f| f.kind).collect();
    assert_eq!(kinds, [kind::HEADERS, kind::DATA, kind::HEADERS]);
}

/// A synchronous handler: counts the body on the worker and lists the
/// trailers `Handler::trailers` gave it (`x-panic` makes it panic there).
struct OnWorker;

impl Handler for OnWorker {
    type State = (usize, Option<String>);

    fn head(&self, _: &Request<'_>) -> (usize, Option<String>) {
        (0, None)
    }

    fn body(&self, state: &mut (usize, Option<String>), chunk: &[u8]) {
        state.0 += chunk.len();
    }

    fn trailers(&self, state: &mut (usize, Option<String>), trailers: &falconet_server::Trailers) {
        assert!(state.1.is_none(), "trailers once per request");
        assert!(trailers.get("x-panic").is_none(), "the handler panicked on purpose");
        let listed: Vec<String> =
            trailers.iter().map(|(n, v)| format!("{n}={}", String::from_utf8_lossy(v))).collect();
        state.1 = Some(listed.join("; "));
    }

    fn respond(&self, (len, trailers): (usize, Option<String>), response: &mut Response<'_>) {
        let text = format!("{len} | {}", trailers.as_deref().unwrap_or("none"));
        response.body(text.as_bytes()).unwrap();
    }
}

/// Over HTTP/1.1: after the last chunk, before `respond`, per request
/// (pipelined requests with and without trailers, a sized body), also
/// with the section arriving a byte at a time.
#[test]
fn a_synchronous_handler_gets_the_trailers_before_respond() {
    let server = common::serve(common::options().workers(1), OnWorker);
    let mut pipelined = CHUNKED.to_vec();
    pipelined.extend_from_slice(b"5\r\nhello\r\n0\r\nA: 1\r\nb:2\r\n\r\n");
    pipelined.extend_from_slice(CHUNKED);
    pipelined.extend_from_slice(b"2\r\nhi\r\n0\r\n\r\n");
    pipelined.extend_from_slice(b"POST /t HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc");
    pipelined.extend_from_slice(CHUNKED);
    pipelined.extend_from_slice(b"0\r\nC: 3\r\n\r\n");
    for bytewise in [false, true] {
        let mut client = common::Client::connect(server.addr);
        if bytewise {
            client.send_bytewise(&pipelined);
        } else {
            client.send(&pipelined);
        }
        let answers: Vec<String> = (0..4).map(|_| client.reply().unwrap().text()).collect();
        assert_eq!(answers, ["5 | A=1; b=2", "2 | none", "3 | none", "0 | C=3"], "{bytewise}");
    }
}

/// Over HTTP/2, the same; a panic in `trailers` answers that stream 500,
/// and the connection goes on.
#[test]
fn a_synchronous_handler_gets_http2_trailers() {
    let server = common::serve(common::options().workers(1), OnWorker);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &req_with("POST", "/t", &[]), false);
    raw.data(1, b"hello", false);
    raw.headers(1, &block(&[("a", "1"), ("b", "2")]), true);
    raw.headers(3, &req_with("POST", "/t", &[]), false);
    raw.data(3, b"hi", true);
    raw.headers(5, &req_with("POST", "/t", &[]), false);
    raw.headers(5, &block(&[("x-panic", "1")]), true);
    raw.headers(7, &req_with("POST", "/t", &[("content-length", "0")]), false);
    raw.headers(7, &block(&[("c", "3")]), true);
    let answers = bodies(&mut raw, &[1, 3, 7]);
    assert_eq!(answers, ["5 | a=1; b=2", "2 | none", "0 | c=3"]);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &req_with("POST", "/t", &[]), false);
    raw.headers(1, &block(&[("x-panic", "1")]), true);
    let frames =
        frames_until(&mut raw, Duration::from_secs(5), |f| f.stream == 1 && f.end_stream());
    let head = frames.iter().find(|f| f.stream == 1 && f.kind == kind::HEADERS).expect("an answer");
    let mut status = Vec::new();
    // frames_until decoded it already; a fresh decoder reads the first block.
    falconet_server::h2::hpack::Decoder::new(4096)
        .decode(&head.payload, |field| {
            if field.name == b":status" {
                status = field.value.to_vec();
            }
        })
        .unwrap();
    assert_eq!(status, b"500");
}

/// Trailers past what a connection keeps room for (1 KiB) arrive whole,
/// and the small ones after them too (the room is freed and made again).
#[test]
fn large_trailers_then_small_ones_on_one_connection() {
    let server = common::serve(common::options().workers(1), OnWorker);
    let mut client = common::Client::connect(server.addr);
    let big = "v".repeat(6000);
    for value in [big.as_str(), "small", big.as_str(), "s"] {
        let mut request = CHUNKED.to_vec();
        request.extend_from_slice(format!("1\r\na\r\n0\r\nX: {value}\r\n\r\n").as_bytes());
        client.send(&request);
        assert_eq!(client.reply().unwrap().text(), format!("1 | X={value}"));
    }
}

/// Day-one edges of `finish_with_trailers`: a 64 KiB trailer value and
/// 200 fields go out whole in the last chunk; a client gone before it is
/// called does not make it wait.
#[test]
fn finish_with_trailers_at_the_edges() {
    let (tx, rx) = mpsc::channel();
    struct Hands(mpsc::Sender<Responder>);
    impl Handler for Hands {
        type State = ();
        fn head(&self, _: &Request<'_>) {}
        fn respond(&self, (): (), response: &mut Response<'_>) {
            let _ = self.0.send(response.defer().expect("defer"));
        }
    }
    let server = common::serve(common::options().workers(1), Hands(tx));
    let mut big = falconet_server::Trailers::new();
    let value = "v".repeat(64 * 1024);
    big.append("x-big", value.as_bytes()).unwrap();
    for i in 0..200 {
        big.append(&format!("x-{i}"), b"1").unwrap();
    }
    let mut tcp = common::connect(server.addr);
    std::io::Write::write_all(&mut tcp, b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let responder = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    responder.finish_with_trailers(&big).unwrap();
    let (bytes, end) = common::read_for(&mut tcp, Duration::from_secs(10));
    assert_eq!(end, common::End::Eof);
    let text = String::from_utf8(bytes).unwrap();
    let tail = format!("\r\n\r\n0\r\nx-big: {value}\r\nx-0: 1\r\n");
    assert!(text.contains(&tail) && text.ends_with("x-199: 1\r\n\r\n"), "{}", &text[..200]);
    // The client leaves before the answer (its FIN, which a client that
    // half-closes also sends: the server still answers): the call
    // returns at once, the answer sent or `Closed`, never a wait.
    let mut tcp = common::connect(server.addr);
    std::io::Write::write_all(&mut tcp, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let responder = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    drop(tcp);
    std::thread::sleep(Duration::from_millis(100));
    let result = responder.finish_with_trailers(&big);
    assert!(matches!(result, Ok(()) | Err(falconet_server::ResponseError::Closed)), "{result:?}");
}
