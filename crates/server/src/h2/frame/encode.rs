//! The frames a server sends, encoded.

use bytes::BufMut;

use super::*;

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
    FrameHeader { length, kind: kind::SETTINGS, flags: 0, stream: 0 }.put(out);
    for &(id, value) in params {
        out.put_u16(id);
        out.put_u32(value);
    }
    Ok(())
}

/// Appends a SETTINGS frame acknowledging the client's (§6.5.3).
pub fn encode_settings_ack(out: &mut impl BufMut) {
    FrameHeader { length: 0, kind: kind::SETTINGS, flags: flag::ACK, stream: 0 }.put(out);
}

/// Appends a PING frame: with `ack`, the answer to a client's PING, echoing
/// its `payload` (§6.7).
pub fn encode_ping(out: &mut impl BufMut, payload: [u8; 8], ack: bool) {
    let flags = if ack { flag::ACK } else { 0 };
    FrameHeader { length: 8, kind: kind::PING, flags, stream: 0 }.put(out);
    out.put_slice(&payload);
}

/// Bytes of GOAWAY debug data at most: what keeps the frame within the
/// smallest SETTINGS_MAX_FRAME_SIZE.
pub(super) const MAX_GOAWAY_DEBUG: usize = DEFAULT_MAX_FRAME_SIZE as usize - 8;

/// Appends a GOAWAY frame (§6.8): the last client stream that was or may
/// be processed, the code, and diagnostic data (cut to 16,376 bytes, so
/// the frame fits any client's SETTINGS_MAX_FRAME_SIZE).
pub fn encode_goaway(out: &mut impl BufMut, last_stream: u32, code: ErrorCode, debug: &[u8]) {
    let debug = debug.get(..MAX_GOAWAY_DEBUG).unwrap_or(debug);
    let length = u32::try_from(8 + debug.len()).unwrap_or(DEFAULT_MAX_FRAME_SIZE);
    FrameHeader { length, kind: kind::GOAWAY, flags: 0, stream: 0 }.put(out);
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
    FrameHeader { length: 4, kind: kind::WINDOW_UPDATE, flags: 0, stream }.put(out);
    out.put_u32(increment);
    Ok(())
}

/// Appends a RST_STREAM frame (§6.4).
pub fn encode_rst_stream(out: &mut impl BufMut, stream: u32, code: ErrorCode) {
    FrameHeader { length: 4, kind: kind::RST_STREAM, flags: 0, stream }.put(out);
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
    Ok(FrameHeader { length, kind: kind::DATA, flags, stream }.bytes())
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
        FrameHeader { length, kind, flags, stream }.put(out);
        out.put_slice(fragment);
        if after.is_empty() {
            return;
        }
        rest = after;
        kind = kind::CONTINUATION;
        flags = 0;
    }
}
