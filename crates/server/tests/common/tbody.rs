//! A response body for the tower tests: pieces, exact-sized or not, with
//! optional trailers, each frame pending once (woken from a thread) when
//! staggered.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Frame, SizeHint};

/// A body of pieces, exact-sized or not, with optional trailers, each
/// frame pending once when `stagger`.
pub struct TBody {
    pieces: VecDeque<Bytes>,
    /// Sent after the pieces, when set.
    pub trailers: Option<HeaderMap>,
    exact: bool,
    stagger: bool,
    pending: bool,
}

impl TBody {
    pub fn new(pieces: &[&'static [u8]], exact: bool, stagger: bool) -> Self {
        Self {
            pieces: pieces.iter().map(|p| Bytes::from_static(p)).collect(),
            trailers: None,
            exact,
            stagger,
            pending: false,
        }
    }
}

impl http_body::Body for TBody {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.stagger && !self.pending {
            self.pending = true;
            let waker = cx.waker().clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(2));
                waker.wake();
            });
            return Poll::Pending;
        }
        self.pending = false;
        if let Some(p) = self.pieces.pop_front() {
            return Poll::Ready(Some(Ok(Frame::data(p))));
        }
        Poll::Ready(self.trailers.take().map(|t| Ok(Frame::trailers(t))))
    }
    fn is_end_stream(&self) -> bool {
        self.pieces.is_empty() && self.trailers.is_none()
    }
    fn size_hint(&self) -> SizeHint {
        if self.exact && self.trailers.is_none() {
            SizeHint::with_exact(self.pieces.iter().map(|p| p.len() as u64).sum())
        } else {
            SizeHint::default()
        }
    }
}
