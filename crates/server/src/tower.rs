//! tower services on falconet (feature `tower`): [`TowerHandler`] serves any
//! `tower_service::Service<http::Request<Body>>` whose response body is an
//! `http_body::Body`, such as an axum `Router`, on falconet's I/O, with the
//! service's futures on a tokio runtime you pass in.
//!
//! ```
//! use std::io::{Read, Write};
//!
//! use axum::{Router, routing::get};
//! use falconet_server::tower::TowerHandler;
//! use falconet_server::{Options, Server};
//!
//! let runtime = tokio::runtime::Builder::new_multi_thread()
//!     .worker_threads(1)
//!     .enable_all()
//!     .build()?;
//! let app = Router::new().route("/plaintext", get(|| async { "Hello, World!" }));
//! let handler = TowerHandler::new(app, runtime.handle().clone());
//! let server = Server::bind("127.0.0.1:0", Options::new().workers(1), handler)?;
//! let addr = server.local_addr();
//! let running = server.start()?;
//!
//! let mut client = std::net::TcpStream::connect(addr)?;
//! client.write_all(b"GET /plaintext HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")?;
//! let mut reply = String::new();
//! client.read_to_string(&mut reply)?;
//! assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"));
//! assert!(reply.contains("\r\ncontent-type: text/plain; charset=utf-8\r\n"));
//! assert!(reply.contains("\r\nContent-Length: 13\r\n"));
//! assert!(reply.ends_with("\r\n\r\nHello, World!"));
//!
//! drop(client); // or the shutdown waits out the linger timeout for it
//! running.handle().shutdown();
//! running.join()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # How a request runs
//!
//! ```text
//!   worker (event loop)                              tokio runtime
//!   head: method, URI, version, headers -> http
//!         parts; a body is asked for as a stream
//!   respond: the body becomes a `Body` (reads the
//!         connection's pipe from any thread)
//!     poll_ready, call, and poll the future ONCE,
//!     here, with the runtime entered and a no-op waker
//!     Ready, body size exact and every frame ready
//!       -> status, headers and body written into the
//!          connection's output now: pipelined
//!          requests answered by one write
//!     Ready, body still streaming -> the worker polls
//!          the body whenever the connection is woken
//!          and sends each frame as it is (no copy)
//!     future Pending -> Response::defer, and a task    --> finishes the future,
//!                                                        writes the head, streams
//!                                                        the body's data frames
//!                                                        through the Responder
//! ```
//!
//! The inline poll is what keeps falconet's batching: a handler that
//! answers without waiting (most of them) is answered on the worker, and
//! every response of one read goes out in one write. In steady state it
//! allocates nothing beyond what the service allocates:
//! - the request's URI and field values are pieces of one shared chunk a
//!   worker thread copies heads into (a clone is a reference count, as
//!   hyper's pieces of its read buffer are), and its field map is the
//!   previous inline answer's, emptied (as hyper reuses it);
//! - the future and the response body are polled in place in heap slots
//!   each worker thread keeps and reuses, so a future that turns out to
//!   wait is handed to its task without being moved.
//!
//! A response body is polled on the worker, as hyper polls it in the
//! connection's task: a `POST /echo` whose handler returns the request
//! body streams it from the input pipe to the socket with no thread in
//! between (every hand-off between threads sharing a core is a context
//! switch: 7.7 per echoed MiB when the body was streamed by a task, 0.05
//! now; see `docs/benchmarks.md`). A body's frames that cost real CPU
//! time to produce (compression of a large body, say) hold up the
//! worker's other connections meanwhile, as they would hold up hyper's
//! runtime thread: produce them in a task and stream them through a
//! channel body. A body waiting on a timer, a channel or a socket costs
//! the worker nothing; its waker wakes the connection.
//!
//! # Runtimes
//!
//! A multi-thread runtime runs the service's tasks on its own threads:
//! wait for the server anywhere, with [`Running::join`](crate::Running::join)
//! or [`Running::stopped`](crate::Running::stopped). A current-thread
//! runtime (`#[tokio::main(flavor = "current_thread")]`, `#[tokio::test]`)
//! runs them only while its thread awaits, so on that thread await
//! `running.stopped()`: there `join` returns
//! [`ServerError::WouldBlockRuntime`](crate::ServerError::WouldBlockRuntime)
//! at once instead of hanging every request that waits for something, and
//! a drop of `Running` starts the shutdown without waiting (the requests in
//! flight finish while the runtime runs on).
//!
//! # Where it differs from hyper
//!
//! - The service's future is polled first on the worker, outside any tokio
//!   task (with the runtime entered): there `tokio::task::try_id()` is
//!   `None`, `tokio::task::id()` panics (a `500`) and task-locals are unset;
//!   a future that waits is finished in a task, where they are set.
//!   So a handler that blocks its thread before its first `.await`
//!   (`std::thread::sleep`, a blocking database call, CPU-heavy work)
//!   blocks the worker, and every connection that worker serves waits
//!   with it (under `axum::serve` it would hold one tokio worker): move
//!   such work to `tokio::task::spawn_blocking` and await it, as tokio
//!   asks of any async code.
//! - falconet's own [`max_body`](crate::Options::max_body) (8 MiB by
//!   default) bounds request bodies before the service sees them: a route
//!   that raises axum's `DefaultBodyLimit` past it needs it raised too.
//! - The request body is read straight out of the connection: a service
//!   that answers while keeping the request with its body unread holds up
//!   that connection's next request until it reads or drops the body (hyper
//!   buffers what arrived and reads on).
//! - A client that leaves while its response body waits (server-sent events
//!   between events) is noticed when a write fails (the kernel takes the
//!   first one after the client left), not at once: the body lives that
//!   long.
//! - A service future that waits (finished in a task) is dropped once its
//!   answer can go nowhere, as hyper drops it with its connection: after
//!   `response_timeout`'s `503`, when its connection closes (a timeout, the
//!   shutdown's deadline), when an HTTP/2 client resets its stream
//!   ([`Responder::closed`]); so does a response body that waits for its
//!   next frame in the task. But a client's FIN (HTTP/1 or HTTP/2) is
//!   taken as a half-close (`nc`, HTTP/1.0 clients still read the answer),
//!   where hyper by default takes it as the client gone: with
//!   `response_timeout` off, a future whose client left waits until it
//!   answers (then the write fails and the connection closes), and keeps
//!   its connection's slot meanwhile. Bound long polls in the service
//!   (`tokio::time::timeout`) if that matters.
//! - The request's URI is absolute (`http://example.com:8080/uri?a=1`)
//!   over HTTP/1.1 too, where hyper hands an origin-form target over as
//!   it came (`/uri?a=1`; both are absolute over HTTP/2): `uri.path()`,
//!   `uri.query()`, axum's routing and `OriginalUri` are the same, but
//!   `uri.to_string()` (a log line, `TraceLayer`'s span, a link built from
//!   it) carries the scheme and authority (see below for when it does
//!   not).
//! - axum's `ConnectInfo<SocketAddr>` is filled only by `axum::serve`: build
//!   the handler [`with_peer_addr`](TowerHandler::with_peer_addr) and read
//!   [`PeerAddr`], or map it to `ConnectInfo` with one layer (its docs show
//!   how).
//! - The application's time is bounded by
//!   [`response_timeout`](crate::Options::response_timeout) (30 s by
//!   default; `None` for none): a handler that takes longer is answered
//!   `503`, a streamed body whose next frame takes longer is cut off.
//!
//! # What falconet writes itself
//!
//! The response's `content-length`, `transfer-encoding`, `connection` and
//! `date` fields are not copied: falconet frames the body and writes
//! `Date` itself. A body whose size is exact (`size_hint`: a `Vec`, a
//! `String`, `Json`, `Full`) goes out with `Content-Length`, as hyper
//! sends it: in one piece when it is all ready and at most 1 MiB (with
//! the length of what it yielded, should that differ from what it said),
//! otherwise streamed as its frames come, and cut (a close, an HTTP/2
//! reset) if it yields more or less than it said. A body of unknown size
//! goes out with `Content-Length` when its frames came ready at once (up
//! to 64 KiB), otherwise streamed: chunked over HTTP/1.1, with no
//! `content-length` over HTTP/2. The service's own `content-length` does
//! not decide it (a body that disagrees with it is framed as it is sent),
//! where hyper trusts it: `tower-http`'s `ServeDir`, whose file body has
//! no exact size but whose `content-length` field has, streams chunked
//! from falconet. A `connection: close` field closes
//! the connection after the response; the fields a `connection` field
//! names are for one hop and not sent (RFC 9110 §7.6.1), except `upgrade`,
//! which goes with its option in falconet's `Connection` field (HTTP/1).
//! A `server` field replaces falconet's own (`Server: falconet`, sent
//! when the service names none). For `HEAD`,
//! whose body axum has already emptied, the service's `content-length` is
//! sent. That length is the service's word: with no body
//! to count, falconet cannot check it (hyper cannot either), where a
//! `GET`'s is always the length of what is sent. Without one, neither
//! `Content-Length` nor `Transfer-Encoding` is sent (as hyper does): an
//! emptied body cannot say whether `GET`'s streams or is empty (axum's own
//! `404` is not emptied), and RFC 9110 §9.3.2 lets a field known only
//! while generating the content be left out, where either field could be
//! false. The request's URI is absolute (`http://` and the
//! request's authority, see [`Request::authority`]) unless it has no
//! authority (an HTTP/1.0 request without `Host`) or one `http::Uri` cannot
//! hold (a percent-encoded host: the path alone, and a `Host` field of the
//! request's authority, also over HTTP/2 and for an absolute-form target);
//! upgrades (WebSocket) are not offered.
//!
//! A response body's trailers (a gRPC service's `grpc-status`) go out as
//! hyper sends them: over HTTP/2 as a HEADERS frame that ends the stream
//! (RFC 9113 §8.1), over HTTP/1.1 in the last chunk of a chunked body when
//! the request's `TE` lists `trailers` (RFC 9112 §7.1.2, RFC 9110 §6.5.1);
//! a body that would be sized streams chunked for them, unless its exact
//! size was declared (`Content-Length`: no room for trailers over HTTP/1.1,
//! which then drops them, as it does for HTTP/1.0 and `HEAD`). Fields that
//! trailers may not carry (framing, routing, authentication, content
//! processing: `content-length`, `host`, `authorization`, `content-type`,
//! `set-cookie`, `trailer` and the like, hyper's list) and HTTP/1's
//! connection fields are left out, as is a value with a control byte. The
//! request's own trailers (a chunked body's trailer section, an HTTP/2
//! stream's trailing HEADERS) end its [`Body`] as a trailers frame, after
//! the last data, as hyper delivers them; an HTTP/2 body is therefore read
//! to the stream's end even when its `content-length` is reached.
//!
//! # Errors
//!
//! - A request head `http` refuses (a method, URI or header value it
//!   cannot represent, such as `` ` `` in a path, which the native handler
//!   is given): `400` and, over HTTP/1, a close, as hyper answers; the
//!   service is not called.
//! - The service's error (from `poll_ready` or its future): `500`, and the
//!   error is logged (`tracing`, level warn). Where it comes in the
//!   request's task (the service was not ready, or its future not done,
//!   at the worker's first poll), the client's error instead when the
//!   request body failed (`400`, `413`: a service that read the body and
//!   passed its error on), and over HTTP/1 the connection closes after it.
//! - A panic in the service or its response body, or the body's error:
//!   `500` before anything of the response was written, otherwise the
//!   connection closes (the client sees a cut response, never a wrong
//!   one). A panic on the worker's first poll leaves the connection going
//!   on (nothing of its state was touched); in the task, the task's
//!   [`Responder`] is dropped: `500` with `Connection: close`, or the cut
//!   response. The head of a streamed body is written as soon as the body
//!   first waits (a client of server-sent events sees it before the first
//!   event), so a body that fails after waiting cuts the response.
//! - Reading the request [`Body`] fails with a [`BodyError`]: past
//!   `max_body`, the ecosystem's `http_body_util::LengthLimitError`, so
//!   axum's buffering extractors (`Bytes`, `String`, `Json`) answer `413`
//!   as for their own limit; otherwise the `std::io::Error`s of
//!   [`RequestBody`] (the client left before the body ended,
//!   `UnexpectedEof`; a malformed chunked body, `InvalidData`). A
//!   `Content-Length` over `max_body` is answered `413` before the service
//!   is called. A response that fails before its head because the request
//!   body did (a service that streams the body back, say) is answered with
//!   the client's error instead of `500`: `400` for a malformed body, `413`
//!   past `max_body` (over HTTP/1.1 the connection then closes: the next
//!   request's start is unknown).

use std::any::Any;
use std::cell::RefCell;
use std::fmt;
use std::future::{Future, poll_fn};
use std::io;
use std::marker::PhantomData;
use std::pin::{Pin, pin};
use std::task::{Context, Poll, Waker};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use http::header::{CONNECTION, CONTENT_LENGTH, DATE, TRANSFER_ENCODING, UPGRADE};
use http::uri::{Authority, PathAndQuery, Scheme};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Uri};
use http_body::{Frame, SizeHint};
use tower_service::Service;

use crate::body::RequestBody;
use crate::handler::{BodyLength, Handler, Request, ResponseError, Status, Version};
use crate::response::{Polled, Responder, Response, Step};
use crate::trailers::Trailers;

/// The error type services are asked to convert theirs into (tower's
/// `BoxError`).
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A response body at most this long, whose frames are all ready, is
/// written by the worker at once; a longer one is streamed by a task.
const INLINE_LIMIT: u64 = 1 << 20;

/// The most a task collects of a body's ready frames before it starts
/// streaming them, unless the body's size is exact and at most
/// [`INLINE_LIMIT`] (see [`hold_limit`]).
const HOLD_LIMIT: usize = 64 * 1024;

/// How much of `body`'s ready frames to collect before streaming them: all
/// of a body whose size is exact and at most [`INLINE_LIMIT`], so that it
/// goes out with `Content-Length` as it would had the service answered
/// without awaiting (a `Json` after a database call); else
/// [`HOLD_LIMIT`].
fn hold_limit(body: &SizeHint) -> usize {
    match body.exact() {
        Some(length) if length <= INLINE_LIMIT => INLINE_LIMIT as usize,
        _ => HOLD_LIMIT,
    }
}

/// The most one request-body frame holds.
const READ_PIECE: usize = 256 * 1024;

/// [`READ_PIECE`] for an HTTP/2 stream's body: a connection carries many
/// streams at once, each sent on within its (default 64 KiB) window, so
/// a frame (and the buffer it is cut from) holds about one window.
const STREAM_READ_PIECE: usize = 64 * 1024;

/// A new read buffer is made when less than this is left of the last one.
const READ_MIN: usize = 4 * 1024;

/// A [`Handler`] that serves a tower `Service`, such as an axum `Router`.
///
/// Each request becomes an `http::Request<`[`Body`]`>`; the service's
/// future is polled once on the worker (inside the runtime's context, so
/// it may spawn tasks, start timers and the like), and finished by a task
/// on the runtime if it is not ready then. See the [module docs](self)
/// for what is written and the answers to errors.
///
/// The service is cloned for each request (an axum `Router` clone is one
/// reference count).
pub struct TowerHandler<S> {
    service: S,
    runtime: tokio::runtime::Handle,
    /// Each request's extensions carry its [`PeerAddr`].
    peer_addr: bool,
}

/// The client's address (the connection's TCP peer), in each request's
/// extensions when the handler is built
/// [`with_peer_addr`](TowerHandler::with_peer_addr): falconet's
/// counterpart of axum's `ConnectInfo<SocketAddr>`, which only
/// `axum::serve` fills.
///
/// Read it in an axum handler with `Extension(PeerAddr(addr)):
/// Extension<PeerAddr>`, or turn it into the `ConnectInfo` that existing
/// handlers and middleware extract with one layer:
///
/// ```
/// use std::net::SocketAddr;
///
/// use axum::extract::{ConnectInfo, Request};
/// use axum::{Extension, Router, middleware, routing::get};
/// use falconet_server::tower::{PeerAddr, TowerHandler};
///
/// let app: Router = Router::new()
///     .route("/ip", get(|ConnectInfo(addr): ConnectInfo<SocketAddr>| async move { addr.to_string() }))
///     .route("/peer", get(|Extension(PeerAddr(addr)): Extension<PeerAddr>| async move { addr.to_string() }))
///     .layer(middleware::map_request(|mut request: Request| async move {
///         if let Some(&PeerAddr(addr)) = request.extensions().get::<PeerAddr>() {
///             request.extensions_mut().insert(ConnectInfo(addr));
///         }
///         request
///     }));
/// # let runtime = tokio::runtime::Builder::new_current_thread().build()?;
/// let handler = TowerHandler::new(app, runtime.handle().clone()).with_peer_addr();
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PeerAddr(pub std::net::SocketAddr);

impl<S> TowerHandler<S> {
    /// Serves `service`, finishing its futures and streaming its bodies on
    /// `runtime`. The runtime must have the drivers the service needs
    /// (`enable_all` for axum handlers that use timers or sockets) and
    /// outlive the server: a task spawned on a runtime that shut down is
    /// dropped, and its request answered `500`. (Tokio panics where a
    /// service touches a runtime that is shutting down, a timer say;
    /// falconet catches it, but the panic hook still prints it to stderr
    /// for each such request.)
    ///
    /// A current-thread runtime runs its tasks only while its thread is
    /// in `block_on` (or `#[tokio::main(flavor = "current_thread")]`'s
    /// body) and awaits: given the handle of one that nobody drives (built,
    /// then left while the main thread calls [`Running::join`](crate::Running::join)),
    /// the answers a service gives at once still go out (falconet polls
    /// them on its worker), but any that awaits waits until
    /// [`Options::response_timeout`](crate::Options::response_timeout),
    /// then gets `503`. Drive it (await [`Running::stopped`](crate::Running::stopped)
    /// in its `block_on`), or use a multi-thread runtime.
    pub fn new(service: S, runtime: tokio::runtime::Handle) -> Self {
        Self { service, runtime, peer_addr: false }
    }

    /// Puts each request's [`PeerAddr`] in its extensions (one insertion
    /// per request; off by default, as axum's `ConnectInfo` is).
    #[must_use]
    pub fn with_peer_addr(mut self) -> Self {
        self.peer_addr = true;
        self
    }

    /// The service.
    pub fn service(&self) -> &S {
        &self.service
    }

    /// The runtime the service's work runs on.
    pub fn runtime(&self) -> &tokio::runtime::Handle {
        &self.runtime
    }
}

impl<S: Clone> Clone for TowerHandler<S> {
    fn clone(&self) -> Self {
        Self {
            service: self.service.clone(),
            runtime: self.runtime.clone(),
            peer_addr: self.peer_addr,
        }
    }
}

impl<S> fmt::Debug for TowerHandler<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TowerHandler").field("runtime", &self.runtime).finish_non_exhaustive()
    }
}

/// What [`TowerHandler`] keeps of a request from its head to its response:
/// the `http` request parts, or the fact that `http` refused them.
#[derive(Debug)]
pub struct TowerState {
    head: Result<(http::Request<()>, BodyLength, Asked), http::Error>,
}

impl<S, B> Handler for TowerHandler<S>
where
    S: Service<http::Request<Body>, Response = http::Response<B>> + Clone + Send + Sync + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    type State = TowerState;

    fn blocking_here_stalls(&self) -> bool {
        crate::stopped::blocking_here_stalls(&self.runtime)
    }

    fn head(&self, request: &Request<'_>) -> TowerState {
        let length = request.body_length();
        if length != BodyLength::Empty {
            request.stream_body();
        }
        let head = http_head(request).map(|(mut head, asked)| {
            if let (true, Some(addr)) = (self.peer_addr, request.peer_addr()) {
                head.extensions_mut().insert(PeerAddr(addr));
            }
            (head, length, asked)
        });
        TowerState { head }
    }

    fn respond(&self, state: TowerState, response: &mut Response<'_>) {
        let (head, length, asked) = match state.head {
            Ok(head) => head,
            Err(error) => {
                tracing::debug!(%error, "a request head http cannot represent");
                // A refusal, closed as the parser's are (docs/rfc9112.md).
                let _ = response.status(Status::BAD_REQUEST);
                let _ = response.close();
                return;
            }
        };
        let body = match response.take_body() {
            Some(body) => Body::streaming(body, length),
            None => Body::empty(),
        };
        let request = head.map(|()| body);
        let mut service = self.service.clone();
        let _runtime = self.runtime.enter();
        let mut cx = Context::from_waker(Waker::noop());

        match crate::worker::polling(|| service.poll_ready(&mut cx)) {
            Ok(Poll::Ready(Ok(()))) => {}
            Ok(Poll::Pending) => {
                if let Some(responder) = defer(response) {
                    self.runtime
                        .spawn(told_if_dropped(call_later(service, request, responder, asked)));
                }
                return;
            }
            Ok(Poll::Ready(Err(error))) => return failed(response, error.into()),
            Err(_) => return panicked(response),
        }

        let mut future = Place::<S::Future>::take();
        let polled = crate::worker::polling(|| {
            let mut slot = future.pinned();
            slot.set(Some(service.call(request)));
            slot.as_pin_mut().map(|future| future.poll(&mut cx))
        });
        match polled {
            Ok(Some(Poll::Ready(Ok(answer)))) => {
                drop(future);
                answer_now(answer, response, asked, &self.runtime);
            }
            Ok(Some(Poll::Pending)) => {
                if let Some(responder) = defer(response) {
                    let future = future.steal();
                    self.runtime.spawn(told_if_dropped(await_later(future, responder, asked)));
                }
            }
            Ok(Some(Poll::Ready(Err(error)))) => failed(response, error.into()),
            Ok(None) | Err(_) => panicked(response),
        }
    }
}

/// The `http` request head of `request`, and what it lets its response
/// carry (noted in the same walk of its fields). The bytes its URI and
/// field values keep are copied into this thread's [`HeadCache`], not each
/// into an allocation of its own, and its field map is the last answer's.
fn http_head(request: &Request<'_>) -> Result<(http::Request<()>, Asked), http::Error> {
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
        *head.uri_mut() = uri(request.target(), request.authority(), cache)?;
        let mut headers = cache.headers.take().unwrap_or_default();
        headers.reserve(fields.size_hint().0);
        for (name, value) in fields {
            te_trailers |= name.eq_ignore_ascii_case("te") && lists_trailers(value);
            let value = HeaderValue::from_maybe_shared(cache.copy(value))?;
            headers.append(HeaderName::from_bytes(name.as_bytes())?, value);
        }
        let authority = request.authority();
        if head.uri().authority().is_none() && !authority.is_empty() {
            // An authority the URI cannot hold: the `Host` field carries
            // it, made from `:authority` over HTTP/2, and replacing the
            // field of an absolute-form target, whose authority wins
            // (RFC 9112 §3.2.2).
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

/// `http://authority/target`, or the target alone without an authority
/// (and for `*`), or with one `http` cannot hold: a percent-encoded host
/// (`a%2Db`), valid as an RFC 3986 reg-name, which the `Host` field then
/// carries (see [`http_head`]).
fn uri(target: &str, authority: &str, cache: &mut HeadCache) -> Result<Uri, http::Error> {
    if target == "*" {
        return Ok(Uri::from_static("*"));
    }
    let path = PathAndQuery::from_maybe_shared(cache.copy(target.as_bytes()))?;
    let parsed = (!authority.is_empty())
        .then(|| Authority::from_maybe_shared(cache.copy(authority.as_bytes())).ok())
        .flatten();
    let Some(authority) = parsed else { return Ok(Uri::from(path)) };
    let mut parts = http::uri::Parts::default();
    parts.scheme = Some(Scheme::HTTP);
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
struct HeadCache {
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
    fn recycle(mut headers: HeaderMap) {
        if headers.capacity() <= RECYCLED_FIELDS {
            headers.clear();
            Self::with(|cache| cache.headers = Some(headers));
        }
    }
}

/// Writes a ready answer now when its body is exact, short and ready;
/// otherwise defers it to a task.
fn answer_now<B>(
    answer: http::Response<B>,
    response: &mut Response<'_>,
    asked: Asked,
    runtime: &tokio::runtime::Handle,
) where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    if let Some(error) = not_final(answer.status()) {
        return failed(response, error);
    }
    let (parts, body) = answer.into_parts();
    // The body's size as it says before any frame is taken (as hyper
    // reads it).
    let hint = body.size_hint();
    let mut place = Place::<B>::take();
    place.pinned().set(Some(body));
    if hint.exact().is_none_or(|length| length > INLINE_LIMIT) {
        let body = place.steal();
        return poll_later(
            response,
            OnWorker::new(parts, body, Held::Nothing, &hint, asked, runtime),
        );
    }
    let mut held = Held::Nothing;
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        let polled = crate::worker::polling(|| {
            place.pinned().as_pin_mut().map(|body| body.poll_frame(&mut cx))
        });
        match polled {
            Ok(Some(Poll::Ready(None))) => break,
            Ok(Some(Poll::Ready(Some(Ok(frame))))) => match frame.into_data() {
                Ok(data) => held.push(data),
                Err(frame) => {
                    let mut trailers = None;
                    asked.add_trailers(frame, &mut trailers);
                    if trailers.is_some() {
                        // Trailers need a streamed body: the worker
                        // writes it (and polls for the body's end).
                        let body = place.steal();
                        let mut on_worker = OnWorker::new(parts, body, held, &hint, asked, runtime);
                        on_worker.trailers = trailers;
                        return poll_later(response, on_worker);
                    }
                }
            },
            Ok(Some(Poll::Pending)) => {
                let body = place.steal();
                return poll_later(
                    response,
                    OnWorker::new(parts, body, held, &hint, asked, runtime),
                );
            }
            Ok(Some(Poll::Ready(Some(Err(error))))) => return failed(response, error.into()),
            Ok(None) | Err(_) => return panicked(response),
        }
    }
    drop(place);
    let length = write_head(response, &parts);
    let _ = match held.framing(asked.head, length) {
        Framing::Sized(body) => response.body(body),
        Framing::NoField => response.unsized_head(),
        Framing::Length(length) => {
            response.declare_length(length).and_then(|()| response.write(b""))
        }
    };
    HeadCache::recycle(parts.headers);
}

/// Hands the rest of a ready answer to the worker (see [`OnWorker`]).
fn poll_later<B>(response: &mut Response<'_>, on_worker: OnWorker<B>)
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    if let Err(error) = response.poll_later(Box::new(on_worker)) {
        tracing::warn!(%error, "cannot hand a response to the worker; answered 500");
        let _ = response.status(Status::INTERNAL_SERVER_ERROR);
    }
}

/// A ready answer whose body is not: the worker polls the body whenever
/// its connection is woken (by the body's waker, or by its own input for
/// a body read from the request) and writes the frames into the
/// connection's output, as hyper polls a body in its connection's task.
/// No thread sits between the frames and the socket, so an echo's bytes
/// never wait for a context switch.
///
/// Written like [`respond_later`]: the head and, when every frame came at
/// once (up to [`hold_limit`]), a sized body; otherwise a stream, the held
/// data first. Each poll runs inside the runtime's context.
struct OnWorker<B: http_body::Body> {
    /// The head, until it is written.
    parts: Option<http::response::Parts>,
    /// The service's `content-length`, once the head is written.
    length: Option<u64>,
    body: Pin<Box<Option<B>>>,
    /// Data received but not yet written.
    held: Held<B::Data>,
    /// How much may be held before it streams ([`hold_limit`]).
    hold: usize,
    /// The body's whole length when its size is exact: a stream of it
    /// declares it (`Content-Length`) and must send exactly that.
    exact: Option<u64>,
    /// The length a streamed body declared, once it did.
    declared: Option<u64>,
    /// Bytes of a streamed body handed out so far.
    streamed: u64,
    /// The body ended; what is held goes out, then the response is done.
    ended: bool,
    /// The body's trailer fields, when the response may send them: they
    /// end it ([`Step::Trailers`]) after the last data.
    trailers: Option<Vec<u8>>,
    /// The held data is being streamed (chunked), not sized.
    streaming: bool,
    /// The body failed (or panicked) in a look ahead: the piece before
    /// went out, the response fails on the next poll.
    broken: bool,
    asked: Asked,
    runtime: tokio::runtime::Handle,
}

impl<B: http_body::Body> OnWorker<B> {
    /// `hint` is the body's size hint before any of its frames was taken
    /// (`held` holds those taken).
    fn new(
        parts: http::response::Parts,
        body: Pin<Box<Option<B>>>,
        held: Held<B::Data>,
        hint: &SizeHint,
        asked: Asked,
        runtime: &tokio::runtime::Handle,
    ) -> Self {
        let hold = hold_limit(hint);
        let exact = hint.exact();
        Self {
            parts: Some(parts),
            length: None,
            body,
            held,
            hold,
            exact,
            declared: None,
            streamed: 0,
            ended: false,
            trailers: None,
            streaming: false,
            broken: false,
            asked,
            runtime: runtime.clone(),
        }
    }
}

/// The body drops on the worker (a connection closed, timed out or swept),
/// inside the runtime's context, as it would in a task, and a panic in its
/// `Drop` is contained: it must not take the worker, and every other
/// connection of it, down.
impl<B: http_body::Body> Drop for OnWorker<B> {
    fn drop(&mut self) {
        let _runtime = self.runtime.enter();
        let body = &mut self.body;
        if crate::worker::polling(|| body.set(None)).is_err() {
            tracing::error!("a response body panicked when dropped");
            // Half dropped: never drop it again (its box is leaked).
            std::mem::forget(std::mem::replace(&mut self.body, Box::pin(None)));
        }
    }
}

impl<B: http_body::Body> fmt::Debug for OnWorker<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OnWorker")
            .field("held", &self.held.len())
            .field("ended", &self.ended)
            .field("streaming", &self.streaming)
            .finish_non_exhaustive()
    }
}

impl<B> Polled for OnWorker<B>
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    fn poll_write(&mut self, cx: &mut Context<'_>, response: &mut Response<'_>) -> Poll<Step> {
        if let Some(parts) = &self.parts
            && self.ended
        {
            self.length = write_head(response, parts);
            self.parts = None;
        }
        if self.broken {
            // The body failed after its last piece was handed out.
            return Poll::Ready(Step::Failed);
        }
        if self.streaming && self.held.len() > 0 {
            // Held data goes out first, as it is.
            let held = std::mem::replace(&mut self.held, Held::Nothing).into_bytes();
            self.streamed += held.len() as u64;
            if self.declared.is_some_and(|length| self.streamed > length) {
                // More than its exact size said: cut (a close, a reset).
                return Poll::Ready(Step::Failed);
            }
            if self.ended {
                return Poll::Ready(self.last(held));
            }
            if !response.encoder().is_http2() {
                return Poll::Ready(self.look_ahead(cx, held));
            }
            return Poll::Ready(Step::Frame(held));
        }
        if self.ended {
            if self.streaming {
                return Poll::Ready(match self.trailers.take() {
                    _ if self.short() => Step::Failed,
                    Some(trailers) => Step::Trailers(trailers),
                    None => Step::Done,
                });
            }
            if self.trailers.is_some() {
                // Trailers follow a streamed body only.
                self.start_stream(response);
                return Poll::Ready(Step::Wrote);
            }
            let sent = match self.held.framing(self.asked.head, self.length) {
                Framing::Sized(body) => response.body(body),
                Framing::NoField => response.unsized_head(),
                Framing::Length(length) => {
                    response.declare_length(length).and_then(|()| response.write(b""))
                }
            };
            return Poll::Ready(if sent.is_ok() { Step::Done } else { Step::Failed });
        }
        match self.poll_body(cx) {
            BodyPoll::More => {
                if self.held.len() > self.hold {
                    self.start_stream(response);
                }
                Poll::Ready(Step::Wrote)
            }
            BodyPoll::Ended => Poll::Ready(Step::Wrote),
            BodyPoll::Pending => {
                // Nothing more now: the head, and what is held, go out
                // meanwhile.
                if self.held.len() > 0 || !self.streaming {
                    self.start_stream(response);
                    return Poll::Ready(Step::Wrote);
                }
                Poll::Pending
            }
            BodyPoll::Broken => Poll::Ready(Step::Failed),
        }
    }
}

impl<B> OnWorker<B>
where
    B: http_body::Body,
    B::Error: Into<BoxError>,
{
    /// Polls the body once more before `piece` goes out (HTTP/1): if it
    /// ends there, `piece` is its last and carries the response's end,
    /// one write where two were made (hyper, too, polls the body again
    /// before it writes). A next frame waits in `held` (one frame more
    /// held per response); a failure fails the response on the next
    /// poll, after `piece`.
    fn look_ahead(&mut self, cx: &mut Context<'_>, piece: Bytes) -> Step {
        match self.poll_body(cx) {
            BodyPoll::Ended => self.last(piece),
            BodyPoll::Broken => {
                self.broken = true;
                Step::Frame(piece)
            }
            BodyPoll::More | BodyPoll::Pending => Step::Frame(piece),
        }
    }

    /// `piece` as the body's last: a failure if the body then fell short of
    /// the length it declared (the response is cut, never completed); a
    /// piece like the others when trailers follow it.
    fn last(&self, piece: Bytes) -> Step {
        if self.short() {
            Step::Failed
        } else if self.trailers.is_some() {
            Step::Frame(piece)
        } else {
            Step::Last(piece)
        }
    }

    /// Whether a streamed body that declared its length has sent less.
    fn short(&self) -> bool {
        self.declared.is_some_and(|length| self.streamed < length)
    }

    /// Polls the body once, inside the runtime's context and with a panic
    /// contained: its data is held; at its end it is dropped.
    fn poll_body(&mut self, cx: &mut Context<'_>) -> BodyPoll {
        let _runtime = self.runtime.enter();
        let polled = crate::worker::polling(|| {
            self.body.as_mut().as_pin_mut().map(|body| body.poll_frame(cx))
        });
        match polled {
            Ok(Some(Poll::Ready(Some(Ok(frame))))) => {
                match frame.into_data() {
                    Ok(data) => self.held.push(data),
                    Err(frame) => self.asked.add_trailers(frame, &mut self.trailers),
                }
                BodyPoll::More
            }
            Ok(Some(Poll::Ready(None))) => {
                self.ended = true;
                // The service's body may panic in its drop: contained, as
                // its polls are (the response is whole either way).
                let _ = crate::worker::polling(|| self.body.set(None));
                BodyPoll::Ended
            }
            Ok(Some(Poll::Pending)) => BodyPoll::Pending,
            Ok(Some(Poll::Ready(Some(Err(error))))) => {
                tracing::warn!(error = %error.into(), "the response body failed");
                BodyPoll::Broken
            }
            Ok(None) | Err(_) => {
                tracing::error!("the response body panicked");
                BodyPoll::Broken
            }
        }
    }
}

/// What one poll of a response body on the worker found.
enum BodyPoll {
    /// A frame (its data, if any, is held).
    More,
    /// The end (the body is dropped).
    Ended,
    /// Nothing now (the waker wakes the connection).
    Pending,
    /// An error or a panic (logged).
    Broken,
}

impl<B: http_body::Body> OnWorker<B> {
    /// Switches to a streamed (chunked) body: the head and the stream's
    /// start are written on the next poll.
    fn start_stream(&mut self, response: &mut Response<'_>) {
        if !self.streaming {
            self.streaming = true;
            if let Some(parts) = self.parts.take() {
                self.length = write_head(response, &parts);
            }
            // A body of exact size streams with its length (as hyper
            // sends it); `HEAD`'s emptied body has no size of its own.
            if let Some(length) = self.exact.filter(|_| !self.asked.head)
                && response.declare_length(length).is_ok()
            {
                self.declared = Some(length);
            }
            let _ = response.write(b"");
        }
    }
}

/// Defers `response`; `None` (after answering `500` if it still can) when
/// it cannot be deferred.
fn defer(response: &mut Response<'_>) -> Option<Responder> {
    match response.defer() {
        Ok(responder) => Some(responder),
        Err(error) => {
            tracing::warn!(%error, "cannot defer a response; answered 500");
            let _ = response.status(Status::INTERNAL_SERVER_ERROR);
            None
        }
    }
}

/// A 1xx answer is no final response (one would switch protocols, which
/// falconet does not do): the service failed, and its head and body are
/// not sent.
fn not_final(status: http::StatusCode) -> Option<BoxError> {
    status
        .is_informational()
        .then(|| format!("the service answered {status}, which is not a final response").into())
}

/// The service failed: `500`.
fn failed(response: &mut Response<'_>, error: BoxError) {
    tracing::warn!(%error, "the service failed; answered 500");
    let _ = response.status(Status::INTERNAL_SERVER_ERROR);
}

/// The service panicked on the worker: `500`.
fn panicked(response: &mut Response<'_>) {
    tracing::error!("the service panicked; answered 500");
    let _ = response.status(Status::INTERNAL_SERVER_ERROR);
}

/// The task of a request whose service was not ready.
async fn call_later<S, B>(
    mut service: S,
    request: http::Request<Body>,
    responder: Responder,
    asked: Asked,
) where
    S: Service<http::Request<Body>, Response = http::Response<B>>,
    S::Error: Into<BoxError>,
    B: http_body::Body,
    B::Error: Into<BoxError>,
{
    match responder.unless_closed(poll_fn(|cx| service.poll_ready(cx))).await {
        None => return,
        Some(Err(error)) => return fail_later(responder, error.into()),
        Some(Ok(())) => {}
    }
    let answer = match responder.unless_closed(service.call(request)).await {
        None => return,
        Some(Ok(answer)) => answer,
        Some(Err(error)) => return fail_later(responder, error.into()),
    };
    let (parts, body) = answer.into_parts();
    respond_later(parts, pin!(body), Held::Nothing, responder, asked).await;
}

/// A request's task, which logs a warning if it is dropped before it
/// ends: the runtime shut down with the request in flight, before or after
/// the task began (or the task panicked, which the panic hook reports
/// too). The responder it holds answers `500`, or closes the connection
/// if the head went out: without this, a user who dropped the runtime
/// first saw those and no reason.
fn told_if_dropped(task: impl Future<Output = ()>) -> impl Future<Output = ()> {
    /// Dropped only if the task did not end (which forgets it).
    struct Unfinished;

    impl Drop for Unfinished {
        fn drop(&mut self) {
            tracing::warn!(
                "a request's task was dropped before it ended (its runtime shut down, \
                 or it panicked); answered 500, or closed if its head was out"
            );
        }
    }

    // Made before the task first runs: a task dropped unpolled tells too.
    let unfinished = Unfinished;
    async move {
        task.await;
        std::mem::forget(unfinished);
    }
}

/// The task of a request whose future was not ready at its first poll.
async fn await_later<F, B, E>(mut future: Pin<Box<Option<F>>>, responder: Responder, asked: Asked)
where
    F: Future<Output = Result<http::Response<B>, E>>,
    E: Into<BoxError>,
    B: http_body::Body,
    B::Error: Into<BoxError>,
{
    let Some(pinned) = future.as_mut().as_pin_mut() else { return };
    let answer = match responder.unless_closed(pinned).await {
        None => return,
        Some(Ok(answer)) => answer,
        Some(Err(error)) => return fail_later(responder, error.into()),
    };
    drop(future);
    let (parts, body) = answer.into_parts();
    respond_later(parts, pin!(body), Held::Nothing, responder, asked).await;
}

/// The service failed, in a task: the responder is dropped, so the
/// worker answers `500`, or the client's error that failed the request
/// body (a service that read it and passed its error on), which only the
/// worker knows; over HTTP/1 the connection then closes.
fn fail_later(responder: Responder, error: BoxError) {
    tracing::warn!(%error, "the service failed; answered 500, or the body's error");
    drop(responder);
}

/// Writes the head, then the body: sized when every frame came at once
/// (up to [`hold_limit`]), otherwise streamed a data frame at a time, the
/// held data first. A body error drops the responder (`500`, or a close
/// once something was sent).
async fn respond_later<B>(
    parts: http::response::Parts,
    mut body: Pin<&mut B>,
    mut held: Held<B::Data>,
    mut responder: Responder,
    asked: Asked,
) where
    B: http_body::Body,
    B::Error: Into<BoxError>,
{
    if let Some(error) = not_final(parts.status) {
        return fail_later(responder, error);
    }
    let length = write_head(&mut responder, &parts);
    // The body's size as it says before any frame is taken (as hyper
    // reads it; nothing is held yet).
    let hint = body.size_hint();
    let hold = hold_limit(&hint);
    // A body of exact size streams with its length (as hyper sends it),
    // and must then send exactly that; `HEAD`'s emptied body has none.
    let exact = hint.exact().filter(|_| !asked.head);
    let mut declared = None;
    let mut streamed = 0u64;
    let mut streaming = false;
    let mut trailers = None;
    loop {
        // What is ready now; when nothing is, what is held goes out and
        // the body is awaited.
        let ready = match poll_fn(|cx| Poll::Ready(body.as_mut().poll_frame(cx))).await {
            Poll::Ready(frame) => Some(Next::from(frame)),
            Poll::Pending => None,
        };
        // (Trailers need a streamed body.)
        let end_with_trailers = matches!(ready, Some(Next::End)) && trailers.is_some();
        if ready.is_none() || held.len() > hold || end_with_trailers {
            if !streaming {
                streaming = true;
                if let Some(length) = exact
                    && responder.declare_length(length).is_ok()
                {
                    declared = Some(length);
                }
                if responder.write(b"").await.is_err() {
                    return;
                }
            }
            streamed += held.len() as u64;
            if declared.is_some_and(|length| streamed > length) {
                // More than its exact size said: dropped, so cut.
                return;
            }
            if held.write_to(&mut responder).await.is_err() {
                return;
            }
        }
        let next = match ready {
            Some(next) => next,
            // A body that waits for its next frame goes with its
            // connection too (a stream of events whose client left).
            None => match responder.unless_closed(poll_fn(|cx| body.as_mut().poll_frame(cx))).await
            {
                Some(frame) => Next::from(frame),
                None => return,
            },
        };
        match next {
            Next::End => break,
            Next::Trailers(frame) => asked.add_trailers(frame, &mut trailers),
            Next::Data(data) if streaming => {
                streamed += data.remaining() as u64;
                if declared.is_some_and(|length| streamed > length) {
                    return;
                }
                if Held::Nothing.with(data).write_to(&mut responder).await.is_err() {
                    return;
                }
            }
            Next::Data(data) => held.push(data),
            Next::Failed(error) => {
                tracing::warn!(%error, "the response body failed");
                // Dropped unfinished: 500, or a close.
                return;
            }
        }
    }
    if streaming {
        if declared.is_none_or(|length| streamed == length) {
            let _ = match trailers {
                Some(trailers) => responder.finish_with_lines(trailers),
                None => responder.finish(),
            };
        }
        // Else short of its declared length: dropped, so cut.
        return;
    }
    match held.framing(asked.head, length) {
        Framing::Sized(body) => {
            let _ = responder.body(body);
        }
        // As on the worker.
        Framing::NoField => {
            let _ = responder.finish_unsized_head();
        }
        Framing::Length(length) => {
            if responder.declare_length(length).is_ok() && responder.write(b"").await.is_ok() {
                let _ = responder.finish();
            }
        }
    }
}

/// A response body's next frame, its error made `Send`.
enum Next<D> {
    Data(D),
    /// A frame that is not data: trailers.
    Trailers(Frame<D>),
    End,
    Failed(BoxError),
}

impl<D, E: Into<BoxError>> From<Option<Result<Frame<D>, E>>> for Next<D> {
    fn from(frame: Option<Result<Frame<D>, E>>) -> Self {
        match frame {
            None => Self::End,
            Some(Ok(frame)) => frame.into_data().map_or_else(Self::Trailers, Self::Data),
            Some(Err(error)) => Self::Failed(error.into()),
        }
    }
}

/// A response head's writer: the synchronous [`Response`] or a
/// [`Responder`].
trait Head {
    fn status(&mut self, status: Status) -> Result<(), ResponseError>;
    fn header(&mut self, name: &str, value: &[u8]) -> Result<(), ResponseError>;
    fn close(&mut self) -> Result<(), ResponseError>;
}

impl Head for Response<'_> {
    fn status(&mut self, status: Status) -> Result<(), ResponseError> {
        Response::status(self, status).map(drop)
    }
    fn header(&mut self, name: &str, value: &[u8]) -> Result<(), ResponseError> {
        Response::header(self, name, value).map(drop)
    }
    fn close(&mut self) -> Result<(), ResponseError> {
        Response::close(self).map(drop)
    }
}

impl Head for Responder {
    fn status(&mut self, status: Status) -> Result<(), ResponseError> {
        Responder::status(self, status).map(drop)
    }
    fn header(&mut self, name: &str, value: &[u8]) -> Result<(), ResponseError> {
        Responder::header(self, name, value).map(drop)
    }
    fn close(&mut self) -> Result<(), ResponseError> {
        Responder::close(self).map(drop)
    }
}

/// Writes the status and the fields falconet does not write itself;
/// returns the service's `content-length`, if it sent one.
fn write_head(head: &mut impl Head, parts: &http::response::Parts) -> Option<u64> {
    // http's codes are 100..=999, which is what Status accepts (a 1xx
    // answer was refused before: `not_final`).
    let status = Status::new(parts.status.as_u16()).unwrap_or(Status::INTERNAL_SERVER_ERROR);
    let _ = head.status(status);
    let mut length = None;
    // Looked up only when present: a walk of a few names costs less than
    // the lookup's hash, and most responses have no `connection` field.
    let connection = parts
        .headers
        .keys()
        .any(|name| name == CONNECTION)
        .then(|| parts.headers.get_all(CONNECTION));
    for (name, value) in &parts.headers {
        if name != UPGRADE
            && name != CONNECTION
            && connection.as_ref().is_some_and(|connection| named_by(connection, name.as_str()))
        {
            // A field the service's `connection` field names is for one
            // hop only (RFC 9110 §7.6.1): not sent. `Upgrade` goes, with
            // its option (`wire.rs`); `connection` itself is never sent
            // and is read below for its `close`, whatever it names.
            continue;
        }
        if name == CONTENT_LENGTH {
            length = value.to_str().ok().and_then(|v| v.trim().parse().ok());
        } else if name == CONNECTION {
            let close = value
                .as_bytes()
                .split(|&b| b == b',')
                .any(|token| token.trim_ascii().eq_ignore_ascii_case(b"close"));
            if close {
                let _ = head.close();
            }
        } else if name != TRANSFER_ENCODING
            && name != DATE
            && let Err(error) = head.header(name.as_str(), value.as_bytes())
        {
            tracing::debug!(%error, field = name.as_str(), "a response field not sent");
        }
    }
    length
}

/// Whether a `connection` field's options name the field `name`
/// (lowercase, as `http` keeps names).
fn named_by(connection: &http::header::GetAll<'_, http::HeaderValue>, name: &str) -> bool {
    connection.iter().any(|value| {
        value
            .as_bytes()
            .split(|&b| b == b',')
            .any(|option| option.trim_ascii().eq_ignore_ascii_case(name.as_bytes()))
    })
}

/// What a request lets its response carry.
#[derive(Clone, Copy, Debug)]
struct Asked {
    /// A `HEAD` request: the response's body is not sent.
    head: bool,
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
    fn new(method: &Method, version: http::Version, te_trailers: bool) -> Self {
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
    fn add_trailers<D>(&self, frame: Frame<D>, lines: &mut Option<Vec<u8>>) {
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

/// How a whole (held) answer is framed ([`Held::framing`]).
enum Framing<'a> {
    /// This body, with its length.
    Sized(&'a [u8]),
    /// A `HEAD` answer's length, with no body.
    Length(u64),
    /// A `HEAD` answer with no framing field.
    NoField,
}

/// Body data received but not yet written.
enum Held<D> {
    Nothing,
    /// One frame's data, in one piece.
    One(D),
    /// Several frames' data, copied.
    Many(Vec<u8>),
}

impl<D: Buf> Held<D> {
    fn with(self, data: D) -> Self {
        let mut held = self;
        held.push(data);
        held
    }

    fn push(&mut self, data: D) {
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

    fn len(&self) -> usize {
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
    fn framing(&self, head_request: bool, length: Option<u64>) -> Framing<'_> {
        match (head_request, self.len(), length) {
            (true, 0, Some(length)) => Framing::Length(length),
            (true, 0, None) => Framing::NoField,
            _ => Framing::Sized(self.as_slice()),
        }
    }

    /// What is held, as one `Bytes` (no copy for one `Bytes` frame).
    fn into_bytes(self) -> Bytes {
        match self {
            Self::Nothing => Bytes::new(),
            Self::One(mut data) => data.copy_to_bytes(data.remaining()),
            Self::Many(bytes) => Bytes::from(bytes),
        }
    }

    /// Streams what is held and holds nothing more.
    async fn write_to(&mut self, responder: &mut Responder) -> Result<(), ResponseError> {
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

thread_local! {
    /// Each thread's [`Place`]s, one per type, kept between uses.
    static PLACES: RefCell<Vec<Box<dyn Any>>> = const { RefCell::new(Vec::new()) };
}

/// A pinned heap place for a `T`, borrowed from this thread's cache and
/// returned (emptied) on drop: a future or body polled in it can be handed
/// to a task without moving ([`steal`](Self::steal)), and one that
/// finishes at once costs no allocation.
struct Place<T: 'static> {
    /// Holds a `Pin<Box<Option<T>>>`.
    cell: Option<Box<dyn Any>>,
    _type: PhantomData<fn() -> T>,
}

impl<T: 'static> Place<T> {
    fn take() -> Self {
        let cached = PLACES
            .try_with(|places| {
                let mut places = places.borrow_mut();
                let i = places.iter().position(|place| (**place).is::<Pin<Box<Option<T>>>>())?;
                Some(places.swap_remove(i))
            })
            .ok()
            .flatten();
        let cell = cached.unwrap_or_else(|| Box::new(Box::pin(None::<T>)));
        Self { cell: Some(cell), _type: PhantomData }
    }

    fn slot(&mut self) -> &mut Pin<Box<Option<T>>> {
        self.cell
            .as_mut()
            .and_then(|cell| (**cell).downcast_mut::<Pin<Box<Option<T>>>>())
            .expect("a place holds its own type")
    }

    fn pinned(&mut self) -> Pin<&mut Option<T>> {
        self.slot().as_mut()
    }

    /// Takes the place away with its value (an empty one is cached instead).
    fn steal(&mut self) -> Pin<Box<Option<T>>> {
        std::mem::replace(self.slot(), Box::pin(None))
    }
}

impl<T: 'static> Drop for Place<T> {
    fn drop(&mut self) {
        // The value drops where it was pinned; the place is kept.
        self.slot().set(None);
        if let Some(cell) = self.cell.take() {
            let _ = PLACES.try_with(|places| places.borrow_mut().push(cell));
        }
    }
}

/// A request body as an `http_body::Body` (what [`TowerHandler`] passes
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

    fn streaming(body: RequestBody, length: BodyLength) -> Self {
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
