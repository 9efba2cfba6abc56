//! What a request lets its response carry: a body (not for `HEAD`) and
//! trailer fields.

use http::{HeaderMap, Method};
use http_body::Frame;

/// What a request lets its response carry.
#[derive(Clone, Copy, Debug)]
pub(super) struct Asked {
    /// A `HEAD` request: the response's body is not sent.
    pub(super) head: bool,
    /// The body's trailer fields may follow it: over HTTP/2 always (RFC
    /// 9113 §8.1); over HTTP/1.1 when the request's `TE` lists `trailers`,
    /// as hyper decides (RFC 9110 §6.5.1: fields a client may need are
    /// not sent in trailers unless it says it takes them), and only in a
    /// chunked body. Never for `HEAD`, nor HTTP/1.0 (no chunked body to
    /// carry them: streaming for them would only lose its keep-alive).
    trailers: bool,
}

impl Asked {
    /// For a request of `method` in `version` whose `TE` fields list
    /// `trailers` (`te_trailers`) or not.
    pub(super) fn new(method: &Method, version: http::Version, te_trailers: bool) -> Self {
        let head = method == Method::HEAD;
        let trailers = !head
            && match version {
                http::Version::HTTP_2 => true,
                http::Version::HTTP_11 => te_trailers,
                _ => false,
            };
        Self { head, trailers }
    }

    /// Adds `frame`'s trailer fields, as field lines, to those of earlier
    /// trailers frames in `lines` (a body should send one, last; a second
    /// adds to the first, never erases it), if this response may send
    /// them; `lines` stays `None` while none is kept (see
    /// [`trailer_lines`]).
    pub(super) fn add_trailers<D>(&self, frame: Frame<D>, lines: &mut Option<Vec<u8>>) {
        let Some(fields) = frame.into_trailers().ok().filter(|_| self.trailers) else { return };
        let mut more = trailer_lines(&fields);
        if !more.is_empty() {
            match lines {
                Some(lines) => lines.append(&mut more),
                None => *lines = Some(more),
            }
        }
    }
}

/// `fields` as trailer field lines (`name: value\r\n` each), without
/// those trailers may not carry (`crate::trailers::may_trail`) and values
/// a field line cannot hold (logged). Empty when none is left.
fn trailer_lines(fields: &HeaderMap) -> Vec<u8> {
    let mut lines = Vec::new();
    for (name, value) in fields {
        let name_bytes = name.as_str().as_bytes();
        if let Err(why) =
            crate::trailers::push_response_line(&mut lines, name_bytes, value.as_bytes())
        {
            tracing::debug!(%name, "{why}; dropped");
        }
    }
    lines
}
