//! Errors: a frame's error as a GOAWAY or RST_STREAM (RFC 9113 §5.4),
//! the client's resets, and the resets remembered so that frames already
//! on their way are not taken for new mistakes.

use super::*;

impl Connection {
    pub(super) fn rst_stream(&mut self, id: u32, streams: &mut impl Streams) {
        let Some(stream) = self.streams.remove(&id) else {
            if id > self.last_stream {
                self.fail(ErrorCode::PROTOCOL_ERROR, "RST_STREAM on an idle stream");
            } else {
                // Closed already (a reset that crossed our END_STREAM or
                // our own RST_STREAM): nothing to do.
                self.ignore_frame();
            }
            return;
        };
        // Closed by the client's reset: HEADERS on it now is STREAM_CLOSED
        // (5.1), not an unused id.
        self.remember_closed(id);
        let update = stream.input.abort().ok().flatten();
        self.connection_update(update);
        streams.reset(id);
        if !stream.local_closed {
            // Reset before its response ended: the rapid-reset pattern.
            self.spend_budget();
        }
    }

    /// A frame broke a rule: a connection or a stream error.
    pub(super) fn frame_error(&mut self, error: FrameError, streams: &mut impl Streams) {
        match error.scope() {
            ErrorScope::Connection => self.fail(error.code(), "malformed frame"),
            // No RST_STREAM may go on an idle stream (6.4), and an
            // endpoint that gets one must treat it as a connection error
            // (5.1): a stream error there (a PRIORITY that depends on its
            // own stream, 5.3.1, or is not 5 bytes long, 6.3; a zero
            // WINDOW_UPDATE, 6.9) becomes a connection error with its code.
            ErrorScope::Stream(id) if id > self.last_stream => {
                self.fail(error.code(), "a malformed frame on an idle stream")
            }
            ErrorScope::Stream(id) => {
                if self.streams.contains_key(&id) {
                    self.stream_error(id, error.code(), streams);
                } else if self.recently_reset.contains(id) {
                    // 5.1: what the client sent before it saw our
                    // RST_STREAM is discarded, not reset again (5.4.2: one
                    // RST_STREAM per stream), from the allowance of frames
                    // the server ignores.
                    self.ignore_frame();
                } else {
                    self.refuse(id, error.code());
                }
            }
        }
    }

    /// Ends stream `id` with RST_STREAM(`code`): the sink drops it, its
    /// unread bytes return to the connection window.
    pub(super) fn stream_error(&mut self, id: u32, code: ErrorCode, streams: &mut impl Streams) {
        if let Some(stream) = self.streams.remove(&id) {
            let update = stream.input.abort().ok().flatten();
            self.connection_update(update);
            streams.reset(id);
        }
        self.refuse(id, code);
    }

    /// Sends RST_STREAM(`code`) for a stream not (or no longer) in the
    /// map, spending the reset budget.
    pub(super) fn refuse(&mut self, id: u32, code: ErrorCode) {
        if self.phase != Phase::Closed {
            self.send_reset(id, code);
            self.spend_budget();
        }
    }

    /// Sends RST_STREAM(`code`) for a stream not (or no longer) in the
    /// map.
    pub(super) fn send_reset(&mut self, id: u32, code: ErrorCode) {
        if self.phase == Phase::Closed {
            return;
        }
        let start = self.out.len();
        frame::encode_rst_stream(&mut self.out, id, code);
        self.remember_reset(id);
        self.control_queued(start);
    }

    /// DATA the client sent before it saw our RST_STREAM is ignored.
    pub(super) fn remember_reset(&mut self, id: u32) {
        self.recently_reset.remember(id);
    }

    /// Ends `stream` from our side with RST_STREAM(`code`) (the
    /// application gave up: CANCEL, INTERNAL_ERROR; or dropped a body it
    /// was reading after the response ended: NO_ERROR).
    pub fn reset(&mut self, id: u32, code: ErrorCode) {
        if let Some(stream) = self.streams.remove(&id) {
            let update = stream.input.abort().ok().flatten();
            self.connection_update(update);
            if self.phase != Phase::Closed {
                frame::encode_rst_stream(&mut self.out, id, code);
                self.remember_reset(id);
            }
        }
    }

    /// A connection error: GOAWAY with `code`, and nothing more is read.
    pub(super) fn fail(&mut self, code: ErrorCode, reason: &'static str) {
        if self.phase == Phase::Closed {
            return;
        }
        // A new request whose block has not ended was not acted on: the
        // GOAWAY does not name it, so the client may retry it (6.8).
        if let Some(block) = &self.block
            && block.stream == self.last_stream
            && !block.trailers
        {
            self.last_stream = block.last_before;
        }
        let last = self.goaway_id();
        frame::encode_goaway(&mut self.out, last, code, reason.as_bytes());
        self.phase = Phase::Closed;
        self.error = Some(ConnectionError { code, reason });
        self.block = None;
    }
}
