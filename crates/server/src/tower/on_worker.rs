//! An answer ready at the worker's first poll: written at once when its
//! body is exact, short and ready; otherwise its body is polled by the
//! worker ([`OnWorker`]) whenever the connection is woken.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use bytes::{Buf, Bytes};
use http_body::SizeHint;

use super::asked::Asked;
use super::head::HeadCache;
use super::held::{Framing, Held, INLINE_LIMIT, hold_limit};
use super::place::Place;
use super::write_head::write_head;
use super::{BoxError, failed, not_final, panicked};
use crate::handler::Status;
use crate::response::{POLLS_WITHOUT_OUTPUT, Polled, Response, Step};

/// Writes a ready answer now when its body is exact, short and ready;
/// otherwise defers it to a task.
pub(super) fn answer_now<B>(
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
    // Bytes past the size the body gave, or polls that brought none, or
    // as many polls as that however many bytes (tiny frames, each request
    // of a batch answered in one round): the body is not the short, ready
    // one it said it was, and the worker's polls (which stream it, cut it
    // past its size and yield, POLLS_PER_ROUND at most in a round) take it.
    let (length, mut idle, mut polls) = (hint.exact().unwrap_or(0), 0, 0);
    loop {
        polls += 1;
        if held.len() as u64 > length
            || idle == POLLS_WITHOUT_OUTPUT
            || polls > POLLS_WITHOUT_OUTPUT
        {
            let body = place.steal();
            return poll_later(response, OnWorker::new(parts, body, held, &hint, asked, runtime));
        }
        let polled = crate::worker::polling(|| {
            place.pinned().as_pin_mut().map(|body| body.poll_frame(&mut cx))
        });
        match polled {
            Ok(Some(Poll::Ready(None))) => break,
            Ok(Some(Poll::Ready(Some(Ok(frame))))) => match frame.into_data() {
                Ok(data) => {
                    idle = if data.has_remaining() { 0 } else { idle + 1 };
                    held.push(data);
                }
                Err(frame) => {
                    idle += 1;
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
/// Written like `task::respond_later`: the head and, when every frame came at
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
