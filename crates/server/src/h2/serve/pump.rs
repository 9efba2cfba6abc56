//! From staged responses to frames: each response's head, then its body
//! from where it is (staged bytes, a deferred answer's pipe, a polled
//! body), as the send windows allow.

use super::respond::refuse;
use super::staged::{find_head_end, head_end_in, lowercase_fields, staged_status};
use super::*;
use crate::response::{HTTP2_COPY_BELOW, POLLS_WITHOUT_OUTPUT};

/// What a deferred or polled response may stage before its HEADERS went
/// out, credit or not: a head (HEADERS are not flow-controlled, RFC 9113
/// §6.9), so that a stream with no window still gets its answer's head.
const HEAD_ROOM: usize = 16 * 1024;

impl<S: Send + 'static> Http2<S> {
    /// Moves what deferred and polled responses have into their staging
    /// buffers: no more than the stream can send now (its send credit),
    /// and no more than `max_pending_output` staged on the connection, so
    /// a client that grants no credit holds the responses in their pipes,
    /// whose pause stops the application. Returns whether anything moved.
    /// A response with nothing to move has registered the connection's
    /// waker; one held back by credit or room moves when a WINDOW_UPDATE
    /// or a flush (after which the caller pumps again) makes some.
    pub(super) fn pump(&mut self, cx: &Context, app: &mut AppSlots) -> bool {
        if !self.hints.sources {
            return false;
        }
        let mut moved = false;
        let waker = app.link().waker();
        let mut poll_cx = std::task::Context::from_waker(&waker);
        let mut budget = cx.limits.max_pending_output.saturating_sub(self.pending().0);
        let mut failed = Vec::new();
        let mut sources = false;
        for (&id, exchange) in &mut self.exchanges {
            let unsent = exchange.unsent();
            let Some(source) = &mut exchange.source else { continue };
            // Bytes this stream may stage now: its credit less what it has
            // staged and not sent, so that a stream whose frames wait for
            // the socket does not stage past its window (a head not yet
            // sent may take HEAD_ROOM without credit: HEADERS need none).
            // 0 still lets a finished response's end through (END_STREAM
            // needs no credit).
            let credit = self.conn.send_credit(id);
            let credit = if exchange.head_sent { credit } else { credit.max(HEAD_ROOM) };
            let mut room = budget.min(credit.saturating_sub(unsent));
            match source {
                Source::Pipe { reader, readable, held, abandon } => loop {
                    // A head not staged whole yet is read whatever the
                    // room: HEADERS need no credit, and the head is what
                    // the application wrote (as a synchronous answer's
                    // head, staged at once). Only the body counts.
                    let mut head_open =
                        !exchange.head_sent && find_head_end(&exchange.staged).is_none();
                    let unsent = exchange.staged.len() - exchange.sent;
                    if room == 0 && !head_open && (unsent > 0 || *held) {
                        // No room, and bytes to send first: a stream that
                        // waits for credit costs no read of its pipe (a
                        // WINDOW_UPDATE on the connection pumps them all).
                        break;
                    }
                    if let Some(wait) = readable {
                        if Pin::new(wait).poll(&mut poll_cx).is_pending() {
                            break;
                        }
                        *readable = None;
                    }
                    let guard = match reader.try_read() {
                        Ok(Some(guard)) => guard,
                        Ok(None) => {
                            *readable = Some(Readable::new(reader));
                            continue;
                        }
                        Err(_) => break,
                    };
                    // Bytes taken, and of them those of the body (the
                    // head's are free).
                    let (mut taken, mut counted) = (0, 0);
                    for chunk in guard.chunks() {
                        let free = if head_open {
                            let end = head_end_in(&exchange.staged, chunk);
                            head_open = end.is_none();
                            end.unwrap_or(chunk.len())
                        } else {
                            0
                        };
                        let n = chunk.len().min(free + room - counted);
                        exchange.staged.extend_from_slice(&chunk[..n]);
                        taken += n;
                        counted += n - free;
                        if n < chunk.len() {
                            break;
                        }
                    }
                    room -= counted;
                    budget -= counted;
                    let all = taken == guard.len();
                    *held = !all;
                    let (completed, error) = (guard.is_completed(), guard.error().is_some());
                    let _ = guard.advance_to(taken, taken);
                    if taken > 0 {
                        moved = true;
                        exchange.steps = exchange.steps.wrapping_add(1);
                    }
                    if !all {
                        break; // no room for the rest now
                    }
                    if completed {
                        moved = true;
                        if error {
                            failed.push(id);
                        } else {
                            exchange.finished = true;
                            exchange.trailers = abandon.take_trailers().unwrap_or_default();
                        }
                        exchange.source = None;
                        break;
                    }
                },
                Source::Polled { body: polled, encoder, starved, yielded } => {
                    let mut idle = 0;
                    *yielded = false;
                    loop {
                        // A body frame comes whole: with no room, poll only
                        // with nothing unsent (as the pipe is read), so that
                        // the body's end, which needs no credit (an empty DATA
                        // with END_STREAM, RFC 9113 §6.9.1), goes out when it
                        // comes, for a client that granted exactly the body's
                        // length and owes nothing more; a frame that comes
                        // instead waits for credit (one past the window at
                        // most), and shows (`all_need_credit`).
                        // (A head not begun has nothing unsent either.)
                        *starved = room == 0
                            && !(exchange.staged.len() == exchange.sent
                                && exchange.shared.is_empty());
                        if *starved {
                            break;
                        }
                        if idle == POLLS_WITHOUT_OUTPUT || self.polls_left == 0 {
                            // Always ready, never any bytes (or the round's
                            // polls spent, on tiny frames): another turn,
                            // after the other streams and connections.
                            waker.wake_by_ref();
                            *yielded = true;
                            break;
                        }
                        self.polls_left -= 1;
                        let before = exchange.staged.len() + exchange.shared.len();
                        let mut response =
                            Response::new(&mut exchange.staged, cx.date.fields(), *encoder, app)
                                .sharing(&mut exchange.shared);
                        let step = polled.poll_write(&mut poll_cx, &mut response);
                        *encoder = response.encoder();
                        if step.is_ready() {
                            exchange.steps = exchange.steps.wrapping_add(1);
                        }
                        // Moved: it staged bytes or ended (polls that stage
                        // nothing are counted, and yield, below).
                        if matches!(
                            step,
                            Poll::Ready(Step::Done | Step::Trailers(_) | Step::Failed)
                        ) {
                            moved = true;
                        }
                        match step {
                            Poll::Pending => break,
                            Poll::Ready(Step::Wrote) => {}
                            // The last piece as any other: the next poll ends
                            // the stream (with this DATA frame when it comes in
                            // the same turn).
                            Poll::Ready(Step::Frame(data) | Step::Last(data)) => {
                                let head =
                                    encoder.start_stream(&mut exchange.staged, cx.date.fields());
                                if head.is_err() {
                                    failed.push(id);
                                    exchange.source = None;
                                    break;
                                }
                                if encoder.sends_body() && data.len() >= HTTP2_COPY_BELOW {
                                    // Sent in place, not copied.
                                    exchange.shared.push(exchange.staged.len(), data);
                                } else if encoder.sends_body() {
                                    // Small: copied, to share DATA frames
                                    // with the frames around it.
                                    exchange.staged.extend_from_slice(&data);
                                }
                            }
                            Poll::Ready(step @ (Step::Done | Step::Trailers(_))) => {
                                let mut encoder = *encoder;
                                encoder.finish(&mut exchange.staged, cx.date.fields());
                                if let Step::Trailers(trailers) = step
                                    && encoder.sends_body()
                                {
                                    exchange.trailers = trailers;
                                }
                                exchange.source = None;
                                exchange.finished = true;
                                break;
                            }
                            Poll::Ready(Step::Failed) => {
                                failed.push(id);
                                exchange.source = None;
                                break;
                            }
                        }
                        let grew = exchange.staged.len() + exchange.shared.len() - before;
                        if grew > 0 {
                            moved = true;
                            idle = 0;
                        } else {
                            idle += 1;
                        }
                        room = room.saturating_sub(grew);
                        budget = budget.saturating_sub(grew);
                    }
                }
            }
            sources |= exchange.source.is_some();
        }
        self.hints.sources = sources;
        for id in failed {
            let Some(exchange) = self.exchanges.get_mut(&id) else { continue };
            if exchange.head_sent {
                // Part of the response went out: only a reset can follow.
                self.conn.reset(id, ErrorCode::INTERNAL_ERROR);
                if let Some(exchange) = self.exchanges.remove(&id) {
                    self.spare.give(exchange.staged);
                }
            } else {
                let status = exchange.failure.unwrap_or(Status::INTERNAL_SERVER_ERROR);
                refuse(&mut self.conn, id, exchange, cx, status);
            }
            moved = true;
        }
        moved
    }

    /// Turns staged responses into frames, as far as the windows allow
    /// and until the output holds `max_pending_output`. Returns whether it
    /// sent anything.
    pub(super) fn flush(&mut self, cx: &Context) -> bool {
        self.flush_with(cx, &[])
    }

    /// [`flush`](Self::flush), with the streams in `last` framed whatever
    /// the output holds: the refusals the connection's end must not leave
    /// behind (a HEADERS frame each, and a reset).
    pub(super) fn flush_with(&mut self, cx: &Context, last: &[u32]) -> bool {
        let before = self.conn.output_len();
        let mut done = std::mem::take(&mut self.done);
        let blocked = self.conn.connection_credit() <= 0;
        for (&id, exchange) in &mut self.exchanges {
            if self.conn.output_len() >= cx.limits.max_pending_output {
                if last.is_empty() {
                    break;
                }
                if !last.contains(&id) {
                    continue;
                }
            }
            if blocked && exchange.head_sent && exchange.unsent() > 0 {
                continue; // body bytes wait for connection credit
            }
            if exchange.continue_pending && !exchange.head_sent {
                exchange.continue_pending = false;
                if find_head_end(&exchange.staged).is_none() {
                    // RFC 9110 10.1.1: the client waits for this to send.
                    self.conn.send_headers(id, 100, [], false);
                    exchange.step();
                }
            }
            if !exchange.head_sent {
                let Some(head_len) = find_head_end(&exchange.staged) else { continue };
                let body_empty = exchange.staged.len() == head_len && exchange.shared.is_empty();
                let end_stream = exchange.finished && body_empty && exchange.trailers.is_empty();
                let status = staged_status(&exchange.staged);
                let head = &exchange.staged[..head_len];
                // The field lines after the status line.
                let lines =
                    &head[head.iter().position(|&b| b == b'\n').map_or(head.len(), |at| at + 1)..];
                lowercase_fields(lines, &mut self.fields, &mut self.spans);
                let names = &self.fields;
                let fields = self
                    .spans
                    .iter()
                    .map(|(name, value)| Field::new(&names[name.clone()], &lines[value.clone()]));
                self.conn.send_headers(id, status, fields, end_stream);
                exchange.head_sent = true;
                exchange.step();
                exchange.sent = head_len;
            }
            send_body(&mut self.conn, id, exchange);
            if exchange.sent == exchange.staged.len() && exchange.shared.is_empty() {
                if exchange.finished && !exchange.trailers.is_empty() {
                    // The body is out: its trailers end the stream.
                    let lines = std::mem::take(&mut exchange.trailers);
                    lowercase_fields(&lines, &mut self.fields, &mut self.spans);
                    let names = &self.fields;
                    let fields = self.spans.iter().map(|(name, value)| {
                        Field::new(&names[name.clone()], &lines[value.clone()])
                    });
                    self.conn.send_trailers(id, fields);
                    exchange.step();
                }
                if exchange.finished {
                    // The response is out. While the application reads the
                    // body, the exchange stays for the rest of it.
                    let reading = exchange.body.is_some() && self.conn.body_wanted(id);
                    if !reading {
                        if !exchange.request_ended {
                            // The body is over for the application (dropped,
                            // failed) but not for the client: it may stop
                            // (a stream `local_end` reset already is gone).
                            self.conn.reset(id, ErrorCode::NO_ERROR);
                        }
                        done.push(id);
                    }
                } else {
                    exchange.staged.clear();
                    exchange.sent = 0;
                }
            }
        }
        let finished = !done.is_empty();
        for id in done.drain(..) {
            if let Some(exchange) = self.exchanges.remove(&id) {
                self.spare.give(exchange.staged);
            }
        }
        self.done = done;
        finished || self.conn.output_len() != before
    }
}

/// Frames the staged body as far as the send windows allow: the bytes
/// copied into the staging buffer up to each shared piece, then the piece
/// in place; END_STREAM on the last frame once the response is finished.
fn send_body<S>(conn: &mut Connection, id: u32, exchange: &mut Exchange<S>) {
    loop {
        let end = exchange.shared.next_at().unwrap_or(exchange.staged.len());
        let copied = &exchange.staged[exchange.sent..end];
        let last = exchange.finished && exchange.shared.is_empty() && exchange.trailers.is_empty();
        if !copied.is_empty() || last {
            let n = conn.send_data(id, copied, last);
            exchange.sent += n;
            let all = n == copied.len();
            if n > 0 || last {
                exchange.step();
            }
            if !all || last {
                return;
            }
        }
        if exchange.shared.is_empty() {
            return;
        }
        let last = exchange.finished
            && exchange.shared.count() == 1
            && end == exchange.staged.len()
            && exchange.trailers.is_empty();
        let before = exchange.shared.len();
        let gone = exchange.shared.send_front(|piece| {
            conn.send_shared(id, piece, last);
        });
        if exchange.shared.len() != before || last {
            exchange.step();
        }
        if !gone || last {
            return;
        }
    }
}
