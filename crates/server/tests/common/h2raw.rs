//! Hand-built HTTP/2 for the raw-frame tests: field blocks of literals
//! (HPACK without indexing or Huffman, so the tests do not lean on our
//! encoder) and the frames read back.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use falconet_server::h2::frame::{self, FrameHeader, HEADER_LEN, PREFACE, kind};
use falconet_server::h2::hpack::Decoder;

/// A literal field without indexing (RFC 7541 6.2.2).
pub fn literal(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.push(0);
    string(out, name);
    string(out, value);
}

/// A string literal, not Huffman-coded (RFC 7541 5.2).
pub fn string(out: &mut Vec<u8>, s: &[u8]) {
    integer(out, s.len(), 7, 0);
    out.extend_from_slice(s);
}

/// An integer with an N-bit prefix (RFC 7541 5.1).
pub fn integer(out: &mut Vec<u8>, mut n: usize, prefix: u8, flags: u8) {
    let max = (1usize << prefix) - 1;
    if n < max {
        out.push(flags | n as u8);
        return;
    }
    out.push(flags | max as u8);
    n -= max;
    while n >= 128 {
        out.push((n % 128 + 128) as u8);
        n /= 128;
    }
    out.push(n as u8);
}

/// A field block of literals.
pub fn block(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (n, v) in fields {
        literal(&mut out, n.as_bytes(), v.as_bytes());
    }
    out
}

/// The field block of a request for `path` on `localhost`.
pub fn req(method: &str, path: &str) -> Vec<u8> {
    block(&[(":method", method), (":scheme", "http"), (":path", path), (":authority", "localhost")])
}

/// The field block of a request for `path` on `x`, with `fields` after
/// the pseudo-fields.
pub fn req_with(method: &str, path: &str, fields: &[(&str, &str)]) -> Vec<u8> {
    let mut all =
        vec![(":method", method), (":scheme", "http"), (":path", path), (":authority", "x")];
    all.extend_from_slice(fields);
    block(&all)
}

/// A frame's bytes.
pub fn frame_bytes(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    FrameHeader { length: payload.len() as u32, kind, flags, stream }.encode(&mut out).unwrap();
    out.extend_from_slice(payload);
    out
}

/// `n` DATA frames of `size` bytes on `stream`, the last with END_STREAM
/// if `end`.
pub fn data_frames(stream: u32, n: usize, size: usize, end: bool) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let flags = if end && i + 1 == n { frame::flag::END_STREAM } else { 0 };
            frame_bytes(kind::DATA, flags, stream, &vec![b'x'; size])
        })
        .collect()
}

/// A frame the server sent.
#[derive(Debug, Clone)]
pub struct Frame {
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
    pub payload: Vec<u8>,
}

impl Frame {
    /// The error code of a RST_STREAM or GOAWAY.
    pub fn code(&self) -> u32 {
        let at = if self.kind == kind::GOAWAY { 4 } else { 0 };
        u32::from_be_bytes(self.payload[at..at + 4].try_into().unwrap())
    }

    /// END_STREAM on a DATA or HEADERS frame.
    pub fn end_stream(&self) -> bool {
        self.flags & 1 != 0 && matches!(self.kind, kind::DATA | kind::HEADERS)
    }
}

/// What reading the next frame found.
#[derive(Debug)]
pub enum Event {
    Frame(Frame),
    Eof,
    Timeout,
}

/// A client connection speaking frames by hand (the test files add their
/// own reading helpers to it).
pub struct Raw {
    pub tcp: TcpStream,
    pub buf: Vec<u8>,
    /// For the HEADERS the server sends (HPACK state must follow them).
    pub decoder: Decoder,
}

impl Raw {
    pub fn connect(addr: SocketAddr) -> Self {
        let tcp = TcpStream::connect(addr).unwrap();
        tcp.set_nodelay(true).unwrap();
        Self { tcp, buf: Vec::new(), decoder: Decoder::new(4096) }
    }

    /// Preface + SETTINGS(params), then reads until the server's SETTINGS.
    pub fn handshake(addr: SocketAddr, params: &[(u16, u32)]) -> Self {
        let mut raw = Self::connect(addr);
        let mut out = PREFACE.to_vec();
        frame::encode_settings(&mut out, params).unwrap();
        raw.send(&out);
        match raw.next(Duration::from_secs(5)) {
            Event::Frame(f) if f.kind == kind::SETTINGS => {}
            other => panic!("no SETTINGS: {other:?}"),
        }
        raw
    }

    /// Reads up to the end of the `101 Switching Protocols` head of an
    /// h2c upgrade (the frames follow it).
    pub fn read_switch(&mut self) {
        let head = self.read_http1_head();
        assert!(head.starts_with("HTTP/1.1 101") && head.ends_with("\r\n\r\n"), "{head}");
    }

    /// Reads an HTTP/1 head byte by byte (the bytes after it stay unread),
    /// up to its blank line, or what came before the connection ended or
    /// 5 s passed.
    pub fn read_http1_head(&mut self) -> String {
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        self.tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        while !head.ends_with(b"\r\n\r\n") {
            match self.tcp.read(&mut byte) {
                Ok(1) => head.push(byte[0]),
                _ => break,
            }
        }
        String::from_utf8_lossy(&head).into_owned()
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.tcp.write_all(bytes).unwrap();
    }

    pub fn try_send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.tcp.write_all(bytes)
    }

    pub fn frame(&mut self, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
        let mut out = Vec::new();
        FrameHeader { length: payload.len() as u32, kind, flags, stream }.encode(&mut out).unwrap();
        out.extend_from_slice(payload);
        self.send(&out);
    }

    pub fn headers(&mut self, stream: u32, block: &[u8], end_stream: bool) {
        let flags = 0x4 | u8::from(end_stream);
        self.frame(kind::HEADERS, flags, stream, block);
    }

    pub fn data(&mut self, stream: u32, data: &[u8], end_stream: bool) {
        self.frame(kind::DATA, u8::from(end_stream), stream, data);
    }

    pub fn window_update(&mut self, stream: u32, n: u32) {
        self.frame(kind::WINDOW_UPDATE, 0, stream, &n.to_be_bytes());
    }

    /// The next frame, the end of the connection, or `timeout`.
    pub fn next(&mut self, timeout: Duration) -> Event {
        let deadline = Instant::now() + timeout;
        loop {
            if self.buf.len() >= HEADER_LEN {
                let header = FrameHeader::parse(self.buf[..HEADER_LEN].try_into().unwrap());
                let end = HEADER_LEN + header.length as usize;
                if self.buf.len() >= end {
                    let payload = self.buf[HEADER_LEN..end].to_vec();
                    self.buf.drain(..end);
                    return Event::Frame(Frame {
                        kind: header.kind,
                        flags: header.flags,
                        stream: header.stream,
                        payload,
                    });
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Event::Timeout;
            }
            self.tcp.set_read_timeout(Some(left)).unwrap();
            let mut chunk = [0u8; 65536];
            match self.tcp.read(&mut chunk) {
                Ok(0) => return Event::Eof,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Event::Timeout;
                }
                Err(_) => return Event::Eof,
            }
        }
    }

    /// The next frame, or `None` at the end of the connection or `timeout`.
    pub fn next_frame(&mut self, timeout: Duration) -> Option<Frame> {
        match self.next(timeout) {
            Event::Frame(frame) => Some(frame),
            Event::Eof | Event::Timeout => None,
        }
    }
}

/// Frames until `until` says stop (or `timeout`); HEADERS decoded to keep
/// HPACK in step.
pub fn frames_until(
    raw: &mut Raw,
    timeout: Duration,
    until: impl Fn(&Frame) -> bool,
) -> Vec<Frame> {
    let deadline = Instant::now() + timeout;
    let mut frames = Vec::new();
    while let Some(frame) = raw.next_frame(deadline.saturating_duration_since(Instant::now())) {
        if frame.kind == kind::HEADERS {
            let _ = raw.decoder.decode(&frame.payload, |_| {});
        }
        let stop = until(&frame);
        frames.push(frame);
        if stop {
            break;
        }
    }
    frames
}

/// Whether stream `id` was answered whole within `timeout` (rather than
/// the connection ending, a GOAWAY, or the time running out).
pub fn answered_within(raw: &mut Raw, id: u32, timeout: Duration) -> bool {
    let frames = frames_until(raw, timeout, |f| {
        (f.stream == id && f.end_stream()) || f.kind == kind::GOAWAY
    });
    frames.iter().any(|f| f.stream == id && f.end_stream())
}

/// The client's view of the server's receive windows, as a careful
/// client keeps it: DATA spends, WINDOW_UPDATE refills.
pub struct Credit {
    /// What the client may still send on the connection.
    pub connection: i64,
    /// And on each stream it uploads on.
    pub streams: std::collections::HashMap<u32, i64>,
    /// Responses seen: (stream, status).
    pub done: Vec<(u32, u16)>,
    /// Resets seen: (stream, code).
    pub resets: Vec<(u32, u32)>,
}

impl Default for Credit {
    fn default() -> Self {
        Self::new()
    }
}

impl Credit {
    /// The default windows (65,535) before the server's updates.
    pub fn new() -> Self {
        Self {
            connection: 65535,
            streams: Default::default(),
            done: Vec::new(),
            resets: Vec::new(),
        }
    }

    /// Takes in one frame the server sent.
    pub fn absorb(&mut self, raw: &mut Raw, f: Frame) {
        match f.kind {
            kind::WINDOW_UPDATE => {
                let n = i64::from(u32::from_be_bytes(f.payload[..4].try_into().unwrap()));
                if f.stream == 0 {
                    self.connection += n;
                } else if let Some(w) = self.streams.get_mut(&f.stream) {
                    *w += n;
                }
            }
            kind::GOAWAY => {
                panic!("GOAWAY({}) {}", f.code(), String::from_utf8_lossy(&f.payload[8..]))
            }
            kind::RST_STREAM => self.resets.push((f.stream, f.code())),
            kind::HEADERS => {
                let mut status = 0;
                let _ = raw.decoder.decode(&f.payload, |field| {
                    if field.name == b":status" {
                        status = String::from_utf8_lossy(field.value).parse().unwrap_or(0);
                    }
                });
                if status >= 200 {
                    self.done.push((f.stream, status));
                }
            }
            _ => {}
        }
    }

    /// Sends `total` bytes on `stream` as the windows allow (`pad` bytes of
    /// padding per frame); panics when no credit comes for 3 s.
    pub fn upload(&mut self, raw: &mut Raw, stream: u32, total: usize, pad: u8, end: bool) {
        self.streams.entry(stream).or_insert(1 << 20);
        let mut left = total;
        while left > 0 {
            let allowed = self.connection.min(self.streams[&stream]);
            let frame_cost = 16384.min(left + usize::from(pad > 0) + usize::from(pad)) as i64;
            if allowed < frame_cost.min(1024) {
                match raw.next(Duration::from_secs(3)) {
                    Event::Frame(f) => self.absorb(raw, f),
                    other => panic!(
                        "stream {stream}: no credit with {left} of {total} left ({other:?}): conn {} stream {}",
                        self.connection, self.streams[&stream]
                    ),
                }
                continue;
            }
            let budget = (allowed as usize).min(16384);
            let overhead = if pad > 0 { 1 + usize::from(pad) } else { 0 };
            let n = left.min(budget.saturating_sub(overhead));
            let mut payload = Vec::new();
            let mut flags = 0;
            if pad > 0 {
                flags |= 0x8;
                payload.push(pad);
            }
            payload.extend(std::iter::repeat_n(b'd', n));
            payload.extend(std::iter::repeat_n(0u8, usize::from(pad)));
            left -= n;
            if left == 0 && end {
                flags |= 1;
            }
            raw.frame(kind::DATA, flags, stream, &payload);
            self.connection -= payload.len() as i64;
            *self.streams.get_mut(&stream).unwrap() -= payload.len() as i64;
            // Read whatever is there without waiting.
            while let Event::Frame(f) = raw.next(Duration::from_millis(1)) {
                self.absorb(raw, f);
            }
        }
    }

    /// The status of `stream`'s response; panics after 5 s without one.
    pub fn wait_done(&mut self, raw: &mut Raw, stream: u32) -> u16 {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(&(_, status)) = self.done.iter().find(|(s, _)| *s == stream) {
                return status;
            }
            assert!(Instant::now() < deadline, "no response on {stream}");
            if let Event::Frame(f) = raw.next(Duration::from_millis(200)) {
                self.absorb(raw, f);
            }
        }
    }

    /// Takes in frames until `stop` says so of one (true) or `timeout`
    /// passes (false).
    pub fn until(
        &mut self,
        raw: &mut Raw,
        timeout: Duration,
        mut stop: impl FnMut(&Frame) -> bool,
    ) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            match raw.next(deadline.saturating_duration_since(Instant::now())) {
                Event::Frame(f) => {
                    let stopped = stop(&f);
                    self.absorb(raw, f);
                    if stopped {
                        return true;
                    }
                }
                Event::Eof => panic!("the server closed the connection"),
                Event::Timeout => return false,
            }
        }
    }
}
