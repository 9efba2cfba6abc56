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

mod decode;
mod encode;
mod error;
mod settings;
#[cfg(test)]
mod tests;

pub use self::decode::{Frame, Priority, SettingsParams};
pub use self::encode::{
    data_header, encode_goaway, encode_headers, encode_ping, encode_rst_stream, encode_settings,
    encode_settings_ack, encode_window_update,
};
pub use self::error::{EncodeError, ErrorCode, ErrorScope, FrameError, Violation};
pub use self::settings::Settings;

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
    /// # Errors
    /// [`EncodeError::TooLong`] for a `length` over [`MAX_FRAME_LEN`]:
    /// the field holds 24 bits.
    pub fn to_bytes(&self) -> Result<[u8; HEADER_LEN], EncodeError> {
        if self.length > MAX_FRAME_LEN {
            let (length, max) = (self.length as usize, MAX_FRAME_LEN as usize);
            return Err(EncodeError::TooLong { length, max });
        }
        Ok(self.bytes())
    }

    /// Appends this header to `out`, or nothing on an error (see
    /// [`to_bytes`](Self::to_bytes)).
    ///
    /// # Errors
    /// [`EncodeError::TooLong`] for a `length` over [`MAX_FRAME_LEN`].
    pub fn encode(&self, out: &mut impl BufMut) -> Result<(), EncodeError> {
        out.put_slice(&self.to_bytes()?);
        Ok(())
    }

    /// The header's bytes, for the encoders here, whose lengths are within
    /// [`MAX_FRAME_LEN`] by construction.
    pub(super) fn bytes(&self) -> [u8; HEADER_LEN] {
        debug_assert!(self.length <= MAX_FRAME_LEN, "frame length {} over 2^24-1", self.length);
        let [_, l0, l1, l2] = self.length.to_be_bytes();
        let [s0, s1, s2, s3] = (self.stream & !RESERVED_BIT).to_be_bytes();
        [l0, l1, l2, self.kind, self.flags, s0, s1, s2, s3]
    }

    /// Appends [`bytes`](Self::bytes) to `out`.
    pub(super) fn put(&self, out: &mut impl BufMut) {
        out.put_slice(&self.bytes());
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
