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
//! - axum's `ConnectInfo<SocketAddr>` is filled only by `axum::serve`: build
//!   the handler [`with_peer_addr`](TowerHandler::with_peer_addr) and read
//!   [`PeerAddr`], or map it to `ConnectInfo` with one layer (its docs show
//!   how).
//! - The application's time is bounded by
//!   [`response_timeout`](crate::Options::response_timeout) (30 s by
//!   default; `None` for none): a handler that takes longer is answered
//!   `503`, a streamed body whose next frame takes longer is cut off
//!   (server-sent events with quiet gaps, long polls: raise it or turn it
//!   off). Each such cut logs a `tracing` warning that names the option.
//! - Clients are held to least data rates, as Kestrel holds them and hyper
//!   does not: a request body sent slower than
//!   [`min_request_body_rate`](crate::Options::min_request_body_rate) and
//!   responses taken slower than
//!   [`min_response_rate`](crate::Options::min_response_rate) (240 bytes a
//!   second after a 5-second grace, both) end the connection (`None`
//!   turns either off).
//!
//! # What falconet writes itself
//!
//! The response's `content-length`, `transfer-encoding`, `connection` and
//! `date` fields are not copied: falconet frames the body and writes
//! `Date` itself. A body whose size is exact (`size_hint`: a `Vec`, a
//! `String`, `Json`, `Full`) goes out with `Content-Length`, as hyper
//! sends it: in one piece when it is all ready and at most 1 MiB (with
//! the length of what it yielded, should that differ from what it said
//! by less than the 1 MiB it may hold), otherwise streamed as its frames
//! come, and cut (a close, an HTTP/2 reset) if it yields more or less
//! than it said. A body is polled on the worker at most 256 times in a
//! row without yielding a byte (empty frames, always ready): then the
//! worker serves its other connections and comes back, as a tokio task
//! yields its budget. A body of unknown size
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
//! false. The request's URI is built as hyper builds it: an HTTP/1
//! origin-form target as it came (`/uri?a=1`, the authority in the `Host`
//! field), so a redirect built from it (`ServeDir`'s to a directory's
//! `/`) stays relative whatever scheme a proxy in front spoke; absolute
//! over HTTP/2 with `:authority` (without it, the path alone and `host`
//! as sent, as hyper) and for an HTTP/1 absolute-form target (its
//! scheme, see [`Request::scheme`]: HTTP/2's `:scheme`, such as the
//! `https` of a TLS-terminating proxy, or the target's; and the request's
//! authority, see [`Request::authority`]), unless that authority is one
//! `http::Uri` cannot hold (a percent-encoded host: the path alone, and a
//! `Host` field of the request's authority); upgrades (WebSocket) are not
//! offered.
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
//!   [`RequestBody`](crate::RequestBody) (the client left before the body ended,
//!   `UnexpectedEof`; a malformed chunked body, `InvalidData`). A
//!   `Content-Length` over `max_body` is answered `413` before the service
//!   is called. A response that fails before its head because the request
//!   body did (a service that streams the body back, say) is answered with
//!   the client's error instead of `500`: `400` for a malformed body, `413`
//!   past `max_body` (over HTTP/1.1 the connection then closes: the next
//!   request's start is unknown).

// The parts, one step of a request each:
// - head: the request head as `http` parts, built without allocating;
// - on_worker: an answer ready at the first poll, written at once, or its
//   body polled by the worker;
// - task: an answer that waits, finished in a task through a `Responder`;
// - write_head, asked, held: what both of those write: the head, the
//   trailers the request lets through, the body data held before it is
//   framed;
// - place: the reused heap places futures and bodies are polled in;
// - body: the request `Body` the service reads.
mod asked;
mod body;
mod head;
mod held;
mod on_worker;
mod place;
mod task;
mod write_head;

use std::fmt;
use std::future::Future;
use std::task::{Context, Poll, Waker};

use tower_service::Service;

use self::asked::Asked;
pub use self::body::{Body, BodyError};
use self::head::http_head;
use self::on_worker::answer_now;
use self::place::Place;
use self::task::{await_later, call_later, told_if_dropped};
use crate::handler::{BodyLength, Handler, Request, Status};
use crate::response::{Responder, Response};

/// The error type services are asked to convert theirs into (tower's
/// `BoxError`).
type BoxError = Box<dyn std::error::Error + Send + Sync>;

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
