//! One HTTP/2 connection's protocol state, without its socket (RFC 9113):
//! bytes in through [`Connection::receive`], requests out to a
//! [`Streams`] sink, responses in through [`Connection::send_headers`] and
//! [`Connection::send_data`] (or [`Connection::send_shared`], whose
//! payloads go out in place), frames out through
//! [`Connection::output_slices`].
//!
//! # Connection states
//!
//! ```text
//!   Preface --24 bytes match--> FirstSettings --SETTINGS--> Open --GOAWAY sent--> Closed
//!      |                              |                      |
//!      +--mismatch----+   other frame-+   connection error---+--> Closed (GOAWAY with the code)
//! ```
//!
//! `shutdown` sends GOAWAY(NO_ERROR) with the last stream id seen and
//! keeps serving the streams at or below it (new ones are ignored, section
//! 6.8); the connection is done once they are.
//!
//! # Stream states (section 5.1, a server that never pushes)
//!
//! ```text
//!   idle --HEADERS--> open --END_STREAM received--> half-closed (remote) --END_STREAM sent--> closed
//!                      |  \--END_STREAM sent--> half-closed (local) --END_STREAM received--> closed
//!                      +--RST_STREAM either way, or a stream error--> closed
//! ```
//!
//! A stream lives in the map while open or half-closed. An id at or below
//! the highest the client opened that is not in the map is closed; above
//! it, idle. What a frame on each does:
//!
//! | frame | idle | open | half-closed (remote) | closed |
//! |---|---|---|---|---|
//! | HEADERS | opens (odd ids only) | trailers, END_STREAM required | stream error STREAM_CLOSED | connection error STREAM_CLOSED |
//! | DATA | connection error PROTOCOL_ERROR | delivered | stream error STREAM_CLOSED | ignored if we reset it, else stream error STREAM_CLOSED |
//! | RST_STREAM | connection error PROTOCOL_ERROR | closes | closes | ignored |
//! | WINDOW_UPDATE | connection error PROTOCOL_ERROR | send window | send window | ignored |
//! | PRIORITY | ignored | ignored | ignored | ignored |
//!
//! Every field block is decompressed, even one whose stream is refused, so
//! the HPACK tables stay in step (section 4.3). DATA on any stream counts
//! against the connection window, refused or not (section 6.9).
//!
//! # Flow control on falconet-flow
//!
//! Each stream's receive side is a [`StreamInput`]: its own window and the
//! connection's shared [`ConnectionWindow`] (falconet-flow's CAS
//! `InputWindow`), advanced per DATA frame on the worker and released by
//! whoever consumes the body (here, the sink, as soon as it returns; a body
//! lent to an application thread releases as it reads). A release past
//! half a window asks for a WINDOW_UPDATE. The
//! send side is an [`OutputWindow`] per stream and one for the connection,
//! both used by the worker alone: a DATA frame takes the smaller credit of
//! the two from both.
//!
//! # Limits against known attacks
//!
//! Every one ends the attacking connection with GOAWAY
//! (`ENHANCE_YOUR_CALM`, or the RFC's code), and only that connection:
//!
//! - **Rapid reset (CVE-2023-44487) and MadeYouReset (CVE-2025-8671):** a
//!   budget of [`Config::reset_budget`] resets, spent by each stream the
//!   client resets before its response ended and by each stream error we
//!   send, and refilled by one for each stream that completes normally
//!   and by [`Config::reset_refill_per_second`] a second (a token bucket,
//!   `budget.rs`; nghttp2's burst and rate by default).
//!   (A first flight past MAX_CONCURRENT_STREAMS, sent before the client
//!   acknowledged our SETTINGS, has one limit's worth of free refusals.)
//! - **CONTINUATION flood (CVE-2024-27316 class):** a field block may take
//!   at most [`Config::max_header_list_size`] compressed bytes, and its
//!   CONTINUATIONs as many bytes with each frame counted as at least
//!   `CONTINUATION_CHARGE` (1 KiB) past the first `FREE_CONTINUATIONS`
//!   (8): a block may be split anywhere into frames of 1 KiB or more.
//! - **PING and SETTINGS floods (CVE-2019-9512, -9515):** at most
//!   [`Config::max_queued_control`] acknowledgements wait in the output;
//!   past that the client is not reading what it asks for.
//! - **Long SETTINGS frames (CVE-2020-11080 class):** at most
//!   [`MAX_SETTINGS_PARAMS`] parameters in one frame (as nghttp2): each
//!   INITIAL_WINDOW_SIZE parameter is applied to every open stream, so a
//!   16 KiB frame of 2,730 of them cost milliseconds with 100 streams.
//! - **Empty frames (CVE-2019-9518):** at most [`Config::max_empty_frames`]
//!   empty frames (DATA without data or END_STREAM, CONTINUATION without a
//!   fragment) more than frames that do work: a request or DATA with data
//!   pays one back. (Not "in a row": 99 empty frames and one byte of DATA,
//!   repeated, would pass that.) Frames the server ignores have an
//!   allowance of 128 per stream opened (as nginx's for PRIORITY), at most
//!   2,048 banked: PRIORITY and unknown frame types; WINDOW_UPDATE and
//!   RST_STREAM on a closed stream; a SETTINGS acknowledgement after the
//!   first, a PING acknowledgement for a PING we did not send, a GOAWAY
//!   after the first; frames whose own fault is a stream error (a zero
//!   WINDOW_UPDATE, a malformed PRIORITY) on a stream we reset, which are
//!   discarded, not reset again; and, after our final GOAWAY, the
//!   HEADERS of each stream opened past it. DATA dropped on a stream we
//!   reset, ignore, or whose body the application gave up is free (its
//!   bytes cost the client as much), but after its END_STREAM more DATA is
//!   a stream error, from the reset budget.
//! - **HPACK bombs:** the decoder's header-list limit (+32 bytes per
//!   field) and field-count limit.
//! - **Stream-id exhaustion:** ids only grow; past 2^31-1 the client must
//!   open a new connection.

use std::io::IoSlice;
use std::sync::Arc;

use bytes::{Buf, BufMut, Bytes};
/// The stream receive window [`Streams::headers`] hands out and the
/// increments [`Connection::send_updates`] takes (from `falconet-flow`).
pub use falconet_flow::Updates;
use falconet_flow::{Advance, InputFlow, OutputWindow, Scope};

/// The connection's receive window, shared by every stream's
/// [`StreamInput`] and released by the application threads that read the
/// bodies: falconet-flow's CAS window. A build with
/// `RUSTFLAGS="--cfg falconet_server_flow_locked"` swaps in its
/// `parking_lot` twin instead, to measure one against the other under the
/// same load (`docs/benchmarks.md`).
#[cfg(not(falconet_server_flow_locked))]
pub type ConnectionWindow = falconet_flow::InputWindow;
/// See the CAS build's documentation.
#[cfg(falconet_server_flow_locked)]
pub type ConnectionWindow = falconet_flow::ParkingLotInputWindow;

/// A stream's receive side: its window and the connection's.
pub type StreamInput = falconet_flow::StreamInput<ConnectionWindow>;

/// A receive window (a stream's or the connection's) sends WINDOW_UPDATE
/// once more than `1/UPDATE_DIVISOR` of it is consumed and not yet
/// announced: half, as h2 does. Go's old rule was a fixed 4 KiB, a 256th of
/// our 1 MiB windows; a build with `--cfg falconet_server_update_divisor="N"`
/// (N = 4, 16 or 256) uses the other shares, for the measurement in
/// `docs/benchmarks.md` (`scripts/bench-window-update.sh`) that chose half.
#[cfg(not(any(
    falconet_server_update_divisor = "4",
    falconet_server_update_divisor = "16",
    falconet_server_update_divisor = "256"
)))]
const UPDATE_DIVISOR: u32 = 2;
#[cfg(falconet_server_update_divisor = "4")]
const UPDATE_DIVISOR: u32 = 4;
#[cfg(falconet_server_update_divisor = "16")]
const UPDATE_DIVISOR: u32 = 16;
#[cfg(falconet_server_update_divisor = "256")]
const UPDATE_DIVISOR: u32 = 256;

/// The pending bytes past which a window of `size` announces credit.
const fn update_threshold(size: u32) -> u32 {
    size / UPDATE_DIVISOR
}

use super::budget::ResetBudget;
use super::frame::{
    self, ErrorCode, ErrorScope, Frame, FrameError, FrameHeader, HEADER_LEN, PREFACE, Settings,
    setting,
};
use super::head::Head;
use super::hpack::{self, Decoder, Encoder, Field};
use super::recent::RecentIds;
use super::roomy::Roomy;
use crate::pieces::Pieces;

/// The most parameters one SETTINGS frame may carry (nghttp2's default
/// limit): RFC 9113 defines six, and a client sends each once or twice.
/// Past it: ENHANCE_YOUR_CALM.
pub const MAX_SETTINGS_PARAMS: usize = 32;

/// The limits one connection applies; each has a documented default. A
/// server takes them from [`Options::http2`](crate::Options::http2), which
/// checks each against its range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// SETTINGS_MAX_CONCURRENT_STREAMS we advertise (default 100); a stream
    /// past it is refused (REFUSED_STREAM).
    pub max_concurrent_streams: u32,
    /// SETTINGS_INITIAL_WINDOW_SIZE we advertise: each stream's receive
    /// window (default 1 MiB, as hyper).
    pub initial_window_size: u32,
    /// The connection's receive window (default 1 MiB), announced by a
    /// WINDOW_UPDATE after our SETTINGS.
    pub connection_window_size: u32,
    /// SETTINGS_MAX_FRAME_SIZE we advertise (default 16 KiB).
    pub max_frame_size: u32,
    /// SETTINGS_MAX_HEADER_LIST_SIZE we advertise and enforce (default 16
    /// KiB, as hyper; the server sets it to
    /// [`Options::max_head`](crate::Options::max_head), 32 KiB by default).
    pub max_header_list_size: u32,
    /// Fields per block (default 128).
    pub max_fields: usize,
    /// Resets the client may cause at once before the connection ends
    /// (default 1,000, nghttp2's burst; see the module docs).
    pub reset_budget: u32,
    /// Resets the budget earns back each second, up to
    /// [`reset_budget`](Self::reset_budget) (default 33, nghttp2's rate;
    /// 0: only completed streams earn them back), by the clock the caller
    /// passes to [`Connection::tick`].
    pub reset_refill_per_second: u32,
    /// Acknowledgements (PING, SETTINGS) and resets waiting in the output
    /// (default 1,000; at least 1 is used, or the client's first SETTINGS
    /// would end the connection).
    pub max_queued_control: usize,
    /// Empty DATA or CONTINUATION frames beyond the frames that do work,
    /// each of which pays one back (default 100, as h2's empty-frame
    /// limit).
    pub max_empty_frames: u32,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            max_concurrent_streams: 100,
            initial_window_size: 1 << 20,
            connection_window_size: 1 << 20,
            max_frame_size: frame::DEFAULT_MAX_FRAME_SIZE,
            max_header_list_size: 16 * 1024,
            max_fields: 128,
            reset_budget: 1000,
            reset_refill_per_second: 33,
            max_queued_control: 1000,
            max_empty_frames: 100,
        }
    }
}

/// Where the application side of a connection learns of its streams.
pub trait Streams {
    /// A request's head opened `stream`; `end_stream` says it has no body.
    /// `input` is the stream's receive window: whoever consumes the body
    /// releases it there (see [`data`](Self::data)).
    fn headers(&mut self, stream: u32, head: &Head, end_stream: bool, input: &Arc<StreamInput>);
    /// A piece of `stream`'s body; `end_stream` on the last (which may be
    /// empty: the end of the body, or trailers). Returns whether the bytes
    /// were consumed now (the connection releases them at once); `false`
    /// when the application will release them through the stream's
    /// [`StreamInput`] as it reads, and hand the WINDOW_UPDATEs to
    /// [`Connection::send_updates`].
    fn data(&mut self, stream: u32, data: &[u8], end_stream: bool) -> bool;
    /// Trailer fields ended `stream`'s body (RFC 9113 §8.1: checked, no
    /// pseudo-field); [`data`](Self::data) with `end_stream` follows at
    /// once. Ignored unless overridden.
    fn trailers(&mut self, stream: u32, head: &Head) {
        let _ = (stream, head);
    }
    /// `stream` ended early (the client reset it or broke a rule): drop
    /// whatever is under way for it.
    fn reset(&mut self, stream: u32);
    /// Send credit arrived for `stream` (0: for the connection): data that
    /// waited for it may go now.
    fn writable(&mut self, stream: u32);
}

/// A connection error we sent: why the connection ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionError {
    /// The code in our GOAWAY.
    pub code: ErrorCode,
    /// What happened, for logs.
    pub reason: &'static str,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Preface,
    FirstSettings,
    Open,
    Closed,
}

/// An open or half-closed stream.
#[derive(Debug)]
struct Stream {
    /// END_STREAM received: half-closed (remote).
    remote_closed: bool,
    /// END_STREAM sent: half-closed (local).
    local_closed: bool,
    /// The response's final (non-1xx) head was sent: DATA and trailers
    /// may follow, another head may not.
    answered: bool,
    /// The application reads the request body: a response that ends
    /// before it does not reset the stream (see [`Connection::keep_reading`]).
    reading: bool,
    input: Arc<StreamInput>,
    output: OutputWindow,
    content_length: Option<u64>,
    received: u64,
}

/// A field block being received: its HEADERS, then CONTINUATIONs.
#[derive(Clone, Copy, Debug)]
struct Block {
    stream: u32,
    end_stream: bool,
    continuations: usize,
    /// The block's CONTINUATIONs' bytes, each counted as at least
    /// [`CONTINUATION_CHARGE`].
    charged: usize,
    /// On a stream we reset: decoded for the table's sake, then dropped.
    discard: bool,
    /// The stream was open when the block began: trailers, never a new
    /// request, even if the stream ends on our side before the block does.
    trailers: bool,
    /// The last stream id before this block's: what a GOAWAY names if the
    /// connection fails before a new request's block ends (not acted on).
    last_before: u32,
}

/// The least a CONTINUATION counts against the header-list limit: an
/// 8 KiB block in 1 KiB frames is served; tiny frames are a flood ended at
/// the 17th with a 16 KiB limit (the 33rd with the server's default 32 KiB
/// head).
const CONTINUATION_CHARGE: usize = 1024;

/// CONTINUATIONs per block that are never a flood, whatever the
/// header-list limit (h2 and nghttp2 allow 5 and 8).
const FREE_CONTINUATIONS: usize = 8;

/// How many recently reset (and, apart, recently closed) stream ids are
/// remembered at least: frames still in flight for them are discarded
/// rather than answered (section 5.1). Twice `max_concurrent_streams`
/// when that is more (every open stream reset at once, the client's
/// frames for each still on the way, and as many opened meanwhile), up to
/// [`MAX_RESET_MEMORY`].
const RESET_MEMORY: usize = 32;

/// The most ids [`RESET_MEMORY`] grows to: 4 KiB for each of the two
/// memories of a connection, and a lookup (a scan, on frames for streams
/// no longer open) that stays short.
const MAX_RESET_MEMORY: usize = 1024;

/// The largest client stream id (section 5.1.1).
const MAX_STREAM_ID: u32 = (1 << 31) - 1;

/// Frames the server ignores (PRIORITY, unknown types, WINDOW_UPDATE on a
/// closed stream, ...) allowed per stream the client opens (and once for
/// the connection), as nginx allows PRIORITY frames: enough for a browser
/// that reprioritizes, none for a flood that opens nothing.
const IGNORED_PER_STREAM: u32 = 128;
/// The most such allowance a connection banks.
const IGNORED_ALLOWANCE_MAX: u32 = 16 * IGNORED_PER_STREAM;

/// The most DATA an upgrade's response (stream 1) sends before the
/// client's preface arrives: with our SETTINGS and the response's HEADERS
/// it stays under the 32 KiB that curl 7.x keeps of what follows the
/// `101` in the read that brought it ("connection buffer size is too
/// small to store data following HTTP Upgrade response header"; mod_h2
/// met the same, icing/mod_h2#144).
const BEFORE_PREFACE_DATA: usize = 16 * 1024;

/// The payload of the PING that a graceful shutdown sends after its first
/// GOAWAY.
const SHUTDOWN_PING: [u8; 8] = *b"goaway\0\0";

/// One HTTP/2 connection's protocol state; see the module docs.
#[derive(Debug)]
pub struct Connection {
    config: Config,
    phase: Phase,
    /// What we advertised.
    local: Settings,
    /// What the client asked for.
    peer: Settings,
    decoder: Decoder,
    encoder: Encoder,
    /// The connection's receive window, shared with every stream's.
    recv: Arc<ConnectionWindow>,
    /// The connection's send window.
    send: OutputWindow,
    streams: Roomy<u32, Stream>,
    /// The highest stream id the client opened.
    last_stream: u32,
    /// After our final GOAWAY: streams above this id are ignored.
    goaway: Option<u32>,
    /// A graceful shutdown began (the first GOAWAY and its PING went out).
    draining: bool,
    /// The client sent GOAWAY.
    peer_goaway: bool,
    /// The client acknowledged our SETTINGS (we send one).
    settings_acked: bool,
    /// Stream ids we reset lately: what the client sent before it saw the
    /// RST_STREAM is discarded.
    recently_reset: RecentIds,
    /// Recently completed stream ids: HEADERS on one is STREAM_CLOSED, on
    /// an unused lower id PROTOCOL_ERROR.
    recently_closed: RecentIds,
    block: Option<Block>,
    /// Field blocks ended (wrapping), for the server's header timer.
    blocks_ended: u64,
    block_bytes: Vec<u8>,
    head: Head,
    /// Receive sides of finished streams, reused by new ones.
    spare_inputs: Vec<Arc<StreamInput>>,
    /// Frames to send, but for the payloads of [`send_shared`](Self::send_shared):
    /// each of `shared` goes out after `out[..at]` (its frame header).
    out: Vec<u8>,
    sent: usize,
    shared: Pieces,
    scratch: Vec<u8>,
    budget: ResetBudget,
    /// Streams past MAX_CONCURRENT_STREAMS that may still be refused
    /// without spending the reset budget, while the client has not
    /// acknowledged our SETTINGS (its first flight may exceed a limit it
    /// has not seen yet: 6.5.2, 5.1.2). One limit's worth: a client that
    /// never acknowledges gets no free resets past it.
    free_refusals: u32,
    /// Frames the server ignores still allowed (see the module docs):
    /// [`IGNORED_PER_STREAM`] at first and for each stream opened, at most
    /// [`IGNORED_ALLOWANCE_MAX`] banked.
    ignored_allowance: u32,
    queued_control: usize,
    /// Bytes of the acknowledgements and resets the client made us send,
    /// in all (see [`answer_bytes`](Self::answer_bytes)).
    answer_bytes: u64,
    /// Bytes of the headers of DATA frames cut short by the client's
    /// credit, in all (see [`data_header_bytes`](Self::data_header_bytes)).
    data_header_bytes: u64,
    /// Data (padding left out) of the DATA frames open streams took, in
    /// all (see [`body_bytes`](Self::body_bytes)).
    body_bytes: u64,
    /// Frames that carried part of a request (see
    /// [`request_frames`](Self::request_frames)).
    request_frames: u64,
    empty_frames: u32,
    /// DATA bytes sent before the client's preface (after an upgrade).
    before_preface: usize,
    error: Option<ConnectionError>,
}

impl Connection {
    /// A connection that has received nothing yet: its SETTINGS (and the
    /// connection window's WINDOW_UPDATE) are already in the output, as
    /// section 3.4 asks of a server.
    ///
    /// # Errors
    /// [`FlowError::InitialTooLarge`](falconet_flow::FlowError::InitialTooLarge)
    /// for a window size past 2^31-1.
    pub fn new(config: Config) -> Result<Self, falconet_flow::FlowError> {
        let local = Settings {
            max_concurrent_streams: Some(config.max_concurrent_streams),
            initial_window_size: config.initial_window_size,
            max_frame_size: config
                .max_frame_size
                .clamp(frame::DEFAULT_MAX_FRAME_SIZE, frame::MAX_FRAME_LEN),
            max_header_list_size: Some(config.max_header_list_size),
            enable_push: false,
            ..Settings::INITIAL
        };
        if config.initial_window_size > frame::MAX_WINDOW_SIZE {
            return Err(falconet_flow::FlowError::InitialTooLarge {
                initial: config.initial_window_size,
            });
        }
        // The client starts the connection window at 65,535 (6.9.2) and
        // may use it before it reads our update, so ours is never smaller.
        let connection_window =
            config.connection_window_size.max(frame::DEFAULT_INITIAL_WINDOW_SIZE);
        let recv = Arc::new(<ConnectionWindow as InputFlow>::with_threshold(
            connection_window,
            update_threshold(connection_window),
        )?);
        let mut decoder = Decoder::new(hpack::DEFAULT_TABLE_SIZE);
        decoder.set_max_header_list_size(config.max_header_list_size as usize);
        decoder.set_max_fields(config.max_fields);
        let mut out = Vec::new();
        local.encode_changes(&Settings::INITIAL, &mut out);
        let extra = connection_window - frame::DEFAULT_INITIAL_WINDOW_SIZE;
        if extra > 0 {
            window_update(&mut out, 0, extra);
        }
        let reset_memory = usize::try_from(config.max_concurrent_streams)
            .unwrap_or(usize::MAX)
            .saturating_mul(2)
            .clamp(RESET_MEMORY, MAX_RESET_MEMORY);
        Ok(Self {
            config,
            phase: Phase::Preface,
            local,
            peer: Settings::INITIAL,
            decoder,
            encoder: Encoder::new(),
            recv,
            send: OutputWindow::new(frame::DEFAULT_INITIAL_WINDOW_SIZE)?,
            // Grown to the most streams the peer keeps open at once, and
            // kept (no allocation in steady state): allocated up front for
            // `max_concurrent_streams`, the map was 6.6 KiB of each idle
            // connection's 23 KiB of heap.
            streams: Roomy::default(),
            last_stream: 0,
            goaway: None,
            draining: false,
            peer_goaway: false,
            settings_acked: false,
            recently_reset: RecentIds::new(reset_memory),
            recently_closed: RecentIds::new(reset_memory),
            block: None,
            blocks_ended: 0,
            block_bytes: Vec::new(),
            head: Head::default(),
            spare_inputs: Vec::new(),
            out,
            sent: 0,
            shared: Pieces::default(),
            scratch: Vec::new(),
            budget: ResetBudget::new(config.reset_budget, config.reset_refill_per_second),
            free_refusals: config.max_concurrent_streams,
            ignored_allowance: IGNORED_PER_STREAM,
            queued_control: 0,
            answer_bytes: 0,
            data_header_bytes: 0,
            body_bytes: 0,
            request_frames: 0,
            empty_frames: 0,
            before_preface: 0,
            error: None,
        })
    }

    /// The clock: `now_ms` milliseconds on any monotonic clock the caller
    /// keeps. The reset budget earns back
    /// [`Config::reset_refill_per_second`] for each second since the first
    /// call; nothing else reads it. Call it before each batch of input
    /// (the server does, at each turn of the connection and each of its
    /// timer's ticks): resets spent between two calls earn nothing back
    /// until the second.
    pub fn tick(&mut self, now_ms: u64) {
        self.budget.refill(now_ms);
    }

    /// Reads every complete frame at the start of `input`, telling
    /// `streams` what they carry. Returns how many bytes were used; the
    /// caller keeps the rest (an incomplete frame) for the next call. After
    /// a connection error, everything is used and ignored.
    pub fn receive(&mut self, input: &[u8], streams: &mut impl Streams) -> usize {
        let mut pos = 0;
        loop {
            let rest = &input[pos..];
            match self.phase {
                Phase::Closed => return input.len(),
                Phase::Preface => {
                    let n = rest.len().min(PREFACE.len());
                    if rest[..n] != PREFACE[..n] {
                        self.fail(ErrorCode::PROTOCOL_ERROR, "not the HTTP/2 connection preface");
                        continue;
                    }
                    if n < PREFACE.len() {
                        return pos;
                    }
                    pos += PREFACE.len();
                    self.phase = Phase::FirstSettings;
                    continue;
                }
                Phase::FirstSettings | Phase::Open => {}
            }
            let Some(header_bytes) = rest.first_chunk::<HEADER_LEN>() else { return pos };
            let header = FrameHeader::parse(header_bytes);
            if let Some(reason) = self.out_of_turn(&header) {
                self.fail(ErrorCode::PROTOCOL_ERROR, reason);
                continue;
            }
            if let Err(error) = header.check_length(self.local.max_frame_size) {
                self.frame_error(error, streams);
                continue;
            }
            let end = HEADER_LEN + header.length as usize;
            let Some(payload) = rest.get(HEADER_LEN..end) else { return pos };
            pos += end;
            match Frame::parse(header, payload, self.local.max_frame_size) {
                Ok(frame) => self.frame(frame, streams),
                Err(error) => self.frame_error(error, streams),
            }
        }
    }

    /// [`receive`](Self::receive) for input that arrives in pieces (the
    /// blocks of a pipe) without putting it all together: `held` is what
    /// came before `chunk` and was not yet a whole frame. `held` is first
    /// completed from the front of `chunk` (a frame's worth at most), then
    /// the rest of `chunk` is received in place, and what is left of an
    /// incomplete frame at its end is kept in `held`. Only frames cut by a
    /// chunk's end are copied.
    pub fn receive_chunk(
        &mut self,
        held: &mut Vec<u8>,
        mut chunk: &[u8],
        streams: &mut impl Streams,
    ) {
        while !held.is_empty() && !chunk.is_empty() {
            let take = self.wants(held).min(chunk.len());
            held.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
            let used = self.receive(held, streams);
            held.drain(..used);
        }
        if held.is_empty() {
            let used = self.receive(chunk, streams);
            held.extend_from_slice(&chunk[used..]);
        }
    }

    /// How many more bytes `held` (the start of the input that
    /// [`receive`](Self::receive) left unconsumed) needs before `receive`
    /// can take it: the rest of the preface, or of the frame's header, or
    /// of the frame. At least 1 while `held` is not empty.
    pub fn wants(&self, held: &[u8]) -> usize {
        let needed = match self.phase {
            Phase::Closed => 0,
            Phase::Preface => PREFACE.len(),
            Phase::FirstSettings | Phase::Open => match held.first_chunk::<HEADER_LEN>() {
                Some(header) => HEADER_LEN + FrameHeader::parse(header).length as usize,
                None => HEADER_LEN,
            },
        };
        needed.saturating_sub(held.len()).max(usize::from(!held.is_empty()))
    }

    /// Whether a frame with this header may not come now, whatever its
    /// payload: the preface's first frame must be SETTINGS (3.4), and an
    /// open field block takes nothing but its own CONTINUATIONs (4.3,
    /// 6.10). Either is a connection PROTOCOL_ERROR, decided from the
    /// header before the frame is parsed, so that a malformed frame out of
    /// turn (a PRIORITY of 4 bytes inside a block) ends the connection
    /// too, not just its stream while the block goes on.
    fn out_of_turn(&self, header: &FrameHeader) -> Option<&'static str> {
        if self.phase == Phase::FirstSettings && header.kind != frame::kind::SETTINGS {
            return Some("the preface's first frame is not SETTINGS");
        }
        match self.block {
            Some(block)
                if header.kind != frame::kind::CONTINUATION || header.stream != block.stream =>
            {
                Some("frame inside a field block")
            }
            _ => None,
        }
    }

    /// One well-formed frame that came in turn (see
    /// [`out_of_turn`](Self::out_of_turn)).
    fn frame(&mut self, frame: Frame<'_>, streams: &mut impl Streams) {
        if self.phase == Phase::FirstSettings {
            if !matches!(frame, Frame::Settings { ack: false, .. }) {
                return self
                    .fail(ErrorCode::PROTOCOL_ERROR, "the preface's first frame is not SETTINGS");
            }
            self.phase = Phase::Open;
        }
        match frame {
            Frame::Data { stream, end_stream, data, flow_len } => {
                self.data(stream, end_stream, data, flow_len, streams)
            }
            Frame::Headers { stream, end_stream, end_headers, fragment, .. } => {
                self.headers(stream, end_stream, end_headers, fragment, streams)
            }
            Frame::Continuation { stream, end_headers, fragment } => {
                // Part of a field block kept so far (a refused one counts
                // too, until its end shows it refused: the header timeout
                // bounds a block).
                if !fragment.is_empty() && self.block.is_some_and(|block| !block.discard) {
                    self.request_frames += 1;
                }
                self.continuation(stream, end_headers, fragment, streams)
            }
            // Ignored (PRIORITY is deprecated, 5.3.2; unknown types, 5.5,
            // PRIORITY_UPDATE among them), within an allowance that each
            // stream opened raises (as nginx's): a client that
            // reprioritizes is served, a flood of them is not.
            Frame::Priority { .. } | Frame::Unknown { .. } => self.ignore_frame(),
            Frame::RstStream { stream, .. } => self.rst_stream(stream, streams),
            // From now on the client knows our limits. We send one
            // SETTINGS: another acknowledgement does nothing.
            Frame::Settings { ack: true, .. } if self.settings_acked => self.ignore_frame(),
            Frame::Settings { ack: true, .. } => {
                self.settings_acked = true;
                self.free_refusals = 0;
                self.lift_early_streams();
            }
            Frame::Settings { ack: false, params } => {
                if params.len() > MAX_SETTINGS_PARAMS {
                    return self.fail(ErrorCode::ENHANCE_YOUR_CALM, "too many SETTINGS parameters");
                }
                for (id, value) in params {
                    if let Err(error) = self.setting(id, value) {
                        return self.frame_error(error, streams);
                    }
                    if self.phase == Phase::Closed {
                        // A value the connection failed on (GOAWAY sent):
                        // neither the rest applied nor an ACK (6.5.3).
                        return;
                    }
                }
                let start = self.out.len();
                frame::encode_settings_ack(&mut self.out);
                self.control_queued(start);
            }
            Frame::Ping { ack: false, payload } => {
                let start = self.out.len();
                frame::encode_ping(&mut self.out, payload, true);
                self.control_queued(start);
            }
            Frame::Ping { ack: true, payload } => {
                if self.draining && self.goaway.is_none() && payload == SHUTDOWN_PING {
                    self.final_goaway();
                } else {
                    // An acknowledgement of a PING we did not send.
                    self.ignore_frame();
                }
            }
            // The client is leaving: the connection ends with the streams
            // it has, and our GOAWAY says so first (6.8: "SHOULD always
            // send a GOAWAY frame before closing"), naming the last stream
            // we will process, as Go's server does. A second GOAWAY (6.8
            // allows lowering the last stream id) changes nothing here.
            Frame::GoAway { .. } if self.peer_goaway => self.ignore_frame(),
            Frame::GoAway { .. } => {
                self.peer_goaway = true;
                // Draining as after our own shutdown's last step: a later
                // shutdown must not send GOAWAY(2^31-1) after this one
                // (6.8: the last stream id never increases).
                self.goodbye();
            }
            Frame::WindowUpdate { stream, increment } => {
                self.window_update(stream, increment, streams)
            }
        }
    }

    /// One SETTINGS parameter from the client, already range-checked.
    fn setting(&mut self, id: u16, value: u32) -> Result<(), FrameError> {
        let before = self.peer.initial_window_size;
        self.peer.apply(id, value)?;
        match id {
            setting::INITIAL_WINDOW_SIZE => {
                // 6.9.2: the change applies to every open stream's window.
                let delta = i64::from(value) - i64::from(before);
                let delta = i32::try_from(delta).unwrap_or(i32::MAX);
                let overflow = self
                    .streams
                    .values()
                    .any(|s| s.output.apply_initial_window_delta(delta).is_err());
                if overflow {
                    self.fail(ErrorCode::FLOW_CONTROL_ERROR, "SETTINGS took a window past 2^31-1");
                }
            }
            setting::HEADER_TABLE_SIZE => self.encoder.set_peer_table_size(value),
            _ => {}
        }
        Ok(())
    }

    fn data(
        &mut self,
        id: u32,
        end_stream: bool,
        data: &[u8],
        flow_len: u32,
        streams: &mut impl Streams,
    ) {
        let work = !data.is_empty() || end_stream;
        if !work && self.empty_frame() {
            return;
        }
        let Some(stream) = self.streams.get_mut(&id) else {
            if id > self.last_stream {
                return self.fail(ErrorCode::PROTOCOL_ERROR, "DATA on an idle stream");
            }
            // Closed: the bytes still count against the connection (6.9).
            if !self.discard(flow_len) {
                return;
            }
            if !self.recently_closed.contains(id)
                && (self.recently_reset.contains(id) || self.ignored(id))
            {
                // Sent before the client saw our RST_STREAM, or on a
                // stream opened after our GOAWAY: dropped, not reset
                // (bytes cost the client what they cost us, and a window's
                // worth of small frames may be in flight). Its end is the
                // client's last word: DATA after it is STREAM_CLOSED, so
                // that repeated empty ends are not free.
                if end_stream {
                    self.remember_closed(id);
                }
            } else {
                // Ended by the client (its END_STREAM or RST_STREAM), or
                // never reset by us: STREAM_CLOSED (5.1).
                self.stream_error(id, ErrorCode::STREAM_CLOSED, streams);
            }
            return;
        };
        if stream.remote_closed {
            if self.discard(flow_len) {
                self.stream_error(id, ErrorCode::STREAM_CLOSED, streams);
            }
            return;
        }
        match stream.input.try_advance(flow_len) {
            Ok((Advance::Accepted, update)) => {
                self.connection_update(update);
                if work {
                    // Work done (for an open stream: DATA dropped on a
                    // closed one does none) pays back one idle frame.
                    self.empty_frames = self.empty_frames.saturating_sub(1);
                    self.request_frames += 1;
                }
            }
            Ok((Advance::Aborted, update)) => {
                // The application gave the body up: dropped, as on a
                // stream we reset, but the stream is open: its end still
                // ends the request (DATA after it is STREAM_CLOSED), and
                // its bytes count toward its content-length, which its
                // trailers are checked against.
                stream.received += data.len() as u64;
                stream.remote_closed |= end_stream;
                self.connection_update(update);
                if end_stream {
                    streams.data(id, &[], true);
                    self.complete_if_closed(id);
                }
                return;
            }
            Err(error) => {
                self.connection_update(error.connection_update);
                if error.scope == Scope::Connection {
                    return self
                        .fail(ErrorCode::FLOW_CONTROL_ERROR, "DATA past the connection window");
                }
                return self.stream_error(id, ErrorCode::FLOW_CONTROL_ERROR, streams);
            }
        }
        let Some(stream) = self.streams.get_mut(&id) else { return };
        stream.received += data.len() as u64;
        self.body_bytes += data.len() as u64;
        let length_broken = stream.content_length.is_some_and(|length| {
            stream.received > length || (end_stream && stream.received != length)
        });
        if length_broken {
            // 8.1.1: the body's length differs from content-length. The
            // frame is never read: its credit goes back to the connection
            // (the stream's own is moot, it is reset).
            match stream.input.release(flow_len) {
                Ok(updates) => self.connection_update(updates.connection),
                Err(_) => return self.fail(ErrorCode::INTERNAL_ERROR, "receive window accounting"),
            }
            return self.stream_error(id, ErrorCode::PROTOCOL_ERROR, streams);
        }
        if end_stream {
            stream.remote_closed = true;
            stream.input.disable_updates();
        }
        let consumed = streams.data(id, data, end_stream);
        // Padding is never read: it goes back at once, and the data too
        // when the sink consumed it.
        let release = if consumed { flow_len } else { flow_len - data.len() as u32 };
        let Some(stream) = self.streams.get(&id) else { return };
        if release == 0 {
            return self.complete_if_closed(id);
        }
        match stream.input.release(release) {
            Ok(updates) => self.updates(id, updates),
            Err(_) => self.fail(ErrorCode::INTERNAL_ERROR, "receive window accounting"),
        }
        self.complete_if_closed(id);
    }

    /// Counts DATA on a stream that no longer takes it against the
    /// connection window and gives it straight back. False after a
    /// connection error.
    fn discard(&mut self, flow_len: u32) -> bool {
        if self.recv.try_advance(flow_len).is_err() {
            self.fail(ErrorCode::FLOW_CONTROL_ERROR, "DATA past the connection window");
            return false;
        }
        match self.recv.release(flow_len) {
            Ok(falconet_flow::Release::Update(n)) => {
                // An answer to the client's own frames, as an
                // acknowledgement is: not a response it takes.
                let start = self.out.len();
                window_update(&mut self.out, 0, n);
                self.answer_bytes += (self.out.len() - start) as u64;
            }
            Ok(_) => {}
            Err(_) => {
                self.fail(ErrorCode::INTERNAL_ERROR, "receive window accounting");
                return false;
            }
        }
        true
    }

    fn headers(
        &mut self,
        id: u32,
        end_stream: bool,
        end_headers: bool,
        fragment: &[u8],
        streams: &mut impl Streams,
    ) {
        if id.is_multiple_of(2) {
            return self.fail(ErrorCode::PROTOCOL_ERROR, "HEADERS on an even stream id");
        }
        let mut discard = false;
        if id <= self.last_stream && !self.streams.contains_key(&id) && !self.ignored(id) {
            if self.recently_closed.contains(id) {
                // A stream the client ended (its END_STREAM or its
                // RST_STREAM): STREAM_CLOSED (5.1).
                return self.fail(ErrorCode::STREAM_CLOSED, "HEADERS on a closed stream");
            } else if self.recently_reset.contains(id) {
                // 5.1: a stream we reset may still receive what the client
                // sent before it saw our RST_STREAM: its trailers, decoded
                // (the table must stay in step), then dropped. With
                // END_STREAM they close the stream for good, so each reset
                // (bounded by the reset budget) brings at most one; without
                // it they are never trailers and count as frames that do
                // no work.
                if !end_stream && self.empty_frame() {
                    return;
                }
                discard = true;
            } else {
                // An id below the last one that was never used (5.1.1).
                return self.fail(ErrorCode::PROTOCOL_ERROR, "stream id below the last one");
            }
        }
        let last_before = self.last_stream;
        self.last_stream = self.last_stream.max(id);
        let trailers = self.streams.contains_key(&id);
        self.block = Some(Block {
            stream: id,
            end_stream,
            continuations: 0,
            charged: 0,
            discard,
            trailers,
            last_before,
        });
        self.block_bytes.clear();
        self.block_bytes.extend_from_slice(fragment);
        if end_headers {
            self.end_block(streams);
        }
    }

    fn continuation(
        &mut self,
        id: u32,
        end_headers: bool,
        fragment: &[u8],
        streams: &mut impl Streams,
    ) {
        let Some(block) = &mut self.block else {
            return self.fail(ErrorCode::PROTOCOL_ERROR, "CONTINUATION without HEADERS");
        };
        debug_assert_eq!(block.stream, id);
        // A block may be split anywhere (6.10), so the limit is on bytes:
        // the block's, and its CONTINUATIONs' with each frame counted as
        // at least `CONTINUATION_CHARGE`, so that a flood of tiny frames
        // ends as soon as one of big ones would. The first few frames
        // are free of the charge, for a small header-list limit.
        block.continuations += 1;
        block.charged += fragment.len().max(CONTINUATION_CHARGE);
        let list = self.config.max_header_list_size as usize;
        if self.block_bytes.len() + fragment.len() > list {
            // More compressed bytes than the limit allows buffered, and a
            // refused block must still be decoded whole to keep the table
            // in step: the connection ends (RFC 9113 10.5.1 allows it; see
            // docs/rfc9113.md, CONTINUATION flood).
            return self
                .fail(ErrorCode::ENHANCE_YOUR_CALM, "field block past the header-list limit");
        }
        if block.continuations > FREE_CONTINUATIONS && block.charged > list {
            return self.fail(ErrorCode::ENHANCE_YOUR_CALM, "CONTINUATION flood");
        }
        if fragment.is_empty() && !end_headers && self.empty_frame() {
            return;
        }
        self.block_bytes.extend_from_slice(fragment);
        if end_headers {
            self.end_block(streams);
        }
    }

    /// A field block is complete: decode it (always: 4.3), then open the
    /// stream, deliver trailers, or refuse.
    fn end_block(&mut self, streams: &mut impl Streams) {
        let Some(Block { stream: id, end_stream, mut discard, trailers, .. }) = self.block.take()
        else {
            return;
        };
        self.blocks_ended = self.blocks_ended.wrapping_add(1);
        // Trailers whose stream we ended while they arrived (the response
        // finished and reset the rest of the request, or the application
        // gave up): dropped, as on a stream reset before them. Never a new
        // request on the used id (5.1.1).
        discard |= trailers && !self.streams.contains_key(&id);
        self.head.clear();
        let head = &mut self.head;
        let decoded = self.decoder.decode(&self.block_bytes, |field| head.add(field));
        if let Err(error) = &decoded
            && error.is_connection_error()
        {
            return self.fail(ErrorCode::COMPRESSION_ERROR, "field block does not decode");
        }
        if discard {
            if end_stream {
                // The client's last word on it: HEADERS after this is a
                // closed stream's (`headers` looks at the closed first).
                self.remember_closed(id);
            }
            return;
        }
        if self.ignored(id) {
            // 6.8: after our final GOAWAY, new streams are ignored (never
            // an open stream's: those are at or below the GOAWAY's id),
            // from the allowance of frames the server ignores: work the
            // server does not do pays back no empty frame.
            return self.ignore_frame();
        }
        self.empty_frames = self.empty_frames.saturating_sub(1);
        if decoded.is_err() {
            // Over the header-list or field limit: the table is in step.
            if self.streams.contains_key(&id) {
                return self.stream_error(id, ErrorCode::PROTOCOL_ERROR, streams);
            }
            // A new request: opened with what fit, marked, so that it can be
            // answered `431` (RFC 9113 10.5.1) rather than only reset.
            self.head.mark_oversized();
        }
        if let Some(stream) = self.streams.get_mut(&id) {
            // Trailers: the body's end (8.1), no pseudo-fields.
            if stream.remote_closed {
                return self.stream_error(id, ErrorCode::STREAM_CLOSED, streams);
            }
            let valid = end_stream
                && self.head.finish_trailers().is_ok()
                && stream.content_length.is_none_or(|length| length == stream.received);
            if !valid {
                return self.stream_error(id, ErrorCode::PROTOCOL_ERROR, streams);
            }
            stream.remote_closed = true;
            stream.input.disable_updates();
            self.request_frames += 1;
            streams.trailers(id, &self.head);
            streams.data(id, &[], true);
            return self.complete_if_closed(id);
        }
        if self.streams.len() >= self.config.max_concurrent_streams as usize {
            if self.free_refusals > 0 {
                self.free_refusals -= 1;
                return self.send_reset(id, ErrorCode::REFUSED_STREAM);
            }
            return self.refuse(id, ErrorCode::REFUSED_STREAM);
        }
        if self.head.finish().is_err()
            || (end_stream && self.head.content_length().is_some_and(|length| length != 0))
        {
            return self.refuse(id, ErrorCode::PROTOCOL_ERROR);
        }
        self.open(id, end_stream, streams);
    }

    /// Opens stream `id` for the request in `self.head` (checked).
    fn open(&mut self, id: u32, end_stream: bool, streams: &mut impl Streams) {
        let input = match self.stream_input() {
            Ok(input) => input,
            Err(_) => return self.fail(ErrorCode::INTERNAL_ERROR, "stream window"),
        };
        let output = match OutputWindow::new(self.peer.initial_window_size) {
            Ok(output) => output,
            Err(_) => return self.fail(ErrorCode::INTERNAL_ERROR, "stream window"),
        };
        if end_stream {
            input.disable_updates();
        }
        let stream = Stream {
            remote_closed: end_stream,
            local_closed: false,
            answered: false,
            reading: false,
            input,
            output,
            content_length: self.head.content_length(),
            received: 0,
        };
        let input = Arc::clone(&stream.input);
        self.streams.insert(id, stream);
        self.request_frames += 1;
        self.ignored_allowance =
            (self.ignored_allowance + IGNORED_PER_STREAM).min(IGNORED_ALLOWANCE_MAX);
        streams.headers(id, &self.head, end_stream, &input);
    }

    /// A fresh receive side for a new stream: a finished stream's, when no
    /// handle to it is left (no allocation), or a new one.
    fn stream_input(&mut self) -> Result<Arc<StreamInput>, falconet_flow::FlowError> {
        let ours = self.local.initial_window_size;
        let initial = self.stream_initial();
        // Credit goes back at our window's share even while the stream's
        // window is the default's: a client that applied our smaller one
        // (and has not acknowledged it yet) is not left waiting.
        let threshold = update_threshold(ours);
        while let Some(mut input) = self.spare_inputs.pop() {
            if let Some(reusable) = Arc::get_mut(&mut input) {
                // Bytes the finished stream received and nobody consumed
                // (none where its reader aborted it) go back.
                let update = reusable.reset_with_threshold(initial, threshold)?;
                self.connection_update(update);
                return Ok(input);
            }
        }
        Ok(Arc::new(StreamInput::with_threshold(Arc::clone(&self.recv), initial, threshold)?))
    }

    /// The receive window a new stream starts with: our
    /// SETTINGS_INITIAL_WINDOW_SIZE once the client acknowledged it; before
    /// that never less than the default 65,535, which the client may still
    /// be using (6.9.3: a receiver "MUST be prepared to receive data that
    /// exceeds this window size, since the sender might send data that
    /// exceeds the lower limit prior to processing the SETTINGS frame").
    fn stream_initial(&self) -> u32 {
        let ours = self.local.initial_window_size;
        if self.settings_acked { ours } else { ours.max(frame::DEFAULT_INITIAL_WINDOW_SIZE) }
    }

    /// The client acknowledged a SETTINGS_INITIAL_WINDOW_SIZE below the
    /// default: streams opened before, whose windows are 65,535 here, are
    /// now smaller by the difference on the client's side (it applied our
    /// delta to them, 6.9.2, or opened them at our value once it had
    /// processed our SETTINGS). One WINDOW_UPDATE of the difference for
    /// each stream still sending puts the client's window back at ours,
    /// in either case: 65,535 less what it sent, plus what we gave back.
    fn lift_early_streams(&mut self) {
        let lift =
            frame::DEFAULT_INITIAL_WINDOW_SIZE.saturating_sub(self.local.initial_window_size);
        if lift == 0 {
            return;
        }
        for (&id, stream) in &self.streams {
            if !stream.remote_closed {
                window_update(&mut self.out, id, lift);
            }
        }
    }

    /// Keeps a finished stream's receive side for the next stream: as many
    /// as the peer may keep open, so a connection never allocates one per
    /// stream in steady state (with a fixed 16 kept, every stream past the
    /// 16th of a batch cost its allocations again). There are never more
    /// than the most streams that were open at once.
    ///
    /// A receive side nobody else holds (no body reader, no offer of one)
    /// is aborted first: whatever it received and nobody released, nobody
    /// can release any more, so it goes back to the connection now rather
    /// than when the spare is reused (for good, if it never is). Where the
    /// application still holds it, its reader releases as it reads and
    /// aborts when dropped.
    fn retire(&mut self, mut stream: Stream) {
        if Arc::get_mut(&mut stream.input).is_some() {
            let update = stream.input.abort().ok().flatten();
            self.connection_update(update);
        }
        let keep = usize::try_from(self.config.max_concurrent_streams).unwrap_or(usize::MAX);
        if self.spare_inputs.len() < keep {
            self.spare_inputs.push(stream.input);
        }
    }

    fn rst_stream(&mut self, id: u32, streams: &mut impl Streams) {
        let Some(stream) = self.streams.remove(&id) else {
            if id > self.last_stream {
                self.fail(ErrorCode::PROTOCOL_ERROR, "RST_STREAM on an idle stream");
            } else {
                // Closed already (a reset that crossed our END_STREAM or
                // our own RST_STREAM): nothing to do.
                self.ignore_frame();
            }
            return;
        };
        // Closed by the client's reset: HEADERS on it now is STREAM_CLOSED
        // (5.1), not an unused id.
        self.remember_closed(id);
        let update = stream.input.abort().ok().flatten();
        self.connection_update(update);
        streams.reset(id);
        if !stream.local_closed {
            // Reset before its response ended: the rapid-reset pattern.
            self.spend_budget();
        }
    }

    fn window_update(&mut self, id: u32, increment: u32, streams: &mut impl Streams) {
        if id == 0 {
            if self.send.increase(increment).is_err() {
                return self.fail(ErrorCode::FLOW_CONTROL_ERROR, "connection window past 2^31-1");
            }
            return streams.writable(0);
        }
        let Some(stream) = self.streams.get(&id) else {
            if id > self.last_stream {
                self.fail(ErrorCode::PROTOCOL_ERROR, "WINDOW_UPDATE on an idle stream");
            } else {
                // Closed: credit for a response that has ended.
                self.ignore_frame();
            }
            return;
        };
        if stream.output.increase(increment).is_err() {
            return self.stream_error(id, ErrorCode::FLOW_CONTROL_ERROR, streams);
        }
        streams.writable(id);
    }

    /// A frame broke a rule: a connection or a stream error.
    fn frame_error(&mut self, error: FrameError, streams: &mut impl Streams) {
        match error.scope() {
            ErrorScope::Connection => self.fail(error.code(), "malformed frame"),
            // No RST_STREAM may go on an idle stream (6.4), and an
            // endpoint that gets one must treat it as a connection error
            // (5.1): a stream error there (a PRIORITY that depends on its
            // own stream, 5.3.1, or is not 5 bytes long, 6.3; a zero
            // WINDOW_UPDATE, 6.9) becomes a connection error with its code.
            ErrorScope::Stream(id) if id > self.last_stream => {
                self.fail(error.code(), "a malformed frame on an idle stream")
            }
            ErrorScope::Stream(id) => {
                if self.streams.contains_key(&id) {
                    self.stream_error(id, error.code(), streams);
                } else if self.recently_reset.contains(id) {
                    // 5.1: what the client sent before it saw our
                    // RST_STREAM is discarded, not reset again (5.4.2: one
                    // RST_STREAM per stream), from the allowance of frames
                    // the server ignores.
                    self.ignore_frame();
                } else {
                    self.refuse(id, error.code());
                }
            }
        }
    }

    /// Ends stream `id` with RST_STREAM(`code`): the sink drops it, its
    /// unread bytes return to the connection window.
    fn stream_error(&mut self, id: u32, code: ErrorCode, streams: &mut impl Streams) {
        if let Some(stream) = self.streams.remove(&id) {
            let update = stream.input.abort().ok().flatten();
            self.connection_update(update);
            streams.reset(id);
        }
        self.refuse(id, code);
    }

    /// Sends RST_STREAM(`code`) for a stream not (or no longer) in the
    /// map, spending the reset budget.
    fn refuse(&mut self, id: u32, code: ErrorCode) {
        if self.phase != Phase::Closed {
            self.send_reset(id, code);
            self.spend_budget();
        }
    }

    /// Sends RST_STREAM(`code`) for a stream not (or no longer) in the
    /// map.
    fn send_reset(&mut self, id: u32, code: ErrorCode) {
        if self.phase == Phase::Closed {
            return;
        }
        let start = self.out.len();
        frame::encode_rst_stream(&mut self.out, id, code);
        self.remember_reset(id);
        self.control_queued(start);
    }

    /// DATA the client sent before it saw our RST_STREAM is ignored.
    fn remember_reset(&mut self, id: u32) {
        self.recently_reset.remember(id);
    }

    fn spend_budget(&mut self) {
        if !self.budget.spend() {
            self.fail(ErrorCode::ENHANCE_YOUR_CALM, "too many resets");
        }
    }

    /// Spends one of the allowance of frames the server ignores; past it,
    /// the connection fails.
    fn ignore_frame(&mut self) {
        if self.ignored_allowance == 0 {
            return self.fail(ErrorCode::ENHANCE_YOUR_CALM, "ignored frame flood");
        }
        self.ignored_allowance -= 1;
    }

    /// Counts a frame that does no work; true (and the connection
    /// failed) past the limit.
    fn empty_frame(&mut self) -> bool {
        self.empty_frames += 1;
        if self.empty_frames > self.config.max_empty_frames {
            self.fail(ErrorCode::ENHANCE_YOUR_CALM, "empty frame flood");
            return true;
        }
        false
    }

    /// An acknowledgement or reset the client made us send was queued, from
    /// `start` in the output.
    fn control_queued(&mut self, start: usize) {
        self.answer_bytes += (self.out.len() - start) as u64;
        self.queued_control += 1;
        if self.queued_control > self.config.max_queued_control.max(1) {
            self.fail(ErrorCode::ENHANCE_YOUR_CALM, "control frame flood");
        }
    }

    fn connection_update(&mut self, update: Option<u32>) {
        if let Some(n) = update {
            window_update(&mut self.out, 0, n);
        }
    }

    fn updates(&mut self, id: u32, updates: Updates) {
        if let Some(n) = updates.stream {
            window_update(&mut self.out, id, n);
        }
        self.connection_update(updates.connection);
    }

    /// Our side of stream `id` ended (END_STREAM sent). If the client is
    /// still sending its request, RST_STREAM(NO_ERROR) asks it to stop
    /// (RFC 9113 8.1): the response is complete, the rest of the body
    /// would be read for nothing. Then the stream is done. Unless the
    /// application still reads the body ([`keep_reading`](Self::keep_reading)):
    /// then the response did not end the exchange, and the stream stays
    /// half-closed (local) until the body's end or a [`reset`](Self::reset).
    fn local_end(&mut self, id: u32) {
        let Some(stream) = self.streams.get_mut(&id) else { return };
        stream.local_closed = true;
        if !stream.remote_closed && !stream.reading {
            if let Some(stream) = self.streams.remove(&id) {
                let update = stream.input.abort().ok().flatten();
                self.connection_update(update);
            }
            frame::encode_rst_stream(&mut self.out, id, ErrorCode::NO_ERROR);
            self.remember_reset(id);
            self.budget.earn();
            return;
        }
        self.complete_if_closed(id);
    }

    /// Removes stream `id` once both sides ended, refilling the reset
    /// budget by one.
    fn complete_if_closed(&mut self, id: u32) {
        if self.streams.get(&id).is_some_and(|s| s.remote_closed && s.local_closed) {
            if let Some(stream) = self.streams.remove(&id) {
                self.retire(stream);
            }
            self.remember_closed(id);
            self.budget.earn();
        }
    }

    /// Stream `id` lived and closed: a later HEADERS on it is STREAM_CLOSED.
    fn remember_closed(&mut self, id: u32) {
        self.recently_closed.remember(id);
    }

    /// A connection error: GOAWAY with `code`, and nothing more is read.
    fn fail(&mut self, code: ErrorCode, reason: &'static str) {
        if self.phase == Phase::Closed {
            return;
        }
        // A new request whose block has not ended was not acted on: the
        // GOAWAY does not name it, so the client may retry it (6.8).
        if let Some(block) = &self.block
            && block.stream == self.last_stream
            && !block.trailers
        {
            self.last_stream = block.last_before;
        }
        let last = self.goaway_id();
        frame::encode_goaway(&mut self.out, last, code, reason.as_bytes());
        self.phase = Phase::Closed;
        self.error = Some(ConnectionError { code, reason });
        self.block = None;
    }

    /// Sends a response's head on `stream`: `:status`, then `fields`
    /// (lowercase names). With `end_stream`, the response has no body.
    /// Informational heads (1xx) may come first, any number of them, never
    /// with `end_stream` (RFC 9113 8.1). Does nothing for a stream that is
    /// gone (reset).
    ///
    /// Misuse resets the stream with RST_STREAM(INTERNAL_ERROR), so that
    /// the client sees the server's fault, never a malformed response: a
    /// second final head, or a 1xx with `end_stream`. A status that is
    /// not one (outside 100-999, or 101, which HTTP/2 forbids: 8.6) is
    /// sent as 500.
    pub fn send_headers<'f>(
        &mut self,
        id: u32,
        status: u16,
        fields: impl IntoIterator<Item = Field<'f>>,
        end_stream: bool,
    ) {
        let Some(stream) = self.streams.get_mut(&id) else { return };
        if stream.local_closed || self.phase == Phase::Closed {
            return;
        }
        // Not a status (RFC 9110 15: three digits, 1xx to 5xx in use): the
        // answer is the server's fault, 500, never another code by accident.
        let status = if (100..=999).contains(&status) && status != 101 { status } else { 500 };
        let informational = status < 200;
        if stream.answered || (informational && end_stream) {
            return self.reset(id, ErrorCode::INTERNAL_ERROR);
        }
        stream.answered = !informational;
        let mut digits = [0u8; 3];
        digits[0] = b'0' + (status / 100) as u8;
        digits[1] = b'0' + (status / 10 % 10) as u8;
        digits[2] = b'0' + (status % 10) as u8;
        self.scratch.clear();
        let status_field = Field::new(b":status", &digits);
        // Each field re-borrowed for as long as `digits` lives.
        let fields = fields.into_iter().map(|field| Field { ..field });
        self.encoder.encode(core::iter::once(status_field).chain(fields), &mut self.scratch);
        frame::encode_headers(
            &mut self.out,
            id,
            &self.scratch,
            end_stream,
            self.peer.max_frame_size,
        );
        if end_stream {
            self.local_end(id);
        }
    }

    /// Sends trailer fields on stream `id` (RFC 9113 §8.1): a HEADERS
    /// frame (with CONTINUATIONs past the client's frame size) with
    /// END_STREAM, after the response's last DATA, which must not have
    /// carried END_STREAM. The fields must not be pseudo-fields; the
    /// caller leaves out connection-specific ones (8.2.2). Before the
    /// response's final head ([`send_headers`](Self::send_headers)) this
    /// is misuse: the stream is reset with RST_STREAM(INTERNAL_ERROR)
    /// instead of sending a head without `:status`.
    pub fn send_trailers<'f>(&mut self, id: u32, fields: impl IntoIterator<Item = Field<'f>>) {
        let Some(stream) = self.streams.get_mut(&id) else { return };
        if stream.local_closed || self.phase == Phase::Closed {
            return;
        }
        if !stream.answered {
            return self.reset(id, ErrorCode::INTERNAL_ERROR);
        }
        self.scratch.clear();
        self.encoder.encode(fields, &mut self.scratch);
        frame::encode_headers(&mut self.out, id, &self.scratch, true, self.peer.max_frame_size);
        self.local_end(id);
    }

    /// Sends as much of `data` on `stream` as both send windows allow, in
    /// frames of at most the client's SETTINGS_MAX_FRAME_SIZE, and returns
    /// how much that was; END_STREAM goes on the last frame once all of
    /// `data` is sent. The rest waits for [`Streams::writable`]. A stream
    /// that is gone takes everything (and sends nothing). The payload is
    /// copied into the output. Before the response's final head
    /// ([`send_headers`](Self::send_headers)) this is misuse: the stream is
    /// reset with RST_STREAM(INTERNAL_ERROR) and takes everything.
    pub fn send_data(&mut self, id: u32, data: &[u8], end_stream: bool) -> usize {
        self.frame_data(id, data.len(), end_stream, |out, _, range| out.put_slice(&data[range]))
    }

    /// [`send_data`](Self::send_data) without the copy: the frames'
    /// payloads are slices of `data` (reference-counted, or static), sent
    /// in place by one vectored write with the frame headers around them
    /// ([`output_slices`](Self::output_slices)). What was sent is taken
    /// off the front of `data`.
    pub fn send_shared(&mut self, id: u32, data: &mut Bytes, end_stream: bool) -> usize {
        let n = self.frame_data(id, data.len(), end_stream, |out, shared, range| {
            shared.push(out.len(), data.slice(range));
        });
        data.advance(n);
        n
    }

    /// The framing of both `send_` calls: takes the credit for up to `len`
    /// bytes and writes the frame headers, each followed by
    /// `payload(out, shared, range)` for its part of the data (not called
    /// for an empty frame).
    fn frame_data(
        &mut self,
        id: u32,
        len: usize,
        end_stream: bool,
        mut payload: impl FnMut(&mut Vec<u8>, &mut Pieces, std::ops::Range<usize>),
    ) -> usize {
        let Some(stream) = self.streams.get_mut(&id) else { return len };
        if stream.local_closed || self.phase == Phase::Closed {
            return len;
        }
        if !stream.answered {
            // DATA before the head is no response: misuse (see send_data).
            self.reset(id, ErrorCode::INTERNAL_ERROR);
            return len;
        }
        let mut credit = stream.output.available().min(self.send.available()).max(0) as usize;
        if self.phase == Phase::Preface {
            // An upgrade's response, before the client's preface shows it
            // has switched: a first flight that fits what curl 7.x keeps
            // of the bytes after the `101` (32 KiB, or it fails the
            // transfer); the rest follows the preface, a round trip later.
            credit = credit.min(BEFORE_PREFACE_DATA.saturating_sub(self.before_preface));
        }
        let n = len.min(credit);
        if self.phase == Phase::Preface {
            self.before_preface += n;
        }
        let finish = end_stream && n == len;
        if n == 0 && !finish {
            // No credit: nothing to frame (and no window to touch).
            return 0;
        }
        let max_frame = self.peer.max_frame_size as usize;
        let mut sent = 0;
        // Both windows grant `n` in full: the worker alone uses them.
        let granted = (
            stream.output.try_reserve(n as u32).unwrap_or(0),
            self.send.try_reserve(n as u32).unwrap_or(0),
        );
        debug_assert_eq!(granted, (n as u32, n as u32));
        loop {
            let len = (n - sent).min(max_frame);
            let last = sent + len == n;
            if len == 0 && !(last && finish) {
                break;
            }
            // `len` is at most the client's SETTINGS_MAX_FRAME_SIZE, which
            // SETTINGS checking kept at most MAX_FRAME_LEN.
            let Ok(header) = frame::data_header(id, len as u32, last && finish) else {
                debug_assert!(false, "a DATA frame of {len} bytes");
                break;
            };
            self.out.put_slice(&header);
            if last && 0 < len && len < max_frame && n == credit {
                // Cut short by the client's credit, not by the data: its
                // framing is the client's doing (a byte of credit at a
                // time), not a response it takes.
                self.data_header_bytes += header.len() as u64;
            }
            if len > 0 {
                payload(&mut self.out, &mut self.shared, sent..sent + len);
            }
            sent += len;
            if last {
                break;
            }
        }
        if finish {
            self.local_end(id);
        }
        n
    }

    /// Takes over a connection upgraded from HTTP/1.1 (`Upgrade: h2c`,
    /// RFC 7540 3.2): `prefix` (the `101 Switching Protocols` response)
    /// goes out before our SETTINGS, `settings` (the decoded
    /// `HTTP2-Settings` payload) applies as the client's first SETTINGS
    /// (no acknowledgement: RFC 7540 3.2.1), and the request that asked
    /// for the upgrade becomes stream 1, half-closed (remote). The client's
    /// preface follows.
    ///
    /// # Errors
    /// A [`FrameError`] when `settings` is not a valid SETTINGS payload;
    /// nothing was changed then.
    pub fn upgrade(
        &mut self,
        prefix: &[u8],
        settings: &[u8],
        head: Head,
        streams: &mut impl Streams,
    ) -> Result<(), FrameError> {
        let header = FrameHeader {
            length: u32::try_from(settings.len()).unwrap_or(u32::MAX),
            kind: frame::kind::SETTINGS,
            flags: 0,
            stream: 0,
        };
        let Frame::Settings { params, .. } = Frame::parse(header, settings, frame::MAX_FRAME_LEN)?
        else {
            unreachable!("a SETTINGS header parses as SETTINGS")
        };
        for (id, value) in params {
            self.setting(id, value)?;
        }
        debug_assert!(self.shared.is_empty(), "an upgrade comes before any DATA");
        self.out.splice(0..0, prefix.iter().copied());
        self.head = head;
        self.last_stream = 1;
        self.open(1, true, streams);
        Ok(())
    }

    /// Sends the WINDOW_UPDATEs an application's release asked for
    /// (see [`Streams::data`]); a stream update for a stream that is gone
    /// is dropped, the connection's always goes.
    pub fn send_updates(&mut self, id: u32, updates: Updates) {
        if self.phase == Phase::Closed {
            return;
        }
        if let Some(n) = updates.stream
            && self.streams.contains_key(&id)
        {
            window_update(&mut self.out, id, n);
        }
        self.connection_update(updates.connection);
    }

    /// The application took stream `id`'s request body and reads it: an
    /// end of the response before the body's does not reset the stream
    /// (the client goes on sending; the body is the application's to read).
    pub fn keep_reading(&mut self, id: u32) {
        if let Some(stream) = self.streams.get_mut(&id) {
            stream.reading = true;
        }
    }

    /// Whether stream `id` is open and its body's reader still wants it:
    /// false once the reader gave it up (dropped it, or its read failed:
    /// its input is aborted, which the reader's wake finds, before its
    /// pipe handle is gone), and for a stream no longer open.
    pub fn body_wanted(&self, id: u32) -> bool {
        self.streams.get(&id).is_some_and(|stream| !stream.input.stream().state().aborted)
    }

    /// Ends `stream` from our side with RST_STREAM(`code`) (the
    /// application gave up: CANCEL, INTERNAL_ERROR; or dropped a body it
    /// was reading after the response ended: NO_ERROR).
    pub fn reset(&mut self, id: u32, code: ErrorCode) {
        if let Some(stream) = self.streams.remove(&id) {
            let update = stream.input.abort().ok().flatten();
            self.connection_update(update);
            if self.phase != Phase::Closed {
                frame::encode_rst_stream(&mut self.out, id, code);
                self.remember_reset(id);
            }
        }
    }

    /// Graceful shutdown in two steps (RFC 9113 6.8): a GOAWAY naming
    /// 2^31-1 and a PING tell the client to open no more streams; the
    /// PING's acknowledgement, a round trip later, means every stream it
    /// opened before it saw the GOAWAY has arrived, and the final GOAWAY
    /// names the last of them. Those streams finish; newer ones are ignored.
    pub fn shutdown(&mut self) {
        if self.draining || self.phase == Phase::Closed {
            return;
        }
        self.draining = true;
        frame::encode_goaway(&mut self.out, MAX_STREAM_ID, ErrorCode::NO_ERROR, b"");
        frame::encode_ping(&mut self.out, SHUTDOWN_PING, false);
    }

    /// The connection is closing while idle (keep-alive timeout, or the
    /// server stopping): the final GOAWAY at once, without the round trip.
    pub fn goodbye(&mut self) {
        self.draining = true;
        self.final_goaway();
    }

    /// A graceful shutdown whose PING has not come back in time (a client
    /// that does not answer PINGs, or a long round trip): the final GOAWAY
    /// now, naming the last stream seen, so the client learns which
    /// streams may have been processed. Returns whether it queued one.
    pub fn finish_shutdown(&mut self) -> bool {
        if !self.draining || self.goaway.is_some() || self.phase == Phase::Closed {
            return false;
        }
        self.final_goaway();
        true
    }

    /// The last stream id a GOAWAY names: the last seen, but never more
    /// than a final GOAWAY already named (6.8: the id must not increase;
    /// streams opened after it are ignored, not processed).
    fn goaway_id(&self) -> u32 {
        self.goaway.map_or(self.last_stream, |last| last.min(self.last_stream))
    }

    /// Whether `id` is a stream the client opened after our final GOAWAY:
    /// its frames are ignored (6.8), DATA still counted against the
    /// connection's window.
    fn ignored(&self, id: u32) -> bool {
        self.goaway.is_some_and(|last| id > last)
    }

    /// The shutdown PING came back: the final GOAWAY.
    fn final_goaway(&mut self) {
        if self.goaway.is_none() && self.phase != Phase::Closed {
            frame::encode_goaway(&mut self.out, self.last_stream, ErrorCode::NO_ERROR, b"");
            self.goaway = Some(self.last_stream);
        }
    }

    /// Ends the connection now with GOAWAY(`code`) (a timeout, a server
    /// that must close): nothing more is read.
    pub fn abort(&mut self, code: ErrorCode) {
        self.fail(code, "closed by the server");
    }

    /// Whether the connection is over: a connection error was sent, or a
    /// shutdown's streams have all ended. It closes once its output is
    /// sent.
    pub fn is_closed(&self) -> bool {
        self.phase == Phase::Closed
            || ((self.goaway.is_some() || self.peer_goaway) && self.streams.is_empty())
    }

    /// The connection error we sent, if any.
    pub fn error(&self) -> Option<ConnectionError> {
        self.error
    }

    /// The first piece of the frames not yet sent (frames, or a shared
    /// payload); empty when nothing waits.
    pub fn output(&self) -> &[u8] {
        match self.shared.front() {
            Some((at, data)) if *at == self.sent => data,
            Some((at, _)) => &self.out[self.sent..*at],
            None => &self.out[self.sent..],
        }
    }

    /// Every piece of the output, in order, as far as `slices` holds them,
    /// for one vectored write; returns how many it filled.
    pub fn output_slices<'a>(&'a self, slices: &mut [IoSlice<'a>]) -> usize {
        let mut count = 0;
        let mut from = self.sent;
        for (at, data) in self.shared.iter() {
            if *at > from {
                if count == slices.len() {
                    return count;
                }
                slices[count] = IoSlice::new(&self.out[from..*at]);
                count += 1;
            }
            if count == slices.len() {
                return count;
            }
            slices[count] = IoSlice::new(data);
            count += 1;
            from = *at;
        }
        if from < self.out.len() && count < slices.len() {
            slices[count] = IoSlice::new(&self.out[from..]);
            count += 1;
        }
        count
    }

    /// How many bytes wait to be sent, in every piece.
    pub fn output_len(&self) -> usize {
        self.out.len() - self.sent + self.shared.len()
    }

    /// Marks the first `n` bytes of the output (across its pieces) as sent.
    pub fn consume_output(&mut self, mut n: usize) {
        while n > 0 {
            match self.shared.next_at() {
                Some(at) if at == self.sent => {
                    self.shared.send_front(|data| {
                        let take = n.min(data.len());
                        data.advance(take);
                        n -= take;
                    });
                }
                Some(at) => {
                    let take = n.min(at - self.sent);
                    self.sent += take;
                    n -= take;
                }
                None => {
                    self.sent = (self.sent + n).min(self.out.len());
                    break;
                }
            }
        }
        if self.sent == self.out.len() && self.shared.is_empty() {
            self.out.clear();
            self.sent = 0;
            self.queued_control = 0;
        }
    }

    /// Streams open or half-closed.
    pub fn open_streams(&self) -> usize {
        self.streams.len()
    }

    /// A field block is under way: a HEADERS frame came without
    /// END_HEADERS and its last CONTINUATION has not. Its stream opens only
    /// when the block ends, so a connection with no stream open and this
    /// true is receiving a request's head.
    pub fn in_field_block(&self) -> bool {
        self.block.is_some()
    }

    /// Field blocks that ended on this connection (wrapping; a block whose
    /// connection failed first does not count).
    pub fn field_blocks_ended(&self) -> u64 {
        self.blocks_ended
    }

    /// Bytes of the acknowledgements (PING, SETTINGS), resets and
    /// WINDOW_UPDATEs returning the credit of DATA on closed streams that
    /// the client's frames made us queue, in all: output it can have without
    /// reading a byte of any response, which a measure of how fast it
    /// takes its responses leaves out.
    pub fn answer_bytes(&self) -> u64 {
        self.answer_bytes
    }

    /// Bytes of the headers of the DATA frames the client's credit cut
    /// short (a frame smaller than SETTINGS_MAX_FRAME_SIZE that spent the
    /// last of the stream's or the connection's credit), in all: framing
    /// the client chose, not a response's bytes, which a measure of how
    /// fast it takes its responses leaves out (a client granting credit a
    /// byte at a time would otherwise pay nine tenths of the rate with our
    /// frame headers). The headers of frames a response's own pieces made
    /// small are the response's, as chunk framing is over HTTP/1.
    pub fn data_header_bytes(&self) -> u64 {
        self.data_header_bytes
    }

    /// Bytes of request bodies the client sent, in all: the data of the
    /// DATA frames that open streams took (not their padding, nor DATA on
    /// closed streams). A measure of how fast a client sends its bodies
    /// counts these.
    pub fn body_bytes(&self) -> u64 {
        self.body_bytes
    }

    /// Frames that carried part of a request, in all: a field block that
    /// opened a stream or ended one (trailers), a CONTINUATION of a block
    /// not being dropped, and DATA with data or END_STREAM for an open
    /// stream (not refused or reset streams' frames, nor DATA on closed
    /// ones).
    ///
    /// The I/O timeout counts a client's progress by these (and by the
    /// responses it takes), not by its PINGs, SETTINGS, WINDOW_UPDATEs or
    /// ignored frames, which move no request on: a client that owes a body
    /// and sends only PINGs is still timed out.
    pub fn request_frames(&self) -> u64 {
        self.request_frames
    }

    /// Whether a frame still arriving, of which `seen` holds the header
    /// and the payload so far, will count in
    /// [`request_frames`](Self::request_frames) once it is whole: DATA
    /// with data or END_STREAM for a stream open on the client's side
    /// (padding known from its first byte), HEADERS that open a stream
    /// (within the limit, before our GOAWAY) or end one, a CONTINUATION
    /// of a block kept. The timer counts such a frame's bytes as the
    /// client's progress while they come (a slow link), and no other's
    /// (a refused HEADERS or a padded empty DATA split across reads is
    /// not).
    pub fn counts_when_whole(&self, seen: &[u8]) -> bool {
        let Some(header) = seen.first_chunk::<HEADER_LEN>() else { return false };
        let header = FrameHeader::parse(header);
        let open = |id| self.streams.get(&id).is_some_and(|stream| !stream.remote_closed);
        match header.kind {
            frame::kind::DATA => {
                if !open(header.stream) {
                    return false;
                }
                if header.has(frame::flag::END_STREAM) {
                    return true;
                }
                let padding = if header.has(frame::flag::PADDED) {
                    match seen.get(HEADER_LEN) {
                        Some(&pad) => 1 + u32::from(pad),
                        None => return false,
                    }
                } else {
                    0
                };
                header.length > padding
            }
            frame::kind::HEADERS => {
                let id = header.stream;
                let opens = id % 2 == 1
                    && id > self.last_stream
                    && self.goaway.is_none_or(|last| id <= last)
                    && self.streams.len() < self.config.max_concurrent_streams as usize;
                opens || (open(id) && header.has(frame::flag::END_STREAM))
            }
            frame::kind::CONTINUATION => self.block.is_some_and(|block| !block.discard),
            _ => false,
        }
    }

    /// The bytes stream `id` may still send as the client knows it: the
    /// smaller of its window and the connection's, less credit given back
    /// but not yet announced in a WINDOW_UPDATE (0 for a stream not open).
    pub fn receive_credit(&self, id: u32) -> u32 {
        let announced =
            |state: falconet_flow::InputState| state.window.saturating_sub(state.pending);
        self.streams
            .get(&id)
            .map_or(0, |s| announced(s.input.stream().state()).min(announced(self.recv.state())))
    }

    /// The connection's send window now (it may be below zero after a
    /// SETTINGS change).
    pub fn connection_credit(&self) -> i32 {
        self.send.available()
    }

    /// The send credit `stream` has now: the smaller of its window and the
    /// connection's (0 for a stream that is gone).
    pub fn send_credit(&self, id: u32) -> usize {
        self.streams
            .get(&id)
            .map_or(0, |s| s.output.available().min(self.send.available()).max(0) as usize)
    }
}

/// Appends a WINDOW_UPDATE the windows decided on: a release, a lift or
/// the connection's extra credit, each 1..=2^31-1 bytes (their types keep
/// them there), so the encoder never refuses one.
fn window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    let written = frame::encode_window_update(out, stream, increment);
    debug_assert!(written.is_ok(), "{written:?}");
}

#[cfg(test)]
mod tests;
