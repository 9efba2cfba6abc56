//! A stream's end: each side's end of stream, the stream retired from
//! the table once both ended, and the ids of closed streams remembered.

use super::*;

impl Connection {
    /// Keeps a finished stream's receive side for the next stream: as many
    /// as the peer may keep open, so a connection never allocates one per
    /// stream in steady state (with a fixed 16 kept, every stream past the
    /// 16th of a batch cost its allocations again). There are never more
    /// than the most streams that were open at once.
    ///
    /// A receive side nobody else holds (no body reader, no offer of one)
    /// is aborted first: whatever it received and nobody released, nobody
    /// can release any more, so it goes back to the connection now rather
    /// than when the spare is reused (for good, if it never is). Where the
    /// application still holds it, its reader releases as it reads and
    /// aborts when dropped.
    fn retire(&mut self, mut stream: Stream) {
        if Arc::get_mut(&mut stream.input).is_some() {
            let update = stream.input.abort().ok().flatten();
            self.connection_update(update);
        }
        let keep = usize::try_from(self.config.max_concurrent_streams).unwrap_or(usize::MAX);
        if self.spare_inputs.len() < keep {
            self.spare_inputs.push(stream.input);
        }
    }

    /// Our side of stream `id` ended (END_STREAM sent). If the client is
    /// still sending its request, RST_STREAM(NO_ERROR) asks it to stop
    /// (RFC 9113 8.1): the response is complete, the rest of the body
    /// would be read for nothing. Then the stream is done. Unless the
    /// application still reads the body ([`keep_reading`](Self::keep_reading)):
    /// then the response did not end the exchange, and the stream stays
    /// half-closed (local) until the body's end or a [`reset`](Self::reset).
    pub(super) fn local_end(&mut self, id: u32) {
        let Some(stream) = self.streams.get_mut(&id) else { return };
        stream.local_closed = true;
        if !stream.remote_closed && !stream.reading {
            if let Some(stream) = self.streams.remove(&id) {
                let update = stream.input.abort().ok().flatten();
                self.connection_update(update);
            }
            frame::encode_rst_stream(&mut self.out, id, ErrorCode::NO_ERROR);
            self.remember_reset(id);
            self.budget.earn();
            return;
        }
        self.complete_if_closed(id);
    }

    /// Removes stream `id` once both sides ended, refilling the reset
    /// budget by one.
    pub(super) fn complete_if_closed(&mut self, id: u32) {
        if self.streams.get(&id).is_some_and(|s| s.remote_closed && s.local_closed) {
            if let Some(stream) = self.streams.remove(&id) {
                self.retire(stream);
            }
            self.remember_closed(id);
            self.budget.earn();
        }
    }

    /// Stream `id` lived and closed: a later HEADERS on it is STREAM_CLOSED.
    pub(super) fn remember_closed(&mut self, id: u32) {
        self.recently_closed.remember(id);
    }

    /// The application took stream `id`'s request body and reads it: an
    /// end of the response before the body's does not reset the stream
    /// (the client goes on sending; the body is the application's to read).
    pub fn keep_reading(&mut self, id: u32) {
        if let Some(stream) = self.streams.get_mut(&id) {
            stream.reading = true;
        }
    }
}
