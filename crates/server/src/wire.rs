//! HTTP/1 response encoding: the status line, the server's own fields, the
//! framing fields and chunked data, as bytes appended to a buffer.
//!
//! For an HTTP/2 stream ([`Version::Http2`]) the same head is written
//! without framing or connection fields, and the body as it is: the
//! stream's staging form, which `h2::serve` (`h2/serve/pump.rs`) turns
//! into HEADERS and DATA frames, so the synchronous and deferred
//! responses serve both protocols.
//!
//! [`Encoder`] is the one place that decides how a response is framed; the
//! synchronous [`Response`](crate::Response) drives it into the
//! connection's output buffer, the deferred [`Responder`](crate::Responder)
//! into a buffer it hands to its output pipe. The order of calls it
//! accepts:
//!
//! ```text
//!   Status --status()--> Status --header()/field()--> Headers --header()--> Headers
//!     |                                                  |
//!     +--body()----------------------------------------->+--body()--> Done   (Content-Length)
//!     +--start_stream()--------------------------------->+--start_stream()--> Streaming --finish()--> Done
//!                                                                             (chunked for 1.1,
//!                                                                              close-delimited for 1.0)
//! ```

use crate::date::{FIELDS_LEN, SERVER_FIELD};
use crate::handler::{Field, ResponseError, Status, Version};
use crate::syntax::{is_field_value, is_token};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Nothing written yet: the status may change.
    Status,
    /// Status line written, header fields may follow.
    Headers,
    /// A chunked (or, for HTTP/1.0, close-delimited) body is being written.
    Streaming,
    Done,
    /// Deferred or handed to the worker to poll: this copy writes nothing
    /// more (the response's own copy went with it).
    HandedOff,
}

/// Where a response's encoding stands, and how it is framed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Encoder {
    phase: Phase,
    status: Status,
    version: Version,
    head_only: bool,
    keep_alive: bool,
    /// Where our `Server` field starts in the output, once the status line
    /// is written: removed if the application names its own.
    server_at: usize,
    /// The application sent an `Upgrade` field: HTTP/1's `Connection`
    /// field then carries the `upgrade` option (RFC 9110 §7.8).
    upgrade: bool,
    /// The length of a streamed body, declared before its head
    /// ([`declare_length`](Self::declare_length)): sent as
    /// `Content-Length`, and the pieces go out unchunked.
    declared: Option<u64>,
}

/// Whether the response to a request of `version` (`head_only`: to
/// `HEAD`) may be one the connection's close ends (an HTTP/1.0 request's:
/// a streamed body of unknown length is close-delimited; not `HEAD`'s,
/// which has no body), so that a close cutting it off must say so.
pub(crate) fn may_end_by_close(version: Version, head_only: bool) -> bool {
    version == Version::Http10 && !head_only
}

impl Encoder {
    pub(crate) fn new(version: Version, head_only: bool, keep_alive: bool) -> Self {
        Self {
            phase: Phase::Status,
            status: Status::OK,
            version,
            head_only,
            keep_alive,
            server_at: 0,
            upgrade: false,
            declared: None,
        }
    }

    /// Whether this encodes an HTTP/2 stream's response.
    pub(crate) fn is_http2(&self) -> bool {
        self.version == Version::Http2
    }

    /// This copy writes nothing more: every call fails with
    /// [`ResponseError::Deferred`] (the copy taken before goes on).
    pub(crate) fn hand_off(&mut self) {
        self.phase = Phase::HandedOff;
    }

    /// The error of a call made too late: `otherwise`, or
    /// [`ResponseError::Deferred`] once handed off.
    #[cold]
    fn too_late(&self, otherwise: ResponseError) -> ResponseError {
        if self.phase == Phase::HandedOff { ResponseError::Deferred } else { otherwise }
    }

    /// Sets the status (200 unless set).
    pub(crate) fn status(&mut self, status: Status) -> Result<(), ResponseError> {
        if self.phase != Phase::Status {
            return Err(self.too_late(ResponseError::HeadSent));
        }
        if status.code() < 200 {
            return Err(ResponseError::InformationalStatus(status.code()));
        }
        self.status = status;
        Ok(())
    }

    /// Checks and appends a header field.
    pub(crate) fn header(
        &mut self,
        out: &mut Vec<u8>,
        fields: &[u8; FIELDS_LEN],
        name: &str,
        value: &[u8],
    ) -> Result<(), ResponseError> {
        if !is_token(name.as_bytes()) {
            return Err(ResponseError::InvalidHeaderName);
        }
        if !is_field_value(value) {
            return Err(ResponseError::InvalidHeaderValue);
        }
        if is_reserved(name) {
            return Err(ResponseError::ReservedHeader);
        }
        self.start_head(out, fields)?;
        if is_server(name.as_bytes()) {
            self.drop_our_server(out);
        }
        self.upgrade |= is_upgrade(name.as_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
        Ok(())
    }

    /// Appends a field checked at compile time (`Name: value`); one that
    /// names `Server` is followed by [`drop_our_server`](Self::drop_our_server)
    /// (both decided when the field was compiled: no test of the name per
    /// use).
    pub(crate) fn field(
        &mut self,
        out: &mut Vec<u8>,
        fields: &[u8; FIELDS_LEN],
        field: Field,
    ) -> Result<(), ResponseError> {
        self.start_head(out, fields)?;
        out.extend_from_slice(field.as_str().as_bytes());
        out.extend_from_slice(b"\r\n");
        if field.names_server() {
            self.drop_our_server(out);
        }
        self.upgrade |= field.names_upgrade();
        Ok(())
    }

    /// Asks to close the connection after this response.
    pub(crate) fn close(&mut self) -> Result<(), ResponseError> {
        if matches!(self.phase, Phase::Streaming | Phase::Done | Phase::HandedOff) {
            return Err(self.too_late(ResponseError::HeadSent));
        }
        self.keep_alive = false;
        Ok(())
    }

    /// Appends the whole response with a `Content-Length` body.
    pub(crate) fn body(
        &mut self,
        out: &mut Vec<u8>,
        fields: &[u8; FIELDS_LEN],
        body: &[u8],
    ) -> Result<(), ResponseError> {
        self.sized_head(out, fields, body.len() as u64)?;
        if self.sends_body() {
            out.extend_from_slice(body);
        }
        self.phase = Phase::Done;
        Ok(())
    }

    /// Appends the head of a response whose body of `length` bytes follows
    /// (the caller sends it, or none for HEAD and bodiless statuses; see
    /// [`sends_body`](Self::sends_body)).
    pub(crate) fn sized_head(
        &mut self,
        out: &mut Vec<u8>,
        fields: &[u8; FIELDS_LEN],
        length: u64,
    ) -> Result<(), ResponseError> {
        self.whole_head(out, fields, Some(length))
    }

    /// Appends the head of a `HEAD` response whose `GET` body length is
    /// not known, with no framing field (RFC 9110 §9.3.2 lets a field
    /// determined only while generating the content be left out, where
    /// `Transfer-Encoding: chunked` or `Content-Length: 0` could be false
    /// for the `GET`), and completes the response. For any other response
    /// (with a body to frame) this is an empty [`body`](Self::body).
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) fn unsized_head(
        &mut self,
        out: &mut Vec<u8>,
        fields: &[u8; FIELDS_LEN],
    ) -> Result<(), ResponseError> {
        let length = if self.head_only { None } else { Some(0) };
        self.whole_head(out, fields, length)
    }

    /// The head of a response with no streamed body: `Content-Length:
    /// length` (none for bodiless statuses, or without a length), then
    /// the response is done.
    fn whole_head(
        &mut self,
        out: &mut Vec<u8>,
        fields: &[u8; FIELDS_LEN],
        length: Option<u64>,
    ) -> Result<(), ResponseError> {
        match self.phase {
            Phase::Streaming => return Err(ResponseError::HeadSent),
            Phase::Done => return Err(ResponseError::Finished),
            Phase::HandedOff => return Err(ResponseError::Deferred),
            Phase::Status | Phase::Headers => {}
        }
        self.start_head(out, fields)?;
        out.reserve(TAIL_MAX);
        // 205's content is empty whatever was given (RFC 9110 §15.3.6).
        let length = if self.status.code() == 205 { length.map(|_| 0) } else { length };
        if let Some(length) = length.filter(|_| !self.status.bodiless()) {
            out.extend_from_slice(b"Content-Length: ");
            write_decimal(out, length);
            out.extend_from_slice(b"\r\n");
        }
        self.end_head(out);
        self.phase = Phase::Done;
        Ok(())
    }

    /// Declares the length of the body that will be streamed: the head
    /// then carries `Content-Length: length` in place of chunked framing
    /// (HTTP/1.1) or a close-delimited body (HTTP/1.0, whose connection
    /// then stays open), and HTTP/2's `content-length`. The caller sends
    /// exactly `length` bytes, or fails the response (a close, a reset)
    /// if it cannot: the encoder does not count them.
    ///
    /// # Errors
    /// [`ResponseError::HeadSent`] or [`ResponseError::Finished`] once
    /// the head is out.
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) fn declare_length(&mut self, length: u64) -> Result<(), ResponseError> {
        match self.phase {
            Phase::Streaming => Err(ResponseError::HeadSent),
            Phase::Done => Err(ResponseError::Finished),
            Phase::HandedOff => Err(ResponseError::Deferred),
            Phase::Status | Phase::Headers => {
                self.declared = Some(length);
                Ok(())
            }
        }
    }

    /// Starts a streamed body (appending the head), once; later calls do
    /// nothing.
    pub(crate) fn start_stream(
        &mut self,
        out: &mut Vec<u8>,
        fields: &[u8; FIELDS_LEN],
    ) -> Result<(), ResponseError> {
        match self.phase {
            Phase::Done => Err(ResponseError::Finished),
            Phase::HandedOff => Err(ResponseError::Deferred),
            Phase::Streaming => Ok(()),
            Phase::Status | Phase::Headers => {
                self.start_head(out, fields)?;
                out.reserve(TAIL_MAX);
                if self.status.bodiless() {
                    // 1xx, 204, 304: no body, so no framing field (RFC 9112
                    // §6.1 forbids Transfer-Encoding in 1xx and 204).
                } else if self.status.code() == 205 {
                    // A body by its framing, empty by its meaning (RFC 9110
                    // §15.3.6): nothing written will be sent.
                    if self.version != Version::Http2 {
                        out.extend_from_slice(b"Content-Length: 0\r\n");
                    }
                } else if let Some(length) = self.declared {
                    // HTTP/2 turns it into `content-length` too.
                    out.extend_from_slice(b"Content-Length: ");
                    write_decimal(out, length);
                    out.extend_from_slice(b"\r\n");
                } else if self.version == Version::Http11 {
                    out.extend_from_slice(b"Transfer-Encoding: chunked\r\n");
                } else if self.version == Version::Http2 {
                    // DATA frames delimit the body; the stream's end ends it.
                } else if !self.head_only {
                    // HTTP/1.0 has no chunked coding: the end of the body
                    // is the end of the connection (a HEAD response has
                    // no body to end).
                    self.keep_alive = false;
                }
                self.end_head(out);
                self.phase = Phase::Streaming;
                Ok(())
            }
        }
    }

    /// Whether body bytes go on the wire (not for HEAD, 1xx, 204, 205,
    /// 304).
    pub(crate) fn sends_body(&self) -> bool {
        !self.head_only && !self.status.contentless()
    }

    /// Whether a streamed body is chunked (HTTP/1.1 without a declared
    /// length).
    pub(crate) fn chunked(&self) -> bool {
        self.version == Version::Http11 && self.declared.is_none()
    }

    /// Appends the framing before `len` bytes of streamed data (the size
    /// line for chunked); call only when [`sends_body`](Self::sends_body)
    /// and `len > 0`.
    pub(crate) fn chunk_prefix(&self, out: &mut Vec<u8>, len: usize) {
        if self.chunked() {
            write_hex(out, len as u64);
            out.extend_from_slice(b"\r\n");
        }
    }

    /// Appends the framing after streamed data (its CRLF for chunked).
    pub(crate) fn chunk_suffix(&self, out: &mut Vec<u8>) {
        if self.chunked() {
            out.extend_from_slice(b"\r\n");
        }
    }

    /// What follows a piece of streamed body that goes out by reference,
    /// after its [`chunk_prefix`](Self::chunk_prefix): for chunked, its
    /// CRLF, and after the body's `last` piece the last chunk too (the
    /// body is then over: [`finish`](Self::finish) adds nothing more).
    /// Call only while streaming a body that is sent.
    pub(crate) fn after_piece(&mut self, last: bool) -> &'static [u8] {
        if last {
            self.phase = Phase::Done;
        }
        match (self.chunked(), last) {
            (true, true) => b"\r\n0\r\n\r\n",
            (true, false) => b"\r\n",
            (false, _) => b"",
        }
    }

    /// Appends a whole piece of streamed body.
    pub(crate) fn write(
        &mut self,
        out: &mut Vec<u8>,
        fields: &[u8; FIELDS_LEN],
        bytes: &[u8],
    ) -> Result<(), ResponseError> {
        self.start_stream(out, fields)?;
        if !bytes.is_empty() && self.sends_body() {
            self.chunk_prefix(out, bytes.len());
            out.extend_from_slice(bytes);
            self.chunk_suffix(out);
        }
        Ok(())
    }

    /// Completes the response (an empty body if none was written); returns
    /// whether the connection stays open.
    pub(crate) fn finish(&mut self, out: &mut Vec<u8>, fields: &[u8; FIELDS_LEN]) -> bool {
        match self.phase {
            Phase::Status | Phase::Headers => {
                // Cannot fail: the phase allows a body.
                let _ = self.body(out, fields, b"");
            }
            Phase::Streaming => {
                if self.chunked() && self.sends_body() {
                    out.extend_from_slice(b"0\r\n\r\n");
                }
                self.phase = Phase::Done;
            }
            Phase::Done | Phase::HandedOff => {}
        }
        self.keep_alive
    }

    /// [`finish`](Self::finish) with trailer fields: `trailers` are field
    /// lines (`name: value\r\n` each, checked by the caller), sent in the
    /// chunked body's last chunk (RFC 9112 §7.1.2) when the body streams
    /// chunked; dropped otherwise (a sized or close-delimited body cannot
    /// carry them, and an HTTP/2 stream sends them as a HEADERS frame of
    /// its own, `h2/serve/pump.rs`). Returns [`finish`](Self::finish)'s answer.
    pub(crate) fn finish_with_trailers(
        &mut self,
        out: &mut Vec<u8>,
        fields: &[u8; FIELDS_LEN],
        trailers: &[u8],
    ) -> bool {
        if self.phase == Phase::Streaming && self.chunked() && self.sends_body() {
            out.extend_from_slice(b"0\r\n");
            out.extend_from_slice(trailers);
            out.extend_from_slice(b"\r\n");
            self.phase = Phase::Done;
            return self.keep_alive;
        }
        self.finish(out, fields)
    }

    /// Whether nothing has been appended yet (the status may still change).
    pub(crate) fn is_untouched(&self) -> bool {
        self.phase == Phase::Status
    }

    /// Whether the head has not ended yet (it may not have begun).
    pub(crate) fn head_open(&self) -> bool {
        matches!(self.phase, Phase::Status | Phase::Headers)
    }

    /// Whether the connection stays open after this response, as far as
    /// the response knows.
    pub(crate) fn keep_alive(&self) -> bool {
        self.keep_alive
    }

    /// Writes the status line and the server's own fields, once.
    fn start_head(
        &mut self,
        out: &mut Vec<u8>,
        fields: &[u8; FIELDS_LEN],
    ) -> Result<(), ResponseError> {
        match self.phase {
            Phase::Status => {
                if self.status == Status::OK {
                    out.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
                } else {
                    out.extend_from_slice(b"HTTP/1.1 ");
                    write_decimal(out, u64::from(self.status.code()));
                    out.push(b' ');
                    out.extend_from_slice(self.status.reason().as_bytes());
                    out.extend_from_slice(b"\r\n");
                }
                self.server_at = out.len();
                out.extend_from_slice(fields);
                self.phase = Phase::Headers;
                Ok(())
            }
            Phase::Headers => Ok(()),
            Phase::Streaming => Err(ResponseError::HeadSent),
            Phase::Done => Err(ResponseError::Finished),
            Phase::HandedOff => Err(ResponseError::Deferred),
        }
    }

    /// The application names its own `Server` field: ours goes. The head
    /// is still whole in `out` (nothing else is written between its status
    /// line and its end); ours is removed once, if it is where it was
    /// written.
    #[cold]
    pub(crate) fn drop_our_server(&mut self, out: &mut Vec<u8>) {
        let ours = self.server_at..self.server_at + SERVER_FIELD.len();
        if out.get(ours.clone()) == Some(SERVER_FIELD) {
            out.drain(ours);
        }
    }

    /// Ends the head after its framing field: the connection field and
    /// the blank line, straight into the output (`TAIL_MAX` reserved).
    fn end_head(&mut self, out: &mut Vec<u8>) {
        let option: &[u8] = match (self.keep_alive, self.version) {
            // HTTP/2 has no connection fields (RFC 9113 8.2.2).
            (_, Version::Http2) => b"",
            (false, _) => b"close",
            (true, Version::Http10) => b"keep-alive",
            (true, Version::Http11) => b"",
        };
        if self.upgrade && self.version != Version::Http2 {
            // An `Upgrade` field goes with its connection option (RFC
            // 9110 §7.8), which only we write.
            out.extend_from_slice(b"Connection: ");
            if !option.is_empty() {
                out.extend_from_slice(option);
                out.extend_from_slice(b", ");
            }
            out.extend_from_slice(b"upgrade\r\n");
        } else if !option.is_empty() {
            out.extend_from_slice(b"Connection: ");
            out.extend_from_slice(option);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
    }
}

/// The longest end of a head, reserved before it is written:
/// `Content-Length: <20 digits>\r\nConnection: keep-alive, upgrade\r\n\r\n`.
const TAIL_MAX: usize = 73;

/// Whether a field name is `Server` (any case).
pub(crate) const fn is_server(name: &[u8]) -> bool {
    name.eq_ignore_ascii_case(b"server")
}

/// Whether a field name is `Upgrade` (any case).
pub(crate) const fn is_upgrade(name: &[u8]) -> bool {
    name.eq_ignore_ascii_case(b"upgrade")
}

/// The fields the server writes itself.
fn is_reserved(name: &str) -> bool {
    is_reserved_bytes(name.as_bytes())
}

pub(crate) const fn is_reserved_bytes(name: &[u8]) -> bool {
    let reserved: &[u8] = match name.len() {
        4 => b"date",
        10 => b"connection",
        14 => b"content-length",
        17 => b"transfer-encoding",
        _ => return false,
    };
    name.eq_ignore_ascii_case(reserved)
}

pub(crate) fn write_decimal(out: &mut Vec<u8>, n: u64) {
    let mut digits = [0u8; 20];
    let start = format_decimal(&mut digits, n);
    out.extend_from_slice(&digits[start..]);
}

/// Writes `n` at the end of `digits`; returns where it starts.
fn format_decimal(digits: &mut [u8; 20], mut n: u64) -> usize {
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return i;
        }
    }
}

fn write_hex(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 16];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b"0123456789abcdef"[(n & 0xf) as usize];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        for n in [0, 9, 10, 12345, u64::MAX] {
            let mut out = Vec::new();
            write_decimal(&mut out, n);
            assert_eq!(out, n.to_string().into_bytes());
            out.clear();
            write_hex(&mut out, n);
            assert_eq!(out, format!("{n:x}").into_bytes());
        }
    }

    /// A `HEAD` head of unknown length: no framing field, keep-alive kept
    /// (also for HTTP/1.0, which has no body to end by closing), and done.
    /// Not for `HEAD`: an empty sized body. After a streamed body began: an
    /// error, nothing written.
    #[test]
    fn unsized_head_has_no_framing_field() {
        let date = crate::date::DateCache::new();
        let fields = date.fields();
        for (version, head_only, expect) in [
            (Version::Http11, true, None),
            (Version::Http10, true, None),
            (Version::Http11, false, Some("Content-Length: 0\r\n")),
        ] {
            let mut encoder = Encoder::new(version, head_only, true);
            let mut out = Vec::new();
            encoder.unsized_head(&mut out, fields).unwrap();
            let text = String::from_utf8(out.clone()).unwrap();
            assert!(text.ends_with("\r\n\r\n"), "{text:?}");
            assert!(!text.contains("Transfer-Encoding"), "{text:?}");
            assert_eq!(text.contains("Content-Length"), expect.is_some(), "{text:?}");
            assert!(expect.is_none_or(|line| text.contains(line)), "{text:?}");
            assert!(encoder.keep_alive(), "{version:?} {text:?}");
            assert_eq!(encoder.unsized_head(&mut out, fields), Err(ResponseError::Finished));
            assert!(encoder.finish(&mut out, fields));
            assert_eq!(out, text.as_bytes(), "nothing more after it");
        }
        let mut encoder = Encoder::new(Version::Http11, true, true);
        let mut out = Vec::new();
        encoder.start_stream(&mut out, fields).unwrap();
        let len = out.len();
        assert_eq!(encoder.unsized_head(&mut out, fields), Err(ResponseError::HeadSent));
        assert_eq!(out.len(), len);
    }

    /// Trailers go in the last chunk of a chunked body; a sized,
    /// close-delimited or bodiless response, or an HTTP/2 stream's
    /// staging, drops them and ends as `finish` would.
    #[test]
    fn trailers_only_in_a_chunked_body() {
        let date = crate::date::DateCache::new();
        let fields = date.fields();
        let trailers = b"grpc-status: 0\r\n";
        let mut chunked = Encoder::new(Version::Http11, false, true);
        let mut out = Vec::new();
        chunked.start_stream(&mut out, fields).unwrap();
        let len = out.len();
        assert!(chunked.finish_with_trailers(&mut out, fields, trailers));
        assert_eq!(&out[len..], b"0\r\ngrpc-status: 0\r\n\r\n");
        assert_eq!(chunked.write(&mut out, fields, b"x"), Err(ResponseError::Finished));
        for (version, head_only, declared, status) in [
            (Version::Http11, false, Some(3), Status::OK),
            (Version::Http10, false, None, Status::OK),
            (Version::Http11, true, None, Status::OK),
            (Version::Http11, false, None, Status::NO_CONTENT),
            (Version::Http2, false, None, Status::OK),
        ] {
            let mut encoder = Encoder::new(version, head_only, true);
            encoder.status(status).unwrap();
            if let Some(length) = declared {
                encoder.declare_length(length).unwrap();
            }
            let mut out = Vec::new();
            encoder.start_stream(&mut out, fields).unwrap();
            let mut plain = encoder;
            let mut expected = out.clone();
            let keep_alive = plain.finish(&mut expected, fields);
            let answer = encoder.finish_with_trailers(&mut out, fields, trailers);
            assert_eq!(answer, keep_alive, "{version:?} {head_only} {declared:?} {status:?}");
            assert_eq!(out, expected, "{version:?} {head_only} {declared:?} {status:?}");
        }
    }

    /// What follows a piece sent by reference: chunked, its CRLF, and after
    /// the last piece the last chunk too, the body then over (`finish`
    /// adds nothing, more writes are refused); HTTP/1.0, nothing (its end
    /// is the close).
    #[test]
    fn after_piece_ends_the_body_with_the_last_piece() {
        let date = crate::date::DateCache::new();
        let fields = date.fields();
        for (version, between, last, keep_alive) in [
            (Version::Http11, &b"\r\n"[..], &b"\r\n0\r\n\r\n"[..], true),
            (Version::Http10, &b""[..], &b""[..], false),
        ] {
            let mut encoder = Encoder::new(version, false, true);
            let mut out = Vec::new();
            encoder.start_stream(&mut out, fields).unwrap();
            assert_eq!(encoder.after_piece(false), between, "{version:?}");
            assert_eq!(encoder.after_piece(true), last, "{version:?}");
            let len = out.len();
            assert_eq!(encoder.finish(&mut out, fields), keep_alive, "{version:?}");
            assert_eq!(encoder.write(&mut out, fields, b"x"), Err(ResponseError::Finished));
            assert_eq!(out.len(), len, "{version:?}: nothing after the end");
        }
    }

    /// The head's text after the status line, for each way the head ends.
    fn head_text(encoder: &mut Encoder, end: impl FnOnce(&mut Encoder, &mut Vec<u8>)) -> String {
        let mut out = Vec::new();
        end(encoder, &mut out);
        String::from_utf8(out).unwrap()
    }

    /// An `Upgrade` field (by `header`, any case, or a compiled `Field`)
    /// brings the `upgrade` option to HTTP/1's `Connection` field, beside
    /// `close` or HTTP/1.0's `keep-alive`, on a whole or a streamed head
    /// (RFC 9110 §7.8); none over HTTP/2, and no option without the field.
    #[test]
    fn an_upgrade_field_brings_its_connection_option() {
        const UPGRADE: Field = Field::new("Upgrade: h2c");
        let date = crate::date::DateCache::new();
        let fields = date.fields();
        for (version, keep_alive, connection) in [
            (Version::Http11, true, Some("Connection: upgrade\r\n")),
            (Version::Http11, false, Some("Connection: close, upgrade\r\n")),
            (Version::Http10, true, Some("Connection: keep-alive, upgrade\r\n")),
            (Version::Http10, false, Some("Connection: close, upgrade\r\n")),
            (Version::Http2, true, None),
        ] {
            for how in ["header", "HEADER", "field", "none"] {
                for streamed in [false, true] {
                    let mut encoder = Encoder::new(version, false, keep_alive);
                    let text = head_text(&mut encoder, |e, out| {
                        match how {
                            "header" => e.header(out, fields, "Upgrade", b"h2c").unwrap(),
                            "HEADER" => e.header(out, fields, "UPGRADE", b"h2c").unwrap(),
                            "field" => e.field(out, fields, UPGRADE).unwrap(),
                            _ => {}
                        }
                        if streamed {
                            e.start_stream(out, fields).unwrap();
                        } else {
                            e.body(out, fields, b"").unwrap();
                        }
                    });
                    let case = format!("{version:?} {keep_alive} {how} {streamed}: {text:?}");
                    let lines: Vec<&str> =
                        text.split("\r\n").filter(|l| l.starts_with("Connection")).collect();
                    match (how, connection) {
                        ("none", _) | (_, None) => {
                            assert!(lines.iter().all(|l| !l.contains("upgrade")), "{case}");
                        }
                        // A streamed HTTP/1.0 body ends with the connection.
                        (_, Some(_)) if version == Version::Http10 && streamed => {
                            assert_eq!(lines, ["Connection: close, upgrade"], "{case}");
                        }
                        (_, Some(line)) => {
                            assert_eq!(lines.len(), 1, "{case}");
                            assert_eq!(format!("{}\r\n", lines[0]), line, "{case}");
                        }
                    }
                    assert!(text.len() < 512 && text.ends_with("\r\n\r\n"), "{case}");
                }
            }
        }
    }

    /// A 205 has a body by its framing and no content (RFC 9110 §15.3.6):
    /// `Content-Length: 0` over HTTP/1, whole or streamed (never chunked,
    /// and HTTP/1.0 keeps the connection), nothing of what was written,
    /// and for `HEAD` the same head.
    #[test]
    fn reset_content_sends_no_content() {
        let date = crate::date::DateCache::new();
        let fields = date.fields();
        let reset = Status::new(205).unwrap();
        for version in [Version::Http11, Version::Http10, Version::Http2] {
            for head_only in [false, true] {
                for streamed in [false, true] {
                    let mut encoder = Encoder::new(version, head_only, true);
                    encoder.status(reset).unwrap();
                    let mut out = Vec::new();
                    if streamed {
                        encoder.write(&mut out, fields, b"content").unwrap();
                        encoder.write(&mut out, fields, b"more").unwrap();
                    } else {
                        encoder.body(&mut out, fields, b"content").unwrap();
                    }
                    let keep_alive = encoder.finish(&mut out, fields);
                    let text = String::from_utf8(out).unwrap();
                    let case = format!("{version:?} {head_only} {streamed}: {text:?}");
                    assert!(text.starts_with("HTTP/1.1 205 Reset Content\r\n"), "{case}");
                    assert!(text.ends_with("\r\n\r\n") && !text.contains("content"), "{case}");
                    assert!(!text.contains("Transfer-Encoding"), "{case}");
                    assert_eq!(
                        text.contains("Content-Length: 0\r\n"),
                        version != Version::Http2 || !streamed,
                        "{case}"
                    );
                    assert!(keep_alive, "{case}");
                }
            }
        }
    }

    /// Every octet of a value: refused exactly when RFC 9110 §5.5 refuses
    /// it (a control but HTAB, or DEL), with nothing written.
    #[test]
    fn header_values_refuse_every_control_but_tab() {
        let date = crate::date::DateCache::new();
        let fields = date.fields();
        for octet in 0..=255u8 {
            let mut encoder = Encoder::new(Version::Http11, false, true);
            let mut out = Vec::new();
            let result = encoder.header(&mut out, fields, "X", &[b'a', octet, b'b']);
            let allowed = octet == b'\t' || (0x20..0x7f).contains(&octet) || octet >= 0x80;
            assert_eq!(result.is_ok(), allowed, "octet {octet:#04x}");
            assert_eq!(out.is_empty(), !allowed, "octet {octet:#04x}");
        }
    }
}
