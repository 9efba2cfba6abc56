//! The HTTP/2 frame layer (RFC 9113 §4, §6): the frames a client sends,
//! decoded into borrowed views, and the frames a server sends, encoded.
//!
//! Every frame is a 9-byte header and a payload of the header's length
//! (§4.1, in the RFC's notation):
//!
//! ```text
//! HTTP Frame {
//!   Length (24),              payload bytes, at most SETTINGS_MAX_FRAME_SIZE
//!   Type (8),                 kind::DATA ..= kind::CONTINUATION, others ignored
//!   Flags (8),                flag::*, meaningful per type, others ignored
//!   Reserved (1),             ignored when received, zero when sent
//!   Stream Identifier (31),   0 for the connection itself
//!   Frame Payload (..),
//! }
//! ```
//!
//! Reading a frame takes two steps: [`FrameHeader::parse`] on the first 9
//! bytes, then [`Frame::parse`] on the header and exactly `length` payload
//! bytes. [`FrameHeader::check_length`] lets the reader refuse an oversized
//! frame before buffering its payload (`Frame::parse` checks it again).
//!
//! # What is checked here, and what is not
//!
//! This module decides everything that one frame shows on its own: every
//! per-frame rule of §6 (lengths, stream 0 or not, padding, the
//! WINDOW_UPDATE increment, a stream depending on itself, SETTINGS values),
//! each as a [`FrameError`] carrying the [`ErrorCode`] and whether it is a
//! connection error (§5.4.1: GOAWAY and close) or a stream error (§5.4.2:
//! RST_STREAM on that stream). A frame that passes is well-formed, nothing
//! more.
//!
//! The connection's state machine checks what needs more than one frame:
//! stream states and which frames each allows (§5.1), client stream ids
//! odd and increasing (§5.1.1), that a header block's CONTINUATION frames
//! follow it with nothing between (§6.10), flow-control windows and their
//! overflow (§6.9), SETTINGS taking effect and being acknowledged (§6.5.3,
//! including which SETTINGS_MAX_FRAME_SIZE to pass here before the client
//! acknowledges ours), SETTINGS_MAX_CONCURRENT_STREAMS, HPACK decoding of
//! the fragments (§4.3), and the HTTP semantics of the fields (§8).
//!
//! # Error scope
//!
//! Where RFC 9113 leaves the scope open, or where a stream error would cost
//! more than it saves, these are connection errors (§5.4.1 allows treating
//! any stream error as a connection error):
//!
//! - A frame longer than SETTINGS_MAX_FRAME_SIZE, of any type (§4.2 allows a
//!   stream error for DATA on a stream): answering with RST_STREAM would
//!   mean reading and discarding up to 16 MiB, and still charging it to the
//!   connection window (§6.9). A GOAWAY is decided from the header alone.
//! - Any error in a frame that carries a field block (HEADERS, CONTINUATION;
//!   PUSH_PROMISE is refused outright). A field block that is not
//!   decompressed leaves the peer's HPACK state out of step with ours
//!   (§4.3), so even a HEADERS frame whose stream depends on itself (a
//!   stream error by §5.3.1) ends the connection here: the error path
//!   carries no fragment to decompress.
//! - Padding errors (§6.1 says connection error; §6.2 leaves the HEADERS
//!   case open, and HPACK state decides it as above), and a padded frame too
//!   short to hold its Pad Length (§4.2 FRAME_SIZE_ERROR).
//!
//! The stream errors left are the ones the RFC names and that touch no
//! connection state: a PRIORITY frame of the wrong length or depending on
//! itself (§6.3, §5.3.1), and a WINDOW_UPDATE of 0 on a stream (§6.9).
//!
//! Padding bytes are not checked to be zero (§6.1: a receiver is not
//! obligated to), and PRIORITY signals, deprecated by §5.3.2, are decoded
//! only so their rules can be checked.

use std::fmt;

use bytes::BufMut;

/// The client connection preface (§3.4): these 24 bytes, then a SETTINGS
/// frame, open every HTTP/2 connection (the prior-knowledge h2c start of
/// §3.3 sends them first thing).
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Bytes of a frame header (§4.1).
pub const HEADER_LEN: usize = 9;

/// The longest payload the 24-bit Length field can describe (2^24-1), and
/// the largest value SETTINGS_MAX_FRAME_SIZE may take (§4.2, §6.5.2).
pub const MAX_FRAME_LEN: u32 = (1 << 24) - 1;

/// The initial SETTINGS_MAX_FRAME_SIZE and the smallest value it may take
/// (2^14, §4.2): every endpoint accepts payloads of this length.
pub const DEFAULT_MAX_FRAME_SIZE: u32 = 1 << 14;

/// The initial SETTINGS_INITIAL_WINDOW_SIZE (2^16-1, §6.5.2), also the
/// connection window's initial size (§6.9.2).
pub const DEFAULT_INITIAL_WINDOW_SIZE: u32 = (1 << 16) - 1;

/// The initial SETTINGS_HEADER_TABLE_SIZE (§6.5.2).
pub const DEFAULT_HEADER_TABLE_SIZE: u32 = 4096;

/// The largest flow-control window (2^31-1, §6.9.1), so also the largest
/// WINDOW_UPDATE increment and SETTINGS_INITIAL_WINDOW_SIZE.
pub const MAX_WINDOW_SIZE: u32 = (1 << 31) - 1;

/// The reserved bit above a 31-bit stream id or window increment (§4.1,
/// §6.8, §6.9): ignored when received, zero when sent.
const RESERVED_BIT: u32 = 1 << 31;

/// Bytes of one SETTINGS parameter: a 16-bit identifier, a 32-bit value
/// (§6.5.1).
const SETTING_LEN: usize = 6;

/// Frame type codes (§6, §11.2). Any other type is an extension frame,
/// decoded as [`Frame::Unknown`] and ignored (§4.1, §5.5).
pub mod kind {
    /// DATA (§6.1): a stream's content, flow-controlled.
    pub const DATA: u8 = 0x0;
    /// HEADERS (§6.2): opens a stream, carrying a field block fragment.
    pub const HEADERS: u8 = 0x1;
    /// PRIORITY (§6.3): a deprecated priority signal for a stream.
    pub const PRIORITY: u8 = 0x2;
    /// RST_STREAM (§6.4): ends a stream at once.
    pub const RST_STREAM: u8 = 0x3;
    /// SETTINGS (§6.5): the sender's configuration, or an acknowledgement.
    pub const SETTINGS: u8 = 0x4;
    /// PUSH_PROMISE (§6.6): server push; a client never sends it (§8.4).
    pub const PUSH_PROMISE: u8 = 0x5;
    /// PING (§6.7): a round-trip probe, answered with its ACK.
    pub const PING: u8 = 0x6;
    /// GOAWAY (§6.8): the sender is closing the connection.
    pub const GOAWAY: u8 = 0x7;
    /// WINDOW_UPDATE (§6.9): grows a flow-control window.
    pub const WINDOW_UPDATE: u8 = 0x8;
    /// CONTINUATION (§6.10): the rest of a field block.
    pub const CONTINUATION: u8 = 0x9;
}

/// Frame flags (§6). A bit means something only on the types listed with
/// it; any other bit, or a bit on another type, is ignored (§4.1).
pub mod flag {
    /// DATA, HEADERS: the sender's last frame on the stream (§6.1, §6.2).
    pub const END_STREAM: u8 = 0x1;
    /// SETTINGS, PING: an acknowledgement (§6.5, §6.7).
    pub const ACK: u8 = 0x1;
    /// HEADERS, PUSH_PROMISE, CONTINUATION: the field block ends in this
    /// frame (§6.2, §6.10).
    pub const END_HEADERS: u8 = 0x4;
    /// DATA, HEADERS, PUSH_PROMISE: a Pad Length byte leads the payload and
    /// that many padding bytes end it (§6.1).
    pub const PADDED: u8 = 0x8;
    /// HEADERS: the Exclusive, Stream Dependency and Weight fields follow
    /// the Pad Length (§6.2).
    pub const PRIORITY: u8 = 0x20;
}

/// SETTINGS parameter identifiers (§6.5.2, §11.3). A parameter with any
/// other identifier is ignored (§6.5.2).
pub mod setting {
    /// SETTINGS_HEADER_TABLE_SIZE: the largest HPACK dynamic table the
    /// sender's decoder allows, in bytes (initially 4,096).
    pub const HEADER_TABLE_SIZE: u16 = 0x1;
    /// SETTINGS_ENABLE_PUSH: 0 or 1, whether the sender accepts server push
    /// (initially 1).
    pub const ENABLE_PUSH: u16 = 0x2;
    /// SETTINGS_MAX_CONCURRENT_STREAMS: streams the sender lets its peer
    /// open at once (initially unlimited).
    pub const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    /// SETTINGS_INITIAL_WINDOW_SIZE: the sender's initial stream window, at
    /// most 2^31-1 (initially 65,535).
    pub const INITIAL_WINDOW_SIZE: u16 = 0x4;
    /// SETTINGS_MAX_FRAME_SIZE: the longest payload the sender accepts,
    /// 16,384..=16,777,215 (initially 16,384).
    pub const MAX_FRAME_SIZE: u16 = 0x5;
    /// SETTINGS_MAX_HEADER_LIST_SIZE: advisory, the largest field section
    /// the sender accepts (initially unlimited).
    pub const MAX_HEADER_LIST_SIZE: u16 = 0x6;
}

/// A frame's 9-byte header (§4.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    /// Payload bytes, 24 bits.
    pub length: u32,
    /// The frame type, one of [`kind`] or an extension.
    pub kind: u8,
    /// The flag bits, see [`flag`].
    pub flags: u8,
    /// The stream id, 31 bits (the reserved bit is dropped); 0 for the
    /// connection.
    pub stream: u32,
}

impl FrameHeader {
    /// Decodes a frame header. Any 9 bytes are a header; whether it
    /// describes a valid frame is [`Frame::parse`]'s question.
    #[must_use]
    pub fn parse(bytes: &[u8; HEADER_LEN]) -> Self {
        let [l0, l1, l2, kind, flags, s0, s1, s2, s3] = *bytes;
        Self {
            length: u32::from_be_bytes([0, l0, l1, l2]),
            kind,
            flags,
            stream: u32::from_be_bytes([s0, s1, s2, s3]) & !RESERVED_BIT,
        }
    }

    /// Encodes this header, with the reserved bit clear.
    ///
    /// `length` must be at most [`MAX_FRAME_LEN`] (checked in debug builds;
    /// higher bits are dropped otherwise).
    #[must_use]
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        debug_assert!(self.length <= MAX_FRAME_LEN, "frame length {} over 2^24-1", self.length);
        let [_, l0, l1, l2] = self.length.to_be_bytes();
        let [s0, s1, s2, s3] = (self.stream & !RESERVED_BIT).to_be_bytes();
        [l0, l1, l2, self.kind, self.flags, s0, s1, s2, s3]
    }

    /// Appends this header to `out` (see [`to_bytes`](Self::to_bytes)).
    pub fn encode(&self, out: &mut impl BufMut) {
        out.put_slice(&self.to_bytes());
    }

    /// Whether `flag` (one of [`flag`]) is set.
    #[must_use]
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// Checks the length against the SETTINGS_MAX_FRAME_SIZE we advertise,
    /// before the payload is read: a longer frame of any type is a
    /// connection error FRAME_SIZE_ERROR (§4.2; see the module docs for
    /// why DATA is no exception).
    ///
    /// # Errors
    /// A connection [`FrameError`], FRAME_SIZE_ERROR
    /// ([`Violation::TooLarge`]), for a length over `max_frame_size`.
    pub fn check_length(&self, max_frame_size: u32) -> Result<(), FrameError> {
        if self.length > max_frame_size {
            return Err(FrameError::connection(ErrorCode::FRAME_SIZE_ERROR, Violation::TooLarge));
        }
        Ok(())
    }
}

/// An HTTP/2 error code (§7), as carried by RST_STREAM and GOAWAY.
///
/// A code this module does not know is kept as it is: unknown codes MUST
/// NOT trigger any special behavior (§7), so receiving one is no error.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrorCode(u32);

impl ErrorCode {
    /// NO_ERROR (0x0): not an error, e.g. a graceful GOAWAY.
    pub const NO_ERROR: Self = Self(0x0);
    /// PROTOCOL_ERROR (0x1): an unspecific protocol error.
    pub const PROTOCOL_ERROR: Self = Self(0x1);
    /// INTERNAL_ERROR (0x2): the endpoint failed on its own.
    pub const INTERNAL_ERROR: Self = Self(0x2);
    /// FLOW_CONTROL_ERROR (0x3): the flow-control protocol was violated.
    pub const FLOW_CONTROL_ERROR: Self = Self(0x3);
    /// SETTINGS_TIMEOUT (0x4): SETTINGS were not acknowledged in time.
    pub const SETTINGS_TIMEOUT: Self = Self(0x4);
    /// STREAM_CLOSED (0x5): a frame arrived on a half-closed stream.
    pub const STREAM_CLOSED: Self = Self(0x5);
    /// FRAME_SIZE_ERROR (0x6): a frame of an invalid size.
    pub const FRAME_SIZE_ERROR: Self = Self(0x6);
    /// REFUSED_STREAM (0x7): the stream was refused before any processing.
    pub const REFUSED_STREAM: Self = Self(0x7);
    /// CANCEL (0x8): the stream is no longer needed.
    pub const CANCEL: Self = Self(0x8);
    /// COMPRESSION_ERROR (0x9): the HPACK context cannot be maintained.
    pub const COMPRESSION_ERROR: Self = Self(0x9);
    /// CONNECT_ERROR (0xa): a CONNECT tunnel's connection failed.
    pub const CONNECT_ERROR: Self = Self(0xa);
    /// ENHANCE_YOUR_CALM (0xb): the peer generates excessive load.
    pub const ENHANCE_YOUR_CALM: Self = Self(0xb);
    /// INADEQUATE_SECURITY (0xc): the transport is not secure enough.
    pub const INADEQUATE_SECURITY: Self = Self(0xc);
    /// HTTP_1_1_REQUIRED (0xd): use HTTP/1.1 for this request.
    pub const HTTP_1_1_REQUIRED: Self = Self(0xd);

    /// The code, as sent on the wire.
    #[must_use]
    pub const fn value(self) -> u32 {
        self.0
    }

    /// The code's name in RFC 9113 §7, or `None` for a code it does not
    /// define.
    #[must_use]
    pub const fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            0x0 => "NO_ERROR",
            0x1 => "PROTOCOL_ERROR",
            0x2 => "INTERNAL_ERROR",
            0x3 => "FLOW_CONTROL_ERROR",
            0x4 => "SETTINGS_TIMEOUT",
            0x5 => "STREAM_CLOSED",
            0x6 => "FRAME_SIZE_ERROR",
            0x7 => "REFUSED_STREAM",
            0x8 => "CANCEL",
            0x9 => "COMPRESSION_ERROR",
            0xa => "CONNECT_ERROR",
            0xb => "ENHANCE_YOUR_CALM",
            0xc => "INADEQUATE_SECURITY",
            0xd => "HTTP_1_1_REQUIRED",
            _ => return None,
        })
    }
}

impl From<u32> for ErrorCode {
    /// Any value: an unknown code is kept, not refused (§7).
    fn from(value: u32) -> Self {
        Self(value)
    }
}

impl From<ErrorCode> for u32 {
    fn from(code: ErrorCode) -> Self {
        code.0
    }
}

impl fmt::Debug for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "unknown error code {:#x}", self.0),
        }
    }
}

/// Whether an error ends the connection or one stream (§5.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorScope {
    /// A connection error (§5.4.1): send GOAWAY with the code, then close.
    Connection,
    /// A stream error on this stream (§5.4.2): send RST_STREAM with the
    /// code; the connection goes on.
    Stream(u32),
}

/// Which rule of RFC 9113 a frame broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Violation {
    /// Longer than SETTINGS_MAX_FRAME_SIZE (§4.2).
    TooLarge,
    /// The payload given to [`Frame::parse`] is not the header's length
    /// (the reader's bug, not the peer's).
    PayloadMismatch,
    /// Too short for its mandatory fields (§4.2): a padded frame without
    /// its Pad Length, HEADERS without its priority fields, GOAWAY under 8
    /// bytes (§6.8).
    TooShort,
    /// Not the length its type requires: PRIORITY 5 (§6.3), RST_STREAM 4
    /// (§6.4), SETTINGS a multiple of 6 and an ACK 0 (§6.5), PING 8 (§6.7),
    /// WINDOW_UPDATE 4 (§6.9).
    BadLength,
    /// The padding is longer than what the payload leaves for it (§6.1,
    /// §6.2).
    Padding,
    /// Stream 0 on a frame that needs a stream (§6.1–§6.4, §6.6, §6.10).
    ZeroStream,
    /// A stream id on a frame of the connection (§6.5, §6.7, §6.8).
    NonZeroStream,
    /// A WINDOW_UPDATE increment of 0 (§6.9).
    ZeroIncrement,
    /// A stream depending on itself (§5.3.1).
    SelfDependency,
    /// A SETTINGS parameter, by identifier, with a value out of its range
    /// (§6.5.2).
    SettingValue(u16),
    /// PUSH_PROMISE, which a client cannot send (§8.4).
    PushPromise,
}

impl Violation {
    fn describe(self) -> &'static str {
        match self {
            Self::TooLarge => "frame longer than SETTINGS_MAX_FRAME_SIZE (RFC 9113 §4.2)",
            Self::PayloadMismatch => "payload is not the frame header's length",
            Self::TooShort => "frame too short for its fields (RFC 9113 §4.2)",
            Self::BadLength => "frame length invalid for its type (RFC 9113 §6)",
            Self::Padding => "padding longer than the payload (RFC 9113 §6.1, §6.2)",
            Self::ZeroStream => "stream 0 on a stream frame (RFC 9113 §6)",
            Self::NonZeroStream => "stream id on a connection frame (RFC 9113 §6)",
            Self::ZeroIncrement => "WINDOW_UPDATE increment of 0 (RFC 9113 §6.9)",
            Self::SelfDependency => "stream depends on itself (RFC 9113 §5.3.1)",
            Self::SettingValue(_) => "SETTINGS value out of range (RFC 9113 §6.5.2)",
            Self::PushPromise => "PUSH_PROMISE from a client (RFC 9113 §8.4)",
        }
    }
}

/// A frame that breaks a rule of RFC 9113: the code to send, where to send
/// it, and the rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub struct FrameError {
    scope: ErrorScope,
    code: ErrorCode,
    violation: Violation,
}

impl FrameError {
    fn connection(code: ErrorCode, violation: Violation) -> Self {
        Self { scope: ErrorScope::Connection, code, violation }
    }

    fn stream(stream: u32, code: ErrorCode, violation: Violation) -> Self {
        Self { scope: ErrorScope::Stream(stream), code, violation }
    }

    /// The error code for the GOAWAY or RST_STREAM.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// Whether the connection or one stream is in error.
    pub fn scope(&self) -> ErrorScope {
        self.scope
    }

    /// Whether this is a connection error (§5.4.1).
    pub fn is_connection(&self) -> bool {
        self.scope == ErrorScope::Connection
    }

    /// The rule broken.
    pub fn violation(&self) -> Violation {
        self.violation
    }
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.scope {
            ErrorScope::Connection => write!(f, "connection error {}: ", self.code)?,
            ErrorScope::Stream(id) => write!(f, "stream {id} error {}: ", self.code)?,
        }
        f.write_str(self.violation.describe())?;
        if let Violation::SettingValue(id) = self.violation {
            write!(f, " (identifier {id:#x})")?;
        }
        Ok(())
    }
}

impl std::error::Error for FrameError {}

/// A frame the encoders refuse to write because one of its fields cannot
/// hold the value given: nothing is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncodeError {
    /// A WINDOW_UPDATE increment outside `1..=2^31-1` (§6.9: the peer
    /// answers 0 with PROTOCOL_ERROR, and no window holds more).
    WindowIncrement(u32),
    /// A payload longer than its frame may be: a DATA frame's length
    /// field holds 24 bits ([`MAX_FRAME_LEN`]); a SETTINGS frame must fit
    /// the smallest SETTINGS_MAX_FRAME_SIZE ([`DEFAULT_MAX_FRAME_SIZE`]).
    TooLong {
        /// The payload's length.
        length: usize,
        /// The most the frame may carry.
        max: usize,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::WindowIncrement(n) => {
                write!(f, "a WINDOW_UPDATE increment of {n}, outside 1..=2^31-1")
            }
            Self::TooLong { length, max } => {
                write!(f, "a frame payload of {length} bytes, over its {max}")
            }
        }
    }
}

impl std::error::Error for EncodeError {}

/// A priority signal of HEADERS or PRIORITY (§5.3, deprecated by §5.3.2 and
/// decoded only to check §5.3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Priority {
    /// The stream this one depends on (31 bits; 0 for none).
    pub dependency: u32,
    /// Whether the dependency is exclusive.
    pub exclusive: bool,
    /// The weight, 1..=256 (the wire's value plus one).
    pub weight: u16,
}

impl Priority {
    fn parse(bytes: [u8; 5]) -> Self {
        let [d0, d1, d2, d3, weight] = bytes;
        let word = u32::from_be_bytes([d0, d1, d2, d3]);
        Self {
            dependency: word & !RESERVED_BIT,
            exclusive: word & RESERVED_BIT != 0,
            weight: u16::from(weight) + 1,
        }
    }
}

/// The parameters of a SETTINGS frame, in order, as `(identifier, value)`;
/// already validated by [`Frame::parse`], unknown identifiers included
/// (the receiver ignores them, §6.5.2, as [`Settings::apply`] does).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SettingsParams<'a> {
    /// The payload not yet iterated, a multiple of 6 bytes.
    rest: &'a [u8],
}

impl Iterator for SettingsParams<'_> {
    type Item = (u16, u32);

    fn next(&mut self) -> Option<(u16, u32)> {
        let (param, rest) = self.rest.split_first_chunk::<SETTING_LEN>()?;
        self.rest = rest;
        let [i0, i1, v0, v1, v2, v3] = *param;
        Some((u16::from_be_bytes([i0, i1]), u32::from_be_bytes([v0, v1, v2, v3])))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.rest.len() / SETTING_LEN;
        (n, Some(n))
    }
}

impl ExactSizeIterator for SettingsParams<'_> {}

/// A well-formed frame from a client, borrowing from its payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// DATA (§6.1).
    Data {
        /// The stream, never 0.
        stream: u32,
        /// Whether this is the client's last frame on the stream.
        end_stream: bool,
        /// The content, without padding.
        data: &'a [u8],
        /// The whole payload's length, padding included: what flow control
        /// counts against both windows (§6.1, §6.9).
        flow_len: u32,
    },
    /// HEADERS (§6.2): opens a stream (or carries trailers).
    Headers {
        /// The stream, never 0.
        stream: u32,
        /// Whether the client sends nothing more on the stream.
        end_stream: bool,
        /// Whether the field block ends here; if not, CONTINUATION frames
        /// on the same stream follow, and nothing else (§6.10).
        end_headers: bool,
        /// The priority fields, if the PRIORITY flag was set (never a
        /// dependency on the stream itself).
        priority: Option<Priority>,
        /// The field block fragment, without padding or priority fields.
        fragment: &'a [u8],
    },
    /// PRIORITY (§6.3): deprecated, may be ignored (§5.3.2).
    Priority {
        /// The stream, never 0.
        stream: u32,
        /// The signal (never a dependency on the stream itself).
        priority: Priority,
    },
    /// RST_STREAM (§6.4).
    RstStream {
        /// The stream, never 0.
        stream: u32,
        /// Why the client reset it; maybe a code unknown to us.
        code: ErrorCode,
    },
    /// SETTINGS (§6.5), on the connection.
    Settings {
        /// An acknowledgement of our SETTINGS (then `params` is empty).
        ack: bool,
        /// The parameters, each value within its range.
        params: SettingsParams<'a>,
    },
    /// PING (§6.7), on the connection.
    Ping {
        /// An answer to our PING; if not, answer with
        /// [`encode_ping`]`(out, payload, true)`.
        ack: bool,
        /// The opaque data, echoed in the answer.
        payload: [u8; 8],
    },
    /// GOAWAY (§6.8), on the connection.
    GoAway {
        /// The last stream the client may have processed (31 bits).
        last_stream: u32,
        /// Why it is closing; maybe a code unknown to us.
        code: ErrorCode,
        /// Opaque diagnostic data.
        debug: &'a [u8],
    },
    /// WINDOW_UPDATE (§6.9).
    WindowUpdate {
        /// The stream whose window grows, or 0 for the connection's.
        stream: u32,
        /// The increment, 1..=2^31-1 (the reserved bit is dropped).
        increment: u32,
    },
    /// CONTINUATION (§6.10).
    Continuation {
        /// The stream, never 0.
        stream: u32,
        /// Whether the field block ends here.
        end_headers: bool,
        /// The field block fragment.
        fragment: &'a [u8],
    },
    /// A frame of an extension type, to be ignored (§4.1, §5.5), except
    /// inside a field block, where any frame but CONTINUATION is a
    /// connection error (§6.10).
    Unknown {
        /// Its type.
        kind: u8,
    },
}

impl<'a> Frame<'a> {
    /// Decodes a frame from a client: its `header` and its `payload`,
    /// exactly `header.length` bytes. `max_frame_size` is the
    /// SETTINGS_MAX_FRAME_SIZE in force for what we receive.
    ///
    /// Checks every rule of RFC 9113 §6 that one frame decides (see the
    /// module docs); flags a type does not define are ignored (§4.1).
    ///
    /// # Errors
    /// A [`FrameError`] for the first rule the frame breaks: its
    /// [`code`](FrameError::code), whether it ends the connection or one
    /// stream ([`scope`](FrameError::scope)), and the rule
    /// ([`violation`](FrameError::violation), one of [`Violation`]).
    pub fn parse(
        header: FrameHeader,
        payload: &'a [u8],
        max_frame_size: u32,
    ) -> Result<Self, FrameError> {
        header.check_length(max_frame_size)?;
        if usize::try_from(header.length) != Ok(payload.len()) {
            return Err(connection_frame_size(Violation::PayloadMismatch));
        }
        let stream = header.stream;
        match header.kind {
            kind::DATA => {
                on_stream(stream)?;
                let (data, pad) = padded(header, payload)?;
                Ok(Self::Data {
                    stream,
                    end_stream: header.has(flag::END_STREAM),
                    data: unpad(data, pad)?,
                    flow_len: header.length,
                })
            }
            kind::HEADERS => {
                on_stream(stream)?;
                let (mut rest, pad) = padded(header, payload)?;
                let mut priority = None;
                if header.has(flag::PRIORITY) {
                    let (fields, after) = rest
                        .split_first_chunk::<5>()
                        .ok_or(connection_frame_size(Violation::TooShort))?;
                    rest = after;
                    priority = Some(Priority::parse(*fields));
                }
                let fragment = unpad(rest, pad)?;
                if priority.is_some_and(|p| p.dependency == stream) {
                    // A stream error by §5.3.1, escalated (§5.4.1): the
                    // caller could not decompress this fragment, and
                    // HPACK state would drift (§4.3).
                    return Err(FrameError::connection(
                        ErrorCode::PROTOCOL_ERROR,
                        Violation::SelfDependency,
                    ));
                }
                Ok(Self::Headers {
                    stream,
                    end_stream: header.has(flag::END_STREAM),
                    end_headers: header.has(flag::END_HEADERS),
                    priority,
                    fragment,
                })
            }
            kind::PRIORITY => {
                on_stream(stream)?;
                let &fields = <&[u8; 5]>::try_from(payload).map_err(|_| {
                    FrameError::stream(stream, ErrorCode::FRAME_SIZE_ERROR, Violation::BadLength)
                })?;
                let priority = Priority::parse(fields);
                if priority.dependency == stream {
                    return Err(FrameError::stream(
                        stream,
                        ErrorCode::PROTOCOL_ERROR,
                        Violation::SelfDependency,
                    ));
                }
                Ok(Self::Priority { stream, priority })
            }
            kind::RST_STREAM => {
                on_stream(stream)?;
                let &code = <&[u8; 4]>::try_from(payload)
                    .map_err(|_| connection_frame_size(Violation::BadLength))?;
                Ok(Self::RstStream { stream, code: ErrorCode(u32::from_be_bytes(code)) })
            }
            kind::SETTINGS => {
                on_connection(stream)?;
                let ack = header.has(flag::ACK);
                if (ack && !payload.is_empty()) || !payload.len().is_multiple_of(SETTING_LEN) {
                    return Err(connection_frame_size(Violation::BadLength));
                }
                let params = SettingsParams { rest: payload };
                for (id, value) in params {
                    validate_setting(id, value)?;
                }
                Ok(Self::Settings { ack, params })
            }
            kind::PUSH_PROMISE => {
                on_stream(stream)?;
                Err(FrameError::connection(ErrorCode::PROTOCOL_ERROR, Violation::PushPromise))
            }
            kind::PING => {
                on_connection(stream)?;
                let &payload = <&[u8; 8]>::try_from(payload)
                    .map_err(|_| connection_frame_size(Violation::BadLength))?;
                Ok(Self::Ping { ack: header.has(flag::ACK), payload })
            }
            kind::GOAWAY => {
                on_connection(stream)?;
                let (fields, debug) = payload
                    .split_first_chunk::<8>()
                    .ok_or(connection_frame_size(Violation::TooShort))?;
                let [l0, l1, l2, l3, c0, c1, c2, c3] = *fields;
                Ok(Self::GoAway {
                    last_stream: u32::from_be_bytes([l0, l1, l2, l3]) & !RESERVED_BIT,
                    code: ErrorCode(u32::from_be_bytes([c0, c1, c2, c3])),
                    debug,
                })
            }
            kind::WINDOW_UPDATE => {
                let &word = <&[u8; 4]>::try_from(payload)
                    .map_err(|_| connection_frame_size(Violation::BadLength))?;
                let increment = u32::from_be_bytes(word) & !RESERVED_BIT;
                if increment == 0 {
                    let code = ErrorCode::PROTOCOL_ERROR;
                    return Err(match stream {
                        0 => FrameError::connection(code, Violation::ZeroIncrement),
                        _ => FrameError::stream(stream, code, Violation::ZeroIncrement),
                    });
                }
                Ok(Self::WindowUpdate { stream, increment })
            }
            kind::CONTINUATION => {
                on_stream(stream)?;
                Ok(Self::Continuation {
                    stream,
                    end_headers: header.has(flag::END_HEADERS),
                    fragment: payload,
                })
            }
            kind => Ok(Self::Unknown { kind }),
        }
    }
}

fn connection_frame_size(violation: Violation) -> FrameError {
    FrameError::connection(ErrorCode::FRAME_SIZE_ERROR, violation)
}

/// A frame that belongs to a stream must not name stream 0.
fn on_stream(stream: u32) -> Result<(), FrameError> {
    if stream == 0 {
        return Err(FrameError::connection(ErrorCode::PROTOCOL_ERROR, Violation::ZeroStream));
    }
    Ok(())
}

/// A frame of the connection itself must name stream 0.
fn on_connection(stream: u32) -> Result<(), FrameError> {
    if stream != 0 {
        return Err(FrameError::connection(ErrorCode::PROTOCOL_ERROR, Violation::NonZeroStream));
    }
    Ok(())
}

/// Splits off the Pad Length byte of a PADDED frame: the payload after it,
/// and the padding length (0 when not padded).
fn padded(header: FrameHeader, payload: &[u8]) -> Result<(&[u8], usize), FrameError> {
    if !header.has(flag::PADDED) {
        return Ok((payload, 0));
    }
    let (&pad, rest) = payload.split_first().ok_or(connection_frame_size(Violation::TooShort))?;
    Ok((rest, usize::from(pad)))
}

/// Drops `pad` bytes of padding from the end of what the frame's fields
/// left; more padding than that is a connection error PROTOCOL_ERROR
/// (§6.1; §6.2 for HEADERS, whose fields come first).
fn unpad(rest: &[u8], pad: usize) -> Result<&[u8], FrameError> {
    rest.len()
        .checked_sub(pad)
        .and_then(|len| rest.get(..len))
        .ok_or(FrameError::connection(ErrorCode::PROTOCOL_ERROR, Violation::Padding))
}

/// Checks a SETTINGS value against its range (§6.5.2); every value of the
/// other parameters, and of unknown ones, is valid.
fn validate_setting(id: u16, value: u32) -> Result<(), FrameError> {
    let code = match id {
        setting::ENABLE_PUSH if value > 1 => ErrorCode::PROTOCOL_ERROR,
        setting::INITIAL_WINDOW_SIZE if value > MAX_WINDOW_SIZE => ErrorCode::FLOW_CONTROL_ERROR,
        setting::MAX_FRAME_SIZE if !(DEFAULT_MAX_FRAME_SIZE..=MAX_FRAME_LEN).contains(&value) => {
            ErrorCode::PROTOCOL_ERROR
        }
        _ => return Ok(()),
    };
    Err(FrameError::connection(code, Violation::SettingValue(id)))
}

/// The six parameters of §6.5.2, one endpoint's side: what a peer's
/// SETTINGS frames have set, or what we announce.
///
/// [`Default`] gives the values in force before any SETTINGS frame
/// ([`Settings::INITIAL`]). The fields are public for building our own
/// settings; keep them within the ranges [`apply`](Self::apply) enforces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// SETTINGS_HEADER_TABLE_SIZE, bytes.
    pub header_table_size: u32,
    /// SETTINGS_ENABLE_PUSH.
    pub enable_push: bool,
    /// SETTINGS_MAX_CONCURRENT_STREAMS; `None` for unlimited.
    pub max_concurrent_streams: Option<u32>,
    /// SETTINGS_INITIAL_WINDOW_SIZE, bytes, at most [`MAX_WINDOW_SIZE`].
    pub initial_window_size: u32,
    /// SETTINGS_MAX_FRAME_SIZE, bytes, in
    /// [`DEFAULT_MAX_FRAME_SIZE`]`..=`[`MAX_FRAME_LEN`].
    pub max_frame_size: u32,
    /// SETTINGS_MAX_HEADER_LIST_SIZE, bytes; `None` for unlimited.
    pub max_header_list_size: Option<u32>,
}

impl Settings {
    /// The initial values (§6.5.2), in force until a SETTINGS frame
    /// changes them.
    pub const INITIAL: Self = Self {
        header_table_size: DEFAULT_HEADER_TABLE_SIZE,
        enable_push: true,
        max_concurrent_streams: None,
        initial_window_size: DEFAULT_INITIAL_WINDOW_SIZE,
        max_frame_size: DEFAULT_MAX_FRAME_SIZE,
        max_header_list_size: None,
    };

    /// Sets one parameter, checking its value (§6.5.2): ENABLE_PUSH other
    /// than 0 or 1 and MAX_FRAME_SIZE out of range are connection errors
    /// PROTOCOL_ERROR, INITIAL_WINDOW_SIZE over 2^31-1 a connection error
    /// FLOW_CONTROL_ERROR. An unknown identifier is ignored.
    ///
    /// This only records the value: applying a new INITIAL_WINDOW_SIZE to
    /// open streams (§6.9.2) or HEADER_TABLE_SIZE to the HPACK encoder is
    /// the connection's job.
    ///
    /// # Errors
    /// A connection [`FrameError`] ([`Violation::SettingValue`]) for a
    /// value out of its range, as above; nothing is recorded.
    pub fn apply(&mut self, id: u16, value: u32) -> Result<(), FrameError> {
        validate_setting(id, value)?;
        match id {
            setting::HEADER_TABLE_SIZE => self.header_table_size = value,
            setting::ENABLE_PUSH => self.enable_push = value == 1,
            setting::MAX_CONCURRENT_STREAMS => self.max_concurrent_streams = Some(value),
            setting::INITIAL_WINDOW_SIZE => self.initial_window_size = value,
            setting::MAX_FRAME_SIZE => self.max_frame_size = value,
            setting::MAX_HEADER_LIST_SIZE => self.max_header_list_size = Some(value),
            _ => {}
        }
        Ok(())
    }

    /// The parameters that differ from `base` (usually
    /// [`Settings::INITIAL`], for the first SETTINGS frame), in identifier
    /// order: what a SETTINGS frame must carry to turn `base` into `self`.
    /// An unlimited value where `base` has a limit is sent as `u32::MAX`
    /// (the protocol has no way to say unlimited).
    pub fn changes(&self, base: &Settings) -> impl Iterator<Item = (u16, u32)> + use<> {
        let unlimited = |v: Option<u32>| v.unwrap_or(u32::MAX);
        let all = [
            (setting::HEADER_TABLE_SIZE, self.header_table_size, base.header_table_size),
            (setting::ENABLE_PUSH, u32::from(self.enable_push), u32::from(base.enable_push)),
            (
                setting::MAX_CONCURRENT_STREAMS,
                unlimited(self.max_concurrent_streams),
                unlimited(base.max_concurrent_streams),
            ),
            (setting::INITIAL_WINDOW_SIZE, self.initial_window_size, base.initial_window_size),
            (setting::MAX_FRAME_SIZE, self.max_frame_size, base.max_frame_size),
            (
                setting::MAX_HEADER_LIST_SIZE,
                unlimited(self.max_header_list_size),
                unlimited(base.max_header_list_size),
            ),
        ];
        all.into_iter().filter(|&(_, new, old)| new != old).map(|(id, new, _)| (id, new))
    }

    /// Appends a SETTINGS frame carrying [`changes`](Self::changes) from
    /// `base` (an empty one, still due, if nothing changed: §3.4).
    pub fn encode_changes(&self, base: &Settings, out: &mut impl BufMut) {
        let mut params = [(0, 0); 6];
        let mut n = 0;
        for (slot, change) in params.iter_mut().zip(self.changes(base)) {
            *slot = change;
            n += 1;
        }
        // Six parameters at most: the encoder never refuses them.
        let written = encode_settings(out, params.get(..n).unwrap_or_default());
        debug_assert!(written.is_ok(), "{written:?}");
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self::INITIAL
    }
}

/// Appends a SETTINGS frame with `params`, `(identifier, value)` in order.
///
/// # Errors
/// [`EncodeError::TooLong`], writing nothing, for more than 2,730
/// parameters: the frame must fit the smallest SETTINGS_MAX_FRAME_SIZE.
pub fn encode_settings(out: &mut impl BufMut, params: &[(u16, u32)]) -> Result<(), EncodeError> {
    let length = params.len().saturating_mul(SETTING_LEN);
    let max = DEFAULT_MAX_FRAME_SIZE as usize;
    let Ok(length) = u32::try_from(length)
        .map_err(drop)
        .and_then(|n| if n <= DEFAULT_MAX_FRAME_SIZE { Ok(n) } else { Err(()) })
    else {
        return Err(EncodeError::TooLong { length, max });
    };
    FrameHeader { length, kind: kind::SETTINGS, flags: 0, stream: 0 }.encode(out);
    for &(id, value) in params {
        out.put_u16(id);
        out.put_u32(value);
    }
    Ok(())
}

/// Appends a SETTINGS frame acknowledging the client's (§6.5.3).
pub fn encode_settings_ack(out: &mut impl BufMut) {
    FrameHeader { length: 0, kind: kind::SETTINGS, flags: flag::ACK, stream: 0 }.encode(out);
}

/// Appends a PING frame: with `ack`, the answer to a client's PING, echoing
/// its `payload` (§6.7).
pub fn encode_ping(out: &mut impl BufMut, payload: [u8; 8], ack: bool) {
    let flags = if ack { flag::ACK } else { 0 };
    FrameHeader { length: 8, kind: kind::PING, flags, stream: 0 }.encode(out);
    out.put_slice(&payload);
}

/// Bytes of GOAWAY debug data at most: what keeps the frame within the
/// smallest SETTINGS_MAX_FRAME_SIZE.
const MAX_GOAWAY_DEBUG: usize = DEFAULT_MAX_FRAME_SIZE as usize - 8;

/// Appends a GOAWAY frame (§6.8): the last client stream that was or may
/// be processed, the code, and diagnostic data (cut to 16,376 bytes, so
/// the frame fits any client's SETTINGS_MAX_FRAME_SIZE).
pub fn encode_goaway(out: &mut impl BufMut, last_stream: u32, code: ErrorCode, debug: &[u8]) {
    let debug = debug.get(..MAX_GOAWAY_DEBUG).unwrap_or(debug);
    let length = u32::try_from(8 + debug.len()).unwrap_or(DEFAULT_MAX_FRAME_SIZE);
    FrameHeader { length, kind: kind::GOAWAY, flags: 0, stream: 0 }.encode(out);
    out.put_u32(last_stream & !RESERVED_BIT);
    out.put_u32(code.value());
    out.put_slice(debug);
}

/// Appends a WINDOW_UPDATE frame (§6.9) for `stream`, or for the connection
/// with 0.
///
/// # Errors
/// [`EncodeError::WindowIncrement`], writing nothing, for an `increment`
/// outside `1..=2^31-1`.
pub fn encode_window_update(
    out: &mut impl BufMut,
    stream: u32,
    increment: u32,
) -> Result<(), EncodeError> {
    if !(1..=MAX_WINDOW_SIZE).contains(&increment) {
        return Err(EncodeError::WindowIncrement(increment));
    }
    FrameHeader { length: 4, kind: kind::WINDOW_UPDATE, flags: 0, stream }.encode(out);
    out.put_u32(increment);
    Ok(())
}

/// Appends a RST_STREAM frame (§6.4).
pub fn encode_rst_stream(out: &mut impl BufMut, stream: u32, code: ErrorCode) {
    FrameHeader { length: 4, kind: kind::RST_STREAM, flags: 0, stream }.encode(out);
    out.put_u32(code.value());
}

/// The header of an unpadded DATA frame (§6.1) whose `length` payload bytes
/// the caller sends after it (e.g. in the same writev).
///
/// `length` must also be at most the client's SETTINGS_MAX_FRAME_SIZE and
/// the windows' room; that is the caller's to know.
///
/// # Errors
/// [`EncodeError::TooLong`] for a `length` over [`MAX_FRAME_LEN`], which
/// the frame's 24-bit length field cannot hold.
pub fn data_header(
    stream: u32,
    length: u32,
    end_stream: bool,
) -> Result<[u8; HEADER_LEN], EncodeError> {
    if length > MAX_FRAME_LEN {
        return Err(EncodeError::TooLong { length: length as usize, max: MAX_FRAME_LEN as usize });
    }
    let flags = if end_stream { flag::END_STREAM } else { 0 };
    Ok(FrameHeader { length, kind: kind::DATA, flags, stream }.to_bytes())
}

/// Appends a field block (already HPACK-encoded) as one HEADERS frame, or
/// HEADERS then CONTINUATION frames when it is longer than the client's
/// `max_frame_size` (§4.3, §6.10): END_STREAM on the HEADERS frame if
/// `end_stream`, END_HEADERS on the last frame. Nothing may be sent on the
/// connection between these frames.
///
/// `max_frame_size` is taken within its valid range
/// ([`DEFAULT_MAX_FRAME_SIZE`]`..=`[`MAX_FRAME_LEN`]).
pub fn encode_headers(
    out: &mut impl BufMut,
    stream: u32,
    block: &[u8],
    end_stream: bool,
    max_frame_size: u32,
) {
    let max = max_frame_size.clamp(DEFAULT_MAX_FRAME_SIZE, MAX_FRAME_LEN) as usize;
    let mut kind = kind::HEADERS;
    let mut flags = if end_stream { flag::END_STREAM } else { 0 };
    let mut rest = block;
    loop {
        let (fragment, after) = rest.split_at(rest.len().min(max));
        if after.is_empty() {
            flags |= flag::END_HEADERS;
        }
        // A fragment is at most `max`, which fits 24 bits.
        let length = u32::try_from(fragment.len()).unwrap_or(MAX_FRAME_LEN);
        FrameHeader { length, kind, flags, stream }.encode(out);
        out.put_slice(fragment);
        if after.is_empty() {
            return;
        }
        rest = after;
        kind = kind::CONTINUATION;
        flags = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A frame's bytes: header, then payload.
    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let length = u32::try_from(payload.len()).unwrap();
        let mut out = FrameHeader { length, kind, flags, stream }.to_bytes().to_vec();
        out.extend_from_slice(payload);
        out
    }

    /// Decodes the frame at the start of `bytes`, the rest its payload.
    fn parse(bytes: &[u8], max: u32) -> Result<Frame<'_>, FrameError> {
        let (header, payload) = bytes.split_first_chunk::<HEADER_LEN>().unwrap();
        Frame::parse(FrameHeader::parse(header), payload, max)
    }

    fn decode(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Result<Frame<'_>, FrameError> {
        // The payload is borrowed, not the frame's bytes, so the result
        // can outlive them.
        let length = u32::try_from(payload.len()).unwrap();
        Frame::parse(FrameHeader { length, kind, flags, stream }, payload, MAX_FRAME_LEN)
    }

    /// Splits a buffer of frames into (header, payload) pairs.
    fn frames(mut bytes: &[u8]) -> Vec<(FrameHeader, &[u8])> {
        let mut out = Vec::new();
        while let Some((header, rest)) = bytes.split_first_chunk::<HEADER_LEN>() {
            let header = FrameHeader::parse(header);
            let (payload, rest) = rest.split_at(header.length as usize);
            out.push((header, payload));
            bytes = rest;
        }
        assert!(bytes.is_empty());
        out
    }

    fn connection(code: ErrorCode, violation: Violation) -> FrameError {
        FrameError::connection(code, violation)
    }

    fn stream(id: u32, code: ErrorCode, violation: Violation) -> FrameError {
        FrameError::stream(id, code, violation)
    }

    const PROTOCOL: ErrorCode = ErrorCode::PROTOCOL_ERROR;
    const FRAME_SIZE: ErrorCode = ErrorCode::FRAME_SIZE_ERROR;

    #[test]
    fn preface_is_the_24_bytes_of_rfc9113_3_4() {
        assert_eq!(PREFACE.len(), 24);
        assert_eq!(&PREFACE[..], b"\x50\x52\x49\x20\x2a\x20\x48\x54\x54\x50\x2f\x32\x2e\x30\x0d\x0a\x0d\x0a\x53\x4d\x0d\x0a\x0d\x0a");
    }

    #[test]
    fn header_fields_and_reserved_bit_rfc9113_4_1() {
        let bytes = [0xab, 0xcd, 0xef, 0x42, 0x99, 0xff, 0xff, 0xff, 0xff];
        let header = FrameHeader::parse(&bytes);
        assert_eq!(
            header,
            FrameHeader { length: 0xab_cdef, kind: 0x42, flags: 0x99, stream: 0x7fff_ffff }
        );
        // Sent again, the reserved bit is clear.
        assert_eq!(header.to_bytes(), [0xab, 0xcd, 0xef, 0x42, 0x99, 0x7f, 0xff, 0xff, 0xff]);
        assert_eq!(
            FrameHeader::parse(&[0; 9]),
            FrameHeader { length: 0, kind: 0, flags: 0, stream: 0 }
        );
    }

    #[test]
    fn length_against_max_frame_size_rfc9113_4_2() {
        let too_large = connection(FRAME_SIZE, Violation::TooLarge);
        for kind in [kind::DATA, kind::HEADERS, kind::CONTINUATION, 0xfa] {
            for (len, max, ok) in [
                (0, DEFAULT_MAX_FRAME_SIZE, true),
                (DEFAULT_MAX_FRAME_SIZE, DEFAULT_MAX_FRAME_SIZE, true),
                (DEFAULT_MAX_FRAME_SIZE + 1, DEFAULT_MAX_FRAME_SIZE, false),
                (MAX_FRAME_LEN, DEFAULT_MAX_FRAME_SIZE, false),
                (MAX_FRAME_LEN, MAX_FRAME_LEN, true),
            ] {
                let payload = vec![0; len as usize];
                let bytes = frame(kind, 0, 1, &payload);
                let header = FrameHeader::parse(bytes.first_chunk().unwrap());
                assert_eq!(header.check_length(max).is_ok(), ok, "{kind} {len} {max}");
                match parse(&bytes, max) {
                    Ok(_) => assert!(ok),
                    Err(e) => assert!(!ok && e == too_large, "{kind} {len} {max}: {e}"),
                }
            }
        }
        // Checked from the header alone: also when no payload was read.
        let header = FrameHeader { length: MAX_FRAME_LEN, kind: kind::DATA, flags: 0, stream: 1 };
        assert_eq!(Frame::parse(header, &[], DEFAULT_MAX_FRAME_SIZE), Err(too_large));
        // A payload that is not the header's length is refused.
        let header = FrameHeader { length: 4, kind: kind::DATA, flags: 0, stream: 1 };
        assert_eq!(
            Frame::parse(header, &[0; 3], DEFAULT_MAX_FRAME_SIZE),
            Err(connection(FRAME_SIZE, Violation::PayloadMismatch))
        );
    }

    #[test]
    fn unknown_types_are_ignored_rfc9113_4_1_5_5() {
        for (flags, stream) in [(0, 0), (0xff, 0), (0xff, 7)] {
            assert_eq!(decode(0x0a, flags, stream, b"anything"), Ok(Frame::Unknown { kind: 0x0a }));
            assert_eq!(decode(0xff, flags, stream, b""), Ok(Frame::Unknown { kind: 0xff }));
        }
    }

    #[test]
    fn undefined_flags_are_ignored_rfc9113_4_1() {
        // PING defines only ACK; DATA not END_HEADERS or PRIORITY.
        assert_eq!(
            decode(kind::PING, !flag::ACK, 0, &[1; 8]),
            Ok(Frame::Ping { ack: false, payload: [1; 8] })
        );
        assert_eq!(
            decode(kind::DATA, flag::END_HEADERS | flag::PRIORITY | 0x80, 1, b"ab"),
            Ok(Frame::Data { stream: 1, end_stream: false, data: b"ab", flow_len: 2 })
        );
        // RST_STREAM defines no flags.
        assert_eq!(
            decode(kind::RST_STREAM, 0xff, 3, &[0, 0, 0, 8]),
            Ok(Frame::RstStream { stream: 3, code: ErrorCode::CANCEL })
        );
    }

    #[test]
    fn data_decodes_with_and_without_padding_rfc9113_6_1() {
        assert_eq!(
            decode(kind::DATA, flag::END_STREAM, 1, b"hello"),
            Ok(Frame::Data { stream: 1, end_stream: true, data: b"hello", flow_len: 5 })
        );
        assert_eq!(
            decode(kind::DATA, 0, 1, b""),
            Ok(Frame::Data { stream: 1, end_stream: false, data: b"", flow_len: 0 })
        );
        // Flow control counts the Pad Length and the padding.
        assert_eq!(
            decode(kind::DATA, flag::PADDED, 5, b"\x03hi\0\0\0"),
            Ok(Frame::Data { stream: 5, end_stream: false, data: b"hi", flow_len: 6 })
        );
        // All padding: the largest padding allowed.
        assert_eq!(
            decode(kind::DATA, flag::PADDED, 5, b"\x02\0\0"),
            Ok(Frame::Data { stream: 5, end_stream: false, data: b"", flow_len: 3 })
        );
        let payload = [&[255u8][..], &[0; 255]].concat();
        assert_eq!(
            decode(kind::DATA, flag::PADDED, 5, &payload),
            Ok(Frame::Data { stream: 5, end_stream: false, data: b"", flow_len: 256 })
        );
    }

    #[test]
    fn data_padding_not_shorter_than_payload_rfc9113_6_1() {
        let error = Err(connection(PROTOCOL, Violation::Padding));
        assert_eq!(decode(kind::DATA, flag::PADDED, 1, b"\x01"), error);
        assert_eq!(decode(kind::DATA, flag::PADDED, 1, b"\x03\0\0"), error);
        assert_eq!(decode(kind::DATA, flag::PADDED, 1, b"\xffabc"), error);
        // No room for the Pad Length itself (§4.2).
        assert_eq!(
            decode(kind::DATA, flag::PADDED, 1, b""),
            Err(connection(FRAME_SIZE, Violation::TooShort))
        );
    }

    #[test]
    fn stream_frames_on_stream_0_rfc9113_6_1_to_6_4_6_6_6_10() {
        let error = Err(connection(PROTOCOL, Violation::ZeroStream));
        assert_eq!(decode(kind::DATA, 0, 0, b"x"), error); // §6.1
        assert_eq!(decode(kind::HEADERS, flag::END_HEADERS, 0, b"\x82"), error); // §6.2
        assert_eq!(decode(kind::PRIORITY, 0, 0, &[0, 0, 0, 1, 15]), error); // §6.3
        assert_eq!(decode(kind::RST_STREAM, 0, 0, &[0; 4]), error); // §6.4
        assert_eq!(decode(kind::PUSH_PROMISE, 0, 0, &[0, 0, 0, 2]), error); // §6.6
        assert_eq!(decode(kind::CONTINUATION, 0, 0, b"\x82"), error); // §6.10
    }

    #[test]
    fn connection_frames_on_a_stream_rfc9113_6_5_6_7_6_8() {
        let error = Err(connection(PROTOCOL, Violation::NonZeroStream));
        assert_eq!(decode(kind::SETTINGS, 0, 1, b""), error); // §6.5
        assert_eq!(decode(kind::SETTINGS, flag::ACK, 1, b""), error);
        assert_eq!(decode(kind::PING, 0, 1, &[0; 8]), error); // §6.7
        assert_eq!(decode(kind::GOAWAY, 0, 1, &[0; 8]), error); // §6.8
    }

    #[test]
    fn headers_decode_rfc9113_6_2() {
        assert_eq!(
            decode(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, 1, b"\x82\x86"),
            Ok(Frame::Headers {
                stream: 1,
                end_stream: true,
                end_headers: true,
                priority: None,
                fragment: b"\x82\x86",
            })
        );
        // Padded with priority: Pad Length, the 5 priority bytes, the
        // fragment, the padding.
        let payload = b"\x02\x80\x00\x00\x03\x0f\x82\0\0";
        assert_eq!(
            decode(kind::HEADERS, flag::PADDED | flag::PRIORITY, 5, payload),
            Ok(Frame::Headers {
                stream: 5,
                end_stream: false,
                end_headers: false,
                priority: Some(Priority { dependency: 3, exclusive: true, weight: 16 }),
                fragment: b"\x82",
            })
        );
        // Everything after the fields may be padding.
        assert_eq!(
            decode(kind::HEADERS, flag::PADDED | flag::PRIORITY, 5, b"\x01\0\0\0\0\xff\0"),
            Ok(Frame::Headers {
                stream: 5,
                end_stream: false,
                end_headers: false,
                priority: Some(Priority { dependency: 0, exclusive: false, weight: 256 }),
                fragment: b"",
            })
        );
    }

    #[test]
    fn headers_padding_beyond_the_fragment_rfc9113_6_2() {
        let error = Err(connection(PROTOCOL, Violation::Padding));
        assert_eq!(decode(kind::HEADERS, flag::PADDED, 1, b"\x01"), error);
        assert_eq!(decode(kind::HEADERS, flag::PADDED, 1, b"\x05\x82\0\0\0"), error);
        // The priority fields are not room for padding.
        let payload = b"\x02\0\0\0\0\x0f\0";
        assert_eq!(decode(kind::HEADERS, flag::PADDED | flag::PRIORITY, 1, payload), error);
    }

    #[test]
    fn headers_too_short_for_their_fields_rfc9113_4_2() {
        let error = Err(connection(FRAME_SIZE, Violation::TooShort));
        assert_eq!(decode(kind::HEADERS, flag::PADDED, 1, b""), error);
        assert_eq!(decode(kind::HEADERS, flag::PRIORITY, 1, b"\0\0\0\0"), error);
        assert_eq!(decode(kind::HEADERS, flag::PRIORITY | flag::PADDED, 1, b"\0\0\0\0\0"), error);
    }

    #[test]
    fn headers_depending_on_their_stream_rfc9113_5_3_1() {
        // A stream error by §5.3.1, escalated to the connection (§5.4.1)
        // because the fragment would go undecoded (§4.3).
        assert_eq!(
            decode(kind::HEADERS, flag::PRIORITY | flag::END_HEADERS, 3, b"\0\0\0\x03\x0f\x82"),
            Err(connection(PROTOCOL, Violation::SelfDependency))
        );
        // The exclusive bit is not part of the id.
        assert_eq!(
            decode(kind::HEADERS, flag::PRIORITY, 3, b"\x80\0\0\x03\x0f"),
            Err(connection(PROTOCOL, Violation::SelfDependency))
        );
    }

    #[test]
    fn priority_decodes_rfc9113_6_3() {
        assert_eq!(
            decode(kind::PRIORITY, 0, 3, &[0, 0, 0, 1, 0]),
            Ok(Frame::Priority {
                stream: 3,
                priority: Priority { dependency: 1, exclusive: false, weight: 1 },
            })
        );
    }

    #[test]
    fn priority_length_other_than_5_rfc9113_6_3() {
        for len in [0, 4, 6, 100] {
            assert_eq!(
                decode(kind::PRIORITY, 0, 7, &vec![0; len]),
                Err(stream(7, FRAME_SIZE, Violation::BadLength)),
                "{len}"
            );
        }
    }

    #[test]
    fn priority_depending_on_its_stream_rfc9113_5_3_1() {
        assert_eq!(
            decode(kind::PRIORITY, 0, 7, &[0x80, 0, 0, 7, 0]),
            Err(stream(7, PROTOCOL, Violation::SelfDependency))
        );
    }

    #[test]
    fn rst_stream_length_other_than_4_rfc9113_6_4() {
        for len in [0, 3, 5, 8] {
            assert_eq!(
                decode(kind::RST_STREAM, 0, 1, &vec![0; len]),
                Err(connection(FRAME_SIZE, Violation::BadLength)),
                "{len}"
            );
        }
        // An unknown code is kept (§7).
        assert_eq!(
            decode(kind::RST_STREAM, 0, 1, &[0xde, 0xad, 0xbe, 0xef]),
            Ok(Frame::RstStream { stream: 1, code: ErrorCode::from(0xdead_beef) })
        );
    }

    #[test]
    fn settings_decode_rfc9113_6_5() {
        let payload = [
            0, 1, 0, 0, 0x10, 0, // HEADER_TABLE_SIZE 4096
            0, 2, 0, 0, 0, 0, // ENABLE_PUSH 0
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // unknown: any value
            0, 5, 0, 0xff, 0xff, 0xff, // MAX_FRAME_SIZE 2^24-1
        ];
        let Ok(Frame::Settings { ack: false, params }) = decode(kind::SETTINGS, 0, 0, &payload)
        else {
            panic!("not SETTINGS");
        };
        assert_eq!(params.len(), 4);
        assert_eq!(
            params.collect::<Vec<_>>(),
            [(1, 4096), (2, 0), (0xffff, u32::MAX), (5, MAX_FRAME_LEN)]
        );
        let Ok(Frame::Settings { ack: true, params }) = decode(kind::SETTINGS, flag::ACK, 0, b"")
        else {
            panic!("not a SETTINGS ACK");
        };
        assert_eq!(params.count(), 0);
    }

    #[test]
    fn settings_length_not_a_multiple_of_6_rfc9113_6_5() {
        for len in [1, 5, 7, 13] {
            assert_eq!(
                decode(kind::SETTINGS, 0, 0, &vec![0; len]),
                Err(connection(FRAME_SIZE, Violation::BadLength)),
                "{len}"
            );
        }
    }

    #[test]
    fn settings_ack_with_a_payload_rfc9113_6_5() {
        for len in [1, 6, 12] {
            assert_eq!(
                decode(kind::SETTINGS, flag::ACK, 0, &vec![0; len]),
                Err(connection(FRAME_SIZE, Violation::BadLength)),
                "{len}"
            );
        }
    }

    #[test]
    fn settings_values_out_of_range_rfc9113_6_5_2() {
        let param = |id: u16, value: u32| {
            let mut out = id.to_be_bytes().to_vec();
            out.extend_from_slice(&value.to_be_bytes());
            out
        };
        let cases = [
            (setting::ENABLE_PUSH, 0, None),
            (setting::ENABLE_PUSH, 1, None),
            (setting::ENABLE_PUSH, 2, Some(PROTOCOL)),
            (setting::ENABLE_PUSH, u32::MAX, Some(PROTOCOL)),
            (setting::INITIAL_WINDOW_SIZE, 0, None),
            (setting::INITIAL_WINDOW_SIZE, MAX_WINDOW_SIZE, None),
            (
                setting::INITIAL_WINDOW_SIZE,
                MAX_WINDOW_SIZE + 1,
                Some(ErrorCode::FLOW_CONTROL_ERROR),
            ),
            (setting::MAX_FRAME_SIZE, DEFAULT_MAX_FRAME_SIZE - 1, Some(PROTOCOL)),
            (setting::MAX_FRAME_SIZE, DEFAULT_MAX_FRAME_SIZE, None),
            (setting::MAX_FRAME_SIZE, MAX_FRAME_LEN, None),
            (setting::MAX_FRAME_SIZE, MAX_FRAME_LEN + 1, Some(PROTOCOL)),
            (setting::MAX_FRAME_SIZE, 0, Some(PROTOCOL)),
            (setting::HEADER_TABLE_SIZE, u32::MAX, None),
            (setting::MAX_CONCURRENT_STREAMS, 0, None),
            (setting::MAX_HEADER_LIST_SIZE, u32::MAX, None),
            (0, u32::MAX, None),
            (0x8, 7, None),
        ];
        for (id, value, code) in cases {
            let expected = match code {
                None => Ok(()),
                Some(code) => Err(connection(code, Violation::SettingValue(id))),
            };
            assert_eq!(Settings::default().apply(id, value), expected, "{id} {value}");
            // A bad value anywhere in the frame fails it.
            let payload = [param(setting::HEADER_TABLE_SIZE, 0), param(id, value)].concat();
            let decoded = decode(kind::SETTINGS, 0, 0, &payload).map(|_| ());
            assert_eq!(decoded, expected, "{id} {value} in a frame");
        }
    }

    #[test]
    fn settings_initial_values_rfc9113_6_5_2() {
        let s = Settings::default();
        assert_eq!(s.header_table_size, 4096);
        assert!(s.enable_push);
        assert_eq!(s.max_concurrent_streams, None);
        assert_eq!(s.initial_window_size, 65_535);
        assert_eq!(s.max_frame_size, 16_384);
        assert_eq!(s.max_header_list_size, None);
    }

    #[test]
    fn settings_apply_records_each_parameter() {
        let mut s = Settings::default();
        for (id, value) in
            [(1, 0), (2, 0), (3, 100), (4, MAX_WINDOW_SIZE), (5, MAX_FRAME_LEN), (6, 8192), (9, 1)]
        {
            s.apply(id, value).unwrap();
        }
        assert_eq!(
            s,
            Settings {
                header_table_size: 0,
                enable_push: false,
                max_concurrent_streams: Some(100),
                initial_window_size: MAX_WINDOW_SIZE,
                max_frame_size: MAX_FRAME_LEN,
                max_header_list_size: Some(8192),
            }
        );
        // A refused value changes nothing.
        let before = s;
        assert!(s.apply(setting::MAX_FRAME_SIZE, 1).is_err());
        assert_eq!(s, before);
    }

    #[test]
    fn push_promise_from_a_client_rfc9113_8_4() {
        for flags in [0, flag::END_HEADERS, flag::PADDED] {
            assert_eq!(
                decode(kind::PUSH_PROMISE, flags, 1, &[0, 0, 0, 2, 0x82]),
                Err(connection(PROTOCOL, Violation::PushPromise))
            );
        }
    }

    #[test]
    fn ping_length_other_than_8_rfc9113_6_7() {
        for len in [0, 7, 9, 16] {
            assert_eq!(
                decode(kind::PING, 0, 0, &vec![0; len]),
                Err(connection(FRAME_SIZE, Violation::BadLength)),
                "{len}"
            );
        }
        assert_eq!(
            decode(kind::PING, flag::ACK, 0, b"12345678"),
            Ok(Frame::Ping { ack: true, payload: *b"12345678" })
        );
    }

    #[test]
    fn goaway_shorter_than_8_rfc9113_6_8() {
        for len in [0, 4, 7] {
            assert_eq!(
                decode(kind::GOAWAY, 0, 0, &vec![0; len]),
                Err(connection(FRAME_SIZE, Violation::TooShort)),
                "{len}"
            );
        }
        // The reserved bit of the last stream id is ignored; an unknown
        // code is kept (§7).
        assert_eq!(
            decode(kind::GOAWAY, 0, 0, b"\xff\xff\xff\xff\0\0\0\x2adebug"),
            Ok(Frame::GoAway {
                last_stream: 0x7fff_ffff,
                code: ErrorCode::from(0x2a),
                debug: b"debug",
            })
        );
    }

    #[test]
    fn window_update_length_other_than_4_rfc9113_6_9() {
        for stream_id in [0, 1] {
            for len in [0, 3, 5, 8] {
                assert_eq!(
                    decode(kind::WINDOW_UPDATE, 0, stream_id, &vec![1; len]),
                    Err(connection(FRAME_SIZE, Violation::BadLength)),
                    "{stream_id} {len}"
                );
            }
        }
    }

    #[test]
    fn window_update_increment_of_0_rfc9113_6_9() {
        let zero = 0u32.to_be_bytes();
        assert_eq!(
            decode(kind::WINDOW_UPDATE, 0, 0, &zero),
            Err(connection(PROTOCOL, Violation::ZeroIncrement))
        );
        assert_eq!(
            decode(kind::WINDOW_UPDATE, 0, 9, &zero),
            Err(stream(9, PROTOCOL, Violation::ZeroIncrement))
        );
        // The reserved bit is ignored (§6.9): 2^31 is an increment of 0.
        assert_eq!(
            decode(kind::WINDOW_UPDATE, 0, 9, &(1u32 << 31).to_be_bytes()),
            Err(stream(9, PROTOCOL, Violation::ZeroIncrement))
        );
    }

    #[test]
    fn window_update_increments_rfc9113_6_9() {
        for (wire, increment) in [(1, 1), (MAX_WINDOW_SIZE, MAX_WINDOW_SIZE), ((1 << 31) + 1, 1)] {
            for stream_id in [0, 1] {
                assert_eq!(
                    decode(kind::WINDOW_UPDATE, 0, stream_id, &u32::to_be_bytes(wire)),
                    Ok(Frame::WindowUpdate { stream: stream_id, increment }),
                    "{wire}"
                );
            }
        }
    }

    #[test]
    fn continuation_decodes_rfc9113_6_10() {
        assert_eq!(
            decode(kind::CONTINUATION, flag::END_HEADERS | flag::PADDED, 1, b"\x01\x82"),
            Ok(Frame::Continuation { stream: 1, end_headers: true, fragment: b"\x01\x82" })
        );
    }

    #[test]
    fn error_codes_rfc9113_7() {
        let named = [
            (ErrorCode::NO_ERROR, 0x0, "NO_ERROR"),
            (ErrorCode::PROTOCOL_ERROR, 0x1, "PROTOCOL_ERROR"),
            (ErrorCode::INTERNAL_ERROR, 0x2, "INTERNAL_ERROR"),
            (ErrorCode::FLOW_CONTROL_ERROR, 0x3, "FLOW_CONTROL_ERROR"),
            (ErrorCode::SETTINGS_TIMEOUT, 0x4, "SETTINGS_TIMEOUT"),
            (ErrorCode::STREAM_CLOSED, 0x5, "STREAM_CLOSED"),
            (ErrorCode::FRAME_SIZE_ERROR, 0x6, "FRAME_SIZE_ERROR"),
            (ErrorCode::REFUSED_STREAM, 0x7, "REFUSED_STREAM"),
            (ErrorCode::CANCEL, 0x8, "CANCEL"),
            (ErrorCode::COMPRESSION_ERROR, 0x9, "COMPRESSION_ERROR"),
            (ErrorCode::CONNECT_ERROR, 0xa, "CONNECT_ERROR"),
            (ErrorCode::ENHANCE_YOUR_CALM, 0xb, "ENHANCE_YOUR_CALM"),
            (ErrorCode::INADEQUATE_SECURITY, 0xc, "INADEQUATE_SECURITY"),
            (ErrorCode::HTTP_1_1_REQUIRED, 0xd, "HTTP_1_1_REQUIRED"),
        ];
        for (code, value, name) in named {
            assert_eq!(code.value(), value);
            assert_eq!(ErrorCode::from(value), code);
            assert_eq!(code.name(), Some(name));
            assert_eq!(code.to_string(), name);
        }
        // Unknown codes: kept, named by value.
        let unknown = ErrorCode::from(0xe);
        assert_eq!((unknown.value(), unknown.name()), (0xe, None));
        assert_eq!(u32::from(ErrorCode::from(u32::MAX)), u32::MAX);
        assert_eq!(format!("{unknown:?}"), "unknown error code 0xe");
    }

    #[test]
    fn errors_say_scope_code_and_rule() {
        let e = stream(7, PROTOCOL, Violation::ZeroIncrement);
        assert_eq!(
            (e.scope(), e.code(), e.violation()),
            (ErrorScope::Stream(7), PROTOCOL, Violation::ZeroIncrement)
        );
        assert!(!e.is_connection());
        assert_eq!(
            e.to_string(),
            "stream 7 error PROTOCOL_ERROR: WINDOW_UPDATE increment of 0 (RFC 9113 §6.9)"
        );
        let e = connection(ErrorCode::FLOW_CONTROL_ERROR, Violation::SettingValue(4));
        assert!(e.is_connection());
        assert!(e.to_string().ends_with("(identifier 0x4)"), "{e}");
    }

    #[test]
    fn settings_round_trip() {
        let mut out = Vec::new();
        encode_settings(&mut out, &[(setting::MAX_CONCURRENT_STREAMS, 100), (0x42, 7)]).unwrap();
        assert_eq!(out.len(), HEADER_LEN + 12);
        let Ok(Frame::Settings { ack: false, params }) = parse(&out, DEFAULT_MAX_FRAME_SIZE) else {
            panic!("not SETTINGS");
        };
        assert_eq!(params.collect::<Vec<_>>(), [(3, 100), (0x42, 7)]);

        out.clear();
        encode_settings(&mut out, &[]).unwrap();
        assert_eq!(out, [0, 0, 0, 4, 0, 0, 0, 0, 0]);
        out.clear();
        encode_settings_ack(&mut out);
        assert_eq!(out, [0, 0, 0, 4, 1, 0, 0, 0, 0]);
        assert!(matches!(
            parse(&out, DEFAULT_MAX_FRAME_SIZE),
            Ok(Frame::Settings { ack: true, params }) if params.len() == 0
        ));
    }

    #[test]
    fn settings_changes_round_trip() {
        let ours = Settings {
            enable_push: false,
            max_concurrent_streams: Some(128),
            initial_window_size: 1 << 20,
            max_frame_size: 1 << 16,
            ..Settings::INITIAL
        };
        assert_eq!(
            ours.changes(&Settings::INITIAL).collect::<Vec<_>>(),
            [(2, 0), (3, 128), (4, 1 << 20), (5, 1 << 16)]
        );
        let mut out = Vec::new();
        ours.encode_changes(&Settings::INITIAL, &mut out);
        let Ok(Frame::Settings { ack: false, params }) = parse(&out, DEFAULT_MAX_FRAME_SIZE) else {
            panic!("not SETTINGS");
        };
        let mut peer = Settings::INITIAL;
        for (id, value) in params {
            peer.apply(id, value).unwrap();
        }
        assert_eq!(peer, ours);
        // No change: an empty SETTINGS frame, still sent (§3.4).
        out.clear();
        Settings::INITIAL.encode_changes(&Settings::INITIAL, &mut out);
        assert_eq!(out, [0, 0, 0, 4, 0, 0, 0, 0, 0]);
        // Back to unlimited: the largest value.
        assert_eq!(Settings::INITIAL.changes(&ours).nth(1), Some((3, u32::MAX)));
    }

    #[test]
    fn ping_round_trip() {
        for ack in [false, true] {
            let mut out = Vec::new();
            encode_ping(&mut out, *b"\0\x01\x02\x03\x04\x05\x06\x07", ack);
            assert_eq!(
                parse(&out, DEFAULT_MAX_FRAME_SIZE),
                Ok(Frame::Ping { ack, payload: *b"\0\x01\x02\x03\x04\x05\x06\x07" })
            );
        }
    }

    #[test]
    fn goaway_round_trip() {
        let mut out = Vec::new();
        encode_goaway(&mut out, 41, ErrorCode::ENHANCE_YOUR_CALM, b"too many resets");
        assert_eq!(
            parse(&out, DEFAULT_MAX_FRAME_SIZE),
            Ok(Frame::GoAway {
                last_stream: 41,
                code: ErrorCode::ENHANCE_YOUR_CALM,
                debug: b"too many resets",
            })
        );
        // Debug data is cut so the frame fits the smallest max frame size;
        // the reserved bit of the id is clear.
        out.clear();
        encode_goaway(&mut out, u32::MAX, ErrorCode::NO_ERROR, &[b'x'; 20_000]);
        assert_eq!(out.len(), HEADER_LEN + DEFAULT_MAX_FRAME_SIZE as usize);
        assert_eq!(&out[HEADER_LEN..HEADER_LEN + 4], [0x7f, 0xff, 0xff, 0xff]);
        assert!(matches!(
            parse(&out, DEFAULT_MAX_FRAME_SIZE),
            Ok(Frame::GoAway { last_stream: 0x7fff_ffff, code: ErrorCode::NO_ERROR, debug })
                if debug.len() == MAX_GOAWAY_DEBUG
        ));
    }

    #[test]
    fn window_update_round_trip() {
        for (stream_id, increment) in [(0, 1), (1, 1), (3, MAX_WINDOW_SIZE), (0, MAX_WINDOW_SIZE)] {
            let mut out = Vec::new();
            encode_window_update(&mut out, stream_id, increment).unwrap();
            assert_eq!(
                parse(&out, DEFAULT_MAX_FRAME_SIZE),
                Ok(Frame::WindowUpdate { stream: stream_id, increment })
            );
        }
    }

    #[test]
    fn rst_stream_round_trip() {
        for code in [ErrorCode::NO_ERROR, ErrorCode::REFUSED_STREAM, ErrorCode::from(0x77)] {
            let mut out = Vec::new();
            encode_rst_stream(&mut out, 0x7fff_ffff, code);
            assert_eq!(
                parse(&out, DEFAULT_MAX_FRAME_SIZE),
                Ok(Frame::RstStream { stream: 0x7fff_ffff, code })
            );
        }
    }

    /// Values a frame cannot carry are refused with a typed error, and
    /// nothing is written: never a frame the peer would take for another.
    #[test]
    fn encoders_refuse_what_a_frame_cannot_carry() {
        let mut out = Vec::new();
        for increment in [0, MAX_WINDOW_SIZE + 1, u32::MAX] {
            assert_eq!(
                encode_window_update(&mut out, 1, increment),
                Err(EncodeError::WindowIncrement(increment))
            );
        }
        assert_eq!(
            data_header(1, MAX_FRAME_LEN + 1, true),
            Err(EncodeError::TooLong { length: 1 << 24, max: MAX_FRAME_LEN as usize })
        );
        let most = vec![(setting::MAX_CONCURRENT_STREAMS, 1); DEFAULT_MAX_FRAME_SIZE as usize / 6];
        let one_more = [&most[..], &[(setting::MAX_CONCURRENT_STREAMS, 1)]].concat();
        assert_eq!(
            encode_settings(&mut out, &one_more),
            Err(EncodeError::TooLong { length: 16_386, max: 16_384 })
        );
        assert!(out.is_empty(), "a refused frame wrote {} bytes", out.len());
        // The edges themselves are frames.
        encode_window_update(&mut out, 1, MAX_WINDOW_SIZE).unwrap();
        encode_window_update(&mut out, 0, 1).unwrap();
        encode_settings(&mut out, &most).unwrap();
        assert_eq!(out.len(), 2 * (HEADER_LEN + 4) + HEADER_LEN + 16_380);
        assert!(EncodeError::WindowIncrement(0).to_string().contains("1..=2^31-1"));
    }

    #[test]
    fn data_header_round_trip() {
        for (length, end_stream) in [(0, true), (1, false), (DEFAULT_MAX_FRAME_SIZE, true)] {
            let mut out = data_header(7, length, end_stream).unwrap().to_vec();
            out.extend((0..length).map(|i| i as u8));
            assert_eq!(
                parse(&out, DEFAULT_MAX_FRAME_SIZE),
                Ok(Frame::Data {
                    stream: 7,
                    end_stream,
                    data: &out[HEADER_LEN..],
                    flow_len: length
                })
            );
        }
        let header = FrameHeader::parse(&data_header(1, MAX_FRAME_LEN, false).unwrap());
        assert_eq!(header.length, MAX_FRAME_LEN);
    }

    /// Decodes HEADERS + CONTINUATION frames back into the block, checking
    /// the flags and the stream of each.
    fn reassemble(out: &[u8], stream_id: u32, end_stream: bool, max: u32) -> (Vec<u8>, usize) {
        let frames = frames(out);
        let mut block = Vec::new();
        for (i, &(header, payload)) in frames.iter().enumerate() {
            let last = i + 1 == frames.len();
            match Frame::parse(header, payload, max).unwrap() {
                Frame::Headers {
                    stream: s,
                    end_stream: e,
                    end_headers,
                    priority: None,
                    fragment,
                } if i == 0 => {
                    assert_eq!((s, e, end_headers), (stream_id, end_stream, last));
                    block.extend_from_slice(fragment);
                }
                Frame::Continuation { stream: s, end_headers, fragment } if i > 0 => {
                    assert_eq!((s, end_headers), (stream_id, last));
                    block.extend_from_slice(fragment);
                }
                other => panic!("frame {i}: {other:?}"),
            }
        }
        (block, frames.len())
    }

    #[test]
    fn headers_split_into_continuations_rfc9113_6_10() {
        let max = DEFAULT_MAX_FRAME_SIZE;
        let m = max as usize;
        for (len, count) in [(0, 1), (1, 1), (m, 1), (m + 1, 2), (2 * m, 2), (3 * m + 5, 4)] {
            for end_stream in [false, true] {
                let block: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
                let mut out = Vec::new();
                encode_headers(&mut out, 3, &block, end_stream, max);
                let (decoded, frames) = reassemble(&out, 3, end_stream, max);
                assert_eq!((decoded == block, frames), (true, count), "{len}");
            }
        }
        // An invalid max frame size is taken within range, never 0.
        let mut out = Vec::new();
        encode_headers(&mut out, 1, &[0; 20_000], false, 0);
        assert_eq!(reassemble(&out, 1, false, DEFAULT_MAX_FRAME_SIZE).1, 2);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1024, failure_persistence: None, ..ProptestConfig::default() })]

        /// Any header and payload: a frame or an error, never a panic, and
        /// a frame's slices lie within the payload.
        #[test]
        fn arbitrary_frames_are_a_verdict(
            kind in prop_oneof![0u8..=9, any::<u8>()],
            flags in any::<u8>(),
            stream_id in prop_oneof![Just(0u32), 1u32..4, any::<u32>()],
            payload in proptest::collection::vec(any::<u8>(), 0..64),
            max in prop_oneof![Just(DEFAULT_MAX_FRAME_SIZE), 0u32..64],
        ) {
            let length = u32::try_from(payload.len()).unwrap();
            let header = FrameHeader { length, kind, flags, stream: stream_id & !RESERVED_BIT };
            match Frame::parse(header, &payload, max) {
                Ok(Frame::Data { data, flow_len, .. }) => {
                    prop_assert!(data.len() <= flow_len as usize);
                    prop_assert_eq!(flow_len, length);
                }
                Ok(Frame::Headers { fragment, .. } | Frame::Continuation { fragment, .. }) => {
                    prop_assert!(fragment.len() <= payload.len());
                }
                Ok(Frame::Settings { params, .. }) => {
                    let mut s = Settings::INITIAL;
                    for (id, value) in params {
                        prop_assert!(s.apply(id, value).is_ok());
                    }
                }
                Ok(Frame::WindowUpdate { increment, .. }) => {
                    prop_assert!((1..=MAX_WINDOW_SIZE).contains(&increment));
                }
                Ok(_) => {}
                Err(e) => {
                    if let ErrorScope::Stream(id) = e.scope() {
                        prop_assert_eq!(id, header.stream);
                        prop_assert!(id != 0);
                    }
                }
            }
        }

        /// Random bytes read as a stream of frames never panic.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let mut rest = &bytes[..];
            while let Some((header, after)) = rest.split_first_chunk::<HEADER_LEN>() {
                let header = FrameHeader::parse(header);
                let payload = after.get(..header.length as usize).unwrap_or(after);
                let _ = Frame::parse(header, payload, DEFAULT_MAX_FRAME_SIZE);
                rest = &after[payload.len()..];
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

        /// Any block, any max frame size: the frames reassemble to it.
        #[test]
        fn headers_reassemble(
            block in proptest::collection::vec(any::<u8>(), 0..40_000),
            max in DEFAULT_MAX_FRAME_SIZE..=DEFAULT_MAX_FRAME_SIZE + 100,
            end_stream in any::<bool>(),
            stream_id in 1u32..=MAX_WINDOW_SIZE,
        ) {
            let mut out = Vec::new();
            encode_headers(&mut out, stream_id, &block, end_stream, max);
            let (decoded, frames) = reassemble(&out, stream_id, end_stream, max);
            prop_assert_eq!(decoded, block.clone());
            prop_assert_eq!(frames, block.len().div_ceil(max as usize).max(1));
        }
    }
}
