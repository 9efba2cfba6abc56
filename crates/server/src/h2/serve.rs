//! HTTP/2 served through the application API of HTTP/1: each stream's
//! request goes to the same [`Handler`] (head, body pieces, respond), and
//! its response is written by the same [`Response`], deferred
//! [`Responder`](crate::Responder) or polled tower body.
//!
//! A response is written in the stream's *staging form* (`wire.rs` with
//! [`Version::Http2`]): the head as HTTP/1 lines, without framing or
//! connection fields, then the body bytes as they are. This module turns
//! that into frames: the head, once complete, into one HEADERS block
//! (names lowercased, HPACK-encoded), the body into DATA frames as the
//! send windows allow, END_STREAM when the response has ended. Staging
//! buffers are kept for the next stream, so a connection in steady state
//! does not allocate for them.
//!
//! A request body lent to the application ([`Request::stream_body`], then
//! [`Response::take_body`]) gets a pipe of its own: the worker writes each
//! DATA frame's payload into it, the application reads it on its thread,
//! and each read releases the stream's receive window there
//! (`body.rs`, `BodyFlow`), so the windows are shared between the worker
//! and application threads; the WINDOW_UPDATEs the releases ask for come
//! back through the connection's link. A reset stream ends its body's
//! pipe with an error, so a read fails rather than hangs. A response that
//! ends while the application still reads the body leaves the stream
//! open for the rest of it (the exchange stays until the body's end, or
//! until the application drops the body: then RST_STREAM(NO_ERROR)).
//!
//! A connection also gets here from HTTP/1.1, by `Upgrade: h2c`
//! (`upgrade.rs`): the upgrading request becomes stream 1.

use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use falconet_flow::Updates;
use falconet_pipe::{Readable, Reader, Writer};
use falconet_pool::Pool;

use super::clock::{Holder, Mark, StreamClock};
use super::connection::{Config, Connection, StreamInput, Streams};
use super::frame::{ErrorCode, FrameHeader, HEADER_LEN};
use super::head::Head;
use super::hpack::Field;
use super::roomy::Roomy;
use crate::body::BodyFlow;
use crate::handler::{BodyLength, Handler, Request, Status, Version};
use crate::http1::{Framing, Progress};
use crate::pieces::Pieces;
use crate::response::{AppSlots, BodyOffer, Polled, Response, Step};
use crate::session::Context;
use crate::trailers::{TrailerSlot, Trailers};
use crate::wire::Encoder;

/// The request pseudo-fields (RFC 9113 8.3.1): `:method`, `:scheme`,
/// `:authority`, `:path`.
const PSEUDO_FIELDS: usize = 4;

/// The most request fields handed to a handler (as HTTP/1's limit).
const MAX_FIELDS: usize = crate::http1::MAX_HEADERS_LIMIT;

/// Fields that HTTP/1 framing or connection management wrote and HTTP/2
/// forbids (RFC 9113 8.2.2).
/// `te` too: a request's field, allowed in no response.
const CONNECTION_FIELDS: [&[u8]; 6] =
    [b"connection", b"keep-alive", b"proxy-connection", b"te", b"transfer-encoding", b"upgrade"];

/// What a deferred or polled response may stage before its HEADERS went
/// out, credit or not: a head (HEADERS are not flow-controlled, RFC 9113
/// §6.9), so that a stream with no window still gets its answer's head.
const HEAD_ROOM: usize = 16 * 1024;

/// How many times `max_pending_output` a connection may hold in responses
/// that wait for their streams' windows, the largest of them aside, before
/// it answers no new stream: 16 (1 MiB by default). Below it, a stream
/// short of credit does not hold up the others.
const HELD_BACK_FACTOR: usize = 16;

/// One stream's exchange with the application.
struct Exchange<S> {
    /// The handler's state until `respond` takes it.
    state: Option<S>,
    /// The request ended: respond (once).
    ready: bool,
    /// A HEAD request: the response has a length but no body.
    head_only: bool,
    /// Request body bytes so far (for `max_body`).
    received: u64,
    /// Refused before the handler saw it (a body over `max_body`).
    refused: Option<Status>,
    /// A lent body the client sent past `max_body`: its pipe failed, and
    /// this is the answer if the application's response fails before its
    /// head (instead of 500).
    failure: Option<Status>,
    /// The response in staging form; `sent` bytes of it are framed.
    staged: Vec<u8>,
    sent: usize,
    /// Body pieces sent in place ([`Response::write_bytes`], a tower
    /// body's frames): each follows `staged[..at]`.
    shared: Pieces,
    head_sent: bool,
    /// Every byte of the response is staged.
    finished: bool,
    /// The response's trailer fields (field lines; empty: none), sent as
    /// a HEADERS frame with END_STREAM after the last DATA (RFC 9113 §8.1).
    trailers: Vec<u8>,
    /// Where the rest of the response comes from.
    source: Option<Source>,
    /// A lent body's pipe: the offer until `respond`, then the writer
    /// while the body arrives.
    offer: Option<BodyOffer>,
    body: Option<Writer>,
    /// Where the lent body's reader finds the request's trailers.
    trailers_in: Option<TrailerSlot>,
    /// Bytes put into the lent body's pipe: its reader releases them as
    /// it reads, or the server does if the application never takes it.
    lent: u64,
    /// The body's pipe failed (the pool ran dry): reset the stream.
    failed: bool,
    /// The request arrived whole (END_STREAM).
    request_ended: bool,
    /// `respond` ran (later body bytes are discarded).
    responded: bool,
    /// `expect: 100-continue`: a 100 goes out before the final answer.
    continue_pending: bool,
    /// Grows with every request frame for the stream and every response
    /// frame or answer for it: with the lent body's reads, the stream's
    /// mark for its clock (`clock.rs`).
    steps: u64,
    clock: StreamClock,
}

impl<S> Exchange<S> {
    /// Response bytes staged and not yet framed.
    fn unsent(&self) -> usize {
        self.staged.len() - self.sent + self.shared.len()
    }

    /// The application holds this exchange: its handler's state waits
    /// for `respond`, its response comes from a responder or a polled
    /// body, or it is behind on a lent body (bytes it has not looked at,
    /// also after its response ended: `response_timeout` bounds it, as
    /// over HTTP/1, not the client's `io_timeout`).
    fn with_application(&self) -> bool {
        self.source.is_some()
            || self.state.is_some()
            || self.body.as_ref().is_some_and(|body| body.unexamined() > 0)
    }

    /// The request has not ended and the application is not behind on its
    /// body (a lent body with bytes it has not looked at has used up
    /// credit the client cannot send without).
    fn body_owed(&self) -> bool {
        !self.request_ended && self.body.as_ref().is_none_or(|body| body.unexamined() == 0)
    }

    /// The stream's mark for its clock: counts that only grow while it
    /// moves (see `steps`), and `arriving`, the bytes so far of a request
    /// frame for it not yet whole.
    fn mark(&self, arriving: u64) -> Mark {
        let examined =
            self.body.as_ref().map_or(0, |body| self.lent.saturating_sub(body.unexamined()));
        (self.steps.wrapping_add(self.lent).wrapping_add(examined), arriving)
    }

    /// Whether the request's body bytes go anywhere: to the handler, or to
    /// a lent body's reader; not once the exchange was refused or answered
    /// without reading it (the rest is discarded).
    fn wants_body(&self) -> bool {
        self.refused.is_none() && (self.body.is_some() || !self.responded)
    }

    /// Marks a step of the exchange (see `steps`).
    fn step(&mut self) {
        self.steps = self.steps.wrapping_add(1);
    }
}

/// A response the application answers later.
enum Source {
    /// Deferred: its bytes arrive through an output pipe. `held`: the
    /// last look left bytes in it for want of room (only the worker
    /// takes them, so they are still there: with no room, nothing to do).
    /// `abandon`, dropped with the rest, tells the responder's task to
    /// stop; it also brings the answer's trailers (`wanted.rs`).
    Pipe {
        reader: Arc<Reader>,
        readable: Option<Readable>,
        held: bool,
        abandon: crate::wanted::Abandon,
    },
    /// Polled by the worker, through this encoder. `starved`: the last
    /// look did not poll it for want of room (the stream's credit), so
    /// whatever it would give waits for the client.
    Polled { body: Box<dyn Polled>, encoder: Encoder, starved: bool },
}

/// A connection's HTTP/2 side: the protocol state and each stream's
/// exchange.
pub(crate) struct Http2<S> {
    conn: Connection,
    exchanges: Roomy<u32, Exchange<S>>,
    /// Input not yet framed (a frame split across socket reads).
    input: Vec<u8>,
    /// Staging buffers of finished streams, for the next ones.
    spare: Spares,
    /// Lowercased response field names for one HEADERS block, and each
    /// field's name (in `fields`) and value (in the staged head).
    fields: Vec<u8>,
    spans: Vec<(Range<usize>, Range<usize>)>,
    /// Streams whose response ended in this flush.
    done: Vec<u32>,
    /// The client ended its side.
    input_ended: bool,
    /// Window increments from application threads, being sent.
    updates: Vec<(u32, Updates)>,
    /// Which walks over the exchanges may find work: the others are
    /// skipped (each runs for every event of the connection).
    hints: Hints,
    /// The client's address, for each [`Request`].
    pub(crate) peer: Option<std::net::SocketAddr>,
    /// Turns that read input and moved responses (wrapping), and their
    /// count at the stream clocks' last tick: none between two ticks with
    /// output waiting means the connection stood still for the socket.
    turns: u64,
    turns_seen: u64,
}

/// Set when an exchange may need a walk's attention; a walk that finds
/// none clears its hint. Only a hint that is clear skips a walk, and every
/// change that makes work sets it, so none is missed.
#[derive(Clone, Copy, Debug, Default)]
struct Hints {
    /// Some request ended (or was refused): `respond`.
    ready: bool,
    /// Some body pipe failed: `reset_failed`.
    failed: bool,
    /// Some response comes from the application: `pump`.
    sources: bool,
}

impl<S> std::fmt::Debug for Http2<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http2")
            .field("streams", &self.exchanges.len())
            .field("closed", &self.conn.is_closed())
            .finish_non_exhaustive()
    }
}

impl<S: Send + 'static> Http2<S> {
    /// A connection whose client sent the preface: our SETTINGS are in the
    /// output.
    pub(crate) fn new(cx: &Context) -> Self {
        let config = Config {
            max_header_list_size: u32::try_from(cx.limits.max_head).unwrap_or(u32::MAX),
            // `max_headers` counts fields as HTTP/1 does; HTTP/2 adds the
            // four request pseudo-fields to the block.
            max_fields: cx.limits.max_headers.min(MAX_FIELDS) + PSEUDO_FIELDS,
            ..cx.limits.http2
        };
        // `Options::validate` checked the windows: construction cannot fail.
        let conn = Connection::new(config).unwrap_or_else(|_| unreachable!("validated windows"));
        let streams = usize::try_from(config.max_concurrent_streams).unwrap_or(usize::MAX);
        Self {
            conn,
            exchanges: Roomy::default(),
            input: Vec::new(),
            spare: Spares::new(streams),
            fields: Vec::new(),
            spans: Vec::new(),
            done: Vec::new(),
            input_ended: false,
            updates: Vec::new(),
            hints: Hints::default(),
            peer: None,
            turns: 0,
            turns_seen: 0,
        }
    }

    /// Takes over a connection upgraded from HTTP/1.1: `prefix` (what the
    /// HTTP/1 side still had to send, then the `101`) goes first, and the
    /// upgrading request becomes stream 1.
    pub(crate) fn upgrade<H>(
        &mut self,
        prefix: &[u8],
        upgrade: super::upgrade::Upgrade,
        handler: &H,
        cx: &Context,
        app: &mut AppSlots,
    ) -> bool
    where
        H: Handler<State = S>,
    {
        let mut dispatch = Dispatch {
            handler,
            exchanges: &mut self.exchanges,
            spare: &mut self.spare,
            pool: app.pool(),
            cx,
            hints: &mut self.hints,
            peer: self.peer,
        };
        self.conn.upgrade(prefix, &upgrade.settings, upgrade.head, &mut dispatch).is_ok()
    }

    /// Reads everything `input` holds, answers every request that ended,
    /// moves what the application wrote into frames; see [`Progress`].
    pub(crate) fn process<H>(
        &mut self,
        input: &Arc<Reader>,
        handler: &H,
        cx: &mut Context,
        app: &mut AppSlots,
    ) -> Progress
    where
        H: Handler<State = S>,
    {
        loop {
            if self.conn.output_len() >= cx.limits.max_pending_output {
                return Progress::OutputFull;
            }
            self.turns = self.turns.wrapping_add(1);
            if let Some(link) = app.existing_link() {
                link.take_updates(&mut self.updates);
                for (stream, updates) in self.updates.drain(..) {
                    self.conn.send_updates(stream, updates);
                }
            }
            let mut dispatch = Dispatch {
                handler,
                exchanges: &mut self.exchanges,
                spare: &mut self.spare,
                pool: app.pool(),
                cx,
                hints: &mut self.hints,
                peer: self.peer,
            };
            // Frames are read where the pipe's blocks hold them (only one
            // cut by a block's end is put together in `input`), a block at
            // a time, each back in the pool before the next is read: a lent
            // body's pipe takes blocks from the same pool meanwhile.
            let mut got_input = false;
            loop {
                let guard = match input.try_read() {
                    Ok(Some(guard)) => guard,
                    Ok(None) => break,
                    Err(_) => return Progress::Close,
                };
                let first = guard.chunks().next().unwrap_or_default();
                self.conn.receive_chunk(&mut self.input, first, &mut dispatch);
                let (taken, all) = (first.len(), first.len() == guard.len());
                got_input |= taken > 0;
                self.input_ended |= all && guard.is_completed();
                let _ = guard.advance_to(taken, taken);
                if all || taken == 0 {
                    break;
                }
            }
            self.reset_failed();
            if self.input_ended {
                self.drop_unanswerable();
            }
            // Answering fills the staging buffers, sending empties them, and
            // room lets more of a deferred response in: until nothing moves
            // (a pump that stopped at the room limit registered no wake, and
            // requests held back by a full staging area wait for room, so
            // both must run again here).
            loop {
                let answered = self.respond(handler, cx, app);
                let sent = self.flush(cx);
                let pumped = self.pump(cx, app);
                if !answered && !sent && !pumped {
                    break;
                }
            }
            if self.conn.is_closed() || (self.input_ended && self.all_need_credit()) {
                // The client's input ended and every response left (if
                // any) waits for credit that only its WINDOW_UPDATE could
                // give: none can come, so nothing more can go out.
                return Progress::Close;
            }
            if self.conn.output_len() >= cx.limits.max_pending_output {
                // `flush` stopped at the limit with frames still staged: the
                // connection writes and comes back (no event would).
                return Progress::OutputFull;
            }
            if self.input_ended {
                return Progress::Waiting;
            }
            if !got_input {
                return Progress::NeedInput;
            }
        }
    }

    /// Whether every exchange left (true with none) has bytes to send and
    /// no credit to send them with.
    fn all_need_credit(&self) -> bool {
        self.exchanges.iter().all(|(&id, exchange)| {
            let held = matches!(exchange.source, Some(Source::Pipe { held: true, .. }));
            exchange.head_sent && (exchange.unsent() > 0 || held) && self.conn.send_credit(id) == 0
        })
    }

    /// Response bytes staged and not yet sent, as (sendable, held back):
    /// sendable is what the windows would let go now, what a client that
    /// does not read its socket makes the connection hold (a head not yet
    /// sent counts whole: HEADERS need no credit); held back is the body
    /// bytes past a stream's credit, waiting for that stream's reader,
    /// but for the stream that holds back the most: one response paused
    /// by its own window (a client pausing a download), however large its
    /// handler made it, holds up no other stream (RFC 9113 §5.2); two or
    /// more are a client that withholds credit to make us stage answers.
    /// What such a client can have staged: the two largest answers (the
    /// one left aside, and the one that passes the bound) plus the bound.
    fn pending(&self) -> (usize, usize) {
        let (sendable, held, largest) =
            self.exchanges.iter().fold((0, 0, 0), |(sendable, held, largest), (&id, exchange)| {
                let unsent = exchange.unsent();
                if exchange.head_sent && unsent > 0 {
                    let now = unsent.min(self.conn.send_credit(id));
                    let back = unsent - now;
                    (sendable + now, held + back, largest.max(back))
                } else {
                    (sendable + unsent, held, largest)
                }
            });
        (sendable, held - largest)
    }

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
    fn respond<H>(&mut self, handler: &H, cx: &mut Context, app: &mut AppSlots) -> bool
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
                exchange.source = Some(Source::Polled { body: polled, encoder, starved: false });
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
    /// once) still go out, to a client that only half-closed.
    fn drop_unanswerable(&mut self) {
        let gone: Vec<u32> = self
            .exchanges
            .iter()
            .filter(|(_, e)| !e.request_ended || e.source.is_some())
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
    fn reset_failed(&mut self) {
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

    /// Moves what deferred and polled responses have into their staging
    /// buffers: no more than the stream can send now (its send credit),
    /// and no more than `max_pending_output` staged on the connection, so
    /// a client that grants no credit holds the responses in their pipes,
    /// whose pause stops the application. Returns whether anything moved.
    /// A response with nothing to move has registered the connection's
    /// waker; one held back by credit or room moves when a WINDOW_UPDATE
    /// or a flush (after which the caller pumps again) makes some.
    fn pump(&mut self, cx: &Context, app: &mut AppSlots) -> bool {
        if !self.hints.sources {
            return false;
        }
        let mut moved = false;
        let waker = app.link().waker();
        let mut poll_cx = std::task::Context::from_waker(&waker);
        let mut budget = cx.limits.max_pending_output.saturating_sub(self.pending().0);
        let mut failed = Vec::new();
        let mut sources = false;
        for (&id, exchange) in &mut self.exchanges {
            let unsent = exchange.unsent();
            let Some(source) = &mut exchange.source else { continue };
            // Bytes this stream may stage now: its credit less what it has
            // staged and not sent, so that a stream whose frames wait for
            // the socket does not stage past its window (a head not yet
            // sent may take HEAD_ROOM without credit: HEADERS need none).
            // 0 still lets a finished response's end through (END_STREAM
            // needs no credit).
            let credit = self.conn.send_credit(id);
            let credit = if exchange.head_sent { credit } else { credit.max(HEAD_ROOM) };
            let mut room = budget.min(credit.saturating_sub(unsent));
            match source {
                Source::Pipe { reader, readable, held, abandon } => loop {
                    // A head not staged whole yet is read whatever the
                    // room: HEADERS need no credit, and the head is what
                    // the application wrote (as a synchronous answer's
                    // head, staged at once). Only the body counts.
                    let mut head_open =
                        !exchange.head_sent && find_head_end(&exchange.staged).is_none();
                    let unsent = exchange.staged.len() - exchange.sent;
                    if room == 0 && !head_open && (unsent > 0 || *held) {
                        // No room, and bytes to send first: a stream that
                        // waits for credit costs no read of its pipe (a
                        // WINDOW_UPDATE on the connection pumps them all).
                        break;
                    }
                    if let Some(wait) = readable {
                        if Pin::new(wait).poll(&mut poll_cx).is_pending() {
                            break;
                        }
                        *readable = None;
                    }
                    let guard = match reader.try_read() {
                        Ok(Some(guard)) => guard,
                        Ok(None) => {
                            *readable = Some(Readable::new(reader));
                            continue;
                        }
                        Err(_) => break,
                    };
                    // Bytes taken, and of them those of the body (the
                    // head's are free).
                    let (mut taken, mut counted) = (0, 0);
                    for chunk in guard.chunks() {
                        let free = if head_open {
                            let end = head_end_in(&exchange.staged, chunk);
                            head_open = end.is_none();
                            end.unwrap_or(chunk.len())
                        } else {
                            0
                        };
                        let n = chunk.len().min(free + room - counted);
                        exchange.staged.extend_from_slice(&chunk[..n]);
                        taken += n;
                        counted += n - free;
                        if n < chunk.len() {
                            break;
                        }
                    }
                    room -= counted;
                    budget -= counted;
                    let all = taken == guard.len();
                    *held = !all;
                    let (completed, error) = (guard.is_completed(), guard.error().is_some());
                    let _ = guard.advance_to(taken, taken);
                    if taken > 0 {
                        moved = true;
                        exchange.steps = exchange.steps.wrapping_add(1);
                    }
                    if !all {
                        break; // no room for the rest now
                    }
                    if completed {
                        moved = true;
                        if error {
                            failed.push(id);
                        } else {
                            exchange.finished = true;
                            exchange.trailers = abandon.take_trailers().unwrap_or_default();
                        }
                        exchange.source = None;
                        break;
                    }
                },
                Source::Polled { body: polled, encoder, starved } => loop {
                    // A body frame comes whole: with no room, poll only
                    // with nothing unsent (as the pipe is read), so that
                    // the body's end, which needs no credit (an empty DATA
                    // with END_STREAM, RFC 9113 §6.9.1), goes out when it
                    // comes, for a client that granted exactly the body's
                    // length and owes nothing more; a frame that comes
                    // instead waits for credit (one past the window at
                    // most), and shows (`all_need_credit`).
                    // (A head not begun has nothing unsent either.)
                    *starved = room == 0
                        && !(exchange.staged.len() == exchange.sent && exchange.shared.is_empty());
                    if *starved {
                        break;
                    }
                    let before = exchange.staged.len() + exchange.shared.len();
                    let mut response =
                        Response::new(&mut exchange.staged, cx.date.fields(), *encoder, app)
                            .sharing(&mut exchange.shared);
                    let step = polled.poll_write(&mut poll_cx, &mut response);
                    *encoder = response.encoder();
                    if step.is_ready() {
                        moved = true;
                        exchange.steps = exchange.steps.wrapping_add(1);
                    }
                    match step {
                        Poll::Pending => break,
                        Poll::Ready(Step::Wrote) => {}
                        // The last piece as any other: the next poll ends
                        // the stream (with this DATA frame when it comes in
                        // the same turn).
                        Poll::Ready(Step::Frame(data) | Step::Last(data)) => {
                            let head = encoder.start_stream(&mut exchange.staged, cx.date.fields());
                            if head.is_err() {
                                failed.push(id);
                                exchange.source = None;
                                break;
                            }
                            if encoder.sends_body() && !data.is_empty() {
                                // Sent in place, not copied.
                                exchange.shared.push(exchange.staged.len(), data);
                            }
                        }
                        Poll::Ready(step @ (Step::Done | Step::Trailers(_))) => {
                            let mut encoder = *encoder;
                            encoder.finish(&mut exchange.staged, cx.date.fields());
                            if let Step::Trailers(trailers) = step
                                && encoder.sends_body()
                            {
                                exchange.trailers = trailers;
                            }
                            exchange.source = None;
                            exchange.finished = true;
                            break;
                        }
                        Poll::Ready(Step::Failed) => {
                            failed.push(id);
                            exchange.source = None;
                            break;
                        }
                    }
                    let grew = exchange.staged.len() + exchange.shared.len() - before;
                    room = room.saturating_sub(grew);
                    budget = budget.saturating_sub(grew);
                },
            }
            sources |= exchange.source.is_some();
        }
        self.hints.sources = sources;
        for id in failed {
            let Some(exchange) = self.exchanges.get_mut(&id) else { continue };
            if exchange.head_sent {
                // Part of the response went out: only a reset can follow.
                self.conn.reset(id, ErrorCode::INTERNAL_ERROR);
                if let Some(exchange) = self.exchanges.remove(&id) {
                    self.spare.give(exchange.staged);
                }
            } else {
                let status = exchange.failure.unwrap_or(Status::INTERNAL_SERVER_ERROR);
                refuse(&mut self.conn, id, exchange, cx, status);
            }
            moved = true;
        }
        moved
    }

    /// Turns staged responses into frames, as far as the windows allow.
    /// Returns whether it sent anything.
    fn flush(&mut self, cx: &Context) -> bool {
        let before = self.conn.output_len();
        let mut done = std::mem::take(&mut self.done);
        let blocked = self.conn.connection_credit() <= 0;
        for (&id, exchange) in &mut self.exchanges {
            if self.conn.output_len() >= cx.limits.max_pending_output {
                break;
            }
            if blocked && exchange.head_sent && exchange.unsent() > 0 {
                continue; // body bytes wait for connection credit
            }
            if exchange.continue_pending && !exchange.head_sent {
                exchange.continue_pending = false;
                if find_head_end(&exchange.staged).is_none() {
                    // RFC 9110 10.1.1: the client waits for this to send.
                    self.conn.send_headers(id, 100, [], false);
                    exchange.step();
                }
            }
            if !exchange.head_sent {
                let Some(head_len) = find_head_end(&exchange.staged) else { continue };
                let body_empty = exchange.staged.len() == head_len && exchange.shared.is_empty();
                let end_stream = exchange.finished && body_empty && exchange.trailers.is_empty();
                let status = staged_status(&exchange.staged);
                let head = &exchange.staged[..head_len];
                // The field lines after the status line.
                let lines =
                    &head[head.iter().position(|&b| b == b'\n').map_or(head.len(), |at| at + 1)..];
                lowercase_fields(lines, &mut self.fields, &mut self.spans);
                let names = &self.fields;
                let fields = self
                    .spans
                    .iter()
                    .map(|(name, value)| Field::new(&names[name.clone()], &lines[value.clone()]));
                self.conn.send_headers(id, status, fields, end_stream);
                exchange.head_sent = true;
                exchange.step();
                exchange.sent = head_len;
            }
            send_body(&mut self.conn, id, exchange);
            if exchange.sent == exchange.staged.len() && exchange.shared.is_empty() {
                if exchange.finished && !exchange.trailers.is_empty() {
                    // The body is out: its trailers end the stream.
                    let lines = std::mem::take(&mut exchange.trailers);
                    lowercase_fields(&lines, &mut self.fields, &mut self.spans);
                    let names = &self.fields;
                    let fields = self.spans.iter().map(|(name, value)| {
                        Field::new(&names[name.clone()], &lines[value.clone()])
                    });
                    self.conn.send_trailers(id, fields);
                    exchange.step();
                }
                if exchange.finished {
                    // The response is out. While the application reads the
                    // body, the exchange stays for the rest of it.
                    let reading = exchange.body.is_some() && self.conn.body_wanted(id);
                    if !reading {
                        if !exchange.request_ended {
                            // The body is over for the application (dropped,
                            // failed) but not for the client: it may stop
                            // (a stream `local_end` reset already is gone).
                            self.conn.reset(id, ErrorCode::NO_ERROR);
                        }
                        done.push(id);
                    }
                } else {
                    exchange.staged.clear();
                    exchange.sent = 0;
                }
            }
        }
        let finished = !done.is_empty();
        for id in done.drain(..) {
            if let Some(exchange) = self.exchanges.remove(&id) {
                self.spare.give(exchange.staged);
            }
        }
        self.done = done;
        finished || self.conn.output_len() != before
    }

    /// The first piece of the frames to send.
    pub(crate) fn output(&self) -> &[u8] {
        self.conn.output()
    }

    /// Every piece of the frames to send, for one vectored write.
    pub(crate) fn output_slices<'a>(&'a self, slices: &mut [std::io::IoSlice<'a>]) -> usize {
        self.conn.output_slices(slices)
    }

    /// The bytes waiting to be sent.
    pub(crate) fn output_len(&self) -> usize {
        self.conn.output_len()
    }

    /// Marks `n` bytes of the output as sent.
    pub(crate) fn consume_output(&mut self, n: usize) {
        self.conn.consume_output(n);
    }

    /// No stream open and nothing to send.
    pub(crate) fn is_idle(&self) -> bool {
        !self.has_streams()
            && self.output_len() == 0
            && self.input.is_empty()
            && !self.conn.in_field_block()
    }

    /// Whether a request head is under way, for the header timeout: a
    /// field block not ended or a HEADERS frame arriving (known by its
    /// type byte), whatever else the connection carries (no other frame
    /// may come until a block ends, 6.10); with no stream open, bytes of
    /// any frame waiting for the rest.
    pub(crate) fn head_under_way(&self) -> bool {
        let headers_arriving = self.input.get(3) == Some(&super::frame::kind::HEADERS);
        self.conn.in_field_block()
            || headers_arriving
            || (!self.has_streams() && !self.input.is_empty())
    }

    /// The client's progress on the input side: the frames that carried
    /// part of a request (see [`Connection::request_frames`]), and the
    /// bytes so far of one still arriving that will count when whole (see
    /// [`Connection::counts_when_whole`]), so that a frame longer than the
    /// I/O timeout takes to come over a slow link is progress as it comes.
    pub(crate) fn request_progress(&self) -> (u64, usize) {
        let arriving = if self.conn.counts_when_whole(&self.input) { self.input.len() } else { 0 };
        (self.conn.request_frames(), arriving)
    }

    /// Field blocks ended on the connection (wrapping), for the timer.
    pub(crate) fn blocks_ended(&self) -> u64 {
        self.conn.field_blocks_ended()
    }

    /// Some stream is open or answering. (With none, bytes of a frame
    /// waiting for the rest, or a field block whose CONTINUATIONs have not
    /// all come, make the connection neither idle nor in a body: the
    /// header timeout applies, against a slowloris that trickles a HEADERS
    /// frame or its CONTINUATIONs.)
    pub(crate) fn has_streams(&self) -> bool {
        !self.exchanges.is_empty() || self.conn.open_streams() > 0
    }

    /// Some stream waits for the application.
    pub(crate) fn with_application(&self) -> bool {
        self.exchanges.values().any(Exchange::with_application)
    }

    /// The connection is over (it closes once its output is sent).
    pub(crate) fn is_closed(&self) -> bool {
        self.conn.is_closed()
    }

    /// Whether the client owes bytes: a stream open with no exchange yet,
    /// a request not ended whose body the application is not behind on
    /// (a lent body with bytes it has not looked at has used up credit
    /// the client cannot send without) and that has credit to send with
    /// (another stream's unread bytes may hold the connection's window),
    /// or credit a response waits for.
    /// (A field block under way is a head: the header timeout's.)
    pub(crate) fn client_owes(&self) -> bool {
        (self.exchanges.is_empty() && self.conn.open_streams() > 0)
            || self
                .exchanges
                .iter()
                .any(|(&id, e)| e.body_owed() && self.conn.receive_credit(id) > 0)
            || self.exchanges.iter().any(|(&id, e)| self.waits_for_credit(id, e))
    }

    /// `None` with no request body under way; else the request bodies the
    /// client owes and has credit to send: what
    /// [`Options::min_request_body_rate`](crate::Options::min_request_body_rate)
    /// multiplies its rate by. A stream whose window (or the connection's)
    /// is spent waits on the application, not the client.
    pub(crate) fn bodies_owed(&self) -> Option<usize> {
        if self.exchanges.values().all(|exchange| exchange.request_ended) {
            return None;
        }
        let owed = self
            .exchanges
            .iter()
            .filter(|&(&id, exchange)| exchange.body_owed() && self.conn.receive_credit(id) > 0)
            .count();
        Some(owed)
    }

    /// DATA the client sent on open streams, in bytes of data (padding
    /// left out): what [`Options::min_request_body_rate`](crate::Options::min_request_body_rate)
    /// counts.
    pub(crate) fn body_bytes(&self) -> u64 {
        self.conn.body_bytes()
    }

    /// Whether the response of `exchange` (stream `id`) waits for the
    /// client's credit (see [`waits_for_credit`]).
    fn waits_for_credit(&self, id: u32, exchange: &Exchange<S>) -> bool {
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
            Holder::Client => (Status::REQUEST_TIMEOUT, ErrorCode::CANCEL),
            Holder::Application | Holder::Nobody => {
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

    /// Graceful shutdown: GOAWAY, then the open streams finish.
    pub(crate) fn shutdown(&mut self) {
        self.conn.shutdown();
    }

    /// The shutdown's PING went unanswered too long: the final GOAWAY.
    /// Returns whether it queued one.
    pub(crate) fn finish_shutdown(&mut self) -> bool {
        self.conn.finish_shutdown()
    }

    /// The connection closes while idle: the final GOAWAY, at once.
    pub(crate) fn goodbye(&mut self) {
        self.conn.goodbye();
    }

    /// Ends the connection now (a timeout): GOAWAY, nothing more read.
    pub(crate) fn abort(&mut self) {
        self.conn.abort(ErrorCode::NO_ERROR);
    }

    /// Bytes of output that are not responses: the acknowledgements and
    /// resets the client made us send, and the headers of DATA frames its
    /// credit cut short.
    pub(crate) fn unbilled_bytes(&self) -> u64 {
        self.conn.answer_bytes() + self.conn.data_header_bytes()
    }

    /// Ends the connection now, for taking its responses too slowly
    /// ([`Options::min_response_rate`](crate::Options::min_response_rate)).
    pub(crate) fn too_slow(&mut self) {
        self.conn.abort(ErrorCode::ENHANCE_YOUR_CALM);
    }

    /// The responses waiting on the client: the streams whose bytes their
    /// windows hold back, or one if the socket is behind and none is.
    pub(crate) fn waiting_on_client(&self) -> usize {
        let held = self
            .exchanges
            .iter()
            .filter(|&(&id, exchange)| self.waits_for_credit(id, exchange))
            .count();
        held.max(usize::from(self.output_len() > 0))
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

/// Writes a refusal (`status`, empty body) as the whole response.
fn refuse<S>(
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

/// Frames the staged body as far as the send windows allow: the bytes
/// copied into the staging buffer up to each shared piece, then the piece
/// in place; END_STREAM on the last frame once the response is finished.
fn send_body<S>(conn: &mut Connection, id: u32, exchange: &mut Exchange<S>) {
    loop {
        let end = exchange.shared.next_at().unwrap_or(exchange.staged.len());
        let copied = &exchange.staged[exchange.sent..end];
        let last = exchange.finished && exchange.shared.is_empty() && exchange.trailers.is_empty();
        if !copied.is_empty() || last {
            let n = conn.send_data(id, copied, last);
            exchange.sent += n;
            let all = n == copied.len();
            if n > 0 || last {
                exchange.step();
            }
            if !all || last {
                return;
            }
        }
        if exchange.shared.is_empty() {
            return;
        }
        let last = exchange.finished
            && exchange.shared.count() == 1
            && end == exchange.staged.len()
            && exchange.trailers.is_empty();
        let before = exchange.shared.len();
        let gone = exchange.shared.send_front(|piece| {
            conn.send_shared(id, piece, last);
        });
        if exchange.shared.len() != before || last {
            exchange.step();
        }
        if !gone || last {
            return;
        }
    }
}

/// The largest staging buffer kept for another stream.
const SPARE_CAPACITY: usize = 64 * 1024;
/// The most bytes of staging buffers a connection keeps for its next
/// streams.
const SPARE_BYTES: usize = 256 * 1024;

/// Staging buffers of finished streams, for the next ones: one for each
/// stream the peer may keep open (so no stream allocates its own in steady
/// state; with a fixed 16 kept, every stream past the 16th of a batch
/// allocated again), each at most [`SPARE_CAPACITY`] and together at most
/// [`SPARE_BYTES`].
struct Spares {
    /// The trailers handed to a handler that reads its body on the
    /// worker, refilled per request.
    trailers: Trailers,
    buffers: Vec<Vec<u8>>,
    /// The sum of the kept buffers' capacities.
    bytes: usize,
    /// At most this many: the connection's `max_concurrent_streams`.
    keep: usize,
}

impl Spares {
    fn new(keep: usize) -> Self {
        Self { trailers: Trailers::new(), buffers: Vec::new(), bytes: 0, keep }
    }

    /// A staging buffer: a kept one, or a new one (no allocation until
    /// written).
    fn take(&mut self) -> Vec<u8> {
        let staged = self.buffers.pop().unwrap_or_default();
        self.bytes -= staged.capacity();
        staged
    }

    /// Keeps a finished stream's staging buffer, if there is room.
    fn give(&mut self, mut staged: Vec<u8>) {
        let capacity = staged.capacity();
        if self.buffers.len() < self.keep
            && capacity <= SPARE_CAPACITY
            && self.bytes + capacity <= SPARE_BYTES
        {
            staged.clear();
            self.bytes += capacity;
            self.buffers.push(staged);
        }
    }
}

/// The end of the staged head (past its blank line), once it is there.
fn find_head_end(staged: &[u8]) -> Option<usize> {
    staged.windows(4).position(|w| w == b"\r\n\r\n").map(|at| at + 4)
}

/// How many bytes of `chunk` a head begun in `staged` (not ended there)
/// still takes: up to and with its blank line, if that is in `chunk`.
fn head_end_in(staged: &[u8], chunk: &[u8]) -> Option<usize> {
    const BLANK_LINE: u32 = u32::from_be_bytes(*b"\r\n\r\n");
    // The last four bytes seen, the staged head's last three first.
    let tail = &staged[staged.len().saturating_sub(3)..];
    let mut last = tail.iter().fold(0u32, |last, &b| last << 8 | u32::from(b));
    chunk
        .iter()
        .position(|&b| {
            last = last << 8 | u32::from(b);
            last == BLANK_LINE
        })
        .map(|at| at + 1)
}

/// The status of a staged head (`HTTP/1.1 NNN ...`).
fn staged_status(staged: &[u8]) -> u16 {
    staged
        .get(9..12)
        .and_then(|digits| core::str::from_utf8(digits).ok())
        .and_then(|digits| digits.parse().ok())
        .unwrap_or(500)
}

/// Field lines (a staged head's after its status line, or trailers),
/// minus connection fields: each name lowercased into `names`, and
/// `spans` the (name in `names`, value in `head`) ranges. Both buffers
/// are reused. A line without a colon (the head's blank end) is skipped.
fn lowercase_fields(
    head: &[u8],
    names: &mut Vec<u8>,
    spans: &mut Vec<(Range<usize>, Range<usize>)>,
) {
    names.clear();
    spans.clear();
    let mut at = 0;
    for line in head.split(|&b| b == b'\n') {
        let line_start = at;
        at += line.len() + 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = line.iter().position(|&b| b == b':') else { continue };
        // Without the whitespace around it, which an HTTP/1 head may
        // carry and an HTTP/2 field value must not (RFC 9113 §8.2.1).
        let after_colon = &line[colon + 1..];
        let value = after_colon.trim_ascii();
        let value_start =
            line_start + colon + 1 + (after_colon.len() - after_colon.trim_ascii_start().len());
        let start = names.len();
        names.extend(line[..colon].iter().map(u8::to_ascii_lowercase));
        if CONNECTION_FIELDS.contains(&&names[start..]) {
            names.truncate(start);
            continue;
        }
        spans.push((start..names.len(), value_start..value_start + value.len()));
    }
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

/// The connection's events, handed to the handler as they arrive.
struct Dispatch<'a, H: Handler> {
    handler: &'a H,
    exchanges: &'a mut Roomy<u32, Exchange<H::State>>,
    spare: &'a mut Spares,
    pool: &'a Pool,
    cx: &'a Context,
    hints: &'a mut Hints,
    peer: Option<std::net::SocketAddr>,
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
        let authority = head
            .authority()
            .or_else(|| {
                let host = headers.iter().find(|h| h.name == "host")?;
                core::str::from_utf8(host.value).ok()
            })
            .unwrap_or_default();
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
            version: Version::Http2,
            headers,
            body,
            stream: std::cell::Cell::new(false),
            peer: self.peer,
        };
        // As HTTP/1 refuses them before the handler: a body over
        // `max_body`, CONNECT (no tunnels, 8.5), an expectation other than
        // 100-continue.
        let expect = head.fields().find(|(name, _)| *name == b"expect").map(|(_, value)| value);
        let continues = expect.is_some_and(|v| v.eq_ignore_ascii_case(b"100-continue"));
        let refused = if head.is_oversized() {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_ends_at_its_blank_line_across_pieces() {
        let head = b"HTTP/1.1 200 OK\r\nA: b\r\n\r\nbody";
        let end = find_head_end(head).unwrap();
        // Every split of the head between what was staged and the next
        // piece finds the same end, and a piece without it takes it all.
        for at in 0..end {
            let (staged, chunk) = head.split_at(at);
            assert_eq!(head_end_in(staged, chunk), Some(end - at), "split at {at}");
            assert_eq!(head_end_in(staged, &chunk[..end - at - 1]), None, "split at {at}");
        }
        assert_eq!(head_end_in(b"", b"\r\n"), None);
        assert_eq!(head_end_in(b"\r", b"\n\r\n"), Some(3));
    }

    #[test]
    fn staged_heads_become_fields() {
        let head = b"HTTP/1.1 404 Not Found\r\nServer: falconet\r\nDate: x\r\nContent-Length: 0\r\nConnection: close\r\nX-A:b\r\n\r\n";
        assert_eq!(find_head_end(head), Some(head.len()));
        assert_eq!(staged_status(head), 404);
        let (mut names, mut spans) = (Vec::new(), Vec::new());
        lowercase_fields(head, &mut names, &mut spans);
        let pairs: Vec<(&[u8], &[u8])> =
            spans.iter().map(|(n, v)| (&names[n.clone()], &head[v.clone()])).collect();
        assert_eq!(
            pairs,
            [
                (&b"server"[..], &b"falconet"[..]),
                (b"date", b"x"),
                (b"content-length", b"0"),
                (b"x-a", b"b"),
            ]
        );
    }
}
