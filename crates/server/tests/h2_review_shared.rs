//! Independent adversarial review of 67eb8c9..c27daae: shared (in-place)
//! DATA payloads, Response::write_bytes/body_bytes, the serve hints, and
//! receive_chunk. Hand-built frames over real TCP, plus the Connection API.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::h2raw::{Frame, Raw, req};
use common::serve;
use falconet_server::h2::frame::{self, ErrorCode, FrameHeader, PREFACE, kind};
use falconet_server::{Handler, Options, Request, Response, Status};

// ---------------------------------------------------------------- client

impl Raw {
    /// Every frame until the acknowledgement of a PING sent now (or
    /// `timeout`); HEADERS decoded to keep HPACK in step.
    fn drain_until_ping_ack(&mut self, timeout: Duration) -> (Vec<Frame>, bool) {
        self.frame(kind::PING, 0, 0, b"reviewxx");
        let deadline = Instant::now() + timeout;
        let mut frames = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(f) = self.next_frame(left) else { return (frames, false) };
            if f.kind == kind::HEADERS {
                let _ = self.decoder.decode(&f.payload, |_| {});
            }
            if f.kind == kind::PING && f.flags & 1 != 0 && f.payload == b"reviewxx" {
                return (frames, true);
            }
            frames.push(f);
        }
    }

    /// The whole response on `stream`: status, fields, body, and every
    /// frame of the stream seen until END_STREAM (or RST/GOAWAY/timeout).
    fn response(&mut self, stream: u32, timeout: Duration) -> Answer {
        let deadline = Instant::now() + timeout;
        let mut answer = Answer::default();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(f) = self.next_frame(left) else {
                answer.outcome = "timeout/EOF".into();
                return answer;
            };
            if f.kind == kind::HEADERS {
                let mut fields = Vec::new();
                self.decoder
                    .decode(&f.payload, |field| {
                        fields.push((
                            String::from_utf8_lossy(field.name).into_owned(),
                            String::from_utf8_lossy(field.value).into_owned(),
                        ))
                    })
                    .unwrap();
                if f.stream == stream {
                    for (n, v) in fields {
                        if n == ":status" {
                            answer.statuses.push(v.parse().unwrap());
                        } else {
                            answer.fields.push((n, v));
                        }
                    }
                }
            }
            if f.stream == stream {
                if f.kind == kind::DATA {
                    answer.body.extend_from_slice(&f.payload);
                }
                answer.frames.push((f.kind, f.flags));
                if f.kind == kind::RST_STREAM {
                    answer.outcome = "RST".into();
                    return answer;
                }
                if f.end_stream() {
                    answer.outcome = "end".into();
                    return answer;
                }
            }
            if f.kind == kind::GOAWAY && f.payload.len() >= 8 && f.payload[4..8] != [0; 4] {
                answer.outcome = format!("GOAWAY {:?}", &f.payload[4..8]);
                return answer;
            }
        }
    }
}

#[derive(Debug, Default)]
struct Answer {
    statuses: Vec<u16>,
    fields: Vec<(String, String)>,
    body: Vec<u8>,
    frames: Vec<(u8, u8)>,
    outcome: String,
}

impl Answer {
    fn status(&self) -> u16 {
        self.statuses.last().copied().unwrap_or(0)
    }
    fn field(&self, name: &str) -> Option<&str> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
    fn end_streams(&self) -> usize {
        self.frames
            .iter()
            .filter(|(k, f)| f & 1 != 0 && (*k == kind::DATA || *k == kind::HEADERS))
            .count()
    }
}

/// `n` bytes that show any piece out of place.
fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

fn param(target: &str, key: &str) -> Option<usize> {
    let query = target.split_once('?')?.1;
    query.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == key).then(|| v.parse().ok()).flatten()
    })
}

// --------------------------------------------------------------- handler

/// `/pieces?n=N&s=S`: N write_bytes pieces of S bytes (the pattern);
/// `/bb?n=N&c=C`: status C, body_bytes(pattern N); `/wb?n=N&c=C`: status
/// C, write_bytes(pattern N), then an empty write_bytes; `/mix`: copied and
/// shared pieces, empty ones among them; `/panic`: a shared piece, then a
/// panic; `/count`: the body's length.
#[derive(Clone, Copy)]
struct Shared;

enum State {
    Pieces(usize, usize),
    Bb(usize, u16),
    Wb(usize, u16),
    Mix,
    Panic,
    Count(u64),
    Copy(usize),
}

impl Handler for Shared {
    type State = State;

    fn head(&self, request: &Request<'_>) -> State {
        let t = request.target();
        let n = param(t, "n").unwrap_or(0);
        let c = param(t, "c").unwrap_or(200) as u16;
        match request.path() {
            "/pieces" => State::Pieces(n, param(t, "s").unwrap_or(1)),
            "/bb" => State::Bb(n, c),
            "/wb" => State::Wb(n, c),
            "/mix" => State::Mix,
            "/panic" => State::Panic,
            "/copy" => State::Copy(n),
            _ => State::Count(0),
        }
    }

    fn body(&self, state: &mut State, chunk: &[u8]) {
        if let State::Count(n) = state {
            *n += chunk.len() as u64;
        }
    }

    fn respond(&self, state: State, response: &mut Response<'_>) {
        match state {
            State::Pieces(n, s) => {
                let all = Bytes::from(pattern(n * s));
                for i in 0..n {
                    response.write_bytes(all.slice(i * s..(i + 1) * s)).unwrap();
                }
            }
            State::Bb(n, c) => {
                response.status(Status::new(c).unwrap()).unwrap();
                response.body_bytes(Bytes::from(pattern(n))).unwrap();
            }
            State::Wb(n, c) => {
                response.status(Status::new(c).unwrap()).unwrap();
                response.write_bytes(Bytes::from(pattern(n))).unwrap();
                response.write_bytes(Bytes::new()).unwrap();
            }
            State::Mix => {
                response.write_bytes(Bytes::new()).unwrap();
                response.write(b"a").unwrap();
                response.write_bytes(Bytes::from_static(b"bc")).unwrap();
                response.write(b"").unwrap();
                response.write_bytes(Bytes::from_static(b"d")).unwrap();
                response.write_bytes(Bytes::from_static(b"ef")).unwrap();
                response.write(b"gh").unwrap();
                response.write_bytes(Bytes::new()).unwrap();
            }
            State::Panic => {
                response.write_bytes(Bytes::from_static(b"partial")).unwrap();
                panic!("after a shared piece");
            }
            State::Count(n) => response.body(n.to_string().as_bytes()).unwrap(),
            State::Copy(n) => response.body(&pattern(n)).unwrap(),
        }
    }
}

/// Client settings: a stream window of 16 MiB (connection window raised
/// with a WINDOW_UPDATE) so the windows never hold the server back.
fn open_windows(addr: SocketAddr) -> Raw {
    let mut raw = Raw::handshake(addr, &[(frame::setting::INITIAL_WINDOW_SIZE, 16 << 20)]);
    raw.window_update(0, (16 << 20) - 65_535);
    raw
}

// ------------------------------------------------------- the >64 slices

/// A response of more DATA frames than one writev takes (OUTPUT_SLICES =
/// 64 slices = 32 header+payload pairs): 200 small shared pieces. Every
/// byte must arrive promptly; the socket takes the whole first writev, so
/// `Conn::write` leaves `writable` true with output still pending and no
/// event comes to write the rest.
#[test]
fn more_shared_frames_than_one_writev_takes() {
    let server = serve(Options::new().workers(1), Shared);
    let mut raw = open_windows(server.addr);
    raw.headers(1, &req("GET", "/pieces?n=200&s=10"), true);
    let answer = raw.response(1, Duration::from_secs(3));
    assert_eq!(answer.outcome, "end", "got {} of 2000 body bytes", answer.body.len());
    assert_eq!(answer.body, pattern(2000));
}

/// The same through the `h2` crate and the binary's own /bytes (64 KiB
/// static pieces of 16 KiB: 128 frames): a 1 MiB download with open
/// windows.
#[cfg(feature = "tokio")]
#[test]
fn demo_bytes_with_open_windows() {
    let app = tokio::runtime::Runtime::new().unwrap();
    let demo = falconet_server::hello::Demo::new(app.handle().clone());
    let server = serve(Options::new().workers(1), demo);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        let (send, connection) = h2::client::Builder::new()
            .initial_window_size(16 << 20)
            .initial_connection_window_size(16 << 20)
            .handshake::<_, Bytes>(tcp)
            .await
            .unwrap();
        tokio::spawn(async move {
            let _ = connection.await;
        });
        for n in [600_000usize, 1 << 20, 4 << 20, 34 * 16_384 + 100, 33 * 16_384] {
            let mut send = send.clone().ready().await.unwrap();
            let request =
                http::Request::get(format!("http://localhost/bytes?n={n}")).body(()).unwrap();
            let (response, _) = send.send_request(request, true).unwrap();
            let got = tokio::time::timeout(Duration::from_secs(5), async {
                let response = response.await.unwrap();
                let mut body = response.into_body();
                let mut len = 0;
                while let Some(piece) = body.data().await {
                    let piece = piece.unwrap();
                    body.flow_control().release_capacity(piece.len()).unwrap();
                    len += piece.len();
                }
                len
            })
            .await;
            eprintln!("bytes n={n}: {got:?}");
            assert_eq!(got.ok(), Some(n), "/bytes?n={n} within 5 s");
        }
    });
}

// --------------------------------------------------- bodiless and edges

/// HEAD, 204 and 304 with body_bytes / write_bytes: no DATA bytes, the
/// right content-length, END_STREAM exactly once and nothing after it.
#[test]
fn bodiless_responses_with_shared_bodies() {
    let server = serve(Options::new().workers(1), Shared);
    let mut raw = open_windows(server.addr);
    let mut id = 1;
    for (method, path, status, length) in [
        ("HEAD", "/bb?n=1000", 200, Some("1000")),
        ("HEAD", "/wb?n=1000", 200, None),
        ("HEAD", "/pieces?n=100&s=3", 200, None),
        ("GET", "/bb?n=1000&c=204", 204, None),
        ("GET", "/wb?n=1000&c=204", 204, None),
        ("GET", "/bb?n=1000&c=304", 304, Some("1000")),
        ("GET", "/wb?n=1000&c=304", 304, None),
        ("GET", "/bb?n=0", 200, Some("0")),
        ("GET", "/wb?n=0", 200, None),
    ] {
        raw.headers(id, &req(method, path), true);
        let answer = raw.response(id, Duration::from_secs(3));
        assert_eq!(answer.outcome, "end", "{method} {path}: {answer:?}");
        assert_eq!((answer.status(), answer.body.len()), (status, 0), "{method} {path}");
        if status != 304 {
            assert_eq!(answer.field("content-length"), length, "{method} {path}");
        }
        assert_eq!(answer.end_streams(), 1, "{method} {path}: {:?}", answer.frames);
        let (after, acked) = raw.drain_until_ping_ack(Duration::from_secs(2));
        assert!(acked);
        assert!(
            !after.iter().any(|f| f.stream == id),
            "{method} {path}: after END_STREAM {after:?}"
        );
        id += 2;
    }
}

/// Copied and shared pieces interleaved, empty pieces among them, all
/// shared then finish, one byte at a time through a 1-byte stream window.
#[test]
fn interleaved_pieces_through_a_one_byte_window() {
    let server = serve(Options::new().workers(1), Shared);
    let mut raw = Raw::handshake(server.addr, &[(frame::setting::INITIAL_WINDOW_SIZE, 1)]);
    for (id, path, expected) in [
        (1, "/mix", b"abcdefgh".to_vec()),
        (3, "/pieces?n=5&s=3", pattern(15)),
        (5, "/bb?n=7", pattern(7)),
    ] {
        raw.headers(id, &req("GET", path), true);
        let mut body = Vec::new();
        let mut ends = 0;
        let deadline = Instant::now() + Duration::from_secs(5);
        while ends == 0 && Instant::now() < deadline {
            let Some(f) = raw.next_frame(Duration::from_millis(500)) else { continue };
            if f.kind == kind::HEADERS {
                let _ = raw.decoder.decode(&f.payload, |_| {});
            }
            if f.stream != id {
                continue;
            }
            if f.kind == kind::DATA {
                body.extend_from_slice(&f.payload);
                if !f.payload.is_empty() {
                    raw.window_update(id, f.payload.len() as u32);
                }
            }
            ends += usize::from(f.end_stream());
        }
        assert_eq!(body, expected, "{path}");
        let (after, _) = raw.drain_until_ping_ack(Duration::from_secs(2));
        assert!(!after.iter().any(|f| f.stream == id), "{path}: after END_STREAM {after:?}");
    }
}

/// A handler that writes a shared piece and panics: a clean 500, none of
/// the piece.
#[test]
fn panic_after_a_shared_piece() {
    let server = serve(Options::new().workers(1), Shared);
    let mut raw = open_windows(server.addr);
    raw.headers(1, &req("GET", "/panic"), true);
    let answer = raw.response(1, Duration::from_secs(3));
    assert_eq!((answer.status(), answer.body.len(), answer.outcome.as_str()), (500, 0, "end"));
}

// ----------------------------------------- resets, shutdown, held output

/// The client stops reading while a large shared response is framed (the
/// socket full, frames with shared payloads held in the output), then
/// resets the stream: what was framed (at most the stream's 1 MiB window)
/// goes out whole (every frame parses), nothing more of the stream comes
/// after the reset is processed, and the connection serves the next
/// stream (30 pieces: within one writev).
#[test]
fn reset_while_shared_frames_are_queued() {
    let server = serve(Options::new().workers(1), Shared);
    let mut raw = Raw::handshake(server.addr, &[(frame::setting::INITIAL_WINDOW_SIZE, 1 << 20)]);
    raw.window_update(0, (16 << 20) - 65_535);
    raw.headers(1, &req("GET", "/bb?n=12000000"), true);
    std::thread::sleep(Duration::from_millis(400));
    raw.frame(kind::RST_STREAM, 0, 1, &ErrorCode::CANCEL.value().to_be_bytes());
    raw.window_update(1, 8 << 20); // ignored: the stream is gone
    let (frames, acked) = raw.drain_until_ping_ack(Duration::from_secs(10));
    assert!(acked, "no PING ack after {} frames", frames.len());
    let data: usize = frames
        .iter()
        .filter(|f| f.stream == 1 && f.kind == kind::DATA)
        .map(|f| f.payload.len())
        .sum();
    assert!(data <= 1 << 20, "stream 1 sent {data} bytes, past its window");
    assert!(frames.iter().all(|f| f.kind != kind::GOAWAY), "{:?}", frames.last());
    let (late, _) = raw.drain_until_ping_ack(Duration::from_secs(2));
    assert!(!late.iter().any(|f| f.stream == 1 && f.kind == kind::DATA), "DATA after the ack");
    raw.headers(3, &req("GET", "/pieces?n=30&s=7"), true);
    let answer = raw.response(3, Duration::from_secs(3));
    assert_eq!(answer.outcome, "end", "after the reset: {} bytes", answer.body.len());
    assert_eq!(answer.body, pattern(210));
}

/// A graceful shutdown while a shared response is held in the output by a
/// client that does not read: the response completes, intact, then the
/// final GOAWAY.
#[test]
fn shutdown_while_shared_frames_are_queued() {
    let server = serve(Options::new().workers(1), Shared);
    let mut raw = open_windows(server.addr);
    raw.headers(1, &req("GET", "/bb?n=8000000"), true);
    std::thread::sleep(Duration::from_millis(300));
    server.handle().shutdown();
    let mut body = Vec::new();
    let mut goaway = false;
    let mut ended = false;
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let Some(f) = raw.next_frame(Duration::from_secs(2)) else { break };
        match f.kind {
            kind::DATA if f.stream == 1 => {
                body.extend_from_slice(&f.payload);
                ended |= f.end_stream();
            }
            kind::PING if f.flags & 1 == 0 => raw.frame(kind::PING, 1, 0, &f.payload),
            kind::GOAWAY => goaway = true,
            _ => {}
        }
        if ended && goaway {
            break;
        }
    }
    assert!(ended, "{} of 8000000 bytes", body.len());
    assert!(body == pattern(8_000_000), "body differs");
    drop(raw);
    server.join().unwrap();
}

// ------------------------------------------------------------------ hints

/// With max_pending_output tiny, many streams are answered a few at a time
/// (respond leaves its hint set when it stops at the limit): all come.
#[test]
fn held_back_requests_are_all_answered() {
    let server = serve(Options::new().workers(1).max_pending_output(100), Shared);
    let mut raw = open_windows(server.addr);
    let mut ids = Vec::new();
    for i in 0..40u32 {
        let id = 2 * i + 1;
        let path = match i % 3 {
            0 => "/pieces?n=70&s=5",
            1 => "/bb?n=3000",
            _ => "/mix",
        };
        raw.headers(id, &req("GET", path), true);
        ids.push((id, path));
    }
    let mut bodies: std::collections::HashMap<u32, (Vec<u8>, bool)> = Default::default();
    let deadline = Instant::now() + Duration::from_secs(10);
    while bodies.values().filter(|(_, e)| *e).count() < ids.len() && Instant::now() < deadline {
        let Some(f) = raw.next_frame(Duration::from_secs(2)) else { break };
        if f.kind == kind::HEADERS {
            let _ = raw.decoder.decode(&f.payload, |_| {});
        }
        let entry = bodies.entry(f.stream).or_default();
        if f.kind == kind::DATA {
            entry.0.extend_from_slice(&f.payload);
        }
        entry.1 |= f.end_stream();
    }
    for (id, path) in ids {
        let (body, ended) = bodies.remove(&id).unwrap_or_default();
        assert!(ended, "stream {id} {path}: not answered ({} bytes)", body.len());
        let expected = match path {
            "/pieces?n=70&s=5" => pattern(350),
            "/bb?n=3000" => pattern(3000),
            _ => b"abcdefgh".to_vec(),
        };
        assert!(body == expected, "stream {id} {path}");
    }
}

/// An upload over max_body on a streaming request: 413, even when the body
/// arrives in frames cut across the input pipe's blocks.
#[test]
fn upload_over_max_body_is_refused() {
    let server = serve(Options::new().workers(1).max_body(10_000), Shared);
    let mut raw = open_windows(server.addr);
    raw.headers(1, &req("POST", "/count"), false);
    for _ in 0..3 {
        raw.frame(kind::DATA, 0, 1, &[7u8; 4_097]);
    }
    let answer = raw.response(1, Duration::from_secs(3));
    assert_eq!(answer.status(), 413, "{answer:?}");
}

/// h2c upgrade: stream 1's answer of many shared pieces.
#[test]
fn upgrade_answered_with_shared_pieces() {
    let server = serve(Options::new().workers(1), Shared);
    let mut raw = Raw::connect(server.addr);
    let mut out = b"GET /pieces?n=20&s=100 HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABk\r\n\r\n".to_vec();
    out.extend_from_slice(PREFACE);
    frame::encode_settings(&mut out, &[]).unwrap();
    raw.send(&out);
    raw.read_switch();
    let answer = raw.response(1, Duration::from_secs(3));
    assert_eq!(answer.outcome, "end");
    assert_eq!(answer.body, pattern(2000));
}

/// Request frames of every kind split at awkward places over real TCP
/// (the input pipe's blocks are 4 KiB): a padded DATA frame straddling
/// block ends, a HEADERS block in CONTINUATIONs sent byte by byte.
#[test]
fn split_request_frames_over_tcp() {
    let server = serve(Options::new().workers(1), Shared);
    let mut raw = open_windows(server.addr);
    // HEADERS without END_HEADERS, then CONTINUATION, sent bytewise.
    let block = req("POST", "/count");
    let (a, b) = block.split_at(block.len() / 2);
    let mut out = Vec::new();
    FrameHeader { length: a.len() as u32, kind: kind::HEADERS, flags: 0, stream: 1 }
        .encode(&mut out)
        .unwrap();
    out.extend_from_slice(a);
    FrameHeader { length: b.len() as u32, kind: kind::CONTINUATION, flags: 0x4, stream: 1 }
        .encode(&mut out)
        .unwrap();
    out.extend_from_slice(b);
    for byte in &out {
        raw.send(std::slice::from_ref(byte));
    }
    // Padded DATA frames of odd sizes, many in one write.
    let mut total = 0;
    let mut out = Vec::new();
    for i in 0..40usize {
        let data = vec![1u8; 1000 + i * 37];
        let pad = (i * 13 % 200) as u8;
        let mut payload = vec![pad];
        payload.extend_from_slice(&data);
        payload.extend(std::iter::repeat_n(0u8, pad as usize));
        FrameHeader { length: payload.len() as u32, kind: kind::DATA, flags: 0x8, stream: 1 }
            .encode(&mut out)
            .unwrap();
        out.extend_from_slice(&payload);
        total += data.len();
    }
    FrameHeader { length: 0, kind: kind::DATA, flags: 1, stream: 1 }.encode(&mut out).unwrap();
    raw.send(&out);
    let answer = raw.response(1, Duration::from_secs(3));
    assert_eq!(answer.outcome, "end", "{answer:?}");
    assert_eq!(String::from_utf8_lossy(&answer.body), total.to_string());
}

/// A frame header claiming more than SETTINGS_MAX_FRAME_SIZE, its header
/// cut across writes: GOAWAY(FRAME_SIZE_ERROR) once the header is whole,
/// not a wait for 16 MiB.
#[test]
fn oversized_frame_header_split() {
    let server = serve(Options::new().workers(1), Shared);
    let mut raw = open_windows(server.addr);
    let mut out = Vec::new();
    // Fill most of a 4 KiB block so the header straddles a block end.
    let filler = vec![0u8; 4096 - 9 - PREFACE.len() - 9 - 6 - 9 - 4 - 5];
    FrameHeader { length: filler.len() as u32, kind: 0xfa, flags: 0, stream: 0 }
        .encode(&mut out)
        .unwrap();
    out.extend_from_slice(&filler);
    FrameHeader { length: (1 << 24) - 1, kind: kind::DATA, flags: 0, stream: 1 }
        .encode(&mut out)
        .unwrap();
    raw.send(&out[..out.len() - 4]);
    std::thread::sleep(Duration::from_millis(50));
    raw.send(&out[out.len() - 4..]);
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut code = None;
    while Instant::now() < deadline {
        match raw.next_frame(Duration::from_secs(1)) {
            Some(f) if f.kind == kind::GOAWAY => {
                code = Some(u32::from_be_bytes(f.payload[4..8].try_into().unwrap()));
                break;
            }
            Some(_) => {}
            None => break,
        }
    }
    assert_eq!(code, Some(ErrorCode::FRAME_SIZE_ERROR.value()));
}

/// `more_shared_frames_than_one_writev_takes` with the `h2` crate as the
/// client (default 64 KiB windows): 100 write_bytes pieces of 100 bytes.
#[test]
fn many_small_pieces_through_the_h2_crate() {
    let server = serve(Options::new().workers(1), Shared);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let send = common::h2_client(server.addr).await;
        let mut send = send.ready().await.unwrap();
        let request = http::Request::get("http://localhost/pieces?n=100&s=100").body(()).unwrap();
        let (response, _) = send.send_request(request, true).unwrap();
        let mut len = 0;
        let got = tokio::time::timeout(Duration::from_secs(3), async {
            let mut body = response.await.unwrap().into_body();
            while let Some(piece) = body.data().await {
                let piece = piece.unwrap();
                body.flow_control().release_capacity(piece.len()).unwrap();
                len += piece.len();
            }
        })
        .await;
        assert!(got.is_ok(), "stalled after {len} of 10000 bytes");
    });
}

/// The client half-closes right after its request (input_ended): the
/// response still comes whole (copied body).
#[test]
fn half_closed_client_gets_whole_copied_response() {
    for round in 0..10 {
        let server = serve(Options::new().workers(1), Shared);
        let mut raw = Raw::handshake(server.addr, &[]);
        raw.headers(1, &req("GET", "/copy?n=60000"), true);
        raw.tcp.shutdown(std::net::Shutdown::Write).unwrap();
        let first = raw.response(1, Duration::from_secs(3));
        assert_eq!(first.outcome, "end", "round {round}: {first:?}");
    }
}

/// Half-close right after one small request: answered?
#[test]
fn half_closed_client_small_request() {
    for round in 0..10 {
        let server = serve(Options::new().workers(1), Shared);
        let mut raw = Raw::handshake(server.addr, &[]);
        raw.headers(1, &req("GET", "/copy?n=10"), true);
        raw.tcp.shutdown(std::net::Shutdown::Write).unwrap();
        let first = raw.response(1, Duration::from_secs(3));
        assert_eq!(first.outcome, "end", "round {round}: {first:?}");
    }
}

fn half_close_case(paths: &[&str]) -> Result<(), String> {
    let server = serve(Options::new().workers(1), Shared);
    let mut raw = Raw::handshake(server.addr, &[]);
    for (i, path) in paths.iter().enumerate() {
        raw.headers(2 * i as u32 + 1, &req("GET", path), true);
    }
    raw.tcp.shutdown(std::net::Shutdown::Write).unwrap();
    let mut ended = 0;
    let mut log = Vec::new();
    while let Some(f) = raw.next_frame(Duration::from_secs(2)) {
        log.push((f.kind, f.stream, f.payload.len(), f.flags));
        if f.kind == kind::HEADERS {
            let _ = raw.decoder.decode(&f.payload, |_| {});
        }
        if f.stream != 0 && f.end_stream() {
            ended += 1;
            if ended == paths.len() {
                return Ok(());
            }
        }
    }
    Err(format!("{paths:?}: {ended} ended; frames (kind, stream, len, flags) {log:?}"))
}

/// Half-close after one or two requests, shared and copied bodies: every
/// response ends (frames of all streams collected, in any order).
#[test]
fn half_close_variants() {
    let mut failures = Vec::new();
    for paths in [
        &["/bb?n=60000"][..],
        &["/bb?n=100"][..],
        &["/copy?n=100", "/copy?n=100"][..],
        &["/copy?n=60000", "/copy?n=100"][..],
        &["/bb?n=100", "/bb?n=100"][..],
        &["/bb?n=60000", "/pieces?n=25&s=200"][..],
        &["/copy?n=60000", "/pieces?n=25&s=200"][..],
        &["/copy?n=60000", "/copy?n=5000"][..],
    ] {
        for _ in 0..8 {
            if let Err(e) = half_close_case(paths) {
                failures.push(e);
                break;
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
