//! Response bodies for the tower tests: [`TBody`], pieces, exact-sized or
//! not, with optional trailers, each frame pending once (woken from a
//! thread) when staggered; [`Scripted`], any sequence of data, trailers
//! and waits.

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

/// One step of a [`Scripted`] body.
#[derive(Clone)]
pub enum Step {
    Data(Bytes),
    Trailers(HeaderMap),
    /// Pending once (the waker is woken at once).
    Wait,
}

/// A body that plays its steps in order (any order: trailers before data
/// too), with an exact size hint when `exact` is set.
pub struct Scripted {
    steps: VecDeque<Step>,
    exact: Option<u64>,
}

impl Scripted {
    pub fn new(steps: Vec<Step>, exact: Option<u64>) -> Self {
        Self { steps: steps.into(), exact }
    }
}

impl http_body::Body for Scripted {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.steps.pop_front() {
            None => Poll::Ready(None),
            Some(Step::Data(data)) => Poll::Ready(Some(Ok(Frame::data(data)))),
            Some(Step::Trailers(fields)) => Poll::Ready(Some(Ok(Frame::trailers(fields)))),
            Some(Step::Wait) => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }
    }
    fn size_hint(&self) -> SizeHint {
        self.exact.map_or_else(SizeHint::default, SizeHint::with_exact)
    }
}
