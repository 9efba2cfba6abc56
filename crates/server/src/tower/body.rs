//! The request body a service reads: an `http_body::Body` over the
//! connection's input pipe.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use bytes::{BufMut, Bytes, BytesMut};
use http_body::{Frame, SizeHint};

use crate::body::RequestBody;
use crate::handler::BodyLength;
use crate::trailers::Trailers;

/// The most one request-body frame holds.
const READ_PIECE: usize = 256 * 1024;

/// [`READ_PIECE`] for an HTTP/2 stream's body: a connection carries many
/// streams at once, each sent on within its (default 64 KiB) window, so
/// a frame (and the buffer it is cut from) holds about one window.
const STREAM_READ_PIECE: usize = 64 * 1024;

/// A new read buffer is made when less than this is left of the last one.
const READ_MIN: usize = 4 * 1024;

/// A request body as an `http_body::Body` (what [`TowerHandler`](super::TowerHandler) passes
/// to the service): empty, or a [`RequestBody`] read straight out of the
/// connection's input pipe, in data frames of up to 256 KiB.
///
/// Its size hint is exact for a `Content-Length` body. The request's
/// trailers, if it has any, are its last frame. Frames fail with a
/// [`BodyError`]; after an error the body is over.
#[derive(Debug)]
pub struct Body {
    /// `None` when empty or over.
    inner: Option<RequestBody>,
    /// Bytes left of a sized body.
    remaining: Option<u64>,
    /// Read space; each frame is split off it.
    buf: BytesMut,
}

impl Body {
    /// An empty body.
    pub fn empty() -> Self {
        Self { inner: None, remaining: Some(0), buf: BytesMut::new() }
    }

    pub(super) fn streaming(body: RequestBody, length: BodyLength) -> Self {
        let remaining = match length {
            BodyLength::Empty => Some(0),
            BodyLength::Known(length) => Some(length),
            BodyLength::Chunked => None,
        };
        Self { inner: Some(body), remaining, buf: BytesMut::new() }
    }
}

impl Default for Body {
    fn default() -> Self {
        Self::empty()
    }
}

/// A body of unknown length (no size hint), read from `body`.
impl From<RequestBody> for Body {
    fn from(body: RequestBody) -> Self {
        Self::streaming(body, BodyLength::Chunked)
    }
}

/// A request's trailers as an `http::HeaderMap` (names in lower case).
/// Every field fits one: its name is a token and its value has no control
/// byte other than tab.
fn header_map(trailers: &Trailers) -> http::HeaderMap {
    let mut map = http::HeaderMap::with_capacity(trailers.len());
    for (name, value) in trailers.iter() {
        if let (Ok(name), Ok(value)) =
            (http::HeaderName::from_bytes(name.as_bytes()), http::HeaderValue::from_bytes(value))
        {
            map.append(name, value);
        }
    }
    map
}

/// Why a [`Body`] frame failed, boxed as tower and axum box errors:
/// - past [`max_body`](crate::Options::max_body), an
///   [`http_body_util::LengthLimitError`], the error of
///   `http_body_util::Limited` and tower-http's `RequestBodyLimitLayer`,
///   so a framework answers it as it answers its own limit (axum's
///   buffering extractors: `413`, where any other body error is `400`);
/// - otherwise a [`std::io::Error`] of [`RequestBody`] (the client left
///   before the body ended, `UnexpectedEof`; a malformed chunked body,
///   `InvalidData`).
///
/// Tell them apart with `downcast_ref`.
pub type BodyError = Box<dyn std::error::Error + Send + Sync>;

/// The [`BodyError`] of a failed read.
fn body_error(error: io::Error) -> BodyError {
    if error.kind() == io::ErrorKind::FileTooLarge {
        length_limit_error(error)
    } else {
        Box::new(error)
    }
}

/// An [`http_body_util::LengthLimitError`], which only its own crate may
/// construct (`#[non_exhaustive]`): taken from a `Limited` body of one
/// byte with a limit of none, whose first poll is ready. `otherwise` if
/// that ever changes.
fn length_limit_error(otherwise: io::Error) -> BodyError {
    let mut over =
        http_body_util::Limited::new(http_body_util::Full::new(Bytes::from_static(b"x")), 0);
    match http_body::Body::poll_frame(Pin::new(&mut over), &mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(Some(Err(error))) => error,
        _ => Box::new(otherwise),
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = self.get_mut();
        let Some(body) = this.inner.as_mut() else { return Poll::Ready(None) };
        if this.remaining == Some(0) && !body.is_stream() {
            // Read to its end, so already handed back to the connection
            // (an HTTP/1 `Content-Length` body has no trailers; an HTTP/2
            // stream's may follow its last byte, so it is read to its end).
            this.inner = None;
            return Poll::Ready(None);
        }
        let piece = if body.is_stream() { STREAM_READ_PIECE } else { READ_PIECE };
        let want = this
            .remaining
            .map_or(piece, |left| usize::try_from(left).unwrap_or(usize::MAX).clamp(1, piece));
        // Each frame is split off the front; the rest of the capacity is
        // the next frame's (a new buffer once it is too small: the frames
        // handed out keep the old one alive).
        if this.buf.capacity() < want.min(READ_MIN) {
            this.buf = BytesMut::with_capacity(want);
        }
        let limit = this.buf.capacity().min(want);
        let mut room = (&mut this.buf).limit(limit);
        match std::task::ready!(body.poll_read_into(cx, &mut room)) {
            Ok(0) => {
                // Over: the connection gets its input back.
                let trailers = body.take_trailers();
                this.inner = None;
                Poll::Ready(trailers.map(|trailers| Ok(Frame::trailers(header_map(&trailers)))))
            }
            Ok(n) => {
                if let Some(left) = &mut this.remaining {
                    *left = left.saturating_sub(n as u64);
                }
                Poll::Ready(Some(Ok(Frame::data(this.buf.split_to(n).freeze()))))
            }
            Err(error) => {
                this.inner = None;
                Poll::Ready(Some(Err(body_error(error))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.inner {
            None => true,
            Some(body) => self.remaining == Some(0) && !body.is_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match (&self.inner, self.remaining) {
            (None, _) => SizeHint::with_exact(0),
            (Some(_), Some(left)) => SizeHint::with_exact(left),
            (Some(_), None) => SizeHint::default(),
        }
    }
}
