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

/// Why [`Connection::upgrade`] refused to take over a connection; nothing
/// was changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UpgradeError {
    /// The `HTTP2-Settings` payload is not a valid SETTINGS payload
    /// (RFC 9113 6.5).
    Settings(FrameError),
    /// The connection is no longer as [`Connection::new`] made it: it has
    /// received bytes, had output consumed, queued a DATA payload, opened
    /// a stream or begun a shutdown. The `101` must go out first and the
    /// upgrade's request be stream 1, so only a new connection can be
    /// upgraded.
    NotFresh,
}

impl std::fmt::Display for UpgradeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Settings(error) => write!(f, "HTTP2-Settings: {error}"),
            Self::NotFresh => f.write_str("an HTTP/2 connection already in use cannot be upgraded"),
        }
    }
}

impl std::error::Error for UpgradeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Settings(error) => Some(error),
            Self::NotFresh => None,
        }
    }
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

/// Frames the server ignores (PRIORITY, unknown types, WINDOW_UPDATE on a
/// closed stream, ...) allowed per stream the client opens (and once for
/// the connection), as nginx allows PRIORITY frames: enough for a browser
/// that reprioritizes, none for a flood that opens nothing.
const IGNORED_PER_STREAM: u32 = 128;
/// The most such allowance a connection banks.
const IGNORED_ALLOWANCE_MAX: u32 = 16 * IGNORED_PER_STREAM;

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
    /// Some output was consumed (written): too late for an upgrade's `101`.
    output_taken: bool,
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
            output_taken: false,
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

/// Appends a WINDOW_UPDATE for `increment` bytes, or nothing for one a
/// WINDOW_UPDATE cannot carry: 0 announces nothing, and no window holds
/// more than 2^31-1. The windows' own releases, lifts and the
/// connection's extra credit are always in range; an application's
/// [`Updates`] passed to [`Connection::send_updates`] by hand may not be.
fn window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    // Refused only out of range, as above, and then nothing is written.
    let _ = frame::encode_window_update(out, stream, increment);
}

// The state machine's parts, one job each (`impl Connection` in every
// file): receive (frames in, dispatched), blocks (field blocks and the
// streams they open), flow (receive windows and WINDOW_UPDATEs), errors
// (GOAWAY and RST_STREAM), limits (the flood budgets), closing (a
// stream's end), send (HEADERS, DATA, trailers), shutdown (GOAWAY's two
// steps), output (the bytes for the client).
mod blocks;
mod closing;
mod errors;
mod flow;
mod limits;
mod output;
mod receive;
mod send;
mod shutdown;
#[cfg(test)]
mod tests;
