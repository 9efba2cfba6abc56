//! `GET /frames?size=N&count=M` for the HTTP peers (`axum_server`,
//! `hyper_h2_server`), as `crates/server/examples/axum_hello.rs` serves
//! it: a body of M ready frames of N bytes each (a stream of small items).

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::Frame;

/// The largest frame, and the most frames, `/frames` serves.
pub const MAX_SIZE: usize = 65_536;
/// See [`MAX_SIZE`].
pub const MAX_COUNT: usize = 16_777_216;

/// The body of `/frames`: `left` more frames of `piece`.
pub struct Frames {
    piece: Bytes,
    left: usize,
}

impl Frames {
    /// The body a query (`size=N&count=M`) asks for; `None` for any other
    /// query (answered 400).
    pub fn from_query(query: Option<&str>) -> Option<Self> {
        let arg = |name: &str| -> Option<usize> {
            query?.split('&').find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))?.parse().ok()
        };
        let size = arg("size").filter(|size| (1..=MAX_SIZE).contains(size))?;
        let count = arg("count").filter(|count| *count <= MAX_COUNT)?;
        Some(Self { piece: Bytes::from(vec![b'x'; size]), left: count })
    }
}

impl hyper::body::Body for Frames {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.left == 0 {
            return Poll::Ready(None);
        }
        self.left -= 1;
        Poll::Ready(Some(Ok(Frame::data(self.piece.clone()))))
    }
}
