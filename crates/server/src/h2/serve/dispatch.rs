//! The connection's events handed to the handler as they arrive: a
//! request's head, its body's pieces, its trailers, a reset.

use super::*;

/// The connection's events, handed to the handler as they arrive.
pub(super) struct Dispatch<'a, H: Handler> {
    pub(super) handler: &'a H,
    pub(super) exchanges: &'a mut Roomy<u32, Exchange<H::State>>,
    pub(super) spare: &'a mut Spares,
    pub(super) pool: &'a Pool,
    pub(super) cx: &'a Context,
    pub(super) hints: &'a mut Hints,
    pub(super) peer: Option<std::net::SocketAddr>,
}

/// Most requests carry a few fields: their `httparse` views fit an array
/// this long, set up per request; more take the full-size one.
const FEW_FIELDS: usize = 32;

impl<H: Handler> Streams for Dispatch<'_, H> {
    fn headers(&mut self, stream: u32, head: &Head, end_stream: bool, input: &Arc<StreamInput>) {
        // The array is zeroed per request: 1 KiB for the usual request, not
        // the 8 KiB of the largest.
        if head.fields().len() <= FEW_FIELDS {
            let mut headers = [httparse::EMPTY_HEADER; FEW_FIELDS];
            self.open(stream, head, end_stream, input, &mut headers);
        } else {
            let mut headers = [httparse::EMPTY_HEADER; MAX_FIELDS];
            self.open(stream, head, end_stream, input, &mut headers);
        }
    }

    fn data(&mut self, stream: u32, data: &[u8], end_stream: bool) -> bool {
        self.data_piece(stream, data, end_stream)
    }

    fn trailers(&mut self, stream: u32, head: &Head) {
        // A body lent to the application, still arriving, takes them (its
        // pipe ends right after, with the `data` that follows); a handler
        // reading its body on the worker gets them before `respond`.
        let Some(exchange) = self.exchanges.get_mut(&stream) else { return };
        let fill = |trailers: &mut Trailers| {
            trailers.clear();
            for (name, value) in head.fields() {
                // Checked by the connection (8.2.1): each one fits.
                trailers.push(name, value);
            }
        };
        if let (Some(_), Some(slot)) = (&exchange.body, &exchange.trailers_in) {
            let mut trailers = Trailers::new();
            fill(&mut trailers);
            slot.store(trailers);
            return;
        }
        let reading = exchange.offer.is_none() && exchange.body.is_none();
        if let Some(state) = exchange.state.as_mut()
            && reading
            && exchange.refused.is_none()
            && !exchange.responded
        {
            let trailers = &mut self.spare.trailers;
            fill(trailers);
            let handler = self.handler;
            let panicked = catch_unwind(AssertUnwindSafe(|| handler.trailers(state, trailers)));
            trailers.clear_and_trim();
            if panicked.is_err() {
                exchange.state = None;
                exchange.refused = Some(Status::INTERNAL_SERVER_ERROR);
                exchange.ready = true;
                self.hints.ready = true;
            }
        }
    }

    fn reset(&mut self, stream: u32) {
        self.reset_stream(stream);
    }

    fn writable(&mut self, _stream: u32) {
        // `flush` runs after every receive and looks at every stream.
    }
}

impl<H: Handler> Dispatch<'_, H> {
    /// A request opened `stream`: its `Request` (field views in
    /// `headers`), the handler's `head`, and its exchange.
    fn open<'h>(
        &mut self,
        stream: u32,
        head: &'h Head,
        end_stream: bool,
        input: &Arc<StreamInput>,
        headers: &mut [httparse::Header<'h>],
    ) {
        let mut count = 0;
        for (name, value) in head.fields() {
            let (Ok(name), Some(slot)) = (core::str::from_utf8(name), headers.get_mut(count))
            else {
                continue;
            };
            *slot = httparse::Header { name, value };
            count += 1;
        }
        let headers = &headers[..count];
        let authority = head.authority().or_else(|| head.host()).unwrap_or_default();
        // A `content-length: 0` stream still open has no data to come, but
        // may have trailers (8.1): a body of length 0, not none.
        let body = match (end_stream, head.content_length()) {
            (true, _) => BodyLength::Empty,
            (false, Some(length)) => BodyLength::Known(length),
            (false, None) => BodyLength::Chunked,
        };
        let method = head.method().unwrap_or_default();
        let request = Request {
            method,
            target: head.path().unwrap_or("/"),
            authority: authority.as_bytes(),
            scheme: head.scheme().unwrap_or("http"),
            // As hyper (the h2 crate) builds it: scheme and authority
            // only with `:authority`; a `host` field alone leaves the path.
            absolute: head.authority().is_some(),
            version: Version::Http2,
            headers,
            body,
            stream: std::cell::Cell::new(false),
            peer: self.peer,
        };
        // As HTTP/1 refuses them before the handler: a `:method` and
        // `:path` longer than `max_request_line` allows their HTTP/1.1
        // line, a head past `max_head` or `max_headers`, a body over
        // `max_body`, CONNECT (no tunnels, 8.5), an expectation other
        // than 100-continue.
        let expect = head.fields().find(|(name, _)| *name == b"expect").map(|(_, value)| value);
        let continues = expect.is_some_and(|v| v.eq_ignore_ascii_case(b"100-continue"));
        // `max_headers` counts the lines HTTP/1.1 would send: the regular
        // fields, a cookie's crumbs joined into one, and the Host line that
        // `:authority` stands for when no `host` came (the decoder's cap
        // leaves room for four pseudo-fields, which a request may not all
        // send). The request line is judged first, as HTTP/1.1 judges it.
        let host_line = head.authority().is_some() && head.host().is_none();
        let lines = head.fields().len() + usize::from(host_line);
        let refused = if let Some(status) = self.cx.limits.request_line(method, request.target) {
            Some(status)
        } else if head.is_oversized() || lines > self.cx.limits.max_headers {
            Some(Status::HEADER_FIELDS_TOO_LARGE)
        } else if matches!(body, BodyLength::Known(n) if n > self.cx.limits.max_body) {
            Some(Status::CONTENT_TOO_LARGE)
        } else if method == "CONNECT" {
            Some(Status::NOT_IMPLEMENTED)
        } else if expect.is_some() && !continues {
            Some(Status::EXPECTATION_FAILED)
        } else {
            None
        };
        let (state, refused) = match refused {
            Some(status) => (None, Some(status)),
            None => match catch_unwind(AssertUnwindSafe(|| self.handler.head(&request))) {
                Ok(state) => (Some(state), None),
                Err(_) => (None, Some(Status::INTERNAL_SERVER_ERROR)),
            },
        };
        let mut refused = refused;
        // A body the application reads itself: its own pipe, offered to
        // `respond`, which runs at once (as for HTTP/1).
        let (mut offer, mut writer, mut trailers_in) = (None, None, None);
        if request.stream.get() && body != BodyLength::Empty && refused.is_none() {
            match falconet_pipe::pipe(self.pool, falconet_pipe::Options::new()) {
                Ok((w, reader)) => {
                    writer = Some(w);
                    let trailers = TrailerSlot::default();
                    trailers_in = Some(trailers.clone());
                    offer = Some(BodyOffer {
                        reader: Arc::new(reader),
                        framing: Framing::Stream,
                        received: 0,
                        max_body: self.cx.limits.max_body,
                        flow: Some(BodyFlow { input: Arc::clone(input), stream, trailers }),
                    });
                }
                Err(_) => refused = Some(Status::INTERNAL_SERVER_ERROR),
            }
        }
        let staged = self.spare.take();
        let ready = end_stream || refused.is_some() || offer.is_some();
        self.hints.ready |= ready;
        self.exchanges.insert(
            stream,
            Exchange {
                state,
                ready,
                head_only: method == "HEAD",
                received: 0,
                refused,
                failure: None,
                staged,
                sent: 0,
                shared: Pieces::default(),
                head_sent: false,
                finished: false,
                trailers: Vec::new(),
                source: None,
                offer,
                body: writer,
                trailers_in,
                lent: 0,
                failed: false,
                request_ended: end_stream,
                responded: false,
                continue_pending: continues && !end_stream && refused.is_none(),
                steps: 0,
                clock: StreamClock::new(),
            },
        );
    }

    /// A piece of `stream`'s body (see [`Streams::data`]).
    fn data_piece(&mut self, stream: u32, data: &[u8], end_stream: bool) -> bool {
        let Some(exchange) = self.exchanges.get_mut(&stream) else { return true };
        exchange.request_ended |= end_stream;
        if end_stream || (!data.is_empty() && exchange.wants_body()) {
            // Progress: the request's end, or bytes that go somewhere (not
            // an empty or padding-only frame, nor a discarded body's).
            exchange.step();
        }
        if exchange.refused.is_some() {
            return true;
        }
        if let Some(writer) = &mut exchange.body {
            exchange.received += data.len() as u64;
            if exchange.received > self.cx.limits.max_body {
                // The application's read fails with FileTooLarge (as for
                // HTTP/1); a response that fails before its head is a 413.
                exchange.failure = Some(Status::CONTENT_TOO_LARGE);
                if let Some(writer) = exchange.body.take() {
                    writer.close_with(std::io::Error::new(
                        std::io::ErrorKind::FileTooLarge,
                        "the request body is over max_body",
                    ));
                }
                return true;
            }
            // Lent: into the body's pipe; the reader releases the credit.
            if !data.is_empty()
                && let Err(error) = writer.put_slice(data)
            {
                exchange.body = None;
                if error.error() == falconet_pipe::WriteError::ReaderClosed {
                    // The application dropped the body: the rest is
                    // discarded (its window was given back by the drop).
                    return true;
                }
                // The pool ran dry midway: the body cannot be whole, so it
                // fails (the dropped writer ends the reader's pipe with an
                // error) and the stream is reset.
                exchange.failed = true;
                self.hints.failed = true;
                return true;
            }
            exchange.lent += data.len() as u64;
            if end_stream && let Some(writer) = exchange.body.take() {
                writer.close();
            }
            return false;
        }
        if exchange.responded {
            return true; // answered already: the rest is discarded
        }
        exchange.received += data.len() as u64;
        if exchange.received > self.cx.limits.max_body {
            exchange.refused = Some(Status::CONTENT_TOO_LARGE);
            exchange.ready = true;
            self.hints.ready = true;
            return true;
        }
        if let Some(state) = exchange.state.as_mut()
            && !data.is_empty()
            && catch_unwind(AssertUnwindSafe(|| self.handler.body(state, data))).is_err()
        {
            exchange.state = None;
            exchange.refused = Some(Status::INTERNAL_SERVER_ERROR);
            exchange.ready = true;
            self.hints.ready = true;
            return true;
        }
        exchange.ready |= end_stream;
        self.hints.ready |= end_stream;
        true
    }

    /// `stream` ended early: its exchange goes, a lent body's read fails.
    fn reset_stream(&mut self, stream: u32) {
        if let Some(mut exchange) = self.exchanges.remove(&stream) {
            if let Some(writer) = exchange.body.take() {
                // The application's read fails instead of waiting forever.
                writer.close_with(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
            }
            self.spare.give(exchange.staged);
        }
    }
}
