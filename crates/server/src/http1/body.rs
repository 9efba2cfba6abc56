//! A request body: read on the worker into the handler's `body` calls,
//! or lent to the application as a [`RequestBody`](crate::RequestBody).

use super::*;

impl<S> Http1<S> {
    /// Answers a request whose body the handler reads itself: offers the
    /// body to `respond` (the read of the head is released, so the
    /// application may read at once), then lends it, or drains it when it
    /// was not taken.
    pub(super) fn lend<H>(
        &mut self,
        mut exchange: Exchange<S>,
        input: &Arc<Reader>,
        out: &mut Vec<u8>,
        handler: &H,
        cx: &mut Context,
        app: &mut AppSlots,
    ) where
        H: Handler<State = S>,
    {
        let Some(state) = exchange.state.take() else { return };
        if exchange.expects_continue {
            app.link().expect.lend(true);
        } else if let Some(link) = app.existing_link() {
            link.expect.lend(false);
        }
        app.offer = Some(BodyOffer {
            reader: Arc::clone(input),
            framing: std::mem::replace(&mut exchange.framing, Framing::Length(0)),
            received: 0,
            max_body: cx.limits.max_body,
            flow: None,
        });
        let keep_alive = keep_open(exchange.keep_alive, false, cx);
        let encoder = Encoder::new(exchange.version, exchange.head_only, keep_alive);
        self.phase = Phase::Lent;
        let start = out.len();
        self.answer(state, encoder, out, handler, cx, app);
        if exchange.expects_continue
            && self.closing
            && !out[start..].starts_with(crate::expect::CONTINUE)
        {
            // The client waits for a 100 before it sends the body, and
            // got a closing answer without one: no body will come.
            self.phase = Phase::Closed;
        }
        if let Some(offer) = app.offer.take() {
            // Not taken: the server reads the body and discards it.
            exchange.framing = offer.framing;
            if !self.is_closed() {
                self.phase = Phase::Body(exchange);
            }
        }
    }
}

/// Feeds body bytes from `piece` to the handler, and the trailers that end
/// a chunked body (gathered in `kept`). Returns the bytes used and whether
/// the body is complete, or the status that refuses it.
pub(super) fn body<H: Handler>(
    exchange: &mut Exchange<H::State>,
    piece: &[u8],
    handler: &H,
    max_body: u64,
    kept: (&mut Vec<u8>, &mut Trailers),
) -> Result<(usize, bool), Status> {
    match &mut exchange.framing {
        Framing::Length(left) => {
            let n = usize::try_from(*left).unwrap_or(usize::MAX).min(piece.len());
            if n > 0
                && let Some(state) = &mut exchange.state
            {
                handler.body(state, &piece[..n]);
            }
            *left -= n as u64;
            exchange.received += n as u64;
            Ok((n, *left == 0))
        }
        Framing::Chunked(decoder) => {
            let budget = max_body - exchange.received;
            let (lines, trailers) = kept;
            // Trailers only for a handler still reading (a drained body's
            // are discarded).
            let decoded = match exchange.state {
                Some(_) => decoder.decode_keeping(piece, budget, lines),
                None => decoder.decode(piece, budget),
            };
            let (used, data) = decoded.map_err(|error| match error {
                ChunkedError::Malformed => Status::BAD_REQUEST,
                ChunkedError::TooLarge => Status::CONTENT_TOO_LARGE,
            })?;
            if let Some(data) = data.filter(|d| !d.is_empty()) {
                exchange.received += data.len() as u64;
                if let Some(state) = &mut exchange.state {
                    handler.body(state, data);
                }
            }
            let done = decoder.is_done();
            if done && !lines.is_empty() {
                // The decoder checked every line's grammar.
                if let Some(state) = &mut exchange.state
                    && trailers.refill_from_lines(lines)
                {
                    handler.trailers(state, trailers);
                }
                trailers.clear_and_trim();
                lines.clear();
                if lines.capacity() > crate::trailers::KEPT_BYTES {
                    *lines = Vec::new();
                }
            }
            Ok((used, done))
        }
        // HTTP/2 bodies never reach the HTTP/1 parser.
        Framing::Stream => Ok((0, true)),
    }
}
