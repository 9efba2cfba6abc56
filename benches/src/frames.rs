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

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes of the body, polled to its end (always ready).
    fn bytes(mut frames: Frames) -> usize {
        let mut context = Context::from_waker(std::task::Waker::noop());
        let mut total = 0;
        while let Poll::Ready(Some(frame)) =
            hyper::body::Body::poll_frame(Pin::new(&mut frames), &mut context)
        {
            total += frame.unwrap().into_data().map_or(0, |data| data.len());
        }
        total
    }

    /// The same edges as `axum_hello`'s `/frames`: `size` 1 to
    /// [`MAX_SIZE`], `count` 0 to [`MAX_COUNT`], anything else refused.
    #[test]
    fn queries_at_the_edges_of_their_range() {
        for (query, expected) in [
            ("size=1&count=0", 0),
            ("size=1&count=3", 3),
            ("count=2&size=65536", 131_072),
            ("size=7&count=1&extra=x", 7),
        ] {
            assert_eq!(Frames::from_query(Some(query)).map(bytes), Some(expected), "{query}");
        }
        for bad in [
            "size=0&count=1",
            "size=65537&count=1",
            "size=1&count=16777217",
            "size=1&count=-1",
            "size=x&count=1",
            "size=1",
            "count=1",
            "",
            "size=&count=",
        ] {
            assert!(Frames::from_query(Some(bad)).is_none(), "{bad:?}");
        }
        assert!(Frames::from_query(None).is_none());
        assert!(Frames::from_query(Some("size=1&count=16777216")).is_some());
    }
}
