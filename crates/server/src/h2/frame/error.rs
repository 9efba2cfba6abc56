//! What goes wrong with a frame: the error codes of §7, the rule a
//! received frame broke ([`FrameError`]), and a frame the encoders refuse
//! ([`EncodeError`]).

use std::fmt;

/// An HTTP/2 error code (§7), as carried by RST_STREAM and GOAWAY.
///
/// A code this module does not know is kept as it is: unknown codes MUST
/// NOT trigger any special behavior (§7), so receiving one is no error.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrorCode(pub(super) u32);

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
    /// The payload given to [`Frame::parse`](super::Frame::parse) is not the header's length
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
    pub(super) fn connection(code: ErrorCode, violation: Violation) -> Self {
        Self { scope: ErrorScope::Connection, code, violation }
    }

    pub(super) fn stream(stream: u32, code: ErrorCode, violation: Violation) -> Self {
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
    /// field holds 24 bits ([`MAX_FRAME_LEN`](super::MAX_FRAME_LEN)); a SETTINGS frame must fit
    /// the smallest SETTINGS_MAX_FRAME_SIZE ([`DEFAULT_MAX_FRAME_SIZE`](super::DEFAULT_MAX_FRAME_SIZE)).
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
