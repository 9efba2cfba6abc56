//! Response body data held before it goes out, and how a whole held
//! answer is framed.

use bytes::{Buf, Bytes};
use http_body::SizeHint;

use crate::handler::ResponseError;
use crate::response::Responder;

/// A response body at most this long, whose frames are all ready, is
/// written by the worker at once; a longer one is streamed by a task.
pub(super) const INLINE_LIMIT: u64 = 1 << 20;

/// The most a task collects of a body's ready frames before it starts
/// streaming them, unless the body's size is exact and at most
/// [`INLINE_LIMIT`] (see [`hold_limit`]).
const HOLD_LIMIT: usize = 64 * 1024;

/// How much of `body`'s ready frames to collect before streaming them: all
/// of a body whose size is exact and at most [`INLINE_LIMIT`], so that it
/// goes out with `Content-Length` as it would had the service answered
/// without awaiting (a `Json` after a database call); else
/// [`HOLD_LIMIT`].
pub(super) fn hold_limit(body: &SizeHint) -> usize {
    match body.exact() {
        Some(length) if length <= INLINE_LIMIT => INLINE_LIMIT as usize,
        _ => HOLD_LIMIT,
    }
}

/// How a whole (held) answer is framed ([`Held::framing`]).
pub(super) enum Framing<'a> {
    /// This body, with its length.
    Sized(&'a [u8]),
    /// A `HEAD` answer's length, with no body.
    Length(u64),
    /// A `HEAD` answer with no framing field.
    NoField,
}

/// Body data received but not yet written.
pub(super) enum Held<D> {
    Nothing,
    /// One frame's data, in one piece.
    One(D),
    /// Several frames' data, copied.
    Many(Vec<u8>),
}

impl<D: Buf> Held<D> {
    pub(super) fn with(self, data: D) -> Self {
        let mut held = self;
        held.push(data);
        held
    }

    pub(super) fn push(&mut self, data: D) {
        if !data.has_remaining() {
            return;
        }
        match self {
            Self::Nothing if data.chunk().len() == data.remaining() => *self = Self::One(data),
            Self::Nothing => {
                let mut bytes = Vec::with_capacity(data.remaining());
                put(&mut bytes, data);
                *self = Self::Many(bytes);
            }
            Self::One(first) => {
                let mut bytes = Vec::with_capacity(first.remaining() + data.remaining());
                bytes.extend_from_slice(first.chunk());
                put(&mut bytes, data);
                *self = Self::Many(bytes);
            }
            Self::Many(bytes) => put(bytes, data),
        }
    }

    fn as_slice(&self) -> &[u8] {
        match self {
            Self::Nothing => &[],
            Self::One(data) => data.chunk(),
            Self::Many(bytes) => bytes,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.as_slice().len()
    }

    /// How a whole answer is framed: what is held, with its length; or
    /// for `HEAD`, whose body axum empties, the service's length alone
    /// (`content-length`, set by axum from the body's exact size before
    /// emptying it) or no framing field at all when there is none: either
    /// a `GET` body that streams, where `Content-Length: 0` would say the
    /// resource is empty, or an empty body axum did not empty, such as its
    /// `404` fallback's, where `Transfer-Encoding: chunked` would say `GET`
    /// streams.
    pub(super) fn framing(&self, head_request: bool, length: Option<u64>) -> Framing<'_> {
        match (head_request, self.len(), length) {
            (true, 0, Some(length)) => Framing::Length(length),
            (true, 0, None) => Framing::NoField,
            _ => Framing::Sized(self.as_slice()),
        }
    }

    /// What is held, as one `Bytes` (no copy for one `Bytes` frame).
    pub(super) fn into_bytes(self) -> Bytes {
        match self {
            Self::Nothing => Bytes::new(),
            Self::One(mut data) => data.copy_to_bytes(data.remaining()),
            Self::Many(bytes) => Bytes::from(bytes),
        }
    }

    /// Streams what is held and holds nothing more.
    pub(super) async fn write_to(
        &mut self,
        responder: &mut Responder,
    ) -> Result<(), ResponseError> {
        let held = std::mem::replace(self, Self::Nothing);
        if !matches!(held, Self::Nothing) {
            responder.write(held.as_slice()).await?;
        }
        Ok(())
    }
}

/// Appends all of `data`.
fn put(bytes: &mut Vec<u8>, mut data: impl Buf) {
    while data.has_remaining() {
        let chunk = data.chunk();
        bytes.extend_from_slice(chunk);
        let n = chunk.len();
        data.advance(n);
    }
}
