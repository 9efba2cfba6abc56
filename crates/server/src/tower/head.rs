//! A request head as `http` parts: the URI and field values copied into
//! one shared chunk per worker thread, the field map the last answer's.

use std::cell::RefCell;

use bytes::{Bytes, BytesMut};
use http::uri::{Authority, PathAndQuery, Scheme};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Uri};

use super::asked::Asked;
use crate::handler::{Request, Version};

/// The `http` request head of `request`, and what it lets its response
/// carry (noted in the same walk of its fields). The bytes its URI and
/// field values keep are copied into this thread's [`HeadCache`], not each
/// into an allocation of its own, and its field map is the last answer's.
pub(super) fn http_head(request: &Request<'_>) -> Result<(http::Request<()>, Asked), http::Error> {
    let mut head = http::Request::new(());
    *head.method_mut() = Method::from_bytes(request.method().as_bytes())?;
    *head.version_mut() = match request.version() {
        Version::Http10 => http::Version::HTTP_10,
        Version::Http11 => http::Version::HTTP_11,
        Version::Http2 => http::Version::HTTP_2,
    };
    let fields = request.headers();
    let mut te_trailers = false;
    HeadCache::with(|cache| {
        let authority = if request.absolute { request.authority() } else { "" };
        *head.uri_mut() = uri(request.target(), authority, request.scheme(), cache)?;
        let mut headers = cache.headers.take().unwrap_or_default();
        headers.reserve(fields.size_hint().0);
        for (name, value) in fields {
            te_trailers |= name.eq_ignore_ascii_case("te") && lists_trailers(value);
            let value = HeaderValue::from_maybe_shared(cache.copy(value))?;
            headers.append(HeaderName::from_bytes(name.as_bytes())?, value);
        }
        if head.uri().authority().is_none() && !authority.is_empty() {
            // An authority the URI cannot hold: the `Host` field carries
            // it, made from `:authority` over HTTP/2, and replacing the
            // field of an absolute-form target, whose authority wins
            // (RFC 9112 §3.2.2). An origin-form target's authority is its
            // `Host` field's already.
            let host = HeaderValue::from_maybe_shared(cache.copy(authority.as_bytes()))?;
            headers.insert(http::header::HOST, host);
        }
        *head.headers_mut() = headers;
        Ok::<_, http::Error>(())
    })?;
    let asked = Asked::new(head.method(), head.version(), te_trailers);
    Ok((head, asked))
}

/// Whether a `TE` field's value lists the `trailers` option.
fn lists_trailers(value: &[u8]) -> bool {
    value.split(|&b| b == b',').any(|coding| coding.trim_ascii().eq_ignore_ascii_case(b"trailers"))
}

/// `scheme://authority/target` (the request's scheme: `http`, or what a
/// proxy in front said, see [`Request::scheme`]) when the request named
/// its authority with its target (HTTP/2's `:authority`, an HTTP/1
/// absolute-form), as hyper builds it; otherwise the target alone, as it came (an HTTP/1
/// origin-form: `/a?b`, its authority in the `Host` field), and for `*`,
/// or with an authority `http` cannot hold: a percent-encoded host
/// (`a%2Db`), valid as an RFC 3986 reg-name, which the `Host` field then
/// carries (see [`http_head`]).
fn uri(
    target: &str,
    authority: &str,
    scheme: &str,
    cache: &mut HeadCache,
) -> Result<Uri, http::Error> {
    if target == "*" {
        return Ok(Uri::from_static("*"));
    }
    let path = PathAndQuery::from_maybe_shared(cache.copy(target.as_bytes()))?;
    let parsed = (!authority.is_empty())
        .then(|| Authority::from_maybe_shared(cache.copy(authority.as_bytes())).ok())
        .flatten();
    let Some(authority) = parsed else { return Ok(Uri::from(path)) };
    let mut parts = http::uri::Parts::default();
    parts.scheme = Some(match scheme {
        "http" => Scheme::HTTP,
        "https" => Scheme::HTTPS,
        // HTTP/2's `:scheme`, checked as RFC 3986 allows (`h2/head.rs`);
        // `http` takes at most 64 bytes of it.
        other => Scheme::try_from(other)?,
    });
    parts.authority = Some(authority);
    parts.path_and_query = Some(path);
    Ok(Uri::from_parts(parts)?)
}

/// How many bytes [`HeadCache`] allocates at a time (more for a longer
/// piece).
const HEAD_BYTES_CHUNK: usize = 4096;

/// The most fields a recycled field map may have room for: a larger one
/// is dropped rather than kept.
const RECYCLED_FIELDS: usize = 64;

thread_local! {
    /// Each worker thread's [`HeadCache`].
    static HEAD_CACHE: RefCell<HeadCache> = RefCell::new(HeadCache::default());
}

/// What a thread keeps to build request heads without allocating, as
/// hyper's connections keep theirs:
/// - `bytes`: where it copies the request-head bytes that `http`'s types
///   keep (the URI's path and authority, the field values), pieces of one
///   shared chunk. A piece costs no allocation and its clones (axum's
///   `OriginalUri`, for one) only a reference count; once every piece of a
///   used-up chunk is dropped, the chunk is reused in place. A piece an
///   application keeps keeps its chunk's 4 KiB alive, shared with the
///   heads around it.
/// - `headers`: the field map of the last answer written at once, emptied,
///   for the next request's fields.
#[derive(Default)]
pub(super) struct HeadCache {
    bytes: BytesMut,
    headers: Option<HeaderMap>,
}

impl HeadCache {
    /// Runs `f` with this thread's cache (a fresh one if the thread is
    /// being torn down).
    fn with<R>(f: impl FnOnce(&mut HeadCache) -> R) -> R {
        let mut f = Some(f);
        let ran = HEAD_CACHE.try_with(|cache| match cache.try_borrow_mut() {
            Ok(mut cache) => Some((f.take().expect("not run yet"))(&mut cache)),
            Err(_) => None,
        });
        match ran {
            Ok(Some(result)) => result,
            _ => (f.take().expect("not run yet"))(&mut HeadCache::default()),
        }
    }

    /// `piece` as shared bytes.
    fn copy(&mut self, piece: &[u8]) -> Bytes {
        if self.bytes.capacity() < piece.len() {
            // Reclaims the chunk in place when no piece of it is alive,
            // otherwise allocates another.
            self.bytes.reserve(piece.len().max(HEAD_BYTES_CHUNK));
        }
        self.bytes.extend_from_slice(piece);
        self.bytes.split().freeze()
    }

    /// Keeps `headers`, emptied, for the next request head.
    pub(super) fn recycle(mut headers: HeaderMap) {
        if headers.capacity() <= RECYCLED_FIELDS {
            headers.clear();
            Self::with(|cache| cache.headers = Some(headers));
        }
    }
}
