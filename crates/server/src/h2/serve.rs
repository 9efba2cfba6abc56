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

// The parts, one job each: respond (the handler asked for each stream's
// answer), pump (staged answers to frames as the windows allow), staged
// (the staging form of a head, and the buffers kept), expiry (each
// stream's clock and timeouts), dispatch (the connection's events handed
// to the handler).
mod dispatch;
mod expiry;
mod pump;
mod respond;
mod staged;

use self::dispatch::Dispatch;
use self::staged::Spares;
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
    /// whatever it would give waits for the client. `yielded`: the last
    /// look stopped with the body still ready (polls that staged nothing,
    /// [`POLLS_WITHOUT_OUTPUT`](crate::response::POLLS_WITHOUT_OUTPUT) of
    /// them): the worker has its answer and comes back for it, as for one
    /// answered at once.
    Polled { body: Box<dyn Polled>, encoder: Encoder, starved: bool, yielded: bool },
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
    /// Polls of polled bodies left in this round (`process` call):
    /// [`POLLS_PER_ROUND`](crate::response::POLLS_PER_ROUND) at its start.
    polls_left: u32,
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
            polls_left: crate::response::POLLS_PER_ROUND,
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
        self.polls_left = crate::response::POLLS_PER_ROUND;
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

    /// Ends the connection now, the client late (the header or I/O
    /// timeout): each stream whose body it owes is answered `408` first
    /// (see [`expire_owing`](Self::expire_owing)), then GOAWAY(NO_ERROR);
    /// nothing more is read.
    pub(crate) fn abort(&mut self, cx: &Context) {
        self.expire_owing(cx);
        self.conn.abort(ErrorCode::NO_ERROR);
    }

    /// Bytes of output that are not responses: the acknowledgements and
    /// resets the client made us send, and the headers of DATA frames its
    /// credit cut short.
    pub(crate) fn unbilled_bytes(&self) -> u64 {
        self.conn.answer_bytes() + self.conn.data_header_bytes()
    }

    /// Ends the connection now, for taking its responses or sending its
    /// request bodies too slowly
    /// ([`Options::min_response_rate`](crate::Options::min_response_rate),
    /// [`Options::min_request_body_rate`](crate::Options::min_request_body_rate)):
    /// each stream whose body it owes is answered `408` first (see
    /// [`expire_owing`](Self::expire_owing)), then
    /// GOAWAY(ENHANCE_YOUR_CALM).
    pub(crate) fn too_slow(&mut self, cx: &Context) {
        self.expire_owing(cx);
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
