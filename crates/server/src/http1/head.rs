//! Reading a request head: the request line and fields parsed
//! (`httparse`, then our checks), a partial head judged before it is
//! complete, and the version slot's verdict.

use super::*;
use crate::session::SHORTEST_REST;

/// Bytes of empty lines (CR and LF) before a request line that are
/// ignored, eight CRLFs (RFC 9112 §2.2: a server SHOULD ignore at least
/// one); more is `400`. Each new line end parses the head again from its
/// start, empty lines included, so bare LFs trickled up to the head limit
/// cost the square of their number (an outside review: 0.5 CPU-seconds
/// per connection each header timeout).
const MAX_LEADING_EMPTY: usize = 16;

/// Bytes of empty lines (CR and LF) after a request that leave the
/// connection idle: two CRLFs.
const MAX_IGNORED_EMPTY: usize = 4;

impl<S> Http1<S> {
    /// Parses the head at `pos` (`first`: the rest of the block holding
    /// it); answers it when it has no body.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn head<H>(
        &mut self,
        guard: &ReadGuard<'_>,
        first: &[u8],
        pos: usize,
        out: &mut Vec<u8>,
        handler: &H,
        cx: &mut Context,
        app: &mut AppSlots,
    ) -> Head<S>
    where
        H: Handler<State = S>,
    {
        if self.heads > 0 {
            // Bytes after the first exchange, so its answer had a length
            // (a close-delimited one ends the connection): whatever comes
            // of them, valid or refused, a reset from now on could drop
            // that answer's undelivered tail.
            self.first_ends_by_close = false;
        }
        let limits = cx.limits;
        let available = guard.len() - pos;
        let bytes: &[u8] = if first.len() == available || first.len() > limits.max_head {
            first
        } else {
            // The head spans blocks: parse a copy (at most one byte past the
            // limit, enough to tell that it is over).
            cx.scratch.clear();
            let want = available.min(limits.max_head + 1);
            let mut start = 0;
            for chunk in guard.chunks() {
                let end = start + chunk.len();
                if end > pos {
                    let from = pos.saturating_sub(start);
                    let take = (want - cx.scratch.len()).min(chunk.len() - from);
                    cx.scratch.extend_from_slice(&chunk[from..from + take]);
                    if cx.scratch.len() == want {
                        break;
                    }
                }
                start = end;
            }
            &cx.scratch
        };
        if bytes.first().is_some_and(|&b| b == b'\r' || b == b'\n') && too_many_empty(bytes) {
            return refused(out, cx, Status::BAD_REQUEST);
        }
        // Nothing new since the last attempt but bytes that neither end a
        // line nor are wrong wherever they stand: the parse would end the
        // same way, still partial. (Parsing again for every piece of a
        // head sent a byte at a time would cost the square of its length.)
        // A CR, a control byte, or any byte after a CR is judged at once:
        // `\r\n\rX` or `HTTP/1.a\r` is refused now, not at the header
        // timeout.
        if self.scanned > 0
            && self.scanned <= bytes.len()
            && bytes[self.scanned - 1] != b'\r'
            && !bytes[self.scanned..].iter().any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f)
        {
            return self.partial(bytes, out, cx);
        }
        let mut headers =
            [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS_LIMIT];
        // Set only for a request of a later HTTP/1 minor version.
        let mut as_http11: [httparse::Header<'_>; MAX_HEADERS_LIMIT];
        let mut parsed = httparse::Request::new(&mut []);
        let mut result =
            parsed.parse_with_uninit_headers(bytes, &mut headers[..limits.max_headers]);
        if result == Err(httparse::Error::Version) {
            match version_verdict(bytes) {
                Some(Verdict::Refuse(status)) => return refused(out, cx, status),
                Some(Verdict::AsHttp11(at)) => {
                    as_http11 = [httparse::EMPTY_HEADER; MAX_HEADERS_LIMIT];
                    result = match parse_as_http11(bytes, at, &mut as_http11[..limits.max_headers])
                    {
                        Ok(httparse::Status::Complete((used, request))) => {
                            parsed = request;
                            Ok(httparse::Status::Complete(used))
                        }
                        Ok(httparse::Status::Partial) => Ok(httparse::Status::Partial),
                        Err(error) => Err(error),
                    };
                }
                // The line has not ended: judge it when it has.
                None => return self.partial(bytes, out, cx),
            }
        }
        let used = match result {
            Ok(httparse::Status::Complete(used)) => used,
            Ok(httparse::Status::Partial) => return self.partial(bytes, out, cx),
            Err(httparse::Error::TooManyHeaders) => {
                return refused(out, cx, Status::HEADER_FIELDS_TOO_LARGE);
            }
            Err(_) => return refused(out, cx, Status::BAD_REQUEST),
        };
        self.scanned = 0;
        self.heads = self.heads.wrapping_add(1);
        let (Some(method), Some(target), Some(minor)) =
            (parsed.method, parsed.path, parsed.version)
        else {
            return refused(out, cx, Status::BAD_REQUEST);
        };
        if let Some(status) = limits.request_line(method, target) {
            return refused(out, cx, status);
        }
        if used > limits.max_head {
            return refused(out, cx, Status::HEADER_FIELDS_TOO_LARGE);
        }
        let version = if minor == 0 { Version::Http10 } else { Version::Http11 };
        let target = match target::parse(method, target) {
            Ok(target) => target,
            Err(TargetError::Invalid) => return refused(out, cx, Status::BAD_REQUEST),
            Err(TargetError::Connect) => return refused(out, cx, Status::NOT_IMPLEMENTED),
        };
        let fields = match Fields::read(parsed.headers, version, &mut self.known_host) {
            Ok(fields) => fields,
            Err(status) => return refused(out, cx, status),
        };
        // An absolute-form target names the authority; the Host field's
        // value is then ignored (RFC 9112 §3.2.2). Otherwise a Host that
        // names no host (`Host: `, `Host: :80`) makes the target URI an
        // `http` URI without one: 400, as HTTP/2 refuses such an
        // `:authority`. (HTTP/1.0 without Host leaves the authority
        // unknown, not empty: served.)
        if target.authority.is_none() && fields.host.is_some_and(target::names_no_host) {
            return refused(out, cx, Status::BAD_REQUEST);
        }
        let authority = target.authority.map(str::as_bytes).or(fields.host).unwrap_or_default();
        if let BodyLength::Known(length) = fields.body
            && length > limits.max_body
        {
            return refused(out, cx, Status::CONTENT_TOO_LARGE);
        }
        if fields.upgrade_h2c
            && limits.h2c == crate::H2c::Both
            && version == Version::Http11
            && fields.body == BodyLength::Empty
            && crate::h2::upgrade::may_follow(&bytes[used..])
            && let Some(upgrade) = crate::h2::upgrade::from_http1(
                method,
                target.path_and_query,
                std::str::from_utf8(authority).unwrap_or_default(),
                parsed.headers,
            )
        {
            if fields.expect_continue {
                // RFC 9110 §7.8: a server MUST send 100 before 101 when
                // both were asked for.
                out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
            }
            // The connection becomes HTTP/2; the session takes it over.
            self.upgrade = Some(upgrade);
            self.phase = Phase::Closed;
            return Head::Done(used);
        }
        let head_only = method == "HEAD";
        if self.heads == 1 {
            self.first_ends_by_close = crate::wire::may_end_by_close(version, head_only);
        }
        let request = Request {
            method,
            target: target.path_and_query,
            authority,
            scheme: target.scheme,
            absolute: target.authority.is_some(),
            version,
            headers: parsed.headers,
            body: fields.body,
            stream: std::cell::Cell::new(false),
            peer: self.peer,
        };
        let state = handler.head(&request);
        let framing = match fields.body {
            BodyLength::Empty => {
                let keep_alive = keep_open(fields.keep_alive, used < available, cx);
                let encoder = Encoder::new(version, head_only, keep_alive);
                self.answer(state, encoder, out, handler, cx, app);
                return Head::Done(used);
            }
            BodyLength::Known(length) => Framing::Length(length),
            BodyLength::Chunked => Framing::Chunked(ChunkedDecoder::new()),
        };
        let expects_continue = fields.expect_continue && version == Version::Http11;
        let lent = request.stream.get();
        if expects_continue && !lent {
            // The server reads this body for the handler: ask for it now.
            out.extend_from_slice(crate::expect::CONTINUE);
        }
        let exchange = Exchange {
            state: Some(state),
            framing,
            received: 0,
            version,
            head_only,
            keep_alive: fields.keep_alive,
            expects_continue: expects_continue && lent,
        };
        if lent { Head::Stream(used, exchange) } else { Head::Body(used, exchange) }
    }

    /// The head is incomplete: wait, or refuse it if it is already too long.
    pub(super) fn partial(&mut self, bytes: &[u8], out: &mut Vec<u8>, cx: &Context) -> Head<S> {
        let limits = cx.limits;
        // The longest line is `max_request_line` bytes and its CRLF: only
        // past that, with no line end, is it certainly too long (as the
        // whole head is judged, wherever the line was split).
        let longest = limits.max_request_line + 2;
        // httparse skips empty lines before the request line.
        let start = bytes.iter().position(|&b| b != b'\r' && b != b'\n').unwrap_or(bytes.len());
        let line = &bytes[start..];
        let line_seen = line[..line.len().min(longest)].contains(&b'\n');
        if !line_seen && line.len() >= longest {
            // Malformed so far: what the whole head would get first.
            if let Some(status) = malformed_so_far(bytes, limits.max_headers) {
                return refused(out, cx, status);
            }
            // No space where a line with the shortest target would still
            // fit: the method alone is too long (RFC 9112 3: 501, as
            // judged once whole), else the target (414).
            let method_room = limits.max_request_line.saturating_sub(SHORTEST_REST);
            let method_ended = line[..=method_room].contains(&b' ');
            let status = if method_ended { Status::URI_TOO_LONG } else { Status::NOT_IMPLEMENTED };
            return refused(out, cx, status);
        }
        if bytes.len() > limits.max_head {
            let status = malformed_so_far(bytes, limits.max_headers);
            return refused(out, cx, status.unwrap_or(Status::HEADER_FIELDS_TOO_LARGE));
        }
        if bytes.len() <= MAX_IGNORED_EMPTY && bytes.iter().all(|&b| b == b'\r' || b == b'\n') {
            // An empty line or two after a request (RFC 9112 §2.2: a
            // server SHOULD ignore at least one before a request line)
            // leaves the connection between requests: the keep-alive
            // rule, not the head's timeout and its 408, applies.
            self.scanned = 0;
            return Head::Partial;
        }
        self.scanned = bytes.len().max(1);
        Head::Partial
    }
}

/// Whether `bytes` start with more than [`MAX_LEADING_EMPTY`] bytes of
/// empty lines.
#[cold]
fn too_many_empty(bytes: &[u8]) -> bool {
    let empty =
        bytes.iter().take(MAX_LEADING_EMPTY + 1).take_while(|&&b| matches!(b, b'\r' | b'\n'));
    empty.count() > MAX_LEADING_EMPTY
}

/// The refusal a partial head too long to wait for would get once whole
/// for its bytes, which comes before any length's: `400` for bytes
/// httparse refuses, the version's verdict for a bad version slot; `None`
/// when nothing so far is malformed. (A head that arrived in pieces
/// without line ends was not parsed as each came.)
fn malformed_so_far(bytes: &[u8], max_headers: usize) -> Option<Status> {
    let mut headers = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS_LIMIT];
    let mut parsed = httparse::Request::new(&mut []);
    match parsed.parse_with_uninit_headers(bytes, &mut headers[..max_headers]) {
        Ok(_) | Err(httparse::Error::TooManyHeaders) => None,
        Err(httparse::Error::Version) => match version_verdict(bytes) {
            Some(Verdict::Refuse(status)) => Some(status),
            Some(Verdict::AsHttp11(_)) | None => None,
        },
        Err(_) => Some(Status::BAD_REQUEST),
    }
}

/// What to do with a request line httparse refused at its version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Answer with this status: `505` for another major version, `400`
    /// for a line that is not `method SP target SP HTTP/...`.
    Refuse(Status),
    /// `HTTP/1.2` to `HTTP/1.9`: a later minor version of HTTP/1, served
    /// as HTTP/1.1 (RFC 9110 §2.5: a recipient SHOULD process it as the
    /// highest minor version it conforms to, and answers in that). The
    /// minor digit is at this index.
    AsHttp11(usize),
}

/// The verdict on a request line httparse refused at its version (see
/// [`Verdict`]): `400` unless the line is `method SP target SP
/// HTTP/DIGIT.DIGIT` (a lowercase name, an extra space, a malformed
/// version); `505` for another major version (`HTTP/2.0`, `HTTP/3.0`). `None` until the line has ended:
/// httparse refuses at the first bad byte, and what follows it may still
/// make a well-formed version malformed (`HTTP/00` of `HTTP/001.1 x`), so
/// only a whole line is judged, and a line split anywhere gets the same
/// answer.
pub(super) fn version_verdict(bytes: &[u8]) -> Option<Verdict> {
    // httparse skips empty lines before the request line.
    let start = bytes.iter().position(|&b| b != b'\r' && b != b'\n').unwrap_or(bytes.len());
    let line = &bytes[start..];
    let end = line.iter().position(|&b| b == b'\r' || b == b'\n')?;
    let line = &line[..end];
    let mut words = line.split(|&b| b == b' ');
    Some(match (words.next(), words.next(), words.next(), words.next()) {
        (Some(_), Some(_), Some(b"HTTP/1.2" | b"HTTP/1.3" | b"HTTP/1.4"), None)
        | (Some(_), Some(_), Some(b"HTTP/1.5" | b"HTTP/1.6" | b"HTTP/1.7"), None)
        | (Some(_), Some(_), Some(b"HTTP/1.8" | b"HTTP/1.9"), None) => {
            Verdict::AsHttp11(start + end - 1)
        }
        // A well-formed version (RFC 9112 2.3: `HTTP/` DIGIT `.` DIGIT)
        // of another major one; anything else in the slot is a malformed
        // line (`HTTP/1.`, `HTTP/1.2.3`, `HTTP/01.1`, `HTTP/9`: 400, 3).
        (Some(_), Some(_), Some([b'H', b'T', b'T', b'P', b'/', major, b'.', minor]), None)
            if major.is_ascii_digit() && minor.is_ascii_digit() =>
        {
            Verdict::Refuse(Status::VERSION_NOT_SUPPORTED)
        }
        _ => Verdict::Refuse(Status::BAD_REQUEST),
    })
}

/// Parses a head whose version is a later HTTP/1 minor one (the digit at
/// `at`) as HTTP/1.1: a copy with that digit made `1` is parsed, and every
/// piece of the answer points back into `bytes` (the copy differs from it
/// in that one byte only, so each piece is the same bytes at the same
/// offset). Allocates; a client that sends these pays for them.
fn parse_as_http11<'h, 'b>(
    bytes: &'b [u8],
    at: usize,
    headers: &'h mut [httparse::Header<'b>],
) -> Result<httparse::Status<(usize, httparse::Request<'h, 'b>)>, httparse::Error> {
    let mut copy = bytes.to_vec();
    copy[at] = b'1';
    let mut parsed_headers = vec![httparse::EMPTY_HEADER; headers.len()];
    let mut parsed = httparse::Request::new(&mut parsed_headers);
    let used = match parsed.parse(&copy)? {
        httparse::Status::Complete(used) => used,
        httparse::Status::Partial => return Ok(httparse::Status::Partial),
    };
    let base = copy.as_ptr().addr();
    let back = |piece: &[u8]| {
        let from = piece.as_ptr().addr() - base;
        &bytes[from..from + piece.len()]
    };
    // The same bytes as the copy's, which httparse checked.
    let text = |piece: &str| {
        std::str::from_utf8(back(piece.as_bytes())).map_err(|_| httparse::Error::Token)
    };
    let n = parsed.headers.len();
    for (slot, header) in headers.iter_mut().zip(parsed.headers.iter()) {
        *slot = httparse::Header { name: text(header.name)?, value: back(header.value) };
    }
    let request = httparse::Request {
        method: parsed.method.map(text).transpose()?,
        path: parsed.path.map(text).transpose()?,
        version: Some(1),
        headers: &mut headers[..n],
    };
    Ok(httparse::Status::Complete((used, request)))
}
