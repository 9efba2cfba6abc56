//! A registered connection: its socket, its session, and the
//! read -> process -> one write cycle that drives them.
//!
//! Readiness is edge-triggered, so the connection remembers it: `readable`
//! stays set until a read comes back short or `WouldBlock` (a short read
//! drains the socket, so no read is spent learning that it would block),
//! `writable` until a write comes back short. The client's end of stream
//! ([`ClientEnd`]) is first *announced* by the poll (a hang-up: the data
//! before it is still to be read), then *reached* by a read of 0 bytes.
//!
//! Closing is ordered so that the client sees the last response
//! ([`Phase`]):
//!
//! ```text
//! Open --Close/timeout--> Flushing --output sent--> Lingering --client's end or linger timeout--> closed
//!                         (client's end reached: closed once the output is sent)
//! ```
//!
//! A lingering connection has shut its write side and reads (discarding)
//! until the client's end of stream, so unread input does not make the
//! kernel reset the connection and drop the response.
//!
//! A session that cut off a response the close delimits (to an HTTP/1.0
//! request, on the connection's first exchange) after part of it went out
//! ([`Session::must_reset`]) ends with a reset instead, once its output is
//! written, so the client cannot take the cut response for a whole one;
//! so does a connection closed any other way while such a response is
//! under way in the application, or whose bytes wait in the output (a
//! timeout, a failed write, shutdown's deadline).
//!
//! The timer judges an open connection by who keeps it waiting, in this
//! order (`Conn::check`):
//!
//! 1. responses wait on the client to take them: the minimum response
//!    rate (then close);
//! 2. request bodies the client owes and the server would read: the
//!    minimum request-body rate (then 408, or a close once a response
//!    started; HTTP/2: GOAWAY, unless streams the client does not hold up
//!    are open too, such as ones the application holds: then only the
//!    streams it owes bodies on end, 408 or reset, and the rest go on);
//! 3. a head under way (`Session::head_under_way`; HTTP/2: a field block,
//!    whatever else the connection carries), each timed from the first
//!    look that found it: `header_timeout` (then 408; HTTP/2: GOAWAY);
//! 4. responses wait on the client: `io_timeout` without a byte taken
//!    (then close);
//! 5. idle (nothing under way): `keep_alive_timeout` since the last
//!    exchange (then close; HTTP/2 control frames on no stream, such as
//!    PINGs, do not count as one);
//! 6. the client owes request bytes (a body not all arrived and not held
//!    back by the application, HTTP/2 credit a response waits for):
//!    `io_timeout` without progress (then 408, or a close once a response
//!    started; HTTP/2: GOAWAY, unless streams the client does not hold up
//!    are open too, such as ones the application holds: then each stream
//!    it owes a body on ends at its own clock's time, 408 or reset, and
//!    the rest go on);
//! 7. only the application (a deferred answer, a body it is behind on, a
//!    streamed body between pieces): `response_timeout` (then 503, or a
//!    cut once its response started; HTTP/2: those streams alone).
//!
//! A connection that is on time may still have an HTTP/2 stream that is
//! not: one whose client or application held it up while the other
//! streams moved. Each stream has its own clock for 6 and 7
//! (`h2/clock.rs`), judged at each tick the connection was found on time:
//! the late stream alone is answered (408 or 503) or reset.

use std::io::{self, Read, Write};
use std::net::Shutdown;

use mio::net::TcpStream;
use parking_lot::Mutex;

use crate::handler::{Handler, Status};
use crate::http1::Progress;
use crate::meter::{Meter, Rate};
use crate::session::{Context, FINAL_GOAWAY_AFTER_MS, OUTPUT_SLICES, Session};

/// What the registry holds for each connection. Only the worker that
/// accepted it drives it (its socket is in that worker's poll); the timer
/// (worker 0) takes the lock briefly to judge timeouts.
pub(crate) struct Connection<H: Handler> {
    pub(crate) inner: Mutex<Conn<H>>,
}

/// Whether a connection stays registered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Open,
    Close,
    /// Open, and the timer drained its output: drive it, so what waits
    /// for room (a polled body) goes on.
    Drive,
    /// Open, and its turn is over with input still to read
    /// ([`TURN_READ_BUDGET`], [`TURN_ROUNDS`]): drive it again once the
    /// worker has served the other connections' events.
    Yield,
}

/// The most a connection reads in one turn (one event, one wake): a
/// client that sends without pause (a pipelining flood, a stream of
/// HEADERS each costing a decode) gets this much served, then every other
/// connection of its worker gets its turn before it gets the next.
pub(crate) const TURN_READ_BUDGET: usize = 1 << 20;

/// The most a lingering connection reads (and discards) in one turn.
/// Its bytes are worth nothing: a sixteenth of a serving turn's budget.
const LINGER_TURN_BUDGET: usize = TURN_READ_BUDGET / 16;

/// One read of a lingering connection (on the stack).
const LINGER_READ: usize = 8 << 10;

/// The most read-answer-write rounds of one turn (each reads until the
/// input pipe pauses or the socket is drained): the budget for a
/// connection that keeps the worker busy without reading much.
pub(crate) const TURN_ROUNDS: u32 = 16;

/// What the poll reported for a connection.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Readiness {
    pub(crate) readable: bool,
    pub(crate) writable: bool,
    /// End of stream or an error: reading will tell which.
    pub(crate) read_closed: bool,
}

/// The timeouts a connection is judged by, in milliseconds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timeouts {
    pub(crate) header: u64,
    pub(crate) io: u64,
    pub(crate) keep_alive: u64,
    pub(crate) linger: u64,
    /// [`Options::response_timeout`](crate::Options::response_timeout).
    pub(crate) response: Option<u64>,
    /// [`Options::min_response_rate`](crate::Options::min_response_rate).
    pub(crate) min_rate: Option<Rate>,
    /// [`Options::min_request_body_rate`](crate::Options::min_request_body_rate).
    pub(crate) min_body_rate: Option<Rate>,
}

impl Timeouts {
    pub(crate) fn from_options(options: &crate::Options) -> Self {
        let ms = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        Self {
            header: ms(options.header_timeout),
            io: ms(options.io_timeout),
            keep_alive: ms(options.keep_alive_timeout),
            linger: ms(options.linger_timeout),
            response: options.response_timeout.map(ms),
            min_rate: options.min_response_rate.map(Rate::new),
            min_body_rate: options.min_request_body_rate.map(Rate::new),
        }
    }
}

/// Where a connection's closing stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Serving requests.
    Open,
    /// The session is over; its last output is being sent.
    Flushing,
    /// Our write side is shut; reading (and discarding) until the client's
    /// end of stream, so unread input does not turn our close into a reset.
    Lingering,
}

/// What is known of the client's end of stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClientEnd {
    /// Nothing yet.
    Open,
    /// The poll reported it: reading the data before it will reach it.
    Announced,
    /// A read returned 0: the client sends nothing more.
    Reached,
}

pub(crate) struct Conn<H: Handler> {
    pub(crate) socket: TcpStream,
    session: Session<H>,
    readable: bool,
    writable: bool,
    phase: Phase,
    client_end: ClientEnd,
    /// Last time the client moved an exchange on (or the state changed),
    /// ms since server start: bytes of a request read (HTTP/2: of a frame
    /// that carries part of one), or bytes of a response taken. HTTP/2's
    /// PINGs, SETTINGS and the like, and their acknowledgements, move
    /// nothing: a client that owes a body and only PINGs is timed out.
    last_progress: u64,
    /// HTTP/2: [`Session::request_progress`] when last seen.
    request_progress: (u64, usize),
    /// The most [`Session::taken`] has been.
    taken_mark: u64,
    /// Last time the output was seen empty or a write took some of it:
    /// what `io_timeout` judges a client that does not read by (bytes it
    /// sends meanwhile do not count).
    output_moved: u64,
    /// Last time the connection had an exchange under way (a drive began
    /// or ended with the session not idle) or ended a request head: what
    /// the keep-alive timeout counts from. Bytes that leave the session
    /// idle (HTTP/2 PINGs, SETTINGS, WINDOW_UPDATEs, PRIORITY on no
    /// stream) do not keep a connection, as Go's and Kestrel's idle
    /// timers ignore them.
    busy_at: u64,
    /// Whether the timer's last judgement found only the application
    /// holding the exchange up (a lent body with bytes it had not read, a
    /// deferred response).
    application_held: bool,
    /// The first tick that found the client owing bytes after one that
    /// found only the application holding: the client's I/O timeout counts
    /// from here if that is later than its last progress, since it owed
    /// nothing before. (The application let go somewhere between the two
    /// ticks: counting from the later one makes the timer late by up to a
    /// tick, never early.)
    owed_since: u64,
    /// When the current request head's first byte arrived.
    head_started: Option<u64>,
    /// [`Session::heads_ended`] when `head_started` was last judged.
    heads_seen: u64,
    /// Its standing against [`Options::min_response_rate`](crate::Options::min_response_rate),
    /// while responses wait on the client.
    taking: Option<Meter>,
    /// Its standing against [`Options::min_request_body_rate`](crate::Options::min_request_body_rate),
    /// while it owes request bodies.
    sending: Option<Meter>,
    /// On its worker's list of connections to drive again
    /// ([`Verdict::Yield`]); the worker clears it when it takes the turn.
    /// A turn that ends with more to read while it is set is not queued a
    /// second time: a flooding connection gets at most one turn from the
    /// list per poll, however many events also drive it.
    pub(crate) queued: bool,
}

impl<H: Handler> Drop for Conn<H> {
    /// Closed by the server otherwise (a shutdown's deadline, a failed
    /// write): a body still being read fails with `ConnectionAborted`. A
    /// response the close delimits, cut off or still under way, makes the
    /// close a reset ([`Session::must_reset`]).
    fn drop(&mut self) {
        self.session.fail_input(io::ErrorKind::ConnectionAborted);
        if self.session.must_reset() {
            // Best effort: the socket closes either way.
            let _ =
                socket2::SockRef::from(&self.socket).set_linger(Some(std::time::Duration::ZERO));
        }
    }
}

impl<H: Handler> Conn<H> {
    pub(crate) fn new(socket: TcpStream, session: Session<H>, now: u64) -> Self {
        Self {
            socket,
            session,
            readable: false,
            writable: true,
            phase: Phase::Open,
            client_end: ClientEnd::Open,
            last_progress: now,
            request_progress: (0, 0),
            taken_mark: 0,
            output_moved: now,
            busy_at: now,
            application_held: false,
            owed_since: 0,
            head_started: None,
            heads_seen: 0,
            taking: None,
            sending: None,
            queued: false,
        }
    }

    /// The end of a turn with more to read: queued for another, once.
    fn yield_turn(&mut self) -> Verdict {
        if std::mem::replace(&mut self.queued, true) { Verdict::Open } else { Verdict::Yield }
    }

    /// Whether the socket may hold input the session would take now.
    fn more_to_read(&mut self, cx: &Context) -> bool {
        self.readable && self.client_end != ClientEnd::Reached && self.session.wants_input(cx)
    }

    /// Ties the connection to its id and its worker's queue (see `link.rs`).
    pub(crate) fn attach(&mut self, id: u64, notify: std::sync::Arc<crate::link::Notify>) {
        self.session.attach(id, notify);
    }

    /// Handles readiness: reads what there is, answers it, writes once.
    pub(crate) fn ready(
        &mut self,
        readiness: Readiness,
        handler: &H,
        cx: &mut Context,
        now: u64,
    ) -> Verdict {
        self.readable |= readiness.readable || readiness.read_closed;
        if readiness.read_closed && self.client_end == ClientEnd::Open {
            self.client_end = ClientEnd::Announced;
        }
        let writable = readiness.writable;
        self.writable |= writable;
        match self.drive(handler, cx, now) {
            Ok(verdict) => verdict,
            Err(error) => {
                tracing::debug!(%error, "connection failed");
                // A body still being read fails with the client's error.
                self.session.fail_input(error.kind());
                Verdict::Close
            }
        }
    }

    fn drive(&mut self, handler: &H, cx: &mut Context, now: u64) -> io::Result<Verdict> {
        // The clock of what earns back with time (HTTP/2's reset budget),
        // read before the frames this turn reads spend it.
        self.session.advance_clock(now);
        let mut budget = TURN_READ_BUDGET;
        let mut rounds = 0;
        loop {
            if self.phase == Phase::Lingering {
                return self.linger();
            }
            rounds += 1;
            while budget > 0 && self.more_to_read(cx) {
                match self.session.read_from(&mut self.socket, &mut cx.spill) {
                    Ok((0, _)) => {
                        self.client_end = ClientEnd::Reached;
                        self.session.end_input();
                    }
                    Ok((n, filled)) => {
                        budget = budget.saturating_sub(n);
                        if self.session.request_progress().is_none() {
                            // HTTP/1.1 (or not known yet): every byte is a
                            // request's. HTTP/2's frames are counted below.
                            self.last_progress = now;
                        }
                        // A short read drained the socket, unless its end
                        // of stream is already known to follow the data.
                        self.readable = filled || self.client_end == ClientEnd::Announced;
                    }
                    Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                        self.readable = false
                    }
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                    Err(error) => return Err(error),
                }
            }
            if self.session.output_len() == 0 {
                self.output_moved = now;
            }
            let was_idle = self.session.is_idle();
            let progress = self.session.process(handler, cx);
            if let Some((frames, arriving)) = self.session.request_progress() {
                let (seen, had) = std::mem::replace(&mut self.request_progress, (frames, arriving));
                // A frame that came whole, or more of one coming.
                if frames != seen || arriving > had {
                    self.last_progress = now;
                }
            }
            self.write(now)?;
            let flushed = self.session.output().is_empty();
            if !was_idle || !self.session.is_idle() {
                self.busy_at = now;
            }
            // A head's clock runs from the first drive that finds one
            // under way (`Session::head_under_way`), each head its own:
            // restarted past the end of the head it timed (a head begun in
            // the read that ended the last one).
            let heads = self.session.heads_ended();
            if heads != std::mem::replace(&mut self.heads_seen, heads) {
                self.head_started = None;
                self.busy_at = now;
            }
            self.head_started = match (self.session.head_under_way(), self.head_started) {
                (false, _) => None,
                (true, None) => Some(now),
                (true, started) => started,
            };
            match progress {
                Progress::Close => return self.settle(flushed, now),
                Progress::OutputFull if self.writable => {
                    if rounds == TURN_ROUNDS {
                        return Ok(self.yield_turn());
                    }
                }
                Progress::OutputFull => return Ok(Verdict::Open),
                Progress::NeedInput if self.client_end == ClientEnd::Reached => {
                    return self.settle(flushed, now);
                }
                // Input the session takes is still unread (the turn's
                // budget stopped the reads, or answering made room): read
                // on, or, past the budget, after the others' events. (A
                // connection waiting for the application must not wait
                // for input only it would read: no event would come.)
                Progress::NeedInput | Progress::Waiting if self.more_to_read(cx) => {
                    if budget == 0 || rounds == TURN_ROUNDS {
                        return Ok(self.yield_turn());
                    }
                }
                // The application wakes the connection when it has more.
                Progress::Waiting => return Ok(Verdict::Open),
                Progress::NeedInput => return Ok(Verdict::Open),
            }
        }
    }

    /// Writes everything pending (the output buffer, a polled response's
    /// frame, HTTP/2's payloads sent in place), vectored: one write when
    /// it all fits one call's slices, more while the socket takes every
    /// byte offered and some are left (more pieces than
    /// [`OUTPUT_SLICES`]); readiness comes back only once a write blocks,
    /// so stopping early would strand the rest.
    fn write(&mut self, now: u64) -> io::Result<()> {
        while self.writable {
            let pending = self.session.output_len();
            if pending == 0 {
                return Ok(());
            }
            let first = self.session.output();
            // What this write offers: all of it, unless more pieces wait
            // than one call's slices hold.
            let (written, len) = if first.len() == pending {
                // One piece (the usual HTTP/1 case): a plain write, and no
                // slice array to fill (a kilobyte, at every write).
                (self.socket.write(first), pending)
            } else {
                let mut slices = [io::IoSlice::new(&[]); OUTPUT_SLICES];
                let count = self.session.output_slices(&mut slices);
                let slices = &slices[..count];
                let len = slices.iter().map(|slice| slice.len()).sum();
                (self.socket.write_vectored(slices), len)
            };
            match written {
                Ok(n) => {
                    self.session.consume_output(n);
                    // Progress only for response bytes: the client's
                    // PINGs' acknowledgements are not.
                    let taken = self.session.taken();
                    if taken > self.taken_mark {
                        self.taken_mark = taken;
                        self.last_progress = now;
                    }
                    if n > 0 {
                        self.output_moved = now;
                    }
                    self.writable = n == len;
                    if self.session.output_len() == 0 {
                        return Ok(()); // the usual case: all of it in one write
                    }
                }
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    self.writable = false;
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    /// Writes what is pending without waiting for readiness (the timer's
    /// and shutdown's writes, made between events): whether the socket
    /// took it without an error (a full buffer is not one).
    fn try_write(&mut self, now: u64) -> bool {
        self.writable = true;
        self.write(now).is_ok()
    }

    /// The session is over: once its output is sent, close, or linger if
    /// the client may still be sending.
    fn settle(&mut self, flushed: bool, now: u64) -> io::Result<Verdict> {
        if !flushed {
            self.phase = Phase::Flushing;
            return Ok(Verdict::Open);
        }
        if self.session.must_reset() {
            // Neither a FIN nor lingering: the close is a reset (`Drop`).
            return Ok(Verdict::Close);
        }
        if self.client_end == ClientEnd::Reached {
            return Ok(Verdict::Close);
        }
        self.socket.shutdown(Shutdown::Write)?;
        self.phase = Phase::Lingering;
        self.last_progress = now;
        self.linger()
    }

    /// Reads and discards until the client's end of stream, at most
    /// [`LINGER_TURN_BUDGET`] bytes a turn: a client that keeps sending
    /// after our last word (an upload refused, a GOAWAY for a flood) then
    /// yields the worker to the other connections and to the timer, which
    /// closes it at the linger timeout.
    fn linger(&mut self) -> io::Result<Verdict> {
        let mut sink = [0u8; LINGER_READ];
        let mut budget = LINGER_TURN_BUDGET;
        while budget > 0 {
            match self.socket.read(&mut sink) {
                Ok(0) => return Ok(Verdict::Close),
                Ok(n) => budget = budget.saturating_sub(n),
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    return Ok(Verdict::Open);
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
        }
        // Queued for one more turn at most (`yield_turn`), however many
        // events and turns end here.
        Ok(self.yield_turn())
    }

    /// A handler method panicked during [`ready`](Self::ready): the
    /// responses before it (and `500` for the request that panicked) go
    /// out, then the connection closes as after any final response.
    pub(crate) fn after_panic(&mut self, cx: &Context, now: u64) -> Verdict {
        if !self.session.after_panic(cx) || self.phase == Phase::Lingering || !self.try_write(now) {
            return Verdict::Close;
        }
        self.settle(self.session.output().is_empty(), now).unwrap_or(Verdict::Close)
    }

    /// The server's shutdown deadline passed with this connection still
    /// open: HTTP/2 gets its final GOAWAY (best effort: one write) before
    /// the socket closes.
    pub(crate) fn last_words(&mut self, now: u64) {
        if self.session.say_goodbye() {
            self.try_write(now);
        }
    }

    /// [`Options::min_response_rate`](crate::Options::min_response_rate),
    /// judged at each tick while responses wait on the client (see
    /// `meter.rs`), paid with the bytes the socket takes (less what
    /// `Session::taken` leaves out). A balance a
    /// period ahead also lets the kernel take a slow reader's bytes a
    /// segment at a time (whenever its send buffer has room) without the
    /// silence between segments counting against it.
    fn check_rate(&mut self, now: u64, timeouts: &Timeouts, cx: &Context) -> Option<Verdict> {
        let rate = timeouts.min_rate?;
        let waiting = self.session.waiting_on_client() as u64;
        if waiting == 0 {
            self.taking = None;
            return None;
        }
        let Some(mut meter) = self.taking else {
            self.taking = Some(Meter::start(now, self.session.taken(), waiting));
            return None;
        };
        let bill = meter.bill(now, waiting, rate);
        let mut wrote = false;
        if meter.short(&bill, self.session.taken()) {
            // Edge-triggered readiness comes back only once a third of the
            // socket's send buffer has drained: a client reading at the
            // rate may have made room that no event announced. Offer it
            // bytes (as the I/O timeout does) before judging.
            wrote = self.try_write(now);
        }
        let on_time = meter.settle(bill, self.session.taken());
        self.taking = Some(meter);
        if on_time {
            // Output the timer drained: drive the connection, so what
            // waits for room goes on (no event will come).
            return (wrote && self.session.output().is_empty()).then_some(Verdict::Drive);
        }
        tracing::debug!("min_response_rate: the client took its responses too slowly; closed");
        if self.session.too_slow(cx) {
            // Best effort: one write, the socket closes either way.
            self.try_write(now);
        }
        Some(Verdict::Close)
    }

    /// [`Options::min_request_body_rate`](crate::Options::min_request_body_rate),
    /// judged at each tick while the client owes request bodies that the
    /// server would read (see `meter.rs`), paid with body bytes. Too slow:
    /// HTTP/1 answers `408` (or closes, once a response started), HTTP/2
    /// answers `408` on each stream owing a body (or resets it), then sends
    /// GOAWAY(ENHANCE_YOUR_CALM); either way the connection closes.
    fn check_body_rate(&mut self, now: u64, timeouts: &Timeouts, cx: &Context) -> Option<Verdict> {
        let rate = timeouts.min_body_rate?;
        let Some(owed) = self.session.bodies_owed(cx) else {
            self.sending = None;
            return None;
        };
        let (owed, received) = (owed as u64, self.session.body_received());
        let mut meter = match self.sending {
            // Paused: the client cannot send for now, so this time is not
            // billed (a debt stays).
            Some(mut meter) if owed == 0 => {
                meter.pause(now, received);
                self.sending = Some(meter);
                return None;
            }
            Some(meter) => meter,
            None => {
                self.sending = (owed > 0).then(|| Meter::start(now, received, owed));
                return None;
            }
        };
        let bill = meter.bill(now, owed, rate);
        let on_time = meter.settle(bill, received);
        self.sending = Some(meter);
        if on_time {
            return None;
        }
        tracing::debug!("min_request_body_rate: the client sent a request body too slowly");
        if self.session.expire_slow_bodies(cx) {
            // HTTP/2: the slow streams ended alone, the application's go
            // on; the meter starts again with what is owed now.
            self.sending = None;
            return Some(Verdict::Drive);
        }
        self.session.too_slow_sending(cx);
        if !self.try_write(now) {
            return Some(Verdict::Close);
        }
        Some(self.settle(self.session.output().is_empty(), now).unwrap_or(Verdict::Close))
    }

    /// The timer's judgement at `now`. A request that timed out gets `408`
    /// and the connection goes on to close as after any final response;
    /// a body still being read then fails with `TimedOut`.
    pub(crate) fn check(&mut self, now: u64, timeouts: &Timeouts, cx: &mut Context) -> Verdict {
        let lingering = self.phase == Phase::Lingering;
        self.session.advance_clock(now);
        let mut verdict = self.judge(now, timeouts, cx);
        if matches!(verdict, Verdict::Open | Verdict::Drive)
            && self.phase == Phase::Open
            && self.session.expire_streams(now, timeouts.io, timeouts.response, cx)
        {
            // The connection is on time, a stream of it was not (HTTP/2):
            // its answer or reset goes out now.
            verdict = Verdict::Drive;
        }
        // Closed, or sent to linger (the client's end, read later, must
        // not turn the timer's decision into another reason).
        if verdict == Verdict::Close || (!lingering && self.phase == Phase::Lingering) {
            self.session.fail_input(io::ErrorKind::TimedOut);
        }
        verdict
    }

    fn judge(&mut self, now: u64, timeouts: &Timeouts, cx: &mut Context) -> Verdict {
        if !self.session.is_idle() {
            // Busy as the timer finds it too: output the timer's own writes
            // drain (below) ends an exchange no drive saw under way.
            self.busy_at = now;
        }
        let waited = now.saturating_sub(self.last_progress);
        if self.phase == Phase::Lingering {
            return if waited >= timeouts.linger { Verdict::Close } else { Verdict::Open };
        }
        // Both meters and the deadlines at every tick: a meter a tick
        // skipped would find a longer gap at the next (a tick bills at most
        // half a grace, `meter.rs`), and a client short of the response
        // rate at each tick, yet within its grace, must not stall the
        // header timeout or the streams' clocks.
        let rate = self.check_rate(now, timeouts, cx);
        if rate == Some(Verdict::Close) {
            return Verdict::Close;
        }
        if let Some(verdict) = self.check_body_rate(now, timeouts, cx) {
            return verdict;
        }
        match self.deadlines(now, waited, timeouts, cx) {
            // The rate's own write drained the output: what waited for
            // room goes on.
            Verdict::Open => rate.unwrap_or(Verdict::Open),
            verdict => verdict,
        }
    }

    /// The deadlines of a connection on time with its rates:
    /// `header_timeout`, `io_timeout`, the drain's, `keep_alive_timeout`
    /// and `response_timeout`.
    fn deadlines(
        &mut self,
        now: u64,
        waited: u64,
        timeouts: &Timeouts,
        cx: &mut Context,
    ) -> Verdict {
        if self.head_started.is_some_and(|started| now.saturating_sub(started) >= timeouts.header) {
            // A head under way too long (HTTP/2: a field block, whatever
            // else the connection carries; the client has stalled it).
            tracing::debug!("header_timeout: a request head took too long; 408");
            return self.refuse_late(now, cx);
        }
        if !self.session.output().is_empty() {
            if now.saturating_sub(self.output_moved) < timeouts.io {
                return Verdict::Open;
            }
            // No write for the I/O timeout. The last one came back short,
            // and edge-triggered readiness returns only once a third of
            // the socket's send buffer (up to megabytes) has drained: a
            // slow but steady reader takes longer than the timeout to get
            // there. Whether it moved is whether the socket takes bytes
            // now; a client that reads nothing gets closed.
            let before = self.session.output_len();
            if !self.try_write(now) || self.session.output_len() == before {
                tracing::debug!("io_timeout: the client took none of its responses; closed");
                return Verdict::Close;
            }
            return if self.session.output().is_empty() { Verdict::Drive } else { Verdict::Open };
        }
        if cx.draining && !self.session.is_idle() && self.session.start_drain() {
            // HTTP/2 learns of the shutdown now, not at its next event.
            self.try_write(now);
        }
        if cx.draining
            && now.saturating_sub(cx.drain_began) >= FINAL_GOAWAY_AFTER_MS
            && self.session.finish_drain()
        {
            // The client never answered the shutdown's PING: it still
            // learns which of its streams may have been processed.
            self.try_write(now);
        }
        if self.session.is_idle() {
            let idle = now.saturating_sub(self.busy_at);
            if !(cx.draining || idle >= timeouts.keep_alive) {
                return Verdict::Open;
            }
            // HTTP/2 says goodbye with a GOAWAY first (best effort: one
            // write, the socket closes either way).
            if self.session.say_goodbye() {
                self.try_write(now);
            }
            return Verdict::Close;
        }
        // Who keeps the exchange going: the client, which owes bytes (the
        // I/O timeout, then 408), or only the application (the response
        // timeout, then 503 for what it has not started to answer).
        let owes = self.session.client_owes();
        let application = !owes && self.session.with_application();
        // The client's clock starts when it came to owe, if that is later
        // than its last progress: an application that reads a lent body's
        // bytes long after they came must not leave the client no time
        // for the next ones.
        if owes && self.application_held {
            self.owed_since = now;
        }
        self.application_held = application;
        let client_waited = now.saturating_sub(self.last_progress.max(self.owed_since));
        let late = if owes {
            client_waited >= timeouts.io
        } else if application {
            timeouts.response.is_some_and(|limit| waited >= limit)
        } else {
            // HTTP/2 streams open that neither side is known to hold up.
            // (Else a head under way, not yet late: judged above.)
            self.session.in_body() && client_waited >= timeouts.io
        };
        if !late {
            return Verdict::Open;
        }
        if application {
            // The application's doing, not the client's: worth a warning,
            // naming what to raise (a long poll or an event stream with
            // long gaps needs it raised or off).
            tracing::warn!(
                limit_ms = timeouts.response.unwrap_or_default(),
                "response_timeout: the application kept a request waiting; answered 503 \
                 (or cut off a response it had started)"
            );
            self.session.expire_application(cx);
            if !self.session.is_closed() {
                // HTTP/2 answered the late streams and goes on: their
                // frames go out when the connection is driven.
                return Verdict::Drive;
            }
        } else {
            if owes && self.session.defers_to_streams() {
                // HTTP/2 with streams the application holds: each stream
                // the client holds up ends at its own clock's time (read
                // after this, at the same tick), the rest go on.
                return Verdict::Open;
            }
            tracing::debug!("io_timeout: the client sent nothing it owed; 408");
            return self.refuse_late(now, cx);
        }
        if !self.try_write(now) {
            return Verdict::Close;
        }
        self.settle(self.session.output().is_empty(), now).unwrap_or(Verdict::Close)
    }

    /// The client is late: `408` (HTTP/2: GOAWAY), then the close.
    fn refuse_late(&mut self, now: u64, cx: &mut Context) -> Verdict {
        // Answered: the answer's own wait (a client that does not read
        // it) is the I/O timeout's from here.
        self.head_started = None;
        self.session.refuse(Status::REQUEST_TIMEOUT, cx);
        if !self.try_write(now) {
            return Verdict::Close;
        }
        self.settle(self.session.output().is_empty(), now).unwrap_or(Verdict::Close)
    }
}
