//! What the worker's timers ask of a connection (does the client owe us
//! bytes, is a response too slow, is the application late) and what they
//! do about it; the graceful drain.

use super::*;

impl<H: Handler> Session<H> {
    /// The server is stopping: HTTP/2 starts its graceful shutdown (the
    /// first GOAWAY and a PING), whatever its streams are doing. Returns
    /// whether there is something to send.
    pub(crate) fn start_drain(&mut self) -> bool {
        match &mut self.h2 {
            Some(h2) => {
                h2.shutdown();
                !h2.output().is_empty()
            }
            None => {
                // HTTP/1: a deferred response is the last on this
                // connection unless requests already received wait behind
                // it (they are still answered): its head then says so
                // with `Connection: close`, as an answer written now would.
                // (Without the writer, the client sent its FIN: what it
                // sent before may still wait unread, so nothing is asked.)
                if matches!(self.pending, Some(Pending::Pipe(_)))
                    && self.writer.as_ref().is_some_and(|writer| writer.unexamined() == 0)
                    && let Some(link) = self.app.existing_link()
                {
                    link.ask_close();
                }
                false
            }
        }
    }

    /// The server's shutdown has run for [`FINAL_GOAWAY_AFTER_MS`]:
    /// HTTP/2 sends its final GOAWAY if the client has not answered the
    /// shutdown's PING. Returns whether it queued one.
    pub(crate) fn finish_drain(&mut self) -> bool {
        self.h2.as_mut().is_some_and(|h2| h2.finish_shutdown())
    }

    /// How many responses wait on the client to take their bytes (the
    /// socket's send buffer is full, or HTTP/2 flow control holds them
    /// back): what [`Options::min_response_rate`](crate::Options::min_response_rate)
    /// multiplies its rate by. HTTP/1 has at most one.
    pub(crate) fn waiting_on_client(&self) -> usize {
        if let Some(h2) = self.h2() {
            return h2.waiting_on_client();
        }
        usize::from(self.output_len() > 0)
    }

    /// HTTP/2: the client's progress on the input side, as the frames
    /// that carried part of a request so far and the bytes of one still
    /// arriving (see `Http2::request_progress`); `None` for HTTP/1.1,
    /// where every byte read is.
    pub(crate) fn request_progress(&self) -> Option<(u64, usize)> {
        self.h2().map(Http2::request_progress)
    }

    /// Bytes of responses the client has taken so far: what the socket
    /// took, less (HTTP/2) the acknowledgements and resets its own frames
    /// made us queue, which it gets without reading any response (PINGs
    /// must not pay for a held one), and the headers of DATA frames its
    /// credit cut short (a client granting credit a byte at a time must
    /// not pay with our framing). Those are counted before the socket
    /// takes them, so this
    /// can dip; the caller keeps a high-water mark.
    pub(crate) fn taken(&self) -> u64 {
        self.taken.saturating_sub(self.h2().map_or(0, |h2| h2.unbilled_bytes()))
    }

    /// The client takes its responses too slowly: HTTP/2 answers `408`
    /// on each stream whose body the client owes too (or resets it, once
    /// its response started), then queues GOAWAY(ENHANCE_YOUR_CALM).
    /// Returns whether there is something to send.
    pub(crate) fn too_slow(&mut self, cx: &Context) -> bool {
        match &mut self.h2 {
            Some(h2) => {
                h2.too_slow(cx);
                !h2.output().is_empty()
            }
            None => false,
        }
    }

    /// An idle connection is about to close (keep-alive timeout, or the
    /// server stopping): HTTP/2 queues a GOAWAY naming the last stream.
    /// Returns whether there is something to send.
    pub(crate) fn say_goodbye(&mut self) -> bool {
        match &mut self.h2 {
            Some(h2) => {
                h2.goodbye();
                !h2.output().is_empty()
            }
            None => false,
        }
    }

    /// Whether the client owes bytes: a request (head or body) that has
    /// not all arrived (and not waiting for a `100 (Continue)` we owe), or
    /// (HTTP/2) credit that responses wait for. A body
    /// lent to the application is the client's to send only while the
    /// application has looked at every byte that came (bytes it has not
    /// read mean it is behind, and the body may well be whole). The I/O
    /// timeout applies while the client owes; the response timeout while
    /// only the application keeps the exchange going.
    pub(crate) fn client_owes(&self) -> bool {
        if let Some(h2) = self.h2() {
            return h2.client_owes();
        }
        if self.app.existing_link().is_some_and(|link| link.expect.pending()) {
            // The client waits for our `100 (Continue)` (the application
            // has not read its body yet): it owes nothing.
            return false;
        }
        if self.http.is_lent() {
            return self.lent_body_owed();
        }
        self.http.in_body()
    }

    /// Whether the client owes the rest of the body lent to the
    /// application: a `Content-Length` body not all come, unless the
    /// application is so far behind that socket reads wait for it (the
    /// input pipe pauses at [`INPUT_PAUSE_AT`] unexamined, and the
    /// application's reads resume it only below [`INPUT_RESUME_AT`]: in
    /// between, whether reads are paused depends on which way it last
    /// crossed, so only below the lower mark is the client sure to be
    /// read); a chunked body once the application has looked at all that
    /// came.
    fn lent_body_owed(&self) -> bool {
        let Some(writer) = &self.writer else { return false };
        match self.lent_end {
            Some(end) => writer.written() < end && writer.unexamined() < INPUT_RESUME_AT,
            None => writer.unexamined() == 0,
        }
    }

    /// The request bodies in progress, for
    /// [`Options::min_request_body_rate`](crate::Options::min_request_body_rate):
    /// `None` when none is, else how many the client owes that the server
    /// would read now (what the rate is multiplied by; 0 pauses the
    /// meter). None is owed while output waits at `max_pending_output`
    /// (reads stop: the client cannot send, and the response rate judges
    /// it), nor a body the application is behind on; over HTTP/2, nor a
    /// stream without receive credit. HTTP/1 owes at most one.
    pub(crate) fn bodies_owed(&self, cx: &Context) -> Option<usize> {
        let owed = match self.h2() {
            Some(h2) => h2.bodies_owed()?,
            None if self.http.in_body() => usize::from(self.client_owes()),
            None => return None,
        };
        Some(if self.output_len() >= cx.limits.max_pending_output { 0 } else { owed })
    }

    /// Body bytes received so far, the pay of
    /// [`Options::min_request_body_rate`](crate::Options::min_request_body_rate):
    /// over HTTP/2 the DATA frames' data, over HTTP/1.1 every byte read
    /// (all of which the input pipe takes; while a body is owed, the
    /// socket carries nothing else the rate would be asked about). After
    /// the client's end it reads 0, which the meter's high-water mark
    /// takes as nothing paid.
    pub(crate) fn body_received(&self) -> u64 {
        match self.h2() {
            Some(h2) => h2.body_bytes(),
            None => self.writer.as_ref().map_or(0, Writer::written),
        }
    }

    /// The client sends its request bodies too slowly: HTTP/1 answers
    /// `408` as a stalled body gets (closing, once a response started);
    /// HTTP/2 answers `408` on each stream whose body it owes (or resets
    /// it, once its response started), then queues
    /// GOAWAY(ENHANCE_YOUR_CALM). The session is over.
    pub(crate) fn too_slow_sending(&mut self, cx: &Context) {
        match &mut self.h2 {
            Some(h2) => h2.too_slow(cx),
            None => self.refuse(crate::Status::REQUEST_TIMEOUT, cx),
        }
    }

    /// Whether any byte of the HTTP/1 response to the request under way
    /// has gone to the output: then no status can follow it, only the
    /// close.
    pub(super) fn response_started(&self) -> bool {
        match &self.pending {
            Some(Pending::Pipe(pending)) => pending.sent > 0,
            // A polled body may yield the worker before its head is
            // written (empty frames, always ready).
            Some(Pending::Polled(_, encoder)) => !encoder.is_untouched(),
            // Answered in full while the body still arrives (drained or
            // lent): a status now would be a second response.
            None => self.http.answered(),
        }
    }

    /// Whether a request answered in full waits behind its lent body with
    /// the next request already arriving (bytes past the body's end): a
    /// status now answers that next request, which cannot be parsed while
    /// the application holds the body. Not after a response that closes
    /// the connection: no next request is ever answered then.
    fn next_request_waiting(&self) -> bool {
        let past_end = match (&self.writer, self.lent_end) {
            (Some(writer), Some(end)) => writer.written() > end,
            _ => false,
        };
        self.pending.is_none() && self.http.is_lent() && !self.http.is_closing() && past_end
    }

    /// Ends the session with `status` (a timeout): the response is queued
    /// and nothing more is parsed. A response the application had started
    /// is cut off by the close instead; one it had not started is
    /// forgotten (its responder's writes fail). A request answered in full
    /// gets no second response; a next one waiting behind its lent body
    /// gets `status`.
    pub(crate) fn refuse(&mut self, status: crate::Status, cx: &Context) {
        if let Some(h2) = &mut self.h2 {
            // No status can answer a whole HTTP/2 connection: each stream
            // whose body the client holds up gets its own `408` (only the
            // client's timeouts come here; the application's go through
            // `expire_application`), then GOAWAY ends the rest.
            return h2.abort(cx);
        }
        if !self.http.is_closed() {
            if !self.response_started() || self.next_request_waiting() {
                crate::http1::refuse(&mut self.out, cx, status);
            }
            // Its responder's writes fail from now on.
            self.cut |= self.cut_by_close();
            self.pending = None;
            self.http.close();
        }
    }

    /// The application kept the exchanges waiting past the response
    /// timeout, the client owing nothing: HTTP/1 answers `503` (or closes,
    /// if its response had started) as [`refuse`](Self::refuse) does;
    /// HTTP/2 answers each stream the application holds the same way and
    /// keeps the connection (its other streams are not at fault).
    pub(crate) fn expire_application(&mut self, cx: &Context) {
        match &mut self.h2 {
            Some(h2) => h2.expire_application(cx),
            None => self.refuse(crate::Status::SERVICE_UNAVAILABLE, cx),
        }
    }

    /// The client is late on request bytes (`io_timeout`): whether, over
    /// HTTP/2 with streams it does not hold up open too, the streams it
    /// owes bodies on are left to their own clocks (`h2/clock.rs`), which
    /// end each at its time, and the connection goes on. `false` (HTTP/1,
    /// or nothing else open): the caller refuses the connection.
    pub(crate) fn defers_to_streams(&self) -> bool {
        self.h2().is_some_and(|h2| h2.defers_to_streams())
    }

    /// The minimum request-body rate failed: over HTTP/2 with streams the
    /// client does not hold up open too, only the streams it owes bodies
    /// on end (`408`, or a reset) and the connection goes on: `true`.
    /// `false` (HTTP/1, or nothing else open): the caller refuses the
    /// connection ([`too_slow_sending`](Self::too_slow_sending)).
    pub(crate) fn expire_slow_bodies(&mut self, cx: &Context) -> bool {
        self.h2.as_mut().is_some_and(|h2| h2.expire_slow_bodies(cx))
    }

    /// HTTP/2: the worker's clock at each turn and each timer tick, `now`
    /// in ms, for the limits that earn back over time (the reset budget).
    /// HTTP/1 reads none.
    pub(crate) fn advance_clock(&mut self, now: u64) {
        if let Some(h2) = &mut self.h2 {
            h2.advance_clock(now);
        }
    }

    /// HTTP/2: each stream's own clock, at a tick that found the
    /// connection on time (`h2/clock.rs`): a stream its client kept
    /// waiting `io` ms, or its application `response` ms, ends alone.
    /// Returns whether one did (its frames wait to be written). HTTP/1
    /// has one exchange at a time: the connection's clock is its own.
    pub(crate) fn expire_streams(
        &mut self,
        now: u64,
        io: u64,
        response: Option<u64>,
        cx: &Context,
    ) -> bool {
        self.h2.as_mut().is_some_and(|h2| h2.expire_streams(now, io, response, cx))
    }
}
