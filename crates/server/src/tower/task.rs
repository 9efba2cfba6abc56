//! An answer that waits: the service's readiness, its future or its
//! response's body, finished in a task on the runtime and written through
//! the request's [`Responder`].

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::task::Poll;

use bytes::Buf;
use http_body::Frame;
use tower_service::Service;

use super::asked::Asked;
use super::body::Body;
use super::held::{Framing, Held, hold_limit};
use super::write_head::write_head;
use super::{BoxError, not_final};
use crate::response::Responder;

/// The task of a request whose service was not ready.
pub(super) async fn call_later<S, B>(
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
pub(super) fn told_if_dropped(task: impl Future<Output = ()>) -> impl Future<Output = ()> {
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
pub(super) async fn await_later<F, B, E>(
    mut future: Pin<Box<Option<F>>>,
    responder: Responder,
    asked: Asked,
) where
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
