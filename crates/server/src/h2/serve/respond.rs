//! Each stream's response asked of the handler: synchronous answers
//! staged now, deferred ones given a pipe, and streams that cannot be
//! answered (refused, failed) reset.

use super::*;

/// How many times `max_pending_output` a connection may hold in responses
/// that wait for their streams' windows, the largest of them aside, before
/// it answers no new stream: 16 (1 MiB by default). Below it, a stream
/// short of credit does not hold up the others.
const HELD_BACK_FACTOR: usize = 16;

impl<S: Send + 'static> Http2<S> {
    /// Answers the streams whose requests ended, while the responses staged
    /// and sendable stay under `max_pending_output` and those held back by
    /// their streams' windows under [`HELD_BACK_FACTOR`] times that (see
    /// [`pending`](Self::pending)). A client that does not read, or grants
    /// no credit, cannot make the connection hold more: the others wait,
    /// as HTTP/1 stops parsing. A response held back by its own window
    /// does not stop the others (RFC 9113 §5.2: streams must not block
    /// each other; the largest held back is not counted), and a
    /// synchronous answer is as large as its handler made it, so the
    /// second bound is what keeps a zero-window client from having every
    /// handler's answer staged. Returns whether it answered any.
    pub(super) fn respond<H>(&mut self, handler: &H, cx: &mut Context, app: &mut AppSlots) -> bool
    where
        H: Handler<State = S>,
    {
        if !self.hints.ready {
            return false;
        }
        self.hints.ready = false;
        // Under the limit in all, under it in each part: the split (a
        // window lookup per stream) only when it can matter.
        let unsent: usize = self.exchanges.values().map(Exchange::unsent).sum();
        let (mut staged, held) =
            if unsent < cx.limits.max_pending_output { (unsent, 0) } else { self.pending() };
        let full = |staged: usize| {
            staged >= cx.limits.max_pending_output
                || held >= cx.limits.max_pending_output.saturating_mul(HELD_BACK_FACTOR)
        };
        let mut answered = false;
        for (&id, exchange) in &mut self.exchanges {
            if !exchange.ready {
                continue;
            }
            if full(staged) {
                // The rest wait for room.
                self.hints.ready = true;
                break;
            }
            answered = true;
            exchange.ready = false;
            exchange.responded = true;
            exchange.step();
            if let Some(status) = exchange.refused {
                exchange.state = None;
                refuse(&mut self.conn, id, exchange, cx, status);
                continue;
            }
            let Some(state) = exchange.state.take() else { continue };
            app.offer = exchange.offer.take();
            let encoder = Encoder::new(Version::Http2, exchange.head_only, true);
            let mut response = Response::new(&mut exchange.staged, cx.date.fields(), encoder, app)
                .sharing(&mut exchange.shared);
            // A panicking handler costs its stream a 500, not the
            // connection its other streams.
            let answered = catch_unwind(AssertUnwindSafe(|| handler.respond(state, &mut response)));
            cx.requests += 1;
            let _ = response.finish();
            if answered.is_err() {
                if let Some(offer) = app.offer.take() {
                    release_untaken(&mut self.conn, id, exchange, offer);
                }
                app.deferred = None;
                app.polled = None;
                exchange.body = None;
                refuse(&mut self.conn, id, exchange, cx, Status::INTERNAL_SERVER_ERROR);
                continue;
            }
            if let Some(offer) = app.offer.take() {
                // The body was not taken: the server reads it and discards
                // it (as HTTP/1 does). What already arrived is released now,
                // the rest as it comes, so the client's upload goes on.
                release_untaken(&mut self.conn, id, exchange, offer);
            } else if exchange.body.is_some() {
                // Taken and still arriving: the application reads it to
                // its end even if the response ends first.
                self.conn.keep_reading(id);
            }
            if let Some(deferred) = app.deferred.take() {
                exchange.source = Some(Source::Pipe {
                    reader: Arc::new(deferred.reader),
                    readable: None,
                    held: false,
                    abandon: deferred.abandon,
                });
                self.hints.sources = true;
            } else if let Some((polled, encoder)) = app.polled.take() {
                exchange.source =
                    Some(Source::Polled { body: polled, encoder, starved: false, yielded: false });
                self.hints.sources = true;
            } else {
                exchange.finished = true;
            }
            staged += exchange.unsent();
        }
        answered
    }

    /// The client ended its side. HTTP/2 has no half-close (h2, Go and
    /// nghttp2 end a connection whose peer's input ended): requests whose
    /// bodies had not ended never will, and responses the application
    /// still owes would go to a client that has most likely left, while
    /// the connection and its streams wait for them (a client that sends
    /// deferred requests and closes, over and over, would pile them up).
    /// Both are dropped: a body being read fails with `UnexpectedEof`; a
    /// responder's writes fail and its `closed()` resolves, and its stream
    /// is reset (CANCEL). Responses the worker already has (answered at
    /// once, or a polled body it left still ready) still go out, to a
    /// client that only half-closed.
    pub(super) fn drop_unanswerable(&mut self) {
        let owed = |source: &Option<Source>| match source {
            Some(Source::Polled { yielded, .. }) => !yielded,
            other => other.is_some(),
        };
        let gone: Vec<u32> = self
            .exchanges
            .iter()
            .filter(|(_, e)| !e.request_ended || owed(&e.source))
            .map(|(&id, _)| id)
            .collect();
        for id in gone {
            if let Some(mut exchange) = self.exchanges.remove(&id) {
                if let Some(writer) = exchange.body.take() {
                    writer.close_with(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
                }
                if exchange.source.is_some() {
                    self.conn.reset(id, ErrorCode::CANCEL);
                }
                self.spare.give(exchange.staged);
            }
        }
    }

    /// Resets the streams whose body pipe failed.
    pub(super) fn reset_failed(&mut self) {
        if !std::mem::take(&mut self.hints.failed) {
            return;
        }
        let failed: Vec<u32> =
            self.exchanges.iter().filter(|(_, e)| e.failed).map(|(&id, _)| id).collect();
        for id in failed {
            self.conn.reset(id, ErrorCode::INTERNAL_ERROR);
            if let Some(exchange) = self.exchanges.remove(&id) {
                self.spare.give(exchange.staged);
            }
        }
    }
}

/// Writes a refusal (`status`, empty body) as the whole response.
pub(super) fn refuse<S>(
    conn: &mut Connection,
    id: u32,
    exchange: &mut Exchange<S>,
    cx: &Context,
    status: Status,
) {
    // A lent body refused before `respond` took its offer (past
    // `max_body`, a failed pipe, `response_timeout`): nobody will read it.
    if let Some(offer) = exchange.offer.take() {
        release_untaken(conn, id, exchange, offer);
    }
    exchange.staged.clear();
    exchange.sent = 0;
    exchange.shared.clear();
    exchange.trailers.clear();
    exchange.source = None;
    let mut encoder = Encoder::new(Version::Http2, false, true);
    let _ = encoder.status(status);
    let _ = encoder.body(&mut exchange.staged, cx.date.fields(), b"");
    exchange.finished = true;
}

/// A lent body the application never took (its `respond` answered
/// without [`take_body`](crate::Response::take_body) or panicked, or the
/// stream was refused before `respond` ran): the
/// bytes already in its pipe will never be read, so their credit goes back
/// now. The body's writer goes with the offer; what arrives later is
/// discarded and released as it comes. (Keeping the credit would keep
/// those bytes counted against the connection window until the stream's
/// receive side is reused, for good on a connection that then runs fewer
/// streams at once.)
fn release_untaken<S>(
    conn: &mut Connection,
    id: u32,
    exchange: &mut Exchange<S>,
    offer: BodyOffer,
) {
    exchange.body = None;
    let lent = u32::try_from(std::mem::take(&mut exchange.lent)).unwrap_or(u32::MAX);
    if let Some(flow) = offer.flow
        && let Ok(updates) = flow.input.release(lent)
    {
        conn.send_updates(id, updates);
    }
}
