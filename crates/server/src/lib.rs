//! A thin HTTP/1.1 and HTTP/2 (h2c) server built from falconet's primitives: each
//! connection lives in a [`falconet_registry::Registry`] (its id is the
//! poll token), its socket reads land in [`falconet_pool`] blocks through a
//! [`falconet_pipe`] writer, and the request parser reads through the
//! pipe's reader.
//!
//! ```no_run
//! use falconet_server::{Options, Server, hello::Hello};
//!
//! let server = Server::bind("127.0.0.1:8080", Options::new().workers(2), Hello)?;
//! let running = server.start()?;
//! // ... later, from any thread (the binary does it on SIGINT/SIGTERM):
//! running.handle().shutdown();
//! running.join()?;
//! # Ok::<(), falconet_server::ServerError>(())
//! ```
//!
//! # Shape
//!
//! - [`Server`] binds (one listener polled by every worker by default, or
//!   one `SO_REUSEPORT` listener per worker: see [`Accept`]) and [`start`](Server::start)s one mio event loop per
//!   worker thread. [`Handle`] stops it gracefully and reads [`Stats`].
//! - A [`Handler`] sees each request in three steps (head, body pieces,
//!   respond) and writes a [`Response`]: no allocation per request, bodies
//!   streamed in both directions.
//! - The application side: [`Response::defer`] hands the answer to another
//!   thread as a [`Responder`] (its bytes come back through a pipe of pool
//!   blocks, in order, with back-pressure), and [`Request::stream_body`] +
//!   [`Response::take_body`] lend the request body as a [`RequestBody`]
//!   that the application reads straight out of the connection's input
//!   pipe on its own thread. A connection's link (`link.rs`) wakes its
//!   worker when the application has progress for it.
//! - [`Session`] is one connection without its socket (pipe, HTTP/1 state,
//!   output): the server drives one per connection, tests and the fuzz
//!   target drive it with bytes. HTTP/2 is the sibling of `http1` behind
//!   it: a connection whose first bytes are the HTTP/2 preface (h2c with
//!   prior knowledge), or that upgrades from HTTP/1.1 (`Upgrade: h2c`;
//!   [`Options::h2c`] chooses which of the two are taken), is served by
//!   [`h2`] (frames, HPACK, the connection state machine on
//!   `falconet-flow` windows) through the same [`Handler`], [`Responder`],
//!   [`RequestBody`] and tower path.
//!
//! # The cycle
//!
//! A readable event reads the socket into the pipe until it is drained (or
//! the pipe pauses), the parser answers every complete request in it, and
//! all the responses go out in **one write**. Pipelined requests are
//! answered in order. The `Date` header is rendered once a second per
//! worker.
//!
//! # Answers to bad input
//!
//! Every refusal is a response and then a graceful close (the connection
//! shuts its write side and reads until the client's end of stream, so the
//! response is not lost to a reset):
//!
//! | input | answer |
//! |---|---|
//! | malformed request line or header, obs-fold, bad `Content-Length`, differing duplicate `Content-Length`, `Content-Length` with `Transfer-Encoding`, `Transfer-Encoding` not ending in chunked or in HTTP/1.0 | `400` |
//! | HTTP/1.1 without `Host`, more than one `Host` line, a `Host` value that is not `uri-host [ ":" port ]` | `400` |
//! | a target that is no request-target form (RFC 9112 §3.2) or has a fragment | `400` |
//! | a chunked body off the RFC 9112 §7.1 grammar, or extensions or trailers past their bounds | `400` |
//! | a valid CONNECT (no tunnels) | `501` |
//! | a transfer coding other than chunked, under a final chunked | `501` |
//! | request line over [`Options::max_request_line`] (HTTP/2: the HTTP/1.1 line of its `:method` and `:path`) | `414` |
//! | head over [`Options::max_head`] or more fields than [`Options::max_headers`] | `431` |
//! | body over [`Options::max_body`] | `413` |
//! | `Expect` other than `100-continue` | `417` |
//! | a major version other than HTTP/1 (HTTP/1.2 to 1.9 are served as 1.1, RFC 9110 §2.5) | `505` |
//! | head not complete within [`Options::header_timeout`], body stalled by the client for [`Options::io_timeout`] | `408` |
//! | a request body sent slower than [`Options::min_request_body_rate`] (a large body a byte every few seconds) | `408` and close (a response it had started: close; HTTP/2: `408` on each stream owing a body, then GOAWAY(ENHANCE_YOUR_CALM)) |
//! | the application keeps a request waiting for [`Options::response_timeout`], the client owing nothing | `503` (a response it had started: cut off; HTTP/2: that stream alone, reset) |
//! | HTTP/2: one stream stalled while the others move: its body owed and not sent for [`Options::io_timeout`], or its answer held by the application for [`Options::response_timeout`] | that stream alone: `408` or `503` (reset once its response started); the connection goes on |
//! | a response the client takes none of for [`Options::io_timeout`] (a slow reader that takes some is not cut off: the timer offers it bytes) | close |
//! | responses waiting on a client that takes them slower than [`Options::min_response_rate`] (a full socket, or HTTP/2 credit granted a byte at a time) | close (HTTP/2: GOAWAY(ENHANCE_YOUR_CALM) first, after a `408` on each stream owing a body) |
//! | idle for [`Options::keep_alive_timeout`] since its last exchange (an empty line or two after a request, RFC 9112 §2.2, and HTTP/2 PING, SETTINGS, WINDOW_UPDATE or PRIORITY frames leave it idle) | close (HTTP/2: GOAWAY first) |
//! | past [`Options::max_connections`] | `503` and close |
//!
//! Each timer's end of an exchange is logged through `tracing`, naming
//! the option: [`Options::response_timeout`] as a warning (the
//! application's lateness: raise the option, or turn it off for long
//! polls and event streams), the client's (timeouts, rates) at debug.
//!
//! An absolute-form target (`GET http://host/path HTTP/1.1`) is accepted:
//! the handler sees `/path`, and [`Request::authority`] is the target's
//! authority rather than the Host field's. `docs/rfc9112.md` in the
//! repository lists every MUST of RFC 9112 sections 2 to 9 with where it
//! is kept and the test that shows it.
//!
//! # Errors
//!
//! Typed errors: [`ServerError`] (bind, start, join), [`OptionsError`]
//! (from [`Server::bind`], which checks every option first with
//! [`Options::validate`]), [`ResponseError`] (a handler's misuse of
//! [`Response`] or [`Responder`], and a deferred response's connection gone
//! or pool exhausted); a [`RequestBody`]'s reads fail with the `io::Error`
//! kinds its docs name. The HTTP/2 layers have their own:
//! [`h2::frame::FrameError`] (a received frame that breaks a rule),
//! [`h2::frame::EncodeError`] (a value a frame cannot carry),
//! [`h2::hpack::DecodeError`], and [`h2::connection::ConnectionError`].
//!
//! # Features
//!
//! - `cli` (default): the `falconet` binary (it turns on `tokio`).
//! - `tokio`: tokio's `AsyncRead` for [`RequestBody`], and `hello::Demo`
//!   (`/delay`, `/echo` answered on a tokio runtime).
//! - `tower`: `tower::TowerHandler`, which serves any `tower::Service`
//!   (an axum `Router`) on falconet's I/O, and `tower::Body`, the
//!   `http_body::Body` of a request.

#![forbid(unsafe_code)]

mod body;
mod chunked;
mod conn;
mod date;
mod expect;
pub mod h2;
mod handler;
pub mod hello;
mod http1;
mod link;
mod meter;
mod options;
mod pieces;
mod response;
mod server;
mod session;
mod stopped;
mod syntax;
mod target;
#[cfg(feature = "tower")]
pub mod tower;
mod trailers;
mod wanted;
mod wire;
mod worker;

#[cfg(feature = "tower")]
pub use self::tower::TowerHandler;
pub use body::RequestBody;
pub use handler::{BodyLength, Field, Handler, Request, ResponseError, Status, Version};
pub use http1::{MAX_HEADERS_LIMIT, Progress};
pub use options::{
    Accept, DEFAULT_HEADER_TIMEOUT, DEFAULT_IO_TIMEOUT, DEFAULT_KEEP_ALIVE_TIMEOUT,
    DEFAULT_LINGER_TIMEOUT, DEFAULT_MAX_BODY, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_HEAD,
    DEFAULT_MAX_HEADERS, DEFAULT_MAX_PENDING_OUTPUT, DEFAULT_MAX_POOL_BYTES,
    DEFAULT_MAX_REQUEST_LINE, DEFAULT_MIN_REQUEST_BODY_RATE, DEFAULT_MIN_RESPONSE_RATE,
    DEFAULT_RESPONSE_TIMEOUT, DEFAULT_SHUTDOWN_TIMEOUT, H2c, MAX_CONNECTIONS, MAX_HEAD,
    MAX_POOL_BYTES, MAX_TIMEOUT, MAX_WORKERS, MIN_POOL_BYTES, MIN_REQUEST_LINE, MIN_TIMEOUT,
    MinDataRate, Options, OptionsError,
};
pub use response::{Responder, Response};
pub use server::{Handle, Running, Server, ServerError, Stats};
pub use session::{Context, Session};
pub use stopped::Stopped;
pub use trailers::Trailers;

/// The primitives the server is built from, re-exported so that the types
/// its API names need no other dependency: [`Pool`] for
/// [`Session::new`], [`falconet_pipe::OptionsError`] its error, the
/// `falconet_flow` types of [`h2::connection`].
pub use falconet_pool::{self, Pool};
pub use {falconet_flow, falconet_pipe, falconet_registry};

#[cfg(all(doctest, not(miri)))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
