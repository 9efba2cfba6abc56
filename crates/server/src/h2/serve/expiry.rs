//! Each stream's clock and the timeouts it serves: who a stream waits
//! for (the client, the application, nobody alone), and what expires.

use super::respond::refuse;
use super::*;

impl<S: Send + 'static> Http2<S> {
    /// Whether the response of `exchange` (stream `id`) waits for the
    /// client's credit (see [`waits_for_credit`]).
    pub(super) fn waits_for_credit(&self, id: u32, exchange: &Exchange<S>) -> bool {
        waits_for_credit(&self.conn, id, exchange)
    }

    /// The response timeout passed with only the application at work:
    /// each stream whose response it still owes is answered `503` if none
    /// of it has been framed, or reset (INTERNAL_ERROR) if some has. Its
    /// responder's writes then fail. The connection goes on.
    pub(crate) fn expire_application(&mut self, cx: &Context) {
        let late: Vec<u32> = self
            .exchanges
            .iter()
            .filter(|(_, e)| e.with_application())
            .map(|(&id, _)| id)
            .collect();
        for id in late {
            self.expire(id, Holder::Application, cx);
        }
    }

    /// The streams whose request bodies the client owes (the ones
    /// [`client_owes`](Self::client_owes) counts), if the connection also
    /// has streams the client does not hold up (ones the application
    /// holds, or that wait for room), none waiting for the client's
    /// credit, and each owing stream's clock runs for the client: then a
    /// timer that finds the client late on request bodies judges those
    /// streams, not the whole connection.
    /// `None` otherwise (everything open waits for the client: the
    /// connection's GOAWAY is the answer).
    fn owing_beside_others(&self) -> Option<Vec<u32>> {
        let conn = &self.conn;
        let owes =
            |id: u32, exchange: &Exchange<S>| exchange.body_owed() && conn.receive_credit(id) > 0;
        let owing: Vec<u32> =
            self.exchanges.iter().filter(|&(&id, e)| owes(id, e)).map(|(&id, _)| id).collect();
        // A response of the rest waiting for the client's credit: it owes
        // that too, and the connection's timeout is its answer.
        let rest_waits =
            self.exchanges.iter().any(|(&id, e)| !owes(id, e) && waits_for_credit(conn, id, e));
        // And each owing stream's clock runs for the client (a body no one
        // wants is not timed by it): it will end the stream.
        let clocked = self
            .exchanges
            .iter()
            .all(|(&id, e)| !owes(id, e) || holder(conn, id, e) == Holder::Client);
        let alone = owing.is_empty() || owing.len() == self.exchanges.len() || rest_waits;
        (!alone && clocked).then_some(owing)
    }

    /// Whether the connection's I/O timeout, finding the client late on
    /// request bodies, leaves them to their streams' own clocks (see
    /// [`owing_beside_others`](Self::owing_beside_others)): each owing
    /// stream then ends at its own time (`408`, or a reset), the rest go
    /// on. A stream that only just came to owe (the application read its
    /// lent body late) keeps its full time.
    pub(crate) fn defers_to_streams(&self) -> bool {
        self.owing_beside_others().is_some()
    }

    /// The minimum request-body rate failed: with streams the client does
    /// not hold up open too (see [`owing_beside_others`](Self::owing_beside_others)),
    /// the streams whose bodies it owes end (`408`, or a reset with
    /// CANCEL once their response started) and the connection goes on;
    /// the rate is the connection's, so each of them is charged. Returns
    /// whether it did so; `false` leaves the connection's GOAWAY.
    pub(crate) fn expire_slow_bodies(&mut self, cx: &Context) -> bool {
        let Some(owing) = self.owing_beside_others() else { return false };
        for id in owing {
            self.expire(id, Holder::Client, cx);
        }
        true
    }

    /// The connection ends for the client's delay (the header or I/O
    /// timeout, the minimum body or response rate): first each stream
    /// whose body the client holds up ends as its own clock would end it
    /// (`408` if none of its response was framed, else a reset with
    /// CANCEL), so that the request gets HTTP/1.1's answer and not only
    /// the GOAWAY that follows. Their frames are queued here, before it,
    /// however much output waits.
    pub(super) fn expire_owing(&mut self, cx: &Context) {
        let conn = &self.conn;
        let owing: Vec<u32> = self
            .exchanges
            .iter()
            .filter(|&(&id, e)| holder(conn, id, e) == Holder::Client)
            .map(|(&id, _)| id)
            .collect();
        for &id in &owing {
            self.expire(id, Holder::Client, cx);
        }
        self.flush_with(cx, &owing);
    }

    /// The worker's clock, at `now` (ms), for what earns back over time
    /// (the reset budget, `budget.rs`).
    pub(crate) fn advance_clock(&mut self, now: u64) {
        self.conn.tick(now);
    }

    /// One tick of each stream's own clock (`clock.rs`), at `now` (ms):
    /// a stream whose client has owed its body for `io` ms ends as the
    /// connection would over HTTP/1 (`408` if none of its response was
    /// framed, else reset with CANCEL); one the application has kept
    /// waiting for `response` ms as at the response timeout (`503`, or
    /// reset with INTERNAL_ERROR). A lent body's read then fails with
    /// `TimedOut`, a responder's writes fail. Other streams go on.
    /// Returns whether a stream ended (its frames wait to be written).
    pub(crate) fn expire_streams(
        &mut self,
        now: u64,
        io: u64,
        response: Option<u64>,
        cx: &Context,
    ) -> bool {
        let conn = &self.conn;
        // A frame still arriving that will count when whole: its stream's
        // progress as its bytes come.
        let arriving = self
            .input
            .first_chunk::<HEADER_LEN>()
            .filter(|_| conn.counts_when_whole(&self.input))
            .map(|header| (FrameHeader::parse(header).stream, self.input.len() as u64));
        // Output over the limit with no turn since the last tick: the
        // connection read no input and pumped no response, so no stream
        // could move, and that time counts against none (the connection's
        // output clock judges the client). Output that waits between
        // turns (a client reading a download) stops nothing.
        let stopped =
            conn.output_len() >= cx.limits.max_pending_output && self.turns == self.turns_seen;
        self.turns_seen = self.turns;
        let mut late = Vec::new();
        for (&id, exchange) in self.exchanges.iter_mut() {
            if stopped {
                exchange.clock.hold(now);
                continue;
            }
            let holder = holder(conn, id, exchange);
            let mark = exchange.mark(match arriving {
                Some((stream, bytes)) if stream == id => bytes,
                _ => 0,
            });
            if let Some(holder) = exchange.clock.tick(now, mark, holder, io, response) {
                late.push((id, holder));
            }
        }
        for &(id, holder) in &late {
            self.expire(id, holder, cx);
        }
        !late.is_empty()
    }

    /// Ends stream `id`, kept waiting too long by `holder` (see
    /// [`expire_streams`](Self::expire_streams)).
    fn expire(&mut self, id: u32, holder: Holder, cx: &Context) {
        let Some(exchange) = self.exchanges.get_mut(&id) else { return };
        // The body's read fails last: an application that answers its
        // failure finds the response gone already.
        let body = exchange.body.take();
        let (status, code) = match holder {
            Holder::Client => {
                tracing::debug!(stream = id, "io_timeout: the client stalled a stream; 408");
                (Status::REQUEST_TIMEOUT, ErrorCode::CANCEL)
            }
            Holder::Application | Holder::Nobody => {
                tracing::warn!(
                    stream = id,
                    "response_timeout: the application kept a stream waiting; answered 503 \
                     (or reset a response it had started)"
                );
                (Status::SERVICE_UNAVAILABLE, ErrorCode::INTERNAL_ERROR)
            }
        };
        if exchange.head_sent {
            self.conn.reset(id, code);
            if let Some(exchange) = self.exchanges.remove(&id) {
                self.spare.give(exchange.staged);
            }
        } else {
            exchange.state = None;
            exchange.ready = false;
            exchange.responded = true;
            refuse(&mut self.conn, id, exchange, cx, status);
        }
        if let Some(writer) = body {
            writer.close_with(std::io::Error::from(std::io::ErrorKind::TimedOut));
        }
    }

    /// The connection ends before the client's end of stream: each body
    /// still arriving fails with `kind` (its reader's error), not as a
    /// pipe dropped unclosed.
    pub(crate) fn fail_bodies(&mut self, kind: std::io::ErrorKind) {
        for exchange in self.exchanges.values_mut() {
            if let Some(writer) = exchange.body.take() {
                writer.close_with(std::io::Error::from(kind));
            }
        }
    }
}

/// Whether the response of `exchange` (stream `id`) waits for the
/// client's credit: staged bytes past the stream's window, or bytes left
/// in its pipe, or a polled body left unpolled, with none.
fn waits_for_credit<S>(conn: &Connection, id: u32, exchange: &Exchange<S>) -> bool {
    let source_held = matches!(
        exchange.source,
        Some(Source::Pipe { held: true, .. } | Source::Polled { starved: true, .. })
    );
    let credit = conn.send_credit(id);
    exchange.head_sent && (exchange.unsent() > credit || (source_held && credit == 0))
}

/// Who stream `id` waits for, for its clock (`clock.rs`): the client
/// while it owes a body the application wants and has credit to send it;
/// the application while it owes the answer (or is behind on the body)
/// and has not been stopped by us; else nobody alone: a response waiting
/// for the stream's credit (the client's flow control, a paused consumer,
/// which the connection's timers judge), a request or an answer waiting
/// for room, a body waiting for the connection's window.
fn holder<S>(conn: &Connection, id: u32, exchange: &Exchange<S>) -> Holder {
    // Stopped by us: a request waiting for room among the staged responses
    // to be answered; a deferred answer whose pipe was not found empty at
    // the last look (its bytes wait for room: only an empty pipe, waited
    // on, is the application's delay); a polled body left unpolled.
    let stopped = exchange.ready
        || match &exchange.source {
            Some(Source::Pipe { readable, .. }) => readable.is_none(),
            Some(Source::Polled { starved, .. }) => *starved,
            None => false,
        };
    if exchange.wants_body() && exchange.body_owed() && conn.receive_credit(id) > 0 {
        Holder::Client
    } else if stopped || waits_for_credit(conn, id, exchange) {
        Holder::Nobody
    } else if exchange.with_application() {
        Holder::Application
    } else {
        Holder::Nobody
    }
}
