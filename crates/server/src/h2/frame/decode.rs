//! A client's frame decoded into a borrowed view, with every per-frame
//! rule of §6 checked.

use super::settings::validate_setting;
use super::*;

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
