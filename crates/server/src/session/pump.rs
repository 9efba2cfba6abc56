//! Moving a deferred answer from where the application put it (its
//! output pipe, a polled body) into the connection's output, in order
//! behind the answers before it.

use super::*;
use crate::response::{HTTP1_COPY_BELOW, POLLS_PER_ROUND, POLLS_WITHOUT_OUTPUT};

impl<H: Handler> Session<H> {
    /// Moves what the response in flight has for the output into it, as
    /// far as `max_pending_output` allows: copied from a deferred
    /// response's pipe, or written by polling a [`Polled`] response. When
    /// it has ended, settles it. Returns whether it ended. With nothing to
    /// move, the pipe or the polled body wakes the connection when there is.
    pub(super) fn pump(&mut self, cx: &Context) -> bool {
        match &self.pending {
            None => false,
            Some(Pending::Pipe(_)) => self.pump_pipe(cx),
            Some(Pending::Polled(..)) => self.pump_polled(cx),
        }
    }

    /// [`pump`](Self::pump) for a deferred response's output pipe.
    fn pump_pipe(&mut self, cx: &Context) -> bool {
        let Some(Pending::Pipe(pending)) = &mut self.pending else { return false };
        loop {
            let room = cx.limits.max_pending_output.saturating_sub(self.out.len() - self.sent);
            if room == 0 {
                return false;
            }
            // A wait in progress owns the pipe's read: finish it first.
            if let Some(readable) = &mut pending.readable {
                let waker = self.app.link().waker();
                let mut poll_cx = std::task::Context::from_waker(&waker);
                if Pin::new(readable).poll(&mut poll_cx).is_pending() {
                    return false;
                }
                pending.readable = None;
            }
            let guard = match pending.reader.try_read() {
                Ok(Some(guard)) => {
                    if let Some(link) = self.app.existing_link() {
                        // A head the responder ended is ours to send now
                        // (the client, waiting for a 100, heard nothing
                        // until this: see `crate::expect`).
                        link.expect.head_taken();
                    }
                    guard
                }
                Ok(None) => {
                    // Nothing yet: wait, with the connection's waker.
                    pending.readable = Some(Readable::new(&pending.reader));
                    continue;
                }
                // The connection is the output pipe's only reader.
                Err(_) => return false,
            };
            let mut taken = 0;
            for chunk in guard.chunks() {
                let n = chunk.len().min(room - taken);
                self.out.extend_from_slice(&chunk[..n]);
                taken += n;
                if taken == room {
                    break;
                }
            }
            let all = taken == guard.len();
            let (completed, failed) = (guard.is_completed(), guard.error().is_some());
            let _ = guard.advance_to(taken, taken);
            pending.sent += taken as u64;
            if !(all && completed) {
                continue;
            }
            // The response ended: finished, or its responder dropped.
            let sent = pending.sent;
            // Failed after part of it went out: cut off.
            self.cut |= failed && self.cut_by_close();
            self.pending = None;
            if failed {
                if sent == 0 {
                    // The body's failure, if that is what failed the
                    // response, came back before the response did.
                    self.take_returned();
                    crate::http1::refuse(&mut self.out, cx, self.http.failure_status());
                }
                self.http.close();
            } else {
                let close = self.app.existing_link().is_some_and(|link| link.take_close_after());
                self.http.response_done(!close);
            }
            return true;
        }
    }

    /// [`pump`](Self::pump) for a response the worker polls. A body frame
    /// it returns is staged, not copied: the connection sends it after the
    /// output, and polls again once it is sent. A frame under
    /// [`HTTP1_COPY_BELOW`] is copied into the output and the polls go on,
    /// so that small frames ready together go out in one write.
    fn pump_polled(&mut self, cx: &Context) -> bool {
        let waker = self.app.link().waker();
        let mut poll_cx = std::task::Context::from_waker(&waker);
        let Some(Pending::Polled(polled, encoder)) = &mut self.pending else { return false };
        let (mut idle, mut polls) = (0, 0);
        let step = loop {
            if self.staged.is_some() || self.out.len() - self.sent >= cx.limits.max_pending_output {
                return false;
            }
            if idle == POLLS_WITHOUT_OUTPUT || polls == POLLS_PER_ROUND {
                // Always ready, never any bytes (or tiny frames by the
                // thousand): another turn, after the worker's other
                // connections.
                waker.wake_by_ref();
                return false;
            }
            polls += 1;
            let before = self.out.len();
            let mut response =
                Response::new(&mut self.out, cx.date.fields(), *encoder, &mut self.app);
            let polled = polled.poll_write(&mut poll_cx, &mut response);
            *encoder = response.encoder();
            idle = if self.out.len() == before { idle + 1 } else { 0 };
            let (data, last) = match polled {
                Poll::Pending => return false,
                Poll::Ready(Step::Wrote) => continue,
                Poll::Ready(Step::Frame(data)) => (data, false),
                Poll::Ready(Step::Last(data)) => (data, true),
                Poll::Ready(step) => break step,
            };
            if encoder.head_open() {
                settle_continue(&self.app, &mut self.out, encoder);
            }
            if encoder.start_stream(&mut self.out, cx.date.fields()).is_err() {
                break Step::Failed;
            }
            if !data.is_empty() && encoder.sends_body() {
                encoder.chunk_prefix(&mut self.out, data.len());
                // The body's end goes out with its last piece (one write,
                // where sending it on the next poll took two); the response
                // is settled on that poll, once the piece is sent (or
                // copied), so nothing behind it can overtake it.
                let after = encoder.after_piece(last);
                if data.len() < HTTP1_COPY_BELOW {
                    self.out.extend_from_slice(&data);
                    self.out.extend_from_slice(after);
                    idle = 0;
                } else {
                    self.staged = Some(Staged { data, after });
                }
            }
        };
        let mut encoder = *encoder;
        let cut = self.cut_by_close();
        self.pending = None;
        if matches!(step, Step::Failed) {
            if !encoder.is_untouched() {
                // Part of the response went out: only a close can follow
                // (one that says so, if the close delimits the response).
                self.cut |= cut;
                self.http.close();
                return true;
            }
            // Nothing written. The client's error that failed the
            // request's body (handed back when the read failed, so before
            // this failure) is the answer, and the connection closes: the
            // parser cannot resume after a malformed body.
            self.take_returned();
            if let Some(status) = self.http.client_failure() {
                crate::http1::refuse(&mut self.out, cx, status);
                self.http.close();
                return true;
            }
            // Else 500, as a synchronous answer would.
            let _ = encoder.status(crate::Status::INTERNAL_SERVER_ERROR);
        }
        if encoder.head_open() {
            settle_continue(&self.app, &mut self.out, &mut encoder);
        }
        let keep_alive = match &step {
            Step::Trailers(trailers) => {
                encoder.finish_with_trailers(&mut self.out, cx.date.fields(), trailers)
            }
            _ => encoder.finish(&mut self.out, cx.date.fields()),
        };
        self.http.response_done(keep_alive);
        true
    }
}

/// A polled response's head is about to end outside a `Response`: settles
/// `Expect: 100-continue` (see [`crate::response::settle_continue`]).
fn settle_continue(app: &AppSlots, out: &mut Vec<u8>, encoder: &mut Encoder) {
    if let Some(link) = app.existing_link() {
        let head_at = encoder.is_untouched().then_some(out.len());
        crate::response::settle_continue(link.expect.settle_here(), encoder, out, head_at);
    }
}
