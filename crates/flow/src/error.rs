//! Flow-control errors, each carrying its RFC 9113 error code.

use core::fmt;

/// The HTTP/2 error codes flow control can raise (RFC 9113 section 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// `PROTOCOL_ERROR` (0x1): a WINDOW_UPDATE with an increment of 0.
    ProtocolError,
    /// `FLOW_CONTROL_ERROR` (0x3): a window exceeded or overflowed.
    FlowControlError,
}

impl ErrorCode {
    /// The code's value on the wire (for RST_STREAM and GOAWAY frames).
    pub const fn value(self) -> u32 {
        match self {
            Self::ProtocolError => 0x1,
            Self::FlowControlError => 0x3,
        }
    }
}

/// Why a flow-control operation was refused. Every refusal leaves the
/// window unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FlowError {
    /// The peer sent more than the window allows (RFC 9113 6.9.1); also
    /// after an abort, since the peer broke the rule either way.
    WindowExceeded {
        /// Bytes in the frame.
        requested: u32,
        /// Bytes the window allowed.
        available: u32,
    },
    /// A WINDOW_UPDATE with an increment of 0 (RFC 9113 6.9).
    ZeroIncrement,
    /// A WINDOW_UPDATE or SETTINGS change would take the window past
    /// 2^31-1 (RFC 9113 6.9.1, 6.9.2).
    WindowOverflow {
        /// The window the change would produce.
        would_be: i64,
    },
    /// A SETTINGS change would take a send window below -2^31.
    WindowUnderflow {
        /// The window the change would produce.
        would_be: i64,
    },
    /// More bytes were released than the window had consumed (a caller's
    /// accounting bug; the window would exceed its initial size).
    OverRelease {
        /// Bytes released.
        released: u32,
        /// Bytes consumed and not yet released.
        outstanding: u32,
    },
    /// More send credit was settled ([`sent`](crate::OutputWindow::sent) or
    /// [`give_back`](crate::OutputWindow::give_back)) than is held (a
    /// caller's accounting bug, never sent to a peer).
    NotHeld {
        /// Bytes settled.
        requested: u32,
        /// Bytes held and not yet settled.
        held: u32,
    },
    /// An initial window size above 2^31-1.
    InitialTooLarge {
        /// The size given.
        initial: u32,
    },
    /// A receive window's announcement threshold that its credit could
    /// never pass: at or above the initial window (except 0 for a window of
    /// 0). Credit is announced once more than `threshold` bytes are
    /// pending, and a peer that keeps to the window never leaves more than
    /// `initial` pending, so it would stall for good. A local configuration
    /// error, never sent to a peer.
    ThresholdTooLarge {
        /// The threshold given.
        threshold: u32,
        /// The initial window it was given with.
        initial: u32,
    },
}

impl FlowError {
    /// The RFC 9113 error code to send for this error (FLOW_CONTROL_ERROR
    /// for the local [`ThresholdTooLarge`](Self::ThresholdTooLarge) and
    /// [`NotHeld`](Self::NotHeld), which are never sent).
    pub const fn code(&self) -> ErrorCode {
        match self {
            Self::ZeroIncrement => ErrorCode::ProtocolError,
            _ => ErrorCode::FlowControlError,
        }
    }
}

impl fmt::Display for FlowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::WindowExceeded { requested, available } => {
                write!(f, "{requested} bytes sent into a window of {available}")
            }
            Self::ZeroIncrement => f.write_str("window update with an increment of 0"),
            Self::WindowOverflow { would_be } => {
                write!(f, "window would be {would_be}, above 2^31-1")
            }
            Self::WindowUnderflow { would_be } => {
                write!(f, "window would be {would_be}, below -2^31")
            }
            Self::OverRelease { released, outstanding } => {
                write!(f, "released {released} bytes; only {outstanding} were consumed")
            }
            Self::NotHeld { requested, held } => {
                write!(f, "settled {requested} bytes of send credit; only {held} are held")
            }
            Self::InitialTooLarge { initial } => {
                write!(f, "initial window {initial} is above 2^31-1")
            }
            Self::ThresholdTooLarge { threshold, initial } => write!(
                f,
                "update threshold {threshold} is not below the initial window {initial}: \
                 credit would never be announced"
            ),
        }
    }
}

impl std::error::Error for FlowError {}
